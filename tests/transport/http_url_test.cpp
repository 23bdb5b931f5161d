#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "transport/http_target.h"

namespace dyno::transport {
namespace {

TEST(BaseUrl, ParsesValidUrls) {
  struct Case {
    std::string url;
    bool tls;
    std::string host;
    int port;
    std::string path;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"http://127.0.0.1:8000/v1", false, "127.0.0.1", 8000, "/v1"},
           {"http://localhost/v1/", false, "localhost", 80, "/v1"},
           {"https://api.example.com/v1", true, "api.example.com", 443, "/v1"},
           {"HTTPS://api.example.com:8443", true, "api.example.com", 8443, ""},
           {"http://[::1]:8080/v1", false, "::1", 8080, "/v1"},
           {"http://[fe80::1]/", false, "fe80::1", 80, ""},
           {"http://host:65535/a/b//", false, "host", 65535, "/a/b"},
       }) {
    SCOPED_TRACE(c.url);
    const BaseUrl url = BaseUrl::parse(c.url);
    EXPECT_EQ(url.tls, c.tls);
    EXPECT_EQ(url.host, c.host);
    EXPECT_EQ(url.port, c.port);
    EXPECT_EQ(url.base_path, c.path);
  }
  EXPECT_EQ(BaseUrl::parse("http://[::1]:8080/v1").to_string(), "http://[::1]:8080/v1");
  EXPECT_EQ(BaseUrl::parse("https://h/v1").to_string(), "https://h:443/v1");
}

TEST(BaseUrl, RejectsWithClearMessage) {
  struct Case {
    std::string url;
    std::string message_part;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"127.0.0.1:8000/v1", "http:// or https://"},
           {"ftp://host/v1", "unsupported URL scheme 'ftp'"},
           {"http://user:secret@host/v1", "credentials"},
           {"http://host/v1?key=secret", "query"},
           {"http://host/v1#frag", "fragment"},
           {"http://:8000/v1", "no host"},
           {"http://host:0/v1", "invalid port"},
           {"http://host:65536/v1", "invalid port"},
           {"http://host:80a/v1", "invalid port"},
           {"http://host:/v1", "empty port"},
           {"http://[::1/v1", "IPv6"},
       }) {
    SCOPED_TRACE(c.url);
    try {
      BaseUrl::parse(c.url);
      ADD_FAILURE() << "accepted";
    } catch (const UrlError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(c.message_part), std::string::npos) << message;
      EXPECT_EQ(message.find("secret"), std::string::npos) << message;
    }
  }
}

TEST(BuildRequestBody, ChatStreamExact) {
  workload::Request request;
  request.id = "r1";
  request.messages = {{"system", "Be \"brief\"."}, {"user", "Hi\n\x01\xC3\xA9"}};
  request.sampling.max_tokens = 128;
  request.sampling.temperature = 0.7;
  request.sampling.top_p = 1.0;
  request.sampling.seed = 42;
  request.sampling.stop = {"\n\n", "END"};
  request.sampling.ignore_eos = true;
  request.sampling.min_tokens = 16;
  EXPECT_EQ(build_request_body(request, "my-model", workload::Api::kChat, true),
            "{\"model\":\"my-model\",\"messages\":[{\"role\":\"system\",\"content\":\"Be "
            "\\\"brief\\\".\"},{\"role\":\"user\",\"content\":\"Hi\\n\\u0001\xC3\xA9\"}],"
            "\"max_tokens\":128,\"temperature\":0.7,\"top_p\":1,\"seed\":42,\"stop\":[\"\\n\\n\","
            "\"END\"],\"ignore_eos\":true,\"min_tokens\":16,\"stream\":true,\"stream_options\":{"
            "\"include_usage\":true}}");
}

TEST(BuildRequestBody, CompletionsNonStreamMinimal) {
  workload::Request request;
  request.prompt = "Once upon";
  EXPECT_EQ(build_request_body(request, "m", workload::Api::kCompletions, false),
            R"({"model":"m","prompt":"Once upon","stream":false})");
  EXPECT_EQ(build_request_body(request, "m", workload::Api::kChat, false),
            R"({"model":"m","messages":[{"role":"user","content":"Once upon"}],"stream":false})");
  workload::Request chat;
  chat.messages = {{"user", "x"}};
  EXPECT_THROW(build_request_body(chat, "m", workload::Api::kCompletions, false),
               std::invalid_argument);
}

