#include "transport/http_target.h"

#include <openssl/ssl.h>
#include <sys/socket.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include "transport/openai_stream.h"
#include "transport/sse_parser.h"

namespace dyno::transport {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;
using boost::system::error_code;

// ---------------------------------------------------------------------------------------------
// BaseUrl

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// Host as written in a URL or Host header: IPv6 literals in brackets.
std::string url_host(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

}  // namespace

// Error messages never repeat the URL itself: it may carry credentials or a key in a query.
BaseUrl BaseUrl::parse(const std::string& url) {
  BaseUrl out;
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos) {
    throw UrlError("the URL must start with http:// or https://");
  }
  const std::string scheme = lower(std::string_view(url).substr(0, scheme_end));
  if (scheme == "https") {
    out.tls = true;
  } else if (scheme != "http") {
    throw UrlError("unsupported URL scheme '" + scheme + "' (use http:// or https://)");
  }
  const std::string_view rest = std::string_view(url).substr(scheme_end + 3);
  if (rest.find('?') != std::string_view::npos) {
    throw UrlError("the URL must not contain a query string ('?')");
  }
  if (rest.find('#') != std::string_view::npos) {
    throw UrlError("the URL must not contain a fragment ('#')");
  }
  const auto path_start = rest.find('/');
  const std::string_view authority = rest.substr(0, path_start);
  std::string_view path =
      path_start == std::string_view::npos ? std::string_view() : rest.substr(path_start);
  if (authority.find('@') != std::string_view::npos) {
    throw UrlError("the URL must not contain credentials (user@host); pass the API key instead");
  }
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) throw UrlError("unterminated IPv6 address in the URL");
    out.host = std::string(authority.substr(1, close - 1));
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') throw UrlError("unexpected characters after the IPv6 address");
      port_text = after.substr(1);
      if (port_text.empty()) throw UrlError("empty port in the URL");
    }
  } else {
    const auto colon = authority.find(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) throw UrlError("empty port in the URL");
    }
  }
  if (out.host.empty()) throw UrlError("the URL has no host");
  if (out.host.find_first_of(" \t\r\n/\\") != std::string::npos) {
    throw UrlError("invalid characters in the URL host");
  }
  if (port_text.empty()) {
    out.port = out.tls ? 443 : 80;
  } else {
    unsigned value = 0;
    const auto [end, ec] =
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || value == 0 ||
        value > 65535) {
      throw UrlError("invalid port in the URL (expected 1-65535)");
    }
    out.port = static_cast<std::uint16_t>(value);
  }
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (path.find_first_of(" \t\r\n") != std::string_view::npos) {
    throw UrlError("invalid characters in the URL path");
  }
  out.base_path = std::string(path);
  return out;
}

std::string BaseUrl::to_string() const {
  return std::string(tls ? "https" : "http") + "://" + url_host(host) + ":" + std::to_string(port) +
         base_path;
}

// ---------------------------------------------------------------------------------------------
// Request body

namespace {

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xF]);
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
}

void append_double(std::string& out, double value) {
  // Shortest round-trip form ("0.7", "1"), unlike Boost.JSON's "7E-1".
  std::array<char, 32> buf{};
  const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), value);
  out.append(buf.data(), end);
}

}  // namespace

const std::string& completions_prompt(const workload::Request& request) {
  if (!request.prompt) {
    for (const auto& message : request.messages) {
      for (const auto& part : message.parts) {
        if (part.kind == workload::ContentPart::Kind::kImage) {
          throw std::invalid_argument("request '" + request.id +
                                      "' has image parts; the completions API takes text "
                                      "only (use --api chat)");
        }
      }
    }
    throw std::invalid_argument("request '" + request.id +
                                "' has chat messages but no prompt for the completions API");
  }
  return *request.prompt;
}

std::string build_messages_json(const workload::Request& request) {
  std::string out = "[";
  if (request.is_chat()) {
    bool first = true;
    for (const auto& message : request.messages) {
      if (!first) out.push_back(',');
      first = false;
      out += "{\"role\":";
      append_json_string(out, message.role);
      out += ",\"content\":";
      if (message.parts.empty()) {
        append_json_string(out, message.content);
      } else {
        // OpenAI content-part array: text parts and image_url parts (data or http(s) URL).
        out.push_back('[');
        for (std::size_t i = 0; i < message.parts.size(); ++i) {
          const auto& part = message.parts[i];
          if (i != 0) out.push_back(',');
          if (part.kind == workload::ContentPart::Kind::kText) {
            out += "{\"type\":\"text\",\"text\":";
            append_json_string(out, part.text);
            out.push_back('}');
          } else {
            out += "{\"type\":\"image_url\",\"image_url\":{\"url\":";
            append_json_string(out, part.image_url);
            out += "}}";
          }
        }
        out.push_back(']');
      }
      out.push_back('}');
    }
  } else {
    // A prompt sent to the chat endpoint becomes a single user message.
    out += "{\"role\":\"user\",\"content\":";
    append_json_string(out, *request.prompt);
    out.push_back('}');
  }
  out.push_back(']');
  return out;
}

