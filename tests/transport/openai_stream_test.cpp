#include "transport/openai_stream.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "transport/sse_parser.h"
#include "transport/test_util.h"

namespace dyno::transport {
namespace {

ChunkInfo decode_ok(std::string_view payload) {
  ChunkInfo info;
  std::string error;
  EXPECT_TRUE(decode_chunk(payload, info, error)) << payload << ": " << error;
  return info;
}

std::vector<std::string> payloads(const std::string& file) {
  std::vector<std::string> out;
  SseParser parser([&](const SseEvent& e) { out.emplace_back(e.data); });
  parser.feed(testing::read_data_file(file));
  parser.finish();
  return out;
}

TEST(DecodeChunk, LlamaCppChatFixture) {
  const auto events = payloads("chat_stream_sse.txt");
  std::string text;
  std::optional<Usage> usage;
  std::string finish;
  std::string timings;
  bool done = false;
  for (const auto& payload : events) {
    const ChunkInfo info = decode_ok(payload);
    text += info.content;
    EXPECT_TRUE(info.reasoning.empty());
    if (info.usage) usage = info.usage;
    if (!info.finish_reason.empty()) finish = info.finish_reason;
    if (!info.timings_json.empty()) timings = info.timings_json;
    done = done || info.is_done_marker;
  }
  EXPECT_TRUE(done);
  EXPECT_EQ(text.substr(0, 12), " fun kindlyg");
  EXPECT_EQ(finish, "length");
  ASSERT_TRUE(usage);
  EXPECT_EQ(usage->completion_tokens, 8);
  EXPECT_EQ(usage->prompt_tokens, 13);
  EXPECT_FALSE(usage->cached_tokens);
  EXPECT_FALSE(usage->reasoning_tokens);
  EXPECT_EQ(timings.substr(0, 15), "{\"prompt_n\":13,");
  EXPECT_EQ(timings.back(), '}');
}

TEST(DecodeChunk, LlamaCppCompletionsFixture) {
  std::string text;
  int with_text = 0;
  for (const auto& payload : payloads("completions_stream_sse.txt")) {
    const ChunkInfo info = decode_ok(payload);
    text += info.content;
    if (!info.content.empty()) ++with_text;
  }
  EXPECT_EQ(text.substr(0, 8), "activ\xE9\xBB\x83");
  EXPECT_EQ(with_text, 5);
}

TEST(DecodeChunk, VllmReasoningStream) {
  const auto events = payloads("vllm_chat_reasoning_sse.txt");
  ASSERT_EQ(events.size(), 7u);
  const ChunkInfo role = decode_ok(events[0]);
  EXPECT_TRUE(role.content.empty());
  EXPECT_TRUE(role.reasoning.empty());
  EXPECT_EQ(decode_ok(events[1]).reasoning, "Let me think");
  EXPECT_EQ(decode_ok(events[2]).reasoning, " about \"usage\"");
  EXPECT_FALSE(decode_ok(events[2]).usage);
  EXPECT_EQ(decode_ok(events[3]).content,
            "H\xC3\xA9llo w\xC3\xB6rld \xE2\x9C\x93 \xF0\x9F\x9A\x80");
  EXPECT_EQ(decode_ok(events[4]).finish_reason, "stop");
  const ChunkInfo usage = decode_ok(events[5]);
  ASSERT_TRUE(usage.usage);
  EXPECT_EQ(usage.usage->prompt_tokens, 12);
  EXPECT_EQ(usage.usage->completion_tokens, 7);
  EXPECT_EQ(usage.usage->cached_tokens, 8);
  EXPECT_EQ(usage.usage->reasoning_tokens, 3);
  EXPECT_TRUE(decode_ok(events[6]).is_done_marker);
}

TEST(DecodeChunk, TrickyJson) {
  EXPECT_EQ(
      decode_ok(R"({"choices":[{"delta":{"content":"say \"hi\" \\ \/ \n\t\u00e9\ud83d\ude80"}}]})")
          .content,
      "say \"hi\" \\ / \n\t\xC3\xA9\xF0\x9F\x9A\x80");
  // Strings that look like keys never confuse the scanner.
  ChunkInfo info = decode_ok(
      R"({"id":"usage","choices":[{"delta":{"content":"usage"},"x":{"usage":{"prompt_tokens":5}}}],"note":"\"usage\":{}"})");
  EXPECT_EQ(info.content, "usage");
  EXPECT_FALSE(info.usage);
  // Nested objects and arrays of other members are skipped.
  info = decode_ok(
      R"({"a":[1,2.5e-3,{"b":[true,false,null]}],"choices":[{"logprobs":{"content":[{"token":"x"}]},"delta":{"content":"y","tool_calls":[{"id":"c"}]}},{"delta":{"content":"second choice"}}]})");
  EXPECT_EQ(info.content, "y");
  EXPECT_EQ(decode_ok(R"({"choices":[{"delta":{"content":null}}]})").content, "");
  EXPECT_FALSE(decode_ok(R"({"choices":[],"usage":null})").usage);
  info =
      decode_ok(" \r\n\t{ \"choices\" : [ { \"text\" : \"a\" , \"finish_reason\" : null } ] } \n");
  EXPECT_EQ(info.content, "a");
  EXPECT_TRUE(info.finish_reason.empty());
  EXPECT_EQ(decode_ok(R"({"choices":[{"delta":{"reasoning":"r"}}]})").reasoning, "r");
  EXPECT_EQ(decode_ok(R"({"choi\u0063es":[{"delta":{"content":"escaped key"}}]})").content,
            "escaped key");
  EXPECT_TRUE(decode_ok(" [DONE] ").is_done_marker);
  // A reused ChunkInfo is cleared.
  ChunkInfo reused =
      decode_ok(R"({"choices":[{"delta":{"content":"x"}}],"usage":{"prompt_tokens":1}})");
  std::string error;
  ASSERT_TRUE(decode_chunk(R"({"choices":[]})", reused, error));
  EXPECT_TRUE(reused.content.empty());
  EXPECT_FALSE(reused.usage);
}

