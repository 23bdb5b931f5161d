#include "sim/server.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "sim/sim_client.h"
#include "sim/tokenizer.h"
#include "temp_dir.h"

namespace dyno::sim {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

using testing::chat_body;
using testing::Client;
using testing::fast_profile;
using testing::read_truth;
using testing::Reply;
using testing::sse_data;

// Parsed streamed response.
struct Streamed {
  std::vector<json::object> chunks;  // every JSON chunk, in order
  std::string content;
  std::string reasoning;
  std::size_t token_events = 0;  // chunks that carry text
  bool done = false;             // "[DONE]" last
  std::optional<json::object> usage;
};

Streamed parse_stream(const std::string& body, bool chat) {
  Streamed s;
  const auto events = sse_data(body);
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i] == "[DONE]") {
      EXPECT_EQ(i + 1, events.size());
      s.done = true;
      continue;
    }
    json::object o = json::parse(events[i]).as_object();
    const json::array& choices = o.at("choices").as_array();
    if (choices.empty()) {
      s.usage = o.at("usage").as_object();
    } else {
      const json::object& c = choices[0].as_object();
      if (chat) {
        const json::object& delta = c.at("delta").as_object();
        if (const auto* t = delta.if_contains("content"); t && !t->as_string().empty()) {
          s.content += t->as_string();
          ++s.token_events;
        }
        if (const auto* t = delta.if_contains("reasoning_content")) {
          EXPECT_TRUE(s.content.empty()) << "reasoning after content";
          s.reasoning += t->as_string();
          ++s.token_events;
        }
      } else if (!c.at("text").as_string().empty()) {
        s.content += c.at("text").as_string();
        ++s.token_events;
      }
    }
    s.chunks.push_back(std::move(o));
  }
  return s;
}

struct Running {
  explicit Running(ServerOptions o) : server(std::move(o)) { port = server.start(); }
  Server server;
  std::uint16_t port = 0;
};

std::filesystem::path temp_path(const std::string& name) {
  return dyno::testing::process_temp_dir() / ("sim_" + name + ".jsonl");
}

TEST(Server, SimpleEndpoints) {
  ServerOptions o;
  o.profile = fast_profile();
  Running r(o);
  Client c(r.port);
  Reply h = c.request(http::verb::get, "/health");
  EXPECT_EQ(h.status, 200);
  Reply m = c.request(http::verb::get, "/v1/models");
  ASSERT_EQ(m.status, 200);
  const json::value models = json::parse(m.body);
  EXPECT_EQ(models.at("object").as_string(), "list");
  EXPECT_EQ(models.at("data").at(0).at("id").as_string(), "dyno-sim");
  EXPECT_EQ(models.at("data").at(0).at("owned_by").as_string(), "dyno-sim");
  EXPECT_EQ(models.at("data").at(0).at("max_model_len").to_number<std::int64_t>(), 32768);
  Reply nf = c.request(http::verb::get, "/nope");
  EXPECT_EQ(nf.status, 404);
  EXPECT_TRUE(json::parse(nf.body).at("error").is_object());

  Reply t = c.post("/tokenize", json::object{{"model", "dyno-sim"}, {"prompt", "Hello world 42"}});
  ASSERT_EQ(t.status, 200);
  const json::value tok = json::parse(t.body);
  EXPECT_EQ(tok.at("count").to_number<int>(), 5);  // "Hello", " world", " ", "4", "2"
  EXPECT_EQ(tok.at("tokens").as_array().size(), 5u);
  EXPECT_EQ(tok.at("tokens").at(0).to_number<int>(), token_id("Hello"));
  EXPECT_EQ(tok.at("max_model_len").to_number<int>(), 32768);
  json::object no_gen{{"messages", json::array{json::object{{"role", "user"}, {"content", "x"}}}},
                      {"add_generation_prompt", false}};
  Reply t2 = c.post("/tokenize", no_gen);
  EXPECT_EQ(json::parse(t2.body).at("count").to_number<int>(), 13);
}

