#include "app/flag_values.h"

#include <CLI/CLI.hpp>
#include <sstream>

#include "error/error.h"
#include "load/plan.h"

namespace dyno::app::flags {

namespace {

/// A CLI11 transform from a checked parse: rewrites the text to `canonical(text)`, or returns
/// the parse's message (CLI11 prefixes the flag's name).
template <class F>
CLI::Validator transform(F canonical, std::string description) {
  return CLI::Validator(
      [canonical](std::string& text) -> std::string {
        try {
          text = canonical(text);
        } catch (const FlagValueError& e) {
          return e.what();
        }
        return {};
      },
      std::move(description));
}

}  // namespace

CLI::Validator integer(std::uint64_t lo, std::uint64_t hi) {
  return transform(
      [lo, hi](const std::string& text) { return std::to_string(parse_integer(text, lo, hi)); },
      "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

CLI::Validator number(double lo, double hi, bool lo_open, bool hi_open) {
  return transform(
      [lo, hi, lo_open, hi_open](const std::string& text) {
        std::ostringstream s;
        s.precision(17);
        s << parse_number(text, lo, hi, lo_open, hi_open);
        return s.str();
      },
      std::string(lo_open ? "in (" : "in [") + number_text(lo) + ", " + number_text(hi) +
          (hi_open ? ")" : "]"));
}

CLI::Validator seconds(bool zero_ok) {
  return transform(
      [zero_ok](const std::string& text) {
        std::ostringstream s;
        s.precision(17);
        s << parse_seconds(text, zero_ok);
        return s.str();
      },
      std::string(zero_ok ? "0 or " : "") + "in [" + number_text(kMinSeconds) + ", " +
          number_text(kMaxSeconds) + "]");
}

namespace {

double parse_duration_ms(const std::string& value, const std::string& key) {
  const auto [number, unit] = split_unit(value);
  if (!unit.empty() && unit != "ms" && unit != "s") {
    throw UsageError("--slo: unit '" + unit + "' in " + key + "=" + value + "; use ms or s");
  }
  const double scale = unit == "s" ? 1.0 : 0.001;  // to seconds
  try {
    const double seconds = parse_number(number, 0, kMaxSeconds / scale) * scale;
    if (seconds < kMinSeconds * (1 - 1e-12)) {
      throw FlagValueError("is below 1 ms (an objective is from 1 ms to 30 days)");
    }
    return seconds * 1000.0;
  } catch (const FlagValueError& e) {
    throw UsageError("--slo: " + key + "=" + value + ": " + e.what() + "; write e.g. " + key +
                     "=500ms or " + key + "=2s");
  }
}

}  // namespace

void check_slo(const std::string& text) { (void)load::parse_slo(text, &parse_duration_ms); }

}  // namespace dyno::app::flags
