// Distribution statistics. Percentiles interpolate linearly between closest ranks
// (numpy's default "linear" method, Hyndman & Fan type 7).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace dyno::metrics {

/// Summary of a sample. Every field is nullopt when it is undefined for the sample
/// (all of them for n = 0; stddev for n < 2). Never 0 in place of "no data".
struct Distribution {
  std::size_t count = 0;
  std::optional<double> mean;
  std::optional<double> stddev;  ///< sample standard deviation (n − 1)
  std::optional<double> min;
  std::optional<double> p50;
  std::optional<double> p90;
  std::optional<double> p95;
  std::optional<double> p99;
  std::optional<double> p999;
  std::optional<double> max;
  std::optional<double> jitter;  ///< p95 − p50
};

/// Linear-interpolation percentile of an ascending-sorted sample; q in [0, 100].
/// nullopt for an empty sample. Throws std::invalid_argument for q outside [0, 100] or NaN.
std::optional<double> percentile_sorted(std::span<const double> sorted, double q);

/// Summarizes a sample (any order; the function sorts a copy). Non-finite values (NaN, ±inf)
/// are dropped first; `count` is the number of finite values summarized.
Distribution summarize(std::vector<double> values);

/// summarize() of a sample already in ascending order and all finite (the same figures, the
/// same arithmetic, without the sort).
Distribution summarize_sorted(std::span<const double> ascending);

/// summarize_sorted() of the n values get(0) <= get(1) <= ... (finite), read through `get`
/// rather than from an array: a sample kept in another unit (the event gaps, sorted as integer
/// nanoseconds) is summarized without a second array of it.
template <typename Get>
Distribution summarize_sorted_by(std::size_t n, Get get);

/// Sorts integers ascending in place (an MSD radix sort, a byte a level, from the highest byte
/// that differs between them; short ranges by insertion): for the millions of event gaps of a
/// run, in nanoseconds, which std::sort took a tenth of a run's CPU to order. No scratch array:
/// a run's peak memory is not raised.
void radix_sort(std::vector<std::int64_t>& values);

namespace detail {
double lerp(double a, double b, double t);
}  // namespace detail

template <typename Get>
Distribution summarize_sorted_by(std::size_t count, Get get) {
  Distribution d;
  d.count = count;
  if (count == 0) return d;
  // Two passes (mean, then squared deviations) for accuracy, in ascending order.
  double sum = 0.0;
  for (std::size_t i = 0; i < count; ++i) sum += get(i);
  const double n = static_cast<double>(count);
  const double mean = sum / n;
  d.mean = mean;
  if (count >= 2) {
    double ss = 0.0;
    for (std::size_t i = 0; i < count; ++i) {
      const double v = get(i);
      ss += (v - mean) * (v - mean);
    }
    d.stddev = std::sqrt(ss / (n - 1.0));
  }
  d.min = get(0);
  d.max = get(count - 1);
  // percentile_sorted()'s formula (Hyndman & Fan type 7), through get.
  const auto percentile = [&](double q) {
    const double h = static_cast<double>(count - 1) * (q / 100.0);
    const double lo_d = std::floor(h);
    const auto lo = static_cast<std::size_t>(lo_d);
    if (lo + 1 >= count) return get(count - 1);
    return detail::lerp(get(lo), get(lo + 1), h - lo_d);
  };
  d.p50 = percentile(50.0);
  d.p90 = percentile(90.0);
  d.p95 = percentile(95.0);
  d.p99 = percentile(99.0);
  d.p999 = percentile(99.9);
  d.jitter = *d.p95 - *d.p50;
  return d;
}

}  // namespace dyno::metrics
