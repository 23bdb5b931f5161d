#include "load/runner.h"

#include <algorithm>
#include <deque>
#include <iterator>
#include <stdexcept>
#include <string>

namespace dyno::load {

namespace {

constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kLagPeriodNs = 10 * kMs;
constexpr std::int64_t kProgressPeriodNs = 100 * kMs;
constexpr std::int64_t kStopPollNs = 50 * kMs;
constexpr std::int64_t kEngineExitGraceNs = 2000 * kMs;
constexpr std::int64_t kConnectRetryPauseNs = 20 * kMs;
constexpr std::int64_t kMaxConnectRetryPauseNs = 1000 * kMs;

class Run;

/// Turns a target's callbacks into a trace. Only appends: figures come later (P5).
class RequestObserver final : public transport::StreamObserver {
 public:
  RequestObserver(Run& run, std::uint64_t index) : run_(run), index_(index) {}
  void on_sent(std::int64_t t_ns) override;
  void on_first_byte(std::int64_t t_ns, int http_status) override;
  void on_token_event(std::int64_t t_ns, std::string_view content,
                      std::string_view reasoning) override;
  void on_usage(const transport::Usage& usage) override;
  void on_done(std::int64_t t_ns, const transport::DoneInfo& info) override;
  void on_error(std::int64_t t_ns, transport::ErrorCategory category, std::string_view message,
                std::optional<int> http_status) override;

 private:
  metrics::Trace& trace();
  Run& run_;
  std::uint64_t index_;
};

class Run {
 public:
  Run(transport::EventLoop& loop, transport::Target& target,
      const std::vector<workload::Request>& requests, const LoadConfig& config,
      const RunHooks& hooks)
      : loop_(loop), target_(target), requests_(requests), config_(config), hooks_(hooks) {}

  LoadResult execute() {
    if (requests_.empty()) throw std::invalid_argument("the request stream is empty");
    if (!config_.requests && !config_.duration_s) {
      throw std::invalid_argument("give --requests or --duration (or both)");
    }
    if (!config_.open_loop && config_.concurrency == 0) {
      throw std::invalid_argument("--concurrency must be at least 1");
    }
    // Wire forms are built before t0: the hot path only copies prepared bytes.
    prepared_.reserve(requests_.size());
    for (const auto& r : requests_) {
      // A large stream takes seconds to prepare: a stop request is answered meanwhile too.
      if (prepared_.size() % 1024 == 0 && hooks_.stop_requested != nullptr &&
          hooks_.stop_requested->load()) {
        result_.t0_steady_ns = transport::steady_now_ns();
        result_.interrupted = true;
        return std::move(result_);
      }
      prepared_.push_back(target_.prepare(r));
    }
    if (config_.open_loop) {
      if (!config_.schedule) throw std::invalid_argument("open loop needs a schedule (--rate)");
      schedule_ = make_schedule(*config_.schedule, config_.requests, config_.duration_s);
      if (config_.duration_s) {  // both limits given: whichever comes first
        const auto limit = static_cast<std::int64_t>(*config_.duration_s * 1e9);
        std::erase_if(schedule_, [limit](std::int64_t t) { return t >= limit; });
      }
    }

    result_.t0_steady_ns = transport::steady_now_ns();
    progress_.total =
        config_.open_loop ? std::optional<std::uint64_t>(schedule_.size()) : config_.requests;
    loop_.post([this] { begin(); });
    start_periodic();
    loop_.run();
    result_.traces.assign(std::make_move_iterator(traces_.begin()),
                          std::make_move_iterator(traces_.end()));
    return std::move(result_);
  }

  metrics::Trace& trace(std::uint64_t index) { return traces_[index]; }
  std::int64_t rel(std::int64_t t_ns) const { return t_ns - result_.t0_steady_ns; }
  const LoadConfig& config() const { return config_; }

