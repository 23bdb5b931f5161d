#include "sim/model.h"

#include <gtest/gtest.h>

#include <limits>

namespace dyno::sim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Profile paper_profile() {
  Profile p;
  p.max_running_seqs = 8;
  p.step_token_budget = 512;
  p.prefill_tokens_per_s = 10000.0;
  p.step_base_s = 0.01;
  p.decode_seq_s = 0.001;
  p.decode_ctx_token_s = 1e-6;
  p.kv_capacity_tokens = 1 << 20;
  p.default_max_tokens = 4;
  return p;
}

ModelRequest request(std::uint64_t id, std::int64_t prompt, std::int64_t max_tokens) {
  ModelRequest r;
  r.id = id;
  r.prompt_tokens = prompt;
  r.max_tokens = max_tokens;
  r.seed = id;
  return r;
}

std::int64_t total_tokens(const std::vector<Event>& events, std::uint64_t id) {
  std::int64_t n = 0;
  for (const Event& e : events) {
    if (e.request_id == id) n += e.tokens;
  }
  return n;
}

TEST(Model, ChunkedPrefillThenDecode) {
  Model m(paper_profile());
  m.submit(request(1, 1000, 3), 0.0);
  // Step 1: 512 prompt tokens; step 2: the remaining 488 -> first token.
  ASSERT_TRUE(m.next_step_end());
  EXPECT_DOUBLE_EQ(*m.next_step_end(), 0.01 + 512 / 10000.0);
  const double t1 = *m.next_step_end();
  EXPECT_TRUE(m.run_until(t1).empty());
  const double first = t1 + 0.01 + 488 / 10000.0;
  EXPECT_NEAR(*m.next_step_end(), first, 1e-12);
  auto events = m.run_until(*m.next_step_end());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].first);
  EXPECT_EQ(events[0].tokens, 1);
  EXPECT_NEAR(events[0].time_s, 0.12, 1e-12);
  // Decode steps: base + 1 seq + context (1001, then 1002 tokens).
  const double d1 = 0.01 + 0.001 + 1001e-6;
  const double d2 = 0.01 + 0.001 + 1002e-6;
  events = m.run_until(kInf);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_NEAR(events[0].time_s, first + d1, 1e-12);
  EXPECT_NEAR(events[1].time_s, first + d1 + d2, 1e-12);
  EXPECT_EQ(events[1].finish, FinishReason::kLength);
  EXPECT_EQ(events[1].first_index, 2);
  EXPECT_EQ(m.running(), 0u);
  EXPECT_EQ(m.kv_used(), 0);
  EXPECT_FALSE(m.has_work());
}

TEST(Model, DecodeStepGrowsWithBatchAndContext) {
  Model m(paper_profile());
  m.submit(request(1, 100, 3), 0.0);
  m.submit(request(2, 300, 3), 0.0);
  // One step prefills both (P = 400), both emit their first token.
  auto events = m.run_until(0.05);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_NEAR(events[0].time_s, 0.01 + 0.04, 1e-12);
  // Decode: B = 2, Σctx = 101 + 301.
  const StepPlan plan = *m.start_step(m.clock());
  EXPECT_EQ(plan.decode_seqs, 2);
  EXPECT_EQ(plan.decode_context, 402);
  EXPECT_EQ(plan.prefill_tokens, 0);
  EXPECT_NEAR(plan.end_s - plan.start_s, 0.01 + 2 * 0.001 + 402e-6, 1e-12);
  m.complete_step();
  const StepPlan next = *m.start_step(m.clock());
  EXPECT_EQ(next.decode_context, 404);
  EXPECT_DOUBLE_EQ(m.step_duration(3, 1000, 50), 0.01 + 0.003 + 0.001 + 0.005);
}

