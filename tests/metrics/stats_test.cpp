#include "metrics/stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

namespace dyno::metrics {
namespace {

constexpr double kEps = 1e-12;

TEST(Stats, EmptySampleHasNoFigures) {
  const Distribution d = summarize({});
  EXPECT_EQ(d.count, 0u);
  EXPECT_FALSE(d.mean);
  EXPECT_FALSE(d.stddev);
  EXPECT_FALSE(d.min);
  EXPECT_FALSE(d.p50);
  EXPECT_FALSE(d.p90);
  EXPECT_FALSE(d.p95);
  EXPECT_FALSE(d.p99);
  EXPECT_FALSE(d.p999);
  EXPECT_FALSE(d.max);
  EXPECT_FALSE(d.jitter);
  EXPECT_FALSE(percentile_sorted({}, 50.0));
}

TEST(Stats, SingleValue) {
  const Distribution d = summarize({7.5});
  EXPECT_EQ(d.count, 1u);
  EXPECT_EQ(d.mean, 7.5);
  EXPECT_FALSE(d.stddev);  // sample stddev needs n >= 2
  EXPECT_EQ(d.min, 7.5);
  EXPECT_EQ(d.p50, 7.5);
  EXPECT_EQ(d.p90, 7.5);
  EXPECT_EQ(d.p95, 7.5);
  EXPECT_EQ(d.p99, 7.5);
  EXPECT_EQ(d.p999, 7.5);
  EXPECT_EQ(d.max, 7.5);
  EXPECT_EQ(d.jitter, 0.0);
}

TEST(Stats, AllEqual) {
  const Distribution d = summarize({3.0, 3.0, 3.0, 3.0});
  EXPECT_EQ(d.mean, 3.0);
  EXPECT_EQ(d.stddev, 0.0);
  EXPECT_EQ(d.p50, 3.0);
  EXPECT_EQ(d.p999, 3.0);
  EXPECT_EQ(d.jitter, 0.0);
}

TEST(Stats, OneTwoThreeFourMatchesNumpyLinear) {
  // numpy.percentile([1, 2, 3, 4], q): h = 3 q / 100, value = x[floor h] + frac(h) · step.
  const Distribution d = summarize({4.0, 1.0, 3.0, 2.0});  // any order
  EXPECT_EQ(d.count, 4u);
  EXPECT_NEAR(*d.mean, 2.5, kEps);
  EXPECT_NEAR(*d.stddev, std::sqrt(5.0 / 3.0), kEps);  // Σ(x − 2.5)² = 5, n − 1 = 3
  EXPECT_EQ(d.min, 1.0);
  EXPECT_EQ(d.max, 4.0);
  EXPECT_NEAR(*d.p50, 2.5, kEps);     // h = 1.5
  EXPECT_NEAR(*d.p90, 3.7, kEps);     // h = 2.7
  EXPECT_NEAR(*d.p95, 3.85, kEps);    // h = 2.85
  EXPECT_NEAR(*d.p99, 3.97, kEps);    // h = 2.97
  EXPECT_NEAR(*d.p999, 3.997, kEps);  // h = 2.997
  EXPECT_NEAR(*d.jitter, 1.35, kEps);
}

TEST(Stats, ElevenValues) {
  // 0..10: h = 10 q / 100, so the percentile is q / 10 exactly.
  std::vector<double> v;
  for (int i = 10; i >= 0; --i) v.push_back(i);
  const Distribution d = summarize(v);
  EXPECT_NEAR(*d.p50, 5.0, kEps);
  EXPECT_NEAR(*d.p90, 9.0, kEps);
  EXPECT_NEAR(*d.p95, 9.5, kEps);
  EXPECT_NEAR(*d.p99, 9.9, kEps);
  EXPECT_NEAR(*d.p999, 9.99, kEps);
  EXPECT_NEAR(*d.stddev, std::sqrt(11.0), kEps);  // Σ(i − 5)² = 110, n − 1 = 10
}

TEST(Stats, PercentileEndsAndRange) {
  const std::vector<double> v = {1.0, 5.0, 9.0};
  EXPECT_EQ(percentile_sorted(v, 0.0), 1.0);
  EXPECT_EQ(percentile_sorted(v, 100.0), 9.0);
  EXPECT_NEAR(*percentile_sorted(v, 25.0), 3.0, kEps);  // h = 0.5
  EXPECT_NEAR(*percentile_sorted(v, 75.0), 7.0, kEps);  // h = 1.5
  EXPECT_THROW(percentile_sorted(v, 100.5), std::invalid_argument);
  EXPECT_THROW(percentile_sorted(v, -1.0), std::invalid_argument);
  EXPECT_THROW(percentile_sorted(v, std::numeric_limits<double>::quiet_NaN()),
               std::invalid_argument);
}

TEST(Stats, NonFiniteValuesAreDropped) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Distribution d = summarize({2.0, nan, inf, -inf, 4.0});
  EXPECT_EQ(d.count, 2u);
  EXPECT_EQ(d.mean, 3.0);
  EXPECT_EQ(d.max, 4.0);
  EXPECT_EQ(summarize({nan}).count, 0u);
  EXPECT_FALSE(summarize({nan}).mean);
}

TEST(RadixSort, OrdersAsStdSortDoes) {
  std::mt19937_64 rng(7);
  const auto check = [](std::vector<std::int64_t> v) {
    std::vector<std::int64_t> expected = v;
    std::sort(expected.begin(), expected.end());
    radix_sort(v);
    EXPECT_EQ(v, expected);
  };
  check({});
  check({5});
  check({3, 1, 2});
  for (const std::size_t n : {255u, 256u, 1000u, 100000u}) {
    std::vector<std::int64_t> gaps(n);  // event gaps in ns: mostly small, a few long stalls
    for (auto& g : gaps) g = static_cast<std::int64_t>(rng() % 2'000'000);
    gaps[n / 2] = 9'000'000'000;
    check(gaps);
    std::vector<std::int64_t> any(n);  // the whole range, negatives and extremes included
    for (auto& x : any) x = static_cast<std::int64_t>(rng());
    any[0] = std::numeric_limits<std::int64_t>::min();
    any[1] = std::numeric_limits<std::int64_t>::max();
    any[2] = -1;
    any[3] = 0;
    check(any);
    check(std::vector<std::int64_t>(n, 42));  // every digit the same: no pass runs
    std::vector<std::int64_t> few(n);
    for (std::size_t i = 0; i < n; ++i) few[i] = static_cast<std::int64_t>((n - i) % 3) << 40;
    check(few);
  }
}

TEST(SummarizeSorted, TheFiguresOfSummarize) {
  std::mt19937_64 rng(11);
  std::vector<double> v(5000);
  for (auto& x : v) x = static_cast<double>(rng() % 1'000'000) / 1e6 * 1e3;
  const Distribution a = summarize(v);
  std::sort(v.begin(), v.end());
  const Distribution b = summarize_sorted(v);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.mean, b.mean);  // the same sum in the same (ascending) order: bit for bit
  EXPECT_EQ(a.stddev, b.stddev);
  EXPECT_EQ(a.min, b.min);
  EXPECT_EQ(a.p50, b.p50);
  EXPECT_EQ(a.p90, b.p90);
  EXPECT_EQ(a.p95, b.p95);
  EXPECT_EQ(a.p99, b.p99);
  EXPECT_EQ(a.p999, b.p999);
  EXPECT_EQ(a.max, b.max);
  EXPECT_EQ(a.jitter, b.jitter);
}

}  // namespace
}  // namespace dyno::metrics
