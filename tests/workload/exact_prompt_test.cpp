#include "workload/exact_prompt.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/tokenizer.h"
#include "workload/request_stream.h"

namespace dyno::workload {
namespace {

// The simulated engine's tokenizer, with its chat template (as dyno sim's /tokenize counts).
std::int64_t sim_count(const Request& r) {
  if (!r.is_chat()) return static_cast<std::int64_t>(sim::count_tokens(*r.prompt));
  std::vector<sim::ChatMessage> messages;
  for (const Message& m : r.messages) messages.push_back({m.role, m.content});
  return static_cast<std::int64_t>(sim::count_tokens(sim::apply_chat_template(messages)));
}

// A coarse toy tokenizer: one token per 3 bytes (rounded up) plus a BOS token; words cost
// ~1.5-2.5 tokens each, so the fine-tuning step matters.
std::int64_t toy_count(const Request& r) {
  std::string text = r.is_chat() ? std::string() : *r.prompt;
  for (const Message& m : r.messages) text += "<" + m.role + ">" + m.content;
  return 1 + static_cast<std::int64_t>((text.size() + 2) / 3);
}

ExactOptions options(Api api, std::int64_t input_tokens) {
  ExactOptions o;
  o.api = api;
  o.count = 5;
  o.input_tokens = input_tokens;
  o.output_tokens = 16;
  o.seed = 7;
  return o;
}

TEST(ExactPrompt, HitsTargetsWithTheSimTokenizer) {
  for (const std::int64_t target : {1, 7, 128, 2048}) {
    std::vector<LengthReport> report;
    const RequestStream s =
        make_exact_stream(options(Api::kCompletions, target), sim_count, &report);
    ASSERT_EQ(s.requests.size(), 5u);
    ASSERT_EQ(report.size(), 5u);
    for (std::size_t i = 0; i < s.requests.size(); ++i) {
      const Request& r = s.requests[i];
      EXPECT_EQ(sim_count(r), target) << r.id;
      EXPECT_EQ(r.id, "exact-7-" + std::to_string(i));
      EXPECT_EQ(r.sampling.max_tokens, 16);
      EXPECT_EQ(r.sampling.min_tokens, 16);
      EXPECT_EQ(r.sampling.ignore_eos, true);
      EXPECT_EQ(r.tags.at("source"), "exact");
      EXPECT_EQ(report[i].achieved, target);
      EXPECT_LE(report[i].calls, kMaxExactCalls);
    }
    EXPECT_EQ(s.sha256, stream_sha256(s.requests));
  }
}

TEST(ExactPrompt, HitsTargetsWithACoarseTokenizer) {
  for (const std::int64_t target : {1, 7, 128, 2048}) {
    const RequestStream s =
        make_exact_stream(options(Api::kCompletions, target), toy_count, nullptr);
    for (const Request& r : s.requests) EXPECT_EQ(toy_count(r), target) << r.id;
  }
}

TEST(ExactPrompt, ChatCountsTheTemplate) {
  ExactOptions o = options(Api::kChat, 128);
  o.system_prompt = "You are terse.";
  const RequestStream s = make_exact_stream(o, sim_count, nullptr);
  for (const Request& r : s.requests) {
    ASSERT_EQ(r.messages.size(), 2u);
    EXPECT_EQ(r.messages[0].role, "system");
    EXPECT_EQ(sim_count(r), 128);
    // The user text is shorter than the target by the template and system message.
    EXPECT_LT(static_cast<std::int64_t>(sim::count_tokens(r.messages[1].content)), 128 - 19);
  }
  // The chat template alone is more than 1 token: a clear error naming the request.
  try {
    make_exact_stream(options(Api::kChat, 1), sim_count, nullptr);
    FAIL() << "expected ExactLengthError";
  } catch (const ExactLengthError& e) {
    EXPECT_NE(std::string(e.what()).find("request 0 (exact-7-0)"), std::string::npos) << e.what();
  }
}

TEST(ExactPrompt, SharedPrefix) {
  for (const auto api : {Api::kCompletions, Api::kChat}) {
    ExactOptions o = options(api, 300);
    o.shared_prefix_tokens = 100;
    std::vector<LengthReport> report;
    const RequestStream s = make_exact_stream(o, sim_count, &report);
    const auto text = [](const Request& r) {
      return r.is_chat() ? r.messages.back().content : *r.prompt;
    };
    // The prefix: the longest common prefix of all prompts counts exactly 100 tokens alone.
    std::string common = text(s.requests[0]);
    for (const Request& r : s.requests) {
      const std::string t = text(r);
      std::size_t n = 0;
      while (n < common.size() && n < t.size() && common[n] == t[n]) ++n;
      common.resize(n);
      EXPECT_EQ(sim_count(r), 300);
    }
    Request alone = s.requests[0];
    if (alone.is_chat()) {
      alone.messages.back().content = common;
    } else {
      alone.prompt = common;
    }
    // The common text is the prefix, possibly plus a space where suffixes start.
    while (!common.empty() && common.back() == ' ') common.pop_back();
    if (alone.is_chat()) {
      alone.messages.back().content = common;
    } else {
      alone.prompt = common;
    }
    EXPECT_EQ(sim_count(alone), 100);
    EXPECT_EQ(report.at(0).prefix_requested, 100);
    EXPECT_EQ(report.at(0).prefix_achieved, 100);
  }
  ExactOptions bad = options(Api::kCompletions, 10);
  bad.shared_prefix_tokens = 10;
  EXPECT_THROW(make_exact_stream(bad, sim_count, nullptr), std::invalid_argument);
}

TEST(ExactPrompt, DeterministicAndDistinct) {
  const RequestStream a = make_exact_stream(options(Api::kChat, 64), sim_count, nullptr);
  const RequestStream b = make_exact_stream(options(Api::kChat, 64), sim_count, nullptr);
  EXPECT_EQ(a.sha256, b.sha256);
  EXPECT_EQ(a.requests, b.requests);
  EXPECT_NE(a.requests[0].messages[0].content, a.requests[1].messages[0].content);
  ExactOptions other = options(Api::kChat, 64);
  other.seed = 8;
  EXPECT_NE(make_exact_stream(other, sim_count, nullptr).sha256, a.sha256);
  EXPECT_EQ(a.source, "exact(api=chat,count=5,input_tokens=64,output_tokens=16,seed=7)");
}

TEST(ExactPrompt, FailsWhenImpossible) {
  // A tokenizer whose counts are always even cannot give 7.
  const auto even = [](const Request& r) { return 2 * sim_count(r); };
  try {
    make_exact_stream(options(Api::kCompletions, 7), even, nullptr);
    FAIL() << "expected ExactLengthError";
  } catch (const ExactLengthError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("request 0 (exact-7-0)"), std::string::npos) << what;
    EXPECT_NE(what.find("exactly 7"), std::string::npos) << what;
  }
  EXPECT_THROW(make_exact_stream(options(Api::kCompletions, 0), sim_count, nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace dyno::workload
