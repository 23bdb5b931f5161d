// The OpenAI-compatible HTTP(S) target: keep-alive HTTP/1.1 connections, SSE streaming.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "transport/base_url.h"
#include "transport/event_loop.h"
#include "transport/request_body.h"
#include "transport/target.h"

namespace dyno::transport {

struct HttpTargetConfig {
  BaseUrl url;
  std::string model;
  workload::Api api = workload::Api::kChat;
  bool stream = true;
  std::optional<std::string> api_key;       ///< sent as Authorization: Bearer; never logged
  std::string request_id_prefix = "dyno-";  ///< X-Request-Id: <prefix><submission>
  std::chrono::milliseconds connect_timeout{10'000};
  /// From sent; 0 ms: no limit. Unset: derive_timeouts() when derive_timeouts, else none.
  std::optional<std::chrono::milliseconds> first_token_timeout;
  std::optional<std::chrono::milliseconds> total_timeout;  ///< the same rules as above
  /// Requests without an explicit limit get those of transport/timeouts.h.
  bool derive_timeouts = false;
  /// Between token events, from the first one on (a stalled stream); unset or 0: none.
  std::optional<std::chrono::milliseconds> idle_timeout;
  /// Idle keep-alive connections kept for reuse (0: no limit): a connection released while
  /// this many wait is closed (never hold more than the load can use).
  std::size_t max_idle_connections = 0;
  /// An idle connection unused this long is closed (0: kept until the target goes), so it
  /// never occupies one of a server's few HTTP threads for long (llama-server has n_parallel+2).
  std::chrono::milliseconds idle_connection_close{2'000};
  bool keep_output_text = false;
  bool tls_verify = true;
  /// https: a PEM file of CA certificates trusted in addition to the system's (private CAs).
  std::optional<std::string> ca_file;
};

/// Opens one connection per concurrently in-flight request and reuses idle ones
/// (keep-alive). A connection the server closed is reopened transparently before sending.
///
/// Behaviour (the StreamObserver contract, made precise for HTTP; categories: docs/metrics.md):
/// - on_sent is called when the request bytes are handed to the socket, after any connect or
///   TLS handshake (connect time is not part of TTFT); submit() itself never calls the observer.
/// - A reused keep-alive connection that fails on write, or ends before any response byte, is
///   retried once on a fresh connection without a second on_sent (the server processed nothing);
///   a fresh connection that fails on write is kSend.
/// - Every received segment is acknowledged at once (TCP_QUICKACK after the request is written,
///   which leaves delayed-ACK mode until dyno sends again; the kernel then acknowledges in the
///   read that drains the socket): a server with Nagle's algorithm on (llama-server) otherwise
///   holds each small SSE write until the client's delayed ACK, up to 40 ms, on a reused
///   connection.
/// - Non-2xx: kHttpStatus with "<status> <the body's first 512 bytes>" (server_message.h:
///   bounded_excerpt), after reading the body; a redirect names its Location (dyno does not
///   follow redirects).
/// - 2xx whose Content-Encoding (or a transfer coding) is not identity, or whose Content-Type is
///   neither an event stream, JSON, plain text nor absent (an HTML login page): kBadResponse.
/// - The server's word that it failed, inside a 2xx answer — an `error` member in a chunk
///   (vLLM, SGLang, TGI) or in a whole response, an `error:` SSE field (llama.cpp), an
///   `event: error`, a bare JSON error line (Ollama), or finish_reason "error" or "abort":
///   kServerError with the server's message (server_message.h), even after tokens.
/// - An answer that ends (by [DONE] or by the end of its body) without a finish reason, which the
///   OpenAI APIs promise on every answer: kUnfinished. Usage counts below 0 or beyond any model
///   (server_message.h: implausible_usage): kImplausibleUsage.
/// - A `data:` payload that is not JSON of the expected shape: kParse; the connection is closed.
/// - [DONE] ends the request (at the time of the read that carried it); a body that ends cleanly
///   (terminating chunk, Content-Length reached, or close for a close-delimited body) without
///   [DONE] is also done; EOF or reset mid-body is kStreamTruncated. A 2xx that ends without
///   any token event is kNoTokens (with the body's first bytes: what the server did send),
///   unless the request asked for max_tokens 0 or the answer finished with tool calls.
/// - Bounds per response (kTooLarge past them): header 64 KiB, one SSE event 1 MiB, 1,048,576
///   token events, 16 MiB of generated text (or of a non-streamed body).
/// - Deadlines (kTimeout): connect; first token and total from sent; idle between token
///   events. Reads are bounded per wake-up, so deadlines and other streams are served on time
///   even against a server that never stops sending.
/// - The connection goes back to the pool before on_done/on_error, so the observer may submit()
///   again from inside them. Destroying the target does not call observers of requests still in
///   flight; call cancel_all() first to end them.
/// - `keep_output_text` is not used here: token text always reaches the observer, which decides.
class HttpTarget final : public Target {
 public:
  /// Throws std::invalid_argument when `config.ca_file` cannot be loaded.
  HttpTarget(EventLoop& loop, HttpTargetConfig config);
  ~HttpTarget() override;

  std::unique_ptr<PreparedRequest> prepare(const workload::Request& request) override;
  void submit(const PreparedRequest& request, std::uint64_t submission,
              StreamObserver& observer) override;
  void cancel_all() override;

  /// Connections opened so far (for the record's client figures).
  std::uint64_t connections_opened() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dyno::transport
