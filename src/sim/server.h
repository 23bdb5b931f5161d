// The simulated engine as an OpenAI-compatible HTTP server (in-process or `dyno sim`).
//
// Endpoints (HTTP/1.1, keep-alive):
//   POST /v1/chat/completions, POST /v1/completions  OpenAI/vLLM-shaped, streamed (SSE, chunked)
//       or not. Streamed framing: for chat a role chunk (delta {"role":"assistant","content":""})
//       sent with the first token; one `data:` chunk per model event (delta.content, or
//       delta.reasoning_content for reasoning tokens; choices[0].text for completions); a final
//       chunk with an empty delta/text and finish_reason "length" or "stop"; with
//       stream_options.include_usage a usage chunk ("choices":[]; completion_tokens_details
//       .reasoning_tokens only for profiles with reasoning_fraction > 0); then `data: [DONE]`.
//       Every completed response carries llama.cpp's per-response `timings` object (cache_n,
//       prompt_n, prompt_ms, predicted_n, predicted_ms, their per-token/per-second figures, and
//       draft_n/draft_n_accepted with spec_tokens > 0; docs/sim.md) from the model's clock: on
//       the last chunk before [DONE] (the usage chunk, else the finish_reason chunk), or at the
//       top level of a non-streamed body.
//       Prompt tokens: tokens of the prompt (completions; a token-id array counts its length)
//       or of apply_chat_template(messages) (chat). Errors: 400 bad JSON/fields, absent model,
//       n != 1, prompt + max_tokens > max_model_len; 404 other model name; OpenAI-style body
//       {"error":{"message":..,"type":..,"code":<status>}}. temperature/top_p/stop are
//       validated for type and otherwise ignored (the output vocabulary is fixed).
//       Chat `content` may be an array of parts: {"type":"text","text":..} counts as text;
//       {"type":"image_url","image_url":{"url":..}} counts Profile::image_tokens prompt tokens
//       (a data URL "data:<type>;base64,<b64>" is decoded and hashed; a bad one is a 400;
//       other URLs are counted, never fetched).
//   GET /v1/models, GET /health ("{}"), anything else 404.
//   GET /metrics: Prometheus text (Content-Type "text/plain; version=0.0.4"), read on the server
//       thread at request time, the same numbers in two dialects. vLLM's, labelled
//       model_name="<Profile::model_name>": counters vllm:prompt_tokens_total (prompt tokens of
//       requests whose prefill completed, i.e. whose first token was emitted),
//       vllm:generation_tokens_total (output tokens emitted), vllm:request_success_total
//       {finished_reason="length"|"stop"} (sequences the engine finished; cut/stalled/abandoned
//       ones are not counted), vllm:num_preemptions_total (always 0), and with spec_tokens k > 0
//       vllm:spec_decode_num_draft_tokens_total (k per decode event) and
//       vllm:spec_decode_num_accepted_tokens_total (a decode event's tokens minus one); gauges
//       vllm:num_requests_running (admitted, paused included), vllm:num_requests_waiting,
//       vllm:kv_cache_usage_perc (reserved KV tokens / kv_capacity_tokens, capped at 1).
//       llama.cpp's, unlabelled: llamacpp:prompt_tokens_total, llamacpp:tokens_predicted_total,
//       llamacpp:requests_processing, llamacpp:requests_deferred, llamacpp:kv_cache_usage_ratio.
//   POST /tokenize: vLLM's shape {"prompt":text} or {"messages":[..],"add_generation_prompt":b}
//       -> {"count":N,"max_model_len":L,"tokens":[ids]}; llama.cpp's shape {"content":text
//       [,"with_pieces":true]} -> {"tokens":[ids]} (or [{"id","piece"}]). Images in messages
//       add Profile::image_tokens "<image>" ids each, after the text's ids.
//   POST /apply-template (llama.cpp): {"messages":[..]} -> {"prompt":<templated text>} (the
//       text apply_chat_template gives, with the generation prompt; images are not in it).
//
// Truth log (ServerOptions::truth_path): JSONL, one line per request to a completion endpoint,
// written when its last bytes are handed to the socket (or when it fails, is cut or stalls),
// buffered and flushed by stop()/wait(); requests still in flight at stop get no line:
//   {"request_id":"<X-Request-Id header, empty if absent>",
//    "arrived_ns":<steady ns when the request's first bytes reached this host: the kernel's
//                  receive time of them (SO_TIMESTAMPNS), peeked before they are read>,
//    "received_ns":<steady ns when the request was fully read and parsed>,
//    "status":200|400|404|429|500,
//    "fault":"none|http_500|http_429|malformed|cut|stall|error|unfinished",
//    "stream":true|false, "prompt_tokens":N (0 for error responses),
//    "completion_tokens":<tokens in the events below>,
//    "event_times_ns":[<steady ns just before the write carrying each token event was issued>],
//    "event_tokens":[<tokens per event>],
//    "first_token_ns":<event_times_ns[0], or null>, "done_ns":<steady ns of the last write>,
//    "prefill_start_ns":<steady ns when the engine began the prompt, or null>,
//    "timings":<the response's `timings` object, or null when it carried none>
//    [, "image_sha256":["<hex>",..]]}
// "image_sha256" is present only for chat requests with data-URL image parts: the SHA-256
// (lowercase hex) of each image's decoded bytes, in message and part order (proof that image
// bytes arrived intact).
// steady ns = std::chrono::steady_clock (CLOCK_MONOTONIC) time_since_epoch in ns, comparable
// with a client in another process. Events batched into one write share its time. For
// non-streamed responses every event gets the time of the response write. "fault" names the
// injected fault only if it actually happened (a response shorter than after_tokens events is
// "none"); "stream" is false for requests refused before their body was read (500/429).
// A client that disconnects mid-response gets a line with the events written so far.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/profile.h"