std::string build_request_body(const workload::Request& request, const std::string& model,
                               workload::Api api, bool stream) {
  std::string out = "{\"model\":";
  append_json_string(out, model);
  if (api == workload::Api::kChat) {
    out += ",\"messages\":";
    out += build_messages_json(request);
  } else {
    out += ",\"prompt\":";
    append_json_string(out, completions_prompt(request));
  }
  const auto& s = request.sampling;
  if (s.max_tokens) out += ",\"max_tokens\":" + std::to_string(*s.max_tokens);
  if (s.temperature) {
    out += ",\"temperature\":";
    append_double(out, *s.temperature);
  }
  if (s.top_p) {
    out += ",\"top_p\":";
    append_double(out, *s.top_p);
  }
  if (s.seed) out += ",\"seed\":" + std::to_string(*s.seed);
  if (!s.stop.empty()) {
    out += ",\"stop\":[";
    for (std::size_t i = 0; i < s.stop.size(); ++i) {
      if (i != 0) out.push_back(',');
      append_json_string(out, s.stop[i]);
    }
    out.push_back(']');
  }
  if (s.ignore_eos) out += *s.ignore_eos ? ",\"ignore_eos\":true" : ",\"ignore_eos\":false";
  if (s.min_tokens) out += ",\"min_tokens\":" + std::to_string(*s.min_tokens);
  if (stream) {
    out += ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}";
  } else {
    out += ",\"stream\":false}";
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// HttpTarget
//
// Design: one Connection object per socket, serving one request at a time (HTTP/1.1 without
// pipelining). Connections live in the target's `busy_` map while a request is in flight and in
// the `idle_` stack (LIFO, so warm connections are reused first) between requests. Every async
// handler holds a shared_ptr to its connection plus the connection's generation number at the
// time it was started; a handler whose generation is stale (the request ended meanwhile, by
// error, timeout or cancel) does nothing. The HTTP/1.1 response framing (status line, headers,
// Content-Length, chunked, close-delimited) is parsed in place on the 16 KiB read buffer, so
// body bytes go straight to the SSE parser without a copy or full-body accumulation.

namespace {

constexpr std::size_t kReadBufferSize = 16 * 1024;

/// The kernel's receive time of the data a recvmsg() returned (SO_TIMESTAMPNS: the last
/// segment's arrival, on CLOCK_REALTIME), moved onto the steady clock. This is when the bytes
/// reached this host, whatever the event loop was doing then; without it, an event's time is
/// when dyno got round to reading it, which lags by the loop's backlog when thousands of
/// streams deliver at once. nullopt when the message carried no timestamp.
std::optional<std::int64_t> kernel_receive_ns(const msghdr& msg) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr;
       c = CMSG_NXTHDR(const_cast<msghdr*>(&msg), c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS) continue;
    timespec rx{};
    std::memcpy(&rx, CMSG_DATA(c), sizeof rx);
    if (rx.tv_sec == 0 && rx.tv_nsec == 0) return std::nullopt;
    timespec real{};
    timespec mono{};
    clock_gettime(CLOCK_REALTIME, &real);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    const std::int64_t offset =
        (real.tv_sec - mono.tv_sec) * 1'000'000'000LL + (real.tv_nsec - mono.tv_nsec);
    return rx.tv_sec * 1'000'000'000LL + rx.tv_nsec - offset;
  }
  return std::nullopt;
}
constexpr std::size_t kMaxHeaderBytes = 64 * 1024;
constexpr std::size_t kMaxChunkLine = 1024;
constexpr std::size_t kErrorBodyExcerpt = 200;
// A non-2xx body larger than this is not read to its end: the connection is closed instead.
constexpr std::size_t kMaxErrorBody = 64 * 1024;
// After [DONE], how long to wait for the end of the body (to keep the connection) before
// reporting done and closing it.
constexpr std::int64_t kDrainGraceNs = 1'000'000'000;

struct Prepared final : PreparedRequest {
  std::string head;  // request line and headers, without X-Request-Id and the final CRLF
  std::string body;
};

