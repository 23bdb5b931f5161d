// The decoder seam of the HTTP target: what turns the body of a 2xx response into observer
// calls and a verdict, so that the connection (http_connection.h) keeps the transport only —
// socket, HTTP framing, deadlines, keep-alive — and hands each read's body bytes to a decoder.
// One implementation today, the OpenAI-compatible one (openai_decoder.h: SSE framing, chat and
// completions chunks, a whole JSON answer, Ollama's bare error lines); another wire format, or a
// faster decoder (simdjson), is another StreamDecoder. Independent of sockets: a decoder is
// tested by feeding it bytes. Calls are per read and per request, not per event, so the
// virtual call costs nothing measurable (bench/parse_bench BM_DecoderFeed).
//
// Life of one request: begin(); for a 2xx response, accept() its head, then feed() each read's
// body bytes, then end_of_body() when the body ended cleanly; verdict() when the answer is
// complete (the end of the body, or the drain grace after an end marker); take_answer() when
// it stands. end() when the request ended for any reason: the observer is not used again.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "transport/target.h"

namespace dyno::transport {

/// What the transport knows of the response being read, for the decoder's messages.
struct ResponseFacts {
  int status = 0;
  std::string_view content_type;  ///< "" when the response had none
  std::uint64_t body_bytes = 0;   ///< body bytes read so far (after the transfer coding)
};

/// What a decoder concluded: an error to end the request with, or nothing (the answer stands).
struct Verdict {
  std::optional<ErrorCategory> error;
  std::string message;
  /// false: close the connection even where HTTP would keep it (the body was not understood).
  bool keep_connection = true;
};

/// The progress the transport's deadlines follow (http_connection_deadlines.cpp).
struct DecodeProgress {
  bool first_token = false;  ///< a token event was delivered: the first-token deadline is met
  std::int64_t last_token_ns =
      0;                     ///< the latest token event of a stream: the idle deadline's start
  bool done = false;         ///< an end marker came ([DONE]): only the body's end is awaited
  std::int64_t done_ns = 0;  ///< when it came: the answer's end time
};

class StreamDecoder {
 public:
  virtual ~StreamDecoder() = default;

  /// A new request: what the last response left is forgotten. `expects_tokens`: false when the
  /// request asked for no tokens (max_tokens 0), so an answer without any is no error.
  virtual void begin(StreamObserver& observer, bool expects_tokens) = 0;
  /// The head of a 2xx response: "" when the decoder reads a body of this Content-Type
  /// (`stream_requested`: the request asked for a stream; for a body without a type); else
  /// why not, in words (the request ends as kBadResponse).
  virtual std::string accept(const ResponseFacts& head, bool stream_requested) = 0;
  /// Body bytes that arrived at `t_ns` (any split). false: the response is decided as an error
  /// (take_error()); the rest of the body is not wanted.
  virtual bool feed(std::int64_t t_ns, std::string_view bytes) = 0;
  /// The error feed() returned false for.
  virtual Verdict take_error() = 0;
  /// The body ended cleanly at `t_ns`: what it held is decoded (a whole JSON answer delivers its
  /// tokens now). An error, or nothing (then the answer is complete: verdict()).
  virtual Verdict end_of_body(std::int64_t t_ns, const ResponseFacts& facts) = 0;
  /// The answer is complete: whether it stands (an error when it carried no token, ended
  /// without the finish reason its API promises, or the server ended it in failure).
  virtual Verdict verdict(const ResponseFacts& facts) = 0;
  /// The usage and end facts of an answer that stands (moved out: the observer may start
  /// another request, and begin() this decoder again, from its on_done).
  virtual void take_answer(std::optional<Usage>& usage, DoneInfo& info) = 0;
  /// The request ended (its terminal call was made or is being made): no further observer call,
  /// even for events of bytes being fed.
  virtual void end() = 0;
  /// "HTTP 200, Content-Type text/event-stream, 812 body bytes, 9 SSE events, finish_reason
  /// stop": the response as far as it was read, for error messages.
  virtual std::string describe(const ResponseFacts& facts) const = 0;

  const DecodeProgress& progress() const { return progress_; }

 protected:
  DecodeProgress progress_;
};

/// The transport's part of describe(): "HTTP 200, Content-Type …, N body bytes".
std::string describe_transport(const ResponseFacts& facts);

}  // namespace dyno::transport
