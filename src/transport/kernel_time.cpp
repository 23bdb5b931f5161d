#include "transport/kernel_time.h"

#include <time.h>

#include <cstring>

namespace dyno::transport {

void enable_receive_timestamps(int fd) {
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
}

std::optional<std::int64_t> kernel_receive_ns(const msghdr& msg) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr;
       c = CMSG_NXTHDR(const_cast<msghdr*>(&msg), c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS) continue;
    timespec rx{};
    std::memcpy(&rx, CMSG_DATA(c), sizeof rx);
    if (rx.tv_sec == 0 && rx.tv_nsec == 0) return std::nullopt;
    timespec real{};
    timespec mono{};
    clock_gettime(CLOCK_REALTIME, &real);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    const std::int64_t offset =
        (real.tv_sec - mono.tv_sec) * 1'000'000'000LL + (real.tv_nsec - mono.tv_nsec);
    return rx.tv_sec * 1'000'000'000LL + rx.tv_nsec - offset;
  }
  return std::nullopt;
}

}  // namespace dyno::transport