class Core;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Core* core, asio::io_context& context, ssl::context* tls_context)
      : core_(core),
        context_(context),
        tls_context_(tls_context),
        timer_(context),
        read_buffer_(new char[kReadBufferSize]),
        sse_([this](const SseEvent& event) { on_sse_event(event); }) {}

  void begin(const Prepared& request, std::uint64_t submission, StreamObserver& observer,
             bool reused, const std::string& id_prefix);
  void start(std::uint64_t generation);
  void connect(const tcp::resolver::results_type& endpoints);
  void fail(std::int64_t t_ns, ErrorCategory category, std::string message,
            std::optional<int> http_status, bool keep_connection);
  void close();
  void detach() {
    core_ = nullptr;
    ++generation_;
    close();
  }
  std::uint64_t generation() const { return generation_; }
  bool in_flight() const { return observer_ != nullptr; }

 private:
  enum class Phase {
    kHeader,
    kBodyLength,
    kBodyUntilClose,
    kChunkSize,
    kChunkData,
    kChunkDataEnd,
    kTrailers,
    kComplete
  };
  enum class Deadline { kNone, kConnect, kFirstToken, kTotal, kDrain };

  tcp::socket& socket() { return tls_ ? tls_->next_layer() : *plain_; }
  void start_write();
  void on_write(std::uint64_t generation, const error_code& ec);
  void start_read();
  void on_read(std::uint64_t generation, const error_code& ec, std::size_t n);
  void on_readable(std::uint64_t generation, const error_code& ec);
  void on_read_error(std::int64_t t_ns, const error_code& ec);
  void retry_on_fresh_connection();
  // Returns false when the request ended (terminal callback made) while processing.
  bool process(std::int64_t t_ns, const char* p, const char* end);
  bool parse_header(std::int64_t t_ns);
  void on_body(const char* p, std::size_t n);
  void on_body_complete(std::int64_t t_ns);
  void on_sse_event(const SseEvent& event);
  void finish_done(std::int64_t t_ns, bool keep_connection);
  void rearm();
  void on_timer(std::uint64_t timer_generation, const error_code& ec);

  Core* core_;
  asio::io_context& context_;
  ssl::context* tls_context_;
  std::optional<tcp::socket> plain_;
  std::unique_ptr<ssl::stream<tcp::socket>> tls_;
  bool open_ = false;
  std::uint64_t generation_ = 0;
  asio::steady_timer timer_;
  std::uint64_t timer_generation_ = 0;
  Deadline deadline_kind_ = Deadline::kNone;
  std::unique_ptr<char[]> read_buffer_;

  // The exchange in flight.
  const Prepared* request_ = nullptr;
  StreamObserver* observer_ = nullptr;
  std::string request_id_header_;
  bool reused_ = false;
  bool retried_ = false;
  bool connecting_ = false;
  std::int64_t connect_started_ns_ = 0;
  bool sent_ = false;
  std::int64_t sent_ns_ = 0;
  bool response_started_ = false;  // a response byte arrived on this attempt
  bool first_token_ = false;
  bool done_marker_ = false;
  std::int64_t done_ns_ = 0;
  std::int64_t read_ns_ = 0;  // time of the read being processed
  bool stream_mode_ = false;
  std::optional<ErrorCategory> pending_error_;
  std::string pending_message_;
  std::optional<Usage> usage_;
  DoneInfo done_info_;
  ChunkInfo chunk_;
  std::string scratch_error_;

  // HTTP response framing.
  Phase phase_ = Phase::kHeader;
  int status_ = 0;
  bool keep_alive_ = true;
  std::uint64_t remaining_ = 0;
  std::string header_;
  std::string line_;
  std::string body_;        // whole body of a non-streamed 2xx response
  std::string error_body_;  // first bytes of a non-2xx body
  std::size_t error_body_size_ = 0;
  SseParser sse_;
};

class Core {
 public:
  Core(EventLoop& loop, HttpTargetConfig config);
  ~Core();

  std::unique_ptr<PreparedRequest> prepare(const workload::Request& request) const;
  void submit(const PreparedRequest& request, std::uint64_t submission, StreamObserver& observer);
  void cancel_all();
  void connect(const std::shared_ptr<Connection>& connection);
  void release(const std::shared_ptr<Connection>& connection);
  void drop(Connection* connection) { busy_.erase(connection); }
  void count_open() { ++connections_opened_; }

  const HttpTargetConfig& config() const { return config_; }
  std::uint64_t connections_opened() const { return connections_opened_; }
  std::string authority() const {
    return url_host(config_.url.host) + ":" + std::to_string(config_.url.port);
  }