namespace dyno::sim {

/// Injected failures, for testing clients. Each applies to requests whose arrival ordinal n
/// (1-based, counting every request to a completion endpoint, valid or not) satisfies
/// n % every == 0 (0 = never); when several match, the first in field order applies.
/// http_500/http_429 answer at once, before the body is looked at (429 with Retry-After: 1).
/// The others act after `after_tokens` token events: malformed writes `data: {not json` and
/// then continues normally (non-streamed: the body is `{not json`); cut closes the socket
/// without the terminating chunk; stall stops sending and leaves the connection open until the
/// client closes it or the server stops. Cut/stall drop the sequence from the engine.
/// error: the server's word that it failed, in the form `error_form` names (as engines write
/// it), then the body ends cleanly (non-streamed: a 200 whose body is an `error` object).
/// unfinished: the answer ends without a finish reason — with `data: [DONE]` (after the usage
/// chunk, when usage was asked for) or, with unfinished_eof, with the end of the body
/// (non-streamed: `"finish_reason": null`). Error/unfinished drop the sequence from the engine.
struct Faults {
  /// How an in-stream error is written: data — `data: {"error": {...}}` then `data: [DONE]`
  /// (vLLM, SGLang); field — llama.cpp's `error: {...}` SSE field then `data: [DONE]`; event —
  /// `event: error` with the object as data; bare — the object as a line of its own, no SSE
  /// field, nothing after it (Ollama).
  enum class ErrorForm { kData, kField, kEvent, kBare };
  std::uint32_t http_500_every = 0;
  std::uint32_t http_429_every = 0;
  std::uint32_t malformed_every = 0;  ///< a `data:` line that is not JSON, mid-stream
  std::uint32_t cut_every = 0;        ///< close the connection mid-stream
  std::uint32_t stall_every = 0;      ///< stop sending mid-stream (connection left open)
  std::uint32_t error_every = 0;      ///< an in-stream error, mid-stream
  ErrorForm error_form = ErrorForm::kData;
  std::uint32_t unfinished_every = 0;  ///< the answer ends mid-way without a finish reason
  bool unfinished_eof = false;         ///< unfinished: the body ends without [DONE]
  std::uint32_t after_tokens = 2;      ///< the mid-stream faults happen after this many tokens
};

/// "data", "field", "event" or "bare" (Faults::ErrorForm); throws std::invalid_argument for
/// another name.
Faults::ErrorForm parse_error_form(std::string_view name);

struct ServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;  ///< 0: pick a free port
  Profile profile;
  std::uint64_t seed = 0;
  Faults faults;
  std::optional<std::filesystem::path> truth_path;  ///< JSONL, one line per request
  /// Stop serving (as if the engine crashed) once N completion requests ended, counting every
  /// request with a truth line; in-flight requests are dropped.
  std::optional<std::uint64_t> exit_after_requests;
};

/// Runs on its own thread with its own event loop, so it never shares a core's queue with the
/// client it serves in-process. The engine (sim/model.h) runs on the steady clock: each step
/// starts when the previous one ended and its events are written at its end. Zero-delay
/// profiles run up to 16 steps (or 512 events) back to back between yields to the event loop.
/// Backpressure: a sequence whose connection holds more than 256 KiB of unsent output is paused
/// (it keeps its KV reservation) until the backlog drops below 64 KiB. A client that
/// disconnects has its sequence dropped at the next write.
class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();  ///< stops and joins
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Binds and starts serving; returns the bound port. Throws std::runtime_error on bind errors.
  std::uint16_t start();
  /// Stops accepting, closes connections, flushes the truth log, joins the thread. Idempotent;
  /// called by the destructor.
  void stop();
  /// Blocks until the server stopped (by stop() or exit_after_requests), then flushes the
  /// truth log. Returns at once if never started.
  void wait();
  std::uint16_t port() const;
  /// CPU seconds the server thread has used (read live while it runs): lets an in-process
  /// client report its own cost without the engine's.
  double cpu_seconds() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dyno::sim
