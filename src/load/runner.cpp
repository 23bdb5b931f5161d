#include "load/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>

#include "load/run_loop.h"

namespace dyno::load {

namespace {

constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kLagPeriodNs = 10 * kMs;
constexpr std::int64_t kProgressPeriodNs = 100 * kMs;
constexpr std::int64_t kStopPollNs = 50 * kMs;
constexpr std::int64_t kEngineExitGraceNs = 2000 * kMs;
constexpr std::int64_t kConnectRetryPauseNs = 20 * kMs;
constexpr std::int64_t kMaxConnectRetryPauseNs = 1000 * kMs;
/// Arrivals sent by one wake-up of the arrival timer. A loop that fell behind a fast schedule
/// catches up in batches of this many, with the loop's I/O, its timers and the stop flag
/// between them: a flood of due arrivals never holds the loop (or an interrupt) for long.
constexpr std::size_t kMaxArrivalsPerWake = 64;

/// The at_ms of stream position `pos`, or an error naming the request.
double at_ms_of(const workload::Request& r) {
  if (!r.at_ms) {
    throw std::invalid_argument("request '" + r.id +
                                "' has no at_ms; a replay (--schedule timestamps) needs at_ms on "
                                "every request (on the first turn of every session)");
  }
  return *r.at_ms;
}

}  // namespace

std::uint64_t shard_count(std::uint64_t count, Shard shard) {
  return count > shard.k ? (count - shard.k - 1) / shard.n + 1 : 0;
}

std::uint32_t shard_concurrency(std::uint32_t concurrency, Shard shard) {
  return concurrency / shard.n + (shard.k < concurrency % shard.n ? 1 : 0);
}

LoadConfig shard_share(const LoadConfig& config) {
  LoadConfig c = config;
  if (!config.shard) return c;
  const Shard s = *config.shard;
  if (s.n == 0 || s.k >= s.n) throw std::invalid_argument("--shard: K must be below N >= 1");
  c.warmup = shard_count(config.warmup, s);
  if (!config.open_loop) {
    if (config.concurrency < s.n) {
      throw std::invalid_argument("--shard: a concurrency below the number of shards");
    }
    c.concurrency = shard_concurrency(config.concurrency, s);
    if (config.requests) {
      c.requests = shard_count(config.warmup + *config.requests, s) - c.warmup;
    }
  }
  return c;
}

Run::Run(transport::EventLoop& loop, transport::Target& target,
         const std::vector<workload::Request>& requests, const LoadConfig& config,
         const RunHooks& hooks)
    : loop_(loop),
      target_(target),
      requests_(requests),
      config_(shard_share(config)),
      hooks_(hooks),
      run_warmup_(config.warmup) {}

LoadResult Run::execute() {
  if (requests_.empty()) throw std::invalid_argument("the request stream is empty");
  if (!config_.requests && !config_.duration_s) {
    throw std::invalid_argument("give --requests or --duration (or both)");
  }
  if (!config_.open_loop && config_.concurrency == 0) {
    throw std::invalid_argument("--concurrency must be at least 1");
  }
  if (config_.replay && !config_.open_loop) {
    throw std::invalid_argument("a replay is an open loop");
  }
  sessions_ = workload::plan_sessions(requests_);
  if (config_.shard && !sessions_.empty()) {
    throw std::invalid_argument("--shard splits a stream of single requests, not of sessions");
  }
  for (const workload::SessionPlan& s : sessions_) {
    // A turn is built when it is sent; a turn the target cannot take fails here, before t0.
    workload::Conversation probe;
    (void)target_.prepare(probe.request_for(requests_[s.turns.front()]));
  }
  if (sessions_.empty()) {
    // Wire forms are built before t0: the hot path only copies prepared bytes. (A session's
    // turns are built when sent: they carry the answers.)
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
  }
  if (config_.open_loop) make_open_loop_schedule();
  if (sessions_.empty()) {
    // The traces' count, when the run has one, is their vector's room (TraceStore): bounded,
    // as its pages are only taken as traces are written; beyond it they go to the deque.
    const std::uint64_t bound = config_.warmup + (config_.open_loop  ? schedule_.size()
                                                  : config_.requests ? *config_.requests
                                                                     : 0);
    traces_.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(bound, 1u << 18)));
  }
  if (config_.start_at_unix_ns && !wait_for_start()) {
    result_.t0_steady_ns = transport::steady_now_ns();
    result_.interrupted = true;
    return std::move(result_);
  }

  result_.t0_steady_ns = transport::steady_now_ns();
  progress_.total = config_.open_loop && sessions_.empty()
                        ? std::optional<std::uint64_t>(schedule_.size())
                        : config_.requests;
  loop_.post([this] { begin(); });
  start_periodic();
  loop_.run();
  result_.traces = traces_.take();
  return std::move(result_);
}

