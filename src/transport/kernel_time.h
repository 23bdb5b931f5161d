// The kernel's receive time of socket data (SO_TIMESTAMPNS), on the steady clock: when bytes
// reached this host, whatever the reading thread was doing then. Shared by the client's reads
// (transport/) and the simulated engine's truth log (sim/); part of dyno_asio, the networking
// library both link.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <optional>

namespace dyno::transport {

/// Turns SO_TIMESTAMPNS on for a socket (so recvmsg() returns receive times).
void enable_receive_timestamps(int fd);

/// The receive time (the last segment's arrival, CLOCK_REALTIME in the kernel) of the data a
/// recvmsg() returned, moved onto CLOCK_MONOTONIC (the clocks' offset read now); nullopt when
/// the message carried no timestamp.
std::optional<std::int64_t> kernel_receive_ns(const msghdr& msg);

}  // namespace dyno::transport
