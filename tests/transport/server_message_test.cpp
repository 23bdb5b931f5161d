#include "transport/server_message.h"

#include <gtest/gtest.h>

#include <string>

namespace dyno::transport {
namespace {

TEST(ServerMessage, ExcerptKeepsShortTextWhole) {
  EXPECT_EQ(bounded_excerpt("engine failed", 512), "engine failed");
  EXPECT_EQ(bounded_excerpt("", 512), "");
}

/// A cut never keeps the start of what it goes through: a key straddling the bound is dropped
/// whole, with whatever is glued to it.
TEST(ServerMessage, ExcerptDropsTheWordTheCutGoesThrough) {
  const std::string text = "invalid key: Bearer sk-0123456789abcdef and more";
  const std::string cut = bounded_excerpt(text, 25);  // inside "sk-0123…"
  EXPECT_EQ(cut, "invalid key: Bearer\xE2\x80\xA6");
  EXPECT_EQ(cut.find("sk-"), std::string::npos);
  // A cut at a space keeps the word before it.
  EXPECT_EQ(bounded_excerpt("abc def ghi", 7), "abc def\xE2\x80\xA6");
  // One long word: nothing of it is kept.
  EXPECT_EQ(bounded_excerpt(std::string(600, 'k'), 512), "\xE2\x80\xA6");
}

TEST(ServerMessage, ExcerptCutsAtAUtf8Boundary) {
  std::string text = "a ";
  for (int i = 0; i < 20; ++i) text += "\xC3\xA9";  // é
  text += " end";
  const std::string cut = bounded_excerpt(text, 7);  // inside the run of é
  EXPECT_EQ(cut, "a\xE2\x80\xA6");
  const std::string spaced = "\xC3\xA9 \xC3\xA9 \xC3\xA9 \xC3\xA9";
  EXPECT_EQ(bounded_excerpt(spaced, 6), "\xC3\xA9 \xC3\xA9\xE2\x80\xA6");
}

TEST(ServerMessage, MessageOfEachEnginesErrorForm) {
  // llama.cpp's `error:` field.
  EXPECT_EQ(error_payload_message(
                R"({"code":500,"message":"Input prompt is too big","type":"server_error"})"),
            "server_error: Input prompt is too big");
  // vLLM / SGLang.
  EXPECT_EQ(error_payload_message(
                R"({"error":{"object":"error","message":"OOM","type":"InternalServerError","code":500}})"),
            "InternalServerError: OOM");
  // TGI: a string and its type beside it.
  EXPECT_EQ(error_payload_message(R"({"error":"Request failed","error_type":"generation"})"),
            "generation: Request failed");
  // Ollama's bare line.
  EXPECT_EQ(error_payload_message(
                R"({"error":{"message":"runner stopped","type":"api_error","param":null,"code":null}})"),
            "api_error: runner stopped");
  // An error with no message is its JSON; text that is no JSON is itself.
  EXPECT_EQ(error_payload_message(R"({"error":{"code":7}})"), R"({"code":7})");
  EXPECT_EQ(error_payload_message("overloaded"), "overloaded");
  EXPECT_EQ(error_payload_message(""), "");
  EXPECT_LE(error_payload_message(std::string(5000, 'x') + " y").size(), kServerTextBytes + 3);
}

TEST(ServerMessage, IsErrorObject) {
  EXPECT_TRUE(is_error_object(R"({"error":{"message":"x"}})"));
  EXPECT_TRUE(is_error_object(R"({"error":"x"})"));
  EXPECT_FALSE(is_error_object(R"({"error":null})"));
  EXPECT_FALSE(is_error_object(R"({"note":"x"})"));
  EXPECT_FALSE(is_error_object("{not json"));
}

TEST(ServerMessage, ImplausibleUsage) {
  Usage u;
  u.prompt_tokens = 12;
  u.completion_tokens = 2147483647;
  EXPECT_EQ(implausible_usage(u), "");
  u.completion_tokens = 9223372036854775807;
  EXPECT_EQ(implausible_usage(u),
            "usage.completion_tokens 9223372036854775807 is not a plausible token count (0 to "
            "2147483647)");
  u.completion_tokens = 3;
  u.cached_tokens = -1;
  EXPECT_NE(implausible_usage(u).find("usage.prompt_tokens_details.cached_tokens -1"),
            std::string::npos);
}

}  // namespace
}  // namespace dyno::transport
