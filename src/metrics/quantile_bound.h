// Confidence bounds over requests, for judging a service-level objective on a sample of
// requests (`dyno capacity`, docs/metrics.md "Capacity at an SLO"). Distribution-free: a
// quantile's bounds are order statistics chosen with the binomial distribution, a proportion's
// are exact (Clopper–Pearson). Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace dyno::metrics {

/// P(X <= m) for X ~ Binomial(n, p), by summing the probabilities in log space (exact to
/// rounding; n up to millions). m >= n gives 1.
double binomial_cdf(std::uint64_t m, std::uint64_t n, double p);

/// The q-quantile of a sample with its one-sided confidence bounds, each at `confidence`:
/// `value` the sample's quantile (linear interpolation, as every percentile of dyno's);
/// `high` the smallest order statistic x_(j) with P(x_(j) >= ξ_q) >= confidence, that is
/// P(Binomial(n, q) <= j − 1) >= confidence; `low` the largest x_(i) with P(x_(i) <= ξ_q) >=
/// confidence, P(Binomial(n, q) >= i) >= confidence. A bound the sample is too small for is
/// nullopt (e.g. no upper bound of a p90 from fewer than 29 values at 95 %). Non-finite values
/// are dropped; n counts the rest.
struct QuantileBound {
  std::size_t n = 0;
  std::optional<double> value;
  std::optional<double> low;
  std::optional<double> high;
};
QuantileBound quantile_bound(std::vector<double> values, double q, double confidence);

/// A proportion k / n with its exact one-sided bounds at `confidence` (Clopper–Pearson):
/// `low` the p with P(Binomial(n, p) >= k) = 1 − confidence (0 when k = 0), `high` the p with
/// P(Binomial(n, p) <= k) = 1 − confidence (1 when k = n). nullopt for n = 0.
struct ProportionBound {
  double value = 0;
  double low = 0;
  double high = 1;
};
std::optional<ProportionBound> proportion_bound(std::uint64_t k, std::uint64_t n,
                                                double confidence);

}  // namespace dyno::metrics
