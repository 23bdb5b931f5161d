#include "sim/server.h"

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
#include "sim/tokenizer.h"
#include "transport/kernel_time.h"

namespace dyno::sim {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

// Backpressure: a sequence whose connection has more than kHighWater rendered but unsent bytes
// is paused in the model until the writer drains it below kLowWater.
constexpr std::size_t kHighWater = 256 * 1024;
constexpr std::size_t kLowWater = 64 * 1024;
// Zero-delay engine: steps run back to back for at most this many steps, or this many events per
// running sequence (at least kZeroDelayBurstEvents), before the engine yields to the io_context
// (the writers then send all of it in one write each). So a firehose stream gets up to 16
// events per write at any concurrency, not one event per write once many streams run.
constexpr std::size_t kZeroDelayBurstSteps = 16;
constexpr std::size_t kZeroDelayBurstEvents = 512;
constexpr std::uint64_t kBodyLimit = 64ull * 1024 * 1024;

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

std::string json_string(std::string_view s) { return json::serialize(json::string(s)); }

enum class Fault { kNone, kHttp500, kHttp429, kMalformed, kCut, kStall };

const char* fault_name(Fault f) {
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
  }
  return "none";
}

bool every(std::uint32_t n, std::uint64_t ordinal) { return n != 0 && ordinal % n == 0; }

const char* finish_name(FinishReason r) { return r == FinishReason::kStop ? "stop" : "length"; }

// A request-level error carried to the HTTP response.
struct HttpError {
  http::status status;
  std::string message;
  std::string type = "invalid_request_error";
};

HttpError http_error(const RequestError& e) {
  return HttpError{static_cast<http::status>(e.status), e.message, e.type};
}

std::string error_body(const HttpError& e) {
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
std::int64_t peek_arrival_ns(tcp::socket& socket) {
  char byte = 0;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  const std::int64_t now = steady_ns();
  if (::recvmsg(socket.native_handle(), &msg, MSG_PEEK | MSG_DONTWAIT) < 1) return now;
  const std::optional<std::int64_t> t = transport::kernel_receive_ns(msg);
  return t ? std::min(now, *t) : now;
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
  double prefill_start_s = 0.0;  // start of the step with the first prompt chunk
  double first_token_s = 0.0;    // end of the step that emitted the first token
  double last_token_s = 0.0;     // end of the step that emitted the latest token
  std::int64_t draft_tokens = 0;
  std::int64_t draft_accepted = 0;
  std::string timings;  // the `timings` object as sent, "" until the response carries it
};

struct Sizes {
  std::array<char, 24> text{};
  std::size_t size = 0;
};

Sizes chunk_size_line(std::size_t n) {
  Sizes s;
  const int written = std::snprintf(s.text.data(), s.text.size(), "%zx\r\n", n);
  s.size = written > 0 ? static_cast<std::size_t>(written) : 0;
  return s;
}

}  // namespace

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

// ---------------------------------------------------------------------------------------------
// Lifecycle

std::uint16_t Server::Impl::start() {
  if (options.truth_path) {
    truth_file.open(*options.truth_path, std::ios::binary | std::ios::trunc);
    if (!truth_file) {
      throw std::runtime_error("cannot open truth log " + options.truth_path->string());
    }
  }
  error_code ec;
  tcp::resolver resolver(io);
  const auto results = resolver.resolve(options.host, std::to_string(options.port), ec);
  if (ec || results.empty()) {
    throw std::runtime_error("sim: cannot resolve " + options.host + ": " + ec.message());
  }
  const tcp::endpoint endpoint = results.begin()->endpoint();
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    throw std::runtime_error("sim: cannot listen on " + options.host + ":" +
                             std::to_string(options.port) + ": " + ec.message());
  }
  bound_port = acceptor.local_endpoint().port();
  asio::co_spawn(io, accept_loop(), asio::detached);
  asio::co_spawn(io, engine_loop(), asio::detached);
  thread = std::thread([this] {
    io.run();
    timespec cpu{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    thread_cpu_s = static_cast<double>(cpu.tv_sec) + static_cast<double>(cpu.tv_nsec) * 1e-9;
  });
  started = true;
  return bound_port;
}

// Runs on the server thread: stop accepting, drop every connection, end the loop. Requests in
// flight get no truth line (they never ended).
void Server::Impl::initiate_stop() {
  if (stopping) return;
  stopping = true;
  error_code ec;
  acceptor.close(ec);
  for (auto& weak : conns) {
    if (auto conn = weak.lock()) conn->socket.close(ec);
  }
  engine_wake.cancel();
  step_timer.cancel();
  for (auto& [id, st] : streams) st->signal.cancel();
  io.stop();
}

