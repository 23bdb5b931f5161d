// HttpTarget against a scripted HTTP server: a blocking Asio acceptor on 127.0.0.1 whose
// connections (one thread each) read requests and write scripted bytes with scripted pauses.
#include "transport/http_target.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "transport/test_util.h"

namespace dyno::transport {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

constexpr const char* kApiKey = "sk-very-secret-key";

// One accepted connection, seen from the server side.
class ServerConn {
 public:
  explicit ServerConn(tcp::socket socket) : socket_(std::move(socket)) {}

  // Reads one request (headers + Content-Length body); "" when the client closed.
  std::string read_request() {
    boost::system::error_code ec;
    const std::size_t header_size = asio::read_until(socket_, buffer_, "\r\n\r\n", ec);
    if (ec) return "";
    std::string request(asio::buffers_begin(buffer_.data()),
                        asio::buffers_begin(buffer_.data()) + static_cast<long>(header_size));
    buffer_.consume(header_size);
    std::size_t length = 0;
    if (const auto pos = request.find("Content-Length: "); pos != std::string::npos) {
      length = std::stoul(request.substr(pos + 16));
    }
    if (buffer_.size() < length)
      asio::read(socket_, buffer_, asio::transfer_exactly(length - buffer_.size()), ec);
    request.append(asio::buffers_begin(buffer_.data()),
                   asio::buffers_begin(buffer_.data()) + static_cast<long>(length));
    buffer_.consume(length);
    return request;
  }

  void write(std::string_view bytes) {
    boost::system::error_code ec;
    asio::write(socket_, asio::buffer(bytes.data(), bytes.size()), ec);
  }

  // Writes `bytes` in pieces of the given sizes (cycled), pausing between them.
  void write_split(std::string_view bytes, const std::vector<std::size_t>& sizes,
                   std::chrono::milliseconds pause) {
    std::size_t i = 0;
    while (!bytes.empty()) {
      const std::size_t n = std::min(bytes.size(), sizes[i++ % sizes.size()]);
      write(bytes.substr(0, n));
      bytes.remove_prefix(n);
      std::this_thread::sleep_for(pause);
    }
  }

  // Blocks until the client closes the connection.
  void wait_closed() {
    boost::system::error_code ec;
    std::array<char, 256> sink{};
    while (!ec) socket_.read_some(asio::buffer(sink), ec);
  }

  void close() {
    boost::system::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }

 private:
  tcp::socket socket_;
  asio::streambuf buffer_;
};

class ScriptServer {
 public:
  using Script = std::function<void(ServerConn&)>;

  // Connection i runs scripts[i]; connections beyond the scripts are closed at once.
  explicit ScriptServer(std::vector<Script> scripts)
      : scripts_(std::move(scripts)),
        acceptor_(context_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    port_ = acceptor_.local_endpoint().port();
    accept_thread_ = std::thread([this] {
      for (std::size_t i = 0;; ++i) {
        tcp::socket socket(context_);
        boost::system::error_code ec;
        acceptor_.accept(socket, ec);
        if (ec || stop_) return;
        ++accepted_;
        if (i >= scripts_.size()) continue;
        threads_.emplace_back([this, i, s = std::move(socket)]() mutable {
          ServerConn conn(std::move(s));
          scripts_[i](conn);
          conn.close();
        });
      }
    });
  }

  ~ScriptServer() {
    stop_ = true;
    boost::system::error_code ec;
    tcp::socket wake(context_);
    wake.connect(acceptor_.local_endpoint(), ec);
    accept_thread_.join();
    for (auto& t : threads_) t.join();
  }

  std::uint16_t port() const { return port_; }
  int accepted() const { return accepted_; }

  void record(std::string request) {
    std::lock_guard lock(mutex_);
    requests_.push_back(std::move(request));
  }
  std::vector<std::string> requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  std::vector<Script> scripts_;
  asio::io_context context_;
  tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread accept_thread_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::vector<std::string> requests_;
};

struct Recorder final : StreamObserver {
  std::vector<std::string> calls;
  std::vector<std::int64_t> times;
  std::string content;
  std::string reasoning;
  int token_events = 0;
  std::optional<Usage> usage;
  std::optional<DoneInfo> done;
  std::optional<ErrorCategory> error;
  std::string error_message;
  std::optional<int> error_status;
  int first_byte_status = 0;
  int terminals = 0;
  std::function<void()> on_terminal;

