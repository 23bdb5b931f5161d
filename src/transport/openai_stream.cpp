#include "transport/openai_stream.h"

#include <bit>
#include <charconv>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace dyno::transport {

namespace {

static_assert(std::endian::native == std::endian::little, "the string scan assumes it");

// First '"', '\\' or control character (< 0x20) in [p, end), or `end`. The hot loop of the
// decoder: 16 bytes per step with SSE2, else 8 with SWAR, then byte by byte.
[[gnu::always_inline]] inline const char* find_special(const char* p, const char* const end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i max_control = _mm_set1_epi8(0x1F);
  while (end - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i hits =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                     _mm_cmpeq_epi8(_mm_min_epu8(v, max_control), v));  // v <= 0x1F unsigned
    const auto mask = static_cast<unsigned>(_mm_movemask_epi8(hits));
    if (mask != 0) return p + std::countr_zero(mask);
    p += 16;
  }
#endif
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHigh = 0x8080808080808080ULL;
  while (end - p >= 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, p, 8);
    const std::uint64_t quote_bits = word ^ (kOnes * '"');
    const std::uint64_t backslash_bits = word ^ (kOnes * '\\');
    const std::uint64_t special =
        (((quote_bits - kOnes) & ~quote_bits) | ((backslash_bits - kOnes) & ~backslash_bits) |
         ((word - kOnes * 0x20) & ~word)) &
        kHigh;
    if (special != 0) {
      // The lowest flagged byte is exact (borrows only create false flags above a true one);
      // bytes are little-endian in the word, so it is the first special character.
      return p + std::countr_zero(special) / 8;
    }
    p += 8;
  }
  while (p < end) {
    const auto c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\' || c < 0x20) return p;
    ++p;
  }
  return end;
}

// A validating JSON scanner specialised for OpenAI-compatible responses: it walks the whole
// document (so malformed JSON anywhere is rejected) but materialises only the few members
// dyno reads, tracking its position structurally, so a string such as "usage" inside content
// can never be mistaken for a key. No DOM and no allocation beyond the output strings.
// Not checked: that strings are valid UTF-8 (bytes are passed through as the engine sent them).
class Scanner {
 public:
  Scanner(std::string_view text, ChunkInfo& out)
      : p_(text.data()), end_(p_ + text.size()), out_(out) {}

  bool parse_document(std::string& error) {
    ws();
    bool ok = p_ < end_ && *p_ == '{' ? root() : fail("payload is not a JSON object");
    if (ok) {
      ws();
      if (p_ != end_) ok = fail("trailing characters after the JSON object");
    }
    if (!ok) error = error_ != nullptr ? error_ : "invalid JSON";
    return ok;
  }

 private:
  static constexpr int kMaxDepth = 128;

  bool fail(const char* message) {
    if (error_ == nullptr) error_ = message;
    return false;
  }

  void ws() {
    // One compare rules out whitespace in compact JSON (every JSON whitespace byte is <= ' ').
    if (p_<end_&& static_cast<unsigned char>(*p_)> ' ') return;
    const char* p = p_;
    while (p < end_ && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) ++p;
    p_ = p;
  }

  bool at(char c) {
    ws();
    return p_ < end_ && *p_ == c;
  }

  bool expect(char c) {
    if (at(c)) {
      ++p_;
      return true;
    }
    return fail("invalid JSON: unexpected character or end of input");
  }

  // Iterates the members of the object at p_ ('{' already checked), calling
  // member(key) with p_ at the value; member must consume the value.
  template <typename Fn>
  bool object(Fn&& member) {
    ++p_;  // '{'
    if (at('}')) {
      ++p_;
      return true;
    }
    while (true) {
      if (!at('"')) return fail("invalid JSON: expected an object key");
      std::string_view raw;
      bool escaped = false;
      if (!string(raw, escaped)) return false;
      if (escaped) {
        key_scratch_.clear();
        unescape(raw, key_scratch_);
        raw = key_scratch_;  // keys of interest are short; nested calls don't reuse it first
      }
      if (!expect(':')) return false;
      ws();
      if (!member(raw)) return false;
      ws();
      if (p_ >= end_) return fail("invalid JSON: unterminated object");
      if (*p_ == ',') {
        ++p_;
        continue;
      }
      if (*p_ == '}') {
        ++p_;
        return true;
      }
      return fail("invalid JSON: expected ',' or '}'");
    }
  }

