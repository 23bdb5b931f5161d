#include "telemetry/kernel_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace dyno::telemetry {

KernelFile read_kernel_file(const std::filesystem::path& path, bool strip, std::size_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {std::nullopt, errno};
  std::string text;
  char buf[8192];
  while (text.size() < limit) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return {std::nullopt, err};
    }
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  if (strip) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\t' ||
                             text.back() == '\r')) {
      text.pop_back();
    }
  }
  return {std::move(text), 0};
}

}  // namespace dyno::telemetry
