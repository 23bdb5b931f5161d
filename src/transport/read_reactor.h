// Readiness of many plain-TCP sockets through one wait: the sockets of one event loop are
// registered, edge-triggered and once each, in an epoll set of their own, and the loop waits
// for that set (one Asio wait on its descriptor). Each wake-up takes every ready socket at once.
//
// Why not one Asio wait per socket: Boost.Asio's epoll reactor re-arms a socket's wait with an
// EPOLL_CTL_MOD each time (a wait is never speculative), one more syscall per socket read; here
// a socket is added once (EPOLL_CTL_ADD) and removed once, and the loop pays one re-arm per
// wake-up for all of them. Reads stay the connection's own (recvmsg with kernel timestamps).
#pragma once

#include <sys/epoll.h>

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <cstdint>
#include <memory>
#include <vector>

namespace dyno::transport {

/// One per event loop (owned by the HTTP target's pool for that loop); not thread-safe.
class ReadReactor {
 public:
  /// What a registered socket's owner does on input.
  class Client {
   public:
    /// New input on the socket since the last call, edge triggered: called once per arrival,
    /// whether or not the client is awaiting it. `hangup`: the peer ended its side or the
    /// socket has an error, so a short read does not mean all was read (the end is still to be
    /// read, and no later edge will announce it).
    virtual void on_input(bool hangup) = 0;

   protected:
    ~Client() = default;
  };

  struct Token {
    std::uint32_t slot = 0;
    std::uint32_t generation = 0;  ///< 0: not registered
  };

  explicit ReadReactor(boost::asio::io_context& context);
  ~ReadReactor();
  ReadReactor(const ReadReactor&) = delete;
  ReadReactor& operator=(const ReadReactor&) = delete;

  /// Watches `fd` until remove(); throws std::system_error when the kernel refuses.
  Token add(int fd, Client& client);
  /// Forgets the socket (before it is closed); an input already fetched for it is dropped.
  void remove(int fd, Token& token);

  /// The loop keeps waiting while at least one client awaits input (an Asio wait is
  /// outstanding work: io_context::run() returns only when none is). Each awaiting() is
  /// matched by one not_awaiting().
  void awaiting();
  void not_awaiting();

 private:
  void arm();
  void on_ready();

  struct Slot {
    Client* client = nullptr;
    std::uint32_t generation = 1;
  };

  int epoll_fd_ = -1;
  boost::asio::posix::stream_descriptor descriptor_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_;
  std::size_t awaiting_ = 0;
  bool armed_ = false;
  std::array<epoll_event, 128> events_{};
  std::shared_ptr<ReadReactor*> alive_;  // the wait's handler checks it first
};

}  // namespace dyno::transport
