#include "transport/event_loop.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <unordered_map>
#include <utility>

namespace dyno::transport {

namespace asio = boost::asio;

std::int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct EventLoop::Impl {
  // Concurrency hint 1: the context is only ever run by one thread, so Asio may skip locking.
  asio::io_context context{1};
  struct Timer {
    asio::steady_timer timer;
    std::function<void()> fn;
  };
  // A timer's callback runs only if its id is still here when the wait completes; cancel_timer
  // erases it, so a wait that already completed (handler queued) still does not run `fn`.
  std::unordered_map<std::uint64_t, Timer> timers;
  std::uint64_t next_timer_id = 1;
};

EventLoop::EventLoop() : impl_(std::make_unique<Impl>()) {}

EventLoop::~EventLoop() = default;

void EventLoop::post(std::function<void()> fn) { asio::post(impl_->context, std::move(fn)); }

void EventLoop::post_threadsafe(std::function<void()> fn) {
  // io_context::post is thread-safe (even with concurrency hint 1, which only concerns run()).
  asio::post(impl_->context, std::move(fn));
}

std::uint64_t EventLoop::call_at(std::int64_t at_ns, std::function<void()> fn) {
  const std::uint64_t id = impl_->next_timer_id++;
  auto [it, inserted] =
      impl_->timers.try_emplace(id, Impl::Timer{asio::steady_timer(impl_->context), std::move(fn)});
  it->second.timer.expires_at(
      std::chrono::steady_clock::time_point(std::chrono::nanoseconds(at_ns)));
  Impl* impl = impl_.get();
  it->second.timer.async_wait([impl, id](const boost::system::error_code&) {
    auto found = impl->timers.find(id);
    if (found == impl->timers.end()) return;  // cancelled
    std::function<void()> callback = std::move(found->second.fn);
    impl->timers.erase(found);
    callback();
  });
  return id;
}

void EventLoop::cancel_timer(std::uint64_t id) {
  auto found = impl_->timers.find(id);
  if (found == impl_->timers.end()) return;
  // Erasing destroys the timer, which cancels its wait; the handler then finds no entry.
  impl_->timers.erase(found);
}

void EventLoop::run() {
  // Pending timers and I/O are outstanding work, so run() returns only when none is left or
  // stop() was called. restart() allows running again after a stop().
  impl_->context.restart();
  impl_->context.run();
}

void EventLoop::stop() { impl_->context.stop(); }

asio::io_context& EventLoop::context() { return impl_->context; }

}  // namespace dyno::transport
