// A campaign's figures are values runs had (protocol/campaign.h figure_spread): the median of an
// even number of repetitions is the lower middle value, never a mean of two runs.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "protocol/campaign.h"

namespace json = boost::json;
using dyno::protocol::figure_spread;

namespace {

TEST(FigureSpread, AnEvenCountTakesTheLowerMiddleValue) {
  // Two runs: 2488 and 2520 ms. The old mean (2504) is a TTFT no run had.
  json::object s = figure_spread({2520.0, 2488.0}, json::value(2488.0));
  EXPECT_EQ(s.at("min"), 2488.0);
  EXPECT_EQ(s.at("median"), 2488.0);
  EXPECT_EQ(s.at("max"), 2520.0);
  EXPECT_EQ(s.at("selected"), 2488.0);
  s = figure_spread({4.0, 1.0, 3.0, 2.0}, json::value(3.0));
  EXPECT_EQ(s.at("median"), 2.0);
  EXPECT_EQ(s.at("selected"), 3.0);  // the selected run's own value, whatever the median
}

TEST(FigureSpread, AnOddCountTakesTheMiddleValue) {
  const json::object s = figure_spread({5.0, 1.0, 3.0}, json::value(5.0));
  EXPECT_EQ(s.at("median"), 3.0);
  EXPECT_EQ(s.at("selected"), 5.0);
}

TEST(FigureSpread, NonFiniteValuesAndMissingSelectionAreNull) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  json::object s = figure_spread({nan, 2.0}, json::value(nullptr));
  EXPECT_EQ(s.at("median"), 2.0);
  EXPECT_TRUE(s.at("selected").is_null());
  s = figure_spread({}, json::value(std::numeric_limits<double>::infinity()));
  EXPECT_TRUE(s.at("min").is_null());
  EXPECT_TRUE(s.at("median").is_null());
  EXPECT_TRUE(s.at("max").is_null());
  EXPECT_TRUE(s.at("selected").is_null());
  EXPECT_EQ(figure_spread({7.0}, json::value(std::int64_t{7})).at("selected"), 7);
}

}  // namespace