  void on_sent(std::int64_t t) override { note("sent", t); }
  void on_first_byte(std::int64_t t, int status) override {
    note("first_byte", t);
    first_byte_status = status;
  }
  void on_token_event(std::int64_t t, std::string_view c, std::string_view r) override {
    note("token", t);
    content += c;
    reasoning += r;
    ++token_events;
  }
  void on_usage(const Usage& u) override {
    calls.emplace_back("usage");
    usage = u;
  }
  void on_done(std::int64_t t, const DoneInfo& info) override {
    note("done", t);
    done = info;
    terminal();
  }
  void on_error(std::int64_t t, ErrorCategory category, std::string_view message,
                std::optional<int> status) override {
    note("error", t);
    error = category;
    error_message = message;
    error_status = status;
    terminal();
  }
  void note(const char* what, std::int64_t t) {
    EXPECT_EQ(terminals, 0) << "observer used after its terminal callback: " << what;
    calls.emplace_back(what);
    times.push_back(t);
  }
  void terminal() {
    ++terminals;
    EXPECT_EQ(error_message.find(kApiKey), std::string::npos);
    if (on_terminal) on_terminal();
  }
  bool ordered() const {
    for (std::size_t i = 1; i < times.size(); ++i) {
      if (times[i] < times[i - 1]) return false;
    }
    return true;
  }
  int count(const std::string& what) const {
    return static_cast<int>(std::count(calls.begin(), calls.end(), what));
  }
};

// Runs the loop until `done` reports true (checked after each terminal) or 10 s pass.
class LoopRunner {
 public:
  explicit LoopRunner(EventLoop& loop) : loop_(loop) {}
  void run() {
    std::mutex mutex;
    std::condition_variable cv;
    bool finished = false;
    std::thread watchdog([&] {
      std::unique_lock lock(mutex);
      if (!cv.wait_for(lock, 10s, [&] { return finished; })) {
        ADD_FAILURE() << "test timed out";
        loop_.stop();
      }
    });
    loop_.run();
    {
      std::lock_guard lock(mutex);
      finished = true;
    }
    cv.notify_all();
    watchdog.join();
  }