TEST(DecodeChunk, KeysOutsideTheFastPath) {
  // Known keys near the end of the input, with whitespace before ':', or escaped, and
  // look-alike keys (prefixes, longer names) take the general path with the same result.
  EXPECT_EQ(decode_ok(R"({"choices":[{"delta":{"content":"x"}}]})").content, "x");
  EXPECT_EQ(decode_ok(R"({"choices" :[{"delta" :{"content" : "x"}}]})").content, "x");
  EXPECT_EQ(decode_ok(R"({"choices":[{"delt\u0061":{"cont\u0065nt":"x"}}]})").content, "x");
  ChunkInfo info = decode_ok(
      R"({"choicesX":[{"delta":{"content":"a"}}],"choice":[{"delta":{"content":"b"}}],)"
      R"("choices":[{"deltas":{"content":"c"},"delta":{"contents":"d","conten":"e",)"
      R"("reasoning_content":"r","content":"f"},"finish_reason":"stop","finish_reasons":"x"}]})");
  EXPECT_EQ(info.content, "f");
  EXPECT_EQ(info.reasoning, "r");
  EXPECT_EQ(info.finish_reason, "stop");
  // Keys of interest at the wrong level are skipped.
  info = decode_ok(
      R"({"content":"no","delta":{"content":"no"},"choices":[{"content":"no","usage":{}}]})");
  EXPECT_TRUE(info.content.empty());
  EXPECT_FALSE(info.usage);
  // A key that is a prefix of a known one, ending right before the input does.
  std::string error;
  EXPECT_FALSE(decode_chunk(R"({"id":"x","cont)", info, error));
  EXPECT_FALSE(error.empty());
}

TEST(DecodeChunk, Numbers) {
  EXPECT_EQ(
      decode_ok(R"({"a":[0,-0,12345678901234567890,-1.5e+10,2E-3,1e5,0.25],"choices":[]})").content,
      "");
  ChunkInfo info = decode_ok(R"({"usage":{"prompt_tokens":123456789012,"completion_tokens":7.5}})");
  ASSERT_TRUE(info.usage);
  EXPECT_EQ(info.usage->prompt_tokens, 123456789012);
  EXPECT_FALSE(info.usage->completion_tokens);
  for (const std::string_view bad :
       {"{\"a\":1234567890a}", "{\"a\":12345678.}", "{\"a\":1e}", "{\"a\":1234567890",
        "{\"a\":--1}", "{\"a\":+1}", "{\"a\":.5}", "{\"a\":1.5e+}"}) {
    std::string error;
    EXPECT_FALSE(decode_chunk(bad, info, error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
}

TEST(DecodeChunk, LongAndEscapedStrings) {
  const std::string text(100, 'w');
  EXPECT_EQ(decode_ok(R"({"choices":[{"delta":{"content":")" + text + R"("}}]})").content, text);
  EXPECT_EQ(decode_ok(R"({"choices":[{"delta":{"content":")" + text + R"(\n"}}]})").content,
            text + "\n");
  // A string value holding structure and quoted keys, past the 16-byte scan width.
  EXPECT_EQ(
      decode_ok(R"({"id":"{\"usage\":{\"prompt_tokens\":1}}, \"choices\": [","choices":[]})").usage,
      std::nullopt);
  ChunkInfo info;
  std::string error;
  EXPECT_FALSE(
      decode_chunk(R"({"choices":[{"delta":{"content":")" + text + "\x1f\"}}]}", info, error));
  EXPECT_FALSE(decode_chunk(R"({"choices":[{"delta":{"content":")" + text, info, error));
}

TEST(DecodeChunk, ErrorObject) {
  EXPECT_EQ(decode_ok(R"({"error":{"code":500,"message":"out of memory","type":"server_error"}})")
                .error_message,
            "out of memory");
  EXPECT_EQ(decode_ok(R"({"error":"boom"})").error_message, "boom");
  EXPECT_EQ(decode_ok(R"({"error":{"code":1}})").error_message, R"({"code":1})");
  EXPECT_TRUE(decode_ok(R"({"error":null,"choices":[]})").error_message.empty());
  // An error with an empty or missing message is still an error (found by fuzzing: it was
  // read as no error, and the stream went on).
  EXPECT_EQ(decode_ok(R"({"error":""})").error_message, R"("")");
  EXPECT_EQ(decode_ok(R"({"error":{"message":""}})").error_message, R"({"message":""})");
  EXPECT_EQ(decode_ok(R"({"error":{}})").error_message, "{}");
}

TEST(DecodeChunk, MalformedIsRejected) {
  for (const std::string_view bad : {"",
                                     "{",
                                     "[]",
                                     "\"x\"",
                                     "{\"choices\":[{\"delta\":{\"content\":\"x}}]}",
                                     "{\"choices\":[{\"delta\":{\"content\":\"x\"}}]",
                                     "{\"a\":1,}",
                                     "{\"a\":01}",
                                     "{\"a\":tru}",
                                     "{\"a\":\"\\q\"}",
                                     "{\"a\":\"\\u12\"}",
                                     "{\"a\":1}x",
                                     "{\"a\":\"ctl\x01\"}",
                                     "{\"choices\":{}}",
                                     "{\"choices\":[{\"delta\":{\"content\":5}}]}",
                                     "{\"usage\":7}",
                                     "{\"a\" 1}",
                                     "{\"a\":-}",
                                     "{\"a\":1.}",
                                     "{'a':1}"}) {
    ChunkInfo info;
    std::string error;
    EXPECT_FALSE(decode_chunk(bad, info, error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
  std::string deep(1000, '[');
  ChunkInfo info;
  std::string error;
  EXPECT_FALSE(decode_chunk("{\"a\":" + deep, info, error));
}

TEST(DecodeFullResponse, LlamaCppChat) {
  ChunkInfo info;
  std::string error;
  ASSERT_TRUE(decode_full_response(testing::read_data_file("chat_nonstream.json"), info, error))
      << error;
  EXPECT_EQ(info.content, " mysq \xD0\xBF\xD0\xB8 enqu enqu");
  EXPECT_EQ(info.finish_reason, "length");
  ASSERT_TRUE(info.usage);
  EXPECT_EQ(info.usage->prompt_tokens, 13);
  EXPECT_EQ(info.usage->completion_tokens, 4);
  EXPECT_EQ(info.timings_json.substr(0, 12), "{\"prompt_n\":");
}

TEST(DecodeFullResponse, ReasoningAndCompletions) {
  ChunkInfo info;
  std::string error;
  ASSERT_TRUE(decode_full_response(
      R"({"choices":[{"message":{"role":"assistant","reasoning_content":"hmm","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"completion_tokens_details":{"reasoning_tokens":1}}})",
      info, error));
  EXPECT_EQ(info.content, "ok");
  EXPECT_EQ(info.reasoning, "hmm");
  EXPECT_EQ(info.usage->reasoning_tokens, 1);
  ASSERT_TRUE(decode_full_response(R"({"choices":[{"text":"abc","finish_reason":"length"}]})", info,
                                   error));
  EXPECT_EQ(info.content, "abc");
  EXPECT_FALSE(decode_full_response("not json", info, error));
}

// ChunkDecoder must say exactly what decode_chunk says, for every payload of any sequence: the
// same verdict, the same members, the same error message.
std::string describe(bool ok, const ChunkInfo& i, const std::string& error) {
  std::string out = ok ? "ok" : "fail: " + error;
  out += "|content=" + i.content + "|reasoning=" + i.reasoning + "|finish=" + i.finish_reason +
         "|timings=" + i.timings_json + "|error=" + i.error_message +
         "|done=" + (i.is_done_marker ? "1" : "0");
  if (i.usage) {
    const auto n = [](const std::optional<std::int64_t>& v) {
      return v ? std::to_string(*v) : std::string("-");
    };
    out += "|usage=" + n(i.usage->prompt_tokens) + "," + n(i.usage->completion_tokens) + "," +
           n(i.usage->cached_tokens) + "," + n(i.usage->reasoning_tokens);
  }
  return out;
}

void expect_same_as_decode_chunk(const std::vector<std::string>& sequence) {
  ChunkDecoder decoder;
  ChunkInfo streamed;
  for (const std::string& payload : sequence) {
    std::string error_a;
    std::string error_b;
    ChunkInfo alone;
    const bool ok_a = decode_chunk(payload, alone, error_a);
    const bool ok_b = decoder.decode(payload, streamed, error_b);
    ASSERT_EQ(describe(ok_b, streamed, error_b), describe(ok_a, alone, error_a)) << payload;
  }
}

const std::string kHead =
    R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1795987651,"model":"m",)"
    R"("choices":[{"index":0,"delta":{"content":")";
const std::string kTail = R"("},"logprobs":null,"finish_reason":null}]})";

