#include "chart/scale.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <tuple>

#include "chart/palette.h"

namespace dyno::chart {
namespace {

const std::string kMinus = "\xE2\x88\x92";

TEST(NiceStep, PicksOneTwoFive) {
  EXPECT_DOUBLE_EQ(nice_step(0.7), 1.0);
  EXPECT_DOUBLE_EQ(nice_step(1.0), 1.0);
  EXPECT_DOUBLE_EQ(nice_step(1.3), 2.0);
  EXPECT_DOUBLE_EQ(nice_step(2.2), 5.0);
  EXPECT_DOUBLE_EQ(nice_step(5.1), 10.0);
  EXPECT_DOUBLE_EQ(nice_step(1428.0), 2000.0);
  EXPECT_DOUBLE_EQ(nice_step(0.03), 0.05);
  EXPECT_DOUBLE_EQ(nice_step(0.0), 1.0);  // degenerate input gives a usable step
  EXPECT_DOUBLE_EQ(nice_step(std::numeric_limits<double>::quiet_NaN()), 1.0);
}

TEST(LinearTicks, CoversTheDataWithNiceSteps) {
  const Ticks t = linear_ticks(120.0, 9800.0, 5, {}, {});
  EXPECT_DOUBLE_EQ(t.step, 2000.0);
  EXPECT_LE(t.lo, 120.0);
  EXPECT_GE(t.hi, 9800.0);
  ASSERT_FALSE(t.values.empty());
  for (double v : t.values) EXPECT_DOUBLE_EQ(std::fmod(v, 2000.0), 0.0);
  EXPECT_DOUBLE_EQ(t.values.front(), 0.0);  // padding below 120 stops at 0, not below
  EXPECT_DOUBLE_EQ(t.values.back(), 10000.0);
}

TEST(LinearTicks, DegenerateRanges) {
  const Ticks zero = linear_ticks(0.0, 0.0, 5);
  EXPECT_DOUBLE_EQ(zero.lo, 0.0);
  EXPECT_DOUBLE_EQ(zero.hi, 1.0);
  const Ticks one = linear_ticks(500.0, 500.0, 5);
  EXPECT_LT(one.lo, 500.0);
  EXPECT_GT(one.hi, 500.0);
  EXPECT_GE(one.values.size(), 2u);
  const Ticks negative = linear_ticks(-500.0, -500.0, 5);
  EXPECT_LT(negative.lo, -500.0);
  EXPECT_GT(negative.hi, -500.0);
  const Ticks nan = linear_ticks(std::numeric_limits<double>::quiet_NaN(), 3.0, 5);
  EXPECT_DOUBLE_EQ(nan.lo, 0.0);
  EXPECT_DOUBLE_EQ(nan.hi, 1.0);
  const Ticks tiny = linear_ticks(1.0, 1.0 + 1e-15, 5);
  EXPECT_LT(tiny.lo, tiny.hi);
}

TEST(LinearTicks, SpansZeroForMixedSigns) {
  const Ticks t = linear_ticks(-15.0, 25.0, 5);
  EXPECT_LT(t.lo, -15.0);
  EXPECT_GT(t.hi, 25.0);
  EXPECT_NE(std::find(t.values.begin(), t.values.end(), 0.0), t.values.end());
  for (double v : t.values) EXPECT_FALSE(std::signbit(v) && v == 0.0) << "no -0 tick";
}

TEST(LinearTicks, FixedEndsAreKept) {
  const Ticks t = linear_ticks(3.0, 97.0, 5, 0.0, 100.0);
  EXPECT_DOUBLE_EQ(t.lo, 0.0);
  EXPECT_DOUBLE_EQ(t.hi, 100.0);
  EXPECT_EQ(t.values, (std::vector<double>{0, 20, 40, 60, 80, 100}));
}

TEST(LogTicks, PowersOfTwoThinnedToFit) {
  const Ticks t = log_ticks(1.0, 1024.0, 2, 6);
  EXPECT_LT(t.lo, 1.0);
  EXPECT_GT(t.hi, 1024.0);
  EXPECT_LE(t.values.size(), 6u);
  EXPECT_GE(t.values.size(), 4u);
  for (double v : t.values) EXPECT_DOUBLE_EQ(std::log2(v), std::round(std::log2(v)));
  const Ticks all = log_ticks(1.0, 256.0, 2, 20);
  EXPECT_EQ(all.values.size(), 9u);
}

TEST(LogTicks, DecadesGetTwoAndFiveWhenFew) {
  const Ticks t = log_ticks(30.0, 900.0, 10, 10);
  EXPECT_NE(std::find(t.values.begin(), t.values.end(), 50.0), t.values.end());
  EXPECT_NE(std::find(t.values.begin(), t.values.end(), 100.0), t.values.end());
  const Ticks narrow = log_ticks(3.0, 4.0, 10, 10);
  EXPECT_GE(narrow.values.size(), 2u);
  for (double v : narrow.values) EXPECT_GT(v, 0.0);
}

TEST(LogTicks, NonPositiveInputFallsBack) {
  const Ticks t = log_ticks(0.0, -5.0, 10, 6);
  EXPECT_GT(t.lo, 0.0);
  EXPECT_GT(t.hi, t.lo);
  const Ticks one = log_ticks(16.0, 16.0, 2, 6);
  EXPECT_LT(one.lo, 16.0);
  EXPECT_GT(one.hi, 16.0);
}

TEST(OrdinalTicks, OneSlotPerCategoryZeroIncluded) {
  const std::vector<double> depths = {0, 8000, 16000, 32000};
  const Ticks t = ordinal_ticks(depths);
  EXPECT_EQ(t.values, depths);
  EXPECT_DOUBLE_EQ(t.step, 0.0);
  EXPECT_DOUBLE_EQ(t.lo, -1.0 / 3.0);
  EXPECT_DOUBLE_EQ(t.hi, 3.0 + 1.0 / 3.0);
  // Evenly spaced: 16000 → 32000 is one slot, as 0 → 8000 is.
  for (std::size_t i = 0; i < depths.size(); ++i) {
    EXPECT_DOUBLE_EQ(ordinal_position(depths, depths[i]), static_cast<double>(i));
  }
  // Between two slots, linearly; beyond the ends, from the end pair.
  EXPECT_DOUBLE_EQ(ordinal_position(depths, 24000), 2.5);
  EXPECT_DOUBLE_EQ(ordinal_position(depths, -4000), -0.5);
  EXPECT_DOUBLE_EQ(ordinal_position(depths, 48000), 4.0);
  // One category sits in the middle of its range; none or one give position 0.
  const Ticks one = ordinal_ticks({512});
  EXPECT_DOUBLE_EQ(one.lo, -0.5);
  EXPECT_DOUBLE_EQ(one.hi, 0.5);
  EXPECT_DOUBLE_EQ(ordinal_position({512}, 512), 0.0);
  EXPECT_DOUBLE_EQ(ordinal_position({}, 3), 0.0);
  EXPECT_TRUE(ordinal_ticks({}).values.empty());
  EXPECT_LT(ordinal_ticks({}).lo, ordinal_ticks({}).hi);
}

TEST(CategoryLabels, ExactValues) {
  EXPECT_EQ(category_labels({0, 8000, 16000, 32000}),
            (std::vector<std::string>{"0", "8k", "16k", "32k"}));
  EXPECT_EQ(category_labels({0, 12500, 20000}), (std::vector<std::string>{"0", "12.5k", "20k"}));
  EXPECT_EQ(category_labels({0, 5e5, 1e6}), (std::vector<std::string>{"0", "0.5M", "1M"}));
  // A value that is no whole tenth of the unit keeps every digit, and so do the others.
  EXPECT_EQ(category_labels({512, 2048, 16384}),
            (std::vector<std::string>{"512", "2048", "16384"}));
  EXPECT_EQ(category_labels({0, 12500, 1e6}), (std::vector<std::string>{"0", "12500", "1000000"}));
  EXPECT_EQ(category_labels({1, 2, 1024}), (std::vector<std::string>{"1", "2", "1024"}));
  EXPECT_EQ(category_labels({0.25, 1.5, -3}),
            (std::vector<std::string>{"0.25", "1.5", kMinus + "3"}));
}

TEST(FormatFixed, UsesRealMinusAndNoNegativeZero) {
  EXPECT_EQ(format_fixed(-2.5, 1), kMinus + "2.5");
  EXPECT_EQ(format_fixed(-0.0001, 1), "0.0");
  EXPECT_EQ(format_fixed(3.14159, 2), "3.14");
  EXPECT_EQ(format_fixed(std::numeric_limits<double>::quiet_NaN(), 1), "n/a");
}

TEST(FormatTicks, SuffixesAndDecimalsFollowTheStep) {
  EXPECT_EQ(format_ticks({0, 5000, 10000, 15000}, 5000),
            (std::vector<std::string>{"0", "5k", "10k", "15k"}));
  EXPECT_EQ(format_ticks({0, 2500, 5000, 7500}, 2500),
            (std::vector<std::string>{"0", "2500", "5000", "7500"}));
  EXPECT_EQ(format_ticks({10000, 12500, 15000}, 2500),
            (std::vector<std::string>{"10k", "12.5k", "15k"}));
  EXPECT_EQ(format_ticks({0, 0.5e6, 1e6, 1.5e6}, 0.5e6),
            (std::vector<std::string>{"0", "0.5M", "1M", "1.5M"}));
  EXPECT_EQ(format_ticks({0, 0.2, 0.4}, 0.2), (std::vector<std::string>{"0", "0.2", "0.4"}));
  EXPECT_EQ(format_ticks({-10, 0, 10}, 10), (std::vector<std::string>{kMinus + "10", "0", "10"}));
}

TEST(FormatCompact, ThreeSignificantDigits) {
  EXPECT_EQ(format_compact(1024), "1024");
  EXPECT_EQ(format_compact(12500), "12.5k");
  EXPECT_EQ(format_compact(256), "256");
  EXPECT_EQ(format_compact(0.25), "0.25");
  EXPECT_EQ(format_compact(2.5e6), "2.5M");
  EXPECT_EQ(format_compact(0), "0");
  EXPECT_EQ(format_compact(-3.5), kMinus + "3.5");
  EXPECT_EQ(format_compact(0.001234), "0.00123");
}

TEST(FormatValue, SignAndSuffix) {
  const ValueFormat pct{1, true, "%"};
  EXPECT_EQ(format_value(12.34, pct), "+12.3%");
  EXPECT_EQ(format_value(-4.0, pct), kMinus + "4.0%");
  EXPECT_EQ(format_value(0.01, pct), "0.0%");
  EXPECT_EQ(format_value(-0.01, pct), "0.0%");
  EXPECT_EQ(format_value(1500.0, ValueFormat{0, false, " tok/s"}), "1500 tok/s");
}

TEST(AxisLabel, TitleAndUnit) {
  EXPECT_EQ(axis_label(Axis{.title = "Power", .unit = "W"}), "Power (W)");
  EXPECT_EQ(axis_label(Axis{.title = "Concurrency", .unit = ""}), "Concurrency");
  EXPECT_EQ(axis_label(Axis{.title = "", .unit = "ms"}), "ms");
}

TEST(Palette, FirstStylesAreOkabeItoAndAllDistinct) {
  const SeriesStyle blue = series_style(0);
  EXPECT_NEAR(blue.line.r, 0.0, 1e-9);
  EXPECT_NEAR(blue.line.g, 114.0 / 255.0, 1e-9);
  EXPECT_NEAR(blue.line.b, 178.0 / 255.0, 1e-9);
  EXPECT_TRUE(blue.dashes.empty());
  const SeriesStyle orange = series_style(1);
  EXPECT_NEAR(orange.line.r, 230.0 / 255.0, 1e-9);
  std::set<std::tuple<int, int, int, int, std::vector<double>>> seen;
  for (std::size_t i = 0; i < 64; ++i) {
    const SeriesStyle s = series_style(i);
    seen.insert({static_cast<int>(s.line.r * 255), static_cast<int>(s.line.g * 255),
                 static_cast<int>(s.line.b * 255), static_cast<int>(s.marker), s.dashes});
  }
  EXPECT_EQ(seen.size(), 64u);
}

TEST(Palette, TextColoursAreReadableOnWhite) {
  for (std::size_t i = 0; i < 8; ++i) {
    const double contrast = 1.05 / (luminance(series_style(i).text) + 0.05);
    EXPECT_GE(contrast, 3.0) << "style " << i;
  }
}

TEST(Palette, DivergingIsCentredAndSymmetricInLightness) {
  const Rgb mid = diverging(0.0);
  EXPECT_GT(luminance(mid), 0.9);
  EXPECT_LT(luminance(diverging(-1.0)), 0.2);
  EXPECT_LT(luminance(diverging(1.0)), 0.25);
  EXPECT_GT(diverging(-1.0).b, diverging(-1.0).r);  // blue below zero
  EXPECT_GT(diverging(1.0).r, diverging(1.0).b);    // orange above
  for (double t : {0.1, 0.3, 0.5, 0.8}) {
    EXPECT_NEAR(luminance(diverging(t)), luminance(diverging(-t)), 0.12) << t;
    EXPECT_GT(luminance(diverging(t * 0.5)), luminance(diverging(t))) << "monotone " << t;
  }
  const Rgb clamped = diverging(5.0);
  EXPECT_DOUBLE_EQ(clamped.r, diverging(1.0).r);
  const Rgb nan = diverging(std::numeric_limits<double>::quiet_NaN());
  EXPECT_NEAR(nan.r, nan.b, 1e-9);  // grey
}

}  // namespace
}  // namespace dyno::chart
