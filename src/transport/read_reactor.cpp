#include "transport/read_reactor.h"

#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace dyno::transport {

namespace {

int create_epoll() {
  const int fd = ::epoll_create1(EPOLL_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::system_category(), "epoll_create1");
  return fd;
}

std::uint64_t pack(ReadReactor::Token t) {
  return (static_cast<std::uint64_t>(t.slot) << 32) | t.generation;
}

}  // namespace

ReadReactor::ReadReactor(boost::asio::io_context& context)
    : epoll_fd_(create_epoll()),
      descriptor_(context, epoll_fd_),
      alive_(std::make_shared<ReadReactor*>(this)) {}

ReadReactor::~ReadReactor() {
  *alive_ = nullptr;
  boost::system::error_code ignored;
  descriptor_.close(ignored);  // closes epoll_fd_
}

ReadReactor::Token ReadReactor::add(int fd, Client& client) {
  std::uint32_t slot = 0;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  s.client = &client;
  const Token token{slot, s.generation};
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
  ev.data.u64 = pack(token);
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    const int err = errno;
    s.client = nullptr;
    free_.push_back(slot);
    throw std::system_error(err, std::system_category(), "epoll_ctl(EPOLL_CTL_ADD)");
  }
  return token;
}

void ReadReactor::remove(int fd, Token& token) {
  if (token.generation == 0) return;
  Slot& s = slots_[token.slot];
  if (s.generation == token.generation) {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    s.client = nullptr;
    ++s.generation;
    if (s.generation == 0) s.generation = 1;
    free_.push_back(token.slot);
  }
  token = Token{};
}

void ReadReactor::awaiting() {
  ++awaiting_;
  arm();
}

void ReadReactor::not_awaiting() {
  if (awaiting_ == 0) return;
  // The last awaiting client went (outside on_ready, where the wait is not armed): cancel the
  // wait, or it would keep the loop running with nothing to wait for.
  if (--awaiting_ == 0 && armed_) descriptor_.cancel();
}

void ReadReactor::arm() {
  if (armed_ || awaiting_ == 0) return;
  armed_ = true;
  descriptor_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                         [alive = alive_](const boost::system::error_code& ec) {
                           if (*alive == nullptr) return;
                           ReadReactor& self = **alive;
                           self.armed_ = false;
                           if (!ec) self.on_ready();
                           if (*alive != nullptr) self.arm();
                         });
}

void ReadReactor::on_ready() {
  const int n = ::epoll_wait(epoll_fd_, events_.data(), static_cast<int>(events_.size()), 0);
  // A full batch leaves more ready: the re-armed wait (a re-evaluating EPOLL_CTL_MOD) fires
  // again at once, behind the handlers and timers that are due.
  for (int i = 0; i < n; ++i) {
    const epoll_event& event = events_[static_cast<std::size_t>(i)];
    const std::uint64_t data = event.data.u64;
    const auto slot = static_cast<std::uint32_t>(data >> 32);
    const auto generation = static_cast<std::uint32_t>(data);
    // A client may close (and remove) any socket, its own or another, while handling input.
    if (slot >= slots_.size()) continue;
    Client* const client = slots_[slot].client;
    if (slots_[slot].generation != generation || client == nullptr) continue;
    client->on_input((event.events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0);
  }
}

}  // namespace dyno::transport
