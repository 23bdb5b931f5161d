#include "transport/http_target.h"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include "error/error.h"
#include "transport/http_connection.h"
#include "transport/timeouts.h"

namespace dyno::transport {

// Design: one Connection (http_connection.h) per socket, serving one request at a time.
// Connections live in the target's `busy_` map while a request is in flight and in the `idle_`
// stack (LIFO, so warm connections are reused first) between requests; an idle connection is
// closed when more wait than the load can use (max_idle_connections) or after
// idle_connection_close unused.

namespace {

using http::Connection;
using http::Prepared;
namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;
using boost::system::error_code;

class Core : public http::Pool {
 public:
  Core(EventLoop& loop, HttpTargetConfig config);
  ~Core() override;

  std::unique_ptr<PreparedRequest> prepare(const workload::Request& request) const;
  void submit(const PreparedRequest& request, std::uint64_t submission, StreamObserver& observer);
  void cancel_all();
  void connect(const std::shared_ptr<Connection>& connection) override;
  void release(const std::shared_ptr<Connection>& connection) override;
  void drop(Connection* connection) override;
  void count_open() override { ++connections_opened_; }
  const HttpTargetConfig& config() const override { return config_; }
  const std::shared_ptr<ReadReactor>& reactor() override { return reactor_; }
  std::uint64_t connections_opened() const { return connections_opened_; }