bool Run::wait_for_start() {
  // Sleeps in steps of at most 50 ms (a stop is answered), the last one to the instant.
  for (;;) {
    const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
    const std::int64_t left = *config_.start_at_unix_ns - now;
    if (left <= 0) return true;
    if (hooks_.stop_requested != nullptr && hooks_.stop_requested->load()) return false;
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min(left, kStopPollNs)));
  }
}

void Run::make_open_loop_schedule() {
  if (config_.replay) {
    // Each request (or session) at its at_ms, scaled, over the window, in time order.
    const Replay& r = *config_.replay;
    if (!(r.time_scale > 0) || !std::isfinite(r.time_scale)) {
      throw std::invalid_argument("--time-scale must be a finite number > 0");
    }
    std::vector<std::pair<double, std::size_t>> items;
    const std::size_t n = sessions_.empty() ? requests_.size() : sessions_.size();
    for (std::size_t i = 0; i < n; ++i) {
      const double at = at_ms_of(requests_[sessions_.empty() ? i : sessions_[i].turns.front()]);
      if (r.in_window(at)) items.emplace_back(at, i);
    }
    std::stable_sort(items.begin(), items.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    if (sessions_.empty() && config_.requests && items.size() > *config_.requests) {
      items.resize(*config_.requests);
    }
    for (const auto& [at, pos] : items) {
      const double offset_ns = std::round((at - r.from_ms) * r.time_scale * 1e6);
      // In time order: past --duration, none of the rest is sent either.
      if (config_.duration_s && !(offset_ns < *config_.duration_s * 1e9)) break;
      if (offset_ns > 9.2e18) throw std::invalid_argument("a replay offset overflows");
      schedule_.push_back(static_cast<std::int64_t>(offset_ns));
      schedule_pos_.push_back(pos);
    }
  } else if (!config_.schedule) {
    throw std::invalid_argument("open loop needs a schedule (--rate)");
  } else {
    std::optional<std::uint64_t> count = config_.requests;
    if (!sessions_.empty() && count) {
      // Sessions arrive: enough of them to cover the turns asked for (and the warm-up's).
      std::uint64_t turns = 0, n = 0;
      while (turns < *count + config_.warmup && (config_.cycle || n < sessions_.size())) {
        turns += sessions_[n % sessions_.size()].turns.size();
        ++n;
      }
      count = n;
    }
    schedule_ = make_schedule(*config_.schedule, count, config_.duration_s);
  }
  if (config_.duration_s) {  // both limits given: whichever comes first
    const auto limit = static_cast<std::int64_t>(*config_.duration_s * 1e9);
    const auto end = std::find_if(schedule_.begin(), schedule_.end(),
                                  [limit](std::int64_t t) { return t >= limit; });
    const auto kept = static_cast<std::size_t>(end - schedule_.begin());
    schedule_.resize(kept);
    if (!schedule_pos_.empty()) schedule_pos_.resize(kept);
  }
  if (config_.shard) keep_shard_arrivals();
}

void Run::keep_shard_arrivals() {
  // Arrival i of the whole run is sent by shard i mod n, with the stream position the whole run
  // would give it: after the run's warm-up (walking the stream) or the replay's own.
  const Shard s = *config_.shard;
  std::vector<std::int64_t> times;
  std::vector<std::size_t> pos;
  for (std::size_t i = s.k; i < schedule_.size(); i += s.n) {
    times.push_back(schedule_[i]);
    pos.push_back(schedule_pos_.empty() ? (run_warmup_ + i) % requests_.size() : schedule_pos_[i]);
  }
  schedule_ = std::move(times);
  schedule_pos_ = std::move(pos);
}

void Run::finished(std::uint64_t index) {
  --in_flight_;
  retired_wire_.clear();  // turns that ended before this callback: their targets let go
  metrics::Trace& t = traces_[index];
  if (t.measured()) {
    if (t.ok()) {
      ++progress_.done;
      progress_.output_tokens += t.output_tokens.value_or(0);
    } else if (t.status == metrics::RequestStatus::kError) {
      ++progress_.failed;
    }
  }
  if (!sessions_.empty()) take_answer(t);  // before the record sees the trace
  if (hooks_.on_finished) hooks_.on_finished(t);
  note_reachability(t);
  if (sessions_.empty()) {
    after_single(t);
  } else {
    after_turn(t);
  }
}

void Run::after_single(const metrics::Trace& t) {
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
    if (refused_before_serving(t)) {
      pause_slot([this] {
        if (can_send_closed()) submit_next("measured", std::nullopt);
      });
      return;
    }
    refused_in_a_row_ = 0;
    submit_next("measured", std::nullopt);
  }
  maybe_end();
}

