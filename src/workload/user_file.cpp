#include "workload/user_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace dyno::workload {

namespace {

[[noreturn]] void refused(const std::function<void(const FileRefusal&)>& refuse,
                          FileRefusal::Kind kind, std::string what) {
  refuse(FileRefusal{kind, std::move(what)});
  // `refuse` must throw; a caller that returns has a bug of its own.
  throw std::logic_error("read_regular_file: the refusal returned");
}

}  // namespace

std::string read_regular_file(const std::string& path, std::uint64_t max_bytes,
                              const std::function<void(const FileRefusal&)>& refuse) {
  using Kind = FileRefusal::Kind;
  // O_NONBLOCK: a FIFO without a writer opens at once instead of waiting for one; fstat then
  // refuses it, a device and a directory before anything is read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    refused(refuse, Kind::kUnreadable,
            std::string("cannot be read (") + std::strerror(errno) + ")");
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    refused(refuse, Kind::kUnreadable,
            std::string("cannot be read (") + std::strerror(errno) + ")");
  }
  if (S_ISDIR(st.st_mode)) refused(refuse, Kind::kDirectory, "is a directory");
  if (!S_ISREG(st.st_mode)) {
    const char* kind = S_ISFIFO(st.st_mode)   ? "is a FIFO (named pipe)"
                       : S_ISCHR(st.st_mode)  ? "is a character device"
                       : S_ISBLK(st.st_mode)  ? "is a block device"
                       : S_ISSOCK(st.st_mode) ? "is a socket"
                                              : "is not a regular file";
    refused(refuse, Kind::kNotRegular, kind);
  }
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    refused(refuse, Kind::kTooLarge,
            "is " + std::to_string(st.st_size) + " bytes, more than the " +
                std::to_string(max_bytes) + " bytes read");
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  std::string bytes;
  bytes.reserve(static_cast<std::size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      refused(refuse, Kind::kUnreadable,
              std::string("cannot be read (") + std::strerror(errno) + ")");
    }
    if (n == 0) break;
    bytes.append(buf, static_cast<std::size_t>(n));
    if (bytes.size() > max_bytes) {
      refused(refuse, Kind::kTooLarge,
              "grew past the " + std::to_string(max_bytes) + " bytes read while being read");
    }
  }
  return bytes;
}

}  // namespace dyno::workload
