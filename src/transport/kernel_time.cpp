#include "transport/kernel_time.h"

#include <sys/uio.h>
#include <time.h>

#include <cstring>

namespace dyno::transport {

void enable_receive_timestamps(int fd) {
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
}

std::optional<std::int64_t> kernel_receive_ns(const msghdr& msg, std::int64_t* now_ns) {
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
    if (now_ns != nullptr) *now_ns = mono.tv_sec * 1'000'000'000LL + mono.tv_nsec;
    return rx.tv_sec * 1'000'000'000LL + rx.tv_nsec - offset;
  }
  return std::nullopt;
}

TimedRecv recv_timed(int fd, void* data, std::size_t size, int flags) {
  iovec iov{data, size};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  TimedRecv r;
  r.bytes = ::recvmsg(fd, &msg, flags);
  if (r.bytes > 0) r.receive_ns = kernel_receive_ns(msg, &r.now_ns);
  return r;
}

}  // namespace dyno::transport