  bool root() {
    return object([this](std::string_view key) {
      if (key == "choices") return choices();
      if (key == "usage") return usage();
      if (key == "timings") {
        const char* start = p_;
        const bool is_object = p_ < end_ && *p_ == '{';
        if (!skip_value(0)) return false;
        if (is_object) out_.timings_json.assign(start, p_);
        return true;
      }
      if (key == "error") return error_member();
      return skip_value(0);
    });
  }

  bool choices() {
    if (p_ < end_ && *p_ == 'n') return literal("null");
    if (p_ >= end_ || *p_ != '[') return fail("'choices' is not an array");
    ++p_;
    if (at(']')) {
      ++p_;
      return true;
    }
    for (int index = 0;; ++index) {
      ws();
      if (index == 0 && p_ < end_ && *p_ == '{') {
        if (!choice()) return false;
      } else if (!skip_value(1)) {
        return false;
      }
      ws();
      if (p_ >= end_) return fail("invalid JSON: unterminated array");
      if (*p_ == ',') {
        ++p_;
        continue;
      }
      if (*p_ == ']') {
        ++p_;
        return true;
      }
      return fail("invalid JSON: expected ',' or ']'");
    }
  }

  bool choice() {
    return object([this](std::string_view key) {
      if (key == "delta" || key == "message") return delta();
      if (key == "text") return text_or_null(out_.content, "'text' is not a string");
      if (key == "finish_reason") {
        return text_or_null(out_.finish_reason, "'finish_reason' is not a string");
      }
      return skip_value(2);
    });
  }

  bool delta() {
    if (p_ < end_ && *p_ == 'n') return literal("null");
    if (p_ >= end_ || *p_ != '{') return fail("'delta' is not an object");
    return object([this](std::string_view key) {
      if (key == "content") return text_or_null(out_.content, "'content' is not a string");
      if (key == "reasoning_content" || key == "reasoning") {
        return text_or_null(out_.reasoning, "'reasoning' is not a string");
      }
      return skip_value(3);
    });
  }

  bool usage() {
    if (p_ < end_ && *p_ == 'n') return literal("null");  // usage: null = not reported
    if (p_ >= end_ || *p_ != '{') return fail("'usage' is not an object");
    Usage& usage = out_.usage.emplace();
    return object([this, &usage](std::string_view key) {
      if (key == "prompt_tokens") return count(usage.prompt_tokens);
      if (key == "completion_tokens") return count(usage.completion_tokens);
      if (key == "prompt_tokens_details") return details("cached_tokens", usage.cached_tokens);
      if (key == "completion_tokens_details") {
        return details("reasoning_tokens", usage.reasoning_tokens);
      }
      return skip_value(2);
    });
  }

  bool details(std::string_view wanted, std::optional<std::int64_t>& value) {
    if (p_ >= end_ || *p_ != '{') return skip_value(2);  // null or unexpected: not reported
    return object([this, wanted, &value](std::string_view key) {
      if (key == wanted) return count(value);
      return skip_value(3);
    });
  }

  // An integer count; null, a fraction or another type leaves it unreported.
  bool count(std::optional<std::int64_t>& value) {
    if (p_ < end_ && (*p_ == '-' || (*p_ >= '0' && *p_ <= '9'))) {
      const char* start = p_;
      if (!number()) return false;
      std::int64_t parsed = 0;
      const auto [end, ec] = std::from_chars(start, p_, parsed);
      if (ec == std::errc() && end == p_) value = parsed;
      return true;
    }
    return skip_value(3);
  }

