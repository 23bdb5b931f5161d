#include "json/json_text.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <limits>

namespace json = boost::json;

TEST(JsonText, NumbersUseTheShortestRoundTripForm) {
  const json::value v =
      json::array{0.7, 0.95, 45.5, 1e-5, 0.0, 3, -2, 1e300, std::uint64_t{18446744073709551615ull}};
  EXPECT_EQ(dyno::json_text::compact(v),
            "[0.7,0.95,45.5,1e-05,0.0,3,-2,1e+300,18446744073709551615]");
  for (double d : {0.1, 1.0 / 3.0, 123456.789, 6.02214076e23}) {
    EXPECT_EQ(json::parse(dyno::json_text::compact(json::value(d))).to_number<double>(), d);
  }
}

TEST(JsonText, NonFiniteBecomesNull) {
  const json::value v = json::array{std::nan(""), std::numeric_limits<double>::infinity()};
  EXPECT_EQ(dyno::json_text::compact(v), "[null,null]");
}

TEST(JsonText, StringsAreEscaped) {
  const json::value v = json::object{{"k\"ey", "a\nb<script>\x01"}};
  const std::string text = dyno::json_text::compact(v);
  EXPECT_EQ(json::parse(text), v);
  EXPECT_EQ(text, R"({"k\"ey":"a\nb<script>\u0001"})");
}

TEST(JsonText, PrettyIndentsObjectsAndKeepsScalarArraysOnOneLine) {
  const json::value v =
      json::object{{"a", 1},
                   {"b", json::array{1, 2}},
                   {"c", json::object{{"d", json::array{json::object{{"e", true}}}}}},
                   {"f", json::object{}},
                   {"g", json::array{}}};
  EXPECT_EQ(dyno::json_text::pretty(v),
            "{\n  \"a\": 1,\n  \"b\": [1, 2],\n  \"c\": {\n    \"d\": [\n      {\n"
            "        \"e\": true\n      }\n    ]\n  },\n  \"f\": {},\n  \"g\": []\n}\n");
}
