#include "scrub/terminal_text.h"

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "json/utf8.h"
#include "scrub/redact.h"

namespace dyno::scrub {

namespace {

/// `prefix` then `digits` lower-case hex digits of `value`: "\\x1b", "\\u009b".
std::string hex_escape(const char* prefix, std::uint32_t value, int digits) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(prefix);
  for (int d = digits - 1; d >= 0; --d) out += kHex[(value >> (4 * d)) & 0xfu];
  return out;
}

}  // namespace

std::string terminal_text(std::string_view text, bool one_line) {
  std::string s(text);
  std::vector<std::string> keys;
  for (const char* name : {"DYNO_API_KEY", "OPENAI_API_KEY"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && v[0] != '\0') keys.emplace_back(v);
  }
  scrub::redact_literals(s, scrub::normalize_secrets(std::move(keys)));
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '\n' && !one_line) {
        out += '\n';
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\t') {
        out += "\\t";
      } else if (c == '\r') {
        out += "\\r";
      } else if (c < 0x20 || c == 0x7f) {
        out += hex_escape("\\x", c, 2);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    std::size_t bad = 0;
    const std::size_t n = utf8::sequence_length(std::string_view(s).substr(i), &bad);
    if (n == 0) {
      for (std::size_t k = 0; k < bad; ++k) {
        out += hex_escape("\\x", static_cast<unsigned char>(s[i + k]), 2);
      }
      i += bad;
      continue;
    }
    const std::uint32_t cp = utf8::decode(std::string_view(s).substr(i), n);
    if (cp >= 0x80 && cp <= 0x9f) {
      out += hex_escape("\\u", cp, 4);  // C1: a terminal may take U+009B for CSI
    } else {
      out.append(s, i, n);
    }
    i += n;
  }
  return out;
}

}  // namespace dyno::scrub