void Server::Impl::join_and_flush() {
  std::lock_guard lock(join_mutex);
  if (joined || !thread.joinable()) return;
  thread.join();
  joined = true;
  if (truth_file.is_open()) {
    truth_file << truth_buf;
    truth_buf.clear();
    truth_file.flush();
    truth_file.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Engine

asio::awaitable<void> Server::Impl::engine_loop() {
  error_code ec;
  const bool zero_delay = options.profile.zero_delay;
  std::size_t burst_steps = 0;
  std::size_t burst_events = 0;
  while (!stopping) {
    const std::optional<StepPlan> plan = model.start_step(now_s());
    if (!plan) {
      engine_wake.expires_at(Clock::time_point::max());
      co_await engine_wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    if (zero_delay) {
      // Let the sockets be serviced between steps, in bounded bursts: one yield per step would
      // cost one write syscall per step when a single connection streams.
      const std::size_t event_cap =
          std::max(kZeroDelayBurstEvents, kZeroDelayBurstSteps * model.running());
      if (++burst_steps >= kZeroDelayBurstSteps || burst_events >= event_cap) {
        burst_steps = 0;
        burst_events = 0;
        co_await asio::post(io, asio::use_awaitable);
      }
    } else {
      step_timer.expires_at(epoch + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(plan->end_s)));
      co_await step_timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    if (stopping) break;
    const std::vector<Event>& events = model.complete_step();
    burst_events += events.size();
    for (const Event& e : events) dispatch(e);
  }
}

void Server::Impl::dispatch(const Event& e) {
  const auto it = streams.find(e.request_id);
  if (it == streams.end()) return;
  Stream& st = *it->second;
  // Metrics: every event of a live sequence reaches its client (cancelled sequences leave the
  // model at once). A decode event of a speculative profile proposed spec_tokens drafts and
  // accepted all its tokens but the first (the verified/bonus one).
  counters.generation_tokens += e.tokens;
  if (e.first) {
    counters.prompt_tokens += st.req.prompt_tokens;
  } else if (options.profile.spec_tokens > 0) {
    counters.spec_draft_tokens += options.profile.spec_tokens;
    counters.spec_accepted_tokens += e.tokens - 1;
  }
  if (e.finish == FinishReason::kStop) ++counters.finished_stop;
  if (e.finish == FinishReason::kLength) ++counters.finished_length;
  st.generated += e.tokens;
  if (e.kind == TokenKind::kReasoning) st.reasoning_tokens += e.tokens;
  if (e.first) {
    st.prefill_start_s = e.prefill_start_s;
    st.first_token_s = e.time_s;
  } else if (options.profile.spec_tokens > 0) {
    st.draft_tokens += options.profile.spec_tokens;
    st.draft_accepted += e.tokens - 1;
  }
  st.last_token_s = e.time_s;
  const auto first = static_cast<std::uint64_t>(e.first_index);
  const auto count = static_cast<std::uint64_t>(e.tokens);
  if (st.req.stream) {
    if (!st.role_sent && st.req.chat) {
      st.pending += st.chunk_head;
      st.pending +=
          R"("choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,)"
          R"("finish_reason":null}]})"
          "\n\n";
    }
    st.role_sent = true;
    st.pending +=
        e.kind == TokenKind::kReasoning && st.req.chat ? st.prefix_reasoning : st.prefix_content;
    append_output_pieces(st.pending, st.text_seed, first, count);
    st.pending += st.suffix;
    st.pending_event_tokens.push_back(e.tokens);
  } else {
    append_output_pieces(e.kind == TokenKind::kReasoning && st.req.chat ? st.reasoning : st.content,
                         st.text_seed, first, count);
    st.event_tokens.push_back(e.tokens);
  }
  ++st.events_rendered;
  bool wake = st.req.stream;
  // A response that ends at the fault point gets no cut/stall (nothing left to cut).
  if (st.fault != Fault::kNone && !st.fault_done &&
      st.events_rendered >= options.faults.after_tokens &&
      (st.fault == Fault::kMalformed || e.finish == FinishReason::kNone)) {
    trigger_fault(st);
    wake = true;
  }
  if (e.finish != FinishReason::kNone) {
    st.finished = true;
    st.finish = e.finish;
    if (st.req.stream) render_tail(st);
    wake = true;
  }
  if (!st.finished && !st.fault_triggered && st.req.stream && !st.paused &&
      st.pending.size() > kHighWater) {
    st.paused = true;
    model.set_paused(st.id, true);
  }
  if (st.finished || st.fault_triggered) streams.erase(it);  // `st` stays alive in its session
  if (wake) st.signal.cancel();
}

// Malformed: a bad `data:` line, then normal streaming. Cut/stall: the sequence leaves the
// model; the writer sends what is pending, then closes or stalls.
void Server::Impl::trigger_fault(Stream& st) {
  st.fault_done = true;
  if (st.fault == Fault::kMalformed) {
    // Non-streamed responses get a malformed body instead (see whole_response).
    if (st.req.stream) st.pending += "data: {not json\n\n";
    return;
  }
  st.fault_triggered = true;
  if (!st.finished) model.cancel(st.id);
  wake_engine();
}

void Server::Impl::render_tail(Stream& st) {
  const std::int64_t prompt = st.req.prompt_tokens;
  std::string& out = st.pending;
  out += st.chunk_head;
  st.timings = timings_json(st);
  // Like llama.cpp, `timings` rides on the last chunk before [DONE]: the usage chunk when
  // there is one, else the finish_reason chunk.
  const std::string timings_tail = ",\"timings\":" + st.timings + "}\n\n";
  if (st.req.chat) {
    out += R"("choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":")";
    out += finish_name(st.finish);
    out += "\"}]";
  } else {
    out += R"("choices":[{"index":0,"text":"","logprobs":null,"finish_reason":")";
    out += finish_name(st.finish);
    out += "\",\"stop_reason\":null}]";
  }
  out += st.req.include_usage ? std::string("}\n\n") : timings_tail;
  if (st.req.include_usage) {
    out += st.chunk_head;
    out += R"("choices":[],"usage":{"prompt_tokens":)";
    out += std::to_string(prompt);
    out += R"(,"completion_tokens":)";
    out += std::to_string(st.generated);
    out += R"(,"total_tokens":)";
    out += std::to_string(prompt + st.generated);
    if (options.profile.reasoning_fraction > 0.0) {
      out += R"(,"completion_tokens_details":{"reasoning_tokens":)";
      out += std::to_string(st.reasoning_tokens);
      out += "}";
    }
    out += "}";
    out += timings_tail;
  }
  out += "data: [DONE]\n\n";
  st.tail_rendered = true;
}

