// A loopback port nothing listens on at the moment of the call (bound to port 0, read back,
// closed): for a test's own servers, and for a "nothing answers here" address.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

namespace dyno::testing {

/// A free 127.0.0.1 port of `type` (SOCK_STREAM or SOCK_DGRAM). Throws when none can be bound.
inline int free_loopback_port(int type = SOCK_STREAM) {
  const int fd = ::socket(AF_INET, type, 0);
  if (fd < 0) throw std::runtime_error("no socket for a free port");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("no free port");
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

}  // namespace dyno::testing