 private:
  EventLoop& loop_;
};

HttpTargetConfig make_config(std::uint16_t port, bool stream = true) {
  HttpTargetConfig config;
  config.url = BaseUrl::parse("http://127.0.0.1:" + std::to_string(port) + "/v1");
  config.model = "test-model";
  config.stream = stream;
  config.api_key = kApiKey;
  return config;
}

workload::Request chat_request() {
  workload::Request request;
  request.id = "r";
  request.messages = {{"user", "hello"}};
  request.sampling.max_tokens = 8;
  return request;
}

std::string chunked(std::string_view body, const std::vector<std::size_t>& sizes) {
  std::string out;
  std::size_t i = 0;
  char hex[16];
  while (!body.empty()) {
    const std::size_t n = std::min(body.size(), sizes[i++ % sizes.size()]);
    std::snprintf(hex, sizeof hex, "%zx", n);
    out += hex;
    out += "\r\n";
    out += body.substr(0, n);
    out += "\r\n";
    body.remove_prefix(n);
  }
  return out + "0\r\n\r\n";
}

const std::string kSseHeader =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

std::string sse_with_length(const std::string& body) {
  return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

TEST(HttpTarget, StreamedChunkedOddSplits) {
  const std::string body = testing::read_data_file("vllm_chat_reasoning_sse.txt");
  ScriptServer server({[&](ServerConn& conn) {
    server.record(conn.read_request());
    conn.write_split(kSseHeader + chunked(body, {7, 100, 3, 250, 1}), {5, 61, 2, 333, 17}, 1ms);
    conn.wait_closed();
  }});
  EventLoop loop;
  HttpTarget target(loop, make_config(server.port()));
  const auto prepared = target.prepare(chat_request());
  Recorder rec;
  target.submit(*prepared, 7, rec);
  LoopRunner(loop).run();

  ASSERT_TRUE(rec.done) << rec.error_message;
  EXPECT_EQ(rec.calls, (std::vector<std::string>{"sent", "first_byte", "token", "token", "token",
                                                 "token", "usage", "done"}));
  EXPECT_TRUE(rec.ordered());
  EXPECT_EQ(rec.first_byte_status, 200);
  EXPECT_EQ(rec.reasoning, "Let me think about \"usage\"");
  EXPECT_EQ(rec.content, "H\xC3\xA9llo w\xC3\xB6rld \xE2\x9C\x93 \xF0\x9F\x9A\x80!");
  ASSERT_TRUE(rec.usage);
  EXPECT_EQ(rec.usage->prompt_tokens, 12);
  EXPECT_EQ(rec.usage->completion_tokens, 7);
  EXPECT_EQ(rec.usage->cached_tokens, 8);
  EXPECT_EQ(rec.usage->reasoning_tokens, 3);
  EXPECT_EQ(rec.done->finish_reason, "stop");

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  const std::string& req = requests[0];
  EXPECT_EQ(req.rfind("POST /v1/chat/completions HTTP/1.1\r\n", 0), 0u) << req;
  EXPECT_NE(req.find("\r\nHost: 127.0.0.1:" + std::to_string(server.port()) + "\r\n"),
            std::string::npos);
  EXPECT_NE(req.find("\r\nX-Request-Id: dyno-7\r\n"), std::string::npos) << req;
  EXPECT_NE(req.find("\r\nAuthorization: Bearer sk-very-secret-key\r\n"), std::string::npos);
  EXPECT_NE(req.find("\r\nAccept: text/event-stream\r\n"), std::string::npos);
  EXPECT_NE(req.find("\r\nContent-Type: application/json\r\n"), std::string::npos);
  EXPECT_NE(req.find("\"stream_options\":{\"include_usage\":true}}"), std::string::npos);
}

TEST(HttpTarget, KeepAliveReuseAndResubmitFromOnDone) {
  const std::string body = testing::read_data_file("chat_stream_sse.txt");
  ScriptServer server({[&](ServerConn& conn) {
    for (int i = 0; i < 2; ++i) {
      server.record(conn.read_request());
      conn.write(sse_with_length(body));
    }
    conn.wait_closed();
  }});
  EventLoop loop;
  HttpTarget target(loop, make_config(server.port()));
  const auto prepared = target.prepare(chat_request());
  Recorder first;
  Recorder second;
  first.on_terminal = [&] { target.submit(*prepared, 2, second); };
  target.submit(*prepared, 1, first);
  LoopRunner(loop).run();
  ASSERT_TRUE(first.done) << first.error_message;
  ASSERT_TRUE(second.done) << second.error_message;
  EXPECT_EQ(first.token_events, 8);
  EXPECT_EQ(second.token_events, 8);
  EXPECT_EQ(second.done->finish_reason, "length");
  EXPECT_NE(second.done->server_timings_json.find("\"predicted_n\":8"), std::string::npos);
  EXPECT_EQ(target.connections_opened(), 1u);
  EXPECT_EQ(server.accepted(), 1);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_NE(requests[1].find("X-Request-Id: dyno-2\r\n"), std::string::npos);
}

TEST(HttpTarget, HttpStatusErrorsKeepTheConnection) {
  ScriptServer server({[&](ServerConn& conn) {
    conn.read_request();
    conn.write("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 13\r\n\r\ninternal boom");
    conn.read_request();
    const std::string big = std::string(300, 'x') + " " + std::string(300, 'y');
    conn.write(kSseHeader.substr(0, 0) +
               "HTTP/1.1 429 Too Many Requests\r\nTransfer-Encoding: chunked\r\n\r\n" +
               chunked(big, {100}));
    conn.wait_closed();
  }});
  EventLoop loop;
  HttpTarget target(loop, make_config(server.port()));
  const auto prepared = target.prepare(chat_request());
  Recorder first;
  Recorder second;
  first.on_terminal = [&] { target.submit(*prepared, 2, second); };
  target.submit(*prepared, 1, first);
  LoopRunner(loop).run();
  ASSERT_EQ(first.error, ErrorCategory::kHttpStatus);
  EXPECT_EQ(first.error_status, 500);
  EXPECT_EQ(first.error_message, "500 internal boom");
  EXPECT_EQ(first.first_byte_status, 500);
  ASSERT_EQ(second.error, ErrorCategory::kHttpStatus);
  EXPECT_EQ(second.error_status, 429);
  // The first 512 bytes, without the word the cut went through.
  EXPECT_EQ(second.error_message, "429 " + std::string(300, 'x') + "\xE2\x80\xA6");
  EXPECT_EQ(target.connections_opened(), 1u);
}

TEST(HttpTarget, RefusedPortIsConnectError) {
  std::uint16_t port = 0;
  {
    asio::io_context context;
    tcp::acceptor acceptor(context, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    port = acceptor.local_endpoint().port();
  }
  EventLoop loop;
  HttpTarget target(loop, make_config(port));
  const auto prepared = target.prepare(chat_request());
  Recorder rec;
  target.submit(*prepared, 1, rec);
  LoopRunner(loop).run();
  EXPECT_EQ(rec.error, ErrorCategory::kConnect);
  EXPECT_EQ(rec.count("sent"), 0);
  EXPECT_NE(rec.error_message.find("refused"), std::string::npos) << rec.error_message;
}

TEST(HttpTarget, MalformedDataIsParseError) {
  ScriptServer server({[&](ServerConn& conn) {
    conn.read_request();
    conn.write(
        kSseHeader +
        chunked("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {not json\n\n",
                {1000}));
    conn.wait_closed();
  }});
  EventLoop loop;
  HttpTarget target(loop, make_config(server.port()));
  const auto prepared = target.prepare(chat_request());
  Recorder rec;
  target.submit(*prepared, 1, rec);
  LoopRunner(loop).run();
  EXPECT_EQ(rec.error, ErrorCategory::kParse);
  EXPECT_EQ(rec.token_events, 1);
  EXPECT_NE(rec.error_message.find("invalid SSE data"), std::string::npos);
}

/// Runs one chat request against a server that writes `body` (after the SSE head, chunked)
/// and waits for the close; returns what the observer saw.
Recorder run_against(const std::string& body, std::size_t chunk = 1000) {
  ScriptServer server({[&](ServerConn& conn) {
    conn.read_request();
    conn.write(kSseHeader + chunked(body, {chunk}));
    conn.wait_closed();
  }});
  EventLoop loop;
  HttpTarget target(loop, make_config(server.port()));
  const auto prepared = target.prepare(chat_request());
  Recorder rec;
  target.submit(*prepared, 1, rec);
  LoopRunner(loop).run();
  return rec;
}

const std::string kTokenA = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n";

TEST(HttpTarget, EngineErrorMidStreamIsServerError) {
  const Recorder rec =
      run_against(kTokenA + "data: {\"error\":{\"message\":\"KV cache full\",\"code\":503}}\n\n");
  EXPECT_EQ(rec.error, ErrorCategory::kServerError);
  EXPECT_EQ(rec.error_status, 200);
  EXPECT_EQ(rec.error_message, "KV cache full");
  EXPECT_EQ(rec.token_events, 1);  // what came before it reached the observer
}

/// llama.cpp's `error:` SSE field (an event without data), then [DONE]: the server's failure,
/// whatever the split of the bytes.
TEST(HttpTarget, ErrorFieldOfLlamaCppIsServerError) {
  const std::string body =
      kTokenA +
      "error: {\"code\":500,\"message\":\"Input prompt is too big compared to KV size.\","
      "\"type\":\"server_error\"}\n\ndata: [DONE]\n\n";
  for (const std::size_t chunk : {std::size_t{1000}, std::size_t{7}, std::size_t{1}}) {
    const Recorder rec = run_against(body, chunk);
    EXPECT_EQ(rec.error, ErrorCategory::kServerError) << chunk;
    EXPECT_EQ(rec.error_message, "server_error: Input prompt is too big compared to KV size.");
    EXPECT_EQ(rec.token_events, 1);
  }
}

TEST(HttpTarget, ErrorEventAndBareErrorLineAreServerErrors) {
  Recorder rec = run_against(kTokenA + "event: error\ndata: overloaded, try later\n\n");
  EXPECT_EQ(rec.error, ErrorCategory::kServerError);
  EXPECT_EQ(rec.error_message, "overloaded, try later");
  rec = run_against(kTokenA + "{\"error\":{\"message\":\"runner stopped\",\"type\":\"api_error\"}}\n");
  EXPECT_EQ(rec.error, ErrorCategory::kServerError);
  EXPECT_EQ(rec.error_message, "api_error: runner stopped");
  // A bare JSON line that is no error is ignored, as any line that is no SSE field.
  rec = run_against("{\"note\":\"hi\"}\n" + kTokenA +
                    "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
                    "data: [DONE]\n\n");
  EXPECT_TRUE(rec.done) << rec.error_message;
}

/// The OpenAI APIs end every answer with a finish reason: an answer without one is unfinished,
/// whether [DONE] or the end of the body ends it.
TEST(HttpTarget, AnswerWithoutAFinishReasonIsUnfinished) {
  Recorder rec = run_against(kTokenA + kTokenA + "data: [DONE]\n\n");
  EXPECT_EQ(rec.error, ErrorCategory::kUnfinished);
  EXPECT_NE(rec.error_message.find("with [DONE] but without a finish reason, after 2 token events"),
            std::string::npos)
      << rec.error_message;
  rec = run_against(kTokenA);
  EXPECT_EQ(rec.error, ErrorCategory::kUnfinished);
  EXPECT_NE(rec.error_message.find("with the end of the body"), std::string::npos);
  rec = run_against(kTokenA + "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"abort\"}]}\n\n");
  EXPECT_EQ(rec.error, ErrorCategory::kServerError);
  EXPECT_NE(rec.error_message.find("finish_reason \"abort\""), std::string::npos);
}

TEST(HttpTarget, ImplausibleUsageIsRefused) {
  const Recorder rec = run_against(
      kTokenA +
      "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,"
      "\"completion_tokens\":9223372036854775807}}\n\ndata: [DONE]\n\n");
  EXPECT_EQ(rec.error, ErrorCategory::kImplausibleUsage);
  EXPECT_NE(rec.error_message.find("usage.completion_tokens 9223372036854775807"),
            std::string::npos)
      << rec.error_message;
}

/// A 2xx answer without any token says what the server did send.
TEST(HttpTarget, NoTokensKeepsWhatTheServerSaid) {
  const Recorder rec = run_against("data: {\"choices\":[],\"note\":\"model is loading\"}\n\n"
                                   "data: [DONE]\n\n");
  EXPECT_EQ(rec.error, ErrorCategory::kNoTokens);
  EXPECT_NE(rec.error_message.find("the server sent: data: {\"choices\":[],\"note\":\"model is loading"),
            std::string::npos)
      << rec.error_message;
}

TEST(HttpTarget, ClosedMidBodyIsTruncated) {
  ScriptServer server({[&](ServerConn& conn) {
    conn.read_request();
    const std::string all =
        kSseHeader + chunked(testing::read_data_file("chat_stream_sse.txt"), {300});
    conn.write(all.substr(0, all.size() / 2));
  }});
  EventLoop loop;
  HttpTarget target(loop, make_config(server.port()));
  const auto prepared = target.prepare(chat_request());
  Recorder rec;
  target.submit(*prepared, 1, rec);
  LoopRunner(loop).run();
  EXPECT_EQ(rec.error, ErrorCategory::kStreamTruncated);
  EXPECT_GT(rec.token_events, 0);
  EXPECT_EQ(rec.error_status, 200);
}

TEST(HttpTarget, ChunkedBodyWithoutDoneIsComplete) {
  ScriptServer server({[&](ServerConn& conn) {
    conn.read_request();
    conn.write(kSseHeader + chunked("data: {\"choices\":[{\"delta\":{\"content\":\"a\"},"
                                    "\"finish_reason\":\"stop\"}]}\n\n",
                                    {1000}));
    conn.wait_closed();
  }});
  EventLoop loop;
  HttpTarget target(loop, make_config(server.port()));
  const auto prepared = target.prepare(chat_request());
  Recorder rec;
  target.submit(*prepared, 1, rec);
  LoopRunner(loop).run();
  ASSERT_TRUE(rec.done) << rec.error_message;
  EXPECT_EQ(rec.content, "a");
}

TEST(HttpTarget, CloseDelimitedBody) {
  ScriptServer server({[&](ServerConn& conn) {
    conn.read_request();
    conn.write(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
        "data: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}]}\n\n"
        "data: [DONE]\n\n");
  }});
  EventLoop loop;
  HttpTarget target(loop, make_config(server.port()));
  const auto prepared = target.prepare(chat_request());
  Recorder rec;
  target.submit(*prepared, 1, rec);
  LoopRunner(loop).run();
  ASSERT_TRUE(rec.done) << rec.error_message;
  EXPECT_EQ(rec.content, "a");
}

TEST(HttpTarget, FirstTokenTimeout) {
  ScriptServer server({[&](ServerConn& conn) {
    conn.read_request();
    conn.write(kSseHeader);
    conn.wait_closed();
  }});
  EventLoop loop;
  auto config = make_config(server.port());
  config.first_token_timeout = 200ms;
  HttpTarget target(loop, config);
  const auto prepared = target.prepare(chat_request());
  Recorder rec;
  const auto start = std::chrono::steady_clock::now();
  target.submit(*prepared, 1, rec);
  LoopRunner(loop).run();
  EXPECT_EQ(rec.error, ErrorCategory::kTimeout);
  EXPECT_EQ(
      rec.error_message,
      "first-token timeout: no token 0.200 s after the request was sent (--first-token-timeout)");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms);
  ASSERT_GE(rec.times.size(), 2u);
  EXPECT_GE(rec.times.back() - rec.times.front(), 200'000'000);
}

TEST(HttpTarget, TotalTimeout) {
  ScriptServer server({[&](ServerConn& conn) {
    conn.read_request();
    conn.write(
        kSseHeader +
        chunked("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n", {1000}).substr(0, 40));
    conn.wait_closed();
  }});
  EventLoop loop;
  auto config = make_config(server.port());
  config.first_token_timeout = 5000ms;
  config.total_timeout = 150ms;
  HttpTarget target(loop, config);
  const auto prepared = target.prepare(chat_request());
  Recorder rec;
  target.submit(*prepared, 1, rec);
  LoopRunner(loop).run();
  EXPECT_EQ(rec.error, ErrorCategory::kTimeout);
  EXPECT_EQ(rec.error_message,
            "total timeout: not done 0.150 s after the request was sent (--timeout)");
}

TEST(HttpTarget, NonStreamedContentLength) {
  const std::string body = testing::read_data_file("chat_nonstream.json");
  ScriptServer server({[&](ServerConn& conn) {
    server.record(conn.read_request());
    conn.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n\r\n" + body.substr(0, 100));
    std::this_thread::sleep_for(5ms);
    conn.write(body.substr(100));
    conn.wait_closed();
  }});
  EventLoop loop;
  HttpTarget target(loop, make_config(server.port(), false));
  const auto prepared = target.prepare(chat_request());
  Recorder rec;
  target.submit(*prepared, 1, rec);
  LoopRunner(loop).run();
  ASSERT_TRUE(rec.done) << rec.error_message;
  EXPECT_EQ(rec.calls, (std::vector<std::string>{"sent", "first_byte", "token", "usage", "done"}));
  EXPECT_EQ(rec.times[2], rec.times[3]);  // the token event is at the end of the body
  EXPECT_GT(rec.times[2], rec.times[1]);
  EXPECT_EQ(rec.content, " mysq \xD0\xBF\xD0\xB8 enqu enqu");
  EXPECT_EQ(rec.usage->completion_tokens, 4);
  EXPECT_EQ(rec.done->finish_reason, "length");
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].find("Accept: text/event-stream"), std::string::npos);
  EXPECT_NE(requests[0].find("\"stream\":false}"), std::string::npos);
}

