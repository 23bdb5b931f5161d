#include "metrics/quantile_bound.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "metrics/stats.h"

namespace dyno::metrics {

namespace {

/// log P(X = i) for X ~ Binomial(n, p), 0 < p < 1.
double log_pmf(std::uint64_t i, std::uint64_t n, double p) {
  const double ni = static_cast<double>(n), ii = static_cast<double>(i);
  return std::lgamma(ni + 1) - std::lgamma(ii + 1) - std::lgamma(ni - ii + 1) + ii * std::log(p) +
         (ni - ii) * std::log1p(-p);
}

void check_confidence(double confidence) {
  if (!(confidence > 0.5 && confidence < 1.0)) {
    throw std::invalid_argument("a confidence must lie in (0.5, 1)");
  }
}

}  // namespace

double binomial_cdf(std::uint64_t m, std::uint64_t n, double p) {
  if (m >= n) return 1.0;
  if (p <= 0.0) return 1.0;
  if (p >= 1.0) return 0.0;
  // Sum from the side with fewer terms, starting at the largest log term for accuracy.
  double total = 0.0;
  if (m + 1 <= n - m) {
    for (std::uint64_t i = 0; i <= m; ++i) total += std::exp(log_pmf(i, n, p));
    return std::min(1.0, total);
  }
  for (std::uint64_t i = m + 1; i <= n; ++i) total += std::exp(log_pmf(i, n, p));
  return std::max(0.0, 1.0 - total);
}

QuantileBound quantile_bound(std::vector<double> values, double q, double confidence) {
  if (!(q > 0.0 && q < 1.0)) throw std::invalid_argument("a quantile must lie in (0, 1)");
  check_confidence(confidence);
  std::erase_if(values, [](double x) { return !std::isfinite(x); });
  std::sort(values.begin(), values.end());
  QuantileBound out;
  out.n = values.size();
  if (values.empty()) return out;
  out.value = percentile_sorted(values, q * 100.0);
  const std::uint64_t n = values.size();
  // below[m] = P(Bin(n, q) <= m), summed once.
  std::vector<double> below(n + 1);
  double total = 0.0;
  for (std::uint64_t m = 0; m <= n; ++m) {
    total += std::exp(log_pmf(m, n, q));
    below[m] = std::min(1.0, total);
  }
  below[n] = 1.0;
  // high = x_(j), j the smallest rank (1-based) with P(Bin(n, q) <= j − 1) >= confidence.
  for (std::uint64_t j = 1; j <= n; ++j) {
    if (below[j - 1] >= confidence) {
      out.high = values[j - 1];
      break;
    }
  }
  // low = x_(i), i the largest rank with P(Bin(n, q) >= i) = 1 − P(Bin <= i − 1) >= confidence.
  for (std::uint64_t i = n; i >= 1; --i) {
    if (1.0 - below[i - 1] >= confidence) {
      out.low = values[i - 1];
      break;
    }
  }
  return out;
}

std::optional<ProportionBound> proportion_bound(std::uint64_t k, std::uint64_t n,
                                                double confidence) {
  check_confidence(confidence);
  if (n == 0) return std::nullopt;
  if (k > n) throw std::invalid_argument("a proportion's count exceeds its total");
  const double alpha = 1.0 - confidence;
  ProportionBound b;
  b.value = static_cast<double>(k) / static_cast<double>(n);
  // P(Bin(n, p) <= m) falls as p rises: bisect for the p where it crosses a level.
  const auto crossing = [n](std::uint64_t m, double level) {
    double lo = 0.0, hi = 1.0;
    for (int it = 0; it < 100; ++it) {
      const double mid = 0.5 * (lo + hi);
      if (binomial_cdf(m, n, mid) > level)
        lo = mid;
      else
        hi = mid;
    }
    return 0.5 * (lo + hi);
  };
  // low: P(X >= k | p) = alpha  <=>  P(X <= k − 1 | p) = 1 − alpha.
  b.low = k == 0 ? 0.0 : crossing(k - 1, 1.0 - alpha);
  // high: P(X <= k | p) = alpha.
  b.high = k == n ? 1.0 : crossing(k, alpha);
  return b;
}

}  // namespace dyno::metrics
