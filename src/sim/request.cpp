#include "sim/request.h"

#include <boost/json.hpp>
#include <climits>
#include <utility>

#include "digest/digest.h"
#include "sim/prefix_cache.h"

namespace dyno::sim {

namespace json = boost::json;

void bad_request(std::string message) { throw RequestError{400, std::move(message)}; }

json::object parse_object(std::string_view body) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec) bad_request("invalid JSON body: " + ec.message());
  if (!v.is_object()) bad_request("the request body must be a JSON object");
  return std::move(v.get_object());
}

namespace {

// The base64 of an image data URL, decoded as forgivingly as the simulated engine always has:
// canonical base64 (digest.h), or the same with its '=' padding left off, with bits after the
// last byte that are not zero (ignored), or with one character left over at the end (6 bits,
// no whole byte: ignored). Padding, when there, must be whole; any other character, '=' before
// the end included, makes it invalid (nullopt).
std::optional<std::string> decode_data_url_base64(std::string_view in) {
  if (auto bytes = digest::base64_decode(in, /*padding_optional=*/true)) return bytes;
  // Not canonical: bring it to canonical form, then decode it as canonical base64.
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::size_t pad = 0;
  while (pad < in.size() && in[in.size() - 1 - pad] == '=') ++pad;
  if (pad > 2 || (pad != 0 && in.size() % 4 != 0)) return std::nullopt;
  std::string text(in.substr(0, in.size() - pad));
  if (text.find('=') != std::string::npos) return std::nullopt;  // padding before the end
  if (text.size() % 4 == 1) {
    if (kAlphabet.find(text.back()) == std::string_view::npos) return std::nullopt;
    text.pop_back();
  }
  if (const std::size_t tail = text.size() % 4; tail != 0) {
    const std::size_t v = kAlphabet.find(text.back());
    if (v == std::string_view::npos) return std::nullopt;
    text.back() = kAlphabet[v & (tail == 2 ? 0x30u : 0x3cu)];  // the bits after the last byte
  }
  return digest::base64_decode(text, /*padding_optional=*/true);
}

// An image part's URL: {"type":"image_url","image_url":{"url":..}} (or "image_url":"<url>").
// A data URL must be base64 ("data:<mime>;base64,<bytes>"); its bytes are hashed.
void parse_image_part(const json::object& p, ParsedChat& out) {
  const json::value* iu = p.if_contains("image_url");
  const json::value* url = nullptr;
  if (iu && iu->is_object()) {
    url = iu->get_object().if_contains("url");
  } else if (iu && iu->is_string()) {
    url = iu;
  }
  if (!url || !url->is_string()) bad_request("image_url parts need a string 'image_url.url'");
  const std::string_view u = url->get_string();
  ++out.images;
  if (u.substr(0, 5) != "data:") return;  // a remote URL: counted, never fetched
  const auto comma = u.find(',');
  if (comma == std::string_view::npos) bad_request("image data URL has no ','");
  const std::string_view meta = u.substr(5, comma - 5);
  if (meta.size() < 7 || meta.substr(meta.size() - 7) != ";base64") {
    bad_request("image data URLs must be base64 (data:<type>;base64,...)");
  }
  const std::optional<std::string> bytes = decode_data_url_base64(u.substr(comma + 1));
  if (!bytes) bad_request("image data URL: invalid base64");
  out.image_sha256.push_back(digest::sha256_hex(*bytes));
}

std::optional<std::int64_t> optional_int(const json::object& o, std::string_view key,
                                         std::int64_t min) {
  const json::value* v = o.if_contains(key);
  if (!v || v->is_null()) return std::nullopt;
  std::int64_t i = 0;
  if (v->is_int64()) {
    i = v->get_int64();
  } else if (v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) {
    i = static_cast<std::int64_t>(v->get_uint64());
  } else {
    bad_request("'" + std::string(key) + "' must be an integer");
  }
  if (i < min) bad_request("'" + std::string(key) + "' must be >= " + std::to_string(min));
  return i;
}

void check_number(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v && !v->is_null() && !v->is_number()) {
    bad_request("'" + std::string(key) + "' must be a number");
  }
}

}  // namespace