  void finished(std::uint64_t index) {
    --in_flight_;
    metrics::Trace& t = traces_[index];
    if (t.measured()) {
      if (t.ok()) {
        ++progress_.done;
        progress_.output_tokens += t.output_tokens.value_or(0);
      } else if (t.status == metrics::RequestStatus::kError) {
        ++progress_.failed;
      }
    }
    if (hooks_.on_finished) hooks_.on_finished(t);
    if (warmup_phase_) {
      if (stopping_ || engine_has_exited()) {
        maybe_end();
      } else if (warmup_sent_ < config_.warmup) {
        submit_next("warmup", std::nullopt);
      } else if (in_flight_ == 0) {
        start_measured();
      }
      return;
    }
    if (!config_.open_loop && can_send_closed()) {
      if (refused_before_serving(t) && hooks_.engine_exited != nullptr) {
        // The engine's port refused a connection: it may be exiting, and its reaper may not
        // have said so yet. Wait a moment before this slot sends again, so the run stops at
        // the crash instead of sending into a closed port.
        ++parked_;
        // 20 ms, doubling with each refusal in a row (to 1 s): an engine that is gone is not
        // hammered while its exit is being noticed.
        const std::int64_t pause =
            std::min(kConnectRetryPauseNs << std::min<std::uint64_t>(refused_in_a_row_++, 6),
                     kMaxConnectRetryPauseNs);
        loop_.call_at(transport::steady_now_ns() + pause, [this] {
          --parked_;
          if (engine_has_exited()) return maybe_end();
          if (can_send_closed()) submit_next("measured", std::nullopt);
          maybe_end();
        });
        return;
      }
      refused_in_a_row_ = 0;
      submit_next("measured", std::nullopt);
    }
    maybe_end();
  }

 private:
  void begin() {
    if (hooks_.stop_requested != nullptr && hooks_.stop_requested->load()) {
      stopping_ = true;  // interrupted while preparing: not one request is sent
      result_.interrupted = true;
      maybe_end();
      return;
    }
    if (config_.warmup > 0) {
      warmup_phase_ = true;
      progress_.warmup = true;
      const std::uint64_t slots =
          std::min<std::uint64_t>(config_.warmup, std::max<std::uint32_t>(config_.concurrency, 1));
      for (std::uint64_t i = 0; i < slots; ++i) submit_next("warmup", std::nullopt);
    } else {
      start_measured();
    }
  }

  void start_measured() {
    warmup_phase_ = false;
    progress_.warmup = false;
    measured_start_abs_ = transport::steady_now_ns();
    result_.measured_start_ns = rel(measured_start_abs_);
    measuring_ = true;
    if (config_.open_loop) {
      arm_arrival_timer();
    } else {
      for (std::uint32_t i = 0; i < config_.concurrency && can_send_closed(); ++i) {
        submit_next("measured", std::nullopt);
      }
    }
    maybe_end();
  }

  static bool refused_before_serving(const metrics::Trace& t) {
    // kConnect: refused or reset before a response started (after a stale keep-alive
    // connection, the retry's connect was refused): the engine served nothing.
    return t.status == metrics::RequestStatus::kError &&
           t.error_category == transport::to_string(transport::ErrorCategory::kConnect);
  }

  /// Whether the launched engine has exited; the first time it says so, sending stops (the
  /// requests in flight end by themselves, and any still in flight 2 s later are cancelled).
  bool engine_has_exited() {
    if (hooks_.engine_exited == nullptr || !hooks_.engine_exited->load()) return false;
    if (!stopping_) {
      stopping_ = true;
      result_.engine_exited = true;
      if (arrival_timer_ != 0) {
        loop_.cancel_timer(arrival_timer_);
        arrival_timer_ = 0;
      }
      exit_grace_timer_ = loop_.call_at(transport::steady_now_ns() + kEngineExitGraceNs, [this] {
        exit_grace_timer_ = 0;
        target_.cancel_all();
      });
    }
    return true;
  }

  bool can_send_closed() {
    if (stopping_ || engine_has_exited()) return false;
    if (config_.requests && measured_sent_ >= *config_.requests) return false;
    if (config_.duration_s) {
      const auto limit = measured_start_abs_ + static_cast<std::int64_t>(*config_.duration_s * 1e9);
      if (transport::steady_now_ns() >= limit) return false;
    }
    return true;
  }