// prefill_ctx_token_s: token k of a prompt attends to k + 1 tokens, so a chunk of c tokens from
// position p adds c·p + c(c+1)/2 to A; chunks of one prompt add up to P(P+1)/2.
TEST(Model, PrefillAttentionIsQuadraticInThePrompt) {
  Profile p = paper_profile();
  p.step_token_budget = 60;
  p.prefill_ctx_token_s = 1e-7;
  Model m(p);
  m.submit(request(1, 100, 2), 0.0);
  const StepPlan first = *m.start_step(0.0);
  EXPECT_EQ(first.prefill_tokens, 60);
  EXPECT_EQ(first.prefill_context, 60 * 61 / 2);
  EXPECT_NEAR(first.end_s, 0.01 + 60 / 10000.0 + 1830 * 1e-7, 1e-12);
  m.complete_step();
  const StepPlan second = *m.start_step(m.clock());
  EXPECT_EQ(second.prefill_tokens, 40);
  EXPECT_EQ(second.prefill_context, 40 * 60 + 40 * 41 / 2);
  EXPECT_EQ(first.prefill_context + second.prefill_context, 100 * 101 / 2);
  EXPECT_DOUBLE_EQ(m.step_duration(0, 0, 10, 55), 0.01 + 0.001 + 55 * 1e-7);
}

// shared_kv_token_s: every batch token attends over all occupied cells of one KV cache; a
// finished sequence leaves its prompt + output in its slot until a later sequence takes that slot
// (least recently used first, never-used first of all).
TEST(Model, SharedKvCacheChargesEveryBatchTokenForAllOccupiedCells) {
  Profile p = paper_profile();
  p.max_running_seqs = 2;
  p.shared_kv_token_s = 1e-6;
  Model m(p);
  m.submit(request(1, 10, 5), 0.0);  // slot 0
  const StepPlan a = *m.start_step(0.0);
  EXPECT_EQ(a.kv_cells, 10);
  EXPECT_NEAR(a.end_s, 0.01 + 10 / 10000.0 + 10 * 10 * 1e-6, 1e-12);
  m.complete_step();
  const StepPlan a2 = *m.start_step(m.clock());  // decodes token 2: cells 10 + 1 + 1
  EXPECT_EQ(a2.kv_cells, 12);
  m.complete_step();
  m.run_until(kInf);  // request 1 leaves 10 + 5 cells in slot 0
  EXPECT_EQ(m.kv_cells(), 15);
  m.submit(request(2, 20, 3), m.clock());  // slot 1 (never used)
  const StepPlan b = *m.start_step(m.clock());
  EXPECT_EQ(b.kv_cells, 15 + 20);
  m.run_until(kInf);
  EXPECT_EQ(m.kv_cells(), 15 + 23);
  m.submit(request(3, 7, 2), m.clock());  // slot 0, used least recently: its 15 cells go
  const StepPlan c = *m.start_step(m.clock());
  EXPECT_EQ(c.kv_cells, 23 + 7);
  m.complete_step();
  EXPECT_TRUE(m.cancel(3));  // a cancelled sequence leaves the cells it had: 7 + 1
  EXPECT_EQ(m.kv_cells(), 23 + 8);
  EXPECT_DOUBLE_EQ(m.step_duration(2, 0, 3, 0, 100), 0.01 + 0.002 + 3 / 10000.0 + 5 * 100 * 1e-6);
}

TEST(Model, WithoutASharedKvCacheNoCellsAreCounted) {
  Model m(paper_profile());
  m.submit(request(1, 10, 5), 0.0);
  EXPECT_EQ(m.start_step(0.0)->kv_cells, 0);
  EXPECT_EQ(m.kv_cells(), 0);
}

TEST(Model, DecodeTakesBudgetBeforePrefill) {
  Profile p = paper_profile();
  p.step_token_budget = 100;
  Model m(p);
  m.submit(request(1, 10, 50), 0.0);
  m.submit(request(2, 1000, 5), 0.0);
  StepPlan plan = *m.start_step(0.0);
  EXPECT_EQ(plan.decode_seqs, 0);
  EXPECT_EQ(plan.prefill_tokens, 100);  // 10 of request 1, a 90-token chunk of request 2
  EXPECT_EQ(m.complete_step().size(), 1u);
  plan = *m.start_step(m.clock());
  EXPECT_EQ(plan.decode_seqs, 1);
  EXPECT_EQ(plan.prefill_tokens, 99);
}

