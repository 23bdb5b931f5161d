// The OpenAI chunk and response decoder: one hand-written scanner of the members dyno reads
// (docs/architecture.md, "Parsers dyno keeps beside a library"), shared by the streamed chunk
// and the whole response, and ChunkDecoder (a stream's chunk against the previous one, which
// needs the scanner's note of where the content string lay). Over 700 lines because it is one
// decoder: splitting the scanner from its three users would put its internals in a header for
// no reader's benefit.
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

// Whether `s` equals the literal. The constant length turns the compare into word loads.
template <std::size_t N>
[[gnu::always_inline]] inline bool is(std::string_view s, const char (&literal)[N]) {
  constexpr std::size_t n = N - 1;
  if (s.size() != n) return false;
  if constexpr (n > 8 && n <= 16) {
    std::uint64_t a = 0;
    std::uint64_t b = 0;
    std::uint64_t c = 0;
    std::uint64_t d = 0;
    std::memcpy(&a, s.data(), 8);
    std::memcpy(&b, literal, 8);
    std::memcpy(&c, s.data() + n - 8, 8);
    std::memcpy(&d, literal + n - 8, 8);
    return ((a ^ b) | (c ^ d)) == 0;
  } else {
    return std::memcmp(s.data(), literal, n) == 0;
  }
}

// A member name of interest, followed by ':' (as `"name":`), as up to 16 bytes to compare
// against the input with two masked 8-byte words.
struct KeyPattern {
  std::uint64_t lo = 0;
  std::uint64_t lo_mask = 0;
  std::uint64_t hi = 0;
  std::uint64_t hi_mask = 0;
  std::size_t size = 0;
};

template <std::size_t N>
consteval KeyPattern key_pattern(const char (&quoted)[N]) {
  static_assert(N - 1 <= 16);
  KeyPattern k;
  k.size = N - 1;
  for (std::size_t i = 0; i < N - 1; ++i) {
    const std::uint64_t byte = static_cast<unsigned char>(quoted[i]);
    if (i < 8) {
      k.lo |= byte << (8 * i);
      k.lo_mask |= std::uint64_t{0xFF} << (8 * i);
    } else {
      k.hi |= byte << (8 * (i - 8));
      k.hi_mask |= std::uint64_t{0xFF} << (8 * (i - 8));
    }
  }
  return k;
}

// The members the decoder acts on (kOther: skipped). Which of them matter depends on the
// object they are in.
enum class Key : unsigned char {
  kOther,
  kChoices,
  kUsage,
  kTimings,
  kError,
  kDelta,
  kMessage,
  kText,
  kFinishReason,
  kContent,
  kReasoning,
};

Key classify(std::string_view key) {
  switch (key.size()) {
    case 4:
      return is(key, "text") ? Key::kText : Key::kOther;
    case 5:
      return is(key, "usage")   ? Key::kUsage
             : is(key, "error") ? Key::kError
             : is(key, "delta") ? Key::kDelta
                                : Key::kOther;
    case 7:
      return is(key, "choices")   ? Key::kChoices
             : is(key, "timings") ? Key::kTimings
             : is(key, "message") ? Key::kMessage
             : is(key, "content") ? Key::kContent
                                  : Key::kOther;
    case 9:
      return is(key, "reasoning") ? Key::kReasoning : Key::kOther;
    case 13:
      return is(key, "finish_reason") ? Key::kFinishReason : Key::kOther;
    case 17:
      return is(key, "reasoning_content") ? Key::kReasoning : Key::kOther;
    default:
      return Key::kOther;
  }
}

inline bool digit(char c) { return c >= '0' && c <= '9'; }