TEST(HttpTarget, StaleKeepAliveIsRetriedOnAFreshConnection) {
  const std::string body = testing::read_data_file("chat_stream_sse.txt");
  ScriptServer server({[&](ServerConn& conn) {
                         conn.read_request();
                         conn.write(sse_with_length(body));
                         std::this_thread::sleep_for(20ms);
                         conn.close();  // the server drops the idle keep-alive connection
                       },
                       [&](ServerConn& conn) {
                         server.record(conn.read_request());
                         conn.write(sse_with_length(body));
                         conn.wait_closed();
                       }});
  EventLoop loop;
  HttpTarget target(loop, make_config(server.port()));
  const auto prepared = target.prepare(chat_request());
  Recorder first;
  Recorder second;
  first.on_terminal = [&] {
    loop.call_at(steady_now_ns() + 100'000'000, [&] { target.submit(*prepared, 2, second); });
  };
  target.submit(*prepared, 1, first);
  LoopRunner(loop).run();
  ASSERT_TRUE(first.done) << first.error_message;
  ASSERT_TRUE(second.done) << second.error_message;
  EXPECT_EQ(second.count("sent"), 1);
  EXPECT_EQ(second.token_events, 8);
  EXPECT_EQ(target.connections_opened(), 2u);
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(HttpTarget, CancelAll) {
  const auto stall = [](ServerConn& conn) {
    conn.read_request();
    conn.write(
        kSseHeader +
        chunked("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n", {1000}).substr(0, 40));
    conn.wait_closed();
  };
  ScriptServer server({stall, stall});
  EventLoop loop;
  HttpTarget target(loop, make_config(server.port()));
  const auto prepared = target.prepare(chat_request());
  Recorder a;
  Recorder b;
  target.submit(*prepared, 1, a);
  target.submit(*prepared, 2, b);
  loop.call_at(steady_now_ns() + 200'000'000, [&] { target.cancel_all(); });
  LoopRunner(loop).run();
  EXPECT_EQ(a.error, ErrorCategory::kCancelled);
  EXPECT_EQ(b.error, ErrorCategory::kCancelled);
  EXPECT_EQ(a.error_message, "cancelled");
  EXPECT_EQ(a.terminals, 1);
  EXPECT_EQ(b.terminals, 1);
  EXPECT_EQ(target.connections_opened(), 2u);
}

TEST(HttpTarget, TlsHandshakeFailureIsTlsError) {
  ScriptServer server({[&](ServerConn& conn) {
    std::this_thread::sleep_for(20ms);  // let the ClientHello arrive, then answer in plain HTTP
    conn.write("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
  }});
  EventLoop loop;
  auto config = make_config(server.port());
  config.url = BaseUrl::parse("https://127.0.0.1:" + std::to_string(server.port()) + "/v1");
  HttpTarget target(loop, config);
  const auto prepared = target.prepare(chat_request());
  Recorder rec;
  target.submit(*prepared, 1, rec);
  LoopRunner(loop).run();
  EXPECT_EQ(rec.error, ErrorCategory::kTls) << rec.error_message;
  EXPECT_NE(rec.error_message.find("TLS handshake"), std::string::npos);
}

TEST(HttpTarget, ManyConcurrentStreams) {
  constexpr int kStreams = 200;
  const std::string body = testing::read_data_file("chat_stream_sse.txt");
  std::vector<ScriptServer::Script> scripts(kStreams, [&](ServerConn& conn) {
    conn.read_request();
    std::this_thread::sleep_for(50ms);  // every request is in flight at once
    conn.write(kSseHeader + chunked(body, {97}));
    conn.wait_closed();
  });
  ScriptServer server(scripts);
  EventLoop loop;
  HttpTarget target(loop, make_config(server.port()));
  const auto prepared = target.prepare(chat_request());
  std::vector<Recorder> recorders(kStreams);
  for (int i = 0; i < kStreams; ++i) {
    target.submit(*prepared, static_cast<std::uint64_t>(i), recorders[static_cast<std::size_t>(i)]);
  }
  LoopRunner(loop).run();
  for (const auto& rec : recorders) {
    ASSERT_TRUE(rec.done) << rec.error_message;
    EXPECT_EQ(rec.token_events, 8);
    EXPECT_EQ(rec.terminals, 1);
  }
  EXPECT_EQ(target.connections_opened(), static_cast<std::uint64_t>(kStreams));
}

TEST(HttpTarget, ToStringCoversEveryCategory) {
  EXPECT_STREQ(to_string(ErrorCategory::kStreamTruncated), "stream_truncated");
  EXPECT_STREQ(to_string(ErrorCategory::kHttpStatus), "http_status");
  EXPECT_STREQ(to_string(ErrorCategory::kServerError), "server_error");
  EXPECT_STREQ(to_string(ErrorCategory::kUnfinished), "unfinished");
  EXPECT_STREQ(to_string(ErrorCategory::kImplausibleUsage), "implausible_usage");
}

}  // namespace
}  // namespace dyno::transport