void Run::pause_slot(std::function<void()> resume) {
  // The engine's port refused a connection: a launched engine may be exiting, and its reaper
  // may not have said so yet; a server at --url may be restarting, or gone. The slot waits a
  // moment before it sends again — 20 ms, doubling with each refusal in a row (to 1 s) — so
  // the run stops at a crash instead of sending into a closed port, and a missing server is
  // not hammered.
  ++parked_;
  const std::int64_t pause =
      std::min(kConnectRetryPauseNs << std::min<std::uint64_t>(refused_in_a_row_++, 6),
               kMaxConnectRetryPauseNs);
  loop_.call_at(transport::steady_now_ns() + pause, [this, resume = std::move(resume)] {
    --parked_;
    if (engine_has_exited()) return maybe_end();
    resume();
    maybe_end();
  });
}

void Run::note_reachability(const metrics::Trace& t) {
  if (t.status == metrics::RequestStatus::kCancelled || stopping_) return;
  if (!refused_before_serving(t)) {
    unreachable_since_.reset();  // it connected: the target is there
    unreachable_failures_ = 0;
    return;
  }
  const std::int64_t now = transport::steady_now_ns();
  // A response that began since the streak started (another request, still streaming) means
  // the target came back: the streak starts again.
  if (!unreachable_since_ ||
      last_answer_ns_.load(std::memory_order_relaxed) >= *unreachable_since_) {
    unreachable_since_ = now;
    unreachable_failures_ = 0;
  }
  ++unreachable_failures_;
  if (config_.unreachable_after_s <= 0) return;
  const auto window = static_cast<std::int64_t>(config_.unreachable_after_s * 1e9);
  if (now - *unreachable_since_ < window) return;
  Unreachable u;
  u.failures = unreachable_failures_;
  u.for_s = static_cast<double>(now - *unreachable_since_) * 1e-9;
  u.last_message = t.error_message;
  u.sent = measured_sent_;
  result_.unreachable = std::move(u);
  stop_sending();
  // Connects still in flight were never sent (engine_session/run_cell.cpp says so). Cancelled from
  // the loop, not from inside this request's terminal callback.
  loop_.post([this] {
    target_.cancel_all();
    maybe_end();
  });
}

void Run::begin() {
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
    for (std::uint64_t i = 0; i < slots; ++i) {
      if (sessions_.empty()) {
        submit_next("warmup", std::nullopt);
      } else if (!start_session(true, std::nullopt)) {
        break;
      }
    }
    if (in_flight_ == 0 && think_waits_ == 0) start_measured();
  } else {
    start_measured();
  }
}

