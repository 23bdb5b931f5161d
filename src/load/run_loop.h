// The run loop's state (internal to load/): runner.cpp sends single requests on a closed- or
// open-loop schedule or a replay's timestamps; session_run.cpp runs a stream of sessions turn
// by turn. Both share this class.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "load/runner.h"
#include "workload/sessions.h"

namespace dyno::load {

class Run;

/// The run's traces, by index, at addresses that never move while requests are in flight (an
/// observer holds its trace; with --client-threads a shard's thread writes it). Up to the
/// bound given (the run's warm-up and measured requests, when it has a count) they lie in one
/// vector reserved at the start, which becomes the result without a copy; beyond it (a run
/// limited by time) in a deque, moved into the result at the end. Moving a deque's traces into
/// a vector held both at once: at 10,000 streams 0.7 KiB per stream of the peak.
class TraceStore {
 public:
  void reserve(std::size_t bound) { vector_.reserve(bound); }
  std::size_t size() const { return vector_.size() + deque_.size(); }
  metrics::Trace& operator[](std::size_t i) {
    return i < vector_.size() ? vector_[i] : deque_[i - vector_.size()];
  }
  metrics::Trace& emplace_back() {
    if (deque_.empty() && vector_.size() < vector_.capacity()) return vector_.emplace_back();
    return deque_.emplace_back();
  }
  /// Every trace, by index (once nothing is in flight).
  std::vector<metrics::Trace> take() {
    std::vector<metrics::Trace> all = std::move(vector_);
    all.reserve(all.size() + deque_.size());
    for (metrics::Trace& t : deque_) all.push_back(std::move(t));
    deque_.clear();
    vector_.clear();
    return all;
  }

 private:
  std::vector<metrics::Trace> vector_;
  std::deque<metrics::Trace> deque_;
};

/// Turns a target's callbacks into a trace. Only appends: figures come later (P5).
class RequestObserver final : public transport::StreamObserver {
 public:
  /// `trace` is the request's own trace: with --client-threads the per-event calls come from a
  /// shard's thread, which must touch nothing else of the run (transport/sharded_target.h).
  RequestObserver(Run& run, std::uint64_t index, metrics::Trace& trace)
      : run_(run), index_(index), trace_(trace) {}
  void on_sent(std::int64_t t_ns) override;
  void on_first_byte(std::int64_t t_ns, int http_status) override;
  void on_token_event(std::int64_t t_ns, std::string_view content,
                      std::string_view reasoning) override;
  void on_usage(const transport::Usage& usage) override;
  void on_done(std::int64_t t_ns, const transport::DoneInfo& info) override;
  void on_error(std::int64_t t_ns, transport::ErrorCategory category, std::string_view message,
                std::optional<int> http_status) override;

 private:
  metrics::Trace& trace() { return trace_; }
  Run& run_;
  std::uint64_t index_;
  metrics::Trace& trace_;
};

class Run {
 public:
  Run(transport::EventLoop& loop, transport::Target& target,
      const std::vector<workload::Request>& requests, const LoadConfig& config,
      const RunHooks& hooks);

  LoadResult execute();

  metrics::Trace& trace(std::uint64_t index) { return traces_[index]; }
  std::int64_t rel(std::int64_t t_ns) const { return t_ns - result_.t0_steady_ns; }
  /// Whether an answer's text is collected (kept outputs, or a session feeding it back).
  bool collects_text() const { return config_.keep_output_text || !sessions_.empty(); }
  void finished(std::uint64_t index);
  /// A response began (any thread: a shard's observer calls it). The target is there.
  void answered(std::int64_t t_ns) { last_answer_ns_.store(t_ns, std::memory_order_relaxed); }

 private:
  /// One session being run (session_run.cpp).
  struct ActiveSession {
    std::size_t plan = 0;       ///< index into sessions_
    std::uint64_t ordinal = 0;  ///< the trace's session_run
    std::size_t next = 0;       ///< position in the plan's turns of the next turn to send
    workload::Conversation conversation;
    bool warmup = false;
    bool holds_slot = false;  ///< closed loop: its end starts another session
    std::uint64_t think_timer = 0;
  };

