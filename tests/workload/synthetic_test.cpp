#include "workload/synthetic.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "workload/request_stream.h"

namespace dyno::workload {
namespace {

std::size_t word_count(const std::string& text) {
  std::istringstream in(text);
  std::size_t n = 0;
  for (std::string w; in >> w;) ++n;
  return n;
}

TEST(Synthetic, ShapeOfChatStream) {
  const RequestStream s = make_synthetic_stream({Api::kChat, 50, 100, 20, 7});
  ASSERT_EQ(s.requests.size(), 50u);
  EXPECT_EQ(s.source, "synthetic(api=chat,count=50,input_tokens=100,output_tokens=20,seed=7)");
  EXPECT_EQ(s.sha256, stream_sha256(s.requests));
  std::set<std::string> ids;
  std::set<std::string> prompts;
  for (std::size_t i = 0; i < s.requests.size(); ++i) {
    const Request& r = s.requests[i];
    EXPECT_EQ(r.id, "syn-7-" + std::to_string(i));
    ids.insert(r.id);
    ASSERT_TRUE(r.is_chat());
    ASSERT_EQ(r.messages.size(), 1u);
    EXPECT_EQ(r.messages[0].role, "user");
    EXPECT_EQ(word_count(r.messages[0].content), 100u);
    prompts.insert(r.messages[0].content);
    EXPECT_EQ(r.sampling.max_tokens, 20);
    EXPECT_EQ(r.sampling.ignore_eos, true);
    EXPECT_EQ(r.tags, (std::map<std::string, std::string>{{"source", "synthetic"}}));
    // Lowercase words and single spaces only.
    for (char c : r.messages[0].content) ASSERT_TRUE(c == ' ' || (c >= 'a' && c <= 'z'));
    // Round-trips through the stream format.
    EXPECT_EQ(parse_request_line(to_json_line(r), "x"), r);
  }
  EXPECT_EQ(ids.size(), 50u);
  EXPECT_EQ(prompts.size(), 50u);
}

TEST(Synthetic, CompletionsUsePrompt) {
  const RequestStream s = make_synthetic_stream({Api::kCompletions, 3, 10, 5, 1});
  ASSERT_EQ(s.requests.size(), 3u);
  for (const Request& r : s.requests) {
    ASSERT_TRUE(r.prompt.has_value());
    EXPECT_TRUE(r.messages.empty());
    EXPECT_EQ(word_count(*r.prompt), 10u);
  }
  EXPECT_EQ(s.source, "synthetic(api=completions,count=3,input_tokens=10,output_tokens=5,seed=1)");
}

TEST(Synthetic, PrefixesDifferFromTheStart) {
  // The first two words encode the index, so no two prompts share a first-two-word prefix.
  const RequestStream s = make_synthetic_stream({Api::kCompletions, 4096, 2, 1, 3});
  std::set<std::string> prompts;
  for (const Request& r : s.requests) prompts.insert(*r.prompt);
  EXPECT_EQ(prompts.size(), 4096u);
}

TEST(Synthetic, Deterministic) {
  const SyntheticOptions o{Api::kChat, 20, 64, 8, 42};
  const RequestStream a = make_synthetic_stream(o);
  const RequestStream b = make_synthetic_stream(o);
  EXPECT_EQ(a.requests, b.requests);
  EXPECT_EQ(a.sha256, b.sha256);

  SyntheticOptions other = o;
  other.seed = 43;
  const RequestStream c = make_synthetic_stream(other);
  EXPECT_NE(a.sha256, c.sha256);
  EXPECT_NE(a.requests[0].messages[0].content, c.requests[0].messages[0].content);
}

TEST(Synthetic, EdgeCases) {
  EXPECT_TRUE(make_synthetic_stream({Api::kChat, 0, 10, 10, 0}).requests.empty());
  const RequestStream one_word = make_synthetic_stream({Api::kChat, 2, 1, 1, 0});
  EXPECT_EQ(word_count(one_word.requests[0].messages[0].content), 1u);
  EXPECT_THROW(make_synthetic_stream({Api::kChat, 1, 0, 1, 0}), std::invalid_argument);
  EXPECT_THROW(make_synthetic_stream({Api::kChat, 1, 1, 0, 0}), std::invalid_argument);
}

}  // namespace
}  // namespace dyno::workload