 private:
  asio::io_context& context_;
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

// --- Connection -------------------------------------------------------------------------------

void Connection::begin(const Prepared& request, std::uint64_t submission, StreamObserver& observer,
                       bool reused, const std::string& id_prefix) {
  request_ = &request;
  observer_ = &observer;
  request_id_header_.assign("X-Request-Id: ");
  request_id_header_ += id_prefix;
  std::array<char, 24> digits{};
  const auto [end, ec] = std::to_chars(digits.data(), digits.data() + digits.size(), submission);
  request_id_header_.append(digits.data(), end);
  request_id_header_ += "\r\n\r\n";
  reused_ = reused;
  retried_ = false;
  connecting_ = false;
  sent_ = false;
  response_started_ = false;
  first_token_ = false;
  done_marker_ = false;
  pending_error_.reset();
  usage_.reset();
  done_info_ = DoneInfo{};
  phase_ = Phase::kHeader;
  status_ = 0;
  keep_alive_ = true;
  header_.clear();
  line_.clear();
  body_.clear();
  error_body_.clear();
  error_body_size_ = 0;
  sse_.reset();
}

void Connection::start(std::uint64_t generation) {
  if (core_ == nullptr || generation != generation_) return;
  if (open_) {
    start_write();
  } else {
    connecting_ = true;
    connect_started_ns_ = steady_now_ns();
    rearm();
    core_->connect(shared_from_this());
  }
}

void Connection::connect(const tcp::resolver::results_type& endpoints) {
  if (tls_context_ != nullptr) {
    plain_.reset();
    tls_ = std::make_unique<ssl::stream<tcp::socket>>(context_, *tls_context_);
  } else {
    tls_.reset();
    plain_.emplace(context_);
  }
  asio::async_connect(
      socket(), endpoints,
      [self = shared_from_this(), generation = generation_](const error_code& ec,
                                                            const tcp::endpoint&) {
        if (self->core_ == nullptr || generation != self->generation_) return;
        if (ec) {
          self->fail(steady_now_ns(), ErrorCategory::kConnect,
                     "connect to " + self->core_->authority() + " failed: " + ec.message(),
                     std::nullopt, false);
          return;
        }
        error_code ignored;
        self->socket().set_option(tcp::no_delay(true), ignored);
        if (!self->tls_) {
          const int on = 1;  // kernel receive timestamps, see kernel_receive_ns()
          ::setsockopt(self->socket().native_handle(), SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
        }
        self->open_ = true;
        self->core_->count_open();
        if (!self->tls_) {
          self->connecting_ = false;
          self->rearm();
          self->start_write();
          return;
        }
        const std::string& host = self->core_->config().url.host;
        error_code parse_ec;
        asio::ip::make_address(host, parse_ec);
        if (parse_ec) {  // SNI only for names, never for IP literals
          SSL_ctrl(self->tls_->native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME,
                   TLSEXT_NAMETYPE_host_name, const_cast<char*>(host.c_str()));
        }
        if (self->core_->config().tls_verify) {
          self->tls_->set_verify_mode(ssl::verify_peer);
          self->tls_->set_verify_callback(ssl::host_name_verification(host));
        } else {
          self->tls_->set_verify_mode(ssl::verify_none);
        }
        self->tls_->async_handshake(
            ssl::stream_base::client, [self, generation](const error_code& handshake_ec) {
              if (self->core_ == nullptr || generation != self->generation_) {
                return;
              }
              if (handshake_ec) {
                self->fail(steady_now_ns(), ErrorCategory::kTls,
                           "TLS handshake with " + self->core_->authority() +
                               " failed: " + handshake_ec.message(),
                           std::nullopt, false);
                return;
              }
              self->connecting_ = false;
              self->rearm();
              self->start_write();
            });
      });
}

void Connection::start_write() {
  if (!sent_) {
    // on_sent marks the moment the request is handed to the socket (after any connect).
    sent_ = true;
    sent_ns_ = steady_now_ns();
    rearm();
    observer_->on_sent(sent_ns_);
  }
  const std::array<asio::const_buffer, 3> buffers{
      asio::buffer(request_->head), asio::buffer(request_id_header_), asio::buffer(request_->body)};
  auto handler = [self = shared_from_this(), generation = generation_](
                     const error_code& ec, std::size_t) { self->on_write(generation, ec); };
  if (tls_) {
    asio::async_write(*tls_, buffers, std::move(handler));
  } else {
    asio::async_write(*plain_, buffers, std::move(handler));
  }
}

void Connection::on_write(std::uint64_t generation, const error_code& ec) {
  if (core_ == nullptr || generation != generation_) return;
  if (ec) {
    if (reused_ && !retried_) {
      retry_on_fresh_connection();  // stale keep-alive connection: nothing was processed
      return;
    }
    fail(steady_now_ns(), ErrorCategory::kConnect, "sending the request failed: " + ec.message(),
         std::nullopt, false);
    return;
  }
  start_read();
}

void Connection::retry_on_fresh_connection() {
  retried_ = true;
  reused_ = false;
  close();
  connecting_ = true;
  connect_started_ns_ = steady_now_ns();
  rearm();
  core_->connect(shared_from_this());
}

void Connection::start_read() {
  if (tls_) {
    auto handler = [self = shared_from_this(), generation = generation_](
                       const error_code& ec, std::size_t n) { self->on_read(generation, ec, n); };
    tls_->async_read_some(asio::buffer(read_buffer_.get(), kReadBufferSize), std::move(handler));
    return;
  }
  // Plain TCP: wait for readability, then recvmsg() ourselves to get the kernel's receive
  // timestamps (Asio's reads do not return ancillary data).
  plain_->async_wait(tcp::socket::wait_read,
                     [self = shared_from_this(), generation = generation_](const error_code& ec) {
                       self->on_readable(generation, ec);
                     });
}

void Connection::on_readable(std::uint64_t generation, const error_code& ec) {
  if (core_ == nullptr || generation != generation_) return;
  if (ec) {
    on_read_error(steady_now_ns(), ec);
    return;
  }
  // Drain the socket: the reactor is edge-triggered, so stop only at EAGAIN or a short read.
  for (;;) {
    iovec iov{read_buffer_.get(), kReadBufferSize};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(plain_->native_handle(), &msg, MSG_DONTWAIT);
    const std::int64_t now = steady_now_ns();
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      on_read_error(now, error_code(errno, boost::system::system_category()));
      return;
    }
    if (n == 0) {
      on_read_error(now, asio::error::eof);
      return;
    }
    // Never before the request was sent or after now (the clocks' offset is read per call).
    std::int64_t t_ns = kernel_receive_ns(msg).value_or(now);
    t_ns = std::clamp(t_ns, std::max(sent_ns_, read_ns_), std::max(now, sent_ns_));
    response_started_ = true;
    const char* data = read_buffer_.get();
    if (!process(t_ns, data, data + n)) return;
    if (core_ == nullptr || generation != generation_) return;
    if (static_cast<std::size_t>(n) < kReadBufferSize) break;
  }
  start_read();
}

void Connection::on_read(std::uint64_t generation, const error_code& ec, std::size_t n) {
  if (core_ == nullptr || generation != generation_) return;
  // One clock read per socket read: every event parsed from these bytes gets this time.
  const std::int64_t t_ns = steady_now_ns();
  if (n > 0) {
    response_started_ = true;
    if (!process(t_ns, read_buffer_.get(), read_buffer_.get() + n)) return;
  }
  if (ec) {
    on_read_error(t_ns, ec);
    return;
  }
  start_read();
}

void Connection::on_read_error(std::int64_t t_ns, const error_code& ec) {
  if (ec == asio::error::operation_aborted) return;
  if (phase_ == Phase::kBodyUntilClose &&
      (ec == asio::error::eof || ec == ssl::error::stream_truncated)) {
    // The end of a close-delimited body (a TLS peer may close without close_notify).
    keep_alive_ = false;
    phase_ = Phase::kComplete;
    on_body_complete(t_ns);
    return;
  }
  if (!response_started_) {
    if (reused_ && !retried_) {
      retry_on_fresh_connection();
      return;
    }
    fail(t_ns, ErrorCategory::kConnect,
         "connection closed before the response started: " + ec.message(), std::nullopt, false);
    return;
  }
  if (done_marker_) {
    finish_done(done_ns_, false);
    return;
  }
  fail(t_ns, ErrorCategory::kStreamTruncated,
       "connection closed before the response was complete: " + ec.message(),
       status_ != 0 ? std::optional<int>(status_) : std::nullopt, false);
}

bool Connection::process(std::int64_t t_ns, const char* p, const char* const end) {
  read_ns_ = t_ns;
  const std::uint64_t generation = generation_;
  while (p < end && phase_ != Phase::kComplete) {
    switch (phase_) {
      case Phase::kHeader: {
        const std::size_t old_size = header_.size();
        header_.append(p, end);
        const std::size_t from = old_size >= 3 ? old_size - 3 : 0;
        const auto found = header_.find("\r\n\r\n", from);
        if (found == std::string::npos) {
          if (header_.size() > kMaxHeaderBytes) {
            fail(t_ns, ErrorCategory::kParse, "response header too large", std::nullopt, false);
            return false;
          }
          p = end;
          break;
        }
        const std::size_t header_size = found + 4;
        p += header_size - old_size;
        header_.resize(header_size);
        if (!parse_header(t_ns)) return false;
        break;
      }
      case Phase::kBodyLength: {
        const auto take = static_cast<std::size_t>(
            std::min<std::uint64_t>(remaining_, static_cast<std::uint64_t>(end - p)));
        on_body(p, take);
        p += take;
        remaining_ -= take;
        if (remaining_ == 0) phase_ = Phase::kComplete;
        break;
      }
      case Phase::kBodyUntilClose:
        on_body(p, static_cast<std::size_t>(end - p));
        p = end;
        break;
      case Phase::kChunkData: {
        const auto take = static_cast<std::size_t>(
            std::min<std::uint64_t>(remaining_, static_cast<std::uint64_t>(end - p)));
        on_body(p, take);
        p += take;
        remaining_ -= take;
        if (remaining_ == 0 && phase_ == Phase::kChunkData) phase_ = Phase::kChunkDataEnd;
        break;
      }
      case Phase::kChunkSize:
      case Phase::kChunkDataEnd:
      case Phase::kTrailers: {
        const auto* lf =
            static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
        if (lf == nullptr) {
          line_.append(p, end);
          p = end;
          if (line_.size() > kMaxChunkLine) {
            fail(t_ns, ErrorCategory::kParse, "malformed chunked encoding", status_, false);
            return false;
          }
          break;
        }
        line_.append(p, lf);
        p = lf + 1;
        if (!line_.empty() && line_.back() == '\r') line_.pop_back();
        if (phase_ == Phase::kChunkSize) {
          std::uint64_t size = 0;
          const char* first = line_.data();
          const char* last = first + line_.size();
          const auto [stop, ec] = std::from_chars(first, last, size, 16);
          if (ec != std::errc() || (stop != last && *stop != ';' && *stop != ' ')) {
            fail(t_ns, ErrorCategory::kParse, "malformed chunked encoding", status_, false);
            return false;
          }
          phase_ = size == 0 ? Phase::kTrailers : Phase::kChunkData;
          remaining_ = size;
        } else if (phase_ == Phase::kChunkDataEnd) {
          if (!line_.empty()) {
            fail(t_ns, ErrorCategory::kParse, "malformed chunked encoding", status_, false);
            return false;
          }
          phase_ = Phase::kChunkSize;
        } else if (line_.empty()) {
          phase_ = Phase::kComplete;  // end of trailers
        }
        line_.clear();
        break;
      }
      case Phase::kComplete:
        break;
    }
    if (pending_error_) {
      fail(t_ns, *pending_error_, std::move(pending_message_), status_, false);
      return false;
    }
    if (generation != generation_) return false;
  }
  if (phase_ == Phase::kComplete) {
    if (p != end) keep_alive_ = false;  // bytes beyond the response: do not trust the socket
    on_body_complete(t_ns);
    return false;
  }
  return true;
}

bool Connection::parse_header(std::int64_t t_ns) {
  // Status line: HTTP/1.x SP 3DIGIT SP reason CRLF
  const std::string_view head = header_;
  const auto line_end = head.find("\r\n");
  const std::string_view status_line = head.substr(0, line_end);
  if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." || status_line[8] != ' ') {
    fail(t_ns, ErrorCategory::kParse, "malformed HTTP status line", std::nullopt, false);
    return false;
  }
  int status = 0;
  const auto [stop, ec] = std::from_chars(status_line.data() + 9, status_line.data() + 12, status);
  if (ec != std::errc() || stop != status_line.data() + 12 || status < 100) {
    fail(t_ns, ErrorCategory::kParse, "malformed HTTP status line", std::nullopt, false);
    return false;
  }
  const bool http10 = status_line[7] == '0';
  bool chunked = false;
  bool connection_close = http10;
  std::optional<std::uint64_t> content_length;
  bool json_body = false;
  std::size_t pos = line_end + 2;
  while (pos < head.size()) {
    const auto eol = head.find("\r\n", pos);
    const std::string_view line = head.substr(pos, eol - pos);
    pos = eol + 2;
    if (line.empty()) break;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) {
      fail(t_ns, ErrorCategory::kParse, "malformed HTTP header line", status, false);
      return false;
    }
    const std::string_view name = line.substr(0, colon);
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    if (iequals(name, "content-length")) {
      std::uint64_t length = 0;
      const auto [end, length_ec] =
          std::from_chars(value.data(), value.data() + value.size(), length);
      if (length_ec != std::errc() || end != value.data() + value.size()) {
        fail(t_ns, ErrorCategory::kParse, "malformed Content-Length", status, false);
        return false;
      }
      content_length = length;
    } else if (iequals(name, "transfer-encoding")) {
      chunked = lower(value).find("chunked") != std::string::npos;
    } else if (iequals(name, "connection")) {
      const std::string tokens = lower(value);
      if (tokens.find("close") != std::string::npos) connection_close = true;
      if (tokens.find("keep-alive") != std::string::npos) connection_close = false;
    } else if (iequals(name, "content-type")) {
      json_body = lower(value).find("application/json") != std::string::npos;
    }
  }
  header_.clear();
  if (status < 200) return true;  // interim 1xx response: the real one follows
  status_ = status;
  keep_alive_ = !connection_close;
  const bool success = status >= 200 && status < 300;
  // A server that ignores "stream": true answers with a JSON document; decode it as one.
  stream_mode_ = success && core_->config().stream && !json_body;
  if (status == 204 || status == 304) {
    phase_ = Phase::kComplete;
  } else if (chunked) {
    phase_ = Phase::kChunkSize;
  } else if (content_length) {
    remaining_ = *content_length;
    phase_ = remaining_ == 0 ? Phase::kComplete : Phase::kBodyLength;
  } else {
    phase_ = Phase::kBodyUntilClose;
    keep_alive_ = false;
  }
  observer_->on_first_byte(t_ns, status);
  return true;
}

