#include "transport/sse_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "transport/test_util.h"

namespace dyno::transport {
namespace {

struct Seen {
  std::string type;
  std::string data;
  std::string id;
  std::string error = {};
  bool unframed = false;
  bool operator==(const Seen&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Seen& seen) {
  return os << "{type=" << seen.type << " data=" << seen.data << " id=" << seen.id
            << " error=" << seen.error << (seen.unframed ? " unframed" : "") << "}";
}

class Collector {
 public:
  explicit Collector(std::size_t max_event_bytes = SseParser::kDefaultMaxEventBytes)
      : parser_(
            [this](const SseEvent& e) {
              events_.push_back({std::string(e.type), std::string(e.data), std::string(e.id),
                                 std::string(e.error), e.unframed});
            },
            max_event_bytes) {}
  SseParser& parser() { return parser_; }
  std::vector<Seen>& events() { return events_; }

 private:
  std::vector<Seen> events_;
  SseParser parser_;
};

std::vector<Seen> parse_whole(std::string_view bytes, bool* pending = nullptr) {
  Collector c;
  c.parser().feed(bytes);
  const bool p = c.parser().finish();
  if (pending != nullptr) *pending = p;
  return c.events();
}

// Feeds `bytes` split at every offset into two feeds, and byte by byte; all must agree with
// one whole feed.
void expect_split_invariant(const std::string& bytes) {
  const auto expected = parse_whole(bytes);
  for (std::size_t split = 0; split <= bytes.size(); ++split) {
    Collector c;
    c.parser().feed(std::string_view(bytes).substr(0, split));
    c.parser().feed(std::string_view(bytes).substr(split));
    c.parser().finish();
    ASSERT_EQ(c.events(), expected) << "split at " << split;
  }
  Collector c;
  for (const char ch : bytes) c.parser().feed(std::string_view(&ch, 1));
  c.parser().finish();
  EXPECT_EQ(c.events(), expected) << "byte by byte";
}

TEST(SseParser, LlamaCppFixturesAnySplit) {
  for (const char* name :
       {"chat_stream_sse.txt", "completions_stream_sse.txt",
        "chat_stream_timings_per_token_sse.txt", "vllm_chat_reasoning_sse.txt"}) {
    SCOPED_TRACE(name);
    const std::string bytes = testing::read_data_file(name);
    const auto events = parse_whole(bytes);
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back().data, "[DONE]");
    for (const auto& e : events) {
      EXPECT_EQ(e.type, "");
      EXPECT_NE(e.data.find_first_not_of(' '), std::string::npos);
    }
    expect_split_invariant(bytes);
  }
}

TEST(SseParser, ChatFixtureEventCount) {
  const auto events = parse_whole(testing::read_data_file("chat_stream_sse.txt"));
  EXPECT_EQ(events.size(), 10u);
  EXPECT_EQ(events.front().data.substr(0, 12), "{\"choices\":[");
}

TEST(SseParser, LineEndings) {
  const std::vector<Seen> expected = {{"", "a", ""}, {"", "b", ""}};
  for (const std::string bytes : {"data: a\n\ndata: b\n\n", "data: a\r\n\r\ndata: b\r\n\r\n",
                                  "data: a\r\rdata: b\r\r", "data: a\r\n\rdata: b\n\r\n"}) {
    EXPECT_EQ(parse_whole(bytes), expected) << bytes;
    expect_split_invariant(bytes);
  }
}

TEST(SseParser, CrAtEndOfFeedThenLf) {
  Collector c;
  c.parser().feed("data: a\r");
  c.parser().feed("\ndata: b\r");
  c.parser().feed("\n\r");
  c.parser().feed("\n");
  ASSERT_EQ(c.events().size(), 1u);
  EXPECT_EQ(c.events()[0].data, "a\nb");
}

TEST(SseParser, MultiLineDataCommentsAndFields) {
  const std::string bytes =
      ": this is a comment\n"
      "event: update\n"
      "id: 42\n"
      "retry: 3000\n"
      "data: first\n"
      "data:second\n"
      "data:  two spaces\n"
      "data\n"
      "unknown: field\n"
      "\n"
      "data: next\n"
      "\n";
  const auto events = parse_whole(bytes);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], (Seen{"update", "first\nsecond\n two spaces\n", "42"}));
  EXPECT_EQ(events[1], (Seen{"", "next", "42"}));  // the last event id persists
  expect_split_invariant(bytes);
}

TEST(SseParser, IdWithNulIsIgnored) {
  const std::string bytes = std::string("id: 1\ndata: a\n\nid: x\0y\ndata: b\n\n", 32);
  const auto events = parse_whole(bytes);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].id, "1");
}

