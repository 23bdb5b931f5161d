// The single-threaded event loop that drives every stream of a run (one Asio io_context).
// Asio headers stay out of this header on purpose: only transport/ sources see them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

namespace boost::asio {
class io_context;
}

namespace dyno::transport {

/// Steady-clock now in nanoseconds since the clock's epoch. The one clock of dyno: traces,
/// schedules and telemetry all use it (std::chrono::steady_clock = CLOCK_MONOTONIC on Linux,
/// so another process on the same host, e.g. `dyno sim`, reads the same clock).
std::int64_t steady_now_ns();

/// Not thread-safe except `post_threadsafe` and `stop`: every other member is called on the
/// thread that runs `run()`.
class EventLoop {
 public:
  EventLoop();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  /// Runs `fn` on the loop thread as soon as possible.
  void post(std::function<void()> fn);
  /// Same as post(); safe from any thread.
  void post_threadsafe(std::function<void()> fn);

  /// Runs `fn` on the loop thread at steady time `at_ns` (or at once if it has passed).
  /// Returns an id for cancel_timer(). Ids are never reused.
  std::uint64_t call_at(std::int64_t at_ns, std::function<void()> fn);
  /// Cancels a pending timer; `fn` will not run. No effect if it already ran.
  void cancel_timer(std::uint64_t id);

  /// Runs until stop() is called or no work remains.
  void run();
  /// Makes run() return as soon as possible. Thread-safe.
  void stop();

  /// The underlying io_context, for transport implementations only.
  boost::asio::io_context& context();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dyno::transport