void Connection::on_body(const char* p, std::size_t n) {
  if (n == 0) return;
  if (status_ < 200 || status_ >= 300) {
    if (error_body_.size() < kErrorBodyExcerpt) {
      error_body_.append(p, std::min(n, kErrorBodyExcerpt - error_body_.size()));
    }
    error_body_size_ += n;
    if (error_body_size_ > kMaxErrorBody) {
      keep_alive_ = false;
      phase_ = Phase::kComplete;  // enough of it; the connection is closed afterwards
    }
    return;
  }
  if (stream_mode_) {
    sse_.feed(std::string_view(p, n));
  } else {
    body_.append(p, n);
  }
}

void Connection::on_sse_event(const SseEvent& event) {
  if (done_marker_ || pending_error_ || observer_ == nullptr) return;
  if (!decode_chunk(event.data, chunk_, scratch_error_)) {
    pending_error_ = ErrorCategory::kParse;
    pending_message_ = "invalid SSE data payload: " + scratch_error_;
    return;
  }
  if (chunk_.is_done_marker) {
    done_marker_ = true;
    done_ns_ = read_ns_;
    rearm();  // the drain grace period for the end of the body
    return;
  }
  if (!chunk_.error_message.empty()) {
    // An engine-reported error mid-stream counts as an HTTP-status failure carrying the status
    // of the response (usually 200) and the engine's message.
    pending_error_ = ErrorCategory::kHttpStatus;
    pending_message_ = "engine error: " + chunk_.error_message;
    return;
  }
  if (!chunk_.content.empty() || !chunk_.reasoning.empty()) {
    if (!first_token_) {
      first_token_ = true;
      if (core_->config().first_token_timeout) rearm();
    }
    observer_->on_token_event(read_ns_, chunk_.content, chunk_.reasoning);
  }
  if (chunk_.usage) usage_ = chunk_.usage;
  if (!chunk_.finish_reason.empty()) done_info_.finish_reason = chunk_.finish_reason;
  if (!chunk_.timings_json.empty()) done_info_.server_timings_json = chunk_.timings_json;
}