TEST(Model, MaxRunningSeqsQueuesTheRest) {
  Profile p = paper_profile();
  p.max_running_seqs = 2;
  Model m(p);
  for (std::uint64_t id = 1; id <= 3; ++id) m.submit(request(id, 10, 2), 0.0);
  auto events = m.run_until(*m.next_step_end());
  ASSERT_EQ(events.size(), 2u);  // first tokens of 1 and 2
  EXPECT_EQ(m.running(), 2u);
  EXPECT_EQ(m.waiting(), 1u);
  events = m.run_until(*m.next_step_end());  // 1 and 2 finish
  ASSERT_EQ(events.size(), 2u);
  EXPECT_NE(events[0].finish, FinishReason::kNone);
  const double finished = events[1].time_s;
  events = m.run_until(kInf);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].request_id, 3u);
  EXPECT_TRUE(events[0].first);
  EXPECT_NEAR(events[0].time_s, finished + 0.01 + 10 / 10000.0, 1e-12);
}

TEST(Model, KvCapacityQueues) {
  Profile p = paper_profile();
  p.kv_capacity_tokens = 100;
  Model m(p);
  m.submit(request(1, 50, 40), 0.0);  // reserves 90
  m.submit(request(2, 10, 5), 0.0);   // 15 more would exceed 100: waits
  auto events = m.run_until(kInf);
  double finish1 = -1.0;
  double first2 = -1.0;
  for (const Event& e : events) {
    if (e.request_id == 1 && e.finish != FinishReason::kNone) finish1 = e.time_s;
    if (e.request_id == 2 && e.first) first2 = e.time_s;
  }
  ASSERT_GT(finish1, 0.0);
  EXPECT_GT(first2, finish1);
  EXPECT_EQ(total_tokens(events, 1), 40);
  EXPECT_EQ(total_tokens(events, 2), 5);

  // With room for both, they run together.
  Model both(paper_profile());
  both.submit(request(1, 50, 40), 0.0);
  both.submit(request(2, 10, 5), 0.0);
  events = both.run_until(*both.next_step_end());
  EXPECT_EQ(events.size(), 2u);
}

TEST(Model, OversizedRequestRunsAlone) {
  Profile p = paper_profile();
  p.kv_capacity_tokens = 10;
  Model m(p);
  m.submit(request(1, 50, 3), 0.0);
  EXPECT_EQ(total_tokens(m.run_until(kInf), 1), 3);
}

TEST(Model, SpeculativeDecoding) {
  Profile p = paper_profile();
  p.spec_tokens = 3;
  p.spec_acceptance = 1.0;
  Model all(p);
  all.submit(request(1, 10, 10), 0.0);
  auto events = all.run_until(kInf);
  std::vector<std::int32_t> sizes;
  for (const Event& e : events) sizes.push_back(e.tokens);
  EXPECT_EQ(sizes, (std::vector<std::int32_t>{1, 4, 4, 1}));  // capped at max_tokens

  p.spec_acceptance = 0.0;
  Model none(p);
  none.submit(request(1, 10, 10), 0.0);
  events = none.run_until(kInf);
  ASSERT_EQ(events.size(), 10u);
  for (const Event& e : events) EXPECT_EQ(e.tokens, 1);

  p.spec_acceptance = 0.7;
  Model some(p, 7);
  some.submit(request(1, 10, 1000), 0.0);
  events = some.run_until(kInf);
  EXPECT_EQ(total_tokens(events, 1), 1000);
  // Mean tokens per decode event: 1 + 0.7 + 0.49 + 0.343 = 2.533.
  const double mean = 999.0 / static_cast<double>(events.size() - 1);
  EXPECT_GT(mean, 2.2);
  EXPECT_LT(mean, 2.9);
  for (const Event& e : events) {
    EXPECT_GE(e.tokens, 1);
    EXPECT_LE(e.tokens, 4);
  }
}

