// sim/fit.h: a profile recovered from cells its own model produced (in virtual time, exact or
// with the client's timing noise added), and held-out cells predicted from it.
#include "sim/fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "sim/fit_regression.h"

namespace dyno::sim {
namespace {

// A CPU-engine-like truth: steps of several ms, a limit of 6 running sequences.
Profile truth() {
  Profile p;
  p.max_running_seqs = 6;
  p.step_token_budget = 2048;
  p.prefill_tokens_per_s = 8000.0;
  p.step_base_s = 0.004;
  p.decode_seq_s = 0.0015;
  p.decode_ctx_token_s = 2e-7;
  p.prefill_ctx_token_s = 1e-7;  // a 512-token prompt: 13 ms of attention on top of 64 ms
  return p;
}

// Deterministic noise in [-1, 1).
double noise(std::uint64_t& state) {
  state = state * 6364136223846793005ull + 1442695040888963407ull;
  return static_cast<double>(state >> 11) * 0x1.0p-52 - 1.0;
}

// A cell measured from the truth: every event but the last (which frees the closed loop's
// slot: the next send follows it) seen up to jitter_s late, each on its own, kept in order,
// as a client on a loaded host sees them.
ObservedCell measure(std::uint32_t c, std::int64_t in, std::int64_t out, std::size_t n,
                     double jitter_s = 0.0, const Profile& engine = truth()) {
  CellSpec spec;
  spec.concurrency = c;
  for (std::size_t i = 0; i < n; ++i) {
    spec.requests.push_back(CellRequest{in + static_cast<std::int64_t>(i % 5), 0, out});
  }
  ObservedCell cell;
  cell.name = "c" + std::to_string(c) + "-in" + std::to_string(in);
  cell.concurrency = c;
  cell.traces = replay_cell(engine, spec);
  std::uint64_t state = c * 1000u + static_cast<std::uint64_t>(in);
  const auto j = [&] {
    return static_cast<std::int64_t>(std::llround(jitter_s * 1e9 * 0.5 * (noise(state) + 1.0)));
  };
  for (metrics::Trace& t : cell.traces) {
    const std::int64_t last = t.event_times_ns.back();
    metrics::EventTimes jittered;
    for (const std::int64_t e : t.event_times_ns) jittered.push_back(std::min(last, e + j()));
    t.event_times_ns = std::move(jittered);
    t.first_token_ns = t.event_times_ns.front();
    t.first_content_ns = t.first_token_ns;
    t.last_token_ns = t.event_times_ns.back();
    t.done_ns = t.last_token_ns;
  }
  return cell;
}

std::vector<ObservedCell> training(double jitter_s) {
  return {measure(1, 64, 32, 12, jitter_s), measure(1, 512, 32, 12, jitter_s),
          measure(4, 64, 32, 24, jitter_s), measure(4, 512, 32, 24, jitter_s),
          measure(10, 256, 48, 40, jitter_s)};
}

std::vector<ObservedCell> held_out(double jitter_s) {
  return {measure(2, 256, 40, 16, jitter_s), measure(3, 128, 64, 24, jitter_s),
          measure(6, 384, 32, 30, jitter_s), measure(8, 64, 48, 32, jitter_s)};
}

void expect_near_rel(double actual, double expected, double tol, const char* what) {
  EXPECT_NEAR(actual / expected, 1.0, tol) << what << ": " << actual << " vs " << expected;
}

void expect_held_out_within(const Profile& p, double tol, double jitter_s) {
  std::vector<CellComparison> cs;
  for (const ObservedCell& c : held_out(jitter_s)) cs.push_back(compare_cell(p, c));
  for (const Figure f : {Figure::kTtftP50, Figure::kTpotP50, Figure::kOutputTokensPerS}) {
    const auto e = median_abs_error(cs, f);
    ASSERT_TRUE(e.has_value());
    EXPECT_LT(*e, tol) << static_cast<int>(f);
  }
}

// Three held-out cells measured from `engine`, predicted by `fitted` within 3 % (median).
void expect_engine_predicted(const Profile& fitted, const Profile& engine) {
  std::vector<CellComparison> cs;
  for (const ObservedCell& c :
       {measure(2, 256, 40, 16, 0.0, engine), measure(3, 128, 64, 24, 0.0, engine),
        measure(6, 384, 32, 30, 0.0, engine)}) {
    cs.push_back(compare_cell(fitted, c));
  }
  for (const Figure f : {Figure::kTtftP50, Figure::kTpotP50, Figure::kOutputTokensPerS}) {
    const auto e = median_abs_error(cs, f);
    ASSERT_TRUE(e.has_value());
    EXPECT_LT(*e, 0.03) << static_cast<int>(f);
  }
}

TEST(Fit, RecoversItsOwnProfileExactly) {
  const FitResult r = fit_profile(training(0.0), FitOptions{});
  const Profile t = truth();
  EXPECT_EQ(r.attention, Attention::kPerSequence);
  EXPECT_EQ(r.profile.shared_kv_token_s, 0.0);
  expect_near_rel(r.profile.prefill_tokens_per_s, t.prefill_tokens_per_s, 0.03, "prefill");
  expect_near_rel(r.profile.step_base_s, t.step_base_s, 0.03, "base");
  expect_near_rel(r.profile.decode_seq_s, t.decode_seq_s, 0.03, "seq");
  EXPECT_NEAR(r.profile.decode_ctx_token_s, t.decode_ctx_token_s, 0.5e-7);
  expect_near_rel(r.profile.prefill_ctx_token_s, t.prefill_ctx_token_s, 0.2, "prefill ctx");
  EXPECT_TRUE(r.max_running_identified);
  EXPECT_EQ(r.profile.max_running_seqs, 6u);
  EXPECT_LT(r.objective, 1e-3);
  ASSERT_EQ(r.cells.size(), 5u);
  expect_held_out_within(r.profile, 0.02, 0.0);
}

TEST(Fit, RegressionAloneIsCloseWithoutNoise) {
  std::vector<std::vector<ObservedTimes>> times;
  for (const ObservedCell& c : training(0.0)) times.push_back(observed_times(c.traces));
  const StepRegression r = regress_steps(times, 2048);
  ASSERT_TRUE(r.step_base_s && r.decode_seq_s && r.prefill_s_per_token);
  expect_near_rel(*r.step_base_s, 0.004, 0.05, "base");
  expect_near_rel(*r.decode_seq_s, 0.0015, 0.05, "seq");
  expect_near_rel(1.0 / *r.prefill_s_per_token, 8000.0, 0.05, "prefill");
  EXPECT_EQ(r.max_decoding, 6u);
  EXPECT_EQ(r.max_in_flight, 10u);
  EXPECT_GE(r.batch_levels, 3);
  EXPECT_GE(r.prefill_levels, 2);
}

TEST(Fit, ToleratesClientTimingNoise) {
  // Up to 0.5 ms on every event: an eighth of the shortest step.
  const FitResult r = fit_profile(training(0.0005), FitOptions{});
  const Profile t = truth();
  expect_near_rel(r.profile.prefill_tokens_per_s, t.prefill_tokens_per_s, 0.15, "prefill");
  expect_near_rel(r.profile.step_base_s + 4 * r.profile.decode_seq_s,
                  t.step_base_s + 4 * t.decode_seq_s, 0.08, "step at B=4");
  EXPECT_EQ(r.profile.max_running_seqs, 6u);
  expect_held_out_within(r.profile, 0.10, 0.0005);
}

// A llama.cpp-like truth: one KV cache shared by 4 slots, attention charged per batch token for
// every occupied cell (finished requests' cells stay in their slots), nothing per sequence's own
// context.
TEST(Fit, RecoversASharedKvCache) {
  Profile shared = truth();
  shared.max_running_seqs = 4;
  shared.decode_ctx_token_s = 0.0;
  shared.prefill_ctx_token_s = 0.0;
  shared.shared_kv_token_s = 3e-7;
  const std::vector<ObservedCell> train = {
      measure(1, 64, 32, 12, 0.0, shared), measure(1, 512, 32, 12, 0.0, shared),
      measure(4, 64, 32, 24, 0.0, shared), measure(4, 512, 32, 24, 0.0, shared),
      measure(8, 256, 48, 40, 0.0, shared)};
  const FitResult r = fit_profile(train, FitOptions{});  // both structures fitted
  EXPECT_EQ(r.attention, Attention::kSharedCache);
  ASSERT_EQ(r.attention_objectives.size(), 2u);
  EXPECT_LT(r.attention_objectives[1].second, 1e-3);
  EXPECT_GT(r.attention_objectives[0].second, 0.05);
  expect_near_rel(r.profile.shared_kv_token_s, 3e-7, 0.1, "shared kv");
  expect_near_rel(r.profile.step_base_s + 4 * r.profile.decode_seq_s,
                  shared.step_base_s + 4 * shared.decode_seq_s, 0.05, "step at B=4");
  EXPECT_EQ(r.profile.max_running_seqs, 4u);
  expect_engine_predicted(r.profile, shared);
}

// An engine that works 3 ms after each finished request before its next step (llama.cpp's
// final response and slot release on a busy host): the work is found and the held-out cells
// follow; an engine without it is fitted none.
TEST(Fit, RecoversFinishWork) {
  Profile busy = truth();
  busy.finish_s = 0.003;
  const std::vector<ObservedCell> train = {
      measure(1, 64, 32, 12, 0.0, busy), measure(1, 512, 32, 12, 0.0, busy),
      measure(4, 64, 32, 24, 0.0, busy), measure(4, 512, 32, 24, 0.0, busy),
      measure(10, 256, 48, 40, 0.0, busy)};
  FitOptions o;
  o.attention = Attention::kPerSequence;
  const FitResult r = fit_profile(train, o);
  expect_near_rel(r.profile.finish_s, 0.003, 0.15, "finish");
  expect_near_rel(r.initial.finish_s, 0.003, 0.3, "finish (regression)");
  EXPECT_LT(r.objective, 0.02);
  expect_engine_predicted(r.profile, busy);
  EXPECT_EQ(fit_profile(training(0.0), o).profile.finish_s, 0.0);
}

TEST(Fit, SaysWhatOneConcurrencyCannotIdentify) {
  // One request at a time: one decoding sequence in every step, no queue.
  const FitResult r = fit_profile({measure(1, 64, 16, 8)}, FitOptions{});
  EXPECT_FALSE(r.max_running_identified);
  EXPECT_EQ(r.profile.max_running_seqs, Profile{}.max_running_seqs);
  EXPECT_EQ(r.profile.decode_seq_s, 0.0);
  bool seq_note = false;
  bool limit_note = false;
  for (const std::string& n : r.notes) {
    seq_note |= n.rfind("decode_seq_s", 0) == 0;
    limit_note |= n.rfind("max_running_seqs", 0) == 0;
  }
  EXPECT_TRUE(seq_note);
  EXPECT_TRUE(limit_note);
  // What it can see it still gets right: the step time at B = 1.
  expect_near_rel(r.profile.step_base_s, 0.004 + 0.0015, 0.05, "base + seq");
}

TEST(Fit, KeepsTheBaseForWhatItDoesNotFit) {
  FitOptions o;
  o.base.step_token_budget = 4096;
  o.base.model_name = "m";
  o.base.kv_capacity_tokens = 50;  // below the longest request: raised to it
  const FitResult r = fit_profile({measure(1, 64, 8, 4)}, o);
  EXPECT_EQ(r.profile.step_token_budget, 4096);
  EXPECT_EQ(r.profile.model_name, "m");
  EXPECT_EQ(r.profile.kv_capacity_tokens, 67 + 8);  // prompts 64..67 tokens
}

TEST(Fit, RefusesWhatCannotBeFitted) {
  EXPECT_THROW(fit_profile({}, FitOptions{}), std::invalid_argument);
  ObservedCell empty;
  empty.name = "empty";
  empty.concurrency = 1;
  EXPECT_THROW(fit_profile({empty}, FitOptions{}), std::invalid_argument);
  ObservedCell failed = measure(1, 16, 4, 2);
  for (metrics::Trace& t : failed.traces) t.status = metrics::RequestStatus::kError;
  EXPECT_THROW(fit_profile({failed}, FitOptions{}), std::invalid_argument);
  // One token each: no step between two events to time.
  EXPECT_THROW(fit_profile({measure(1, 16, 1, 3)}, FitOptions{}), std::invalid_argument);
}

TEST(Fit, OpenLoopCellsReplayTheirSentTimes) {
  CellSpec spec;
  for (int i = 0; i < 20; ++i) {
    spec.arrivals_s.push_back(0.05 * i);
    spec.requests.push_back(CellRequest{200, 0, 24});
  }
  ObservedCell cell;
  cell.name = "open";
  cell.traces = replay_cell(truth(), spec);
  const CellSpec back = cell_spec(cell);
  EXPECT_FALSE(back.concurrency);
  ASSERT_EQ(back.arrivals_s.size(), 20u);
  EXPECT_NEAR(back.arrivals_s[7], 0.35, 1e-9);
  const CellComparison c = compare_cell(truth(), cell);
  EXPECT_NEAR(*relative_error(c.measured.ttft_p50_s, c.predicted.ttft_p50_s), 0.0, 1e-9);
}

TEST(Fit, MedianAbsoluteError) {
  std::vector<CellComparison> cs(3);
  cs[0].measured.ttft_p50_s = 1.0;
  cs[0].predicted.ttft_p50_s = 1.1;
  cs[1].measured.ttft_p50_s = 1.0;
  cs[1].predicted.ttft_p50_s = 0.7;
  cs[2].measured.ttft_p50_s = 1.0;  // no prediction: not counted
  EXPECT_NEAR(*median_abs_error(cs, Figure::kTtftP50), 0.2, 1e-12);
  EXPECT_FALSE(median_abs_error(cs, Figure::kTpotP50));
}

TEST(Fit, MedianRepeatDifferenceComparesOnlyRunsOfOneCell) {
  const auto m = [](const char* key, double ttft) {
    Measurement x{key, {}};
    x.figures.ttft_p50_s = ttft;
    return x;
  };
  // Cell a measured three times (pairs: +10 %, +20 %, ~+9.1 %), b twice (-50 %), c once:
  // the median of 9.1, 10, 20 and 50 %.
  const std::vector<Measurement> ms = {m("a", 1.0), m("b", 2.0), m("a", 1.1),
                                       m("c", 9.0), m("a", 1.2), m("b", 1.0)};
  EXPECT_NEAR(*median_repeat_difference(ms, Figure::kTtftP50), 0.15, 1e-12);
  EXPECT_FALSE(median_repeat_difference(ms, Figure::kTpotP50));  // no figure
  EXPECT_FALSE(median_repeat_difference({m("a", 1.0), m("b", 1.0)}, Figure::kTtftP50));
}

}  // namespace
}  // namespace dyno::sim