void Connection::on_body_complete(std::int64_t t_ns) {
  const bool keep = keep_alive_;
  if (status_ < 200 || status_ >= 300) {
    std::string message = std::to_string(status_);
    if (!error_body_.empty()) {
      message.push_back(' ');
      message += error_body_;
    }
    fail(t_ns, ErrorCategory::kHttpStatus, std::move(message), status_, keep);
    return;
  }
  if (stream_mode_) {
    // A body that ended cleanly without [DONE] is a complete response (some servers omit it);
    // an unterminated last event is discarded.
    sse_.finish();
    finish_done(done_marker_ ? done_ns_ : t_ns, keep);
    return;
  }
  if (!decode_full_response(body_, chunk_, scratch_error_)) {
    fail(t_ns, ErrorCategory::kParse, "invalid response body: " + scratch_error_, status_, keep);
    return;
  }
  if (!chunk_.error_message.empty()) {
    fail(t_ns, ErrorCategory::kHttpStatus, "engine error: " + chunk_.error_message, status_, keep);
    return;
  }
  if (!chunk_.content.empty() || !chunk_.reasoning.empty()) {
    first_token_ = true;
    observer_->on_token_event(t_ns, chunk_.content, chunk_.reasoning);
  }
  usage_ = chunk_.usage;
  done_info_.finish_reason = chunk_.finish_reason;
  done_info_.server_timings_json = chunk_.timings_json;
  finish_done(t_ns, keep);
}

