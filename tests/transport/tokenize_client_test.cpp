// TokenizeClient against a scripted server replaying llama-server / TGI / vLLM shapes, and
// against the simulated engine.
#include "transport/tokenize_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "sim/server.h"
#include "sim/tokenizer.h"

namespace dyno::transport {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;

struct Seen {
  std::string target;
  std::string authorization;
  std::string body;
};

// A blocking keep-alive HTTP server: handler(target, body) -> (status, body).
class FakeServer {
 public:
  using Handler = std::function<std::pair<unsigned, std::string>(const Seen&)>;

  explicit FakeServer(Handler handler)
      : handler_(std::move(handler)),
        acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    thread_ = std::thread([this] {
      for (;;) {
        tcp::socket socket(io_);
        boost::system::error_code ec;
        acceptor_.accept(socket, ec);
        if (ec || stop_) return;
        beast::flat_buffer buffer;
        for (;;) {
          http::request<http::string_body> req;
          http::read(socket, buffer, req, ec);
          if (ec) break;
          Seen seen{std::string(req.target()), std::string(req[http::field::authorization]),
                    req.body()};
          {
            std::lock_guard lock(mutex_);
            seen_.push_back(seen);
          }
          auto [status, body] = handler_(seen);
          http::response<http::string_body> res{static_cast<http::status>(status), 11};
          res.set(http::field::content_type, "application/json");
          res.keep_alive(req.keep_alive());
          res.body() = body;
          res.prepare_payload();
          http::write(socket, res, ec);
          if (ec) break;
        }
      }
    });
  }
  ~FakeServer() {
    stop_ = true;
    boost::system::error_code ec;
    tcp::socket wake(io_);
    wake.connect(acceptor_.local_endpoint(), ec);
    thread_.join();
  }
  BaseUrl url() const {
    return BaseUrl::parse("http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) +
                          "/v1");
  }
  std::vector<Seen> seen() {
    std::lock_guard lock(mutex_);
    return seen_;
  }

 private:
  Handler handler_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mutex_;
  std::vector<Seen> seen_;
};

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(DYNO_SHARED_FIXTURES) + "/llama-server-b4748/" + name,
                   std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::vector<workload::Message> chat() {
  return {workload::Message{"system", "Be brief."}, workload::Message{"user", "Say hello"}};
}

TEST(TokenizeClient, LlamaCppShapes) {
  const std::string tokenize = fixture("tokenize.json");
  const std::string apply = fixture("apply_template.json");
  if (tokenize.empty() || apply.empty()) GTEST_SKIP() << "llama-server fixtures not found";
  FakeServer server([&](const Seen& s) -> std::pair<unsigned, std::string> {
    const json::object o = json::parse(s.body).as_object();
    if (s.target == "/apply-template") return {200, apply};
    if (s.target != "/tokenize") return {404, "Not Found"};
    // llama-server answers {"tokens":[]} to a body without "content" (the vLLM probe).
    if (!o.contains("content")) return {200, R"({"tokens":[]})"};
    return {200, tokenize};
  });
  TokenizeClient client(server.url(), "m", std::string("sk-secret"));
  EXPECT_EQ(client.count_text("Hello world, how are you?"), 7);
  EXPECT_EQ(client.flavor(), TokenizeClient::Flavor::kLlamaCpp);
  EXPECT_EQ(client.count_chat(chat()), 7);
  const auto seen = server.seen();
  ASSERT_EQ(seen.size(), 4u);  // vLLM probe, llama probe (counts the text), template, tokenize
  EXPECT_EQ(seen[0].target, "/tokenize");
  EXPECT_EQ(seen[0].authorization, "Bearer sk-secret");
  EXPECT_EQ(json::parse(seen[1].body).at("add_special"), true);
  EXPECT_EQ(seen[2].target, "/apply-template");
  EXPECT_EQ(json::parse(seen[2].body).at("messages").as_array().size(), 2u);
  // The templated prompt is what gets tokenized.
  EXPECT_EQ(json::parse(seen[3].body).at("content"), json::parse(apply).at("prompt"));
}

