// A completion request as the simulated engine understands it: parsed and validated from an
// OpenAI-shaped body (the HTTP server) or from the fields of a plugin call (the in-process
// plugin), with one set of rules for both, so the two front ends of the engine count prompts and
// refuse requests the same way.
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/profile.h"
#include "sim/tokenizer.h"

namespace dyno::sim {

/// A request the engine refuses: the HTTP status it answers with (400 bad request, 404 unknown
/// model) and the OpenAI error type. Thrown by the functions below.
struct RequestError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
};

/// Throws RequestError{400, message}.
[[noreturn]] void bad_request(std::string message);

/// A parsed, validated completion request.
struct CompletionRequest {
  bool chat = false;
  bool stream = false;
  bool include_usage = false;
  std::string prompt_text;  ///< empty when the prompt was given as token ids
  std::int64_t prompt_tokens = 0;
  std::vector<std::int32_t> prompt_ids;  ///< only when the prompt was given as token ids
  std::int64_t max_tokens = 0;
  std::int64_t min_tokens = 0;
  bool ignore_eos = false;
  std::optional<std::uint64_t> seed;
  std::vector<std::string> image_sha256;  ///< per data-URL image part, in order (truth log)
};

/// Chat messages as the template sees them, plus their image parts.
struct ParsedChat {
  std::vector<ChatMessage> messages;
  std::int64_t images = 0;                ///< image parts (each costs Profile::image_tokens)
  std::vector<std::string> image_sha256;  ///< of each data-URL image's decoded bytes, in order
};

/// Parses a JSON object body; 400 when it is not one.
boost::json::object parse_object(std::string_view body);
/// Parses an OpenAI `messages` array: string content, or parts ({"type":"text"} and
/// {"type":"image_url"}; a data URL's base64 is decoded, as forgivingly as docs/sim.md says, and
/// hashed). An assistant's `tool_calls` (as JSON text) and a tool message's `tool_call_id` join
/// its content, as an engine's template renders them. 400 on any problem.
ParsedChat parse_messages(const boost::json::value& messages);
/// A request's `tools` specification, rendered before the first message (as a message of role
/// "tools"); nothing when `tools` is null or absent. 400 when it is not an array.
void add_tools(ParsedChat& chat, const boost::json::value* tools);
/// An optional boolean field; 400 when present with another type.
bool optional_bool(const boost::json::object& o, std::string_view key, bool fallback);

/// 404 unless `model` is the profile's model_name.
void check_model(std::string_view model, const Profile& profile);
/// Sets a chat prompt: the templated text of `messages` (Profile::chat_template_tokens extra per
/// message) and its tokens, plus Profile::image_tokens per image part; `tools` (the request's
/// tool specification, may be null) is rendered first.
void set_chat_prompt(CompletionRequest& r, const boost::json::value& messages,
                     const Profile& profile, const boost::json::value* tools = nullptr);
/// Sets a text prompt (completions) and its tokens; 400 when it is empty.
void set_text_prompt(CompletionRequest& r, std::string text);
/// 400 when prompt + max_tokens exceeds Profile::max_model_len.
void check_context_length(const CompletionRequest& r, const Profile& profile);

/// The prefix-cache block hashes of the request's prompt (prefix_block_hashes with
/// Profile::prefix_cache_block_tokens) when the profile has a prefix cache, else none. The ids
/// hashed are the tokenizer's ids of the (templated) prompt text, or the given token ids; image
/// tokens follow the text and are never cached (their blocks are not hashed).
std::vector<std::uint64_t> prompt_block_hashes(const CompletionRequest& r, const Profile& profile);

/// Parses a POST /v1/chat/completions (chat) or /v1/completions body (docs/sim.md).
CompletionRequest parse_completion(std::string_view body, bool chat, const Profile& profile);

/// The seed of a request's generated text when the request sets none: a function of the
/// engine's seed and the request's arrival ordinal (1-based), the same for every front end.
inline std::uint64_t default_text_seed(std::uint64_t engine_seed, std::uint64_t ordinal) {
  return engine_seed * 0x9E3779B97F4A7C15ull + ordinal;
}

}  // namespace dyno::sim