std::string chunk(const std::string& content) { return kHead + content + kTail; }

TEST(ChunkDecoder, AStreamOfTokensDecodesAsEachAlone) {
  std::vector<std::string> sequence = {chunk(" Hello"),  chunk(","),      chunk(""),
                                       chunk(" world"),  chunk("\\n\\n"), chunk(" caf\\u00e9"),
                                       chunk("\\ud83d"), chunk(" \"q\""), chunk("x")};
  sequence.push_back(
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1795987651,"model":"m",)"
      R"("choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]})");
  sequence.push_back(R"({"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":5,)"
                     R"("completion_tokens":9}})");
  sequence.push_back("[DONE]");
  sequence.push_back(" [DONE] ");
  expect_same_as_decode_chunk(sequence);
  // The fixtures of real servers, in the order they came.
  expect_same_as_decode_chunk(payloads("chat_stream_sse.txt"));
  expect_same_as_decode_chunk(payloads("completions_stream_sse.txt"));
  expect_same_as_decode_chunk(payloads("vllm_chat_reasoning_sse.txt"));
  expect_same_as_decode_chunk(payloads("chat_stream_timings_per_token_sse.txt"));
}

TEST(ChunkDecoder, BytesThatDifferFromTheTemplateAreScannedAgain) {
  const std::string t = chunk(" a");
  expect_same_as_decode_chunk({
      t,
      chunk(" b\x01"),  // a control character in the content
      t,
      chunk(" b\\x"),  // a bad escape
      t,
      chunk(" b\\u12"),  // a cut \u escape
      t,
      kHead + " b",  // the input ends in the string
      t,
      kHead + " b\"",  // ... after it
      t,
      chunk(" b") + " ",  // trailing whitespace: still valid
      t,
      chunk(" b") + "x",  // trailing garbage
      t,
      chunk(" b").substr(0, t.size() - 1),  // the last brace missing
      t,
      kHead + R"( b"},"logprobs":null,"finish_reason":"stop"}]})",  // a finish reason
      t,
      kHead + R"( b","content":"c"},"logprobs":null,"finish_reason":null}]})",  // twice
      t,
      kHead + R"( b","content":null},"logprobs":null,"finish_reason":null}]})",
      t,
      kHead + R"( b","reasoning_content":"r"},"logprobs":null,"finish_reason":null}]})",
      t,
      R"({"id":"chatcmpl-2","object":"chat.completion.chunk","created":1795987651,"model":"m",)"
      R"("choices":[{"index":0,"delta":{"content":" c"},"logprobs":null,"finish_reason":null}]})",
      t,
      R"({"id":"chatcmpl-1","error":{"message":"boom"}})",
      t,
      "",
      t,
      "{",
      chunk(" a"),
      chunk(" b"),
  });
}

TEST(ChunkDecoder, EveryOneByteChangeOfATemplateDecodesAsAlone) {
  // Each byte of a chunk replaced by each of a few telling bytes, after the template it
  // changes: in the prefix, the content and the suffix alike.
  const std::string t = chunk(" token");
  for (std::size_t i = 0; i < t.size(); ++i) {
    for (const char c : {'"', '\\', '}', ']', ',', ':', '\x01', ' ', 'n', '0', 'x', '{'}) {
      std::string changed = t;
      if (changed[i] == c) continue;
      changed[i] = c;
      expect_same_as_decode_chunk({t, changed, t});
      std::string removed = t;
      removed.erase(i, 1);
      expect_same_as_decode_chunk({t, removed});
      std::string inserted = t;
      inserted.insert(i, 1, c);
      expect_same_as_decode_chunk({t, inserted});
    }
  }
}

}  // namespace
}  // namespace dyno::transport