TEST(Server, BadRequests) {
  ServerOptions o;
  o.profile = fast_profile();
  o.profile.max_model_len = 100;
  Running r(o);
  Client c(r.port);
  Reply bad = c.request(http::verb::post, "/v1/chat/completions", "{not json");
  EXPECT_EQ(bad.status, 400);
  const json::value err = json::parse(bad.body);
  EXPECT_EQ(err.at("error").at("type").as_string(), "invalid_request_error");
  EXPECT_EQ(err.at("error").at("code").to_number<int>(), 400);

  json::object no_model = chat_body(5, false);
  no_model.erase("model");
  EXPECT_EQ(c.post("/v1/chat/completions", no_model).status, 400);
  json::object other_model = chat_body(5, false);
  other_model["model"] = "gpt-9";
  EXPECT_EQ(c.post("/v1/chat/completions", other_model).status, 404);
  EXPECT_EQ(c.post("/v1/chat/completions", json::object{{"model", "dyno-sim"}}).status, 400);
  EXPECT_EQ(c.post("/v1/completions", json::object{{"model", "dyno-sim"}}).status, 400);
  EXPECT_EQ(c.post("/v1/chat/completions", chat_body(95, false)).status, 400);  // > 100
  json::object bad_max = chat_body(5, false);
  bad_max["max_tokens"] = "ten";
  EXPECT_EQ(c.post("/v1/chat/completions", bad_max).status, 400);
  // The connection survives every error.
  EXPECT_EQ(c.post("/v1/chat/completions", chat_body(5, false)).status, 200);
}

TEST(Server, ExpectContinue) {
  ServerOptions o;
  o.profile = fast_profile();
  Running r(o);
  Client c(r.port);
  const std::string body = json::serialize(chat_body(3, false));
  const std::string head =
      "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
      "Content-Type: application/json\r\nExpect: 100-continue\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n";
  asio::write(c.socket(), asio::buffer(head));
  std::string got;
  std::array<char, 4096> buf{};
  while (got.find("\r\n\r\n") == std::string::npos) {
    got.append(buf.data(), c.socket().read_some(asio::buffer(buf)));
  }
  EXPECT_EQ(got.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0), 0u);
  asio::write(c.socket(), asio::buffer(body));
  while (got.find("\"usage\"") == std::string::npos) {
    got.append(buf.data(), c.socket().read_some(asio::buffer(buf)));
  }
  EXPECT_NE(got.find("HTTP/1.1 200 OK"), std::string::npos);
}

TEST(Server, ChatNonStreamed) {
  ServerOptions o;
  o.profile = fast_profile();
  Running r(o);
  Client c(r.port);
  json::object body = chat_body(17, false);
  body["max_completion_tokens"] = 3;  // max_tokens wins
  Reply reply = c.post("/v1/chat/completions", body);
  ASSERT_EQ(reply.status, 200) << reply.body;
  const json::value v = json::parse(reply.body);
  EXPECT_EQ(v.at("object").as_string(), "chat.completion");
  EXPECT_EQ(v.at("model").as_string(), "dyno-sim");
  const json::value& choice = v.at("choices").at(0);
  EXPECT_EQ(choice.at("message").at("role").as_string(), "assistant");
  EXPECT_EQ(choice.at("finish_reason").as_string(), "length");
  const std::string content(choice.at("message").at("content").as_string());
  EXPECT_EQ(count_tokens(content), 17u);
  EXPECT_EQ(v.at("usage").at("completion_tokens").to_number<int>(), 17);
  Reply t =
      c.post("/tokenize", json::object{{"model", "dyno-sim"}, {"messages", body.at("messages")}});
  EXPECT_EQ(v.at("usage").at("prompt_tokens").to_number<int>(),
            json::parse(t.body).at("count").to_number<int>());
  EXPECT_EQ(v.at("usage").at("total_tokens").to_number<int>(),
            v.at("usage").at("prompt_tokens").to_number<int>() + 17);

  json::object only_mct = chat_body(0, false);
  only_mct.erase("max_tokens");
  only_mct["max_completion_tokens"] = 3;
  const json::value v2 = json::parse(c.post("/v1/chat/completions", only_mct).body);
  EXPECT_EQ(v2.at("usage").at("completion_tokens").to_number<int>(), 3);
}