  void arm_arrival_timer() {
    if (stopping_ || next_arrival_ >= schedule_.size()) return;
    const std::int64_t at = measured_start_abs_ + schedule_[next_arrival_];
    arrival_timer_ = loop_.call_at(at, [this] {
      arrival_timer_ = 0;
      // Catch up on every arrival that is due: a late timer must not thin the load.
      const std::int64_t now = transport::steady_now_ns();
      while (!stopping_ && !engine_has_exited() && next_arrival_ < schedule_.size() &&
             measured_start_abs_ + schedule_[next_arrival_] <= now) {
        const std::int64_t scheduled = measured_start_abs_ + schedule_[next_arrival_];
        ++next_arrival_;
        submit_next("measured", scheduled);
      }
      arm_arrival_timer();
      maybe_end();
    });
  }

  /// `scheduled_abs`: open-loop arrival time; closed loop uses "now" (the slot became free).
  void submit_next(const char* phase, std::optional<std::int64_t> scheduled_abs) {
    const std::uint64_t index = traces_.size();
    const std::uint64_t stream_pos = index % requests_.size();
    metrics::Trace& t = traces_.emplace_back();
    t.index = index;
    t.request_id = requests_[stream_pos].id;
    t.phase = phase;
    t.scheduled_ns = rel(scheduled_abs.value_or(transport::steady_now_ns()));
    if (std::string_view(phase) == "warmup") {
      ++warmup_sent_;
    } else {
      ++measured_sent_;
    }
    ++in_flight_;
    RequestObserver& obs = observers_.emplace_back(*this, index);
    target_.submit(*prepared_[stream_pos], index, obs);
  }

  void maybe_end() {
    if (ended_ || in_flight_ != 0 || parked_ != 0) return;
    const bool more_to_send =
        !stopping_ && (warmup_phase_ ||
                       (config_.open_loop ? next_arrival_ < schedule_.size() : can_send_closed()));
    if (more_to_send) return;
    ended_ = true;
    if (arrival_timer_ != 0) loop_.cancel_timer(arrival_timer_);
    for (auto id : {lag_timer_, progress_timer_, stop_timer_, exit_grace_timer_}) {
      if (id != 0) loop_.cancel_timer(id);
    }
    if (hooks_.on_progress) hooks_.on_progress(progress_);
    loop_.stop();
  }

  void start_periodic() {
    const std::int64_t now = transport::steady_now_ns();
    schedule_lag(now + kLagPeriodNs);
    schedule_progress(now + kProgressPeriodNs);
    schedule_stop_poll(now + kStopPollNs);
  }

  // Event-loop lag: how late a timer fires. A busy loop delays every timestamp it takes.
  void schedule_lag(std::int64_t due) {
    lag_timer_ = loop_.call_at(due, [this, due] {
      const std::int64_t now = transport::steady_now_ns();
      if (measuring_) result_.loop_lag_s.push_back(static_cast<double>(now - due) * 1e-9);
      schedule_lag(std::max(due + kLagPeriodNs, now + 1 * kMs));
    });
  }

  void schedule_progress(std::int64_t due) {
    progress_timer_ = loop_.call_at(due, [this, due] {
      progress_.in_flight = in_flight_;
      if (hooks_.on_progress) hooks_.on_progress(progress_);
      schedule_progress(std::max(due + kProgressPeriodNs, transport::steady_now_ns()));
    });
  }

  void schedule_stop_poll(std::int64_t due) {
    stop_timer_ = loop_.call_at(due, [this, due] {
      if (hooks_.stop_requested != nullptr && hooks_.stop_requested->load() && !stopping_) {
        stopping_ = true;
        result_.interrupted = true;
        if (arrival_timer_ != 0) {
          loop_.cancel_timer(arrival_timer_);
          arrival_timer_ = 0;
        }
        target_.cancel_all();  // every in-flight request ends as kCancelled
        maybe_end();
        if (ended_) return;
      }
      if (!stopping_ && engine_has_exited()) {
        maybe_end();
        if (ended_) return;
      }
      schedule_stop_poll(std::max(due + kStopPollNs, transport::steady_now_ns()));
    });
  }

