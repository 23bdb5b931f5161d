// `--client-threads N`: an HTTP target whose connections are shared out over N event loops,
// each on its own thread, so one client can use several cores. One clock (steady_now_ns) and one
// record: the run's own loop (the "home" loop, where load::Run schedules and finishes requests)
// stays the only place that decides anything; the shards only do the I/O.
//
// Each request goes to the shard with the fewest requests in flight. On its shard's thread, the
// observer receives on_sent, on_first_byte, on_token_event and on_usage directly (they only
// append to that request's own trace, which nothing else touches while it is in flight); on_done
// and on_error are posted to the home loop, so everything that follows a request's end (the next
// send, the record, the stop rules) runs there, after every event of that request. The
// StreamObserver contract therefore holds per request: its calls come from one thread at a time,
// in order, never re-entrantly — but not all from the home loop's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "transport/event_loop.h"
#include "transport/http_target.h"
#include "transport/target.h"

namespace dyno::transport {

class ShardedTarget final : public Target {
 public:
  /// Starts `shards` (>= 1) event-loop threads, each with its own HttpTarget of `config`.
  /// Throws std::invalid_argument as HttpTarget does (a CA file that cannot be loaded).
  ShardedTarget(EventLoop& home, const HttpTargetConfig& config, unsigned shards);
  /// Stops and joins the shards' threads. Call cancel_all() first when requests may be in
  /// flight: their observers are not called after destruction.
  ~ShardedTarget() override;
  ShardedTarget(const ShardedTarget&) = delete;
  ShardedTarget& operator=(const ShardedTarget&) = delete;

  /// On the home loop's thread (pure: builds the wire form from the config).
  std::unique_ptr<PreparedRequest> prepare(const workload::Request& request) override;
  /// On the home loop's thread. `request` and `observer` must outlive the request.
  void submit(const PreparedRequest& request, std::uint64_t submission,
              StreamObserver& observer) override;
  /// On the home loop's thread: every shard cancels its requests (it waits for them to have
  /// done so); their on_error(kCancelled) calls reach the home loop afterwards, as posts.
  void cancel_all() override;

  unsigned shards() const { return static_cast<unsigned>(shards_.size()); }
  /// Connections opened by every shard so far.
  std::uint64_t connections_opened();
  /// CPU seconds the shards' threads have used (user + system), all shards together.
  double shards_cpu_s() const;

 private:
  struct Shard;
  class Relay;
  void finished(Relay* relay);

  EventLoop& home_;
  HttpTarget preparer_;  // prepare() only, on the home thread
  std::vector<std::unique_ptr<Shard>> shards_;
  std::unordered_map<Relay*, std::unique_ptr<Relay>> relays_;  // in flight, until their end
  struct HomeWork;
  std::unique_ptr<HomeWork> home_work_;  // keeps the home loop running while any is in flight
};

}  // namespace dyno::transport
