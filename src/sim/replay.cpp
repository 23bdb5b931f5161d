#include "sim/replay.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <stdexcept>
#include <utility>

#include "metrics/summary.h"
#include "sim/model.h"

namespace dyno::sim {
namespace {

std::int64_t to_ns(double s) { return static_cast<std::int64_t>(std::llround(s * 1e9)); }

void check(const CellSpec& cell) {
  if (cell.requests.empty()) throw std::invalid_argument("replay_cell: a cell without requests");
  if (cell.concurrency) {
    if (*cell.concurrency == 0) throw std::invalid_argument("replay_cell: concurrency 0");
    for (const double d : cell.send_delays_s) {
      if (!std::isfinite(d) || d < 0.0) {
        throw std::invalid_argument("replay_cell: send delays must be finite and >= 0");
      }
    }
    return;
  }
  if (cell.arrivals_s.size() != cell.requests.size()) {
    throw std::invalid_argument("replay_cell: an open loop needs one arrival per request");
  }
  double last = 0.0;
  for (const double a : cell.arrivals_s) {
    if (!std::isfinite(a) || a < last) {
      throw std::invalid_argument("replay_cell: arrivals must be finite, >= 0, non-decreasing");
    }
    last = a;
  }
}

// The model's view of one request: the cached part is never prefilled.
ModelRequest model_request(const CellRequest& r, std::size_t index) {
  ModelRequest m;
  m.id = index;
  m.prompt_tokens =
      std::max<std::int64_t>(1, r.input_tokens - std::max<std::int64_t>(0, r.cached_tokens));
  m.max_tokens = std::max<std::int64_t>(1, r.output_tokens);
  m.min_tokens = m.max_tokens;
  m.ignore_eos = true;
  m.seed = index;
  return m;
}

// Drives the model: `traces` receives the requests' times as their events come.
class Driver {
 public:
  Driver(const Profile& profile, const CellSpec& cell) : cell_(cell), model_(neutral(profile)) {
    traces_.resize(cell.requests.size());
    for (std::size_t i = 0; i < traces_.size(); ++i) {
      metrics::Trace& t = traces_[i];
      t.index = i;
      t.request_id = std::to_string(i);
      t.input_tokens = cell.requests[i].input_tokens;
      t.cached_input_tokens = cell.requests[i].cached_tokens;
      t.output_tokens = cell.requests[i].output_tokens;
      t.token_count_source = metrics::TokenCountSource::kUsage;
    }
  }

  std::vector<metrics::Trace> run() {
    if (cell_.concurrency) {
      while (next_ < traces_.size() && next_ < *cell_.concurrency) schedule(0.0);
    } else {
      while (next_ < traces_.size()) schedule(0.0);
    }
    double now = 0.0;
    for (;;) {
      if (!model_.in_step()) {
        // The engine plans its next step once its finish work (profile.finish_s) is done:
        // requests sent meanwhile join it.
        now = std::max(now, model_.ready_s());
        send_until(now);
        if (!model_.in_step() && !model_.start_step(now)) {
          if (pending_.empty()) break;
          now = pending_.top().first;
          continue;
        }
      }
      const double end = model_.next_step_end().value_or(now);
      send_until(end);  // requests sent while the step runs join the next one
      const std::vector<Event> events = model_.complete_step();
      now = end;
      std::size_t freed = 0;
      for (const Event& e : events) freed += on_event(e) ? 1 : 0;
      // Like a real engine, the next step is planned as soon as this one ends (and its finish
      // work is done); a closed-loop request sent now (its slot just freed) joins the step
      // after it, unless the engine is idle.
      if (model_.ready_s() <= now) model_.start_step(now);
      for (std::size_t k = 0; k < freed && cell_.concurrency && next_ < traces_.size(); ++k) {
        schedule(now);
      }
    }
    return std::move(traces_);
  }

 private:
  static Profile neutral(Profile p) {
    p.prefix_cache_blocks = 0;
    p.eos_probability = 0.0;
    p.reasoning_fraction = 0.0;
    p.zero_delay = false;
    return p;
  }

  // The next request in order is sent at its arrival (open loop), or `delay` after `from`
  // (closed loop: its slot freed at `from`).
  void schedule(double from) {
    const std::size_t i = next_++;
    double at = from;
    if (!cell_.concurrency) {
      at = cell_.arrivals_s[i];
    } else if (i < cell_.send_delays_s.size()) {
      at += cell_.send_delays_s[i];
    }
    traces_[i].scheduled_ns = to_ns(at);
    pending_.emplace(at, i);
  }

  // Sends every pending request due at or before t, in time (then request) order.
  void send_until(double t) {
    while (!pending_.empty() && pending_.top().first <= t) {
      const auto [at, i] = pending_.top();
      pending_.pop();
      traces_[i].sent_ns = to_ns(at);
      model_.submit(model_request(cell_.requests[i], i), at);
      // Requests sent at one instant reach the engine one after another: the first one finds
      // an idle engine and starts a step alone, the others join the step after it.
      if (!model_.in_step() && at >= model_.ready_s()) model_.start_step(at);
    }
  }

  // Records the event; true when it ended its request.
  bool on_event(const Event& e) {
    metrics::Trace& t = traces_[e.request_id];
    const std::int64_t at = to_ns(e.time_s);
    if (e.first) {
      t.first_byte_ns = at;
      t.first_token_ns = at;
      t.first_content_ns = at;
    }
    t.event_times_ns.push_back(at);
    t.last_token_ns = at;
    if (e.finish == FinishReason::kNone) return false;
    t.done_ns = at;
    t.finish_reason = "length";
    return true;
  }

  const CellSpec& cell_;
  Model model_;
  std::vector<metrics::Trace> traces_;
  std::size_t next_ = 0;  ///< the next request to schedule
  using Due = std::pair<double, std::size_t>;
  std::priority_queue<Due, std::vector<Due>, std::greater<>> pending_;
};

}  // namespace

std::vector<metrics::Trace> replay_cell(const Profile& profile, const CellSpec& cell) {
  check(cell);
  return Driver(profile, cell).run();
}

CellFigures cell_figures(std::span<const metrics::Trace> traces) {
  const metrics::Summary s = metrics::summarize_run(traces, metrics::SummaryOptions{});
  auto seconds = [](std::optional<double> ms) -> std::optional<double> {
    if (!ms) return std::nullopt;
    return *ms / 1000.0;
  };
  CellFigures f;
  f.ttft_p50_s = seconds(s.ttft_ms.p50);
  f.ttft_p90_s = seconds(s.ttft_ms.p90);
  f.tpot_p50_s = seconds(s.tpot_ms.p50);
  f.tpot_p90_s = seconds(s.tpot_ms.p90);
  f.e2e_p50_s = seconds(s.e2e_ms.p50);
  f.e2e_p90_s = seconds(s.e2e_ms.p90);
  f.output_tokens_per_s = s.output_tokens_per_s;
  f.requests_per_s = s.requests_per_s;
  return f;
}

std::optional<double> relative_error(std::optional<double> measured,
                                     std::optional<double> predicted) {
  if (!measured || !predicted || !(*measured > 0.0) || !std::isfinite(*predicted)) {
    return std::nullopt;
  }
  return *predicted / *measured - 1.0;
}

}  // namespace dyno::sim
