#include "load/schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace dyno::load {
namespace {

struct GapStats {
  double mean_s = 0.0;
  double cv = 0.0;
};

// Gaps include the first arrival's offset from 0 (it is one inter-arrival draw).
GapStats gap_stats(const std::vector<std::int64_t>& offsets) {
  std::vector<double> gaps;
  std::int64_t prev = 0;
  for (std::int64_t o : offsets) {
    gaps.push_back(static_cast<double>(o - prev) / 1e9);
    prev = o;
  }
  double sum = 0.0;
  for (double g : gaps) sum += g;
  const double mean = sum / static_cast<double>(gaps.size());
  double ss = 0.0;
  for (double g : gaps) ss += (g - mean) * (g - mean);
  const double sd = std::sqrt(ss / static_cast<double>(gaps.size() - 1));
  return {mean, sd / mean};
}

std::string thrown_message(const ScheduleSpec& spec, std::optional<std::uint64_t> count,
                           std::optional<double> duration) {
  try {
    make_schedule(spec, count, duration);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Schedule, ArrivalNamesRoundTrip) {
  for (Arrival a : {Arrival::kPoisson, Arrival::kConstant, Arrival::kGamma}) {
    EXPECT_EQ(parse_arrival(to_string(a)), a);
  }
  EXPECT_THROW(parse_arrival("uniform"), dyno::UsageError);
}

TEST(Schedule, PoissonMeanAndCv) {
  const ScheduleSpec spec{Arrival::kPoisson, 20.0, 1.0, 42};
  const auto offsets = make_schedule(spec, 10'000, std::nullopt);
  ASSERT_EQ(offsets.size(), 10'000u);
  const GapStats st = gap_stats(offsets);
  EXPECT_NEAR(st.mean_s, 1.0 / 20.0, 0.03 / 20.0);
  EXPECT_NEAR(st.cv, 1.0, 0.05);
  EXPECT_GT(offsets.front(), 0);  // the first arrival is one draw after 0
}

TEST(Schedule, OffsetsAreNonDecreasing) {
  for (Arrival a : {Arrival::kPoisson, Arrival::kConstant, Arrival::kGamma}) {
    const auto offsets = make_schedule({a, 1000.0, 0.25, 7}, 5000, std::nullopt);
    for (std::size_t i = 1; i < offsets.size(); ++i) ASSERT_LE(offsets[i - 1], offsets[i]);
  }
}

TEST(Schedule, ConstantSpacingIsExact) {
  const auto offsets = make_schedule({Arrival::kConstant, 4.0, 1.0, 0}, 5, std::nullopt);
  EXPECT_EQ(offsets,
            (std::vector<std::int64_t>{0, 250'000'000, 500'000'000, 750'000'000, 1'000'000'000}));
  // A gap that is not a whole number of ns does not drift: offset i = round(i / rate).
  const auto thirds = make_schedule({Arrival::kConstant, 3.0, 1.0, 0}, 3001, std::nullopt);
  EXPECT_EQ(thirds[3], 1'000'000'000);
  EXPECT_EQ(thirds[3000], 1'000'000'000'000);
  EXPECT_EQ(thirds[1], 333'333'333);
}

TEST(Schedule, GammaBurstyCv) {
  const auto offsets = make_schedule({Arrival::kGamma, 10.0, 0.25, 1}, 10'000, std::nullopt);
  const GapStats st = gap_stats(offsets);
  EXPECT_NEAR(st.mean_s, 0.1, 0.1 * 0.03);
  EXPECT_NEAR(st.cv, 2.0, 2.0 * 0.07);
}

TEST(Schedule, GammaSmoothCv) {
  const auto offsets = make_schedule({Arrival::kGamma, 10.0, 4.0, 1}, 10'000, std::nullopt);
  const GapStats st = gap_stats(offsets);
  EXPECT_NEAR(st.mean_s, 0.1, 0.1 * 0.03);
  EXPECT_NEAR(st.cv, 0.5, 0.5 * 0.07);
}

TEST(Schedule, GammaShapeOneIsExponentialLike) {
  const auto offsets = make_schedule({Arrival::kGamma, 10.0, 1.0, 3}, 10'000, std::nullopt);
  const GapStats st = gap_stats(offsets);
  EXPECT_NEAR(st.mean_s, 0.1, 0.1 * 0.03);
  EXPECT_NEAR(st.cv, 1.0, 0.05);
}

TEST(Schedule, DurationLimit) {
  const double rate = 100.0;
  const double duration = 50.0;
  const auto offsets = make_schedule({Arrival::kPoisson, rate, 1.0, 9}, std::nullopt, duration);
  for (std::int64_t o : offsets) ASSERT_LT(o, 50'000'000'000);
  // Poisson count over the window: mean 5000, sd ~71; 5 % is 3.5 sd.
  EXPECT_NEAR(static_cast<double>(offsets.size()), rate * duration, 0.05 * rate * duration);

  const auto constant = make_schedule({Arrival::kConstant, 10.0, 1.0, 0}, std::nullopt, 1.0);
  EXPECT_EQ(constant.size(), 10u);  // 0, 0.1, ..., 0.9; 1.0 is not before the end
  EXPECT_EQ(constant.back(), 900'000'000);
  EXPECT_TRUE(make_schedule({Arrival::kConstant, 10.0, 1.0, 0}, std::nullopt, 0.0).empty());
}

TEST(Schedule, BothLimitsWhicheverFirst) {
  const ScheduleSpec spec{Arrival::kConstant, 10.0, 1.0, 0};
  EXPECT_EQ(make_schedule(spec, 3, 10.0).size(), 3u);
  EXPECT_EQ(make_schedule(spec, 300, 1.0).size(), 10u);
}

TEST(Schedule, CountZeroIsEmpty) {
  EXPECT_TRUE(make_schedule({Arrival::kPoisson, 5.0, 1.0, 0}, 0, std::nullopt).empty());
}

TEST(Schedule, SameSeedSameSchedule) {
  for (Arrival a : {Arrival::kPoisson, Arrival::kGamma}) {
    const ScheduleSpec spec{a, 50.0, 0.5, 1234};
    EXPECT_EQ(make_schedule(spec, 1000, std::nullopt), make_schedule(spec, 1000, std::nullopt));
    ScheduleSpec other = spec;
    other.seed = 1235;
    EXPECT_NE(make_schedule(spec, 1000, std::nullopt), make_schedule(other, 1000, std::nullopt));
  }
}

TEST(Schedule, PinnedValues) {
  // The transforms are our own (not std:: distributions), so these values must not change
  // across standard libraries; a change here changes every recorded schedule.
  const auto poisson = make_schedule({Arrival::kPoisson, 1.0, 1.0, 0}, 3, std::nullopt);
  const auto gamma = make_schedule({Arrival::kGamma, 1.0, 0.5, 0}, 3, std::nullopt);
  ASSERT_EQ(poisson.size(), 3u);
  ASSERT_EQ(gamma.size(), 3u);
  // First draw of mt19937_64(0) is 2947667278772165694; U = draw >> 11 / 2^53.
  const double u = static_cast<double>(2947667278772165694ULL >> 11) * 0x1.0p-53;
  EXPECT_EQ(poisson[0], static_cast<std::int64_t>(std::round(-std::log1p(-u) * 1e9)));
}

TEST(Schedule, InvalidSpecsNameTheParameter) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_NE(thrown_message({Arrival::kPoisson, 0.0, 1.0, 0}, 1, {}).find("rate"),
            std::string::npos);
  EXPECT_NE(thrown_message({Arrival::kPoisson, -1.0, 1.0, 0}, 1, {}).find("rate"),
            std::string::npos);
  EXPECT_NE(thrown_message({Arrival::kPoisson, nan, 1.0, 0}, 1, {}).find("rate"),
            std::string::npos);
  EXPECT_NE(thrown_message({Arrival::kPoisson, inf, 1.0, 0}, 1, {}).find("rate"),
            std::string::npos);
  EXPECT_NE(thrown_message({Arrival::kGamma, 1.0, 0.0, 0}, 1, {}).find("burstiness"),
            std::string::npos);
  EXPECT_NE(thrown_message({Arrival::kGamma, 1.0, -2.0, 0}, 1, {}).find("burstiness"),
            std::string::npos);
  EXPECT_NE(thrown_message({Arrival::kPoisson, 1.0, 1.0, 0}, {}, {}).find("count"),
            std::string::npos);
  EXPECT_NE(thrown_message({Arrival::kPoisson, 1.0, 1.0, 0}, {}, -1.0).find("duration"),
            std::string::npos);
  EXPECT_NE(thrown_message({Arrival::kPoisson, 1.0, 1.0, 0}, {}, nan).find("duration"),
            std::string::npos);
  EXPECT_NE(thrown_message({Arrival::kPoisson, 1e9, 1.0, 0}, {}, 1e6).find("duration"),
            std::string::npos);
  EXPECT_NE(
      thrown_message({Arrival::kPoisson, 1.0, 1.0, 0}, kMaxScheduleArrivals + 1, {}).find("count"),
      std::string::npos);
}

}  // namespace
}  // namespace dyno::load
