// A blocking HTTP/1.1 test client for the simulated engine's server tests.
#pragma once

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

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

}  // namespace dyno::sim::testing
