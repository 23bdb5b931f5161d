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
  bool operator==(const Seen&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Seen& seen) {
  return os << "{type=" << seen.type << " data=" << seen.data << " id=" << seen.id << "}";
}

class Collector {
 public:
  Collector()
      : parser_([this](const SseEvent& e) {
          events_.push_back({std::string(e.type), std::string(e.data), std::string(e.id)});
        }) {}
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

}  // namespace
}  // namespace dyno::transport
