#include "telemetry/energy.h"

#include <algorithm>
#include <cmath>

#include "metrics/registry.h"
#include "metrics/stats.h"

namespace dyno::telemetry {

namespace {

using Points = std::vector<std::pair<std::int64_t, double>>;

double lerp_at(const std::pair<std::int64_t, double>& a, const std::pair<std::int64_t, double>& b,
               std::int64_t t) {
  if (b.first == a.first) return b.second;
  const double f = static_cast<double>(t - a.first) / static_cast<double>(b.first - a.first);
  return a.second + (b.second - a.second) * f;
}

/// The signal clipped to [begin, end]: edge values interpolated, inner points kept.
std::optional<Points> clip(const Points& p, std::int64_t begin, std::int64_t end) {
  if (p.size() < 2 || p.front().first > begin || p.back().first < end || end < begin) {
    return std::nullopt;
  }
  Points out;
  for (std::size_t i = 1; i < p.size(); ++i) {
    const auto& a = p[i - 1];
    const auto& b = p[i];
    if (b.first < begin) continue;
    if (out.empty()) out.emplace_back(begin, a.first <= begin ? lerp_at(a, b, begin) : a.second);
    if (b.first >= end) {
      out.emplace_back(end, lerp_at(a, b, end));
      break;
    }
    if (b.first > begin) out.emplace_back(b.first, b.second);
  }
  return out;
}

/// Linear-interpolation percentile (the definition of docs/metrics.md), q in [0, 100].
std::optional<double> percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return metrics::percentile_sorted(v, q);
}

template <typename Get>
Points points_of(const std::vector<TimedReading>& series, Get get) {
  Points p;
  for (const auto& s : series) {
    if (const auto v = get(s.reading)) p.emplace_back(s.t_ns, static_cast<double>(*v));
  }
  return p;
}

template <typename Get>
std::vector<double> values_in(const std::vector<TimedReading>& series, std::int64_t begin,
                              std::int64_t end, Get get) {
  std::vector<double> v;
  for (const auto& s : series) {
    if (s.t_ns < begin || s.t_ns > end) continue;
    if (const auto x = get(s.reading)) v.push_back(static_cast<double>(*x));
  }
  return v;
}

}  // namespace

std::optional<double> summed_power_peak(const std::vector<std::vector<TimedReading>>& series,
                                        std::int64_t begin, std::int64_t end) {
  if (series.empty()) return std::nullopt;
  // Every (time, device, watts) in the window, in time order; then a sweep holding each
  // device's latest value.
  struct Point {
    std::int64_t t_ns;
    std::size_t device;
    double w;
  };
  std::vector<Point> points;
  for (std::size_t d = 0; d < series.size(); ++d) {
    for (const auto& s : series[d]) {
      if (s.t_ns < begin || s.t_ns > end) continue;
      const auto w =
          s.reading.power_instant_w ? s.reading.power_instant_w : s.reading.power_average_w;
      if (w) points.push_back({s.t_ns, d, *w});
    }
  }
  std::stable_sort(points.begin(), points.end(),
                   [](const Point& a, const Point& b) { return a.t_ns < b.t_ns; });
  std::vector<std::optional<double>> latest(series.size());
  std::size_t seen = 0;
  std::optional<double> peak;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (!latest[points[i].device]) ++seen;
    latest[points[i].device] = points[i].w;
    // Readings of one tick share a time: sum once all of that time's readings are in.
    if (i + 1 < points.size() && points[i + 1].t_ns == points[i].t_ns) continue;
    if (seen < series.size()) continue;
    double sum = 0;
    for (const auto& w : latest) sum += *w;
    peak = std::max(peak.value_or(sum), sum);
  }
  return peak;
}

std::optional<double> integrate_power(const Points& points, std::int64_t begin, std::int64_t end) {
  const auto c = clip(points, begin, end);
  if (!c) return std::nullopt;
  double joules = 0;
  for (std::size_t i = 1; i < c->size(); ++i) {
    const double dt = static_cast<double>((*c)[i].first - (*c)[i - 1].first) * 1e-9;
    joules += dt * ((*c)[i].second + (*c)[i - 1].second) / 2.0;
  }
  return joules;
}

std::optional<double> counter_energy(const Points& points, std::int64_t begin, std::int64_t end,
                                     bool* reset) {
  const auto c = clip(points, begin, end);
  if (!c) return std::nullopt;
  double joules = 0;
  for (std::size_t i = 1; i < c->size(); ++i) {
    const double d = (*c)[i].second - (*c)[i - 1].second;
    if (d >= 0) {
      joules += d;
    } else if (reset != nullptr) {
      *reset = true;  // the counter restarted (driver reload): this segment is lost, not negative
    }
  }
  return joules;
}

