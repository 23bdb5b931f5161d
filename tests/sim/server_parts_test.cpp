// The sim's llama.cpp-shaped endpoints and multi-part (image) chat messages.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "digest/digest.h"
#include "sim/request.h"
#include "sim/server.h"
#include "sim/tokenizer.h"
#include "temp_dir.h"

namespace dyno::sim {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
namespace json = boost::json;

std::pair<unsigned, json::value> post(std::uint16_t port, const std::string& target,
                                      const json::value& body) {
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::make_address("127.0.0.1"), port});
  http::request<http::string_body> req{http::verb::post, target, 11};
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::content_type, "application/json");
  req.body() = json::serialize(body);
  req.prepare_payload();
  http::write(socket, req);
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(socket, buffer, res);
  return {res.result_int(), json::parse(res.body())};
}

// SHA-256("hello") and SHA-256 of the 3 bytes 00 ff 10.
constexpr const char* kHelloSha =
    "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";

json::array image_message() {
  return json::array{json::object{
      {"role", "user"},
      {"content",
       json::array{json::object{{"type", "text"}, {"text", "Describe"}},
                   json::object{{"type", "image_url"},
                                {"image_url", {{"url", "data:image/png;base64,aGVsbG8="}}}},
                   json::object{{"type", "image_url"},
                                {"image_url", {{"url", "data:image/png;base64,AP8Q"}}}}}}}};
}

TEST(SimServerParts, LlamaCppTokenizeAndApplyTemplate) {
  Server server(ServerOptions{});
  const std::uint16_t port = server.start();
  auto [status, body] = post(port, "/tokenize", json::object{{"content", "Hello world 42"}});
  EXPECT_EQ(status, 200u);
  EXPECT_FALSE(body.as_object().contains("count"));
  EXPECT_EQ(body.at("tokens").as_array().size(), count_tokens("Hello world 42"));
  std::tie(status, body) =
      post(port, "/tokenize", json::object{{"content", " Hello"}, {"with_pieces", true}});
  EXPECT_EQ(body.at("tokens").at(0).at("piece"), " Hello");
  const json::array messages{json::object{{"role", "system"}, {"content", "Be brief."}},
                             json::object{{"role", "user"}, {"content", "Say hello"}}};
  std::tie(status, body) = post(port, "/apply-template", json::object{{"messages", messages}});
  EXPECT_EQ(status, 200u);
  EXPECT_EQ(body.at("prompt"),
            "<|system|>\nBe brief.<|end|>\n<|user|>\nSay hello<|end|>\n<|assistant|>\n");
  std::tie(status, body) = post(port, "/apply-template", json::object{{"nothing", 1}});
  EXPECT_EQ(status, 400u);
}

TEST(SimServerParts, ImagesCountAndAreHashedInTheTruthLog) {
  const auto truth = dyno::testing::process_temp_dir() / "parts_truth.jsonl";
  ServerOptions o;
  o.profile.image_tokens = 100;
  o.truth_path = truth;
  const std::int64_t text_tokens =
      static_cast<std::int64_t>(count_tokens(apply_chat_template({{"user", "Describe"}}, true, 0)));
  {
    Server server(o);
    const std::uint16_t port = server.start();
    auto [status, body] =
        post(port, "/tokenize", json::object{{"model", "dyno-sim"}, {"messages", image_message()}});
    EXPECT_EQ(status, 200u);
    EXPECT_EQ(body.at("count").to_number<std::int64_t>(), text_tokens + 200);
    std::tie(status, body) =
        post(port, "/v1/chat/completions",
             json::object{{"model", "dyno-sim"}, {"messages", image_message()}, {"max_tokens", 2}});
    EXPECT_EQ(status, 200u);
    EXPECT_EQ(body.at("usage").at("prompt_tokens").to_number<std::int64_t>(), text_tokens + 200);
    json::array bad = image_message();
    bad[0].at("content").as_array()[1].at("image_url").as_object()["url"] =
        "data:image/png;base64,@@@";
    std::tie(status, body) =
        post(port, "/v1/chat/completions", json::object{{"model", "dyno-sim"}, {"messages", bad}});
    EXPECT_EQ(status, 400u);
    server.stop();
  }
  std::ifstream in(truth);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  const json::value v = json::parse(line);
  const json::array& hashes = v.at("image_sha256").as_array();
  ASSERT_EQ(hashes.size(), 2u);
  EXPECT_EQ(hashes[0], kHelloSha);
  EXPECT_EQ(hashes[1], "2da45f2cd1f9c8e69a67abf7a6b26c282533d0a7686787a9533265418680d4d2");
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_FALSE(json::parse(line).as_object().contains("image_sha256"));  // the 400
  std::filesystem::remove(truth);
}

// A data URL's base64 is decoded as forgivingly as the sim always has (sim/request.cpp): the
// padding may be left off, bits after the last byte and one character left over are ignored;
// any other character, padding before the end or padding that is not whole is a 400.
TEST(SimServerParts, DataUrlBase64IsDecodedForgivingly) {
  const auto image_hash = [](const std::string& base64) {
    const json::value messages = json::array{json::object{
        {"role", "user"},
        {"content",
         json::array{json::object{{"type", "image_url"},
                                  {"image_url", {{"url", "data:image/png;base64," + base64}}}}}}}};
    const ParsedChat chat = parse_messages(messages);
    EXPECT_EQ(chat.image_sha256.size(), 1u);
    return chat.image_sha256.empty() ? std::string() : chat.image_sha256[0];
  };
  EXPECT_EQ(image_hash("aGVsbG8="), kHelloSha);  // canonical
  EXPECT_EQ(image_hash("aGVsbG8"), kHelloSha);   // no padding
  EXPECT_EQ(image_hash("aGVsbG9="), kHelloSha);  // non-zero bits after the last byte
  EXPECT_EQ(image_hash("aGVsbG9"), kHelloSha);
  EXPECT_EQ(image_hash("aGVsQ"), digest::sha256_hex("hel"));  // one character left over
  EXPECT_EQ(image_hash(""), digest::sha256_hex(""));
  for (const char* bad : {"aGVsbG8=A", "aGVs bG8=", "aGVsbG8-",
                          "aGVsbG8==", "aGVsbG8===", "aGVs=G8=", "aGVsbG8=\n", "@@@"}) {
    EXPECT_THROW(image_hash(bad), RequestError) << bad;
  }
}

}  // namespace
}  // namespace dyno::sim
