// One connection of an HttpTarget (internal to transport/): a socket serving one request at a
// time (HTTP/1.1 without pipelining), its deadlines, and the response's HTTP framing; what the
// body of a 2xx response says (events, tokens, the verdict) is its StreamDecoder's
// (stream_decoder.h; the OpenAI-compatible one, openai_decoder.h). The pool that owns
// connections is http_target.cpp's.
//
// Every async handler holds a shared_ptr to its connection plus the connection's generation
// number at the time it was started; a handler whose generation is stale (the request ended
// meanwhile, by error, timeout or cancel) does nothing. The response framing is read in place on
// the read buffer (http_response.h; for plain TCP one 256 KiB buffer per loop thread, shared by
// its connections), so body bytes go straight to the decoder. A plain socket's readiness
// comes from the pool's ReadReactor (read_reactor.h), a TLS stream's reads from Asio.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "transport/http_response.h"
#include "transport/http_target.h"
#include "transport/read_reactor.h"
#include "transport/stream_decoder.h"

namespace dyno::transport::http {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;
using boost::system::error_code;

/// A request's wire form and limits, built by prepare() before the run.
struct Prepared final : PreparedRequest {
  std::string head;  ///< request line and headers, without X-Request-Id and the final CRLF
  std::string body;
  std::int64_t first_token_ns = 0;  ///< from sent; 0: no limit
  std::int64_t total_ns = 0;        ///< from sent; 0: no limit
  std::string first_token_source;   ///< "--first-token-timeout" or "derived from the request"
  std::string total_source;
  bool expects_tokens = true;  ///< false when the request asked for max_tokens 0
};

class Connection;

/// What a connection needs from the pool that owns it.
class Pool {
 public:
  virtual ~Pool() = default;
  virtual const HttpTargetConfig& config() const = 0;
  /// Resolves the host (once) and calls Connection::connect.
  virtual void connect(const std::shared_ptr<Connection>& connection) = 0;
  /// The request ended and the connection can serve another: back to the idle pool.
  virtual void release(const std::shared_ptr<Connection>& connection) = 0;
  /// The connection was closed: forget it.
  virtual void drop(Connection* connection) = 0;
  virtual void count_open() = 0;
  /// The loop's readiness set for plain-TCP sockets (read_reactor.h).
  virtual const std::shared_ptr<ReadReactor>& reactor() = 0;
};

class Connection : public std::enable_shared_from_this<Connection>,
                   private HttpResponseReader::Handler,
                   private ReadReactor::Client {
 public:
  Connection(Pool* pool, asio::io_context& context, ssl::context* tls_context);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void begin(const Prepared& request, std::uint64_t submission, StreamObserver& observer,
             bool reused, const std::string& id_prefix);
  void start(std::uint64_t generation);
  void connect(const tcp::resolver::results_type& endpoints);
  void fail(std::int64_t t_ns, ErrorCategory category, std::string message,
            std::optional<int> http_status, bool keep_connection);
  void close();
  /// The pool goes away: no callback will reach it or an observer again.
  void detach() {
    pool_ = nullptr;
    ++generation_;
    close();
  }
  /// Idle in the pool: closes itself (and tells the pool to drop it) after `after_ns`.
  void arm_idle_close(std::int64_t after_ns);
  std::uint64_t generation() const { return generation_; }
  bool in_flight() const { return observer_ != nullptr; }

 private:
  enum class Deadline { kNone, kConnect, kFirstToken, kTotal, kIdle, kDrain, kIdleClose };

  tcp::socket& socket() { return tls_ ? tls_->next_layer() : *plain_; }
  void on_connected();
  void start_write();
  void on_write(std::uint64_t generation, const error_code& ec);
  void start_read();
  void on_read(std::uint64_t generation, const error_code& ec, std::size_t n);
  void on_readable(std::uint64_t generation, const error_code& ec);
  void on_input(bool hangup) override;
  /// Leaves the reactor's set (before the socket closes) and stops awaiting input.
  void unwatch();
  void on_read_error(std::int64_t t_ns, const error_code& ec);
  void retry_on_fresh_connection();
  void acknowledge_now();
  // Returns false when the request ended (terminal callback made) while processing.
  bool process(std::int64_t t_ns, const char* data, std::size_t n);
  bool on_head(const ResponseHead& head) override;
  bool on_body(std::string_view bytes) override;
  void on_body_complete(std::int64_t t_ns);
  /// The answer is complete: done, or the error the decoder's verdict names.
  void complete(std::int64_t t_ns, bool keep_connection);
  void finish_done(std::int64_t t_ns, bool keep_connection);
  void rearm();
  void on_timer(std::uint64_t timer_generation, const error_code& ec);
  ResponseFacts facts() const { return {status_, content_type_, body_bytes_}; }
  std::string describe_response() const { return decoder_->describe(facts()); }

  Pool* pool_;
  asio::io_context& context_;
  ssl::context* tls_context_;
  std::optional<tcp::socket> plain_;
  std::unique_ptr<ssl::stream<tcp::socket>> tls_;
  bool open_ = false;
  std::uint64_t generation_ = 0;
  asio::steady_timer timer_;
  std::uint64_t timer_generation_ = 0;
  Deadline deadline_kind_ = Deadline::kNone;
  std::unique_ptr<char[]> read_buffer_;  ///< TLS only (allocated at the first TLS read)
  // Plain TCP: readiness through the pool's reactor (registered once per socket).
  std::shared_ptr<ReadReactor> reactor_;  // while the socket is watched
  ReadReactor::Token watch_{};
  int watched_fd_ = -1;
  bool awaiting_input_ = false;  // start_read() waits for on_input()
  bool input_pending_ = false;   // input arrived while not awaiting it (or not all was read)
  bool hangup_ = false;          // the peer's end or an error is signalled: read to EAGAIN
  std::uint64_t await_generation_ = 0;

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
  std::uint64_t body_bytes_ = 0;
  std::int64_t read_ns_ = 0;  // time of the read being processed
  /// The body's meaning (events, tokens, verdict): one decoder per connection, begun anew for
  /// each request so its buffers are kept. The place another wire format would be chosen.
  std::unique_ptr<StreamDecoder> decoder_;

  // The response.
  HttpResponseReader reader_;
  int status_ = 0;
  bool keep_alive_ = true;
  std::string content_type_;
  std::string location_;
  std::string error_body_;  // first bytes of a non-2xx body
  std::size_t error_body_size_ = 0;
};

}  // namespace dyno::transport::http