inline bool hex(char c) { return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// Where a string scan stopped: `quote` is its closing quote (nullptr on malformed input);
// `escaped` tells whether it holds a backslash escape.
struct StringEnd {
  const char* quote;
  bool escaped;
};

// A validating JSON scanner specialised for OpenAI-compatible responses: it walks the whole
// document (so malformed JSON anywhere is rejected) but materialises only the few members
// dyno reads, tracking its position structurally, so a string such as "usage" inside content
// can never be mistaken for a key. No DOM and no allocation beyond the output strings.
// Not checked: that strings are valid UTF-8 (bytes are passed through as the engine sent them).
//
// Every step takes the cursor and returns the position after what it consumed, or nullptr
// once the input is found malformed (the first message is kept in error_). Passing the
// cursor by value keeps it in a register on the hot path.
class Scanner {
 public:
  Scanner(std::string_view text, ChunkInfo& out)
      : begin_(text.data()), end_(begin_ + text.size()), out_(out) {}

  /// Where the content string (delta.content or text) was: its opening and closing quotes,
  /// and how many content members were strings (a template needs exactly one).
  const char* content_open() const { return content_open_; }
  const char* content_close() const { return content_close_; }
  int content_strings() const { return content_strings_; }
  /// The string at p ('"') decoded into the content (ChunkDecoder's path): the position after
  /// its closing quote, or nullptr when it is no valid string.
  const char* content_string(const char* p) { return text_or_null(p, out_.content, ""); }

  bool parse_document(std::string& error) {
    const char* p = ws(begin_);
    if (p < end_ && *p == '{') {
      p = root(p);
      if (p != nullptr && ws(p) != end_) p = fail("trailing characters after the JSON object");
    } else {
      p = fail("payload is not a JSON object");
    }
    if (p == nullptr) {
      error = error_ != nullptr ? error_ : "invalid JSON";
      return false;
    }
    return true;
  }

 private:
  static constexpr int kMaxDepth = 128;

  [[gnu::cold, gnu::noinline]] const char* fail(const char* message) {
    if (error_ == nullptr) error_ = message;
    return nullptr;
  }

  [[gnu::always_inline]] const char* ws(const char* p) const {
    // One compare rules out whitespace in compact JSON (every JSON whitespace byte is <= ' ').
    if (p<end_&& static_cast<unsigned char>(*p)> ' ') [[likely]]
      return p;
    while (p < end_ && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) ++p;
    return p;
  }

  // With at least 16 bytes left at the key's opening quote: whether it is `"name":`.
  [[gnu::always_inline]] static bool match(const char* p, const KeyPattern& k) {
    std::uint64_t lo = 0;
    std::memcpy(&lo, p, 8);
    if (((lo ^ k.lo) & k.lo_mask) != 0) return false;
    if (k.hi_mask == 0) return true;
    std::uint64_t hi = 0;
    std::memcpy(&hi, p + 8, 8);
    return ((hi ^ k.hi) & k.hi_mask) == 0;
  }

  // Recognises the common member names (and the ':' right after them) in one or two word
  // compares, so they need no scan; anything else (escapes, whitespace before ':', names
  // near the end of the input) is left to the general path. p is at the key's '"', with at
  // least 16 bytes left. On a hit, sets key/id and returns the position after the ':'.
  [[gnu::always_inline]] static const char* fast_key(const char* p, std::string_view& key,
                                                     Key& id) {
#define DYNO_KEY(name, key_id)                                           \
  do {                                                                   \
    static constexpr KeyPattern kPattern = key_pattern("\"" name "\":"); \
    if (match(p, kPattern)) {                                            \
      key = std::string_view(p + 1, kPattern.size - 3);                  \
      id = key_id;                                                       \
      return p + kPattern.size;                                          \
    }                                                                    \
  } while (false)
    switch (p[1]) {
      case 'c':
        DYNO_KEY("content", Key::kContent);
        DYNO_KEY("choices", Key::kChoices);
        DYNO_KEY("created", Key::kOther);
        break;
      case 'd':
        DYNO_KEY("delta", Key::kDelta);
        break;
      case 'f':
        DYNO_KEY("finish_reason", Key::kFinishReason);
        break;
      case 'i':
        DYNO_KEY("id", Key::kOther);
        DYNO_KEY("index", Key::kOther);
        break;
      case 'l':
        DYNO_KEY("logprobs", Key::kOther);
        break;
      case 'm':
        DYNO_KEY("model", Key::kOther);
        DYNO_KEY("message", Key::kMessage);
        break;
      case 'o':
        DYNO_KEY("object", Key::kOther);
        break;
      case 'r':
        DYNO_KEY("role", Key::kOther);
        DYNO_KEY("reasoning", Key::kReasoning);
        break;
      case 't':
        DYNO_KEY("text", Key::kText);
        DYNO_KEY("timings", Key::kTimings);
        break;
      case 'u':
        DYNO_KEY("usage", Key::kUsage);
        break;
      default:
        break;
    }
#undef DYNO_KEY
    return nullptr;
  }

  // The key at p ('"') through its ':' in the general way. Returns the position after ':'.
  [[gnu::noinline]] const char* slow_key(const char* p, std::string_view& key, Key& id) {
    const StringEnd s = string(p);
    if (s.quote == nullptr) return nullptr;
    key = std::string_view(p + 1, static_cast<std::size_t>(s.quote - (p + 1)));
    if (s.escaped) key = unescape_key(key);
    id = classify(key);
    p = ws(s.quote + 1);
    if (p >= end_ || *p != ':') return fail("invalid JSON: unexpected character or end of input");
    return p + 1;
  }

  // Iterates the members of the object at p ('{'), calling member(id, key, value) with value
  // at the member's value (whitespace skipped); member returns the position after the value.
  template <typename Fn>
  [[gnu::always_inline]] const char* object(const char* p, Fn&& member) {
    p = ws(p + 1);
    if (p < end_ && *p == '}') return p + 1;
    while (true) {
      if (p >= end_ || *p != '"') return fail("invalid JSON: expected an object key");
      std::string_view key;
      Key id = Key::kOther;
      const char* value = end_ - p >= 16 ? fast_key(p, key, id) : nullptr;
      if (value == nullptr) [[unlikely]] {
        value = slow_key(p, key, id);
        if (value == nullptr) return nullptr;
      }
      p = member(id, key, ws(value));
      if (p == nullptr) return nullptr;
      if (p >= end_ || *p != ',') [[unlikely]] {
        p = ws(p);
        if (p >= end_) return fail("invalid JSON: unterminated object");
        if (*p == '}') return p + 1;
        if (*p != ',') return fail("invalid JSON: expected ',' or '}'");
      }
      p = ws(p + 1);
    }
  }

  [[gnu::noinline]] std::string_view unescape_key(std::string_view raw) {
    // Keys of interest are short; nested objects reuse the scratch only after the comparison.
    key_scratch_.clear();
    unescape(raw, key_scratch_);
    return key_scratch_;
  }

  const char* root(const char* p) {
    return object(p, [this](Key id, std::string_view, const char* v) -> const char* {
      switch (id) {
        case Key::kChoices:
          return choices(v);
        case Key::kUsage:
          return usage(v);
        case Key::kTimings:
          return timings(v);
        case Key::kError:
          return error_member(v);
        default:
          return skip_value(v, 0);
      }
    });
  }

  const char* choices(const char* p) {
    if (p < end_ && *p == 'n') return literal(p, "null");
    if (p >= end_ || *p != '[') return fail("'choices' is not an array");
    p = ws(p + 1);
    if (p < end_ && *p == ']') return p + 1;
    for (int index = 0;; ++index) {
      p = ws(p);
      if (index == 0 && p < end_ && *p == '{') {
        p = choice(p);
      } else {
        p = skip_value(p, 1);
      }
      if (p == nullptr) return nullptr;
      p = ws(p);
      if (p >= end_) return fail("invalid JSON: unterminated array");
      if (*p == ',') {
        ++p;
        continue;
      }
      if (*p == ']') return p + 1;
      return fail("invalid JSON: expected ',' or ']'");
    }
  }

  const char* choice(const char* p) {
    return object(p, [this](Key id, std::string_view, const char* v) -> const char* {
      switch (id) {
        case Key::kDelta:
        case Key::kMessage:
          return delta(v);
        case Key::kText:
          return content(v, "'text' is not a string");
        case Key::kFinishReason:
          return text_or_null(v, out_.finish_reason, "'finish_reason' is not a string");
        default:
          return skip_value(v, 2);
      }
    });
  }

  const char* delta(const char* p) {
    if (p < end_ && *p == 'n') return literal(p, "null");
    if (p >= end_ || *p != '{') return fail("'delta' is not an object");
    return object(p, [this](Key id, std::string_view, const char* v) -> const char* {
      switch (id) {
        case Key::kContent:
          return content(v, "'content' is not a string");
        case Key::kReasoning:
          return text_or_null(v, out_.reasoning, "'reasoning' is not a string");
        default:
          return skip_value(v, 3);
      }
    });
  }

  [[gnu::noinline]] const char* timings(const char* p) {
    const char* const start = p;
    const bool is_object = p < end_ && *p == '{';
    p = skip_value(p, 0);
    if (p != nullptr && is_object) out_.timings_json.assign(start, p);
    return p;
  }

  [[gnu::noinline]] const char* usage(const char* p) {
    if (p < end_ && *p == 'n') return literal(p, "null");  // usage: null = not reported
    if (p >= end_ || *p != '{') return fail("'usage' is not an object");
    Usage& usage = out_.usage.emplace();
    return object(p, [this, &usage](Key, std::string_view key, const char* v) -> const char* {
      if (is(key, "prompt_tokens")) return count(v, usage.prompt_tokens);
      if (is(key, "completion_tokens")) return count(v, usage.completion_tokens);
      if (is(key, "prompt_tokens_details")) return details(v, "cached_tokens", usage.cached_tokens);
      if (is(key, "completion_tokens_details")) {
        return details(v, "reasoning_tokens", usage.reasoning_tokens);
      }
      return skip_value(v, 2);
    });
  }

  const char* details(const char* p, std::string_view wanted, std::optional<std::int64_t>& value) {
    if (p >= end_ || *p != '{') return skip_value(p, 2);  // null or unexpected: not reported
    return object(p,
                  [this, wanted, &value](Key, std::string_view key, const char* v) -> const char* {
                    if (key == wanted) return count(v, value);
                    return skip_value(v, 3);
                  });
  }

  // An integer count; null, a fraction or another type leaves it unreported.
  const char* count(const char* p, std::optional<std::int64_t>& value) {
    if (p < end_ && (*p == '-' || digit(*p))) {
      const char* const start = p;
      p = number(p);
      if (p == nullptr) return nullptr;
      std::int64_t parsed = 0;
      const auto [stop, ec] = std::from_chars(start, p, parsed);
      if (ec == std::errc() && stop == p) value = parsed;
      return p;
    }
    return skip_value(p, 3);
  }

  [[gnu::noinline]] const char* error_member(const char* p) {
    if (p < end_ && *p == 'n') return literal(p, "null");
    const char* const start = p;
    // An error whose message is empty or not a string is still an error: its raw JSON is
    // the message ("error":"" ends a stream as surely as "error":"overloaded").
    if (p < end_ && *p == '"') {
      p = text_or_null(p, out_.error_message, "");
    } else if (p < end_ && *p == '{') {
      p = object(p, [this](Key id, std::string_view, const char* v) -> const char* {
        if (id == Key::kMessage && v < end_ && *v == '"') {
          return text_or_null(v, out_.error_message, "");
        }
        return skip_value(v, 2);
      });
    } else {
      p = skip_value(p, 1);
    }
    if (p == nullptr) return nullptr;
    if (out_.error_message.empty()) out_.error_message.assign(start, p);
    return p;
  }

  // The content string (or null), its place noted for ChunkDecoder.
  [[gnu::always_inline]] const char* content(const char* p, const char* shape_error) {
    const char* const after = text_or_null(p, out_.content, shape_error);
    if (after != nullptr && *p == '"') {
      ++content_strings_;
      content_open_ = p;
      content_close_ = after - 1;
    }
    return after;
  }

  // A string (decoded into `out`) or null (leaves `out` as it is).
  const char* text_or_null(const char* p, std::string& out, const char* shape_error) {
    if (p < end_ && *p == '"') {
      const StringEnd s = string(p);
      if (s.quote == nullptr) return nullptr;
      if (s.escaped) [[unlikely]] {
        assign_unescaped(p + 1, s.quote, out);
      } else {
        // `out` is usually empty (cleared by decode_chunk); appending skips replace()'s work.
        out.clear();
        out.append(p + 1, static_cast<std::size_t>(s.quote - (p + 1)));
      }
      return s.quote + 1;
    }
    if (p < end_ && *p == 'n') return literal(p, "null");
    return fail(shape_error);
  }

  [[gnu::noinline]] static void assign_unescaped(const char* begin, const char* end,
                                                 std::string& out) {
    out.clear();
    unescape(std::string_view(begin, static_cast<std::size_t>(end - begin)), out);
  }

  template <std::size_t N>
  [[gnu::always_inline]] const char* literal(const char* p, const char (&word)[N]) {
    if (static_cast<std::size_t>(end_ - p) >= N - 1 && std::memcmp(p, word, N - 1) == 0) {
      return p + (N - 1);
    }
    return fail("invalid JSON: bad literal");
  }

  // The digits from p on: 8 at a time (SWAR), then byte by byte.
  [[gnu::always_inline]] const char* digits(const char* p) const {
    constexpr std::uint64_t kHighNibbles = 0xF0F0F0F0F0F0F0F0ULL;
    constexpr std::uint64_t kThrees = 0x3030303030303030ULL;
    while (end_ - p >= 8) {
      std::uint64_t word = 0;
      std::memcpy(&word, p, 8);
      // Per byte: zero iff it is '0'..'9' ((b & 0xF0) == 0x30 and ((b + 6) & 0xF0) == 0x30).
      // A carry out of b + 6 comes only from a non-digit and only disturbs bytes above it.
      const std::uint64_t bad = ((word & kHighNibbles) ^ kThrees) |
                                (((word + 0x0606060606060606ULL) & kHighNibbles) ^ kThrees);
      // `bad` bytes are multiples of 0x10; adding 0x70 sets the top bit of each nonzero one
      // (carries again only run upwards from a flagged byte), so the lowest flag is exact.
      const std::uint64_t flags = (bad | (bad + 0x7070707070707070ULL)) & 0x8080808080808080ULL;
      if (flags != 0) return p + std::countr_zero(flags) / 8;
      p += 8;
    }
    while (p < end_ && digit(*p)) ++p;
    return p;
  }

  // A number at p (p < end_).
  [[gnu::always_inline]] const char* number(const char* p) {
    if (*p == '-') ++p;
    if (p >= end_ || !digit(*p)) return fail("invalid JSON: bad number");
    p = *p == '0' ? p + 1 : digits(p + 1);
    if (p < end_ && (*p == '.' || *p == 'e' || *p == 'E')) [[unlikely]]
      return number_tail(p);
    return p;
  }

  // The fraction and/or exponent of a number, p at '.', 'e' or 'E'.
  [[gnu::noinline]] const char* number_tail(const char* p) {
    if (*p == '.') {
      ++p;
      if (p >= end_ || !digit(*p)) return fail("invalid JSON: bad number");
      p = digits(p + 1);
    }
    if (p < end_ && (*p == 'e' || *p == 'E')) {
      ++p;
      if (p < end_ && (*p == '+' || *p == '-')) ++p;
      if (p >= end_ || !digit(*p)) return fail("invalid JSON: bad number");
      p = digits(p + 1);
    }
    return p;
  }

  // The string at p ('"'): where it ends, escapes validated but unresolved.
  [[gnu::always_inline]] StringEnd string(const char* p) {
    const char* const q = find_special(p + 1, end_);
    if (q < end_ && *q == '"') [[likely]]
      return {q, false};
    return string_slow(q);
  }

  // The rest of a string from its first backslash or control character (or its end).
  [[gnu::noinline]] StringEnd string_slow(const char* p) {
    const char* const end = end_;
    bool escaped = false;
    while (true) {
      if (p >= end) return {fail("invalid JSON: unterminated string"), escaped};
      const auto c = static_cast<unsigned char>(*p);
      if (c == '"') return {p, escaped};
      if (c != '\\') return {fail("invalid JSON: control character in string"), escaped};
      escaped = true;
      ++p;
      if (p >= end) return {fail("invalid JSON: unterminated string"), escaped};
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
            return {fail("invalid JSON: bad \\u escape"), escaped};
          }
          p += 5;
          break;
        default:
          return {fail("invalid JSON: bad escape"), escaped};
      }
      p = find_special(p, end);
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

  // Any value at p (the caller skipped whitespace before it), `depth` levels inside the members
  // dyno walks structurally.
  [[gnu::always_inline]] const char* skip_value(const char* p, int depth) {
    if (p >= end_) return fail("invalid JSON: unexpected end of input");
    if (depth > kMaxDepth) return fail("invalid JSON: nesting too deep");
    switch (*p) {
      case '"': {
        const StringEnd s = string(p);
        return s.quote != nullptr ? s.quote + 1 : nullptr;
      }
      case '{':
      case '[':
        return skip_container(p, depth);
      case 't':
        return literal(p, "true");
      case 'f':
        return literal(p, "false");
      case 'n':
        return literal(p, "null");
      default:
        return number(p);
    }
  }

  [[gnu::noinline]] const char* skip_container(const char* p, int depth) {
    if (*p == '{') {
      p = ws(p + 1);
      if (p < end_ && *p == '}') return p + 1;
      while (true) {
        if (p >= end_ || *p != '"') return fail("invalid JSON: expected an object key");
        const StringEnd s = string(p);
        if (s.quote == nullptr) return nullptr;
        p = ws(s.quote + 1);
        if (p >= end_ || *p != ':')
          return fail("invalid JSON: unexpected character or end of input");
        p = skip_value(ws(p + 1), depth + 1);
        if (p == nullptr) return nullptr;
        p = ws(p);
        if (p >= end_) return fail("invalid JSON: unterminated object");
        if (*p == ',') {
          p = ws(p + 1);
        } else if (*p == '}') {
          return p + 1;
        } else {
          return fail("invalid JSON: expected ',' or '}'");
        }
      }
    }
    p = ws(p + 1);
    if (p < end_ && *p == ']') return p + 1;
    while (true) {
      p = skip_value(p, depth + 1);
      if (p == nullptr) return nullptr;
      p = ws(p);
      if (p >= end_) return fail("invalid JSON: unterminated array");
      if (*p == ',') {
        p = ws(p + 1);
      } else if (*p == ']') {
        return p + 1;
      } else {
        return fail("invalid JSON: expected ',' or ']'");
      }
    }
  }

  const char* const begin_;
  const char* const end_;
  ChunkInfo& out_;
  const char* error_ = nullptr;
  std::string key_scratch_;
  const char* content_open_ = nullptr;
  const char* content_close_ = nullptr;
  int content_strings_ = 0;
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

void ChunkDecoder::reset() {
  std::string().swap(previous_);
  prefix_ = 0;
  suffix_ = 0;
}

bool ChunkDecoder::decode(std::string_view payload, ChunkInfo& out, std::string& error) {
  if (!previous_.empty() && payload.size() >= prefix_ + suffix_ + 1 &&
      std::memcmp(payload.data(), previous_.data(), prefix_) == 0) {
    // The bytes before the content string are the template's: scan the string alone.
    const char* const open = payload.data() + prefix_ - 1;
    const char* const end = payload.data() + payload.size();
    const char* close = find_special(open + 1, end);
    if (close < end && *close == '"') [[likely]] {
      if (static_cast<std::size_t>(end - (close + 1)) == suffix_ &&
          std::memcmp(close + 1, previous_.data() + previous_.size() - suffix_, suffix_) == 0) {
        clear(out);
        out.content.append(open + 1, close);
        return true;
      }
    } else if (close < end && *close == '\\') {
      // An escaped token ("\n"): validated and resolved as the full scan would.
      clear(out);
      Scanner scanner(payload, out);
      const char* const after = scanner.content_string(open);
      if (after != nullptr && static_cast<std::size_t>(end - after) == suffix_ &&
          std::memcmp(after, previous_.data() + previous_.size() - suffix_, suffix_) == 0) {
        return true;
      }
    }
    // A control character, an end of input, or other bytes around it: the full scan decides.
  }
  clear(out);
  if (payload.size() <= 16 && trim(payload) == "[DONE]") {
    out.is_done_marker = true;
    return true;
  }
  Scanner scanner(payload, out);
  const bool ok = scanner.parse_document(error);
  previous_.clear();
  // A template: a chunk that decoded to its content alone, from one content string.
  if (ok && scanner.content_strings() == 1 && out.reasoning.empty() && !out.usage &&
      out.finish_reason.empty() && out.timings_json.empty() && out.error_message.empty()) {
    previous_.assign(payload);
    prefix_ = static_cast<std::size_t>(scanner.content_open() - payload.data()) + 1;
    suffix_ =
        static_cast<std::size_t>(payload.data() + payload.size() - (scanner.content_close() + 1));
  }
  return ok;
}

bool decode_full_response(std::string_view body, ChunkInfo& out, std::string& error) {
  // Same walk as a chunk: choices[0].message is read like choices[0].delta.
  clear(out);
  return Scanner(body, out).parse_document(error);
}

}  // namespace dyno::transport