TEST(SseParser, EventWithoutDataIsNotDispatched) {
  const auto events = parse_whole("event: ping\n\n: keepalive\n\ndata: x\n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, "");  // the type of the data-less event was reset
  EXPECT_EQ(events[0].data, "x");
}

TEST(SseParser, Bom) {
  const std::string bytes =
      "\xEF\xBB\xBF"
      "data: a\n\n";
  EXPECT_EQ(parse_whole(bytes), (std::vector<Seen>{{"", "a", ""}}));
  expect_split_invariant(bytes);
  // Only a leading BOM is skipped; a partial one is ordinary line content.
  EXPECT_EQ(parse_whole("\xEF\xBB"
                        "data: a\n\n")
                .size(),
            0u);
  EXPECT_EQ(parse_whole("data: \xEF\xBB\xBFx\n\n")[0].data, "\xEF\xBB\xBFx");
}

TEST(SseParser, MissingDoneAndMissingFinalBlankLine) {
  bool pending = false;
  auto events = parse_whole("data: a\n\ndata: b\n\n", &pending);
  EXPECT_EQ(events.size(), 2u);
  EXPECT_FALSE(pending);
  events = parse_whole("data: a\n\ndata: b\n", &pending);
  EXPECT_EQ(events.size(), 1u);  // unterminated final event is discarded
  EXPECT_TRUE(pending);
  events = parse_whole("data: a\n\ndata: b", &pending);
  EXPECT_EQ(events.size(), 1u);
  EXPECT_TRUE(pending);
}

TEST(SseParser, Utf8SplitAcrossFeeds) {
  const std::string bytes = "data: {\"content\":\"\xE7\xBB\x9D\xF0\x9F\x9A\x80\"}\n\n";
  for (std::size_t split = 0; split <= bytes.size(); ++split) {
    Collector c;
    c.parser().feed(std::string_view(bytes).substr(0, split));
    c.parser().feed(std::string_view(bytes).substr(split));
    ASSERT_EQ(c.events().size(), 1u);
    EXPECT_EQ(c.events()[0].data, "{\"content\":\"\xE7\xBB\x9D\xF0\x9F\x9A\x80\"}");
  }
}

TEST(SseParser, ResetStartsAFreshStream) {
  Collector c;
  c.parser().feed("id: 7\ndata: partial");
  c.parser().reset();
  c.parser().feed(
      "\xEF\xBB\xBF"
      "data: x\n\n");
  ASSERT_EQ(c.events().size(), 1u);
  EXPECT_EQ(c.events()[0], (Seen{"", "x", ""}));
  EXPECT_EQ(c.parser().events_dispatched(), 1u);
}

TEST(SseParser, LineThatNeverEndsOverflowsAtTheBound) {
  // A server streaming one endless line: the parser stops buffering at the bound.
  Collector c(64 * 1024);
  c.parser().feed("data: {\"a\":1}\n\n");
  const std::string chunk(4096, 'x');
  std::size_t fed = 0;
  while (!c.parser().overflowed() && fed < (std::size_t{1} << 20)) {
    c.parser().feed(chunk);
    fed += chunk.size();
  }
  EXPECT_TRUE(c.parser().overflowed());
  EXPECT_LE(fed, 64u * 1024 + chunk.size());
  // Everything after the overflow is ignored, even complete events; the one before was kept.
  c.parser().feed("\n\ndata: later\n\n");
  ASSERT_EQ(c.events().size(), 1u);
  EXPECT_EQ(c.events()[0].data, "{\"a\":1}");
  EXPECT_FALSE(c.parser().finish());
  c.parser().reset();
  EXPECT_FALSE(c.parser().overflowed());
  c.parser().feed("data: again\n\n");
  ASSERT_EQ(c.events().size(), 2u);
  EXPECT_EQ(c.events()[1].data, "again");
}

TEST(SseParser, DataOfManyLinesOverflowsAtTheBound) {
  Collector c(100);
  std::string bytes;
  for (int i = 0; i < 30; ++i) bytes += "data: 0123456789\n";  // never a blank line
  c.parser().feed(bytes);
  EXPECT_TRUE(c.parser().overflowed());
  EXPECT_TRUE(c.events().empty());
}

TEST(SseParser, DataExactlyAtTheBoundIsDispatched) {
  // 10 lines of 9 bytes joined by 9 LFs: 99 bytes; the bound is inclusive.
  std::string bytes;
  for (int i = 0; i < 10; ++i) bytes += "data: 012345678\n";
  bytes += "\n";
  Collector at(99);
  at.parser().feed(bytes);
  EXPECT_FALSE(at.parser().overflowed());
  ASSERT_EQ(at.events().size(), 1u);
  EXPECT_EQ(at.events()[0].data.size(), 99u);
  Collector below(98);
  below.parser().feed(bytes);
  EXPECT_TRUE(below.parser().overflowed());
  EXPECT_TRUE(below.events().empty());
}

TEST(SseParser, OverflowDoesNotDependOnTheSplit) {
  // A long comment, a long event type and long data: each overflows at the same place
  // whether the bytes come whole, in two pieces, or one by one.
  for (const std::string& bytes :
       {std::string("data: a\n\n:") + std::string(40, 'c') + "\ndata: b\n\n",
        std::string("data: a\n\nevent: ") + std::string(40, 't') + "\ndata: b\n\n",
        std::string("data: a\n\ndata: ") + std::string(20, 'd') +
            "\ndata: " + std::string(20, 'd') + "\n\n"}) {
    SCOPED_TRACE(bytes);
    Collector whole(32);
    whole.parser().feed(bytes);
    ASSERT_TRUE(whole.parser().overflowed());
    ASSERT_EQ(whole.events().size(), 1u);
    for (std::size_t split = 0; split <= bytes.size(); ++split) {
      Collector two(32);
      two.parser().feed(std::string_view(bytes).substr(0, split));
      two.parser().feed(std::string_view(bytes).substr(split));
      EXPECT_TRUE(two.parser().overflowed()) << "split at " << split;
      EXPECT_EQ(two.events(), whole.events()) << "split at " << split;
    }
    Collector bytewise(32);
    for (const char ch : bytes) bytewise.parser().feed(std::string_view(&ch, 1));
    EXPECT_TRUE(bytewise.parser().overflowed());
    EXPECT_EQ(bytewise.events(), whole.events());
  }
}

TEST(SseParser, AOneLineEventNearTheBoundIsDecidedAsInPieces) {
  // The whole-event path (one `data:` line and a blank line in one feed) bounds the line, as
  // the line-by-line path does: a line of 32 bytes passes a bound of 32, one of 33 overflows,
  // whatever its value's size; fed whole or in two pieces, the same events and overflow.
  for (const std::size_t value : {24u, 25u, 26u, 27u, 28u, 32u, 33u}) {
    for (const char* prefix : {"data: ", "data:"}) {
      const std::string bytes =
          "data: a\n\n" + std::string(prefix) + std::string(value, 'v') + "\n\ndata: b\n\n";
      SCOPED_TRACE(bytes);
      Collector whole(32);
      whole.parser().feed(bytes);
      for (std::size_t split = 0; split <= bytes.size(); ++split) {
        Collector two(32);
        two.parser().feed(std::string_view(bytes).substr(0, split));
        two.parser().feed(std::string_view(bytes).substr(split));
        EXPECT_EQ(two.parser().overflowed(), whole.parser().overflowed()) << "split " << split;
        EXPECT_EQ(two.events(), whole.events()) << "split at " << split;
      }
      const std::size_t line = std::string(prefix).size() + value;
      EXPECT_EQ(whole.parser().overflowed(), line > 32) << line;
    }
  }
}

TEST(SseParser, AnEventLeftOpenAtTheEndOfAFeedOwnsItsDataOnceTheFedBytesAreGone) {
  // One data line per event is dispatched straight from the fed bytes; an event still open
  // when feed() returns must have copied them, since the caller reuses its buffer.
  Collector c;
  std::string buffer = "data: first\n\ndata: second\n";
  c.parser().feed(buffer);
  buffer.assign(buffer.size(), 'X');  // the read buffer is reused for the next read
  c.parser().feed(buffer.substr(0, 0));
  std::string rest = "\ndata: a\ndata: b\n";
  c.parser().feed(rest);
  rest.assign(rest.size(), 'Y');
  c.parser().feed("\n");
  ASSERT_EQ(c.events().size(), 3u);
  EXPECT_EQ(c.events()[0].data, "first");
  EXPECT_EQ(c.events()[1].data, "second");
  EXPECT_EQ(c.events()[2].data, "a\nb");
}

/// llama.cpp writes an in-stream error as an `error:` field and a blank line: the event is
/// dispatched without data, its error joined like data; whatever the split.
TEST(SseParser, ErrorFieldIsDispatchedWithoutData) {
  const std::string bytes =
      "data: a\n\nerror: {\"code\":500,\n\n"
      "event: x\nerror: one\nerror: two\ndata: d\n\ndata: [DONE]\n\n";
  const auto events = parse_whole(bytes);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0], (Seen{"", "a", ""}));
  EXPECT_EQ(events[1], (Seen{"", "", "", "{\"code\":500,"}));
  EXPECT_EQ(events[2], (Seen{"x", "d", "", "one\ntwo"}));
  EXPECT_EQ(events[3], (Seen{"", "[DONE]", ""}));
  expect_split_invariant(bytes);
}

/// A JSON object on a line of its own, without a field name (Ollama's error mid-stream), is
/// handed over at once as an unframed event and leaves the event being built alone.
TEST(SseParser, BareJsonLineIsAnUnframedEvent) {
  const std::string bytes = "data: a\n{\"error\":{\"message\":\"x\"}}\ndata: b\n\n";
  const auto events = parse_whole(bytes);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], (Seen{"", "{\"error\":{\"message\":\"x\"}}", "", "", true}));
  EXPECT_EQ(events[1], (Seen{"", "a\nb", ""}));
  expect_split_invariant(bytes);
}

/// An `error:` field is bounded like data.
TEST(SseParser, ErrorFieldOverflowsAtTheBound) {
  Collector c(16);
  c.parser().feed("error: 0123456789\nerror: 0123456789\n\n");
  EXPECT_TRUE(c.parser().overflowed());
  EXPECT_TRUE(c.events().empty());
}

}  // namespace
}  // namespace dyno::transport