  bool error_member() {
    if (p_ < end_ && *p_ == 'n') return literal("null");
    const char* start = p_;
    if (p_ < end_ && *p_ == '"') return text_or_null(out_.error_message, "");
    if (p_ < end_ && *p_ == '{') {
      const bool ok = object([this](std::string_view key) {
        if (key == "message" && p_ < end_ && *p_ == '"') {
          return text_or_null(out_.error_message, "");
        }
        return skip_value(2);
      });
      if (!ok) return false;
    } else if (!skip_value(1)) {
      return false;
    }
    if (out_.error_message.empty()) out_.error_message.assign(start, p_);
    return true;
  }

  // A string (decoded into `out`) or null (leaves `out` empty).
  bool text_or_null(std::string& out, const char* shape_error) {
    if (p_ < end_ && *p_ == '"') {
      std::string_view raw;
      bool escaped = false;
      if (!string(raw, escaped)) return false;
      out.clear();
      if (escaped) {
        unescape(raw, out);
      } else {
        out.assign(raw);
      }
      return true;
    }
    if (p_ < end_ && *p_ == 'n') return literal("null");
    return fail(shape_error);
  }

  bool literal(std::string_view word) {
    if (static_cast<std::size_t>(end_ - p_) < word.size() ||
        std::memcmp(p_, word.data(), word.size()) != 0) {
      return fail("invalid JSON: bad literal");
    }
    p_ += word.size();
    return true;
  }

  static bool digit(char c) { return c >= '0' && c <= '9'; }

