#include "metrics/sessions.h"

#include <gtest/gtest.h>

#include <vector>

namespace dyno::metrics {
namespace {

constexpr std::int64_t kMs = 1'000'000;

Trace turn(std::uint64_t run, std::int64_t index, std::int64_t turns, std::int64_t sent_ms,
           std::int64_t ttft_ms, std::int64_t input, std::optional<std::int64_t> cached) {
  Trace t;
  t.session = "s" + std::to_string(run);
  t.session_run = run;
  t.turn = index;
  t.session_turns = turns;
  t.sent_ns = sent_ms * kMs;
  t.first_token_ns = (sent_ms + ttft_ms) * kMs;
  t.last_token_ns = (sent_ms + ttft_ms + 10) * kMs;
  t.done_ns = (sent_ms + ttft_ms + 10) * kMs;
  t.input_tokens = input;
  t.output_tokens = 5;
  t.cached_input_tokens = cached;
  if (cached) t.cached_source = CachedSource::kUsage;
  return t;
}

TEST(SessionFigures, CountOutcomesAndFiguresPerTurn) {
  std::vector<Trace> traces;
  // Session 0: 3 turns, all ok. Session 1: fails at turn 1. Session 2: cut after turn 0.
  traces.push_back(turn(0, 0, 3, 0, 100, 200, 0));
  traces.push_back(turn(0, 1, 3, 200, 20, 300, 192));
  traces.push_back(turn(0, 2, 3, 400, 30, 400, 288));
  traces.push_back(turn(1, 0, 2, 0, 80, 200, 0));
  Trace failed = turn(1, 1, 2, 150, 0, 0, std::nullopt);
  failed.status = RequestStatus::kError;
  failed.input_tokens.reset();
  traces.push_back(failed);
  traces.push_back(turn(2, 0, 3, 10, 90, 200, std::nullopt));
  Trace warm = turn(9, 0, 3, 0, 5, 200, 0);
  warm.phase = "warmup";
  traces.push_back(warm);
  traces.push_back(Trace{});  // not a session's turn: ignored here
  const auto f = session_figures(traces);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->sessions, 3u);
  EXPECT_EQ(f->completed, 1u);
  EXPECT_EQ(f->failed, 1u);
  EXPECT_EQ(f->cut, 1u);
  EXPECT_EQ(f->turns.max, 3.0);
  EXPECT_EQ(f->turns.min, 1.0);
  // Session 0: first sent at 0, last done at 400 + 30 + 10 ms.
  EXPECT_DOUBLE_EQ(*f->duration_s.max, 0.44);
  EXPECT_EQ(f->input_tokens.max, 900.0);
  ASSERT_EQ(f->per_turn.size(), 3u);
  EXPECT_EQ(f->per_turn[0].requests, 3u);
  EXPECT_EQ(f->per_turn[1].requests, 2u);
  EXPECT_EQ(f->per_turn[1].failed, 1u);
  EXPECT_EQ(f->per_turn[1].ttft_ms.p50, 20.0);
  ASSERT_TRUE(f->per_turn[1].cache);
  EXPECT_DOUBLE_EQ(*f->per_turn[1].cache->hit_rate, 192.0 / 300.0);
  EXPECT_EQ(f->per_turn[0].cache->requests, 2u);  // session 2's turn 0 has no count
  EXPECT_FALSE(session_figures(std::vector<Trace>{Trace{}}).has_value());
}

TEST(PrefixCache, HitRateFitAndBucketsOverRequestsWithACount) {
  std::vector<Trace> traces;
  // TTFT = 10 ms + 2 ms per 100 uncached tokens, exactly.
  for (int i = 0; i < 8; ++i) {
    const std::int64_t input = 1000;
    const std::int64_t cached = 100 * i;
    const std::int64_t uncached = input - cached;
    traces.push_back(turn(0, i, 8, 1000 * i, 10 + uncached / 50, input, cached));
  }
  Trace liar = turn(0, 0, 8, 0, 5, 100, 500);  // more cached than prompt: not believed
  traces.push_back(liar);
  Trace timed = turn(0, 0, 8, 0, 30, 1000, 0);
  timed.cached_source = CachedSource::kTimings;
  traces.push_back(timed);
  const auto f = prefix_cache_figures(traces);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->source, "usage+timings");
  EXPECT_EQ(f->totals.requests, 9u);
  EXPECT_EQ(f->totals.prompt_tokens, 9000);
  EXPECT_EQ(f->totals.cached_tokens, 2800);
  EXPECT_DOUBLE_EQ(*f->totals.hit_rate, 2800.0 / 9000.0);
  EXPECT_NEAR(*f->ttft_intercept_ms, 10.0, 1e-9);
  EXPECT_NEAR(*f->ttft_ms_per_1k_uncached, 20.0, 1e-9);
  EXPECT_NEAR(*f->ttft_fit_r2, 1.0, 1e-12);
  ASSERT_EQ(f->buckets.size(), 4u);
  EXPECT_EQ(f->buckets[0].uncached_min, 300);
  EXPECT_EQ(f->buckets[3].uncached_max, 1000);
  EXPECT_FALSE(prefix_cache_figures(std::vector<Trace>{Trace{}}).has_value());
}

// Every prompt of one uncached length (a synthetic stream, no cache): no line can be fitted, and
// none is reported (the rounding of the mean once gave "ttft 121 ms + -48.8 ms per 1k").
TEST(PrefixCache, OneUncachedLengthFitsNoLine) {
  std::vector<Trace> traces;
  for (int i = 0; i < 50; ++i) traces.push_back(turn(0, i, 8, 1000 * i, 20 + i % 7, 275, 0));
  const auto f = prefix_cache_figures(traces);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->totals.requests, 50u);
  EXPECT_FALSE(f->ttft_ms_per_1k_uncached.has_value());
  EXPECT_FALSE(f->ttft_intercept_ms.has_value());
}

}  // namespace
}  // namespace dyno::metrics
