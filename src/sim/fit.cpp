#include "sim/fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "sim/fit_regression.h"

namespace dyno::sim {
namespace {

// prefill s/token, step_base_s, decode_seq_s, decode_ctx_token_s, prefill_ctx_token_s,
// shared_kv_token_s, finish_s
constexpr std::size_t kParams = 7;
using Point = std::array<double, kParams>;

// Floors of the log-space search: below these a parameter no longer matters to any figure a
// record can resolve (a tenth of a microsecond per step, a tenth of a picosecond per context
// token, a tenth of a microsecond per finished request).
constexpr Point kFloor = {1e-9, 1e-7, 1e-8, 1e-13, 1e-13, 1e-13, 1e-7};

bool usable(const metrics::Trace& t) {
  return t.measured() && t.ok() && t.sent_ns && t.first_token_ns && t.done_ns && t.input_tokens &&
         t.output_tokens && *t.output_tokens >= 1 && *t.input_tokens >= 1;
}

Point to_point(const Profile& p) {
  return {std::log(std::max(kFloor[0], 1.0 / p.prefill_tokens_per_s)),
          std::log(std::max(kFloor[1], p.step_base_s)),
          std::log(std::max(kFloor[2], p.decode_seq_s)),
          std::log(std::max(kFloor[3], p.decode_ctx_token_s)),
          std::log(std::max(kFloor[4], p.prefill_ctx_token_s)),
          std::log(std::max(kFloor[5], p.shared_kv_token_s)),
          std::log(std::max(kFloor[6], p.finish_s))};
}

// A time at its floor is written as 0: the search cannot tell it from nothing.
Profile with_point(Profile p, const Point& x) {
  auto time = [&](std::size_t i) {
    const double v = std::exp(x[i]);
    return v <= kFloor[i] * (1.0 + 1e-9) ? 0.0 : v;
  };
  p.prefill_tokens_per_s = 1.0 / std::exp(x[0]);
  p.step_base_s = time(1);
  p.decode_seq_s = time(2);
  p.decode_ctx_token_s = time(3);
  p.prefill_ctx_token_s = time(4);
  p.shared_kv_token_s = time(5);
  p.finish_s = time(6);
  return p;
}

// |log(predicted / measured)|: an L1 objective, so that one cell the replay cannot follow
// (a closed loop that fell into another phase pattern) does not pull every parameter.
double log_error(std::optional<double> measured, std::optional<double> predicted) {
  if (!measured || !predicted || !(*measured > 0.0)) return 0.0;
  if (!(*predicted > 0.0)) return 100.0;  // never better than any defined prediction
  return std::abs(std::log(*predicted / *measured));
}

// The refinement's objective over prepared cells.
class Objective {
 public:
  explicit Objective(const std::vector<ObservedCell>& cells, Profile base)
      : base_(std::move(base)) {
    for (const ObservedCell& c : cells) {
      specs_.push_back(cell_spec(c));
      measured_.push_back(cell_figures(c.traces));
    }
  }
  double operator()(const Point& x) {
    ++evaluations_;
    const Profile p = with_point(base_, x);
    double sum = 0.0;
    for (std::size_t i = 0; i < specs_.size(); ++i) {
      const std::vector<metrics::Trace> traces = replay_cell(p, specs_[i]);
      const CellFigures f = cell_figures(traces);
      sum += log_error(measured_[i].ttft_p50_s, f.ttft_p50_s) +
             log_error(measured_[i].tpot_p50_s, f.tpot_p50_s) +
             log_error(measured_[i].output_tokens_per_s, f.output_tokens_per_s);
    }
    return sum;
  }
  int evaluations() const { return evaluations_; }

