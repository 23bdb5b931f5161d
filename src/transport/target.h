// The Target seam: something that can serve a request and stream the answer back.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "workload/request.h"

namespace dyno::transport {

/// Error taxonomy of a failed request (METRICS.md error_rate categories).
enum class ErrorCategory {
  kConnect,           ///< DNS, refused, reset before the response started
  kSend,              ///< writing the request failed on a fresh connection
  kTls,               ///< handshake or certificate failure
  kHttpStatus,        ///< non-2xx status (the status goes with it)
  kTimeout,           ///< connect, first-token or total timeout
  kStreamTruncated,   ///< the connection ended before the response was complete
  kParse,             ///< malformed HTTP, SSE or JSON
  kCancelled,         ///< cancelled by dyno (interrupt); not an engine failure
  kEngineRejected,    ///< an in-process engine refused the request (bad parameters, too long)
  kEngineFailed,      ///< an in-process engine failed while serving the request
  kNoTokens,          ///< a 2xx response that ended without any token event
  kTooLarge,          ///< the response passed a bound (header, event, events, text)
  kBadResponse,       ///< a 2xx that is not an answer: HTML page, unrequested encoding
  kServerError,       ///< the server said, inside a 2xx answer, that it failed (in-stream error)
  kUnfinished,        ///< the answer ended without the finish reason its API promises
  kImplausibleUsage,  ///< the server's usage counts cannot be true (below 0, beyond any model)
};
const char* to_string(ErrorCategory category);

/// What kind of generated text a token-bearing event carried.
enum class TokenKind {
  kContent,    ///< chat delta.content
  kReasoning,  ///< chat delta.reasoning_content / delta.reasoning
  kText,       ///< completions choices[0].text
};

/// Token counts reported by the engine (`usage`), each absent when not reported.
struct Usage {
  std::optional<std::int64_t> prompt_tokens;
  std::optional<std::int64_t> completion_tokens;
  std::optional<std::int64_t> cached_tokens;     ///< prompt_tokens_details.cached_tokens
  std::optional<std::int64_t> reasoning_tokens;  ///< completion_tokens_details.reasoning_tokens
};

/// Facts known when a response ends normally.
struct DoneInfo {
  std::string finish_reason;        ///< "" when the engine sent none
  std::string server_timings_json;  ///< raw `timings` object (llama.cpp), "" when absent
};

/// Receives the life of one request. Contract:
/// - called on the loop thread that runs the request (a shard's), not re-entrantly, not blocking;
/// - times are steady-clock nanoseconds (steady_now_ns()): when the target saw the event, or,
///   for an in-process engine that stamps its own events on the same clock, the engine's stamp;
/// - order: on_sent, [on_first_byte], [on_token_event...], [on_usage], then exactly one of
///   on_done / on_error, after which the observer is not used again;
/// - `text` views are valid only during the call (copy what you keep).
class StreamObserver {
 public:
  virtual ~StreamObserver() = default;
  virtual void on_sent(std::int64_t t_ns) = 0;
  virtual void on_first_byte(std::int64_t t_ns, int http_status) = 0;
  /// One event that carried generated text. `content`/`reasoning` hold what the event
  /// carried of each kind (either may be empty, not both). For completions, text is content.
  virtual void on_token_event(std::int64_t t_ns, std::string_view content,
                              std::string_view reasoning) = 0;
  virtual void on_usage(const Usage& usage) = 0;
  virtual void on_done(std::int64_t t_ns, const DoneInfo& info) = 0;
  virtual void on_error(std::int64_t t_ns, ErrorCategory category, std::string_view message,
                        std::optional<int> http_status) = 0;
};

/// A request turned into what goes on the wire; built before the run (off the hot path).
class PreparedRequest {
 public:
  virtual ~PreparedRequest() = default;
};

/// An engine endpoint. All members are called on the event-loop thread.
class Target {
 public:
  virtual ~Target() = default;
  /// Builds the wire form of a request. May be slow; called before the run starts.
  virtual std::unique_ptr<PreparedRequest> prepare(const workload::Request& request) = 0;
  /// Starts one request and returns at once. `submission` numbers this send within the run
  /// (sent to HTTP engines as X-Request-Id suffix). `observer` must outlive the request.
  virtual void submit(const PreparedRequest& request, std::uint64_t submission,
                      StreamObserver& observer) = 0;
  /// Ends every in-flight request with on_error(kCancelled) and closes connections.
  virtual void cancel_all() = 0;
};

}  // namespace dyno::transport
