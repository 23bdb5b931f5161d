// Decoding OpenAI-compatible response bodies (streamed chunks and whole responses) into
// observer calls. Shared by the HTTP target; independent of sockets, so fully unit-testable.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "transport/target.h"

namespace dyno::transport {

/// What one `data:` payload of a chat.completion.chunk / text_completion chunk carried.
/// Strings hold decoded text (JSON escapes resolved).
struct ChunkInfo {
  std::string content;    ///< decoded delta.content / choices[0].text ("" if none)
  std::string reasoning;  ///< decoded delta.reasoning_content or delta.reasoning
  std::optional<Usage> usage;
  std::string finish_reason;
  std::string timings_json;     ///< raw `timings` object if present
  std::string error_message;    ///< an `error` object in the stream (engine-side failure)
  bool is_done_marker = false;  ///< payload was `[DONE]`
};

/// Parses one SSE `data:` payload. Returns false (and fills `error`) if it is not valid JSON
/// of the expected shape. Fast path: does not build a DOM.
bool decode_chunk(std::string_view payload, ChunkInfo& out, std::string& error);

/// Parses a whole non-streamed response body (chat.completion / text_completion).
bool decode_full_response(std::string_view body, ChunkInfo& out, std::string& error);

}  // namespace dyno::transport
