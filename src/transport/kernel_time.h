// The kernel's receive time of socket data (SO_TIMESTAMPNS), on the steady clock: when bytes
// reached this host, whatever the reading thread was doing then. Shared by the client's reads
// (transport/) and the simulated engine's truth log (sim/); part of dyno_asio, the networking
// library both link.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>

namespace dyno::transport {

/// Turns SO_TIMESTAMPNS on for a socket (so recvmsg() returns receive times).
void enable_receive_timestamps(int fd);

/// The receive time (the last segment's arrival, CLOCK_REALTIME in the kernel) of the data a
/// recvmsg() returned, moved onto CLOCK_MONOTONIC (the clocks' offset read now); nullopt when
/// the message carried no timestamp. `now_ns`, when given, receives the CLOCK_MONOTONIC time
/// read for the offset (the steady clock's now: the caller needs no other clock read).
std::optional<std::int64_t> kernel_receive_ns(const msghdr& msg, std::int64_t* now_ns = nullptr);

/// What recv_timed() read.
struct TimedRecv {
  ssize_t bytes = 0;                       ///< recvmsg()'s result; errno is set when < 0
  std::optional<std::int64_t> receive_ns;  ///< kernel_receive_ns() when bytes > 0
  std::int64_t now_ns = 0;  ///< the steady clock read with receive_ns (0: none was read)
};

/// One recvmsg() of up to `size` bytes into `data` (`flags`: MSG_DONTWAIT, MSG_PEEK, ...) with
/// room for the receive timestamp, and that timestamp. One syscall, no allocation: for the
/// client's read loop and the simulated engine's peek alike.
TimedRecv recv_timed(int fd, void* data, std::size_t size, int flags);

}  // namespace dyno::transport
