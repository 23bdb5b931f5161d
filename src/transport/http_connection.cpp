// One HTTP/1.1 request on a pooled connection: connect, TLS, send, the read loop, the
// response's head and body, the body's bytes to the decoder, keep-alive and retry.
// One file because these share one state machine (generation_, sent/read times, the pool's
// bookkeeping): split, each part would need the whole of it. Its deadlines (one timer per
// connection) are http_connection_deadlines.cpp; what a 2xx body means (events, tokens, the
// server's word, the verdict) is the decoder's (stream_decoder.h, openai_decoder.cpp).
#include "transport/http_connection.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <charconv>
#include <limits>

#include "transport/kernel_time.h"
#include "transport/openai_decoder.h"
#include "transport/server_message.h"

namespace dyno::transport::http {

namespace {

constexpr std::size_t kReadBufferSize = 16 * 1024;         // a TLS connection's own (one record)
constexpr std::size_t kSharedReadBufferSize = 256 * 1024;  // shared_read_buffer()
/// Reads per wake-up before the loop serves other sockets and timers: a server that never
/// stops sending must not keep the loop (deadlines, signals, other streams) waiting.
constexpr int kMaxReadsPerTurn = 8;
// A non-2xx body larger than this is not read to its end: the connection is closed instead.
constexpr std::size_t kMaxErrorBody = 64 * 1024;
bool is_redirect(int status) { return status >= 300 && status < 400 && status != 304; }

// Plain-TCP reads are synchronous on the loop's thread and their bytes are consumed before the
// read returns, so every plain connection of a loop shares one buffer: 256 KiB per loop
// thread, not per stream, so a stream that is behind is drained in few reads. (A TLS read
// is asynchronous: its connection has its own buffer.)
char* shared_read_buffer() {
  thread_local std::unique_ptr<char[]> buffer(new char[kSharedReadBufferSize]);
  return buffer.get();
}

}  // namespace

Connection::Connection(Pool* pool, asio::io_context& context, ssl::context* tls_context)
    : pool_(pool),
      context_(context),
      tls_context_(tls_context),
      timer_(context),
      decoder_(std::make_unique<OpenAiDecoder>()) {}

Connection::~Connection() { unwatch(); }

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
  body_bytes_ = 0;
  decoder_->begin(observer, request.expects_tokens);
  reader_.reset();
  status_ = 0;
  keep_alive_ = true;
  content_type_.clear();
  location_.clear();
  error_body_.clear();
  error_body_size_ = 0;
}

void Connection::start(std::uint64_t generation) {
  if (pool_ == nullptr || generation != generation_) return;
  if (open_) {
    start_write();
  } else {
    connecting_ = true;
    connect_started_ns_ = steady_now_ns();
    rearm();
    pool_->connect(shared_from_this());
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
        if (self->pool_ == nullptr || generation != self->generation_) return;
        if (ec) {
          // A retry: the request had been written on a kept-alive connection
          // that closed without an answer.
          self->fail(steady_now_ns(), ErrorCategory::kConnect,
                     std::string(self->retried_ ? "the kept-alive connection closed before "
                                                  "any response, and reconnecting "
                                                : "") +
                         "connect to " + self->pool_->config().url.authority() + " failed: " +
                         ec.message() + " (is the server running and listening there?)",
                     std::nullopt, false);
          return;
        }
        self->on_connected();
      });
}

