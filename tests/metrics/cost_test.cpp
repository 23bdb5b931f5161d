#include "metrics/cost.h"

#include <gtest/gtest.h>

#include <limits>

namespace dyno::metrics {
namespace {

TEST(Cost, DollarsPerMillionTokensFromTheHourlyPriceAndTheRate) {
  // $3.60 per GPU-hour is $0.001 a second; at 1,000 tok/s a million tokens take 1,000 s.
  EXPECT_DOUBLE_EQ(*cost_per_mtok(3.6, 1, 1000.0), 1.0);
  // Two GPUs cost twice as much for the same tokens.
  EXPECT_DOUBLE_EQ(*cost_per_mtok(3.6, 2, 1000.0), 2.0);
  EXPECT_DOUBLE_EQ(*cost_per_mtok(2.0, 1, 500.0), 2.0 / 3600.0 / 500.0 * 1e6);
  EXPECT_DOUBLE_EQ(*cost_per_mtok(0.0, 1, 500.0), 0.0);
}

TEST(Cost, NoFigureWithoutAPriceARateOrAGpu) {
  EXPECT_FALSE(cost_per_mtok(std::nullopt, 1, 1000.0));
  EXPECT_FALSE(cost_per_mtok(3.6, 1, std::nullopt));
  EXPECT_FALSE(cost_per_mtok(3.6, 1, 0.0));
  EXPECT_FALSE(cost_per_mtok(3.6, 0, 1000.0));
  EXPECT_FALSE(cost_per_mtok(-1.0, 1, 1000.0));
  EXPECT_FALSE(cost_per_mtok(std::numeric_limits<double>::infinity(), 1, 1000.0));
}

TEST(Cost, JoulesPerMillionTokens) {
  EXPECT_DOUBLE_EQ(*joules_per_mtok(500.0, 1000.0), 500000.0);
  EXPECT_FALSE(joules_per_mtok(std::nullopt, 1000.0));
  EXPECT_FALSE(joules_per_mtok(500.0, 0.0));
  EXPECT_FALSE(joules_per_mtok(500.0, std::nullopt));
}

TEST(Cost, AHostWithoutGpusCountsAsOne) {
  EXPECT_EQ(normalising_gpus(0), 1.0);
  EXPECT_EQ(normalising_gpus(8), 8.0);
}

}  // namespace
}  // namespace dyno::metrics
