#include "metrics/stats.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace dyno::metrics {

namespace {

// numpy's _lerp: interpolate from the nearer end so that t = 1 returns b exactly and the
// result is monotone in t (numpy >= 1.22, function_base.py).
double lerp(double a, double b, double t) {
  const double diff = b - a;
  return t >= 0.5 ? b - diff * (1.0 - t) : a + diff * t;
}

}  // namespace

// Hyndman & Fan type 7 (numpy.percentile method="linear", the default): the virtual index is
// h = (n - 1) * q / 100, and the result interpolates linearly between the order statistics at
// floor(h) and floor(h) + 1.
std::optional<double> percentile_sorted(std::span<const double> sorted, double q) {
  if (!(q >= 0.0 && q <= 100.0)) {
    throw std::invalid_argument("percentile: q must be in [0, 100]");
  }
  if (sorted.empty()) return std::nullopt;
  const std::size_t n = sorted.size();
  const double h = static_cast<double>(n - 1) * (q / 100.0);
  const double lo_d = std::floor(h);
  const auto lo = static_cast<std::size_t>(lo_d);
  if (lo + 1 >= n) return sorted[n - 1];
  return lerp(sorted[lo], sorted[lo + 1], h - lo_d);
}

// Non-finite values (NaN, ±inf) are dropped before anything is computed: they can only come
// from a broken input (a division by a zero interval upstream) and would poison every
// statistic. `count` is the number of finite values kept.
Distribution summarize(std::vector<double> values) {
  std::erase_if(values, [](double v) { return !std::isfinite(v); });
  Distribution d;
  d.count = values.size();
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());

  // Two passes (mean, then squared deviations) for accuracy.
  double sum = 0.0;
  for (double v : values) sum += v;
  const double n = static_cast<double>(values.size());
  const double mean = sum / n;
  d.mean = mean;
  if (values.size() >= 2) {
    double ss = 0.0;
    for (double v : values) ss += (v - mean) * (v - mean);
    d.stddev = std::sqrt(ss / (n - 1.0));
  }
  d.min = values.front();
  d.max = values.back();
  d.p50 = percentile_sorted(values, 50.0);
  d.p90 = percentile_sorted(values, 90.0);
  d.p95 = percentile_sorted(values, 95.0);
  d.p99 = percentile_sorted(values, 99.0);
  d.p999 = percentile_sorted(values, 99.9);
  d.jitter = *d.p95 - *d.p50;
  return d;
}

}  // namespace dyno::metrics