// llama.cpp's per-response `timings` (server_slot::get_timings): prompt_ms from the start of
// prompt processing to the first token, predicted_ms from the first token to the last,
// predicted_n all output tokens (the first included), the per-token and per-second figures
// derived from them; draft_n/draft_n_accepted only when speculative decoding is on. The sim has
// no prefix cache: cache_n is 0 and prompt_n is the whole prompt. A rate over zero time (zero-
// delay profiles) is null, as llama.cpp's JSON writer renders a non-finite number.
std::string Server::Impl::timings_json(const Stream& st) const {
  const std::int64_t prompt_n = st.req.prompt_tokens;
  const std::int64_t predicted_n = st.generated;
  // Whole microseconds, like llama.cpp's timer (ggml_time_us).
  const auto to_ms = [](double s) { return std::round(s * 1e6) / 1e3; };
  const double prompt_ms = to_ms(st.first_token_s - st.prefill_start_s);
  const double predicted_ms = to_ms(st.last_token_s - st.first_token_s);
  const auto per_token = [](double ms, std::int64_t n) {
    return n > 0 ? ms / static_cast<double>(n) : 0.0;
  };
  const auto per_second = [](double ms, std::int64_t n) -> json::value {
    if (ms <= 0.0) return nullptr;
    return 1e3 / ms * static_cast<double>(n);
  };
  json::object t;
  t["cache_n"] = 0;
  t["prompt_n"] = prompt_n;
  t["prompt_ms"] = prompt_ms;
  t["prompt_per_token_ms"] = per_token(prompt_ms, prompt_n);
  t["prompt_per_second"] = per_second(prompt_ms, prompt_n);
  t["predicted_n"] = predicted_n;
  t["predicted_ms"] = predicted_ms;
  t["predicted_per_token_ms"] = per_token(predicted_ms, predicted_n);
  t["predicted_per_second"] = per_second(predicted_ms, predicted_n);
  if (st.draft_tokens > 0) {
    t["draft_n"] = st.draft_tokens;
    t["draft_n_accepted"] = st.draft_accepted;
  }
  return json_text::compact(t);
}

// A model-clock time as steady-clock ns (the truth log's clock).
std::int64_t Server::Impl::model_ns(double model_s) const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(epoch.time_since_epoch()).count() +
         std::llround(model_s * 1e9);
}

// ---------------------------------------------------------------------------------------------
// Connections