void Connection::finish_done(std::int64_t t_ns, bool keep_connection) {
  StreamObserver* observer = observer_;
  if (observer == nullptr) return;
  observer_ = nullptr;
  ++generation_;
  ++timer_generation_;
  timer_.cancel();
  // Move what the callbacks need out first: the observer may submit again from on_done, which
  // can reuse this very connection.
  const std::optional<Usage> usage = std::move(usage_);
  const DoneInfo info = std::move(done_info_);
  auto self = shared_from_this();
  if (keep_connection && keep_alive_ && open_ && core_ != nullptr) {
    core_->release(self);
  } else {
    close();
    if (core_ != nullptr) core_->drop(this);
  }
  if (usage) observer->on_usage(*usage);
  observer->on_done(t_ns, info);
}

void Connection::fail(std::int64_t t_ns, ErrorCategory category, std::string message,
                      std::optional<int> http_status, bool keep_connection) {
  StreamObserver* observer = observer_;
  if (observer == nullptr) return;
  if (category == ErrorCategory::kCancelled && done_marker_) {
    finish_done(done_ns_, false);  // it had completed; only the end of the body was pending
    return;
  }
  observer_ = nullptr;
  ++generation_;
  ++timer_generation_;
  timer_.cancel();
  auto self = shared_from_this();
  if (keep_connection && keep_alive_ && open_ && core_ != nullptr) {
    core_->release(self);
  } else {
    close();
    if (core_ != nullptr) core_->drop(this);
  }
  observer->on_error(t_ns, category, message, http_status);
}

