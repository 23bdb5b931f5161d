#include "metrics/quantile_bound.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace dyno::metrics {
namespace {

std::vector<double> one_to(int n) {
  std::vector<double> v;
  for (int i = 1; i <= n; ++i) v.push_back(i);
  return v;
}

TEST(BinomialCdf, AgreesWithClosedForms) {
  EXPECT_NEAR(binomial_cdf(0, 10, 0.5), std::pow(0.5, 10), 1e-15);
  EXPECT_NEAR(binomial_cdf(28, 29, 0.9), 1 - std::pow(0.9, 29), 1e-12);
  EXPECT_DOUBLE_EQ(binomial_cdf(10, 10, 0.3), 1.0);
  EXPECT_NEAR(binomial_cdf(5, 10, 0.5), 638.0 / 1024.0, 1e-12);
  // A large n stays a probability.
  const double c = binomial_cdf(90000, 100000, 0.9);
  EXPECT_GT(c, 0.45);
  EXPECT_LT(c, 0.56);
}

TEST(QuantileBound, AP90HasAnUpperBoundFrom29ValuesAt95Percent) {
  // P(Bin(29, 0.9) <= 28) = 1 − 0.9^29 = 0.953: the largest of 29 values bounds the p90.
  const QuantileBound b29 = quantile_bound(one_to(29), 0.9, 0.95);
  ASSERT_TRUE(b29.high);
  EXPECT_EQ(*b29.high, 29.0);
  // 1 − 0.9^28 = 0.948: 28 values cannot bound it.
  EXPECT_FALSE(quantile_bound(one_to(28), 0.9, 0.95).high);
}

TEST(QuantileBound, TheBoundsEncloseTheValueAndNarrowWithMoreRequests) {
  const QuantileBound small = quantile_bound(one_to(100), 0.9, 0.95);
  ASSERT_TRUE(small.value && small.low && small.high);
  EXPECT_NEAR(*small.value, 90.1, 1e-9);
  EXPECT_LE(*small.low, *small.value);
  EXPECT_GE(*small.high, *small.value);
  // Order statistics from the binomial: P(Bin(100, .9) <= j − 1) >= .95 first at j = 96.
  EXPECT_EQ(*small.high, 96.0);
  EXPECT_EQ(*small.low, 85.0);
  std::vector<double> big;
  for (int i = 1; i <= 10000; ++i) big.push_back(i / 100.0);
  const QuantileBound b = quantile_bound(big, 0.9, 0.95);
  // Both samples span 0–100: a hundred times the requests, about a tenth of the width.
  EXPECT_LT(*b.high - *b.low, (*small.high - *small.low) / 5);
}

TEST(QuantileBound, NonFiniteValuesAreDroppedAndBadArgumentsRefused) {
  const QuantileBound b = quantile_bound({1.0, NAN, 2.0, INFINITY}, 0.5, 0.9);
  EXPECT_EQ(b.n, 2u);
  EXPECT_FALSE(quantile_bound({}, 0.9, 0.95).value);
  EXPECT_THROW(quantile_bound({1.0}, 1.0, 0.95), std::invalid_argument);
  EXPECT_THROW(quantile_bound({1.0}, 0.9, 0.4), std::invalid_argument);
}

TEST(ProportionBound, ClopperPearsonAtTheEdges) {
  // No failure in 32: the upper bound is 1 − 0.05^(1/32).
  const auto none = proportion_bound(0, 32, 0.95);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->value, 0.0);
  EXPECT_EQ(none->low, 0.0);
  EXPECT_NEAR(none->high, 1 - std::pow(0.05, 1.0 / 32), 1e-9);
  const auto all = proportion_bound(32, 32, 0.95);
  EXPECT_NEAR(all->low, std::pow(0.05, 1.0 / 32), 1e-9);
  EXPECT_EQ(all->high, 1.0);
  const auto half = proportion_bound(50, 100, 0.95);
  EXPECT_NEAR(half->low, 0.41362, 1e-4);  // the exact one-sided 95 % bound
  EXPECT_NEAR(half->high, 0.58638, 1e-4);
  EXPECT_FALSE(proportion_bound(0, 0, 0.95));
  EXPECT_THROW(proportion_bound(3, 2, 0.95), std::invalid_argument);
}

}  // namespace
}  // namespace dyno::metrics
