// The run loop: sends requests on a closed- or open-loop schedule, collects traces.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "load/schedule.h"
#include "metrics/trace.h"
#include "transport/event_loop.h"
#include "transport/target.h"
#include "workload/request.h"

namespace dyno::load {

/// Trace replay (`--schedule timestamps`): each request of the stream, or each session's first
/// turn, is sent at its `at_ms`; the send offset from the start of the measured phase is
/// (at_ms − from_ms) × time_scale, over the requests with at_ms in [from_ms, to_ms).
struct Replay {
  double time_scale = 1.0;  ///< > 0; 2 replays twice as slowly, 0.5 twice as fast
  double from_ms = 0.0;
  std::optional<double> to_ms;
  /// Whether a request at `at_ms` is replayed: from_ms <= at_ms < to_ms.
  bool in_window(double at_ms) const { return at_ms >= from_ms && (!to_ms || at_ms < *to_ms); }
};

/// --shard K/N: this process sends shard K (0-based) of the N shards of one run's load
/// (docs/scale.md, "Load from several client hosts").
struct Shard {
  std::uint32_t k = 0;
  std::uint32_t n = 1;
};

struct LoadConfig {
  bool open_loop = false;
  std::optional<Replay> replay;  ///< open loop on the stream's timestamps instead of a schedule
  /// Sessions: a session may start again once every session of the stream has started (the
  /// stream cycles); false: each session runs at most once.
  bool cycle = true;
  std::uint32_t concurrency = 1;          ///< closed loop: requests kept in flight
  std::optional<ScheduleSpec> schedule;   ///< open loop
  std::optional<std::uint64_t> requests;  ///< measured requests to send
  std::optional<double> duration_s;       ///< stop sending after this (measured phase)
  std::uint64_t warmup = 0;               ///< discarded requests sent first (at concurrency)
  bool keep_event_times = true;           ///< keep every token-bearing event time
  bool keep_output_text = false;
  /// HTTP targets: event loops, each on its own thread, that the connections are shared out
  /// over (transport/sharded_target.h); 1: the run's own loop does all the I/O.
  unsigned client_threads = 1;
  /// Sharded: submissions (warm-up and measured, closed loop) and arrivals (open loop) are
  /// numbered as the whole run would number them, and this process sends those whose number i
  /// has i mod n == k; a closed loop keeps its share of `concurrency` in flight. `requests`,
  /// `warmup` and `concurrency` are the whole run's.
  std::optional<Shard> shard;
  /// --start-at: nothing is sent before this wall-clock time (ns since the Unix epoch); t0 is
  /// taken when it is reached. The wait ends early when a stop is requested.
  std::optional<std::int64_t> start_at_unix_ns;
  /// --unreachable-after: when every request for this long failed to connect and none got an
  /// answer meanwhile, the target is gone: sending stops, the requests in flight are cancelled
  /// and the run ends `target_unreachable` (LoadResult::unreachable). 0: never.
  double unreachable_after_s = 10.0;
};

/// How many of 0..count-1 satisfy i mod n == k (n >= 1).
std::uint64_t shard_count(std::uint64_t count, Shard shard);

/// The closed loop's concurrency of one shard: C split as evenly as possible (the first C mod N
/// shards get one more). Requires C >= N.
std::uint32_t shard_concurrency(std::uint32_t concurrency, Shard shard);

/// The load that this process runs: `config` itself when not sharded; else the shard's warm-up
/// and its concurrency (closed loop: and its measured requests; open loop: the whole schedule is
/// made and thinned when the run starts).
LoadConfig shard_share(const LoadConfig& config);

/// Progress, sampled by the caller for the progress bar (read on the loop thread).
struct Progress {
  std::uint64_t done = 0;
  std::uint64_t failed = 0;
  std::uint64_t in_flight = 0;
  std::optional<std::uint64_t> total;  ///< measured requests planned, when known
  std::int64_t output_tokens = 0;
  bool warmup = false;
};

struct RunHooks {
  /// Called on the loop thread when a request ends (ok, failed or cancelled).
  std::function<void(const metrics::Trace&)> on_finished;
  /// Called on the loop thread about every 100 ms.
  std::function<void(const Progress&)> on_progress;
  /// Polled every 50 ms; when set, sending stops and in-flight requests are cancelled.
  const std::atomic<bool>* stop_requested = nullptr;
  /// Polled with stop_requested; set when the engine's process has ended. Sending stops; the
  /// requests in flight end by themselves (the engine's sockets are closed, so they fail as
  /// data), and any still in flight 2 s later are cancelled.
  const std::atomic<bool>* engine_exited = nullptr;
};

/// How a run found its target gone (LoadConfig::unreachable_after_s).
struct Unreachable {
  std::uint64_t failures = 0;  ///< connect failures in a row, with no answer between them
  double for_s = 0.0;          ///< from the first of them to the one that ended the run
  std::string last_message;    ///< the last failure's message
  std::uint64_t sent = 0;      ///< measured requests sent before sending stopped
};

struct LoadResult {
  std::vector<metrics::Trace> traces;  ///< every submission, by index
  std::int64_t t0_steady_ns = 0;       ///< the run's t0 (all trace times are relative to it)
  std::int64_t measured_start_ns = 0;  ///< relative to t0
  bool interrupted = false;
  bool engine_exited = false;              ///< the run ended because the engine's process ended
  std::optional<Unreachable> unreachable;  ///< the run ended because the target was gone
  std::vector<double> loop_lag_s;          ///< event-loop lag samples taken every 10 ms
  std::uint64_t sessions_started = 0;      ///< sessions of a session stream started (warm-up too)
};

/// Runs warm-up then the measured phase. Submissions walk `requests` cyclically: submissions
/// 0..warmup-1 are warm-up, the rest measured. Requires requests.size() > 0 and at least one
/// of config.requests / config.duration_s.
///
/// A stream of sessions (workload/sessions.h) runs session by session instead: closed loop
/// keeps `concurrency` sessions running, open loop starts a session at each arrival (or at its
/// first turn's at_ms in a replay). A session's turns go one after another: turn n+1 is sent
/// its think_ms after turn n ended, with the conversation so far (the actual answers fed back);
/// a failed turn ends its session. Each turn is one submission; the warm-up and the request
/// count are counted in turns, and a session still running when its phase's count is reached is
/// cut (its later turns are not sent).
///
/// A replay (config.replay) sends each request of the stream once at its time, in at_ms order
/// (stable), the warm-up first at concurrency 1 from the stream's start.
LoadResult run_load(transport::EventLoop& loop, transport::Target& target,
                    const std::vector<workload::Request>& requests, const LoadConfig& config,
                    const RunHooks& hooks);

}  // namespace dyno::load