void Connection::close() {
  error_code ignored;
  if (tls_) {
    tls_->next_layer().close(ignored);
  } else if (plain_) {
    plain_->close(ignored);
  }
  open_ = false;
}

void Connection::rearm() {
  const HttpTargetConfig& config = core_->config();
  std::int64_t deadline = std::numeric_limits<std::int64_t>::max();
  Deadline kind = Deadline::kNone;
  const auto consider = [&](std::int64_t at, Deadline what) {
    if (at < deadline) {
      deadline = at;
      kind = what;
    }
  };
  using std::chrono::nanoseconds;
  if (connecting_) {
    consider(connect_started_ns_ + nanoseconds(config.connect_timeout).count(), Deadline::kConnect);
  }
  if (sent_) {
    if (config.first_token_timeout && !first_token_ && !done_marker_) {
      consider(sent_ns_ + nanoseconds(*config.first_token_timeout).count(), Deadline::kFirstToken);
    }
    if (config.total_timeout) {
      consider(sent_ns_ + nanoseconds(*config.total_timeout).count(), Deadline::kTotal);
    }
  }
  if (done_marker_) consider(done_ns_ + kDrainGraceNs, Deadline::kDrain);
  const std::uint64_t timer_generation = ++timer_generation_;
  if (kind == Deadline::kNone) {
    timer_.cancel();
    return;
  }
  deadline_kind_ = kind;
  timer_.expires_at(std::chrono::steady_clock::time_point(nanoseconds(deadline)));
  timer_.async_wait([self = shared_from_this(), timer_generation](const error_code& ec) {
    self->on_timer(timer_generation, ec);
  });
}

void Connection::on_timer(std::uint64_t timer_generation, const error_code& ec) {
  if (ec || core_ == nullptr || timer_generation != timer_generation_ || observer_ == nullptr) {
    return;
  }
  const HttpTargetConfig& config = core_->config();
  const std::int64_t t_ns = steady_now_ns();
  switch (deadline_kind_) {
    case Deadline::kConnect:
      fail(t_ns, ErrorCategory::kTimeout,
           "connect timeout after " + std::to_string(config.connect_timeout.count()) + " ms",
           std::nullopt, false);
      break;
    case Deadline::kFirstToken:
      fail(t_ns, ErrorCategory::kTimeout,
           "first token timeout after " + std::to_string(config.first_token_timeout->count()) +
               " ms",
           status_ != 0 ? std::optional<int>(status_) : std::nullopt, false);
      break;
    case Deadline::kTotal:
      if (done_marker_) {
        finish_done(done_ns_, false);
      } else {
        fail(t_ns, ErrorCategory::kTimeout,
             "total timeout after " + std::to_string(config.total_timeout->count()) + " ms",
             status_ != 0 ? std::optional<int>(status_) : std::nullopt, false);
      }
      break;
    case Deadline::kDrain:
      finish_done(done_ns_, false);
      break;
    case Deadline::kNone:
      break;
  }
}

// --- Core -------------------------------------------------------------------------------------

Core::Core(EventLoop& loop, HttpTargetConfig config)
    : context_(loop.context()),
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
        throw std::invalid_argument("cannot load CA certificates from " + *config_.ca_file + ": " +
                                    ec.message() + " (expected a PEM file)");
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
  std::string& head = prepared->head;
  head.reserve(256);
  head += "POST ";
  head += path_.empty() ? "/" : path_;
  head += " HTTP/1.1\r\nHost: ";
  head += url_host(config_.url.host);
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
  idle_.push_back(connection);
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
