#include <gtest/gtest.h>

#include "error/error.h"
#include "load/plan.h"

using dyno::UsageError;
using dyno::load::parse_slo;

TEST(ParseSlo, UnitsAndKeys) {
  const auto slo = parse_slo("ttft=500ms,tpot=50,e2e=2.5s");
  EXPECT_DOUBLE_EQ(*slo.ttft_s, 0.5);
  EXPECT_DOUBLE_EQ(*slo.tpot_s, 0.05);
  EXPECT_DOUBLE_EQ(*slo.e2e_s, 2.5);
  const auto only = parse_slo("e2e=1s");
  EXPECT_FALSE(only.ttft_s.has_value());
  EXPECT_TRUE(only.any());
}

TEST(ParseSlo, ErrorsNameTheFlagAndTheFix) {
  for (const char* bad : {"ttft", "ttft=abc", "ttft=5min", "itl=5ms", "ttft=-1ms", ""}) {
    try {
      parse_slo(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--slo"), std::string::npos) << e.what();
    }
  }
}