 private:
  Profile base_;
  std::vector<CellSpec> specs_;
  std::vector<CellFigures> measured_;
  int evaluations_ = 0;
};

// Deterministic Nelder–Mead (standard coefficients) over the axes in `free` (the others stay
// at x0's values), from x0 with initial steps `step` per axis.
std::pair<Point, double> nelder_mead(Objective& f, const Point& x0,
                                     const std::vector<std::size_t>& free, double step,
                                     int budget) {
  const std::size_t n = free.size();
  auto clamp = [](Point x) {
    for (std::size_t i = 0; i < kParams; ++i) x[i] = std::max(x[i], std::log(kFloor[i]));
    return x;
  };
  std::vector<std::pair<Point, double>> s;
  s.emplace_back(x0, f(x0));
  for (const std::size_t axis : free) {
    Point x = x0;
    x[axis] += step;
    s.emplace_back(x, f(x));
  }
  auto by_value = [](const auto& a, const auto& b) { return a.second < b.second; };
  const int stop = f.evaluations() + budget;
  while (n > 0 && f.evaluations() < stop) {
    std::stable_sort(s.begin(), s.end(), by_value);
    double size = 0.0;
    for (std::size_t i = 1; i <= n; ++i) {
      for (const std::size_t k : free)
        size = std::max(size, std::abs(s[i].first[k] - s[0].first[k]));
    }
    if (size < 1e-4 || s[n].second - s[0].second < 1e-12) break;
    Point c = x0;
    for (const std::size_t k : free) {
      c[k] = 0.0;
      for (std::size_t i = 0; i < n; ++i) c[k] += s[i].first[k] / static_cast<double>(n);
    }
    auto along = [&](double t) {
      Point x = c;
      for (const std::size_t k : free) x[k] = c[k] + t * (s[n].first[k] - c[k]);
      return clamp(x);
    };
    const Point xr = along(-1.0);
    const double fr = f(xr);
    if (fr < s[0].second) {
      const Point xe = along(-2.0);
      const double fe = f(xe);
      s[n] = fe < fr ? std::pair{xe, fe} : std::pair{xr, fr};
    } else if (fr < s[n - 1].second) {
      s[n] = {xr, fr};
    } else {
      const Point xc = fr < s[n].second ? along(-0.5) : along(0.5);
      const double fc = f(xc);
      if (fc < std::min(fr, s[n].second)) {
        s[n] = {xc, fc};
      } else {  // shrink towards the best
        for (std::size_t i = 1; i <= n; ++i) {
          for (const std::size_t k : free)
            s[i].first[k] = s[0].first[k] + 0.5 * (s[i].first[k] - s[0].first[k]);
          s[i].second = f(s[i].first);
        }
      }
    }
  }
  std::stable_sort(s.begin(), s.end(), by_value);
  return s[0];
}

// The regression's estimates on top of the base; what it cannot determine stays the base's.
Profile initial_profile(const Profile& base, const StepRegression& r,
                        std::vector<std::string>& notes) {
  Profile p = base;
  if (r.step_base_s) p.step_base_s = *r.step_base_s;
  if (r.decode_seq_s) {
    p.decode_seq_s = *r.decode_seq_s;
  } else {
    p.decode_seq_s = 0.0;
    notes.push_back(
        "decode_seq_s: every step decoded the same number of requests, so its cost is not "
        "separable from step_base_s (measure at least two concurrencies)");
  }
  if (r.decode_ctx_token_s) p.decode_ctx_token_s = *r.decode_ctx_token_s;
  p.prefill_ctx_token_s = r.prefill_ctx_token_s.value_or(0.0);
  p.shared_kv_token_s = r.shared_kv_token_s.value_or(0.0);
  p.finish_s = r.finish_s.value_or(0.0);
  if (r.prefill_s_per_token) {
    p.prefill_tokens_per_s = 1.0 / *r.prefill_s_per_token;
  }
  if (r.prefill_levels < 2) {
    notes.push_back(
        "prefill_tokens_per_s: every first-token step prefilled the same number of tokens, so "
        "the per-token cost rests on the step time alone and prefill_ctx_token_s (quadratic "
        "part) is not fitted (measure at least two prompt lengths)");
  }
  return p;
}

void set_scheduling(Profile& p, const std::vector<ObservedCell>& cells, const StepRegression& r,
                    FitResult& out) {
  out.max_decoding_seen = r.max_decoding;
  std::uint32_t most_concurrency = 0;
  for (const ObservedCell& c : cells)
    most_concurrency = std::max(most_concurrency, c.concurrency.value_or(0));
  out.max_running_identified =
      r.max_decoding >= 1 && std::max(most_concurrency, r.max_in_flight) > r.max_decoding;
  if (out.max_running_identified) {
    p.max_running_seqs = r.max_decoding;
  } else {
    p.max_running_seqs = std::max(p.max_running_seqs, r.max_decoding);
    out.notes.push_back(
        "max_running_seqs: no cell had more requests in flight than were seen "
        "decoding at once (" +
        std::to_string(r.max_decoding) + "), so the limit is not identified; kept " +
        std::to_string(p.max_running_seqs));
  }
  std::int64_t longest = 0;
  for (const ObservedCell& c : cells) {
    for (const metrics::Trace& t : c.traces) {
      if (usable(t)) longest = std::max(longest, *t.input_tokens + *t.output_tokens);
    }
  }
  p.max_model_len = std::max(p.max_model_len, longest);
  p.kv_capacity_tokens = std::max(p.kv_capacity_tokens, longest);
}

// The client's delay before each send of a closed loop (CellSpec::send_delays_s): for the first
// C requests, from the first send; for the others, from the latest last token before the send
// (the end that freed the slot; 0 when no earlier request had ended).
std::vector<double> send_delays(const std::vector<const metrics::Trace*>& ts, std::uint32_t c) {
  std::vector<double> delays;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    const std::int64_t sent = *ts[i]->sent_ns;
    std::optional<std::int64_t> from;
    if (i < c) {
      from = *ts.front()->sent_ns;
    } else {
      for (std::size_t j = 0; j < i; ++j) {
        const std::int64_t last = ts[j]->last_token_ns.value_or(*ts[j]->done_ns);
        if (last <= sent && (!from || last > *from)) from = last;
      }
    }
    delays.push_back(from ? static_cast<double>(std::max<std::int64_t>(0, sent - *from)) * 1e-9
                          : 0.0);
  }
  return delays;
}

}  // namespace