TEST(Model, EosStopsAfterMinTokensAndNeverBeyondMax) {
  Profile p = paper_profile();
  p.eos_probability = 0.3;
  p.zero_delay = true;
  Model m(p, 3);
  int stopped = 0;
  for (std::uint64_t id = 1; id <= 200; ++id) {
    ModelRequest r = request(id, 5, 20);
    r.min_tokens = 4;
    const std::int64_t planned = m.submit(r, 0.0);
    EXPECT_GE(planned, 4);
    EXPECT_LE(planned, 20);
  }
  const auto events = m.run_until(0.0);
  for (std::uint64_t id = 1; id <= 200; ++id) {
    const std::int64_t n = total_tokens(events, id);
    EXPECT_GE(n, 4);
    EXPECT_LE(n, 20);
  }
  for (const Event& e : events) {
    if (e.finish == FinishReason::kStop) ++stopped;
  }
  EXPECT_GT(stopped, 150);  // P(no EOS in 17 tries) = 0.7^17 ≈ 0.2%
  ModelRequest r = request(999, 5, 20);
  r.ignore_eos = true;
  EXPECT_EQ(m.submit(r, 0.0), 20);
}

TEST(Model, ReasoningPrefix) {
  Profile p = paper_profile();
  p.reasoning_fraction = 0.5;
  p.spec_tokens = 3;
  p.spec_acceptance = 1.0;
  Model m(p);
  m.submit(request(1, 10, 11), 0.0);
  const auto events = m.run_until(kInf);
  std::int64_t reasoning = 0;
  std::int64_t index = 0;
  for (const Event& e : events) {
    EXPECT_EQ(e.first_index, index);
    if (e.kind == TokenKind::kReasoning) {
      EXPECT_LE(e.first_index + e.tokens, 5);  // floor(0.5 * 11) = 5, never straddled
      reasoning += e.tokens;
    } else {
      EXPECT_GE(e.first_index, 5);
    }
    index += e.tokens;
  }
  EXPECT_EQ(reasoning, 5);
  EXPECT_EQ(index, 11);
}

TEST(Model, ZeroDelayAndIdleArrival) {
  Profile p = paper_profile();
  p.zero_delay = true;
  Model z(p);
  z.submit(request(1, 5000, 5), 0.0);
  for (const Event& e : z.run_until(0.0)) EXPECT_EQ(e.time_s, 0.0);

  // An idle engine starts the step at the arrival.
  Model m(paper_profile());
  m.run_until(1.0);
  m.submit(request(1, 10, 1), 2.0);
  const auto events = m.run_until(kInf);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_NEAR(events[0].time_s, 2.0 + 0.01 + 0.001, 1e-12);
}

TEST(Model, FinishWorkDelaysTheNextStepAndLetsArrivalsJoinIt) {
  // Request 1 (2 tokens) finishes at the end of its first decode step; request 2 (4 tokens)
  // waits for the engine's finish work before its next step, and request 3, submitted during
  // that work, is prefilled in that very step.
  Profile p = paper_profile();
  p.finish_s = 0.005;
  Model m(p);
  m.submit(request(1, 10, 2), 0.0);
  m.submit(request(2, 10, 4), 0.0);
  const StepPlan prefill = *m.start_step(0.0);
  m.complete_step();
  EXPECT_EQ(m.ready_s(), prefill.end_s);  // nothing finished: no finish work
  const StepPlan decode = *m.start_step(m.ready_s());
  const std::vector<Event> ended = m.complete_step();
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_EQ(ended[0].finish, FinishReason::kLength);
  EXPECT_NEAR(m.ready_s(), decode.end_s + 0.005, 1e-12);
  m.submit(request(3, 20, 1), decode.end_s + 0.004);
  const std::vector<Event> next = m.run_until(decode.end_s + 1.0);
  ASSERT_FALSE(next.empty());
  // The step after the finish: request 2's decode and request 3's prefill together.
  EXPECT_EQ(next[0].request_id, 2u);
  EXPECT_EQ(next[1].request_id, 3u);
  EXPECT_TRUE(next[1].first);
  EXPECT_NEAR(next[1].prefill_start_s, decode.end_s + 0.005, 1e-12);
  EXPECT_EQ(next[0].time_s, next[1].time_s);
  // A caller that plans early still never starts before ready_s().
  Profile q = paper_profile();
  q.finish_s = 0.5;
  Model early(q);
  early.submit(request(1, 10, 1), 0.0);
  early.submit(request(2, 10, 1), 0.0);
  early.run_until(*early.next_step_end());  // both finish in the prefill step
  EXPECT_NEAR(early.ready_s(), early.clock() + 1.0, 1e-12);
  early.submit(request(3, 10, 1), early.clock());
  EXPECT_NEAR(early.start_step(early.clock())->start_s, early.ready_s(), 1e-12);
}