TEST(Server, ChatStreamedFraming) {
  const auto truth = temp_path("framing");
  ServerOptions o;
  o.profile = fast_profile();
  o.truth_path = truth;
  {
    Running r(o);
    Client c(r.port);
    Reply reply = c.post("/v1/chat/completions", chat_body(40, true), {{"X-Request-Id", "req-7"}});
    ASSERT_EQ(reply.status, 200);
    EXPECT_EQ(reply.headers[http::field::content_type], "text/event-stream");
    EXPECT_EQ(reply.headers[http::field::transfer_encoding], "chunked");
    const Streamed s = parse_stream(reply.body, true);
    ASSERT_GE(s.chunks.size(), 3u);
    EXPECT_EQ(s.chunks[0].at("choices").at(0).at("delta").at("role").as_string(), "assistant");
    EXPECT_EQ(s.chunks[0].at("object").as_string(), "chat.completion.chunk");
    EXPECT_EQ(s.chunks[0].at("id").as_string().subview().substr(0, 9), "chatcmpl-");
    EXPECT_TRUE(s.done);
    ASSERT_TRUE(s.usage);
    EXPECT_EQ(s.chunks.back().at("choices").as_array().size(), 0u);  // usage chunk last
    const json::object& fin = s.chunks[s.chunks.size() - 2];
    EXPECT_EQ(fin.at("choices").at(0).at("finish_reason").as_string(), "length");
    EXPECT_EQ(s.usage->at("completion_tokens").to_number<int>(), 40);
    EXPECT_EQ(count_tokens(s.content), 40u);
    EXPECT_FALSE(s.usage->contains("completion_tokens_details"));
    EXPECT_EQ(s.token_events, 40u);
    Reply t = c.post("/tokenize", json::object{{"model", "dyno-sim"},
                                               {"messages", chat_body(1, false).at("messages")}});
    EXPECT_EQ(s.usage->at("prompt_tokens").to_number<int>(),
              json::parse(t.body).at("count").to_number<int>());

    // Without include_usage: no usage chunk; keep-alive reuse of the connection.
    Reply plain = c.post("/v1/chat/completions", chat_body(5, true, false));
    const Streamed p = parse_stream(plain.body, true);
    EXPECT_FALSE(p.usage);
    EXPECT_TRUE(p.done);
    EXPECT_EQ(p.token_events, 5u);
  }
  const auto lines = read_truth(truth);
  ASSERT_EQ(lines.size(), 2u);
  const json::object& l = lines[0];
  EXPECT_EQ(l.at("request_id").as_string(), "req-7");
  EXPECT_EQ(l.at("status").to_number<int>(), 200);
  EXPECT_EQ(l.at("fault").as_string(), "none");
  EXPECT_TRUE(l.at("stream").as_bool());
  EXPECT_EQ(l.at("completion_tokens").to_number<int>(), 40);
  EXPECT_EQ(l.at("event_times_ns").as_array().size(), 40u);
  EXPECT_EQ(l.at("event_tokens").as_array().size(), 40u);
  const auto received = l.at("received_ns").to_number<std::int64_t>();
  const auto first = l.at("first_token_ns").to_number<std::int64_t>();
  EXPECT_GE(first, received);
  EXPECT_GE(l.at("done_ns").to_number<std::int64_t>(), first);
  EXPECT_EQ(lines[1].at("request_id").as_string(), "");
  std::filesystem::remove(truth);
}

