// A small blocking HTTP/1.1 client for one-off calls to an engine's tokenizer before a run
// (exact-length prompt generation): counts the tokens of a text or of a chat conversation.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "error/error.h"
#include "transport/http_target.h"
#include "workload/request.h"

namespace dyno::transport {

/// The target's tokenizer could not be used; the message says why (never the API key).
class TokenizeError : public Error {
 public:
  explicit TokenizeError(const std::string& message) : Error(ErrorKind::engine, message) {}
};

struct TokenizeClientOptions {
  std::chrono::milliseconds timeout{30'000};  ///< connect, and each whole call
  bool tls_verify = true;                     ///< https: verify the certificate and host name
  std::optional<std::string> ca_file;         ///< https: extra PEM CA certificates
};

/// Talks to the tokenize endpoint at the server ROOT (the base path, e.g. "/v1", is dropped):
///  - kVllm (vLLM, SGLang, dyno sim): POST /tokenize {"model","prompt"} -> {"count",..};
///    chat: {"model","messages","add_generation_prompt":true} -> count with the chat template.
///  - kLlamaCpp (llama-server): POST /tokenize {"content","add_special":true} -> {"tokens":[..]}
///    (ids or {id,piece} objects; count = their number, BOS included as in /v1/completions);
///    chat: POST /apply-template {"messages"} -> {"prompt"}, then that prompt is tokenized the
///    same way.
///  - kTgi (text-generation-inference): POST /tokenize {"inputs"} -> [{id,text,start,stop},..];
///    no chat counting.
/// The flavor is detected on first use by trying the shapes in that order, and remembered.
/// One keep-alive connection, reopened when the server closed it. The API key goes in
/// `Authorization: Bearer` and never into a message. Not thread-safe.
class TokenizeClient {
 public:
  enum class Flavor { kVllm, kLlamaCpp, kTgi };

  /// Throws TokenizeError when `options.ca_file` cannot be loaded.
  TokenizeClient(const BaseUrl& url, std::string model, std::optional<std::string> api_key,
                 TokenizeClientOptions options = {});
  ~TokenizeClient();
  TokenizeClient(const TokenizeClient&) = delete;
  TokenizeClient& operator=(const TokenizeClient&) = delete;

  /// The detected flavor (probes with a short text on the first call). Throws TokenizeError
  /// ("the target has no /tokenize endpoint (tried vLLM, llama.cpp and TGI shapes); exact
  /// lengths need one") when no shape answers, or naming the status and body of a refusal.
  Flavor flavor();
  /// Tokens of `text` as a completions prompt. Throws TokenizeError.
  std::int64_t count_text(const std::string& text);
  /// Tokens of a chat prompt (with the chat template and generation prompt); nullopt when the
  /// flavor cannot count chats (TGI; llama.cpp with image parts). Throws TokenizeError.
  std::optional<std::int64_t> count_chat(const std::vector<workload::Message>& messages);
  /// GET a path at the server root on the same connection (e.g. "/metrics"): the body of a 200,
  /// nullopt for 404/405 (the engine has no such endpoint). Throws TokenizeError otherwise.
  std::optional<std::string> get_text(const std::string& path);
  /// One call at the server root (path as given, e.g. "/health" or "/v1/chat/completions";
  /// `method` GET or POST with a JSON body): the status and body, whatever the status.
  /// Throws TokenizeError when the server cannot be reached or the reply is not HTTP.
  struct HttpReply {
    int status = 0;
    std::string body;
  };
  HttpReply call(const std::string& method, const std::string& path, const std::string& body = "");
  /// HTTP calls made so far (probes included).
  std::uint64_t calls() const;
  /// Closes the connection now (the next call opens a new one). Call it when the client will
  /// be idle a while: an idle keep-alive connection occupies one of a server's HTTP threads,
  /// and llama-server has only n_parallel + 2 of them.
  void disconnect();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// "vllm", "llama.cpp" or "tgi".
const char* flavor_name(TokenizeClient::Flavor flavor);

/// The OpenAI chat `messages` JSON array of `messages` (content string, or parts: text and
/// image_url), as the tokenize calls send it.
std::string messages_json(const std::vector<workload::Message>& messages);

}  // namespace dyno::transport
