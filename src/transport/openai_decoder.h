// The OpenAI-compatible StreamDecoder (stream_decoder.h): a text/event-stream body split into
// events (sse_parser.h), each `data:` payload a chat.completion.chunk or text_completion chunk
// decoded by openai_stream.h, until `[DONE]` or the end of the body; or one JSON answer
// (chat.completion / text_completion) when the server does not stream. It also reads the
// server's word on a failure in every form servers write it mid-stream (an `error:` field,
// `event: error`, an `error` member in a chunk, Ollama's bare JSON error line: server_message.h)
// and holds a response to dyno's bounds (an event of 1 MiB, 2^20 token events, 16 MiB of text).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "transport/openai_stream.h"
#include "transport/sse_parser.h"
#include "transport/stream_decoder.h"

namespace dyno::transport {

class OpenAiDecoder final : public StreamDecoder {
 public:
  // Bounds of one response (kTooLarge past them).
  static constexpr std::size_t kMaxEventBytes = 1024 * 1024;
  static constexpr std::uint64_t kMaxTokenEvents = 1u << 20;
  static constexpr std::uint64_t kMaxTextBytes = 16u * 1024 * 1024;

  OpenAiDecoder();
  OpenAiDecoder(const OpenAiDecoder&) = delete;
  OpenAiDecoder& operator=(const OpenAiDecoder&) = delete;

  void begin(StreamObserver& observer, bool expects_tokens) override;
  std::string accept(const ResponseFacts& head, bool stream_requested) override;
  bool feed(std::int64_t t_ns, std::string_view bytes) override;
  Verdict take_error() override;
  Verdict end_of_body(std::int64_t t_ns, const ResponseFacts& facts) override;
  Verdict verdict(const ResponseFacts& facts) override;
  void take_answer(std::optional<Usage>& usage, DoneInfo& info) override;
  void end() override {
    observer_ = nullptr;
    chunks_.reset();  // the template's bytes are not held while the connection waits
  }
  std::string describe(const ResponseFacts& facts) const override;

 private:
  void on_sse_event(const SseEvent& event);
  /// An in-stream error (`error:` field, `event: error`, a bare error object): kServerError.
  void on_error_event(const SseEvent& event);
  /// Keeps the server's usage; false (and a pending kImplausibleUsage) when it cannot be true.
  bool take_usage(const Usage& usage);
  /// "; the server sent: <the body's first bytes>", or "" for an empty body.
  std::string what_was_said() const;

  StreamObserver* observer_ = nullptr;
  bool expects_tokens_ = true;
  bool stream_ = false;       // an event stream (else one JSON answer, in body_)
  std::int64_t read_ns_ = 0;  // time of the bytes being fed
  std::uint64_t token_events_ = 0;
  std::uint64_t text_bytes_ = 0;
  std::optional<ErrorCategory> pending_error_;
  std::string pending_message_;
  std::optional<Usage> usage_;
  DoneInfo done_info_;
  ChunkDecoder chunks_;  // the stream's chunks (a template of the previous one)
  ChunkInfo chunk_;
  std::string scratch_error_;
  std::string body_;       // whole body of a non-streamed response
  std::string body_head_;  // first bytes of a streamed body
  SseParser sse_;
};

}  // namespace dyno::transport