TEST(Server, CompletionsStreamed) {
  ServerOptions o;
  o.profile = fast_profile();
  Running r(o);
  Client c(r.port);
  const std::string prompt = "Once upon a time, in 1999, there was a benchmark.";
  json::object body{
      {"model", "dyno-sim"},       {"prompt", prompt},
      {"max_tokens", 12},          {"stream", true},
      {"temperature", 0.0},        {"seed", 5},
      {"stop", json::array{"\n"}}, {"stream_options", json::object{{"include_usage", true}}}};
  Reply reply = c.post("/v1/completions", body);
  ASSERT_EQ(reply.status, 200);
  const Streamed s = parse_stream(reply.body, false);
  EXPECT_EQ(s.chunks[0].at("object").as_string(), "text_completion");
  EXPECT_EQ(s.token_events, 12u);
  EXPECT_EQ(count_tokens(s.content), 12u);
  ASSERT_TRUE(s.usage);
  EXPECT_EQ(s.usage->at("prompt_tokens").to_number<std::size_t>(), count_tokens(prompt));
  // Same seed, same text.
  const Streamed again = parse_stream(c.post("/v1/completions", body).body, false);
  EXPECT_EQ(again.content, s.content);
  // Non-streamed completion.
  body["stream"] = false;
  const json::value v = json::parse(c.post("/v1/completions", body).body);
  EXPECT_EQ(v.at("object").as_string(), "text_completion");
  EXPECT_EQ(std::string(v.at("choices").at(0).at("text").as_string()), s.content);
}

TEST(Server, ReasoningProfile) {
  ServerOptions o;
  o.profile = fast_profile("reasoning");
  Running r(o);
  Client c(r.port);
  const Streamed s = parse_stream(c.post("/v1/chat/completions", chat_body(20, true)).body, true);
  EXPECT_EQ(count_tokens(s.reasoning), 10u);
  EXPECT_EQ(count_tokens(s.content), 10u);
  ASSERT_TRUE(s.usage);
  EXPECT_EQ(s.usage->at("completion_tokens_details").at("reasoning_tokens").to_number<int>(), 10);
  const json::value v = json::parse(c.post("/v1/chat/completions", chat_body(20, false)).body);
  EXPECT_EQ(count_tokens(v.at("choices").at(0).at("message").at("reasoning_content").as_string()),
            10u);
}

TEST(Server, SpecProfileEventsCarrySeveralTokens) {
  const auto truth = temp_path("spec");
  ServerOptions o;
  o.profile = fast_profile("spec");
  o.truth_path = truth;
  {
    Running r(o);
    Client c(r.port);
    const Streamed s =
        parse_stream(c.post("/v1/chat/completions", chat_body(200, true)).body, true);
    EXPECT_EQ(count_tokens(s.content), 200u);
    EXPECT_LT(s.token_events, 150u);
    EXPECT_EQ(s.usage->at("completion_tokens").to_number<int>(), 200);
  }
  const auto lines = read_truth(truth);
  ASSERT_EQ(lines.size(), 1u);
  std::int64_t sum = 0;
  for (const auto& t : lines[0].at("event_tokens").as_array()) sum += t.to_number<std::int64_t>();
  EXPECT_EQ(sum, 200);
  EXPECT_LT(lines[0].at("event_tokens").as_array().size(), 150u);
  std::filesystem::remove(truth);
}

ServerOptions fault_options(const std::filesystem::path& truth) {
  ServerOptions o;
  o.profile = fast_profile();
  o.truth_path = truth;
  o.faults.after_tokens = 2;
  return o;
}

TEST(Server, HttpFaults) {
  const auto truth = temp_path("http_faults");
  ServerOptions o = fault_options(truth);
  o.faults.http_500_every = 2;
  o.faults.http_429_every = 3;
  {
    Running r(o);
    Client c(r.port);
    EXPECT_EQ(c.post("/v1/chat/completions", chat_body(3, false)).status, 200);  // 1
    Reply e500 = c.post("/v1/chat/completions", chat_body(3, true));             // 2
    EXPECT_EQ(e500.status, 500);
    EXPECT_EQ(json::parse(e500.body).at("error").at("code").to_number<int>(), 500);
    Reply e429 = c.post("/v1/chat/completions", chat_body(3, true));  // 3
    EXPECT_EQ(e429.status, 429);
    EXPECT_EQ(e429.headers["Retry-After"], "1");
    EXPECT_EQ(c.post("/v1/chat/completions", chat_body(3, false)).status, 500);  // 4
  }
  const auto lines = read_truth(truth);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[1].at("fault").as_string(), "http_500");
  EXPECT_EQ(lines[1].at("status").to_number<int>(), 500);
  EXPECT_EQ(lines[2].at("fault").as_string(), "http_429");
  EXPECT_TRUE(lines[2].at("first_token_ns").is_null());
  std::filesystem::remove(truth);
}

