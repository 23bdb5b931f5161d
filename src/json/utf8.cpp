#include "json/utf8.h"

namespace dyno::utf8 {

std::size_t sequence_length(std::string_view s, std::size_t* bad_length) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  if (b0 < 0x80) return 1;
  // Table 3-7: the lead byte fixes the length and the range of the second byte.
  std::size_t trail = 0;
  unsigned lo = 0x80;
  unsigned hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    trail = 1;
  } else if (b0 == 0xE0) {
    trail = 2;
    lo = 0xA0;  // below: overlong
  } else if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) {
    trail = 2;
  } else if (b0 == 0xED) {
    trail = 2;
    hi = 0x9F;  // above: a surrogate
  } else if (b0 == 0xF0) {
    trail = 3;
    lo = 0x90;  // below: overlong
  } else if (b0 >= 0xF1 && b0 <= 0xF3) {
    trail = 3;
  } else if (b0 == 0xF4) {
    trail = 3;
    hi = 0x8F;  // above: beyond U+10FFFF
  } else {
    // 80..BF (a stray continuation), C0/C1 (overlong), F5..FF (beyond U+10FFFF, and the
    // 5- and 6-byte forms of old): never the start of a sequence.
    if (bad_length != nullptr) *bad_length = 1;
    return 0;
  }
  std::size_t i = 1;
  for (; i <= trail && i < s.size(); ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < (i == 1 ? lo : 0x80u) || b > (i == 1 ? hi : 0xBFu)) break;
  }
  if (i == trail + 1) return i;
  if (bad_length != nullptr) *bad_length = i;  // the maximal subpart: lead + valid trail bytes
  return 0;
}

std::uint32_t decode(std::string_view s, std::size_t length) {
  const auto b = [&s](std::size_t i) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(s[i]));
  };
  switch (length) {
    case 1:
      return b(0);
    case 2:
      return ((b(0) & 0x1Fu) << 6) | (b(1) & 0x3Fu);
    case 3:
      return ((b(0) & 0x0Fu) << 12) | ((b(1) & 0x3Fu) << 6) | (b(2) & 0x3Fu);
    default:
      return ((b(0) & 0x07u) << 18) | ((b(1) & 0x3Fu) << 12) | ((b(2) & 0x3Fu) << 6) |
             (b(3) & 0x3Fu);
  }
}

bool is_valid(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t n = sequence_length(text.substr(i));
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string make_valid(std::string_view text, std::size_t* replaced_bytes) {
  if (is_valid(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t bad = 0;
    const std::size_t n = sequence_length(text.substr(i), &bad);
    if (n > 0) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    }
    out.append(kReplacement);
    if (replaced_bytes != nullptr) *replaced_bytes += bad;
    i += bad;
  }
  return out;
}

std::size_t make_valid_in_place(std::string& text) {
  if (is_valid(text)) return 0;
  std::size_t replaced = 0;
  text = make_valid(text, &replaced);
  return replaced;
}

}  // namespace dyno::utf8
