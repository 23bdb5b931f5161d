#include "load/flag_numbers.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace dyno::load {

namespace {

/// The value as the message shows it: quoted when it is not a plain number, cut when long.
std::string shown(const std::string& text, bool quote) {
  std::string t = text.size() > 40 ? text.substr(0, 40) + "…" : text;
  return quote ? "'" + t + "'" : t;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string integer_range(std::uint64_t lo, std::uint64_t hi) {
  return "expected an integer between " + std::to_string(lo) + " and " + std::to_string(hi);
}

std::string number_range(double lo, double hi, bool lo_open, bool hi_open) {
  if (!lo_open && !hi_open) {
    return "expected a number between " + number_text(lo) + " and " + number_text(hi);
  }
  return std::string("expected a number ") + (lo_open ? "greater than " : "at least ") +
         number_text(lo) + (hi_open ? " and less than " : " and at most ") + number_text(hi);
}

}  // namespace

std::string number_text(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) {
    return std::to_string(static_cast<std::int64_t>(v));
  }
  std::ostringstream s;
  s.precision(15);
  s << v;
  return s.str();
}

std::uint64_t parse_integer(const std::string& text, std::uint64_t lo, std::uint64_t hi) {
  const std::string expected = " (" + integer_range(lo, hi) + ")";
  std::size_t i = text.empty() || text[0] != '+' ? 0 : 1;
  if (!text.empty() && text[0] == '-' && text.size() > 1 &&
      text.find_first_not_of("0123456789", 1) == std::string::npos) {
    throw FlagValueError(shown(text, false) + " is negative" + expected);
  }
  if (i >= text.size() || text.find_first_not_of("0123456789", i) != std::string::npos) {
    throw FlagValueError(shown(text, true) + " is not an integer" + expected);
  }
  if (text[i] == '0' && i + 1 < text.size()) {
    throw FlagValueError(shown(text, true) +
                         " has a leading zero (octal to some tools); write it in plain decimal" +
                         expected);
  }
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t v = 0;
  bool overflow = false;
  for (; i < text.size(); ++i) {
    const auto digit = static_cast<std::uint64_t>(text[i] - '0');
    if (v > (kMax - digit) / 10) {
      overflow = true;
      break;
    }
    v = v * 10 + digit;
  }
  if (overflow || v > hi) throw FlagValueError(shown(text, false) + " is too large" + expected);
  if (v < lo) throw FlagValueError(shown(text, false) + " is too small" + expected);
  return v;
}

double parse_number(const std::string& text, double lo, double hi, bool lo_open, bool hi_open) {
  const std::string expected = " (" + number_range(lo, hi, lo_open, hi_open) + ")";
  const std::string l = lower(text);
  const std::size_t sign = !l.empty() && (l[0] == '+' || l[0] == '-') ? 1 : 0;
  if (l.compare(sign, 3, "nan") == 0 || l.compare(sign, 3, "inf") == 0) {
    throw FlagValueError(shown(text, false) + " is not a finite number" + expected);
  }
  // Decimal forms only: strtod would also read hexadecimal ("0x1p3").
  if (l.empty() || l.find_first_not_of("0123456789+-.e") != std::string::npos) {
    throw FlagValueError(shown(text, true) + " is not a number" + expected);
  }
  if (l[sign] == '0' && sign + 1 < l.size() &&
      std::isdigit(static_cast<unsigned char>(l[sign + 1]))) {
    throw FlagValueError(shown(text, true) +
                         " has a leading zero (octal to some tools); write it in plain decimal" +
                         expected);
  }
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) {
    throw FlagValueError(shown(text, true) + " is not a number" + expected);
  }
  if (errno == ERANGE && std::fabs(v) > 1.0) {
    throw FlagValueError(shown(text, false) + " is too large" + expected);
  }
  if (!std::isfinite(v) || v > hi || (hi_open && v >= hi)) {
    throw FlagValueError(shown(text, false) + " is too large" + expected);
  }
  if (v < lo || (lo_open && v <= lo)) {
    throw FlagValueError(shown(text, false) + " is too small" + expected);
  }
  return v;
}

double parse_seconds(const std::string& text, bool zero_ok) {
  const std::string expected = std::string(" (expected ") + (zero_ok ? "0 (off) or " : "") +
                               "a duration from " + number_text(kMinSeconds) + " to " +
                               number_text(kMaxSeconds) + " s)";
  double v = 0;
  try {
    v = parse_number(text, 0.0, kMaxSeconds);
  } catch (const FlagValueError& e) {
    // The same reason, with the range of a duration.
    std::string m = e.what();
    const auto paren = m.rfind(" (expected");
    throw FlagValueError(m.substr(0, paren) + expected);
  }
  if (v == 0.0 && !zero_ok) throw FlagValueError(shown(text, false) + " is too small" + expected);
  if (v != 0.0 && v < kMinSeconds) {
    throw FlagValueError(shown(text, false) + " is below 1 ms" + expected);
  }
  return v;
}

std::pair<std::string, std::string> split_unit(const std::string& text) {
  if (text.size() >= 2 && text.compare(text.size() - 2, 2, "ms") == 0) {
    return {text.substr(0, text.size() - 2), "ms"};
  }
  std::size_t n = text.size();
  while (n > 0 && std::isalpha(static_cast<unsigned char>(text[n - 1])) != 0 &&
         text[n - 1] != 'e' && text[n - 1] != 'E') {
    --n;
  }
  return {text.substr(0, n), text.substr(n)};
}

}  // namespace dyno::load
