#include "metrics/sessions.h"

#include <algorithm>
#include <map>
#include <utility>

#include "metrics/summary.h"

namespace dyno::metrics {

namespace {

bool counted(const Trace& t) { return t.measured() && t.ok(); }
/// A cached count the prompt count bounds (an engine that says more is not believed).
bool has_cache_count(const Trace& t) {
  return t.cached_input_tokens && t.input_tokens && *t.cached_input_tokens >= 0 &&
         *t.cached_input_tokens <= *t.input_tokens;
}

void add(CacheTotals& c, const Trace& t) {
  ++c.requests;
  c.prompt_tokens += *t.input_tokens;
  c.cached_tokens += *t.cached_input_tokens;
}

void finish(CacheTotals& c) {
  if (c.prompt_tokens > 0) {
    c.hit_rate = static_cast<double>(c.cached_tokens) / static_cast<double>(c.prompt_tokens);
  }
}

double ms(std::int64_t ns) { return static_cast<double>(ns) * 1e-6; }

/// Least squares y = a + b·x; nullopt without spread in x or with fewer than 3 points.
struct Fit {
  double intercept, slope, r2;
};
std::optional<Fit> least_squares(const std::vector<std::pair<double, double>>& xy) {
  if (xy.size() < 3) return std::nullopt;
  // Prompts of one uncached length give no line: the rounding of the mean would leave a
  // spread of ~1e-33 and a slope that is noise.
  const auto [lo, hi] = std::minmax_element(
      xy.begin(), xy.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  if (lo->first == hi->first) return std::nullopt;
  const double n = static_cast<double>(xy.size());
  double sx = 0, sy = 0;
  for (const auto& [x, y] : xy) {
    sx += x;
    sy += y;
  }
  const double mx = sx / n, my = sy / n;
  double sxx = 0, sxy = 0, syy = 0;
  for (const auto& [x, y] : xy) {
    sxx += (x - mx) * (x - mx);
    sxy += (x - mx) * (y - my);
    syy += (y - my) * (y - my);
  }
  if (!(sxx > 0)) return std::nullopt;
  const double slope = sxy / sxx;
  const double intercept = my - slope * mx;
  const double r2 = syy > 0 ? (sxy * sxy) / (sxx * syy) : 1.0;
  return Fit{intercept, slope, r2};
}

}  // namespace

std::optional<PrefixCacheFigures> prefix_cache_figures(std::span<const Trace> traces) {
  PrefixCacheFigures f;
  bool usage = false, timings = false, prompt_n = false;
  // (uncached tokens, TTFT ms) of each request with a count and a TTFT.
  std::vector<std::pair<std::int64_t, double>> points;
  for (const Trace& t : traces) {
    if (!counted(t) || !has_cache_count(t)) continue;
    add(f.totals, t);
    usage =
        usage || t.cached_source == CachedSource::kUsage || t.cached_source == CachedSource::kNone;
    timings = timings || t.cached_source == CachedSource::kTimings;
    prompt_n = prompt_n || t.cached_source == CachedSource::kTimingsPromptN;
    if (const auto ttft = request_figures(t).ttft_s) {
      points.emplace_back(std::max<std::int64_t>(0, *t.input_tokens - *t.cached_input_tokens),
                          *ttft * 1e3);
    }
  }
  if (f.totals.requests == 0) return std::nullopt;
  finish(f.totals);
  // Which counts were read, joined with '+': usage, timings (cache_n), timings_prompt_n.
  f.source.clear();
  for (const auto& [on, name] : {std::pair{usage, "usage"}, std::pair{timings, "timings"},
                                 std::pair{prompt_n, "timings_prompt_n"}}) {
    if (!on) continue;
    if (!f.source.empty()) f.source += '+';
    f.source += name;
  }
  std::vector<std::pair<double, double>> xy;
  for (const auto& [x, y] : points) xy.emplace_back(static_cast<double>(x) / 1000.0, y);
  if (const auto fit = least_squares(xy)) {
    f.ttft_intercept_ms = fit->intercept;
    f.ttft_ms_per_1k_uncached = fit->slope;
    f.ttft_fit_r2 = fit->r2;
  }
  std::stable_sort(points.begin(), points.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  const std::size_t buckets = std::min<std::size_t>(4, points.size());
  for (std::size_t b = 0; b < buckets; ++b) {
    const std::size_t from = points.size() * b / buckets;
    const std::size_t to = points.size() * (b + 1) / buckets;
    UncachedBucket u;
    u.uncached_min = points[from].first;
    u.uncached_max = points[to - 1].first;
    u.requests = to - from;
    std::vector<double> ttft;
    for (std::size_t i = from; i < to; ++i) ttft.push_back(points[i].second);
    u.ttft_p50_ms = summarize(std::move(ttft)).p50;
    f.buckets.push_back(u);
  }
  return f;
}

std::optional<SessionFigures> session_figures(std::span<const Trace> traces) {
  struct One {
    std::int64_t turns_in_stream = 0;
    std::uint64_t sent = 0, ok = 0;
    bool failed = false, cancelled = false;
    std::optional<std::int64_t> first_sent, last_done;
    std::int64_t input = 0, output = 0;
  };
  std::map<std::uint64_t, One> sessions;
  struct TurnAcc {
    TurnFigures f;
    std::vector<double> ttft, input;
    CacheTotals cache;
  };
  std::map<std::int64_t, TurnAcc> turns;
  for (const Trace& t : traces) {
    if (!t.session_run || !t.measured()) continue;
    One& s = sessions[*t.session_run];
    s.turns_in_stream = t.session_turns.value_or(0);
    if (t.status == RequestStatus::kCancelled) {
      s.cancelled = true;
      continue;
    }
    ++s.sent;
    if (t.sent_ns) s.first_sent = std::min(s.first_sent.value_or(*t.sent_ns), *t.sent_ns);
    if (t.done_ns) s.last_done = std::max(s.last_done.value_or(*t.done_ns), *t.done_ns);
    TurnAcc& acc = turns[t.turn.value_or(0)];
    acc.f.turn = t.turn.value_or(0);
    ++acc.f.requests;
    if (!t.ok()) {
      s.failed = true;
      ++acc.f.failed;
      continue;
    }
    ++s.ok;
    s.input += t.input_tokens.value_or(0);
    s.output += t.output_tokens.value_or(0);
    if (const auto ttft = request_figures(t).ttft_s) acc.ttft.push_back(*ttft * 1e3);
    if (t.input_tokens) acc.input.push_back(static_cast<double>(*t.input_tokens));
    if (has_cache_count(t)) add(acc.cache, t);
  }
  if (sessions.empty()) return std::nullopt;
  SessionFigures f;
  std::vector<double> turn_counts, durations, inputs, outputs;
  for (const auto& [run, s] : sessions) {
    ++f.sessions;
    if (s.failed) {
      ++f.failed;
    } else if (!s.cancelled && static_cast<std::int64_t>(s.ok) == s.turns_in_stream) {
      ++f.completed;
    } else {
      ++f.cut;
    }
    if (s.sent == 0) continue;
    turn_counts.push_back(static_cast<double>(s.sent));
    if (s.first_sent && s.last_done && *s.last_done >= *s.first_sent) {
      durations.push_back(ms(*s.last_done - *s.first_sent) * 1e-3);
    }
    inputs.push_back(static_cast<double>(s.input));
    outputs.push_back(static_cast<double>(s.output));
  }
  f.turns = summarize(std::move(turn_counts));
  f.duration_s = summarize(std::move(durations));
  f.input_tokens = summarize(std::move(inputs));
  f.output_tokens = summarize(std::move(outputs));
  for (auto& [index, acc] : turns) {
    acc.f.ttft_ms = summarize(std::move(acc.ttft));
    acc.f.input_tokens = summarize(std::move(acc.input));
    if (acc.cache.requests > 0) {
      finish(acc.cache);
      acc.f.cache = acc.cache;
    }
    f.per_turn.push_back(std::move(acc.f));
  }
  return f;
}

}  // namespace dyno::metrics