CellSpec cell_spec(const ObservedCell& cell) {
  std::vector<const metrics::Trace*> ts;
  for (const metrics::Trace& t : cell.traces) {
    if (usable(t)) ts.push_back(&t);
  }
  if (ts.empty()) {
    throw std::invalid_argument(cell.name +
                                ": no completed measured request with its times and "
                                "token counts");
  }
  CellSpec spec;
  spec.concurrency = cell.concurrency;
  if (cell.concurrency) {
    std::sort(ts.begin(), ts.end(), [](auto* a, auto* b) { return a->index < b->index; });
  } else {
    std::stable_sort(ts.begin(), ts.end(),
                     [](auto* a, auto* b) { return *a->sent_ns < *b->sent_ns; });
  }
  for (const metrics::Trace* t : ts) {
    CellRequest r;
    r.input_tokens = *t->input_tokens;
    r.cached_tokens =
        std::clamp<std::int64_t>(t->cached_input_tokens.value_or(0), 0, r.input_tokens - 1);
    r.output_tokens = *t->output_tokens;
    spec.requests.push_back(r);
    if (!cell.concurrency) {
      spec.arrivals_s.push_back(static_cast<double>(*t->sent_ns - *ts.front()->sent_ns) * 1e-9);
    }
  }
  if (cell.concurrency) spec.send_delays_s = send_delays(ts, *cell.concurrency);
  return spec;
}

namespace {

// The fit under one attention structure, with at most `budget` replays in the refinement.
FitResult fit_with(const std::vector<ObservedCell>& cells,
                   const std::vector<std::vector<ObservedTimes>>& times, const FitOptions& options,
                   Attention attention, int budget) {
  FitResult out;
  out.attention = attention;
  const StepRegression r = regress_steps(times, options.base.step_token_budget, attention);
  out.regression_rows = r.decode_rows + r.prefill_rows;
  Profile start = initial_profile(options.base, r, out.notes);
  set_scheduling(start, cells, r, out);
  out.initial = start;

  Objective objective(cells, start);
  Point x = to_point(start);
  double fx = objective(x);
  // Two passes: the second restarts from the first's optimum with a smaller simplex, which
  // guards against Nelder–Mead's premature collapse.
  std::vector<std::size_t> free = {0, 1, 3};
  if (r.decode_seq_s) free.push_back(2);         // else it stays 0: not separable from step_base_s
  if (r.prefill_ctx_token_s) free.push_back(4);  // else 0: one prompt size, no curvature
  if (r.shared_kv_token_s) free.push_back(5);    // else 0: per-sequence attention, or no sign
  if (r.finish_s) free.push_back(6);             // else 0: no step after a finish was slower
  for (const double step : {0.7, 0.2}) {
    const int left = budget - objective.evaluations();
    if (left <= static_cast<int>(free.size()) + 1) break;
    auto [bx, bf] = nelder_mead(objective, x, free, step, left);
    if (bf <= fx) {
      x = bx;
      fx = bf;
    }
  }
  out.profile = with_point(start, x);
  out.evaluations = objective.evaluations();
  out.objective = fx;
  for (const ObservedCell& c : cells) out.cells.push_back(compare_cell(out.profile, c));
  return out;
}

}  // namespace