TEST(TokenizeClient, TgiShape) {
  FakeServer server([](const Seen& s) -> std::pair<unsigned, std::string> {
    const json::object o = json::parse(s.body).as_object();
    if (s.target != "/tokenize" || !o.contains("inputs")) {
      return {422, R"({"error":"Failed to deserialize the JSON body"})"};
    }
    return {
        200,
        R"([{"id":1,"text":"Hello","start":0,"stop":5},{"id":2,"text":" you","start":5,"stop":9}])"};
  });
  TokenizeClient client(server.url(), "m", std::nullopt);
  EXPECT_EQ(client.flavor(), TokenizeClient::Flavor::kTgi);
  EXPECT_EQ(client.count_text("Hello you"), 2);
  EXPECT_EQ(client.count_chat(chat()), std::nullopt);
  EXPECT_TRUE(server.seen().at(0).authorization.empty());
}

TEST(TokenizeClient, VllmShapeAndErrors) {
  FakeServer server([](const Seen& s) -> std::pair<unsigned, std::string> {
    const json::object o = json::parse(s.body).as_object();
    if (o.contains("messages")) return {200, R"({"count":42,"max_model_len":4096,"tokens":[]})"};
    return {200, R"({"count":3,"max_model_len":4096,"tokens":[1,2,3]})"};
  });
  TokenizeClient client(server.url(), "m", std::nullopt);
  EXPECT_EQ(client.count_text("abc"), 3);
  EXPECT_EQ(client.flavor(), TokenizeClient::Flavor::kVllm);
  EXPECT_EQ(client.count_chat(chat()), 42);
  EXPECT_EQ(client.calls(), 2u);

  FakeServer missing([](const Seen&) -> std::pair<unsigned, std::string> {
    return {404, R"({"detail":"Not Found"})"};
  });
  TokenizeClient none(missing.url(), "m", std::nullopt);
  try {
    none.count_text("x");
    FAIL();
  } catch (const TokenizeError& e) {
    EXPECT_NE(std::string(e.what()).find("the target has no /tokenize endpoint (tried vLLM, "
                                         "llama.cpp and TGI shapes); exact lengths need one"),
              std::string::npos)
        << e.what();
  }

  FakeServer locked([](const Seen&) -> std::pair<unsigned, std::string> {
    return {401, R"({"error":"bad key"})"};
  });
  TokenizeClient refused(locked.url(), "m", std::string("sk-wrong-key"));
  try {
    refused.count_text("x");
    FAIL();
  } catch (const TokenizeError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("401"), std::string::npos) << what;
    EXPECT_EQ(what.find("sk-wrong-key"), std::string::npos) << what;
  }
  // Nothing listening.
  TokenizeClient unreachable(BaseUrl::parse("http://127.0.0.1:1/v1"), "m", std::nullopt);
  EXPECT_THROW(unreachable.count_text("x"), TokenizeError);
}

TEST(TokenizeClient, AgainstTheSim) {
  sim::ServerOptions o;
  o.profile.chat_template_tokens = 3;
  sim::Server server(o);
  const std::uint16_t port = server.start();
  TokenizeClient client(BaseUrl::parse("http://127.0.0.1:" + std::to_string(port) + "/v1"),
                        o.profile.model_name, std::nullopt);
  EXPECT_EQ(client.count_text("Hello world 42"),
            static_cast<std::int64_t>(sim::count_tokens("Hello world 42")));
  EXPECT_EQ(client.flavor(), TokenizeClient::Flavor::kVllm);
  const std::int64_t expected = static_cast<std::int64_t>(sim::count_tokens(
      sim::apply_chat_template({{"system", "Be brief."}, {"user", "Say hello"}}, true, 3)));
  EXPECT_EQ(client.count_chat(chat()), expected);
  // Image parts count Profile::image_tokens each.
  std::vector<workload::Message> with_image = chat();
  workload::ContentPart text;
  text.text = "Say hello";
  workload::ContentPart image;
  image.kind = workload::ContentPart::Kind::kImage;
  image.image_url = "data:image/png;base64,aGVsbG8=";
  with_image[1].content.clear();
  with_image[1].parts = {text, image};
  EXPECT_EQ(client.count_chat(with_image), expected + o.profile.image_tokens);
  // A wrong model name is reported with the server's message.
  TokenizeClient wrong(BaseUrl::parse("http://127.0.0.1:" + std::to_string(port) + "/v1"),
                       "no-such-model", std::nullopt);
  try {
    wrong.count_text("x");
    FAIL();
  } catch (const TokenizeError& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-model"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dyno::transport