  bool number() {
    if (p_ < end_ && *p_ == '-') ++p_;
    if (p_ >= end_ || !digit(*p_)) return fail("invalid JSON: bad number");
    if (*p_ == '0') {
      ++p_;
    } else {
      while (p_ < end_ && digit(*p_)) ++p_;
    }
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      if (p_ >= end_ || !digit(*p_)) return fail("invalid JSON: bad number");
      while (p_ < end_ && digit(*p_)) ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ >= end_ || !digit(*p_)) return fail("invalid JSON: bad number");
      while (p_ < end_ && digit(*p_)) ++p_;
    }
    return true;
  }

  static bool hex(char c) { return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

  // The string at p_ ('"'); `raw` is its bytes between the quotes, escapes unresolved.
  // Scans 8 bytes at a time for '"', '\\' or a control character (SWAR).
  [[gnu::always_inline]] bool string(std::string_view& raw, bool& escaped) {
    // A local cursor: writes through `char*` could alias the member, which would force the
    // compiler to store it back on every step.
    const char* p = p_ + 1;  // past the opening quote
    const char* const end = end_;
    const char* const start = p;
    while (true) {
      p = find_special(p, end);
      if (p >= end) return fail("invalid JSON: unterminated string");
      const auto c = static_cast<unsigned char>(*p);
      if (c == '"') {
        raw = std::string_view(start, static_cast<std::size_t>(p - start));
        p_ = p + 1;
        return true;
      }
      if (c == '\\') {
        escaped = true;
        ++p;
        if (p >= end) return fail("invalid JSON: unterminated string");
        switch (*p) {
          case '"':
          case '\\':
          case '/':
          case 'b':
          case 'f':
          case 'n':
          case 'r':
          case 't':
            ++p;
            break;
          case 'u':
            if (end - p < 5 || !hex(p[1]) || !hex(p[2]) || !hex(p[3]) || !hex(p[4])) {
              return fail("invalid JSON: bad \\u escape");
            }
            p += 5;
            break;
          default:
            return fail("invalid JSON: bad escape");
        }
      } else {
        return fail("invalid JSON: control character in string");
      }
    }
  }

  static unsigned hex4(const char* s) {
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s[i];
      const unsigned d = digit(c)                 ? static_cast<unsigned>(c - '0')
                         : (c >= 'a' && c <= 'f') ? static_cast<unsigned>(c - 'a' + 10)
                                                  : static_cast<unsigned>(c - 'A' + 10);
      v = v * 16 + d;
    }
    return v;
  }

  static void put_utf8(unsigned cp, std::string& out) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  // Resolves the escapes of a string already validated by string(). An unpaired surrogate
  // becomes U+FFFD.
  static void unescape(std::string_view raw, std::string& out) {
    const char* p = raw.data();
    const char* const end = p + raw.size();
    while (p < end) {
      const auto* bs =
          static_cast<const char*>(std::memchr(p, '\\', static_cast<std::size_t>(end - p)));
      if (bs == nullptr) {
        out.append(p, end);
        return;
      }
      out.append(p, bs);
      p = bs + 1;
      const char e = *p++;
      switch (e) {
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          unsigned cp = hex4(p);
          p += 4;
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (end - p >= 6 && p[0] == '\\' && p[1] == 'u') {
              const unsigned low = hex4(p + 2);
              if (low >= 0xDC00 && low < 0xE000) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                p += 6;
              } else {
                cp = 0xFFFD;
              }
            } else {
              cp = 0xFFFD;
            }
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            cp = 0xFFFD;
          }
          put_utf8(cp, out);
          break;
        }
        default:
          out.push_back(e);
          break;  // '"', '\\', '/'
      }
    }
  }

  bool skip_value(int depth) {
    ws();
    if (p_ >= end_) return fail("invalid JSON: unexpected end of input");
    if (depth > kMaxDepth) return fail("invalid JSON: nesting too deep");
    switch (*p_) {
      case '"': {
        std::string_view raw;
        bool escaped = false;
        return string(raw, escaped);
      }
      case '{': {
        ++p_;
        if (at('}')) {
          ++p_;
          return true;
        }
        while (true) {
          if (!at('"')) return fail("invalid JSON: expected an object key");
          std::string_view raw;
          bool escaped = false;
          if (!string(raw, escaped) || !expect(':') || !skip_value(depth + 1)) return false;
          ws();
          if (p_ >= end_) return fail("invalid JSON: unterminated object");
          if (*p_ == ',') {
            ++p_;
          } else if (*p_ == '}') {
            ++p_;
            return true;
          } else {
            return fail("invalid JSON: expected ',' or '}'");
          }
        }
      }
      case '[': {
        ++p_;
        if (at(']')) {
          ++p_;
          return true;
        }
        while (true) {
          if (!skip_value(depth + 1)) return false;
          ws();
          if (p_ >= end_) return fail("invalid JSON: unterminated array");
          if (*p_ == ',') {
            ++p_;
          } else if (*p_ == ']') {
            ++p_;
            return true;
          } else {
            return fail("invalid JSON: expected ',' or ']'");
          }
        }
      }
      case 't':
        return literal("true");
      case 'f':
        return literal("false");
      case 'n':
        return literal("null");
      default:
        return number();
    }
  }

  const char* p_;
  const char* const end_;
  ChunkInfo& out_;
  const char* error_ = nullptr;
  std::string key_scratch_;
};

void clear(ChunkInfo& out) {
  out.content.clear();
  out.reasoning.clear();
  out.usage.reset();
  out.finish_reason.clear();
  out.timings_json.clear();
  out.error_message.clear();
  out.is_done_marker = false;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

bool decode_chunk(std::string_view payload, ChunkInfo& out, std::string& error) {
  clear(out);
  if (payload.size() <= 16 && trim(payload) == "[DONE]") {
    out.is_done_marker = true;
    return true;
  }
  return Scanner(payload, out).parse_document(error);
}

bool decode_full_response(std::string_view body, ChunkInfo& out, std::string& error) {
  // Same walk as a chunk: choices[0].message is read like choices[0].delta.
  clear(out);
  return Scanner(body, out).parse_document(error);
}

}  // namespace dyno::transport
