// Intervals and verdicts: the deterministic generator, percentiles of resamples, a known
// two-arm case whose interval must cover the true delta, identical arms giving ties, and
// intervals over repetitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "compare/board.h"
#include "compare/figures.h"
#include "metrics/stats.h"
#include "test_records.h"

namespace dyno::compare {
namespace {

using testing::make_run;
using testing::pair_input;
using testing::sequential_traces;

TEST(Rng, IsDeterministicAndInRange) {
  Rng a(42), b(42), c(43);
  for (int i = 0; i < 100; ++i) {
    const auto x = a.next();
    EXPECT_EQ(x, b.next());
    EXPECT_NE(x, c.next());
  }
  Rng r(7);
  std::vector<int> counts(10, 0);
  for (int i = 0; i < 100000; ++i) {
    const auto v = r.below(10);
    ASSERT_LT(v, 10u);
    ++counts[static_cast<std::size_t>(v)];
  }
  for (int n : counts) EXPECT_NEAR(n, 10000, 500);  // ~5 sigma
  // splitmix64's first output for seed 0 (Vigna's reference implementation).
  Rng z(0);
  EXPECT_EQ(z.next(), 0xe220a8397b1dcdafull);
}

TEST(Sample, ResampledPercentilesFollowTheSortedDefinition) {
  // A resample's percentile from draw counts equals percentile_sorted of the sorted resample.
  std::mt19937_64 gen(3);
  std::uniform_real_distribution<double> u(-5, 5);
  for (std::size_t n : {1u, 2u, 3u, 10u, 101u}) {
    std::vector<double> v(n);
    for (auto& x : v) x = u(gen);
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    for (double q : {50.0, 95.0, 99.0}) {
      const Sample s = Sample::values(Resample::kPercentile, q, v);
      Rng draw(11), replay(11);
      std::vector<std::uint32_t> scratch;
      for (int rep = 0; rep < 20; ++rep) {
        const double got = *s.resampled(draw, scratch);
        std::vector<double> resample;
        for (std::size_t i = 0; i < n; ++i) resample.push_back(sorted[replay.below(n)]);
        std::sort(resample.begin(), resample.end());
        EXPECT_DOUBLE_EQ(got, *metrics::percentile_sorted(resample, q)) << n << " " << q;
      }
    }
  }
}

TEST(Sample, PointEqualsTheRecordedFigure) {
  const auto run = make_run("r", "a", sequential_traces({100, 120, 80, 95, 130, 70, 110}));
  for (const auto& m : metric_catalog()) {
    const auto s = Sample::of(m, *run);
    const auto recorded = read_figure(m, *run);
    if (!s || !recorded) continue;
    ASSERT_TRUE(s->point().has_value()) << m.key;
    EXPECT_NEAR(*s->point(), *recorded, 1e-9 * std::max(1.0, std::fabs(*recorded))) << m.key;
  }
}

/// Two arms whose per-request latencies come from normal distributions with means 100 ms and
/// 125 ms: the arm is 25 % faster, so every rate's and the median latency's true delta is +25 %.
Board known_case(std::uint64_t data_seed, std::size_t n, std::uint32_t resamples) {
  std::mt19937_64 gen(data_seed);
  std::normal_distribution<double> fast(100.0, 15.0), slow(125.0, 15.0);
  std::vector<double> a(n), b(n);
  for (auto& x : a) x = std::max(1.0, fast(gen));
  for (auto& x : b) x = std::max(1.0, slow(gen));
  BoardOptions o;
  o.bootstrap.resamples = resamples;
  o.bootstrap.seed = data_seed;
  return build_board(pair_input(make_run("ra", "a", sequential_traces(a)),
                                make_run("rb", "b", sequential_traces(b))),
                     o);
}

TEST(Bootstrap, KnownCaseIntervalContainsTheTrueDeltaAndExcludesZero) {
  const Board board = known_case(1, 300, 2000);
  ASSERT_EQ(board.cells.size(), 1u);
  const Comparison& c = board.cells[0].comparisons.at(0);
  for (const char* key : {"output_tokens_per_s", "requests_per_s", "e2e_p50_ms"}) {
    const Delta& d = c.deltas.at(key);
    ASSERT_TRUE(d.low && d.high) << key;
    EXPECT_EQ(d.method, "bootstrap_requests");
    EXPECT_LE(*d.low, 25.0) << key;
    EXPECT_GE(*d.high, 25.0) << key;
    EXPECT_GT(*d.low, 0.0) << key;
    EXPECT_EQ(d.verdict, Verdict::kWin) << key;
    EXPECT_EQ(d.n_arm, 300u);
  }
}

TEST(Bootstrap, CoverageIsNearNominalOverManyDataSets) {
  // The interval is a random quantity; over 40 independent data sets a 95 % interval should
  // cover the true +25 % about 38 times. Fewer than 33 would mean a badly calibrated method.
  int covered_rate = 0, covered_median = 0;
  const int trials = 40;
  for (int s = 0; s < trials; ++s) {
    const Board board = known_case(100 + static_cast<std::uint64_t>(s), 120, 1000);
    const Comparison& c = board.cells[0].comparisons.at(0);
    const Delta& rate = c.deltas.at("output_tokens_per_s");
    const Delta& median = c.deltas.at("e2e_p50_ms");
    covered_rate += (*rate.low <= 25.0 && *rate.high >= 25.0) ? 1 : 0;
    covered_median += (*median.low <= 25.0 && *median.high >= 25.0) ? 1 : 0;
  }
  EXPECT_GE(covered_rate, 33);
  EXPECT_GE(covered_median, 33);
}

TEST(Bootstrap, IsDeterministicForASeed) {
  const Board x = known_case(5, 100, 500);
  const Board y = known_case(5, 100, 500);
  const Delta& dx = x.cells[0].comparisons[0].deltas.at("output_tokens_per_s");
  const Delta& dy = y.cells[0].comparisons[0].deltas.at("output_tokens_per_s");
  EXPECT_EQ(*dx.low, *dy.low);
  EXPECT_EQ(*dx.high, *dy.high);
}

TEST(Bootstrap, IdenticalArmsGiveTies) {
  std::mt19937_64 gen(9);
  std::normal_distribution<double> lat(100.0, 20.0);
  std::vector<double> v(200);
  for (auto& x : v) x = std::max(1.0, lat(gen));
  const auto run = make_run("r", "a", sequential_traces(v));
  const Board board = build_board(pair_input(run, run), BoardOptions{});
  const Comparison& c = board.cells[0].comparisons.at(0);
  std::size_t compared = 0;
  for (const auto& [key, d] : c.deltas) {
    if (!d.value) continue;
    EXPECT_NEAR(*d.value, 0.0, 1e-9) << key;
    if (d.verdict == Verdict::kNoInterval) continue;
    ++compared;
    EXPECT_EQ(d.verdict, Verdict::kTie) << key << " [" << *d.low << ", " << *d.high << "]";
  }
  EXPECT_GE(compared, 8u);
  for (const auto& t : board.tallies) {
    EXPECT_EQ(t.wins, 0u) << t.metric;
    EXPECT_EQ(t.losses, 0u) << t.metric;
  }
}

TEST(Bootstrap, TooFewRequestsGiveNoInterval) {
  const Board board = build_board(
      pair_input(make_run("ra", "a", sequential_traces({50, 60, 55})),
                 make_run("rb", "b", sequential_traces({100, 110, 105}))),
      BoardOptions{});
  const Delta& d = board.cells[0].comparisons[0].deltas.at("output_tokens_per_s");
  EXPECT_TRUE(d.value.has_value());
  EXPECT_EQ(d.verdict, Verdict::kNoInterval);
  EXPECT_NE(d.no_interval.find("fewer than 10 requests"), std::string::npos);
}

TEST(Bootstrap, OverRepetitionsWithThreeOrMore) {
  // Three repetitions per arm; every repetition of a is faster than every one of b.
  BoardInput in;
  ArmInput a{"a", {"test"}, {}}, b{"b", {"test"}, {}};
  const std::vector<double> scale_a = {1.0, 1.1, 0.95}, scale_b = {1.6, 1.5, 1.7};
  for (int r = 0; r < 3; ++r) {
    std::vector<double> la(12, 50.0 * scale_a[static_cast<std::size_t>(r)]);
    std::vector<double> lb(12, 50.0 * scale_b[static_cast<std::size_t>(r)]);
    a.runs.push_back(make_run("ra" + std::to_string(r), "a", sequential_traces(la), 1, "camp-a",
                              r + 1, 3));
    b.runs.push_back(make_run("rb" + std::to_string(r), "b", sequential_traces(lb), 1, "camp-b",
                              r + 1, 3));
  }
  in.arms = {a, b};
  const Board board = build_board(in, BoardOptions{});
  ASSERT_EQ(board.cells.size(), 1u);
  const Cell& cell = board.cells[0];
  // The median repetition by output tok/s: a's middle one is scale 1.0 (run ra0).
  EXPECT_EQ(cell.arm("a")->run().run_id, "ra0");
  EXPECT_EQ(cell.arm("b")->run().run_id, "rb0");
  EXPECT_EQ(cell.arm("a")->selection, "median of 3 by output_tokens_per_s");
  const Delta& d = cell.comparisons[0].deltas.at("output_tokens_per_s");
  EXPECT_EQ(d.method, "bootstrap_repetitions");
  EXPECT_EQ(d.n_arm, 3u);
  EXPECT_EQ(d.verdict, Verdict::kWin);
  // The selected pair: 1.6 / 1.0 − 1 = +60 %.
  EXPECT_NEAR(*d.value, 60.0, 1e-6);
}

TEST(MedianRepetition, PicksTheLowerMiddleAndSkipsMissing) {
  EXPECT_EQ(median_repetition({3.0, 1.0, 2.0}), 2u);
  EXPECT_EQ(median_repetition({4.0, 1.0, 3.0, 2.0}), 3u);  // lower middle of 1,2,3,4 is 2
  EXPECT_EQ(median_repetition({std::nullopt, 5.0, 1.0}), 2u);
  EXPECT_EQ(median_repetition({2.0, 2.0, 2.0}), 1u);  // ties by repetition order
  EXPECT_FALSE(median_repetition({std::nullopt}).has_value());
}

TEST(DeltaOf, SignsByDirection) {
  const MetricDef& rate = *find_metric("output_tokens_per_s");
  const MetricDef& lat = *find_metric("e2e_p50_ms");
  const MetricDef& acc = *find_metric("accuracy");
  EXPECT_NEAR(*delta_of(rate, 120.0, 100.0), 20.0, 1e-12);
  EXPECT_NEAR(*delta_of(lat, 80.0, 100.0), 25.0, 1e-12);   // faster arm: positive
  EXPECT_NEAR(*delta_of(lat, 125.0, 100.0), -20.0, 1e-12);
  EXPECT_NEAR(*delta_of(acc, 0.85, 0.80), 5.0, 1e-9);     // points
  EXPECT_FALSE(delta_of(rate, 1.0, 0.0).has_value());
  EXPECT_FALSE(delta_of(lat, -1.0, 1.0).has_value());
  EXPECT_FALSE(delta_of(rate, std::nullopt, 1.0).has_value());
  EXPECT_FALSE(delta_of(*find_metric("power_mean_w"), 1.0, 2.0).has_value());
}

}  // namespace
}  // namespace dyno::compare