void add_tools(ParsedChat& chat, const json::value* tools) {
  if (tools == nullptr || tools->is_null()) return;
  if (!tools->is_array()) bad_request("'tools' must be an array");
  // The tool specification is rendered first, as chat templates do.
  chat.messages.insert(chat.messages.begin(), ChatMessage{"tools", json::serialize(*tools)});
}

ParsedChat parse_messages(const json::value& v) {
  if (!v.is_array()) bad_request("'messages' must be an array");
  ParsedChat out;
  for (const json::value& m : v.get_array()) {
    if (!m.is_object()) bad_request("each message must be an object");
    const json::object& o = m.get_object();
    const json::value* role = o.if_contains("role");
    if (!role || !role->is_string()) bad_request("each message needs a string 'role'");
    ChatMessage msg;
    msg.role = std::string(role->get_string());
    if (const json::value* content = o.if_contains("content")) {
      if (content->is_string()) {
        msg.content = std::string(content->get_string());
      } else if (content->is_array()) {
        for (const json::value& part : content->get_array()) {
          const json::object* p = part.if_object();
          if (!p) bad_request("content parts must be objects");
          const json::value* type = p->if_contains("type");
          if (type && type->is_string() && type->get_string() == "image_url") {
            parse_image_part(*p, out);
            continue;
          }
          if (type && !(type->is_string() && type->get_string() == "text")) {
            bad_request("content part type must be \"text\" or \"image_url\"");
          }
          const json::value* text = p->if_contains("text");
          if (!text || !text->is_string()) bad_request("content parts must have a string 'text'");
          msg.content += text->get_string();
        }
      } else if (!content->is_null()) {
        bad_request("'content' must be a string, an array of parts or null");
      }
    }
    // A tool call and the id a tool result answers are part of the prompt an engine renders.
    if (const json::value* calls = o.if_contains("tool_calls"); calls && !calls->is_null()) {
      if (!calls->is_array()) bad_request("'tool_calls' must be an array");
      msg.content += json::serialize(*calls);
    }
    if (const json::value* id = o.if_contains("tool_call_id"); id && !id->is_null()) {
      if (!id->is_string()) bad_request("'tool_call_id' must be a string");
      msg.content.insert(0, std::string(id->get_string()) + ": ");
    }
    out.messages.push_back(std::move(msg));
  }
  if (out.messages.empty()) bad_request("'messages' must not be empty");
  return out;
}

bool optional_bool(const json::object& o, std::string_view key, bool fallback) {
  const json::value* v = o.if_contains(key);
  if (!v || v->is_null()) return fallback;
  if (!v->is_bool()) bad_request("'" + std::string(key) + "' must be a boolean");
  return v->get_bool();
}

void check_model(std::string_view model, const Profile& profile) {
  if (model != profile.model_name) {
    throw RequestError{404, "The model `" + std::string(model) +
                                "` does not exist (this server serves `" + profile.model_name +
                                "`)."};
  }
}

void set_chat_prompt(CompletionRequest& r, const json::value& messages, const Profile& profile,
                     const json::value* tools) {
  ParsedChat parsed = parse_messages(messages);
  add_tools(parsed, tools);
  r.prompt_text = apply_chat_template(parsed.messages, true, profile.chat_template_tokens);
  r.prompt_tokens =
      static_cast<std::int64_t>(count_tokens(r.prompt_text)) + parsed.images * profile.image_tokens;
  r.image_sha256 = std::move(parsed.image_sha256);
}

void set_text_prompt(CompletionRequest& r, std::string text) {
  r.prompt_text = std::move(text);
  r.prompt_tokens = static_cast<std::int64_t>(count_tokens(r.prompt_text));
  if (r.prompt_tokens == 0) bad_request("'prompt' must not be empty");
}

