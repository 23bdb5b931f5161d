// A blocking HTTP/1.1 test client for the simulated engine's server tests, and what those
// tests share: a chat request body, the `data:` payloads of a streamed body, the truth log.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "sim/profile.h"

namespace dyno::sim::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

struct Reply {
  int status = 0;
  http::fields headers;
  std::string body;
  bool complete = false;   // the whole message arrived
  bool timed_out = false;  // no complete message within the timeout
};

// A blocking HTTP/1.1 client on its own io_context; `timeout` bounds the response read.
class Client {
 public:
  explicit Client(std::uint16_t port) : socket_(io_) {
    socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  }

  /// Writes a request without reading its response (e.g. a stream nobody reads).
  void send(http::verb method, const std::string& target, const std::string& body) {
    http::request<http::string_body> req{method, target, 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::content_type, "application/json");
    req.body() = body;
    req.prepare_payload();
    http::write(socket_, req);
  }

  void close() {
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

  Reply request(http::verb method, const std::string& target, const std::string& body = "",
                const std::vector<std::pair<std::string, std::string>>& headers = {},
                std::chrono::milliseconds timeout = 10s) {
    http::request<http::string_body> req{method, target, 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::content_type, "application/json");
    for (const auto& [name, value] : headers) req.set(name, value);
    req.body() = body;
    req.prepare_payload();
    http::write(socket_, req);

    http::response_parser<http::string_body> parser;
    parser.body_limit(1ull << 32);
    Reply reply;
    bool done = false;
    beast::error_code read_ec;
    http::async_read(socket_, buffer_, parser, [&](beast::error_code ec, std::size_t) {
      done = true;
      read_ec = ec;
    });
    io_.restart();
    io_.run_for(timeout);
    if (!done) {
      reply.timed_out = true;
      beast::error_code ignored;
      socket_.cancel(ignored);
      io_.restart();
      io_.run();
    }
    reply.complete = done && !read_ec;
    if (parser.is_header_done()) {
      reply.status = static_cast<int>(parser.get().result_int());
      reply.headers = parser.get().base();
    }
    reply.body = parser.get().body();
    return reply;
  }

  Reply post(const std::string& target, const json::value& body,
             const std::vector<std::pair<std::string, std::string>>& headers = {},
             std::chrono::milliseconds timeout = 10s) {
    return request(http::verb::post, target, json::serialize(body), headers, timeout);
  }

  tcp::socket& socket() { return socket_; }

 private:
  asio::io_context io_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
};

/// A chat request for "dyno-sim"; streamed ones ask for the usage chunk unless `usage` is false.
inline json::object chat_body(std::int64_t max_tokens, bool stream = true, bool usage = true) {
  json::object o;
  o["model"] = "dyno-sim";
  o["messages"] = json::array{json::object{{"role", "user"}, {"content", "Tell me a story."}}};
  o["max_tokens"] = max_tokens;
  o["stream"] = stream;
  if (stream && usage) o["stream_options"] = json::object{{"include_usage", true}};
  return o;
}

/// The `data:` payload of every event of a streamed body, in order ("[DONE]" included); the
/// sim writes each event as one `data: …` line and a blank line, and nothing else.
inline std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < body.size()) {
    const std::size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) break;
    const std::string event = body.substr(pos, end - pos);
    EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
    out.push_back(event.substr(std::min<std::size_t>(6, event.size())));
    pos = end + 2;
  }
  EXPECT_EQ(pos, body.size()) << "trailing bytes";
  return out;
}

/// A built-in profile with 1 ms steps, so that tests of the server run fast.
inline Profile fast_profile(const std::string& base = "small-gpu") {
  Profile p = builtin_profile(base);
  p.step_base_s = 0.001;
  return p;
}

/// The lines of a truth log (--truth), each a JSON object.
inline std::vector<json::object> read_truth(const std::filesystem::path& path) {
  std::vector<json::object> lines;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) lines.push_back(json::parse(line).as_object());
  return lines;
}

}  // namespace dyno::sim::testing