TEST(Server, StreamFaults) {
  const auto truth = temp_path("stream_faults");
  ServerOptions o = fault_options(truth);
  o.faults.malformed_every = 1;
  {
    Running r(o);
    Client c(r.port);
    Reply reply = c.post("/v1/chat/completions", chat_body(5, true));
    ASSERT_TRUE(reply.complete);
    const auto bad = reply.body.find("data: {not json\n\n");
    ASSERT_NE(bad, std::string::npos);
    // Exactly 2 token events (after the role chunk, which shares the first event's write) before.
    const Streamed before = parse_stream(reply.body.substr(0, bad), true);
    EXPECT_EQ(before.token_events, 2u);
    EXPECT_NE(reply.body.find("data: [DONE]"), std::string::npos);
  }
  auto lines = read_truth(truth);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].at("fault").as_string(), "malformed");
  EXPECT_EQ(lines[0].at("completion_tokens").to_number<int>(), 5);

  o = fault_options(truth);
  o.faults.cut_every = 1;
  {
    Running r(o);
    Client c(r.port);
    Reply reply = c.post("/v1/chat/completions", chat_body(50, true));
    EXPECT_FALSE(reply.complete);
    EXPECT_FALSE(reply.timed_out);
    EXPECT_EQ(reply.status, 200);
    EXPECT_EQ(parse_stream(reply.body, true).token_events, 2u);
    EXPECT_EQ(reply.body.find("[DONE]"), std::string::npos);
  }
  lines = read_truth(truth);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].at("fault").as_string(), "cut");
  EXPECT_EQ(lines[0].at("event_times_ns").as_array().size(), 2u);

  o = fault_options(truth);
  o.faults.stall_every = 2;
  {
    Running r(o);
    Client ok(r.port);
    EXPECT_TRUE(ok.post("/v1/chat/completions", chat_body(5, true)).complete);
    Client c(r.port);
    Reply reply = c.post("/v1/chat/completions", chat_body(50, true), {}, 400ms);
    EXPECT_TRUE(reply.timed_out);
    EXPECT_EQ(parse_stream(reply.body, true).token_events, 2u);
    // The server still serves others while one connection is stalled.
    EXPECT_TRUE(ok.post("/v1/chat/completions", chat_body(5, true)).complete);
  }  // stop() with a stalled connection open
  lines = read_truth(truth);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1].at("fault").as_string(), "stall");
  EXPECT_EQ(lines[1].at("completion_tokens").to_number<int>(), 2);
  std::filesystem::remove(truth);
}

