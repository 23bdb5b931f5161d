// What a server said about a failure, kept bounded (off the hot path): the message of an
// in-stream error — llama.cpp's `error:` SSE field, an `event: error` event, the `error` member
// vLLM, SGLang, TGI and Ollama put in a chunk (docs/metrics.md "Request outcomes") — and
// excerpts of the bodies a failing request carried. The record module redacts and scrubs
// these texts before they are written; what is cut here is cut so that no fragment of a
// secret can survive the cut (a secret that straddles the bound is dropped whole, together
// with whatever is glued to it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "transport/target.h"

namespace dyno::transport {

/// Bytes of a server's text a request keeps in its error message.
inline constexpr std::size_t kServerTextBytes = 512;

/// `text` when it fits in `max_bytes`; else its first bytes up to a UTF-8 boundary, without the
/// run of non-space bytes that the cut went through (it may be the start of a key), followed by
/// "…". Never longer than max_bytes + 3.
std::string bounded_excerpt(std::string_view text, std::size_t max_bytes = kServerTextBytes);

/// The message of an in-stream error's payload: of a JSON object, its `error` member (a string,
/// or an object's `message`), else its own `message` (llama.cpp's `error:` field carries
/// {"code":…,"message":…,"type":…}); with the `type` the server gave, when it gave one, in
/// front ("server_error: …"). Anything else (not JSON, no message) is the payload's
/// text itself. Bounded by bounded_excerpt(); "" only for an empty payload.
std::string error_payload_message(std::string_view payload);

/// The largest token count dyno believes of one request (2^31 − 1: beyond any model's context).
inline constexpr std::int64_t kMaxPlausibleTokens = 2147483647;

/// Why the server's usage counts cannot be true of one answer — a count below 0 or above
/// kMaxPlausibleTokens ("usage.completion_tokens 9223372036854775807 is not a plausible count");
/// "" when they can.
std::string implausible_usage(const Usage& usage);

/// Whether a JSON text is an object with an `error` member that is not null (a bare line that
/// is an error, as Ollama writes one mid-stream).
bool is_error_object(std::string_view payload);

}  // namespace dyno::transport
