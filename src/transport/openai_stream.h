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

/// Decodes the chunks of one stream, as decode_chunk() does, with the same results and errors.
/// What it adds: an engine writes every token of an answer as the same bytes but for the
/// content string (the same id, model, created second and nulls), so after a chunk whose only
/// decoded member was its content, the next chunk is compared with it first: when the bytes
/// before the content string and after it are the previous chunk's, they need no scan — the
/// scanner's walk over equal bytes is the same walk, and it found nothing but the content — and
/// only the new content string is scanned. Anything else (another shape, usage, a finish
/// reason, a new second in `created`) takes the full scan, which learns the new shape.
/// One per stream (the previous chunk's bytes are kept: a few hundred bytes).
class ChunkDecoder {
 public:
  bool decode(std::string_view payload, ChunkInfo& out, std::string& error);
  /// Forgets the previous chunk and gives its memory back (the stream ended).
  void reset();

 private:
  std::string previous_;    ///< the last chunk decoded by the full scan, when it can be a template
  std::size_t prefix_ = 0;  ///< its bytes up to and including the content's opening quote
  std::size_t suffix_ = 0;  ///< its bytes after the content's closing quote
};

/// Parses a whole non-streamed response body (chat.completion / text_completion).
bool decode_full_response(std::string_view body, ChunkInfo& out, std::string& error);

}  // namespace dyno::transport