void Connection::on_connected() {
  error_code ignored;
  socket().set_option(tcp::no_delay(true), ignored);
  if (!tls_) {
    // Kernel receive times: an event's time is when its bytes reached this host, not when the
    // loop got round to reading them (it lags when thousands of streams deliver at once).
    enable_receive_timestamps(socket().native_handle());
    unwatch();  // a socket of an earlier attempt
    try {
      watch_ = pool_->reactor()->add(socket().native_handle(), *this);
    } catch (const std::system_error& e) {
      fail(steady_now_ns(), ErrorCategory::kConnect,
           std::string("cannot watch the connection's socket: ") + e.what(), std::nullopt, false);
      return;
    }
    reactor_ = pool_->reactor();
    watched_fd_ = socket().native_handle();
    input_pending_ = false;
    hangup_ = false;
  }
  open_ = true;
  pool_->count_open();
  if (!tls_) {
    connecting_ = false;
    rearm();
    start_write();
    return;
  }
  const std::string& host = pool_->config().url.host;
  error_code parse_ec;
  asio::ip::make_address(host, parse_ec);
  if (parse_ec) {  // SNI only for names, never for IP literals
    SSL_ctrl(tls_->native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
             const_cast<char*>(host.c_str()));
  }
  if (pool_->config().tls_verify) {
    tls_->set_verify_mode(ssl::verify_peer);
    tls_->set_verify_callback(ssl::host_name_verification(host));
  } else {
    tls_->set_verify_mode(ssl::verify_none);
  }
  tls_->async_handshake(ssl::stream_base::client, [self = shared_from_this(),
                                                   generation = generation_](const error_code& ec) {
    if (self->pool_ == nullptr || generation != self->generation_) return;
    if (ec) {
      self->fail(steady_now_ns(), ErrorCategory::kTls,
                 "TLS handshake with " + self->pool_->config().url.authority() +
                     " failed: " + ec.message() +
                     " (--ca-file for a private CA, --insecure to skip verification)",
                 std::nullopt, false);
      return;
    }
    self->connecting_ = false;
    self->rearm();
    self->start_write();
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
  if (pool_ == nullptr || generation != generation_) return;
  if (ec) {
    if (reused_ && !retried_) {
      retry_on_fresh_connection();  // stale keep-alive connection: nothing was processed
      return;
    }
    fail(steady_now_ns(), ErrorCategory::kSend,
         "sending the request failed: " + ec.message() +
             " (the server closed or reset the connection while dyno was writing)",
         std::nullopt, false);
    return;
  }
  acknowledge_now();
  start_read();
}

void Connection::acknowledge_now() {
  // Sending the request put the socket into delayed-ACK ("interactive", pingpong) mode. Leave
  // it once per request: a server with Nagle's algorithm on sends its next small write only
  // once the previous one is acknowledged. Out of that mode the kernel acknowledges, within
  // the read that drains the socket, a small (pushed) segment, and any read of more than one
  // segment's worth (tcp_cleanup_rbuf); the mode comes back only when dyno sends again, so
  // the reads need no TCP_QUICKACK of their own (it was one more syscall per read).
  const int on = 1;
  ::setsockopt(socket().native_handle(), IPPROTO_TCP, TCP_QUICKACK, &on, sizeof on);
}

void Connection::retry_on_fresh_connection() {
  retried_ = true;
  reused_ = false;
  close();
  connecting_ = true;
  connect_started_ns_ = steady_now_ns();
  rearm();
  pool_->connect(shared_from_this());
}

void Connection::start_read() {
  if (tls_) {
    auto handler = [self = shared_from_this(), generation = generation_](
                       const error_code& ec, std::size_t n) { self->on_read(generation, ec, n); };
    if (!read_buffer_) read_buffer_.reset(new char[kReadBufferSize]);
    tls_->async_read_some(asio::buffer(read_buffer_.get(), kReadBufferSize), std::move(handler));
    return;
  }
  // Plain TCP: wait for readability through the loop's reactor (read_reactor.h), then
  // recvmsg() ourselves to get the kernel's receive timestamps (Asio's reads do not return
  // ancillary data).
  if (input_pending_) {  // arrived while nobody awaited it: read it now
    input_pending_ = false;
    asio::post(context_, [self = shared_from_this(), generation = generation_] {
      self->on_readable(generation, error_code());
    });
    return;
  }
  if (!awaiting_input_ && reactor_) {
    awaiting_input_ = true;
    reactor_->awaiting();
  }
  await_generation_ = generation_;
}

void Connection::on_input(bool hangup) {
  hangup_ = hangup_ || hangup;
  if (!awaiting_input_) {
    input_pending_ = true;
    return;
  }
  awaiting_input_ = false;
  reactor_->not_awaiting();
  if (await_generation_ != generation_) {  // awaited for a request that has ended
    input_pending_ = true;
    return;
  }
  const auto self = shared_from_this();  // the request may end, and release it, while reading
  on_readable(await_generation_, error_code());
}

void Connection::unwatch() {
  if (!reactor_) return;
  if (awaiting_input_) reactor_->not_awaiting();
  awaiting_input_ = false;
  reactor_->remove(watched_fd_, watch_);
  reactor_.reset();
  watched_fd_ = -1;
}

void Connection::on_readable(std::uint64_t generation, const error_code& ec) {
  if (pool_ == nullptr || generation != generation_) return;
  if (ec) {
    on_read_error(steady_now_ns(), ec);
    return;
  }
  // Drain the socket (the reactor is edge-triggered: a new wait fires only on new data), but
  // at most kMaxReadsPerTurn reads per turn: then the rest is read from a posted continuation,
  // behind every other ready handler and due timer.
  char* const buffer = shared_read_buffer();
  for (int reads = 0;; ++reads) {
    if (reads == kMaxReadsPerTurn) {  // the rest is read after other handlers
      asio::post(context_, [self = shared_from_this(), generation] {
        self->on_readable(generation, error_code());
      });
      return;
    }
    const TimedRecv r =
        recv_timed(plain_->native_handle(), buffer, kSharedReadBufferSize, MSG_DONTWAIT);
    const ssize_t n = r.bytes;
    const std::int64_t now = r.now_ns != 0 ? r.now_ns : steady_now_ns();
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
    const bool drained = static_cast<std::size_t>(n) < kSharedReadBufferSize;
    // Never before the request was sent or after now (the clocks' offset is read per call).
    std::int64_t t_ns = r.receive_ns.value_or(now);
    t_ns = std::clamp(t_ns, std::max(sent_ns_, read_ns_), std::max(now, sent_ns_));
    response_started_ = true;
    if (!process(t_ns, buffer, static_cast<std::size_t>(n)) || pool_ == nullptr ||
        generation != generation_) {
      input_pending_ = !drained || hangup_;  // the request ended; what is left is the next read's
      return;
    }
    if (drained && !hangup_) break;  // after a hang-up, read on to the end (or EAGAIN)
  }
  start_read();
}

void Connection::on_read(std::uint64_t generation, const error_code& ec, std::size_t n) {
  if (pool_ == nullptr || generation != generation_) return;
  // One clock read per socket read: every event parsed from these bytes gets this time.
  const std::int64_t t_ns = steady_now_ns();
  if (n > 0) {
    response_started_ = true;
    if (!process(t_ns, read_buffer_.get(), n)) return;
  }
  if (ec) {
    on_read_error(t_ns, ec);
    return;
  }
  start_read();
}

void Connection::on_read_error(std::int64_t t_ns, const error_code& ec) {
  if (ec == asio::error::operation_aborted) return;
  if (reader_.eof_completes() && (ec == asio::error::eof || ec == ssl::error::stream_truncated)) {
    // The end of a close-delimited body (a TLS peer may close without close_notify).
    keep_alive_ = false;
    on_body_complete(t_ns);
    return;
  }
  if (!response_started_) {
    if (reused_ && !retried_) {
      retry_on_fresh_connection();
      return;
    }
    fail(t_ns, ErrorCategory::kConnect,
         "the connection closed before the response started: " + ec.message(), std::nullopt, false);
    return;
  }
  if (decoder_->progress().done) {
    complete(decoder_->progress().done_ns, false);
    return;
  }
  fail(t_ns, ErrorCategory::kStreamTruncated,
       "the connection closed before the response was complete: " + ec.message() + " (" +
           describe_response() + ")",
       status_ != 0 ? std::optional<int>(status_) : std::nullopt, false);
}

bool Connection::process(std::int64_t t_ns, const char* data, std::size_t n) {
  read_ns_ = t_ns;
  const std::uint64_t generation = generation_;
  std::size_t used = 0;
  const HttpResponseReader::State state = reader_.feed(data, n, *this, &used);
  if (generation != generation_ || observer_ == nullptr) return false;  // ended in a handler
  switch (state) {
    case HttpResponseReader::State::kNeedMore:
      return true;
    case HttpResponseReader::State::kError:
      fail(t_ns,
           reader_.error_kind() == HttpResponseReader::ErrorKind::kTooLarge
               ? ErrorCategory::kTooLarge
               : ErrorCategory::kParse,
           reader_.error(), status_ != 0 ? std::optional<int>(status_) : std::nullopt, false);
      return false;
    case HttpResponseReader::State::kComplete:
      if (used != n) keep_alive_ = false;  // bytes beyond the response: do not trust the socket
      on_body_complete(t_ns);
      return false;
    case HttpResponseReader::State::kStopped:
      keep_alive_ = false;  // enough of the body was read; the rest is not waited for
      on_body_complete(t_ns);
      return false;
  }
  return false;
}

bool Connection::on_head(const ResponseHead& head) {
  status_ = head.status;
  keep_alive_ = head.keep_alive;
  content_type_ = head.content_type;
  location_ = head.location;
  observer_->on_first_byte(read_ns_, status_);
  if (status_ < 200 || status_ >= 300) return true;  // the error body is read for its excerpt
  if (!head.content_encoding.empty() && head.content_encoding != "identity") {
    fail(read_ns_, ErrorCategory::kBadResponse,
         "the response is " + head.content_encoding +
             "-encoded, which dyno did not ask for (it "
             "sends no Accept-Encoding): a proxy or the server compresses responses; turn that off "
             "for this endpoint",
         status_, false);
    return false;
  }
  std::string refused = decoder_->accept(facts(), pool_->config().stream);
  if (!refused.empty()) [[unlikely]] {
    fail(read_ns_, ErrorCategory::kBadResponse, std::move(refused), status_, false);
    return false;
  }
  return true;
}

bool Connection::on_body(std::string_view bytes) {
  if (bytes.empty()) return true;
  body_bytes_ += bytes.size();
  if (status_ < 200 || status_ >= 300) {
    // One byte past the excerpt, so bounded_excerpt() knows whether it cuts.
    if (error_body_.size() <= kServerTextBytes) {
      error_body_.append(bytes.substr(0, kServerTextBytes + 1 - error_body_.size()));
    }
    error_body_size_ += bytes.size();
    return error_body_size_ <= kMaxErrorBody;  // enough of it; the connection is closed after
  }
  const DecodeProgress before = decoder_->progress();
  const bool decoded = decoder_->feed(read_ns_, bytes);
  if (observer_ == nullptr) return false;  // an observer call ended the request
  if (!decoded) {
    Verdict verdict = decoder_->take_error();
    fail(read_ns_, *verdict.error, std::move(verdict.message), status_, false);
    return false;
  }
  const DecodeProgress& after = decoder_->progress();
  // The first token moves the first-token deadline to the idle one; an end marker starts the
  // drain grace period for the end of the body.
  if (after.first_token != before.first_token || after.done != before.done) rearm();
  return true;
}

void Connection::on_body_complete(std::int64_t t_ns) {
  const bool keep = keep_alive_;
  if (status_ < 200 || status_ >= 300) {
    std::string message = std::to_string(status_);
    if (is_redirect(status_)) {
      message += location_.empty() ? " redirect (no Location)" : " redirect to " + location_;
      message += ": dyno does not follow redirects; give the final address to --url";
    } else if (!error_body_.empty()) {
      message.push_back(' ');
      message += bounded_excerpt(error_body_);
    }
    fail(t_ns, ErrorCategory::kHttpStatus, std::move(message), status_, keep);
    return;
  }
  Verdict verdict = decoder_->end_of_body(t_ns, facts());
  if (observer_ == nullptr) return;  // an observer call ended the request
  if (verdict.error) {
    fail(t_ns, *verdict.error, std::move(verdict.message), status_,
         keep && verdict.keep_connection);
    return;
  }
  const DecodeProgress& progress = decoder_->progress();
  complete(progress.done ? progress.done_ns : t_ns, keep);
}

void Connection::complete(std::int64_t t_ns, bool keep_connection) {
  Verdict verdict = decoder_->verdict(facts());
  if (verdict.error) {
    fail(t_ns, *verdict.error, std::move(verdict.message), status_, keep_connection);
    return;
  }
  finish_done(t_ns, keep_connection);
}

void Connection::finish_done(std::int64_t t_ns, bool keep_connection) {
  StreamObserver* observer = observer_;
  if (observer == nullptr) return;
  observer_ = nullptr;
  decoder_->end();
  ++generation_;
  ++timer_generation_;
  timer_.cancel();
  // Move what the callbacks need out first: the observer may submit again from on_done, which
  // can reuse this very connection.
  std::optional<Usage> usage;
  DoneInfo info;
  decoder_->take_answer(usage, info);
  auto self = shared_from_this();
  if (keep_connection && keep_alive_ && open_ && pool_ != nullptr) {
    pool_->release(self);
  } else {
    close();
    if (pool_ != nullptr) pool_->drop(this);
  }
  if (usage) observer->on_usage(*usage);
  observer->on_done(t_ns, info);
}

void Connection::fail(std::int64_t t_ns, ErrorCategory category, std::string message,
                      std::optional<int> http_status, bool keep_connection) {
  StreamObserver* observer = observer_;
  if (observer == nullptr) return;
  if (category == ErrorCategory::kCancelled && decoder_->progress().done) {
    // it had completed; only the end of the body was pending
    complete(decoder_->progress().done_ns, false);
    return;
  }
  observer_ = nullptr;
  decoder_->end();
  ++generation_;
  ++timer_generation_;
  timer_.cancel();
  auto self = shared_from_this();
  if (keep_connection && keep_alive_ && open_ && pool_ != nullptr) {
    pool_->release(self);
  } else {
    close();
    if (pool_ != nullptr) pool_->drop(this);
  }
  observer->on_error(t_ns, category, message, http_status);
}

void Connection::close() {
  unwatch();
  error_code ignored;
  if (tls_) {
    tls_->next_layer().close(ignored);
  } else if (plain_) {
    plain_->close(ignored);
  }
  open_ = false;
}

}  // namespace dyno::transport::http
