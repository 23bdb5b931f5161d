#include "workload/regex_limits.h"

#include <gtest/gtest.h>

#include <string>

namespace dyno::workload {
namespace {

TEST(RegexLimits, OrdinaryPatternsPass) {
  for (const char* ok : {"^answer: (\\d+)$", "(a)\\1", "(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)\\10",
                         "a{2}", "a{2,}", "a{0,1000}", "x{", "{abc}", "\\{99999999}", "[0-9]{3}"}) {
    EXPECT_EQ(regex_pattern_problem(ok), "") << ok;
  }
}

TEST(RegexLimits, NumbersThatOverflowLibstdcxxAreRefused) {
  EXPECT_EQ(regex_pattern_problem("(a)\\100"), "a backreference numbered over 99");
  EXPECT_EQ(regex_pattern_problem("(a)\\9999999999999999999999"),
            "a backreference numbered over 99");
  EXPECT_EQ(regex_pattern_problem("a{1001}"), "a repetition count over 1000");
  EXPECT_EQ(regex_pattern_problem("a{1,99999999999999999999}"), "a repetition count over 1000");
  EXPECT_EQ(regex_pattern_problem("a{99999999999999999999,}"), "a repetition count over 1000");
}

TEST(RegexLimits, LengthAndBackreferencesByCaller) {
  EXPECT_EQ(regex_pattern_problem(std::string(1024, 'a')), "");
  EXPECT_EQ(regex_pattern_problem(std::string(1025, 'a')),
            "a pattern of 1025 bytes; at most 1024 are supported");
  EXPECT_EQ(regex_pattern_problem(std::string(20, 'a'), {.max_bytes = 10}),
            "a pattern of 20 bytes; at most 10 are supported");
  EXPECT_EQ(regex_pattern_problem("(a)\\1", {.backreferences = false}),
            "the pattern has a backreference (\\1-\\9), not supported here");
  EXPECT_EQ(regex_pattern_problem("\\\\1", {.backreferences = false}), "");  // an escaped '\'
}

}  // namespace
}  // namespace dyno::workload