/// The server's word that it failed, in each engine's form: after 2 token events, the error,
/// then the body ends cleanly (with [DONE] where the engine sends one).
TEST(Server, InStreamErrorFaultsInEachForm) {
  const auto truth = temp_path("error_faults");
  struct Form {
    Faults::ErrorForm form;
    const char* written;
    bool done;
  };
  for (const Form f :
       {Form{Faults::ErrorForm::kData, "data: {\"error\":{\"message\":\"injected fault: out of KV cache\"",
             true},
        Form{Faults::ErrorForm::kField, "error: {\"code\":500,\"message\":\"injected fault", true},
        Form{Faults::ErrorForm::kEvent, "event: error\ndata: {\"message\":\"injected fault", false},
        Form{Faults::ErrorForm::kBare, "{\"error\":{\"message\":\"injected fault", false}}) {
    ServerOptions o = fault_options(truth);
    o.faults.error_every = 1;
    o.faults.error_form = f.form;
    {
      Running r(o);
      Client c(r.port);
      Reply reply = c.post("/v1/chat/completions", chat_body(50, true));
      ASSERT_TRUE(reply.complete) << f.written;  // the body ends cleanly
      const auto at = reply.body.find(f.written);
      ASSERT_NE(at, std::string::npos) << reply.body;
      EXPECT_EQ(parse_stream(reply.body.substr(0, at), true).token_events, 2u) << f.written;
      EXPECT_EQ(reply.body.find("finish_reason\":\"length"), std::string::npos);
      EXPECT_EQ(reply.body.find("data: [DONE]") != std::string::npos, f.done) << reply.body;
    }
    const auto lines = read_truth(truth);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0].at("fault").as_string(), "error");
    EXPECT_EQ(lines[0].at("completion_tokens").to_number<int>(), 2);
  }
  // Not streamed: a 200 whose body is the error object.
  ServerOptions o = fault_options(truth);
  o.faults.error_every = 1;
  {
    Running r(o);
    Client c(r.port);
    Reply reply = c.post("/v1/chat/completions", chat_body(50, false));
    EXPECT_EQ(reply.status, 200);
    EXPECT_EQ(json::parse(reply.body).at("error").at("type").as_string(), "server_error");
  }
  std::filesystem::remove(truth);
  EXPECT_THROW(parse_error_form("smoke"), std::invalid_argument);
  EXPECT_EQ(parse_error_form("bare"), Faults::ErrorForm::kBare);
}

/// An answer that ends mid-way without a finish reason: with [DONE] (after the usage chunk),
/// or with the end of the body; not streamed, "finish_reason": null.
TEST(Server, UnfinishedFaultsEndWithoutAFinishReason) {
  const auto truth = temp_path("unfinished_faults");
  for (const bool eof : {false, true}) {
    ServerOptions o = fault_options(truth);
    o.faults.unfinished_every = 1;
    o.faults.unfinished_eof = eof;
    {
      Running r(o);
      Client c(r.port);
      Reply reply = c.post("/v1/completions", json::object{{"model", "dyno-sim"},
                                                           {"prompt", "x"},
                                                           {"max_tokens", 50},
                                                           {"stream", true}});
      ASSERT_TRUE(reply.complete);
      const Streamed got = parse_stream(reply.body, false);
      EXPECT_EQ(got.token_events, 2u);
      EXPECT_EQ(reply.body.find("finish_reason\":\""), std::string::npos) << reply.body;
      EXPECT_EQ(got.done, !eof) << reply.body;
    }
    EXPECT_EQ(read_truth(truth).at(0).at("fault").as_string(), "unfinished");
  }
  ServerOptions o = fault_options(truth);
  o.faults.unfinished_every = 1;
  {
    Running r(o);
    Client c(r.port);
    Reply reply = c.post("/v1/chat/completions", chat_body(50, false));
    EXPECT_EQ(reply.status, 200);
    EXPECT_TRUE(json::parse(reply.body).at("choices").at(0).at("finish_reason").is_null());
  }
  std::filesystem::remove(truth);
}

TEST(Server, FaultAtTheLastTokenIsNotInjected) {
  const auto truth = temp_path("fault_at_end");
  ServerOptions o = fault_options(truth);
  o.faults.cut_every = 1;
  {
    Running r(o);
    Client c(r.port);
    Reply reply = c.post("/v1/chat/completions", chat_body(2, true));  // ends at after_tokens
    EXPECT_TRUE(reply.complete);
    EXPECT_TRUE(parse_stream(reply.body, true).done);
  }
  EXPECT_EQ(read_truth(truth).at(0).at("fault").as_string(), "none");
  // Malformed at the last token: the bad line comes before the final chunks.
  o = fault_options(truth);
  o.faults.malformed_every = 1;
  {
    Running r(o);
    Client c(r.port);
    Reply reply = c.post(
        "/v1/completions",
        json::object{{"model", "dyno-sim"}, {"prompt", "x"}, {"max_tokens", 2}, {"stream", true}});
    ASSERT_TRUE(reply.complete);
    const auto bad = reply.body.find("data: {not json\n\n");
    ASSERT_NE(bad, std::string::npos);
    EXPECT_EQ(parse_stream(reply.body.substr(0, bad), false).token_events, 2u);
    EXPECT_NE(reply.body.find("finish_reason\":\"length", bad), std::string::npos);
  }
  EXPECT_EQ(read_truth(truth).at(0).at("fault").as_string(), "malformed");
  std::filesystem::remove(truth);
}

