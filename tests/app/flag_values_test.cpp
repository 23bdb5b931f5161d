// The checked parser behind every numeric flag (app/flag_values.h), alone and as CLI11
// transforms: what CLI11 would wrap, misread or accept is refused with a message naming it.
#include "app/flag_values.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

namespace flags = dyno::app::flags;
using flags::FlagValueError;

namespace {

std::string integer_error(const std::string& text, std::uint64_t lo, std::uint64_t hi) {
  try {
    flags::parse_integer(text, lo, hi);
  } catch (const FlagValueError& e) {
    return e.what();
  }
  return "";
}

std::string number_error(const std::string& text, double lo, double hi, bool lo_open = false,
                         bool hi_open = false) {
  try {
    flags::parse_number(text, lo, hi, lo_open, hi_open);
  } catch (const FlagValueError& e) {
    return e.what();
  }
  return "";
}

TEST(ParseInteger, AcceptsPlainDecimalsInRange) {
  EXPECT_EQ(flags::parse_integer("0", 0, 10), 0u);
  EXPECT_EQ(flags::parse_integer("+7", 0, 10), 7u);
  EXPECT_EQ(flags::parse_integer("18446744073709551615", 0, flags::kMaxU64), flags::kMaxU64);
}

TEST(ParseInteger, RefusesWhatCli11WouldWrapOrMisread) {
  EXPECT_EQ(integer_error("-1", 0, 100), "-1 is negative (expected an integer between 0 and 100)");
  EXPECT_EQ(integer_error("-0", 0, 100), "-0 is negative (expected an integer between 0 and 100)");
  EXPECT_EQ(integer_error("101", 0, 100),
            "101 is too large (expected an integer between 0 and 100)");
  EXPECT_EQ(integer_error("0", 1, 100), "0 is too small (expected an integer between 1 and 100)");
  EXPECT_EQ(integer_error("18446744073709551616", 0, flags::kMaxU64),
            "18446744073709551616 is too large (expected an integer between 0 and "
            "18446744073709551615)");
  for (const char* bad : {"0x10", "1e3", "7.0", "", "+", "abc", " 7", "7 ", "--1", "1-"}) {
    EXPECT_NE(integer_error(bad, 0, 100).find("is not an integer"), std::string::npos) << bad;
  }
}

// Issue 32 (16): "-c 010" was read as 10 where other tools read 8; a leading zero is refused
// in every number of the command line, so no reader can take it either way.
TEST(ParseInteger, RefusesALeadingZero) {
  EXPECT_EQ(integer_error("010", 0, 100),
            "'010' has a leading zero (octal to some tools); write it in plain decimal (expected "
            "an integer between 0 and 100)");
  EXPECT_NE(integer_error("+010", 0, 100).find("leading zero"), std::string::npos);
  EXPECT_NE(integer_error("00", 0, 100).find("leading zero"), std::string::npos);
  EXPECT_EQ(flags::parse_integer("+0", 0, 10), 0u);
  EXPECT_EQ(flags::parse_integer("10", 0, 10), 10u);
}

TEST(ParseNumber, RefusesALeadingZeroButNotAFraction) {
  EXPECT_NE(number_error("010", 0, 100).find("has a leading zero"), std::string::npos);
  EXPECT_NE(number_error("00.5", 0, 100).find("has a leading zero"), std::string::npos);
  EXPECT_NE(number_error("+01e3", 0, 1e4).find("has a leading zero"), std::string::npos);
  EXPECT_NE(number_error("0x10", 0, 100).find("is not a number"), std::string::npos);
  EXPECT_DOUBLE_EQ(flags::parse_number("0.5", 0, 1), 0.5);
  EXPECT_DOUBLE_EQ(flags::parse_number("0e3", 0, 1), 0.0);
  EXPECT_DOUBLE_EQ(flags::parse_number("10.05", 0, 100), 10.05);
}

// Issue 32 (16): "--idle-timeout 1e-300" acted as off. A duration that is not 0 is at least 1 ms.
TEST(ParseSeconds, RefusesDurationsBelowOneMillisecondButZeroWhereAllowed) {
  const auto error = [](const std::string& text, bool zero_ok) -> std::string {
    try {
      flags::parse_seconds(text, zero_ok);
    } catch (const FlagValueError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error("1e-300", true),
            "1e-300 is below 1 ms (expected 0 (off) or a duration from 0.001 to 2592000 s)");
  EXPECT_EQ(error("0.0009", false),
            "0.0009 is below 1 ms (expected a duration from 0.001 to 2592000 s)");
  EXPECT_EQ(error("0", false), "0 is too small (expected a duration from 0.001 to 2592000 s)");
  EXPECT_EQ(error("nan", true),
            "nan is not a finite number (expected 0 (off) or a duration from 0.001 to 2592000 s)");
  EXPECT_EQ(error("3e6", true),
            "3e6 is too large (expected 0 (off) or a duration from 0.001 to 2592000 s)");
  EXPECT_DOUBLE_EQ(flags::parse_seconds("0", true), 0.0);
  EXPECT_DOUBLE_EQ(flags::parse_seconds("0.001", false), 0.001);
  EXPECT_DOUBLE_EQ(flags::parse_seconds("2592000", false), 2592000.0);
}

TEST(ParseNumber, AcceptsFiniteDecimalsInRange) {
  EXPECT_DOUBLE_EQ(flags::parse_number("0.5", 0, 1), 0.5);
  EXPECT_DOUBLE_EQ(flags::parse_number("1e3", 0, 1e4), 1000.0);
  EXPECT_DOUBLE_EQ(flags::parse_number("+.25", 0, 1), 0.25);
  EXPECT_DOUBLE_EQ(flags::parse_number("1", 0, 1), 1.0);
  EXPECT_DOUBLE_EQ(flags::parse_number("0", 0, 1), 0.0);
}

TEST(ParseNumber, RefusesNanInfHexAndOutOfRange) {
  EXPECT_EQ(number_error("nan", 0, 10, true),
            "nan is not a finite number (expected a number greater than 0 and at most 10)");
  EXPECT_EQ(number_error("-INF", 0, 10),
            "-INF is not a finite number (expected a number "
            "between 0 and 10)");
  EXPECT_EQ(number_error("infinity", 0, 10).rfind("infinity is not a finite number", 0), 0u);
  EXPECT_NE(number_error("0x1p3", 0, 10).find("is not a number"), std::string::npos);
  EXPECT_NE(number_error("1.5.2", 0, 10).find("is not a number"), std::string::npos);
  EXPECT_NE(number_error("", 0, 10).find("is not a number"), std::string::npos);
  EXPECT_EQ(number_error("0", 0, 10, true),
            "0 is too small (expected a number greater than 0 and at most 10)");
  EXPECT_EQ(number_error("1e10", 0, flags::kMaxSeconds, true),
            "1e10 is too large (expected a number greater than 0 and at most 2592000)");
  EXPECT_EQ(number_error("1e999", 0, 10),
            "1e999 is too large (expected a number between 0 and "
            "10)");
  EXPECT_EQ(number_error("1", 0.5, 1, true, true),
            "1 is too large (expected a number greater than 0.5 and less than 1)");
  EXPECT_EQ(number_error("-0.5", 0, 1), "-0.5 is too small (expected a number between 0 and 1)");
}

TEST(FlagValidators, Cli11ParsesOnlyCheckedText) {
  std::uint64_t warmup = 0;
  std::optional<std::uint32_t> concurrency;
  double timeout = 1.0;
  CLI::App app;
  app.add_option("--warmup", warmup)->transform(flags::integer(0, 1000));
  app.add_option("-c,--concurrency", concurrency)->transform(flags::integer(1, 100));
  app.add_option("--timeout", timeout)->transform(flags::seconds());
  const auto parse_error = [&app](std::vector<std::string> args) -> std::string {
    std::reverse(args.begin(), args.end());  // CLI11 takes them back to front
    try {
      app.parse(args);
    } catch (const CLI::ParseError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(parse_error({"--warmup", "-1"}),
            "--warmup: -1 is negative (expected an integer between 0 and 1000)");
  EXPECT_EQ(parse_error({"-c", "0"}),
            "--concurrency: 0 is too small (expected an integer between 1 and 100)");
  EXPECT_EQ(parse_error({"--timeout", "nan"}),
            "--timeout: nan is not a finite number (expected a duration from 0.001 to 2592000 "
            "s)");
  EXPECT_EQ(parse_error({"--timeout", "1e-300"}),
            "--timeout: 1e-300 is below 1 ms (expected a duration from 0.001 to 2592000 s)");
  EXPECT_EQ(parse_error({"-c", "010"}),
            "--concurrency: '010' has a leading zero (octal to some tools); write it in plain "
            "decimal (expected an integer between 1 and 100)");
  EXPECT_EQ(parse_error({"--warmup", "10", "-c", "+8", "--timeout", "2.5"}), "");
  EXPECT_EQ(warmup, 10u);
  EXPECT_EQ(concurrency, 8u);
  EXPECT_DOUBLE_EQ(timeout, 2.5);
}

TEST(NumberText, IntegersWithoutExponent) {
  EXPECT_EQ(flags::number_text(2592000), "2592000");
  EXPECT_EQ(flags::number_text(0.5), "0.5");
  EXPECT_EQ(flags::number_text(1e10), "10000000000");
}

}  // namespace