WindowFigures window_figures(const std::vector<TimedReading>& series, std::int64_t begin,
                             std::int64_t end) {
  WindowFigures f;
  f.duration_s = static_cast<double>(end - begin) * 1e-9;
  for (const auto& s : series) {
    if (s.t_ns >= begin && s.t_ns <= end) ++f.samples;
  }

  const Points counter = points_of(series, [](const Reading& r) { return r.energy_j; });
  bool reset = false;
  f.energy_counter_j = counter_energy(counter, begin, end, &reset);
  if (reset) f.flags.push_back("counter_reset");
  // Counter update period: the median interval between samples where the counter moved.
  std::vector<double> periods;
  std::optional<std::int64_t> last_change;
  for (std::size_t i = 1; i < counter.size(); ++i) {
    if (counter[i].second != counter[i - 1].second) {
      if (last_change)
        periods.push_back(static_cast<double>(counter[i].first - *last_change) * 1e-9);
      last_change = counter[i].first;
    }
  }
  f.counter_period_s = percentile(periods, 50);

  const Points instant = points_of(series, [](const Reading& r) { return r.power_instant_w; });
  const Points average = points_of(series, [](const Reading& r) { return r.power_average_w; });
  if (auto e = integrate_power(instant, begin, end)) {
    f.energy_integral_j = e;
    f.integral_source = "power_instant";
  } else if (auto ea = integrate_power(average, begin, end)) {
    f.energy_integral_j = ea;
    f.integral_source = "power_average";
  }
  // Precedence: hardware counter → integral of instantaneous power → of averaged power.
  if (f.energy_counter_j) {
    f.energy_j = f.energy_counter_j;
    f.energy_source = "counter";
  } else if (f.energy_integral_j) {
    f.energy_j = f.energy_integral_j;
    f.energy_source = f.integral_source;
  }
  if (f.energy_counter_j && f.energy_integral_j) {
    const double a = *f.energy_counter_j;
    const double b = *f.energy_integral_j;
    const double m = std::max(std::abs(a), std::abs(b));
    f.disagreement = m > 0 ? std::abs(a - b) / m : 0.0;
    if (*f.disagreement > kDisagreementThreshold) f.flags.push_back("energy_sources_disagree");
  }
  if (f.energy_counter_j) {
    const bool short_window =
        f.counter_period_s && f.duration_s < kMinCounterPeriods * *f.counter_period_s;
    const bool stuck = *f.energy_counter_j == 0 && f.energy_integral_j && *f.energy_integral_j > 0;
    if (short_window || stuck) f.flags.push_back("window_too_short");
  }
  f.power_mean_w = metrics::mean_power_w(f.energy_j, f.duration_s);

  std::vector<double> power = values_in(series, begin, end, [](const Reading& r) {
    return r.power_instant_w ? r.power_instant_w : r.power_average_w;
  });
  f.power_p95_w = percentile(power, 95);
  f.power_peak_w = percentile(power, 100);
  const auto temps = values_in(series, begin, end, [](const Reading& r) { return r.temp_gpu_c; });
  f.temp_p95_c = percentile(temps, 95);
  f.temp_max_c = percentile(temps, 100);
  f.temp_memory_max_c = percentile(
      values_in(series, begin, end, [](const Reading& r) { return r.temp_memory_c; }), 100);
  f.temp_junction_max_c = percentile(
      values_in(series, begin, end, [](const Reading& r) { return r.temp_junction_c; }), 100);
  f.clock_sm_median_mhz = percentile(
      values_in(series, begin, end, [](const Reading& r) { return r.clock_sm_mhz; }), 50);
  f.clock_memory_median_mhz = percentile(
      values_in(series, begin, end, [](const Reading& r) { return r.clock_memory_mhz; }), 50);
  const auto util =
      values_in(series, begin, end, [](const Reading& r) { return r.utilization_pct; });
  if (!util.empty()) {
    double sum = 0;
    for (double u : util) sum += u;
    f.utilization_mean_pct = sum / static_cast<double>(util.size());
  }
  for (const auto& s : series) {
    if (s.t_ns < begin || s.t_ns > end) continue;
    const Reading& r = s.reading;
    if (r.memory_used_bytes) {
      f.memory_used_peak_bytes =
          std::max(f.memory_used_peak_bytes.value_or(0), *r.memory_used_bytes);
    }
    if (r.process_memory_bytes) {
      f.process_memory_peak_bytes =
          std::max(f.process_memory_peak_bytes.value_or(0), *r.process_memory_bytes);
    }
    if (r.throttle_reasons)
      f.throttle_reasons_seen = f.throttle_reasons_seen.value_or(0) | *r.throttle_reasons;
  }
  return f;
}

std::optional<double> net_joules_per_token(std::optional<double> energy_j,
                                           std::optional<double> idle_power_w, double duration_s,
                                           std::int64_t output_tokens) {
  if (!energy_j || !idle_power_w || output_tokens <= 0) return std::nullopt;
  return (*energy_j - *idle_power_w * duration_s) / static_cast<double>(output_tokens);
}

}  // namespace dyno::telemetry