FitResult fit_profile(const std::vector<ObservedCell>& cells, const FitOptions& options) {
  if (cells.empty()) throw std::invalid_argument("no cell to fit");
  std::vector<std::vector<ObservedTimes>> times;
  bool two_tokens = false;
  for (const ObservedCell& c : cells) {
    (void)cell_spec(c);  // throws for an unusable cell
    times.push_back(observed_times(c.traces));
    for (const ObservedTimes& r : times.back()) two_tokens = two_tokens || r.events_s.size() >= 2;
  }
  if (!two_tokens) {
    throw std::invalid_argument("no request produced two tokens: no step can be timed");
  }
  if (options.attention) {
    return fit_with(cells, times, options, *options.attention, options.max_evaluations);
  }
  // Both structures have five step-time parameters, so their in-sample objectives compare
  // fairly; per sequence wins ties (it is the default).
  FitResult per_sequence =
      fit_with(cells, times, options, Attention::kPerSequence, options.max_evaluations);
  FitResult shared =
      fit_with(cells, times, options, Attention::kSharedCache, options.max_evaluations);
  const std::vector<std::pair<Attention, double>> compared = {
      {Attention::kPerSequence, per_sequence.objective},
      {Attention::kSharedCache, shared.objective}};
  FitResult out = shared.objective < per_sequence.objective * (1.0 - 1e-9) - 1e-12
                      ? std::move(shared)
                      : std::move(per_sequence);
  out.attention_objectives = compared;
  return out;
}

CellComparison compare_cell(const Profile& profile, const ObservedCell& cell) {
  CellComparison c;
  c.name = cell.name;
  c.measured = cell_figures(cell.traces);
  const std::vector<metrics::Trace> predicted = replay_cell(profile, cell_spec(cell));
  c.predicted = cell_figures(predicted);
  return c;
}

std::optional<double> figure_of(const CellFigures& f, Figure figure) {
  switch (figure) {
    case Figure::kTtftP50:
      return f.ttft_p50_s;
    case Figure::kTpotP50:
      return f.tpot_p50_s;
    case Figure::kOutputTokensPerS:
      return f.output_tokens_per_s;
    case Figure::kE2eP50:
      return f.e2e_p50_s;
    case Figure::kRequestsPerS:
      return f.requests_per_s;
  }
  return std::nullopt;
}

namespace {

std::optional<double> median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::optional<double> median_abs_error(const std::vector<CellComparison>& cells, Figure figure) {
  std::vector<double> errors;
  for (const CellComparison& c : cells) {
    if (const auto e =
            relative_error(figure_of(c.measured, figure), figure_of(c.predicted, figure))) {
      errors.push_back(std::abs(*e));
    }
  }
  return median(std::move(errors));
}

std::optional<double> median_repeat_difference(const std::vector<Measurement>& measurements,
                                               Figure figure) {
  std::vector<double> differences;
  for (std::size_t i = 0; i < measurements.size(); ++i) {
    for (std::size_t j = i + 1; j < measurements.size(); ++j) {
      if (measurements[i].key != measurements[j].key) continue;
      if (const auto d = relative_error(figure_of(measurements[i].figures, figure),
                                        figure_of(measurements[j].figures, figure))) {
        differences.push_back(std::abs(*d));
      }
    }
  }
  return median(std::move(differences));
}

}  // namespace dyno::sim