asio::awaitable<void> Server::Impl::accept_loop() {
  while (!stopping) {
    error_code ec;
    tcp::socket socket(io);
    co_await acceptor.async_accept(socket, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (stopping || !acceptor.is_open()) co_return;
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    transport::enable_receive_timestamps(socket.native_handle());  // the truth's arrived_ns
    auto conn = std::make_shared<Conn>(std::move(socket));
    // Forget connections that ended, so the list stays as long as the live set.
    conns.remove_if([](const std::weak_ptr<Conn>& w) { return w.expired(); });
    conns.push_back(conn);
    asio::co_spawn(io, session(std::move(conn)), asio::detached);
  }
}

asio::awaitable<void> Server::Impl::session(std::shared_ptr<Conn> conn) {
  beast::flat_buffer buffer;
  try {
    while (!stopping) {
      error_code ec;
      http::request_parser<http::string_body> parser;
      parser.body_limit(kBodyLimit);
      if (buffer.size() == 0) {
        co_await conn->socket.async_wait(tcp::socket::wait_read,
                                         asio::redirect_error(asio::use_awaitable, ec));
        if (ec) break;
        conn->arrived_ns = peek_arrival_ns(conn->socket);
      } else {
        conn->arrived_ns = steady_ns();  // already read with the previous request
      }
      co_await http::async_read_header(conn->socket, buffer, parser,
                                       asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;
      // curl sends "Expect: 100-continue" for larger bodies and waits a second for this.
      if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        co_await asio::async_write(conn->socket, asio::buffer(kContinue),
                                   asio::redirect_error(asio::use_awaitable, ec));
        if (ec) break;
      }
      co_await http::async_read(conn->socket, buffer, parser,
                                asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;
      http::request<http::string_body> req = parser.release();
      if (!co_await handle(*conn, req)) break;
    }
  } catch (const std::exception&) {
    // A connection's failure never takes the server down; the socket is closed below.
  }
  error_code ignored;
  conn->socket.shutdown(tcp::socket::shutdown_both, ignored);
  conn->socket.close(ignored);
}

namespace {

http::response<http::string_body> make_response(http::status status, unsigned version,
                                                bool keep_alive, std::string body,
                                                std::string_view content_type) {
  http::response<http::string_body> res{status, version};
  res.set(http::field::server, "dyno-sim");
  res.set(http::field::content_type, content_type);
  res.keep_alive(keep_alive);
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

}  // namespace

// Note: no temporaries with destructors inside co_await expressions here and below (GCC 12
// mis-destroys some of them); values are computed into locals first.
asio::awaitable<bool> Server::Impl::handle(Conn& conn, http::request<http::string_body>& req) {
  std::string_view target = req.target();
  if (const auto q = target.find('?'); q != std::string_view::npos) target = target.substr(0, q);
  const bool keep_alive = req.keep_alive();
  const auto method = req.method();
  const bool completion = target == "/v1/chat/completions" || target == "/v1/completions";
  if (completion && method == http::verb::post) {
    const bool chat = target == "/v1/chat/completions";
    const bool keep = co_await handle_completion(conn, req, chat);
    co_return keep;
  }

  http::status status = http::status::ok;
  std::string body;
  std::string_view content_type = "application/json";
  if (completion) {
    status = http::status::method_not_allowed;
    body = error_body(HttpError{status, "use POST for " + std::string(target)});
  } else if (target == "/health" && method == http::verb::get) {
    body = "{}";
  } else if (target == "/v1/models" && method == http::verb::get) {
    body = models_body();
  } else if (target == "/version" && method == http::verb::get) {
    // vLLM's shape ({"version"}), plus what the engine is (read by dyno's identity probe).
    body = json::serialize(json::object{{"version", std::string(DYNO_SIM_VERSION)},
                                        {"engine", "dyno-sim"},
                                        {"profile", options.profile.name}});
  } else if (target == "/metrics" && method == http::verb::get) {
    body = metrics_body();
    content_type = "text/plain; version=0.0.4";
  } else if (target == "/tokenize" && method == http::verb::post) {
    body = handle_tokenize(req.body(), status);
  } else if (target == "/apply-template" && method == http::verb::post) {
    body = handle_apply_template(req.body(), status);
  } else {
    status = http::status::not_found;
    body = error_body(HttpError{
        status, "no route for " + std::string(req.method_string()) + " " + std::string(target),
        "not_found_error"});
  }
  http::response<http::string_body> res =
      make_response(status, req.version(), keep_alive, std::move(body), content_type);
  error_code ec;
  co_await http::async_write(conn.socket, res, asio::redirect_error(asio::use_awaitable, ec));
  co_return !ec && keep_alive;
}

std::string Server::Impl::models_body() const {
  json::object entry;
  entry["id"] = options.profile.model_name;
  entry["object"] = "model";
  entry["created"] = 0;
  entry["owned_by"] = "dyno-sim";
  entry["max_model_len"] = options.profile.max_model_len;
  json::array data;
  data.push_back(std::move(entry));
  json::object body;
  body["object"] = "list";
  body["data"] = std::move(data);
  return json::serialize(body);
}

namespace {

// Prometheus text exposition (format 0.0.4) of one metric family with one sample per label set.
class Exposition {
 public:
  void family(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  // `labels` is the rendered label set without braces ("" for none).
  void sample(std::string_view name, std::string_view labels, double value) {
    out_ += name;
    if (!labels.empty()) {
      out_ += '{';
      out_ += labels;
      out_ += '}';
    }
    out_ += ' ';
    std::array<char, 32> buf{};
    const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), value);
    out_.append(buf.data(), ec == std::errc{} ? end : buf.data());
    out_ += '\n';
  }
  void metric(std::string_view name, std::string_view type, std::string_view help,
              std::string_view labels, double value) {
    family(name, type, help);
    sample(name, labels, value);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// A Prometheus label value: backslash, double quote and newline escaped.
std::string label_value(std::string_view v) {
  std::string out;
  for (const char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

// Runs on the server thread (the handler's), so the counters and the model are read in place.
std::string Server::Impl::metrics_body() const {
  const Counters& c = counters;
  const auto running = static_cast<double>(model.running());
  const auto waiting = static_cast<double>(model.waiting());
  const std::int64_t capacity = options.profile.kv_capacity_tokens;
  const double kv =
      capacity > 0
          ? std::min(1.0, static_cast<double>(model.kv_used()) / static_cast<double>(capacity))
          : 0.0;
  const auto n = [](std::int64_t v) { return static_cast<double>(v); };
  const std::string model_label = "model_name=\"" + label_value(options.profile.model_name) + "\"";
  Exposition x;
  // vLLM's dialect (labelled with the served model name).
  x.metric("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.",
           model_label, running);
  x.metric("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
           model_label, waiting);
  x.metric("vllm:kv_cache_usage_perc", "gauge",
           "KV-cache usage. 1 means 100 percent usage (reserved tokens / capacity).", model_label,
           kv);
  x.metric("vllm:num_preemptions_total", "counter",
           "Cumulative number of preemption from the engine.", model_label, 0.0);
  x.metric("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.",
           model_label, n(c.prompt_tokens));
  x.metric("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.",
           model_label, n(c.generation_tokens));
  x.family("vllm:request_success_total", "counter", "Count of successfully processed requests.");
  x.sample("vllm:request_success_total", model_label + ",finished_reason=\"length\"",
           n(c.finished_length));
  x.sample("vllm:request_success_total", model_label + ",finished_reason=\"stop\"",
           n(c.finished_stop));
  if (options.profile.spec_tokens > 0) {
    x.metric("vllm:spec_decode_num_draft_tokens_total", "counter", "Number of draft tokens.",
             model_label, n(c.spec_draft_tokens));
    x.metric("vllm:spec_decode_num_accepted_tokens_total", "counter", "Number of accepted tokens.",
             model_label, n(c.spec_accepted_tokens));
  }
  // llama.cpp's dialect (no labels): the same numbers.
  x.metric("llamacpp:prompt_tokens_total", "counter", "Number of prompt tokens processed.", "",
           n(c.prompt_tokens));
  x.metric("llamacpp:tokens_predicted_total", "counter", "Number of generation tokens processed.",
           "", n(c.generation_tokens));
  x.metric("llamacpp:requests_processing", "gauge", "Number of requests processing.", "", running);
  x.metric("llamacpp:requests_deferred", "gauge", "Number of requests deferred.", "", waiting);
  x.metric("llamacpp:kv_cache_usage_ratio", "gauge", "KV-cache usage. 1 = 100% used.", "", kv);
  return x.take();
}

namespace {

// The token id every image counts as in /tokenize answers.
std::int32_t image_token_id() { return token_id("<image>"); }

}  // namespace

std::string Server::Impl::handle_tokenize(const std::string& body, http::status& status) const {
  try {
    const json::object o = parse_object(body);
    if (const json::value* m = o.if_contains("model");
        m && m->is_string() && m->get_string() != options.profile.model_name) {
      throw RequestError{404, "The model `" + std::string(m->get_string()) + "` does not exist."};
    }
    std::string text;
    std::int64_t images = 0;
    bool llama = false;  // llama.cpp's shape: {"content": ..} -> {"tokens": [..]} only
    if (const json::value* messages = o.if_contains("messages")) {
      ParsedChat parsed = parse_messages(*messages);
      text = apply_chat_template(parsed.messages, optional_bool(o, "add_generation_prompt", true),
                                 options.profile.chat_template_tokens);
      images = parsed.images;
    } else if (const json::value* prompt = o.if_contains("prompt")) {
      if (!prompt->is_string()) bad_request("'prompt' must be a string");
      text = std::string(prompt->get_string());
    } else if (const json::value* content = o.if_contains("content")) {
      if (!content->is_string()) bad_request("'content' must be a string");
      text = std::string(content->get_string());
      llama = true;
    } else {
      bad_request("'prompt', 'messages' or 'content' is required");
    }
    const bool with_pieces = llama && optional_bool(o, "with_pieces", false);
    json::array ids;
    for (const Token& t : tokenize(text)) {
      if (with_pieces) {
        ids.push_back(json::object{{"id", t.id}, {"piece", t.piece}});
      } else {
        ids.push_back(t.id);
      }
    }
    for (std::int64_t i = 0; i < images * options.profile.image_tokens; ++i) {
      ids.push_back(image_token_id());
    }
    json::object out;
    if (!llama) {
      out["count"] = ids.size();
      out["max_model_len"] = options.profile.max_model_len;
    }
    out["tokens"] = std::move(ids);
    return json::serialize(out);
  } catch (const RequestError& e) {
    const HttpError error = http_error(e);
    status = error.status;
    return error_body(error);
  }
}

std::string Server::Impl::handle_apply_template(const std::string& body,
                                                http::status& status) const {
  try {
    const json::object o = parse_object(body);
    const json::value* messages = o.if_contains("messages");
    if (!messages) bad_request("'messages' is required");
    const ParsedChat parsed = parse_messages(*messages);
    json::object out;
    out["prompt"] =
        apply_chat_template(parsed.messages, optional_bool(o, "add_generation_prompt", true),
                            options.profile.chat_template_tokens);
    return json::serialize(out);
  } catch (const RequestError& e) {
    const HttpError error = http_error(e);
    status = error.status;
    return error_body(error);
  }
}

asio::awaitable<bool> Server::Impl::handle_completion(Conn& conn,
                                                      http::request<http::string_body>& req,
                                                      bool chat) {
  const std::int64_t received_ns = steady_ns();
  const std::uint64_t n = ++ordinal;
  const bool keep_alive = req.keep_alive();
  std::string xid;
  if (const auto it = req.find("X-Request-Id"); it != req.end()) xid = std::string(it->value());
  const Faults& faults = options.faults;

  // Plain error responses (injected 500/429 first: they stand in for a failing front end).
  std::optional<HttpError> error;
  Fault fault = Fault::kNone;
  CompletionRequest parsed;
  if (every(faults.http_500_every, n)) {
    fault = Fault::kHttp500;
    error = HttpError{http::status::internal_server_error, "injected fault: internal error",
                      "server_error"};
  } else if (every(faults.http_429_every, n)) {
    fault = Fault::kHttp429;
    error = HttpError{http::status::too_many_requests, "injected fault: rate limited",
                      "rate_limit_error"};
  } else {
    try {
      parsed = parse_completion(req.body(), chat, options.profile);
    } catch (const RequestError& e) {
      error = http_error(e);
    }
  }
  if (error) {
    auto res = make_response(error->status, req.version(), keep_alive, error_body(*error),
                             "application/json");
    if (fault == Fault::kHttp429) res.set(http::field::retry_after, "1");
    log_truth(xid, conn.arrived_ns, received_ns, static_cast<int>(error->status), fault,
              parsed.stream, nullptr, steady_ns());
    error_code ec;
    co_await http::async_write(conn.socket, res, asio::redirect_error(asio::use_awaitable, ec));
    if (!stopping) count_end();
    co_return !ec && keep_alive && !stopping;
  }

  auto st = std::make_shared<Stream>(io.get_executor());
  st->id = next_id++;
  st->req = parsed;
  st->xid = std::move(xid);
  st->received_ns = received_ns;
  st->arrived_ns = conn.arrived_ns;
  st->text_seed = parsed.seed ? *parsed.seed : default_text_seed(options.seed, n);
  if (every(faults.malformed_every, n)) {
    st->fault = Fault::kMalformed;
  } else if (every(faults.cut_every, n)) {
    st->fault = Fault::kCut;
  } else if (every(faults.stall_every, n)) {
    st->fault = Fault::kStall;
  }
  const auto created = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  const std::string object = chat ? "chat.completion.chunk" : "text_completion";
  st->chunk_head = "data: {\"id\":\"" + std::string(chat ? "chatcmpl-" : "cmpl-") +
                   std::to_string(st->id) + "\",\"object\":\"" + object +
                   "\",\"created\":" + std::to_string(created) +
                   ",\"model\":" + json_string(options.profile.model_name) + ",";
  if (chat) {
    st->prefix_content = st->chunk_head + R"("choices":[{"index":0,"delta":{"content":")";
    st->prefix_reasoning =
        st->chunk_head + R"("choices":[{"index":0,"delta":{"reasoning_content":")";
    st->suffix = "\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n";
  } else {
    st->prefix_content = st->chunk_head + R"("choices":[{"index":0,"text":")";
    st->suffix = "\",\"logprobs\":null,\"finish_reason\":null,\"stop_reason\":null}]}\n\n";
  }

  ModelRequest mr;
  mr.id = st->id;
  mr.prompt_tokens = parsed.prompt_tokens;
  mr.max_tokens = parsed.max_tokens;
  mr.min_tokens = parsed.min_tokens;
  mr.ignore_eos = parsed.ignore_eos;
  mr.seed = st->text_seed;
  streams.emplace(st->id, st);
  if (st->fault != Fault::kNone && faults.after_tokens == 0) trigger_fault(*st);
  if (!st->fault_triggered) {
    model.submit(mr, now_s());
    wake_engine();
  } else {
    streams.erase(st->id);
  }

  bool keep = false;
  if (parsed.stream) {
    keep = co_await stream_response(conn, *st, keep_alive);
  } else {
    const unsigned version = req.version();
    keep = co_await whole_response(conn, *st, version, keep_alive);
  }
  // Whatever happened (client gone, fault, stop), the sequence leaves the model.
  if (streams.erase(st->id) > 0) model.cancel(st->id);
  if (stopping) co_return false;
  log_stream(*st, steady_ns());  // no-op when logged at its last write
  count_end();
  if (st->fault_triggered) {
    // A stall ends (and is logged) when the sending stops; the connection then stays open,
    // silent, until the client gives up. A cut closes it at once.
    if (st->fault == Fault::kStall) co_await wait_for_close(conn);
    error_code ignored;
    conn.socket.close(ignored);
    co_return false;
  }
  co_return keep && !stopping;
}

// The SSE writer: sends whatever the engine rendered, batching everything pending into one
// write. Returns whether the connection can serve another request.
asio::awaitable<bool> Server::Impl::stream_response(Conn& conn, Stream& stream, bool keep_alive) {
  Stream* st = &stream;
  error_code ec;
  std::string head =
      "HTTP/1.1 200 OK\r\nServer: dyno-sim\r\nContent-Type: text/event-stream\r\n"
      "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n";
  head += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  co_await asio::async_write(conn.socket, asio::buffer(head),
                             asio::redirect_error(asio::use_awaitable, ec));
  std::string out;
  while (!ec && !stopping) {
    if (st->pending.empty()) {
      if (st->tail_rendered || st->fault_triggered) break;
      st->signal.expires_at(Clock::time_point::max());
      error_code wait_ec;
      co_await st->signal.async_wait(asio::redirect_error(asio::use_awaitable, wait_ec));
      continue;
    }
    out.clear();
    out.swap(st->pending);
    const std::int64_t t = steady_ns();
    for (const std::int32_t tokens : st->pending_event_tokens) {
      st->event_times_ns.push_back(t);
      st->event_tokens.push_back(tokens);
    }
    st->pending_event_tokens.clear();
    const bool last = st->tail_rendered && !st->fault_triggered;
    if (last) log_stream(*st, t);
    const Sizes size_line = chunk_size_line(out.size());
    const std::array<asio::const_buffer, 3> buffers{
        asio::buffer(size_line.text.data(), size_line.size), asio::buffer(out),
        asio::buffer(last ? std::string_view("\r\n0\r\n\r\n") : std::string_view("\r\n"))};
    co_await asio::async_write(conn.socket, buffers, asio::redirect_error(asio::use_awaitable, ec));
    if (st->paused && st->pending.size() < kLowWater) {
      st->paused = false;
      model.set_paused(st->id, false);
      wake_engine();
    }
  }
  if (ec || stopping) co_return false;
  co_return !st->fault_triggered && keep_alive;
}

asio::awaitable<bool> Server::Impl::whole_response(Conn& conn, Stream& stream, unsigned version,
                                                   bool keep_alive) {
  Stream* st = &stream;
  while (!st->finished && !st->fault_triggered && !stopping) {
    st->signal.expires_at(Clock::time_point::max());
    error_code wait_ec;
    co_await st->signal.async_wait(asio::redirect_error(asio::use_awaitable, wait_ec));
  }
  if (stopping) co_return false;
  if (st->fault_triggered) co_return false;
  std::string body;
  if (st->fault == Fault::kMalformed && st->fault_done) {
    body = "{not json";
  } else {
    const Stream& s = *st;
    json::object usage;
    usage["prompt_tokens"] = s.req.prompt_tokens;
    usage["completion_tokens"] = s.generated;
    usage["total_tokens"] = s.req.prompt_tokens + s.generated;
    if (options.profile.reasoning_fraction > 0.0) {
      json::object details;
      details["reasoning_tokens"] = s.reasoning_tokens;
      usage["completion_tokens_details"] = std::move(details);
    }
    json::object choice;
    choice["index"] = 0;
    if (s.req.chat) {
      json::object message;
      message["role"] = "assistant";
      message["content"] = s.content;
      if (options.profile.reasoning_fraction > 0.0) message["reasoning_content"] = s.reasoning;
      choice["message"] = std::move(message);
    } else {
      choice["text"] = s.content;
    }
    choice["logprobs"] = nullptr;
    choice["finish_reason"] = finish_name(s.finish);
    json::object o;
    o["id"] = (s.req.chat ? "chatcmpl-" : "cmpl-") + std::to_string(s.id);
    o["object"] = s.req.chat ? "chat.completion" : "text_completion";
    o["created"] = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
    o["model"] = options.profile.model_name;
    json::array choices;
    choices.push_back(std::move(choice));
    o["choices"] = std::move(choices);
    o["usage"] = std::move(usage);
    body = json::serialize(o);
    // llama.cpp puts `timings` at the top level of the body, after `usage`.
    st->timings = timings_json(s);
    body.pop_back();
    body += ",\"timings\":" + st->timings + "}";
  }
  auto res =
      make_response(http::status::ok, version, keep_alive, std::move(body), "application/json");
  const std::int64_t t = steady_ns();
  st->event_times_ns.assign(st->event_tokens.size(), t);
  log_stream(*st, t);
  error_code ec;
  co_await http::async_write(conn.socket, res, asio::redirect_error(asio::use_awaitable, ec));
  co_return !ec && keep_alive;
}

// Reads and discards until the peer closes (or the server stops): a stalled response.
asio::awaitable<void> Server::Impl::wait_for_close(Conn& conn) {
  std::array<char, 4096> sink{};
  error_code ec;
  while (!ec && !stopping) {
    co_await conn.socket.async_read_some(asio::buffer(sink),
                                         asio::redirect_error(asio::use_awaitable, ec));
  }
}

// ---------------------------------------------------------------------------------------------
// Truth log

// A request's truth line is logged when its last bytes are handed to the socket (so a stop that
// follows the client's read of them cannot lose it); it counts as ended (exit_after_requests)
// once that write completed.
void Server::Impl::log_stream(Stream& st, std::int64_t done_ns) {
  if (st.logged) return;
  st.logged = true;
  log_truth(st.xid, st.arrived_ns, st.received_ns, 200, st.fault_done ? st.fault : Fault::kNone,
            st.req.stream, &st, done_ns);
}

void Server::Impl::count_end() {
  ++ended;
  if (options.exit_after_requests && ended >= *options.exit_after_requests) initiate_stop();
}

void Server::Impl::log_truth(const std::string& request_id, std::int64_t arrived_ns,
                             std::int64_t received_ns, int status, Fault fault, bool stream,
                             const Stream* st, std::int64_t done_ns) {
  if (truth_file.is_open()) {
    std::string& out = truth_buf;
    out += R"({"request_id":)";
    out += json_string(request_id);
    out += R"(,"arrived_ns":)";
    out += std::to_string(arrived_ns);
    out += R"(,"received_ns":)";
    out += std::to_string(received_ns);
    out += R"(,"status":)";
    out += std::to_string(status);
    out += R"(,"fault":")";
    out += fault_name(fault);
    out += R"(","stream":)";
    out += stream ? "true" : "false";
    out += R"(,"prompt_tokens":)";
    out += std::to_string(st ? st->req.prompt_tokens : 0);
    out += R"(,"completion_tokens":)";
    std::int64_t sent = 0;
    if (st) {
      for (const std::int32_t tokens : st->event_tokens) sent += tokens;
    }
    out += std::to_string(sent);
    out += R"(,"event_times_ns":[)";
    if (st) {
      for (std::size_t i = 0; i < st->event_times_ns.size(); ++i) {
        if (i) out += ',';
        out += std::to_string(st->event_times_ns[i]);
      }
    }
    out += R"(],"event_tokens":[)";
    if (st) {
      for (std::size_t i = 0; i < st->event_tokens.size(); ++i) {
        if (i) out += ',';
        out += std::to_string(st->event_tokens[i]);
      }
    }
    out += R"(],"first_token_ns":)";
    out += st && !st->event_times_ns.empty() ? std::to_string(st->event_times_ns.front())
                                             : std::string("null");
    out += R"(,"done_ns":)";
    out += std::to_string(done_ns);
    // The engine's own times behind the response's `timings`, when it carried one.
    const bool timed = st && !st->timings.empty();
    out += R"(,"prefill_start_ns":)";
    out += timed ? std::to_string(model_ns(st->prefill_start_s)) : std::string("null");
    out += R"(,"timings":)";
    out += timed ? st->timings : std::string("null");
    if (st && !st->req.image_sha256.empty()) {
      out += R"(,"image_sha256":[)";
      for (std::size_t i = 0; i < st->req.image_sha256.size(); ++i) {
        if (i) out += ',';
        out += '"';
        out += st->req.image_sha256[i];
        out += '"';
      }
      out += ']';
    }
    out += "}\n";
    if (truth_buf.size() > (1u << 20)) {
      truth_file << truth_buf;
      truth_buf.clear();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Public API

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Server::~Server() { stop(); }

std::uint16_t Server::start() {
  if (impl_->started) throw std::logic_error("sim::Server::start called twice");
  return impl_->start();
}

void Server::stop() {
  if (!impl_->started) return;
  asio::post(impl_->io, [impl = impl_.get()] { impl->initiate_stop(); });
  impl_->join_and_flush();
}

void Server::wait() {
  if (impl_->started) impl_->join_and_flush();
}

std::uint16_t Server::port() const { return impl_->bound_port; }

double Server::cpu_seconds() const {
  if (impl_->joined) return impl_->thread_cpu_s;
  if (!impl_->started) return 0.0;
  // Live: the running server thread's CPU clock.
  clockid_t clock{};
  if (pthread_getcpuclockid(impl_->thread.native_handle(), &clock) != 0) return 0.0;
  timespec cpu{};
  clock_gettime(clock, &cpu);
  return static_cast<double>(cpu.tv_sec) + static_cast<double>(cpu.tv_nsec) * 1e-9;
}

}  // namespace dyno::sim