TEST(Server, NonStreamedFaults) {
  const auto truth = temp_path("nonstream_faults");
  ServerOptions o = fault_options(truth);
  o.faults.cut_every = 1;
  Running r(o);
  Client c(r.port);
  Reply reply = c.post("/v1/chat/completions", chat_body(50, false));
  EXPECT_FALSE(reply.complete);
  EXPECT_EQ(reply.status, 0);
}

TEST(Server, ExitAfterRequests) {
  ServerOptions o;
  o.profile = fast_profile();
  o.exit_after_requests = 2;
  Server server(o);
  const std::uint16_t port = server.start();
  EXPECT_EQ(server.port(), port);
  {
    Client c(port);
    EXPECT_EQ(c.post("/v1/chat/completions", chat_body(3, true)).status, 200);
    EXPECT_EQ(c.request(http::verb::get, "/health").status, 200);  // not a completion
    Reply second = c.post("/v1/chat/completions", chat_body(3, false));
    EXPECT_EQ(second.status, 200);
    EXPECT_TRUE(second.complete);
  }
  server.wait();  // returns: the server stopped by itself
  EXPECT_THROW(Client{port}.request(http::verb::get, "/health"), std::exception);
}

TEST(Server, ClientDisconnectMidStream) {
  ServerOptions o;
  o.profile = builtin_profile("firehose");
  Running r(o);
  for (int i = 0; i < 3; ++i) {
    Client c(r.port);
    http::request<http::string_body> req{http::verb::post, "/v1/chat/completions", 11};
    req.set(http::field::host, "x");
    req.body() = json::serialize(chat_body(100000000, true));
    req.prepare_payload();
    http::write(c.socket(), req);
    std::array<char, 4096> buf{};
    c.socket().read_some(asio::buffer(buf));  // streaming has begun; now vanish
    std::this_thread::sleep_for(50ms);        // the unread backlog pauses the sequence
  }
  Client c(r.port);
  Reply reply = c.post("/v1/chat/completions", chat_body(20, true));
  EXPECT_TRUE(reply.complete);
  EXPECT_EQ(parse_stream(reply.body, true).token_events, 20u);
}

TEST(Server, ConcurrentClientsAreBatched) {
  const auto truth = temp_path("concurrent");
  ServerOptions o;
  o.profile = fast_profile();
  o.truth_path = truth;
  constexpr int kClients = 16;
  constexpr int kRequests = 3;
  {
    Running r(o);
    std::vector<std::thread> threads;
    std::vector<int> good(kClients, 0);
    for (int i = 0; i < kClients; ++i) {
      threads.emplace_back([&, i] {
        Client c(r.port);
        for (int k = 0; k < kRequests; ++k) {
          const Reply reply = c.post("/v1/chat/completions", chat_body(30, true),
                                     {{"X-Request-Id", std::to_string(i * 100 + k)}});
          const Streamed s = parse_stream(reply.body, true);
          if (reply.complete && s.done && count_tokens(s.content) == 30u) ++good[i];
        }
      });
    }
    for (auto& t : threads) t.join();
    for (int i = 0; i < kClients; ++i) EXPECT_EQ(good[i], kRequests) << i;
  }
  const auto lines = read_truth(truth);
  EXPECT_EQ(lines.size(), static_cast<std::size_t>(kClients * kRequests));
  for (const auto& l : lines) {
    EXPECT_EQ(l.at("completion_tokens").to_number<int>(), 30);
    EXPECT_EQ(l.at("event_times_ns").as_array().size(), 30u);
  }
  std::filesystem::remove(truth);
}

long rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

TEST(Server, BackpressureBoundsMemory) {
  ServerOptions o;
  o.profile = builtin_profile("firehose");
  Running r(o);
  Client c(r.port);
  http::request<http::string_body> req{http::verb::post, "/v1/chat/completions", 11};
  req.set(http::field::host, "x");
  req.body() = json::serialize(chat_body(100000000, true));
  req.prepare_payload();
  http::write(c.socket(), req);
  std::this_thread::sleep_for(100ms);
  const long before = rss_kib();
  std::this_thread::sleep_for(400ms);  // a firehose would render ~100 MB in this time unpaused
  EXPECT_LT(rss_kib() - before, 16 * 1024);
  // Reading resumes the stream.
  std::array<char, 65536> buf{};
  std::size_t got = 0;
  while (got < 4 * 1024 * 1024) got += c.socket().read_some(asio::buffer(buf));
}

TEST(Server, SlowProfileFirstTokenDelay) {
  ServerOptions o;
  o.profile = builtin_profile("cpu");  // prefill 300 tok/s, base 0.03 s
  Running r(o);
  Client c(r.port);
  std::string prompt;
  for (int i = 0; i < 60; ++i) prompt += " word";
  const std::size_t prompt_tokens = count_tokens(prompt);
  const double prefill_s = 0.03 + static_cast<double>(prompt_tokens) / 300.0;  // 0.23 s
  json::object body{{"model", "dyno-sim"}, {"prompt", prompt}, {"max_tokens", 2}, {"stream", true}};
  http::request<http::string_body> req{http::verb::post, "/v1/completions", 11};
  req.set(http::field::host, "x");
  req.body() = json::serialize(body);
  req.prepare_payload();
  const auto sent = std::chrono::steady_clock::now();
  http::write(c.socket(), req);
  std::string got;
  std::array<char, 4096> buf{};
  while (got.find("data: ") == std::string::npos) {
    const std::size_t n = c.socket().read_some(asio::buffer(buf));
    got.append(buf.data(), n);
  }
  const double ttft =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  EXPECT_GE(ttft, prefill_s * 0.98);
  EXPECT_LT(ttft, prefill_s + 2.0);
}

TEST(Server, FirehoseThroughput) {
  ServerOptions o;
  o.profile = builtin_profile("firehose");
  Running r(o);
  Client c(r.port);
  constexpr std::int64_t kTokens = 200000;
  http::request<http::string_body> req{http::verb::post, "/v1/chat/completions", 11};
  req.set(http::field::host, "x");
  req.body() = json::serialize(chat_body(kTokens, true));
  req.prepare_payload();
  const auto start = std::chrono::steady_clock::now();
  http::write(c.socket(), req);
  std::vector<char> buf(1 << 20);
  std::size_t events = 0;
  std::string carry;
  bool done = false;
  while (!done) {
    const std::size_t n = c.socket().read_some(asio::buffer(buf));
    std::string chunk = carry + std::string(buf.data(), n);
    std::size_t pos = 0;
    while ((pos = chunk.find("\"content\":\" ", pos)) != std::string::npos) {
      ++events;
      ++pos;
    }
    done = chunk.find("data: [DONE]") != std::string::npos;
    // Keep less than a whole pattern, so no match is counted twice.
    carry = chunk.size() > 11 ? chunk.substr(chunk.size() - 11) : chunk;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(events, static_cast<std::size_t>(kTokens));
  const double rate = static_cast<double>(events) / s;
  std::printf("firehose: %zu events in %.3f s = %.0f events/s\n", events, s, rate);
  EXPECT_GT(rate, 20000.0);
}

}  // namespace
}  // namespace dyno::sim
