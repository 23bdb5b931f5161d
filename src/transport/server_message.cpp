#include "transport/server_message.h"

#include <boost/json.hpp>
#include <optional>
#include <utility>

namespace dyno::transport {

namespace json = boost::json;

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::optional<json::object> parse_object(std::string_view payload) {
  boost::system::error_code ec;
  json::value v = json::parse(payload, ec);
  if (ec || !v.is_object()) return std::nullopt;
  return std::move(v.as_object());
}

/// A member that is a string or a number, as text ("" when absent or another type).
std::string scalar_text(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return {};
  if (v->is_string()) return std::string(v->get_string());
  if (v->is_int64()) return std::to_string(v->get_int64());
  if (v->is_uint64()) return std::to_string(v->get_uint64());
  return {};
}

/// "type: message" from an object holding `message` (and `type` or `code`).
std::string described(const json::object& o) {
  std::string message = scalar_text(o, "message");
  if (message.empty()) return {};
  std::string kind = scalar_text(o, "type");
  if (kind.empty()) kind = scalar_text(o, "error_type");  // TGI
  return kind.empty() || kind == message ? message : kind + ": " + message;
}

}  // namespace

std::string bounded_excerpt(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  std::size_t cut = max_bytes;
  // Back to the start of a UTF-8 sequence, then off the word the cut went through.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  if (!is_space(text[cut])) {
    while (cut > 0 && !is_space(text[cut - 1])) --cut;
  }
  while (cut > 0 && is_space(text[cut - 1])) --cut;
  std::string out(text.substr(0, cut));
  out += "\xE2\x80\xA6";  // …
  return out;
}

std::string error_payload_message(std::string_view payload) {
  std::string message;
  if (const auto o = parse_object(payload)) {
    if (const json::value* e = o->if_contains("error"); e != nullptr && !e->is_null()) {
      if (e->is_string()) {
        message = std::string(e->get_string());
        if (const std::string kind = scalar_text(*o, "error_type"); !kind.empty()) {
          message = kind + ": " + message;  // TGI: {"error": "...", "error_type": "..."}
        }
      } else if (e->is_object()) {
        message = described(e->as_object());
      }
      if (message.empty()) message = json::serialize(*e);
    } else {
      message = described(*o);
    }
  }
  if (message.empty()) message = std::string(payload);
  return bounded_excerpt(message);
}

std::string implausible_usage(const Usage& usage) {
  const std::pair<const char*, const std::optional<std::int64_t>*> counts[] = {
      {"prompt_tokens", &usage.prompt_tokens},
      {"completion_tokens", &usage.completion_tokens},
      {"prompt_tokens_details.cached_tokens", &usage.cached_tokens},
      {"completion_tokens_details.reasoning_tokens", &usage.reasoning_tokens}};
  for (const auto& [name, value] : counts) {
    if (*value && (**value < 0 || **value > kMaxPlausibleTokens)) {
      return std::string("usage.") + name + " " + std::to_string(**value) +
             " is not a plausible token count (0 to " + std::to_string(kMaxPlausibleTokens) + ")";
    }
  }
  return {};
}

bool is_error_object(std::string_view payload) {
  const auto o = parse_object(payload);
  if (!o) return false;
  const json::value* e = o->if_contains("error");
  return e != nullptr && !e->is_null();
}

}  // namespace dyno::transport
