// The OpenAI-compatible decoder on its own, without sockets: body bytes in (any split), observer
// calls, progress and a verdict out.
#include "transport/openai_decoder.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "transport/test_util.h"

namespace dyno::transport {
namespace {

/// Records the calls a decoder makes (it makes on_token_event only; the rest are the
/// connection's).
struct Calls : StreamObserver {
  struct Token {
    std::int64_t t_ns;
    std::string content;
    std::string reasoning;
  };
  std::vector<Token> tokens;
  int others = 0;
  void on_sent(std::int64_t) override { ++others; }
  void on_first_byte(std::int64_t, int) override { ++others; }
  void on_token_event(std::int64_t t_ns, std::string_view content,
                      std::string_view reasoning) override {
    tokens.push_back({t_ns, std::string(content), std::string(reasoning)});
  }
  void on_usage(const Usage&) override { ++others; }
  void on_done(std::int64_t, const DoneInfo&) override { ++others; }
  void on_error(std::int64_t, ErrorCategory, std::string_view, std::optional<int>) override {
    ++others;
  }
  std::string text() const {
    std::string out;
    for (const Token& token : tokens) out += token.content;
    return out;
  }
};

constexpr std::string_view kSse = "text/event-stream";

const std::string kTokenA = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n";
const std::string kTokenB = "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n";
const std::string kStop = "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
const std::string kDone = "data: [DONE]\n\n";

/// A decoder begun for one request whose 2xx head had `content_type`.
struct Fixture {
  explicit Fixture(std::string_view content_type = kSse, bool expects_tokens = true) {
    decoder.begin(calls, expects_tokens);
    facts.status = 200;
    facts.content_type = content_type;
    EXPECT_EQ(decoder.accept(facts, true), "");
  }
  /// Feeds `bytes` at `t_ns` in pieces of `piece` bytes; false once the decoder refuses.
  bool feed(const std::string& bytes, std::int64_t t_ns, std::size_t piece = 1 << 20) {
    for (std::size_t at = 0; at < bytes.size(); at += piece) {
      const std::string_view part = std::string_view(bytes).substr(at, piece);
      facts.body_bytes += part.size();
      if (!decoder.feed(t_ns, part)) return false;
    }
    return true;
  }
  Calls calls;
  OpenAiDecoder decoder;
  ResponseFacts facts;
};

TEST(OpenAiDecoder, StreamedChatInAnySplit) {
  const std::string body = testing::read_data_file("chat_stream_sse.txt");
  for (const std::size_t piece : {std::size_t{1}, std::size_t{7}, std::size_t{1} << 20}) {
    Fixture f;
    ASSERT_TRUE(f.feed(body, 1000, piece)) << piece;
    EXPECT_TRUE(f.decoder.progress().first_token);
    EXPECT_TRUE(f.decoder.progress().done);
    EXPECT_EQ(f.decoder.progress().done_ns, 1000);
    EXPECT_EQ(f.calls.text().substr(0, 12), " fun kindlyg");
    EXPECT_EQ(f.calls.others, 0);  // the terminal calls are the connection's
    EXPECT_FALSE(f.decoder.end_of_body(2000, f.facts).error);
    EXPECT_FALSE(f.decoder.verdict(f.facts).error);
    std::optional<Usage> usage;
    DoneInfo info;
    f.decoder.take_answer(usage, info);
    ASSERT_TRUE(usage);
    EXPECT_EQ(usage->completion_tokens, 8);
    EXPECT_EQ(usage->prompt_tokens, 13);
    EXPECT_EQ(info.finish_reason, "length");
    EXPECT_EQ(info.server_timings_json.substr(0, 15), "{\"prompt_n\":13,");
  }
}

TEST(OpenAiDecoder, TokenTimesAreTheirReadsAndProgressFollows) {
  Fixture f;
  EXPECT_FALSE(f.decoder.progress().first_token);
  ASSERT_TRUE(f.feed(kTokenA, 10));
  EXPECT_TRUE(f.decoder.progress().first_token);
  EXPECT_EQ(f.decoder.progress().last_token_ns, 10);
  ASSERT_TRUE(f.feed(kTokenB + kStop, 20));
  EXPECT_EQ(f.decoder.progress().last_token_ns, 20);
  EXPECT_FALSE(f.decoder.progress().done);
  ASSERT_TRUE(f.feed(kDone, 30));
  EXPECT_TRUE(f.decoder.progress().done);
  EXPECT_EQ(f.decoder.progress().done_ns, 30);
  ASSERT_EQ(f.calls.tokens.size(), 2u);
  EXPECT_EQ(f.calls.tokens[0].t_ns, 10);
  EXPECT_EQ(f.calls.tokens[1].t_ns, 20);
  EXPECT_EQ(f.calls.text(), "ab");
  // Whatever follows [DONE] is not read.
  ASSERT_TRUE(f.feed(kTokenA, 40));
  EXPECT_EQ(f.calls.tokens.size(), 2u);
  EXPECT_FALSE(f.decoder.verdict(f.facts).error);
}

TEST(OpenAiDecoder, ReasoningAndContentOfOneEvent) {
  Fixture f;
  ASSERT_TRUE(f.feed(testing::read_data_file("vllm_chat_reasoning_sse.txt"), 5));
  ASSERT_GE(f.calls.tokens.size(), 3u);
  EXPECT_EQ(f.calls.tokens[0].reasoning, "Let me think");
  EXPECT_EQ(f.calls.tokens[0].content, "");
}

TEST(OpenAiDecoder, InStreamErrorMemberIsServerError) {
  Fixture f;
  EXPECT_FALSE(
      f.feed(kTokenA + "data: {\"error\":{\"message\":\"KV cache full\",\"code\":503}}\n\n", 7));
  const Verdict v = f.decoder.take_error();
  EXPECT_EQ(v.error, ErrorCategory::kServerError);
  EXPECT_EQ(v.message, "KV cache full");
  EXPECT_FALSE(v.keep_connection);
  EXPECT_EQ(f.calls.tokens.size(), 1u);  // what came before it reached the observer
}

TEST(OpenAiDecoder, ErrorFieldAndErrorEventAreServerErrors) {
  {
    Fixture f;
    EXPECT_FALSE(f.feed(kTokenA +
                            "error: {\"code\":500,\"message\":\"too big\",\"type\":"
                            "\"server_error\"}\n\n" +
                            kDone,
                        1, 3));
    const Verdict v = f.decoder.take_error();
    EXPECT_EQ(v.error, ErrorCategory::kServerError);
    EXPECT_EQ(v.message, "server_error: too big");
  }
  {
    Fixture f;
    EXPECT_FALSE(f.feed("event: error\ndata: overloaded, try later\n\n", 1));
    EXPECT_EQ(f.decoder.take_error().message, "overloaded, try later");
  }
  {
    Fixture f;
    EXPECT_FALSE(f.feed("event: error\ndata:\n\n", 1));
    EXPECT_EQ(f.decoder.take_error().message, "an error event without a message");
  }
}

/// Ollama writes newline-delimited JSON: a bare line that is an error object ends the request
/// as the server's error; any other bare line is no SSE field and is ignored.
TEST(OpenAiDecoder, OllamaBareJsonLines) {
  {
    Fixture f;
    ASSERT_TRUE(f.feed("{\"model\":\"llama3\",\"message\":{\"content\":\"hi\"},\"done\":false}\n" +
                           kTokenA + kStop + kDone,
                       1));
    EXPECT_EQ(f.calls.text(), "a");
    EXPECT_FALSE(f.decoder.end_of_body(2, f.facts).error);
    EXPECT_FALSE(f.decoder.verdict(f.facts).error);
  }
  {
    Fixture f;
    EXPECT_FALSE(f.feed(
        kTokenA + "{\"error\":{\"message\":\"runner stopped\",\"type\":\"api_error\"}}\n", 1, 5));
    const Verdict v = f.decoder.take_error();
    EXPECT_EQ(v.error, ErrorCategory::kServerError);
    EXPECT_EQ(v.message, "api_error: runner stopped");
  }
  {
    Fixture f;
    EXPECT_FALSE(f.feed("{\"error\":\"model 'x' not found\"}\n", 1));
    EXPECT_EQ(f.decoder.take_error().message, "model 'x' not found");
  }
}

TEST(OpenAiDecoder, StreamEndingWithoutFinishReasonIsUnfinished) {
  {
    Fixture f;
    ASSERT_TRUE(f.feed(kTokenA + kTokenB, 1));
    EXPECT_FALSE(f.decoder.end_of_body(2, f.facts).error);
    const Verdict v = f.decoder.verdict(f.facts);
    EXPECT_EQ(v.error, ErrorCategory::kUnfinished);
    EXPECT_EQ(v.message,
              "the answer ended with the end of the body but without a finish reason, after 2 "
              "token events (HTTP 200, Content-Type text/event-stream, " +
                  std::to_string(f.facts.body_bytes) + " body bytes, 2 SSE events)");
  }
  {
    Fixture f;
    ASSERT_TRUE(f.feed(kTokenA + kDone, 1));
    const Verdict v = f.decoder.verdict(f.facts);
    EXPECT_EQ(v.error, ErrorCategory::kUnfinished);
    EXPECT_NE(v.message.find("with [DONE] but without a finish reason, after 1 token events"),
              std::string::npos)
        << v.message;
  }
  {
    Fixture f;
    ASSERT_TRUE(f.feed(
        kTokenA + "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"abort\"}]}\n\n", 1));
    const Verdict v = f.decoder.verdict(f.facts);
    EXPECT_EQ(v.error, ErrorCategory::kServerError);
    EXPECT_EQ(v.message,
              "the server ended the answer with finish_reason \"abort\" after 1 token "
              "events");
  }
}

TEST(OpenAiDecoder, UnterminatedLastEventIsDiscarded) {
  Fixture f;
  ASSERT_TRUE(f.feed(kTokenA + kStop + "data: {\"choices\":[{\"delta\":{\"content\":\"z\"}}]}", 1));
  EXPECT_FALSE(f.decoder.end_of_body(2, f.facts).error);
  EXPECT_EQ(f.calls.text(), "a");
  EXPECT_FALSE(f.decoder.verdict(f.facts).error);
}

TEST(OpenAiDecoder, NoTokensSaysWhatTheServerSent) {
  {
    Fixture f;
    ASSERT_TRUE(f.feed("data: {\"choices\":[],\"note\":\"model is loading\"}\n\n" + kDone, 1));
    const Verdict v = f.decoder.verdict(f.facts);
    EXPECT_EQ(v.error, ErrorCategory::kNoTokens);
    EXPECT_NE(v.message.find("the server sent: data: {\"choices\":[],\"note\":\"model is loading"),
              std::string::npos)
        << v.message;
  }
  {
    // max_tokens 0: an answer without a token stands.
    Fixture f(kSse, /*expects_tokens=*/false);
    ASSERT_TRUE(f.feed(kStop + kDone, 1));
    EXPECT_FALSE(f.decoder.verdict(f.facts).error);
  }
  {
    // A tool call carries no text but is an answer.
    Fixture f;
    ASSERT_TRUE(
        f.feed("data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n", 1));
    EXPECT_FALSE(f.decoder.verdict(f.facts).error);
  }
}

TEST(OpenAiDecoder, MalformedPayloadAndImplausibleUsage) {
  {
    Fixture f;
    EXPECT_FALSE(f.feed(kTokenA + "data: {not json\n\n", 1));
    const Verdict v = f.decoder.take_error();
    EXPECT_EQ(v.error, ErrorCategory::kParse);
    EXPECT_NE(v.message.find("invalid SSE data payload"), std::string::npos);
  }
  {
    Fixture f;
    EXPECT_FALSE(f.feed(kTokenA + "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],"
                                  "\"usage\":{\"completion_tokens\":-1}}\n\n",
                        1));
    const Verdict v = f.decoder.take_error();
    EXPECT_EQ(v.error, ErrorCategory::kImplausibleUsage);
    EXPECT_NE(v.message.find("usage.completion_tokens -1"), std::string::npos) << v.message;
  }
}

TEST(OpenAiDecoder, AnEventPastTheBoundIsTooLarge) {
  Fixture f;
  const std::string huge = "data: \"" + std::string(OpenAiDecoder::kMaxEventBytes + 10, 'x');
  EXPECT_FALSE(f.feed(huge, 1, 64 * 1024));
  const Verdict v = f.decoder.take_error();
  EXPECT_EQ(v.error, ErrorCategory::kTooLarge);
  EXPECT_EQ(v.message, "an SSE line or event longer than 1024 KiB");
}

TEST(OpenAiDecoder, WholeJsonAnswer) {
  Fixture f("application/json");
  const std::string body = testing::read_data_file("chat_nonstream.json");
  ASSERT_TRUE(f.feed(body, 1, 10));
  EXPECT_TRUE(f.calls.tokens.empty());  // the answer is read at the end of the body
  EXPECT_FALSE(f.decoder.progress().first_token);
  EXPECT_FALSE(f.decoder.end_of_body(99, f.facts).error);
  ASSERT_EQ(f.calls.tokens.size(), 1u);
  EXPECT_EQ(f.calls.tokens[0].t_ns, 99);
  EXPECT_TRUE(f.decoder.progress().first_token);
  EXPECT_FALSE(f.decoder.progress().done);
  EXPECT_FALSE(f.decoder.verdict(f.facts).error);
  std::optional<Usage> usage;
  DoneInfo info;
  f.decoder.take_answer(usage, info);
  EXPECT_FALSE(info.finish_reason.empty());
}

TEST(OpenAiDecoder, WholeJsonErrorsKeepTheConnection) {
  {
    Fixture f("application/json");
    ASSERT_TRUE(f.feed("{\"choices\":[", 1));
    const Verdict v = f.decoder.end_of_body(2, f.facts);
    EXPECT_EQ(v.error, ErrorCategory::kParse);
    EXPECT_TRUE(v.keep_connection);  // the body was framed whole: the connection is fine
    EXPECT_NE(v.message.find("invalid response body: "), std::string::npos);
    EXPECT_NE(v.message.find("(HTTP 200, Content-Type application/json, 12 body bytes)"),
              std::string::npos)
        << v.message;
  }
  {
    Fixture f("application/json");
    ASSERT_TRUE(f.feed("{\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}", 1));
    const Verdict v = f.decoder.end_of_body(2, f.facts);
    EXPECT_EQ(v.error, ErrorCategory::kServerError);
    EXPECT_EQ(v.message, "server_error: boom");
    EXPECT_TRUE(v.keep_connection);
  }
  {
    Fixture f("application/json");
    ASSERT_TRUE(f.feed("{\"choices\":[{\"message\":{\"content\":\"hi\"}}]}", 1));
    EXPECT_FALSE(f.decoder.end_of_body(2, f.facts).error);
    const Verdict v = f.decoder.verdict(f.facts);
    EXPECT_EQ(v.error, ErrorCategory::kUnfinished);
    EXPECT_NE(v.message.find("the answer ended without a finish reason, after 1 token events"),
              std::string::npos)
        << v.message;
  }
}

TEST(OpenAiDecoder, AcceptReadsTheContentType) {
  OpenAiDecoder decoder;
  Calls calls;
  decoder.begin(calls, true);
  ResponseFacts head{200, "text/html", 0};
  EXPECT_EQ(decoder.accept(head, true),
            "HTTP 200 with Content-Type text/html: not an event stream or JSON (a login page or "
            "a proxy in the way? check --url)");
  head.content_type = "application/problem+json";
  EXPECT_EQ(decoder.accept(head, true), "");
  EXPECT_EQ(decoder.describe(head),
            "HTTP 200, Content-Type application/problem+json, 0 body bytes");
  // Without a type (or text/plain), the request's own choice.
  head.content_type = "";
  EXPECT_EQ(decoder.accept(head, true), "");
  EXPECT_EQ(decoder.describe(head), "HTTP 200, no Content-Type, 0 body bytes, 0 SSE events");
  EXPECT_EQ(decoder.accept(head, false), "");
  EXPECT_EQ(decoder.describe(head), "HTTP 200, no Content-Type, 0 body bytes");
}

/// After end(), no event of the bytes being fed reaches the observer (an observer call that
/// ended the request, as a cancel would).
TEST(OpenAiDecoder, EndStopsObserverCallsMidFeed) {
  struct Ending : Calls {
    OpenAiDecoder* decoder = nullptr;
    void on_token_event(std::int64_t t_ns, std::string_view content,
                        std::string_view reasoning) override {
      Calls::on_token_event(t_ns, content, reasoning);
      decoder->end();
    }
  };
  OpenAiDecoder decoder;
  Ending calls;
  calls.decoder = &decoder;
  decoder.begin(calls, true);
  ASSERT_EQ(decoder.accept({200, kSse, 0}, true), "");
  decoder.feed(1, kTokenA + kTokenB + kTokenA);
  EXPECT_EQ(calls.tokens.size(), 1u);
}

/// begin() forgets the last request: one decoder serves a connection's requests in turn.
TEST(OpenAiDecoder, BeginForgetsTheLastRequest) {
  Fixture f;
  EXPECT_FALSE(
      f.feed(kTokenA + "event: error\ndata: x\n\ndata: {\"choices\":[{\"delta\":{\"con", 1));
  Calls second;
  f.decoder.begin(second, true);
  EXPECT_FALSE(f.decoder.progress().first_token);
  ResponseFacts facts{200, "application/json", 0};
  ASSERT_EQ(f.decoder.accept(facts, true), "");
  const std::string body =
      "{\"choices\":[{\"message\":{\"content\":\"hi\"},\"finish_reason\":"
      "\"stop\"}]}";
  ASSERT_TRUE(f.decoder.feed(5, body));
  EXPECT_FALSE(f.decoder.end_of_body(6, facts).error);
  EXPECT_FALSE(f.decoder.verdict(facts).error);
  ASSERT_EQ(second.tokens.size(), 1u);
  EXPECT_EQ(second.tokens[0].content, "hi");
  EXPECT_EQ(f.calls.tokens.size(), 1u);
}

}  // namespace
}  // namespace dyno::transport