TEST(BuildRequestBody, ExtraBodyFieldsAreAppendedAsGiven) {
  workload::Request request;
  request.prompt = "Hi";
  request.sampling.max_tokens = 4;
  request.extra_body =
      R"({"cache_prompt":false,"chat_template_kwargs":{"enable_thinking":false},"n_probs":0.5})";
  EXPECT_EQ(build_request_body(request, "m", workload::Api::kCompletions, true),
            R"({"model":"m","prompt":"Hi","max_tokens":4,"stream":true,)"
            R"("stream_options":{"include_usage":true},"cache_prompt":false,)"
            R"("chat_template_kwargs":{"enable_thinking":false},"n_probs":0.5})");
  // The fields dyno writes of its own: what --extra-body may not name without the override.
  EXPECT_EQ(
      body_fields(request, workload::Api::kCompletions, true),
      (std::vector<std::string>{"model", "prompt", "max_tokens", "stream", "stream_options"}));
  EXPECT_EQ(body_fields(request, workload::Api::kChat, false),
            (std::vector<std::string>{"model", "messages", "max_tokens", "stream"}));
}

TEST(BuildRequestBody, AnOverriddenFieldIsTheUsersAndAppearsOnce) {
  workload::Request request;
  request.messages = {{"user", "x"}};
  request.sampling.max_tokens = 4;
  request.extra_body =
      R"({"max_tokens":9,"stream_options":{"include_usage":false},"model":"other"})";
  const std::string body = build_request_body(request, "m", workload::Api::kChat, true);
  EXPECT_EQ(body, R"({"messages":[{"role":"user","content":"x"}],"stream":true,"max_tokens":9,)"
                  R"("stream_options":{"include_usage":false},"model":"other"})");
  const boost::json::object parsed = boost::json::parse(body).as_object();  // valid JSON
  EXPECT_EQ(parsed.size(), 5u);
}

TEST(BuildRequestBody, ToolCallsToolResultsAndTheToolSpec) {
  workload::Request request;
  request.messages = {{"user", "List."}};
  workload::Message call{"assistant", "Looking."};
  call.tool_calls = R"([{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}])";
  workload::Message result{"tool", "a.txt"};
  result.tool_call_id = "c1";
  request.messages.push_back(call);
  request.messages.push_back(result);
  request.turn = workload::Turn{"s", 1, std::nullopt, "", R"([{"type":"function"}])"};
  EXPECT_EQ(build_request_body(request, "m", workload::Api::kChat, false),
            R"({"model":"m","messages":[{"role":"user","content":"List."},)"
            R"({"role":"assistant","content":"Looking.","tool_calls":[{"id":"c1","type":)"
            R"("function","function":{"name":"ls","arguments":"{}"}}]},{"role":"tool",)"
            R"("content":"a.txt","tool_call_id":"c1"}],"tools":[{"type":"function"}],)"
            R"("stream":false})");
}

TEST(BuildRequestBody, ChatPartsExact) {
  workload::Request request;
  request.id = "img";
  workload::ContentPart image;
  image.kind = workload::ContentPart::Kind::kImage;
  image.image_url = "data:image/png;base64,iVBORw0KGgo=";
  image.image_sha256 = "ignored-on-the-wire";
  workload::ContentPart web;
  web.kind = workload::ContentPart::Kind::kImage;
  web.image_url = "https://example.com/a.png";
  workload::ContentPart text;
  text.text = "What is \"this\"?\n";
  request.messages = {{"system", "Be brief."}, {"user", "", {image, text, web}}};
  request.sampling.max_tokens = 8;
  EXPECT_EQ(
      build_request_body(request, "vlm", workload::Api::kChat, false),
      R"({"model":"vlm","messages":[{"role":"system","content":"Be brief."},)"
      R"({"role":"user","content":[{"type":"image_url","image_url":{"url":)"
      R"("data:image/png;base64,iVBORw0KGgo="}},{"type":"text","text":"What is \"this\"?\n"},)"
      R"({"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}],)"
      R"("max_tokens":8,"stream":false})");
  // Text-only parts are still sent as an array (what the stream said).
  workload::Request text_only;
  text_only.messages = {{"user", "", {text}}};
  EXPECT_EQ(build_request_body(text_only, "m", workload::Api::kChat, true),
            R"({"model":"m","messages":[{"role":"user","content":[{"type":"text","text":)"
            R"("What is \"this\"?\n"}]}],"stream":true,"stream_options":{"include_usage":true}})");
  // Images cannot go to the completions API.
  try {
    build_request_body(request, "m", workload::Api::kCompletions, false);
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "request 'img' has image parts; the completions API takes text only (use --api "
              "chat)");
  }
}

}  // namespace
}  // namespace dyno::transport