TEST(Model, CancelAndPause) {
  Profile p = paper_profile();
  p.max_running_seqs = 1;
  Model m(p);
  m.submit(request(1, 10, 100), 0.0);
  m.submit(request(2, 10, 2), 0.0);
  m.run_until(*m.next_step_end());
  EXPECT_EQ(m.kv_used(), 110);
  // Cancel during a planned step: its events are dropped and the KV freed at once.
  ASSERT_TRUE(m.start_step(m.clock()));
  EXPECT_TRUE(m.cancel(1));
  EXPECT_EQ(m.kv_used(), 0);
  EXPECT_TRUE(m.complete_step().empty());
  EXPECT_FALSE(m.cancel(1));
  auto events = m.run_until(kInf);
  EXPECT_EQ(total_tokens(events, 2), 2);

  Model q(paper_profile());
  q.submit(request(1, 10, 5), 0.0);
  ASSERT_TRUE(q.start_step(0.0));
  EXPECT_EQ(q.complete_step().size(), 1u);
  q.set_paused(1, true);
  EXPECT_FALSE(q.has_work());
  EXPECT_FALSE(q.start_step(q.clock()));
  q.set_paused(1, false);
  EXPECT_EQ(total_tokens(q.run_until(kInf), 1), 4);
}

}  // namespace
}  // namespace dyno::sim

namespace dyno::sim {
namespace {

TEST(Model, FirstEventCarriesThePrefillStart) {
  // Request 1 arrives at 0 and is prefilled in one step; request 2 arrives while that step runs,
  // so its first prompt chunk starts with the next step; its 1000-token prompt takes two steps
  // (budget 512, one decode token for request 1), and the first token comes at the end of the
  // second: the prefill start is the first chunk's step start, not the arrival or the last chunk.
  Model m(paper_profile());
  m.submit(request(1, 10, 4), 0.0);
  const StepPlan s1 = *m.start_step(0.0);
  m.submit(request(2, 1000, 2), 0.005);
  auto events = m.complete_step();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].first);
  EXPECT_EQ(events[0].prefill_start_s, s1.start_s);
  const StepPlan s2 = *m.start_step(m.clock());
  EXPECT_EQ(s2.prefill_tokens, 511);
  EXPECT_TRUE(m.complete_step().size() == 1u);  // request 1 decodes, request 2 still prefills
  std::vector<Event> rest = m.run_until(kInf);
  const Event* first2 = nullptr;
  for (const Event& e : rest) {
    if (e.request_id == 2 && e.first) first2 = &e;
    if (!e.first) {
      EXPECT_EQ(e.prefill_start_s, 0.0);  // only first events carry it
    }
  }
  ASSERT_NE(first2, nullptr);
  EXPECT_EQ(first2->prefill_start_s, s2.start_s);
  EXPECT_GT(first2->time_s, s2.end_s);
}

}  // namespace
}  // namespace dyno::sim