void Run::start_measured() {
  warmup_phase_ = false;
  progress_.warmup = false;
  measured_start_abs_ = transport::steady_now_ns();
  result_.measured_start_ns = rel(measured_start_abs_);
  measuring_ = true;
  if (config_.open_loop) {
    arm_arrival_timer();
  } else {
    for (std::uint32_t i = 0; i < config_.concurrency && can_send_closed(); ++i) {
      if (sessions_.empty()) {
        submit_next("measured", std::nullopt);
      } else if (!start_session(false, std::nullopt)) {
        break;
      }
    }
  }
  maybe_end();
}

bool Run::refused_before_serving(const metrics::Trace& t) {
  // kConnect: refused or reset before a response started (after a stale keep-alive
  // connection, the retry's connect was refused): the engine served nothing.
  return t.status == metrics::RequestStatus::kError &&
         t.error_category == transport::to_string(transport::ErrorCategory::kConnect);
}

bool Run::engine_has_exited() {
  if (hooks_.engine_exited == nullptr || !hooks_.engine_exited->load()) return false;
  if (!stopping_) {
    stop_sending();
    result_.engine_exited = true;
    exit_grace_timer_ = loop_.call_at(transport::steady_now_ns() + kEngineExitGraceNs, [this] {
      exit_grace_timer_ = 0;
      target_.cancel_all();
    });
  }
  return true;
}

void Run::stop_sending() {
  stopping_ = true;
  if (arrival_timer_ != 0) {
    loop_.cancel_timer(arrival_timer_);
    arrival_timer_ = 0;
  }
  cut_waiting_sessions();
}

bool Run::budget_left(bool warmup) {
  if (warmup) return !stopping_ && warmup_phase_ && warmup_sent_ < config_.warmup;
  return can_send_closed();
}

bool Run::can_send_closed() {
  if (stopping_ || engine_has_exited()) return false;
  if (config_.requests && measured_sent_ >= *config_.requests) return false;
  if (config_.duration_s) {
    const auto limit = measured_start_abs_ + static_cast<std::int64_t>(*config_.duration_s * 1e9);
    if (transport::steady_now_ns() >= limit) return false;
  }
  return true;
}

void Run::arm_arrival_timer() {
  if (stopping_ || next_arrival_ >= schedule_.size()) return;
  const std::int64_t at = measured_start_abs_ + schedule_[next_arrival_];
  arrival_timer_ = loop_.call_at(at, [this] {
    arrival_timer_ = 0;
    if (answer_stop()) return;
    // Catch up on every arrival that is due: a late timer must not thin the load. At most
    // kMaxArrivalsPerWake now; the timer, re-armed at a time already past, sends the rest after
    // the loop's other ready work (responses, the stop poll).
    const std::int64_t now = transport::steady_now_ns();
    for (std::size_t fired = 0;
         fired < kMaxArrivalsPerWake && !stopping_ && !engine_has_exited() &&
         next_arrival_ < schedule_.size() && measured_start_abs_ + schedule_[next_arrival_] <= now;
         ++fired) {
      const std::int64_t scheduled = measured_start_abs_ + schedule_[next_arrival_];
      arrive(next_arrival_++, scheduled);
    }
    arm_arrival_timer();
    maybe_end();
  });
}

bool Run::answer_stop() {
  if (hooks_.stop_requested == nullptr || !hooks_.stop_requested->load() || stopping_) {
    return false;
  }
  stop_sending();
  result_.interrupted = true;
  target_.cancel_all();  // every in-flight request ends as kCancelled
  maybe_end();
  return true;
}

void Run::arrive(std::size_t arrival, std::int64_t scheduled_abs) {
  std::optional<std::size_t> pos;
  if (!schedule_pos_.empty()) pos = schedule_pos_[arrival];
  if (sessions_.empty()) return submit_next("measured", scheduled_abs, pos);
  // A session arrives; once the turns asked for are sent, no later one can start.
  if (!start_session(false, scheduled_abs, pos)) next_arrival_ = schedule_.size();
}

metrics::Trace& Run::new_trace(const char* phase, std::optional<std::int64_t> scheduled_abs,
                               std::size_t stream_pos) {
  const std::uint64_t index = traces_.size();
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
  return t;
}

