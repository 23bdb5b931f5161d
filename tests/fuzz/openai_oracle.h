// The reference the OpenAI decoders (transport/openai_stream.h) are held to in the fuzz
// targets: the same members read from a Boost.JSON DOM.
//
// - What the scanner accepts is JSON (Boost.JSON parses it, invalid UTF-8 allowed: the
//   scanner passes bytes through unchecked; lone surrogate escapes aside: U+FFFD for the
//   scanner, an error for Boost.JSON).
// - JSON (depth <= 64) whose root is an object that has none of the members whose shape the
//   scanner checks (choices, usage, error) is accepted.
// - For accepted JSON without duplicate keys anywhere and without \u escapes of surrogates
//   (the DOM and the scanner treat lone ones differently), the decoded content, reasoning,
//   finish_reason, usage counts, timings and error message are what the DOM says.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "transport/openai_stream.h"

namespace dyno::fuzz {

namespace json = boost::json;

// Key strings in `text` (valid JSON): a string followed by optional whitespace and ':'.
inline std::size_t raw_key_count(std::string_view text) {
  std::size_t keys = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '"') continue;
    std::size_t j = i + 1;
    while (j < text.size() && text[j] != '"') j += text[j] == '\\' ? 2 : 1;
    std::size_t k = j + 1;
    while (k < text.size() &&
           (text[k] == ' ' || text[k] == '\t' || text[k] == '\n' || text[k] == '\r')) {
      ++k;
    }
    if (k < text.size() && text[k] == ':') ++keys;
    i = j;
  }
  return keys;
}

inline std::size_t dom_key_count(const json::value& v) {
  std::size_t keys = 0;
  if (v.is_object()) {
    for (const auto& kv : v.get_object()) keys += 1 + dom_key_count(kv.value());
  } else if (v.is_array()) {
    for (const auto& e : v.get_array()) keys += dom_key_count(e);
  }
  return keys;
}

inline bool has_surrogate_escape(std::string_view text) {
  for (std::size_t i = 0; i + 2 < text.size(); ++i) {
    if (text[i] == '\\' && text[i + 1] == 'u' && (text[i + 2] == 'd' || text[i + 2] == 'D')) {
      const char c = i + 3 < text.size() ? text[i + 3] : '0';
      if ((c >= '8' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')) return true;
    }
  }
  return false;
}

inline std::optional<std::int64_t> dom_count(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_int64()) return std::nullopt;
  return v->get_int64();
}

inline std::optional<std::int64_t> dom_detail(const json::object& o, std::string_view key,
                                              std::string_view inner) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_object()) return std::nullopt;
  return dom_count(v->get_object(), inner);
}

// Sets `out` from a string member; null or absent leaves it.
inline void dom_text(const json::value& v, std::string& out) {
  if (v.is_string()) out = std::string(v.get_string());
}

// What the decoder should have found, from the DOM (no duplicate keys).
inline transport::ChunkInfo expected_from_dom(const json::object& root) {
  transport::ChunkInfo e;
  for (const auto& kv : root) {
    const json::value& v = kv.value();
    if (kv.key() == "choices" && v.is_array() && !v.get_array().empty() &&
        v.get_array()[0].is_object()) {
      for (const auto& c : v.get_array()[0].get_object()) {
        if ((c.key() == "delta" || c.key() == "message") && c.value().is_object()) {
          for (const auto& d : c.value().get_object()) {
            if (d.key() == "content") dom_text(d.value(), e.content);
            if (d.key() == "reasoning" || d.key() == "reasoning_content") {
              dom_text(d.value(), e.reasoning);
            }
          }
        } else if (c.key() == "text") {
          dom_text(c.value(), e.content);
        } else if (c.key() == "finish_reason") {
          dom_text(c.value(), e.finish_reason);
        }
      }
    } else if (kv.key() == "usage" && v.is_object()) {
      const json::object& u = v.get_object();
      transport::Usage& usage = e.usage.emplace();
      usage.prompt_tokens = dom_count(u, "prompt_tokens");
      usage.completion_tokens = dom_count(u, "completion_tokens");
      usage.cached_tokens = dom_detail(u, "prompt_tokens_details", "cached_tokens");
      usage.reasoning_tokens = dom_detail(u, "completion_tokens_details", "reasoning_tokens");
    } else if (kv.key() == "error" && !v.is_null()) {
      if (v.is_string()) {
        e.error_message = std::string(v.get_string());
      } else if (v.is_object()) {
        const json::value* m = v.get_object().if_contains("message");
        if (m != nullptr && m->is_string()) e.error_message = std::string(m->get_string());
      }
      if (e.error_message.empty()) e.error_message = "(raw)";  // compared as non-empty only
    }
  }
  return e;
}

inline void check_against_dom(std::string_view text, bool accepted,
                              const transport::ChunkInfo& got) {
  json::parse_options options;
  options.max_depth = 64;
  options.allow_invalid_utf8 = true;
  json::error_code ec;
  const json::value dom = json::parse(text, ec, {}, options);
  if (accepted) {
    // Deeper than 64 but accepted (the scanner allows 128 levels) is not an error, nor is a
    // lone surrogate escape (Boost.JSON rejects it; the scanner makes it U+FFFD), nor a number
    // whose exponent Boost.JSON cannot hold (1e40095987657 is JSON; the scanner skips it).
    FUZZ_CHECK(!ec || ec == json::error::too_deep || ec == json::error::exponent_overflow ||
               has_surrogate_escape(text));
  }
  if (ec || !dom.is_object()) return;
  const json::object& root = dom.get_object();
  if (!root.contains("choices") && !root.contains("usage") && !root.contains("error")) {
    FUZZ_CHECK(accepted);
  }
  if (!accepted || dom_key_count(dom) != raw_key_count(text) || has_surrogate_escape(text)) return;
  const transport::ChunkInfo want = expected_from_dom(root);
  FUZZ_CHECK(got.content == want.content);
  FUZZ_CHECK(got.reasoning == want.reasoning);
  FUZZ_CHECK(got.finish_reason == want.finish_reason);
  FUZZ_CHECK(got.usage.has_value() == want.usage.has_value());
  if (got.usage && want.usage) {
    FUZZ_CHECK(got.usage->prompt_tokens == want.usage->prompt_tokens);
    FUZZ_CHECK(got.usage->completion_tokens == want.usage->completion_tokens);
    FUZZ_CHECK(got.usage->cached_tokens == want.usage->cached_tokens);
    FUZZ_CHECK(got.usage->reasoning_tokens == want.usage->reasoning_tokens);
  }
  FUZZ_CHECK(got.error_message.empty() == want.error_message.empty());
  if (want.error_message != "(raw)") FUZZ_CHECK(got.error_message == want.error_message);
  const json::value* timings = root.if_contains("timings");
  if (timings != nullptr && timings->is_object()) {
    json::error_code tec;
    const json::value raw = json::parse(got.timings_json, tec, {}, options);
    FUZZ_CHECK(!tec && raw == *timings);
  } else {
    FUZZ_CHECK(got.timings_json.empty());
  }
}

}  // namespace dyno::fuzz