  // runner.cpp
  void prepare_requests();
  void make_open_loop_schedule();
  void keep_shard_arrivals();
  bool wait_for_start();  ///< false: a stop was requested while waiting
  void begin();
  void start_measured();
  void after_single(const metrics::Trace& t);
  static bool refused_before_serving(const metrics::Trace& t);
  /// A closed-loop slot whose request was refused before the engine served it: `resume` runs
  /// after a pause that grows with the refusals in a row (none when the engine has exited).
  void pause_slot(std::function<void()> resume);
  /// Follows connect failures in a row; ends the run when the target is gone (unreachable).
  void note_reachability(const metrics::Trace& t);
  bool engine_has_exited();
  void stop_sending();
  bool budget_left(bool warmup);
  bool can_send_closed();
  void arm_arrival_timer();
  /// When a stop was requested and not yet answered: stops sending, cancels what is in flight,
  /// and returns true.
  bool answer_stop();
  void arrive(std::size_t arrival, std::int64_t scheduled_abs);
  metrics::Trace& new_trace(const char* phase, std::optional<std::int64_t> scheduled_abs,
                            std::size_t stream_pos);
  void submit_next(const char* phase, std::optional<std::int64_t> scheduled_abs,
                   std::optional<std::size_t> stream_pos = std::nullopt);
  bool more_to_send();
  void maybe_end();
  void start_periodic();
  void schedule_lag(std::int64_t due);
  void schedule_progress(std::int64_t due);
  void schedule_stop_poll(std::int64_t due);

  // session_run.cpp
  bool start_session(bool warmup, std::optional<std::int64_t> scheduled_abs,
                     std::optional<std::size_t> plan = std::nullopt);
  void send_turn(ActiveSession& s, std::optional<std::int64_t> scheduled_abs);
  void take_answer(metrics::Trace& t);
  void after_turn(const metrics::Trace& t);
  /// Ends the session; a closed loop's slot starts the next one (after pause_slot's pause when
  /// the last turn's connection was refused).
  void end_session(std::uint64_t ordinal, bool refused = false);
  void cut_waiting_sessions();
  void settle();

  transport::EventLoop& loop_;
  transport::Target& target_;
  const std::vector<workload::Request>& requests_;
  const LoadConfig config_;  ///< this process's share of the load (shard_share)
  const RunHooks& hooks_;
  std::uint64_t run_warmup_ = 0;  ///< the whole run's warm-up (all shards together)

  std::vector<std::unique_ptr<transport::PreparedRequest>> prepared_;
  std::vector<std::int64_t> schedule_;
  /// Replay: the stream position (or session) of each arrival; empty: arrivals walk the stream.
  std::vector<std::size_t> schedule_pos_;
  TraceStore traces_;  // stable addresses while requests are in flight
  std::deque<RequestObserver> observers_;
  LoadResult result_;
  Progress progress_;

  // Sessions (empty: a stream of single requests).
  std::vector<workload::SessionPlan> sessions_;
  std::map<std::uint64_t, ActiveSession> active_;  // by ordinal
  /// The wire form of each turn in flight, built when it is sent (it holds the answers).
  std::unordered_map<std::uint64_t, std::unique_ptr<transport::PreparedRequest>> turn_wire_;
  std::vector<std::unique_ptr<transport::PreparedRequest>> retired_wire_;  // ended turns
  std::size_t next_session_ = 0;  // sessions started so far (the cursor walks sessions_)
  std::uint64_t think_waits_ = 0;

  std::int64_t measured_start_abs_ = 0;
  std::uint64_t warmup_sent_ = 0;
  std::uint64_t measured_sent_ = 0;
  std::uint64_t in_flight_ = 0;
  std::uint64_t parked_ = 0;  // closed-loop slots waiting after a refused connection
  std::uint64_t refused_in_a_row_ = 0;
  // Connect failures in a row (LoadConfig::unreachable_after_s): since when, how many, and when
  // a response last began (written by the observers, shards' threads included).
  std::optional<std::int64_t> unreachable_since_;
  std::uint64_t unreachable_failures_ = 0;
  std::atomic<std::int64_t> last_answer_ns_{0};
  std::size_t next_arrival_ = 0;
  bool warmup_phase_ = false;
  bool measuring_ = false;
  bool stopping_ = false;
  std::uint64_t exit_grace_timer_ = 0;
  bool ended_ = false;
  std::uint64_t arrival_timer_ = 0;
  std::uint64_t lag_timer_ = 0;
  std::uint64_t progress_timer_ = 0;
  std::uint64_t stop_timer_ = 0;
};

}  // namespace dyno::load