void Run::submit_next(const char* phase, std::optional<std::int64_t> scheduled_abs,
                      std::optional<std::size_t> stream_pos) {
  // Sharded: this process's j-th submission is the whole run's submission k + j n.
  const std::size_t pos = stream_pos.value_or(
      config_.shard ? (config_.shard->k + traces_.size() * config_.shard->n) % requests_.size()
                    : traces_.size() % requests_.size());
  metrics::Trace& t = new_trace(phase, scheduled_abs, pos);
  RequestObserver& obs = observers_.emplace_back(*this, t.index, t);
  target_.submit(*prepared_[pos], t.index, obs);
}

bool Run::more_to_send() {
  if (stopping_) return false;
  if (warmup_phase_) return true;
  if (config_.open_loop) return next_arrival_ < schedule_.size();
  // A closed loop of sessions sends only from a running session (in flight or thinking).
  return sessions_.empty() && can_send_closed();
}

void Run::maybe_end() {
  if (ended_ || in_flight_ != 0 || parked_ != 0 || think_waits_ != 0) return;
  if (more_to_send()) return;
  ended_ = true;
  if (arrival_timer_ != 0) loop_.cancel_timer(arrival_timer_);
  for (auto id : {lag_timer_, progress_timer_, stop_timer_, exit_grace_timer_}) {
    if (id != 0) loop_.cancel_timer(id);
  }
  if (hooks_.on_progress) hooks_.on_progress(progress_);
  loop_.stop();
}

void Run::start_periodic() {
  const std::int64_t now = transport::steady_now_ns();
  schedule_lag(now + kLagPeriodNs);
  schedule_progress(now + kProgressPeriodNs);
  schedule_stop_poll(now + kStopPollNs);
}

// Event-loop lag: how late a timer fires. A busy loop delays every timestamp it takes.
void Run::schedule_lag(std::int64_t due) {
  lag_timer_ = loop_.call_at(due, [this, due] {
    const std::int64_t now = transport::steady_now_ns();
    if (measuring_) result_.loop_lag_s.push_back(static_cast<double>(now - due) * 1e-9);
    schedule_lag(std::max(due + kLagPeriodNs, now + 1 * kMs));
  });
}

void Run::schedule_progress(std::int64_t due) {
  progress_timer_ = loop_.call_at(due, [this, due] {
    progress_.in_flight = in_flight_;
    if (hooks_.on_progress) hooks_.on_progress(progress_);
    schedule_progress(std::max(due + kProgressPeriodNs, transport::steady_now_ns()));
  });
}

void Run::schedule_stop_poll(std::int64_t due) {
  stop_timer_ = loop_.call_at(due, [this, due] {
    if (answer_stop() && ended_) return;
    if (!stopping_ && engine_has_exited()) {
      maybe_end();
      if (ended_) return;
    }
    schedule_stop_poll(std::max(due + kStopPollNs, transport::steady_now_ns()));
  });
}

void RequestObserver::on_sent(std::int64_t t_ns) { trace().sent_ns = run_.rel(t_ns); }

void RequestObserver::on_first_byte(std::int64_t t_ns, int http_status) {
  run_.answered(t_ns);
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
  if (run_.collects_text()) t.output_text.append(content);
}

void RequestObserver::on_usage(const transport::Usage& usage) {
  metrics::Trace& t = trace();
  if (usage.prompt_tokens) t.input_tokens = usage.prompt_tokens;
  if (usage.completion_tokens) {
    t.output_tokens = usage.completion_tokens;
    t.token_count_source = metrics::TokenCountSource::kUsage;
  }
  t.cached_input_tokens = usage.cached_tokens;
  t.cached_source =
      usage.cached_tokens ? metrics::CachedSource::kUsage : metrics::CachedSource::kNone;
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

LoadResult run_load(transport::EventLoop& loop, transport::Target& target,
                    const std::vector<workload::Request>& requests, const LoadConfig& config,
                    const RunHooks& hooks) {
  Run run(loop, target, requests, config, hooks);
  return run.execute();
}

}  // namespace dyno::load