  transport::EventLoop& loop_;
  transport::Target& target_;
  const std::vector<workload::Request>& requests_;
  const LoadConfig& config_;
  const RunHooks& hooks_;

  std::vector<std::unique_ptr<transport::PreparedRequest>> prepared_;
  std::vector<std::int64_t> schedule_;
  std::deque<metrics::Trace> traces_;  // stable addresses while requests are in flight
  std::deque<RequestObserver> observers_;
  LoadResult result_;
  Progress progress_;

  std::int64_t measured_start_abs_ = 0;
  std::uint64_t warmup_sent_ = 0;
  std::uint64_t measured_sent_ = 0;
  std::uint64_t in_flight_ = 0;
  std::uint64_t parked_ = 0;  // closed-loop slots waiting after a refused connection
  std::uint64_t refused_in_a_row_ = 0;
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

metrics::Trace& RequestObserver::trace() { return run_.trace(index_); }

void RequestObserver::on_sent(std::int64_t t_ns) { trace().sent_ns = run_.rel(t_ns); }

void RequestObserver::on_first_byte(std::int64_t t_ns, int http_status) {
  metrics::Trace& t = trace();
  t.first_byte_ns = run_.rel(t_ns);
  t.http_status = http_status;
}

void RequestObserver::on_token_event(std::int64_t t_ns, std::string_view content,
                                     std::string_view reasoning) {
  metrics::Trace& t = trace();
  const std::int64_t r = run_.rel(t_ns);
  if (!t.first_token_ns) t.first_token_ns = r;
  if (!content.empty() && !t.first_content_ns) t.first_content_ns = r;
  if (content.empty() && !reasoning.empty()) ++t.reasoning_events;
  t.last_token_ns = r;
  t.event_times_ns.push_back(r);
  if (run_.config().keep_output_text) t.output_text.append(content);
}

void RequestObserver::on_usage(const transport::Usage& usage) {
  metrics::Trace& t = trace();
  if (usage.prompt_tokens) t.input_tokens = usage.prompt_tokens;
  if (usage.completion_tokens) {
    t.output_tokens = usage.completion_tokens;
    t.token_count_source = metrics::TokenCountSource::kUsage;
  }
  t.cached_input_tokens = usage.cached_tokens;
  t.reasoning_tokens = usage.reasoning_tokens;
}

void RequestObserver::on_done(std::int64_t t_ns, const transport::DoneInfo& info) {
  metrics::Trace& t = trace();
  t.done_ns = run_.rel(t_ns);
  t.status = metrics::RequestStatus::kOk;
  t.finish_reason = info.finish_reason;
  t.server_timings_json = info.server_timings_json;
  if (!t.output_tokens) {
    // No usage from the engine: the count of token-bearing events is the only honest
    // fallback left (never the requested length); the record names the source.
    t.output_tokens = static_cast<std::int64_t>(t.event_times_ns.size());
    t.token_count_source = metrics::TokenCountSource::kChunks;
  }
  run_.finished(index_);
}

void RequestObserver::on_error(std::int64_t t_ns, transport::ErrorCategory category,
                               std::string_view message, std::optional<int> http_status) {
  metrics::Trace& t = trace();
  t.done_ns = run_.rel(t_ns);
  t.status = category == transport::ErrorCategory::kCancelled ? metrics::RequestStatus::kCancelled
                                                              : metrics::RequestStatus::kError;
  t.error_category = transport::to_string(category);
  t.error_message = std::string(message);
  if (http_status) t.http_status = http_status;
  run_.finished(index_);
}

}  // namespace

LoadResult run_load(transport::EventLoop& loop, transport::Target& target,
                    const std::vector<workload::Request>& requests, const LoadConfig& config,
                    const RunHooks& hooks) {
  Run run(loop, target, requests, config, hooks);
  return run.execute();
}

}  // namespace dyno::load
