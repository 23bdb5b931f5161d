// Energy arithmetic on synthetic traces (docs/metrics.md "Energy and power").
#include "telemetry/energy.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dyno::telemetry {
namespace {

constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kS = 1'000'000'000;

/// A device at constant power `watts`, sampled every `period` ns over [0, duration]: the
/// counter steps every `counter_step` ns (like NVML's ~100 ms updates).
std::vector<TimedReading> constant_power(double watts, std::int64_t duration, std::int64_t period,
                                         std::int64_t counter_step) {
  std::vector<TimedReading> s;
  for (std::int64_t t = 0; t <= duration; t += period) {
    TimedReading r;
    r.t_ns = t;
    const std::int64_t stepped = t / counter_step * counter_step;
    r.reading.energy_j = 1000.0 + watts * static_cast<double>(stepped) * 1e-9;
    r.reading.power_instant_w = watts;
    r.reading.temp_gpu_c = 50.0 + static_cast<double>(t / kS);
    r.reading.memory_used_bytes = 1000 + t / kS;
    s.push_back(r);
  }
  return s;
}

TEST(Energy, ConstantPowerGivesPowerTimesTime) {
  const auto s = constant_power(300.0, 20 * kS, 100 * kMs, 100 * kMs);
  const WindowFigures f = window_figures(s, 2 * kS, 12 * kS);
  ASSERT_TRUE(f.energy_j);
  EXPECT_EQ(f.energy_source, "counter");
  EXPECT_NEAR(*f.energy_j, 3000.0, 3.0);  // 300 W × 10 s within 0.1 %
  EXPECT_NEAR(*f.energy_integral_j, 3000.0, 3.0);
  EXPECT_EQ(f.integral_source, "power_instant");
  EXPECT_NEAR(*f.power_mean_w, 300.0, 0.3);
  EXPECT_NEAR(*f.disagreement, 0.0, 0.001);
  EXPECT_TRUE(f.flags.empty());
  EXPECT_NEAR(*f.counter_period_s, 0.1, 1e-9);
  EXPECT_EQ(*f.temp_max_c, 62.0);
  EXPECT_EQ(*f.memory_used_peak_bytes, 1012);
}

/// A device whose power is `watts[i]` at time i·period.
std::vector<TimedReading> power_series(const std::vector<double>& watts, std::int64_t period,
                                       std::int64_t offset = 0) {
  std::vector<TimedReading> s;
  for (std::size_t i = 0; i < watts.size(); ++i) {
    TimedReading r;
    r.t_ns = offset + static_cast<std::int64_t>(i) * period;
    r.reading.power_instant_w = watts[i];
    s.push_back(r);
  }
  return s;
}

TEST(Energy, ThePeakOfSummedPowerIsOneInstantsSumNotTheSumOfPeaks) {
  // Two cards peak at different ticks: 400 W + 100 W, then 100 W + 400 W. Each card's peak is
  // 400 W (their sum 800 W, a power no instant drew); the summed reading peaks at 500 W.
  const std::int64_t p = 100 * kMs;
  const auto a = power_series({100, 400, 100, 100}, p);
  const auto b = power_series({100, 100, 400, 100}, p);
  EXPECT_EQ(*window_figures(a, 0, 3 * p).power_peak_w + *window_figures(b, 0, 3 * p).power_peak_w,
            800.0);
  EXPECT_EQ(summed_power_peak({a, b}, 0, 3 * p), 500.0);
  // Only the window counts; one card alone is its own peak.
  EXPECT_EQ(summed_power_peak({a, b}, 3 * p, 3 * p), 200.0);
  EXPECT_EQ(summed_power_peak({a}, 0, 3 * p), 400.0);
  // Samples at other times: each card's latest reading is held; a time before the second
  // card's first reading is left out (it would be one card's power, not the sum).
  const auto late = power_series({50, 50, 900}, p, p / 2);    // at 50, 150, 250 ms
  EXPECT_EQ(summed_power_peak({a, late}, 0, 3 * p), 1000.0);  // 100 + 900 from 250 ms
  EXPECT_FALSE(summed_power_peak({a, power_series({}, p)}, 0, 3 * p).has_value());
  EXPECT_FALSE(summed_power_peak({}, 0, 3 * p).has_value());
}

TEST(Energy, WindowEdgesAreInterpolated) {
  // Samples every 1 s; a window from 0.25 s to 2.75 s at 100 W is 250 J exactly.
  std::vector<std::pair<std::int64_t, double>> counter = {
      {0, 0}, {kS, 100}, {2 * kS, 200}, {3 * kS, 300}};
  EXPECT_NEAR(*counter_energy(counter, kS / 4, 2 * kS + 3 * kS / 4, nullptr), 250.0, 1e-9);
  std::vector<std::pair<std::int64_t, double>> power = {{0, 100}, {kS, 100}, {2 * kS, 300}};
  // Trapezoid: 0.5..1 at 100 W = 50 J; 1..1.5 from 100 to 200 W = 75 J.
  EXPECT_NEAR(*integrate_power(power, kS / 2, kS + kS / 2), 125.0, 1e-9);
  // Samples that do not cover the window give no figure (never 0).
  EXPECT_FALSE(integrate_power(power, kS, 3 * kS).has_value());
}

TEST(Energy, CounterResetIsFlaggedNotNegative) {
  std::vector<std::pair<std::int64_t, double>> counter = {
      {0, 500}, {kS, 600}, {2 * kS, 10}, {3 * kS, 110}};
  bool reset = false;
  EXPECT_NEAR(*counter_energy(counter, 0, 3 * kS, &reset), 200.0, 1e-9);
  EXPECT_TRUE(reset);
}

TEST(Energy, DisagreementAboveFifteenPercentIsFlaggedAndTheCounterKept) {
  auto s = constant_power(300.0, 20 * kS, 100 * kMs, 100 * kMs);
  for (auto& r : s) r.reading.power_instant_w = 240.0;  // the integral says 20 % less
  const WindowFigures f = window_figures(s, 2 * kS, 12 * kS);
  EXPECT_NEAR(*f.disagreement, 0.2, 0.002);
  EXPECT_NE(std::find(f.flags.begin(), f.flags.end(), "energy_sources_disagree"), f.flags.end());
  EXPECT_NEAR(*f.energy_j, 3000.0, 3.0);
  EXPECT_EQ(f.energy_source, "counter");
  // 10 % apart: no flag.
  for (auto& r : s) r.reading.power_instant_w = 270.0;
  EXPECT_TRUE(window_figures(s, 2 * kS, 12 * kS).flags.empty());
}

TEST(Energy, AWindowShorterThanTheCounterPeriodIsFlagged) {
  // Counter updates every 1 s, window 3 s < 10 periods.
  const auto s = constant_power(200.0, 20 * kS, 100 * kMs, kS);
  const WindowFigures f = window_figures(s, 2 * kS, 5 * kS);
  EXPECT_NE(std::find(f.flags.begin(), f.flags.end(), "window_too_short"), f.flags.end());
}

TEST(Energy, WithoutACounterThePowerIntegralIsUsed) {
  auto s = constant_power(150.0, 10 * kS, 100 * kMs, 100 * kMs);
  for (auto& r : s) {
    r.reading.energy_j.reset();
    r.reading.power_average_w = r.reading.power_instant_w;
    r.reading.power_instant_w.reset();
  }
  const WindowFigures f = window_figures(s, kS, 9 * kS);
  EXPECT_EQ(f.energy_source, "power_average");
  EXPECT_NEAR(*f.energy_j, 1200.0, 1e-6);
  EXPECT_FALSE(f.disagreement.has_value());
}

TEST(Energy, NoPowerAtAllMeansNoFigureNotZero) {
  std::vector<TimedReading> s(5);
  for (std::size_t i = 0; i < s.size(); ++i) s[i].t_ns = static_cast<std::int64_t>(i) * kS;
  const WindowFigures f = window_figures(s, kS, 3 * kS);
  EXPECT_FALSE(f.energy_j.has_value());
  EXPECT_FALSE(f.power_mean_w.has_value());
  EXPECT_FALSE(f.power_p95_w.has_value());
  EXPECT_EQ(f.energy_source, "");
}

TEST(Energy, IdleSubtraction) {
  // 3000 J over 10 s with a 100 W idle floor and 1000 tokens: 2 J/token net, 3 J/token gross.
  EXPECT_NEAR(*net_joules_per_token(3000.0, 100.0, 10.0, 1000), 2.0, 1e-12);
  EXPECT_FALSE(net_joules_per_token(3000.0, std::nullopt, 10.0, 1000).has_value());
  EXPECT_FALSE(net_joules_per_token(3000.0, 100.0, 10.0, 0).has_value());
}

}  // namespace
}  // namespace dyno::telemetry
