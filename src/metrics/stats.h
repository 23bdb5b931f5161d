// Distribution statistics. Percentiles interpolate linearly between closest ranks
// (numpy's default "linear" method, Hyndman & Fan type 7).
#pragma once

#include <cstddef>
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

}  // namespace dyno::metrics
