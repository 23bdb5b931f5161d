#include "app/flag_values.h"

#include <CLI/CLI.hpp>
#include <sstream>

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

void check_slo(const std::string& text) { (void)load::parse_slo(text); }

}  // namespace dyno::app::flags
