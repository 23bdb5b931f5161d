// The OpenAI-compatible HTTP(S) target: keep-alive HTTP/1.1 connections, SSE streaming.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "transport/event_loop.h"
#include "transport/target.h"

namespace dyno::transport {

/// A URL dyno cannot use; the message says why.
class UrlError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// http(s)://host[:port]/base-path, e.g. "http://127.0.0.1:8000/v1".
struct BaseUrl {
  bool tls = false;
  std::string host;
  std::uint16_t port = 0;
  std::string base_path;  ///< without trailing slash, e.g. "/v1"
  /// Parses and validates; throws UrlError.
  static BaseUrl parse(const std::string& url);
  /// scheme://host:port + path, for display (no credentials are ever part of it).
  std::string to_string() const;
};

struct HttpTargetConfig {
  BaseUrl url;
  std::string model;
  workload::Api api = workload::Api::kChat;
  bool stream = true;
  std::optional<std::string> api_key;       ///< sent as Authorization: Bearer; never logged
  std::string request_id_prefix = "dyno-";  ///< X-Request-Id: <prefix><submission>
  std::chrono::milliseconds connect_timeout{10'000};
  std::optional<std::chrono::milliseconds> first_token_timeout;  ///< from sent
  std::optional<std::chrono::milliseconds> total_timeout;        ///< from sent
  bool keep_output_text = false;
  bool tls_verify = true;
  /// https: a PEM file of CA certificates trusted in addition to the system's (private CAs).
  std::optional<std::string> ca_file;
};

/// Opens one connection per concurrently in-flight request and reuses idle ones
/// (keep-alive). A connection the server closed is reopened transparently before sending.
///
/// Behaviour (the StreamObserver contract, made precise for HTTP):
/// - on_sent is called when the request bytes are handed to the socket, after any connect or
///   TLS handshake (connect time is not part of TTFT); submit() itself never calls the observer.
/// - A reused keep-alive connection that fails on write, or ends before any response byte, is
///   retried once on a fresh connection without a second on_sent (the server processed nothing).
/// - Non-2xx: kHttpStatus with "<status> <first 200 body bytes>", after reading the body.
/// - An `error` object inside a 2xx stream (engine failure mid-stream): kHttpStatus carrying the
///   response's status (usually 200) and "engine error: <message>".
/// - A `data:` payload that is not JSON of the expected shape: kParse; the connection is closed.
/// - [DONE] ends the request (at the time of the read that carried it); a body that ends cleanly
///   (terminating chunk, Content-Length reached, or close for a close-delimited body) without
///   [DONE] is also done; EOF or reset mid-body is kStreamTruncated.
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

/// Builds the JSON body for a request (the same bytes HttpTarget sends): text-only messages
/// as strings, messages with parts as the OpenAI array (text and image_url parts). Throws
/// std::invalid_argument for image parts on the completions API.
std::string build_request_body(const workload::Request& request, const std::string& model,
                               workload::Api api, bool stream);
/// The `messages` array build_request_body sends for the chat API, as JSON text (a request that
/// has a prompt instead becomes one user message).
std::string build_messages_json(const workload::Request& request);
/// The prompt of a request for the completions API; throws std::invalid_argument (naming the
/// request) when it has chat messages instead.
const std::string& completions_prompt(const workload::Request& request);

}  // namespace dyno::transport
