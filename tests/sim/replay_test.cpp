// sim/replay.h: cells played through the performance model in virtual time.
#include "sim/replay.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace dyno::sim {
namespace {

Profile simple() {
  Profile p;
  p.max_running_seqs = 4;
  p.step_token_budget = 1024;
  p.prefill_tokens_per_s = 10000.0;
  p.step_base_s = 0.010;
  p.decode_seq_s = 0.002;
  p.decode_ctx_token_s = 1e-6;
  return p;
}

CellSpec closed(std::uint32_t c, std::size_t n, std::int64_t in, std::int64_t out) {
  CellSpec s;
  s.concurrency = c;
  s.requests.assign(n, CellRequest{in, 0, out});
  return s;
}

double s_of(std::int64_t ns) { return static_cast<double>(ns) * 1e-9; }

TEST(Replay, OneRequestFollowsTheStepFormula) {
  const auto traces = replay_cell(simple(), closed(1, 1, 100, 3));
  ASSERT_EQ(traces.size(), 1u);
  const metrics::Trace& t = traces[0];
  ASSERT_EQ(t.event_times_ns.size(), 3u);
  EXPECT_EQ(*t.sent_ns, 0);
  // Prefill step: base + 100 / 10000; each decode step: base + seq + ctx·(100 + generated).
  EXPECT_NEAR(s_of(*t.first_token_ns), 0.010 + 0.010, 1e-9);
  const std::vector<std::int64_t> ev = t.event_times_ns.to_vector();
  EXPECT_NEAR(s_of(ev[1] - ev[0]), 0.010 + 0.002 + 101e-6, 1e-9);
  EXPECT_NEAR(s_of(ev[2] - ev[1]), 0.010 + 0.002 + 102e-6, 1e-9);
  EXPECT_EQ(*t.done_ns, t.event_times_ns.back());
  EXPECT_EQ(*t.output_tokens, 3);
  EXPECT_TRUE(t.ok());
}

TEST(Replay, ClosedLoopKeepsConcurrencyInFlight) {
  const auto traces = replay_cell(simple(), closed(2, 6, 50, 5));
  ASSERT_EQ(traces.size(), 6u);
  for (std::size_t i = 2; i < traces.size(); ++i) {
    // Request i is sent when an earlier one ended: at some done time, never before.
    bool at_a_done = false;
    for (std::size_t j = 0; j < i; ++j) at_a_done |= *traces[j].done_ns == *traces[i].sent_ns;
    EXPECT_TRUE(at_a_done) << i;
  }
  // The first two were sent together: the first starts a step alone, the second joins the
  // step after it.
  EXPECT_EQ(*traces[0].sent_ns, 0);
  EXPECT_EQ(*traces[1].sent_ns, 0);
  EXPECT_LT(*traces[0].first_token_ns, *traces[1].first_token_ns);
}

TEST(Replay, MaxRunningSeqsQueuesTheRest) {
  Profile p = simple();
  p.max_running_seqs = 1;
  const auto traces = replay_cell(p, closed(3, 3, 10, 4));
  // One at a time: each starts after the previous one's last token.
  EXPECT_GE(*traces[1].first_token_ns, *traces[0].done_ns);
  EXPECT_GE(*traces[2].first_token_ns, *traces[1].done_ns);
}

TEST(Replay, OpenLoopSendsAtTheArrivals) {
  CellSpec s;
  s.arrivals_s = {0.0, 0.005, 1.0};
  s.requests.assign(3, CellRequest{100, 0, 2});
  const auto traces = replay_cell(simple(), s);
  EXPECT_EQ(*traces[1].sent_ns, 5'000'000);
  // The second arrives during the first's prefill step (0 → 20 ms): it joins the next step.
  EXPECT_GE(s_of(*traces[1].first_token_ns), 0.020 + 0.010 + 0.010 - 1e-9);
  // The third finds the engine idle: a step starts at its arrival.
  EXPECT_NEAR(s_of(*traces[2].first_token_ns), 1.0 + 0.020, 1e-9);
}

TEST(Replay, CachedTokensAreNotPrefilled) {
  CellSpec s = closed(1, 1, 1000, 2);
  s.requests[0].cached_tokens = 900;
  const auto traces = replay_cell(simple(), s);
  EXPECT_NEAR(s_of(*traces[0].first_token_ns), 0.010 + 100 / 10000.0, 1e-9);
}

TEST(Replay, RejectsMalformedCells) {
  EXPECT_THROW(replay_cell(simple(), CellSpec{}), std::invalid_argument);
  EXPECT_THROW(replay_cell(simple(), closed(0, 1, 1, 1)), std::invalid_argument);
  CellSpec open;
  open.requests.assign(2, CellRequest{});
  open.arrivals_s = {0.0};
  EXPECT_THROW(replay_cell(simple(), open), std::invalid_argument);
  open.arrivals_s = {1.0, 0.5};
  EXPECT_THROW(replay_cell(simple(), open), std::invalid_argument);
}

TEST(Replay, FiguresAreSummaryFigures) {
  const auto traces = replay_cell(simple(), closed(1, 4, 100, 3));
  const CellFigures f = cell_figures(traces);
  ASSERT_TRUE(f.ttft_p50_s && f.tpot_p50_s && f.output_tokens_per_s && f.requests_per_s);
  EXPECT_NEAR(*f.ttft_p50_s, 0.020, 1e-9);
  EXPECT_NEAR(*f.tpot_p50_s, 0.012 + 101.5e-6, 1e-9);
  // Four requests back to back: 12 tokens over four request times.
  const double e2e = 0.020 + 0.012101 + 0.012102;
  EXPECT_NEAR(*f.output_tokens_per_s, 12.0 / (4 * e2e), 1e-6);
  EXPECT_NEAR(*f.requests_per_s, 4.0 / (4 * e2e), 1e-6);
}

TEST(Replay, FinishWorkHoldsTheNextStepForAClosedLoopsNextRequest) {
  // One slot, the client sends the next request 1 ms after the last token. Without finish
  // work the idle engine starts the prefill at the send; with 5 ms of it, at the end of that
  // work.
  CellSpec s = closed(1, 2, 100, 3);
  s.send_delays_s = {0.0, 0.001};
  const auto plain = replay_cell(simple(), s);
  EXPECT_NEAR(s_of(*plain[1].first_token_ns - *plain[0].done_ns), 0.001 + 0.020, 1e-9);
  Profile p = simple();
  p.finish_s = 0.005;
  const auto held = replay_cell(p, s);
  EXPECT_EQ(*held[1].sent_ns - *held[0].done_ns, 1'000'000);
  EXPECT_NEAR(s_of(*held[1].first_token_ns - *held[0].done_ns), 0.005 + 0.020, 1e-9);
  // Two slots: the first request's end delays the second's next token by the finish work, and
  // the third request (sent 1 ms after that end) is prefilled in that same step.
  CellSpec two = closed(2, 3, 100, 6);
  two.requests[0].output_tokens = 2;
  two.send_delays_s = {0.0, 0.0, 0.001};
  const auto t = replay_cell(p, two);
  const std::vector<std::int64_t> ev = t[1].event_times_ns.to_vector();
  std::size_t k = 0;
  while (k < ev.size() && ev[k] <= *t[0].done_ns) ++k;
  ASSERT_LT(k, ev.size());
  EXPECT_EQ(ev[k], *t[2].first_token_ns);
  EXPECT_GT(s_of(ev[k] - *t[0].done_ns), 0.005 + 0.010 + 0.002);
}

TEST(Replay, RelativeError) {
  EXPECT_NEAR(*relative_error(2.0, 2.2), 0.1, 1e-12);
  EXPECT_FALSE(relative_error(std::nullopt, 1.0));
  EXPECT_FALSE(relative_error(0.0, 1.0));
  EXPECT_FALSE(relative_error(1.0, std::nullopt));
}

}  // namespace
}  // namespace dyno::sim
