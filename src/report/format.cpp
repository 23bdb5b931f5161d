#include "report/format.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace dyno::report {

std::string number(std::optional<double> v, int decimals) {
  if (!v || !std::isfinite(*v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, std::fabs(*v));
  std::string digits = buf;
  const auto dot = digits.find('.');
  std::string int_part = digits.substr(0, dot);
  const std::string frac = dot == std::string::npos ? "" : digits.substr(dot);
  std::string grouped;
  const std::size_t n = int_part.size();
  for (std::size_t i = 0; i < n; ++i) {
    grouped += int_part[i];
    const std::size_t left = n - 1 - i;
    if (left > 0 && left % 3 == 0 && n > 3) grouped += ',';
  }
  const bool negative = *v < 0 && std::stod(digits) != 0.0;
  return (negative ? "-" : "") + grouped + frac;
}

std::string signed_pct(std::optional<double> v, int decimals) {
  if (!v || !std::isfinite(*v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, std::fabs(*v));
  const bool zero = std::stod(buf) == 0.0;
  return std::string(zero ? "±" : *v > 0 ? "+" : "\u2212") + buf + " %";
}

std::string signed_number(std::optional<double> v, int decimals) {
  if (!v || !std::isfinite(*v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, std::fabs(*v));
  const bool zero = std::stod(buf) == 0.0;
  return std::string(zero ? "±" : *v > 0 ? "+" : "\u2212") + buf;
}

std::string signed_pp(std::optional<double> v, int decimals) {
  if (!v || !std::isfinite(*v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, std::fabs(*v));
  const bool zero = std::stod(buf) == 0.0;
  return std::string(zero ? "±" : *v > 0 ? "+" : "\u2212") + buf + " pp";
}

std::string gib(std::optional<double> bytes) {
  if (!bytes || !std::isfinite(*bytes)) return "n/a";
  return number(*bytes / (1024.0 * 1024.0 * 1024.0), 2) + " GiB";
}

std::string usd(std::optional<double> v) {
  if (!v || !std::isfinite(*v)) return "n/a";
  if (*v >= 1.0 || *v == 0.0) return "$" + number(*v, 2);
  // Three significant digits below a dollar: 0.123, 0.0123, 0.00123.
  int decimals = 2;
  for (double x = *v; x < 0.1 && decimals < 12; x *= 10.0) ++decimals;
  return "$" + number(*v, decimals);
}

std::string short_hash(const std::string& s) {
  // Only a hash is shortened: a parameter list or a name is shown whole (its cut would read as
  // a value of its own, e.g. "[1.0,2.0,4.0" for "[1.0,2.0,4.0,8.0]").
  const bool hex = std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  });
  return s.size() > 16 && hex ? s.substr(0, 12) : s;
}

std::string markdown_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    switch (c) {
      case '\\':
      case '`':
      case '*':
      case '_':
      case '[':
      case ']':
      case '|':
      case '#':
      case '~':
        out += '\\';
        out += c;
        break;
      case '<':  // no HTML tag or autolink can start: the backslash makes it a plain '<'
        out += "\\<";
        break;
      case '>':  // plain text unless it would open a block quote
        out += out.empty() ? "\\>" : ">";
        break;
      case '&':  // plain text unless it could start an entity (&gt; &#62;)
        if (i + 1 < text.size() &&
            (std::isalnum(static_cast<unsigned char>(text[i + 1])) || text[i + 1] == '#')) {
          out += '\\';
        }
        out += '&';
        break;
      case '\n':
      case '\r':
        out += ' ';
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace dyno::report
