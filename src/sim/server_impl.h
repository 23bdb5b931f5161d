// The simulated engine's server, internal to the sim library: the state the connection side
// (server_http.cpp) and the engine side (server.cpp) share — the Impl of sim::Server, a stream
// in flight, a connection — and the small helpers both use. Include it only from those files.
#pragma once

#include <pthread.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <charconv>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <list>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>

#include "json/json_text.h"
#include "sim/model.h"
#include "sim/request.h"
#include "sim/server.h"
#include "sim/tokenizer.h"
#include "transport/kernel_time.h"

namespace dyno::sim {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

// Backpressure: a sequence whose connection has more than kHighWater rendered but unsent bytes
// is paused in the model until the writer drains it below kLowWater.
inline constexpr std::size_t kHighWater = 256 * 1024;
inline constexpr std::size_t kLowWater = 64 * 1024;
// Zero-delay engine: steps run back to back for at most this many steps, or this many events per
// running sequence (at least kZeroDelayBurstEvents), before the engine yields to the io_context
// (the writers then send all of it in one write each). So a firehose stream gets up to 16
// events per write at any concurrency, not one event per write once many streams run.
inline constexpr std::size_t kZeroDelayBurstSteps = 16;
inline constexpr std::size_t kZeroDelayBurstEvents = 512;
inline constexpr std::uint64_t kBodyLimit = 64ull * 1024 * 1024;

inline std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

inline std::string json_string(std::string_view s) { return json::serialize(json::string(s)); }

enum class Fault { kNone, kHttp500, kHttp429, kMalformed, kCut, kStall, kError, kUnfinished };

inline const char* fault_name(Fault f) {
  switch (f) {
    case Fault::kNone:
      return "none";
    case Fault::kHttp500:
      return "http_500";
    case Fault::kHttp429:
      return "http_429";
    case Fault::kMalformed:
      return "malformed";
    case Fault::kCut:
      return "cut";
    case Fault::kStall:
      return "stall";
    case Fault::kError:
      return "error";
    case Fault::kUnfinished:
      return "unfinished";
  }
  return "none";
}

/// The error object of an injected in-stream error (vLLM's shape).
std::string injected_error_json();

inline bool every(std::uint32_t n, std::uint64_t ordinal) { return n != 0 && ordinal % n == 0; }

inline const char* finish_name(FinishReason r) {
  return r == FinishReason::kStop ? "stop" : "length";
}

// A request-level error carried to the HTTP response.
struct HttpError {
  http::status status;
  std::string message;
  std::string type = "invalid_request_error";
};

inline HttpError http_error(const RequestError& e) {
  return HttpError{static_cast<http::status>(e.status), e.message, e.type};
}

inline std::string error_body(const HttpError& e) {
  json::object err;
  err["message"] = e.message;
  err["type"] = e.type;
  err["code"] = static_cast<int>(e.status);
  json::object body;
  body["error"] = std::move(err);
  return json::serialize(body);
}

// Connection state shared by the session coroutine and the server's stop().
struct Conn {
  explicit Conn(tcp::socket s) : socket(std::move(s)) {}
  tcp::socket socket;
  std::int64_t arrived_ns = 0;  // the request being read: when its first bytes reached the host
};

// The kernel's receive time (SO_TIMESTAMPNS, on the steady clock) of the bytes waiting on a
// socket, read without consuming them; steady now when the kernel gave none.
inline std::int64_t peek_arrival_ns(tcp::socket& socket) {
  char byte = 0;
  const std::int64_t now = steady_ns();
  const transport::TimedRecv r =
      transport::recv_timed(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (r.bytes < 1) return now;
  return r.receive_ns ? std::min(now, *r.receive_ns) : now;
}

// One completion request in flight: what the engine renders for its connection's writer.
struct Stream {
  explicit Stream(asio::any_io_executor ex) : signal(ex) {}

  std::uint64_t id = 0;
  CompletionRequest req;
  std::uint64_t text_seed = 0;
  Fault fault = Fault::kNone;    // assigned by ordinal (malformed/cut/stall)
  bool fault_done = false;       // the assigned fault happened (recorded in the truth log)
  bool fault_triggered = false;  // cut/stall happened: no more events are rendered
  std::string prefix_content;    // pre-rendered SSE chunk parts
  std::string prefix_reasoning;
  std::string suffix;
  std::string chunk_head;  // `data: {"id":..,"object":..,"created":..,"model":..,`

  std::string pending;  // rendered, unsent bytes (streaming)
  std::vector<std::int32_t> pending_event_tokens;
  bool role_sent = false;
  bool paused = false;
  bool finished = false;       // the model finished the sequence
  bool tail_rendered = false;  // final/usage/[DONE] chunks are in `pending`
  FinishReason finish = FinishReason::kNone;
  std::int64_t generated = 0;
  std::int64_t reasoning_tokens = 0;
  std::int64_t events_rendered = 0;
  std::string content;  // non-streaming text
  std::string reasoning;

  std::string xid;  // X-Request-Id
  std::int64_t received_ns = 0;
  std::int64_t arrived_ns = 0;
  bool logged = false;  // the truth line is written
  std::vector<std::int64_t> event_times_ns;
  std::vector<std::int32_t> event_tokens;
  asio::steady_timer signal;  // cancelled to wake the connection's writer

  // The engine's own times (model clock, seconds since the server's epoch) and speculative
  // counts, for the llama.cpp-shaped `timings` object of the response.
  double prefill_start_s = 0.0;    // start of the step with the first prompt chunk
  std::int64_t cached_tokens = 0;  // prompt tokens served by the prefix cache
  double first_token_s = 0.0;      // end of the step that emitted the first token
  double last_token_s = 0.0;       // end of the step that emitted the latest token
  std::int64_t draft_tokens = 0;
  std::int64_t draft_accepted = 0;
  std::string timings;  // the `timings` object as sent, "" until the response carries it
};

struct Sizes {
  std::array<char, 24> text{};
  std::size_t size = 0;
};

inline Sizes chunk_size_line(std::size_t n) {
  Sizes s;
  const int written = std::snprintf(s.text.data(), s.text.size(), "%zx\r\n", n);
  s.size = written > 0 ? static_cast<std::size_t>(written) : 0;
  return s;
}

struct Server::Impl {
  explicit Impl(ServerOptions o) : options(std::move(o)), model(options.profile, options.seed) {}

  ServerOptions options;
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  asio::steady_timer engine_wake{io};
  asio::steady_timer step_timer{io};
  Model model;
  Clock::time_point epoch = Clock::now();
  std::unordered_map<std::uint64_t, std::shared_ptr<Stream>> streams;
  std::list<std::weak_ptr<Conn>> conns;
  std::uint64_t next_id = 1;
  std::uint64_t ordinal = 0;
  std::uint64_t ended = 0;
  bool stopping = false;
  // GET /metrics counters, updated on the server thread as the engine emits events.
  struct Counters {
    std::int64_t prompt_tokens = 0;         // prompts whose prefill completed (first token out)
    std::int64_t generation_tokens = 0;     // output tokens emitted
    std::int64_t finished_length = 0;       // sequences the engine finished at max_tokens
    std::int64_t finished_stop = 0;         // ... by an EOS draw
    std::int64_t spec_draft_tokens = 0;     // spec_tokens per decode event
    std::int64_t spec_accepted_tokens = 0;  // tokens of a decode event beyond the first
  };
  Counters counters;
  std::uint16_t bound_port = 0;

  std::ofstream truth_file;
  std::string truth_buf;

  std::thread thread;
  double thread_cpu_s = 0.0;  // written by the server thread as it ends; read after join
  std::atomic<bool> started{false};
  std::mutex join_mutex;
  bool joined = false;

  double now_s() const { return std::chrono::duration<double>(Clock::now() - epoch).count(); }
  void wake_engine() { engine_wake.cancel(); }

  std::uint16_t start();
  void initiate_stop();
  void join_and_flush();

  asio::awaitable<void> accept_loop();
  asio::awaitable<void> engine_loop();
  asio::awaitable<void> session(std::shared_ptr<Conn> conn);
  asio::awaitable<bool> handle(Conn& conn, http::request<http::string_body>& req);
  asio::awaitable<bool> handle_completion(Conn& conn, http::request<http::string_body>& req,
                                          bool chat);
  asio::awaitable<bool> stream_response(Conn& conn, Stream& stream, bool keep_alive);
  asio::awaitable<bool> whole_response(Conn& conn, Stream& stream, unsigned version,
                                       bool keep_alive);
  asio::awaitable<void> wait_for_close(Conn& conn);

  void dispatch(const Event& e);
  std::string timings_json(const Stream& st) const;
  std::int64_t model_ns(double model_s) const;
  void render_tail(Stream& st);
  /// An error or unfinished fault's end of a streamed answer (Faults).
  void render_early_end(Stream& st);
  void trigger_fault(Stream& st);
  void log_stream(Stream& st, std::int64_t done_ns);
  void count_end();
  void log_truth(const std::string& request_id, std::int64_t arrived_ns, std::int64_t received_ns,
                 int status, Fault fault, bool stream, const Stream* st, std::int64_t done_ns);

  std::string handle_tokenize(const std::string& body, http::status& status) const;
  std::string handle_apply_template(const std::string& body, http::status& status) const;
  std::string models_body() const;
  std::string metrics_body() const;
};

}  // namespace dyno::sim