void check_context_length(const CompletionRequest& r, const Profile& profile) {
  if (r.prompt_tokens + r.max_tokens > profile.max_model_len) {
    bad_request("This model's maximum context length is " + std::to_string(profile.max_model_len) +
                " tokens. However, you requested " +
                std::to_string(r.prompt_tokens + r.max_tokens) + " tokens (" +
                std::to_string(r.prompt_tokens) + " in the prompt, " +
                std::to_string(r.max_tokens) + " in the completion).");
  }
}

CompletionRequest parse_completion(std::string_view body, bool chat, const Profile& profile) {
  const json::object o = parse_object(body);
  const json::value* model_v = o.if_contains("model");
  if (!model_v) bad_request("'model' is required");
  if (!model_v->is_string()) bad_request("'model' must be a string");
  check_model(model_v->get_string(), profile);
  CompletionRequest r;
  r.chat = chat;
  if (chat) {
    const json::value* messages = o.if_contains("messages");
    if (!messages) bad_request("'messages' is required");
    set_chat_prompt(r, *messages, profile, o.if_contains("tools"));
  } else {
    const json::value* prompt = o.if_contains("prompt");
    if (!prompt) bad_request("'prompt' is required");
    if (prompt->is_string()) {
      set_text_prompt(r, std::string(prompt->get_string()));
    } else if (prompt->is_array() && !prompt->get_array().empty()) {
      const json::array& a = prompt->get_array();
      if (a.size() == 1 && a[0].is_string()) {
        set_text_prompt(r, std::string(a[0].get_string()));
      } else {
        for (const json::value& t : a) {
          if (!t.is_int64() && !t.is_uint64()) {
            bad_request("'prompt' must be a string, [string] or an array of token ids");
          }
        }
        r.prompt_tokens = static_cast<std::int64_t>(a.size());
        r.prompt_ids.reserve(a.size());
        for (const json::value& t : a) {
          r.prompt_ids.push_back(static_cast<std::int32_t>(
              t.is_int64() ? t.get_int64() : static_cast<std::int64_t>(t.get_uint64())));
        }
      }
    } else {
      bad_request("'prompt' must be a string, [string] or a non-empty array of token ids");
    }
  }
  std::optional<std::int64_t> max_tokens = optional_int(o, "max_tokens", 1);
  if (!max_tokens) max_tokens = optional_int(o, "max_completion_tokens", 1);
  r.max_tokens = max_tokens.value_or(profile.default_max_tokens);
  r.min_tokens = optional_int(o, "min_tokens", 0).value_or(0);
  if (const auto n = optional_int(o, "n", 1); n && *n != 1) bad_request("only n = 1 is supported");
  if (const auto seed = optional_int(o, "seed", INT64_MIN)) {
    r.seed = static_cast<std::uint64_t>(*seed);
  }
  r.ignore_eos = optional_bool(o, "ignore_eos", false);
  r.stream = optional_bool(o, "stream", false);
  check_number(o, "temperature");
  check_number(o, "top_p");
  if (const json::value* so = o.if_contains("stream_options"); so && !so->is_null()) {
    if (!so->is_object()) bad_request("'stream_options' must be an object");
    r.include_usage = optional_bool(so->get_object(), "include_usage", false);
  }
  if (const json::value* stop = o.if_contains("stop");
      stop && !stop->is_null() && !stop->is_string() && !stop->is_array()) {
    bad_request("'stop' must be a string, an array of strings or null");
  }
  check_context_length(r, profile);
  return r;
}

std::vector<std::uint64_t> prompt_block_hashes(const CompletionRequest& r, const Profile& profile) {
  if (profile.prefix_cache_blocks <= 0) return {};
  if (!r.prompt_ids.empty())
    return prefix_block_hashes(r.prompt_ids, profile.prefix_cache_block_tokens);
  std::vector<std::int32_t> ids;
  for (const Token& t : tokenize(r.prompt_text)) ids.push_back(t.id);
  return prefix_block_hashes(ids, profile.prefix_cache_block_tokens);
}

}  // namespace dyno::sim