 private:
  asio::io_context& context_;
  std::shared_ptr<ReadReactor> reactor_;  // shared with the connections that use it
  HttpTargetConfig config_;
  std::optional<ssl::context> tls_context_;
  std::string path_;
  tcp::resolver resolver_;
  std::optional<tcp::resolver::results_type> endpoints_;
  bool resolving_ = false;
  std::vector<std::pair<std::shared_ptr<Connection>, std::uint64_t>> waiting_;
  std::shared_ptr<Core*> alive_;  // handlers that capture `this` check it first
  std::vector<std::shared_ptr<Connection>> idle_;
  std::unordered_map<Connection*, std::shared_ptr<Connection>> busy_;
  std::uint64_t connections_opened_ = 0;
};

// --- Core -------------------------------------------------------------------------------------

Core::Core(EventLoop& loop, HttpTargetConfig config)
    : context_(loop.context()),
      reactor_(std::make_shared<ReadReactor>(context_)),
      config_(std::move(config)),
      path_(config_.url.base_path +
            (config_.api == workload::Api::kChat ? "/chat/completions" : "/completions")),
      resolver_(context_),
      alive_(std::make_shared<Core*>(this)) {
  if (config_.url.tls) {
    tls_context_.emplace(ssl::context::tls_client);
    if (config_.tls_verify) tls_context_->set_default_verify_paths();
    if (config_.ca_file) {
      error_code ec;
      tls_context_->load_verify_file(*config_.ca_file, ec);
      if (ec) {
        throw dyno::Error(dyno::ErrorKind::input, "cannot load CA certificates from " +
                                                      *config_.ca_file + ": " + ec.message() +
                                                      " (expected a PEM file)");
      }
    }
  }
}

Core::~Core() {
  *alive_ = nullptr;
  // Observers of requests still in flight are not called: the target is going away.
  for (auto& [raw, connection] : busy_) connection->detach();
  for (auto& connection : idle_) connection->detach();
  for (auto& [connection, generation] : waiting_) connection->detach();
  resolver_.cancel();
}

std::unique_ptr<PreparedRequest> Core::prepare(const workload::Request& request) const {
  auto prepared = std::make_unique<Prepared>();
  prepared->body = build_request_body(request, config_.model, config_.api, config_.stream);
  // Limits: what the user set (0: none), else the ones derived from the request.
  const std::optional<DerivedTimeouts> derived =
      config_.derive_timeouts ? std::optional(derive_timeouts(request)) : std::nullopt;
  const auto limit = [](const std::optional<std::chrono::milliseconds>& given,
                        const std::optional<std::chrono::milliseconds>& fallback, const char* flag,
                        std::int64_t& ns, std::string& source) {
    if (given) {
      ns = std::chrono::nanoseconds(*given).count();
      source = flag;
    } else if (fallback) {
      ns = std::chrono::nanoseconds(*fallback).count();
      source = "derived from the request; set it with " + std::string(flag);
    }
  };
  limit(config_.first_token_timeout, derived ? std::optional(derived->first_token) : std::nullopt,
        "--first-token-timeout", prepared->first_token_ns, prepared->first_token_source);
  limit(config_.total_timeout, derived ? derived->total : std::nullopt, "--timeout",
        prepared->total_ns, prepared->total_source);
  prepared->expects_tokens = !(request.sampling.max_tokens && *request.sampling.max_tokens == 0);
  std::string& head = prepared->head;
  head.reserve(256);
  head += "POST ";
  head += path_.empty() ? "/" : path_;
  head += " HTTP/1.1\r\nHost: ";
  head += config_.url.bracketed_host();
  if (config_.url.port != (config_.url.tls ? 443 : 80)) {
    head += ":" + std::to_string(config_.url.port);
  }
  head += "\r\nContent-Type: application/json\r\n";
  if (config_.stream) head += "Accept: text/event-stream\r\n";
  if (config_.api_key) head += "Authorization: Bearer " + *config_.api_key + "\r\n";
  head += "Connection: keep-alive\r\nContent-Length: ";
  head += std::to_string(prepared->body.size());
  head += "\r\n";
  return prepared;
}

void Core::submit(const PreparedRequest& request, std::uint64_t submission,
                  StreamObserver& observer) {
  // The contract: `request` came from this target's prepare().
  const auto& prepared = static_cast<const Prepared&>(request);
  std::shared_ptr<Connection> connection;
  bool reused = false;
  if (!idle_.empty()) {
    connection = std::move(idle_.back());
    idle_.pop_back();
    reused = true;
  } else {
    connection =
        std::make_shared<Connection>(this, context_, tls_context_ ? &*tls_context_ : nullptr);
  }
  connection->begin(prepared, submission, observer, reused, config_.request_id_prefix);
  busy_.emplace(connection.get(), connection);
  // Started from the loop rather than inline, so observer callbacks (on_sent first) never run
  // inside submit(), which the observer itself may be calling from on_done.
  asio::post(context_, [connection, generation = connection->generation()] {
    connection->start(generation);
  });
}

void Core::connect(const std::shared_ptr<Connection>& connection) {
  if (endpoints_) {
    connection->connect(*endpoints_);
    return;
  }
  waiting_.emplace_back(connection, connection->generation());
  if (resolving_) return;
  resolving_ = true;
  // Resolved once per target; the endpoints are cached for every later connection.
  resolver_.async_resolve(
      config_.url.host, std::to_string(config_.url.port),
      [alive = alive_](const error_code& ec, tcp::resolver::results_type results) {
        Core* core = *alive;
        if (core == nullptr) return;
        core->resolving_ = false;
        auto waiting = std::move(core->waiting_);
        core->waiting_.clear();
        if (!ec && !results.empty()) core->endpoints_ = std::move(results);
        for (auto& [pending, generation] : waiting) {
          if (pending->generation() != generation) continue;  // ended meanwhile
          if (core->endpoints_) {
            pending->connect(*core->endpoints_);
          } else {
            pending->fail(steady_now_ns(), ErrorCategory::kConnect,
                          "cannot resolve host " + core->config_.url.host + ": " +
                              (ec ? ec.message() : std::string("no addresses")),
                          std::nullopt, false);
          }
        }
      });
}

void Core::release(const std::shared_ptr<Connection>& connection) {
  busy_.erase(connection.get());
  if (config_.max_idle_connections != 0 && idle_.size() >= config_.max_idle_connections) {
    connection->close();  // more idle connections than the load can use
    return;
  }
  idle_.push_back(connection);
  if (config_.idle_connection_close.count() > 0) {
    connection->arm_idle_close(std::chrono::nanoseconds(config_.idle_connection_close).count());
  }
}

void Core::drop(Connection* connection) {
  busy_.erase(connection);
  std::erase_if(idle_, [connection](const auto& c) { return c.get() == connection; });
}

void Core::cancel_all() {
  std::vector<std::shared_ptr<Connection>> in_flight;
  in_flight.reserve(busy_.size());
  for (auto& [raw, connection] : busy_) in_flight.push_back(connection);
  const std::int64_t t_ns = steady_now_ns();
  for (auto& connection : in_flight) {
    connection->fail(t_ns, ErrorCategory::kCancelled, "cancelled", std::nullopt, false);
  }
  for (auto& connection : idle_) connection->close();
  idle_.clear();
}

}  // namespace

const char* to_string(ErrorCategory category) {
  switch (category) {
    case ErrorCategory::kConnect:
      return "connect";
    case ErrorCategory::kTls:
      return "tls";
    case ErrorCategory::kHttpStatus:
      return "http_status";
    case ErrorCategory::kTimeout:
      return "timeout";
    case ErrorCategory::kStreamTruncated:
      return "stream_truncated";
    case ErrorCategory::kParse:
      return "parse";
    case ErrorCategory::kCancelled:
      return "cancelled";
    case ErrorCategory::kEngineRejected:
      return "engine_rejected";
    case ErrorCategory::kEngineFailed:
      return "engine_failed";
    case ErrorCategory::kSend:
      return "send";
    case ErrorCategory::kNoTokens:
      return "no_tokens";
    case ErrorCategory::kTooLarge:
      return "too_large";
    case ErrorCategory::kBadResponse:
      return "bad_response";
    case ErrorCategory::kServerError:
      return "server_error";
    case ErrorCategory::kUnfinished:
      return "unfinished";
    case ErrorCategory::kImplausibleUsage:
      return "implausible_usage";
  }
  return "unknown";
}

struct HttpTarget::Impl : Core {
  using Core::Core;
};

HttpTarget::HttpTarget(EventLoop& loop, HttpTargetConfig config)
    : impl_(std::make_unique<Impl>(loop, std::move(config))) {}

HttpTarget::~HttpTarget() = default;

std::unique_ptr<PreparedRequest> HttpTarget::prepare(const workload::Request& request) {
  return impl_->prepare(request);
}

void HttpTarget::submit(const PreparedRequest& request, std::uint64_t submission,
                        StreamObserver& observer) {
  impl_->submit(request, submission, observer);
}

void HttpTarget::cancel_all() { impl_->cancel_all(); }

std::uint64_t HttpTarget::connections_opened() const { return impl_->connections_opened(); }

}  // namespace dyno::transport
