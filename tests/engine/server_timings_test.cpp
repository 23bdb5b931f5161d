#include "engine/server_timings.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>
#include <vector>

namespace dyno::engine {
namespace {

namespace json = boost::json;

metrics::Trace ok_trace(std::string timings, std::string phase = "measured") {
  metrics::Trace t;
  t.phase = std::move(phase);
  t.server_timings_json = std::move(timings);
  return t;
}

TEST(ServerTimings, NoTimingsGiveAReasonNotZeros) {
  std::vector<metrics::Trace> traces{ok_trace(""), ok_trace("")};
  engine::ServerTimingFigures f = engine::server_timing_figures(traces);
  EXPECT_EQ(f.with_timings, 0u);
  EXPECT_EQ(f.without_timings, 2u);
  EXPECT_NE(f.reason.find("timings"), std::string::npos);
  const json::object o = engine::server_timings_json(f);
  EXPECT_EQ(o.at("requests_with_timings").as_uint64(), 0u);
  EXPECT_EQ(o.at("requests_without_timings").as_uint64(), 2u);
  EXPECT_TRUE(o.contains("reason"));
  EXPECT_FALSE(o.contains("prefill_rate"));
  EXPECT_FALSE(o.contains("prefill_tokens_per_s"));
  EXPECT_FALSE(o.contains("spec_decode_acceptance_rate"));

  f = engine::server_timing_figures({});
  EXPECT_EQ(f.reason, "no measured request completed");
}

std::vector<std::string> codes(const std::vector<metrics::Caveat>& caveats) {
  std::vector<std::string> out;
  for (const auto& c : caveats) out.push_back(c.code);
  return out;
}

TEST(ServerTimings, TimingCaveatsSayWhatAppliesWithTheRunsNumbers) {
  // No timings, no cache, one token an event: nothing to say.
  std::vector<metrics::Trace> plain{ok_trace(""), ok_trace("")};
  for (auto& t : plain) t.input_tokens = 100;
  EXPECT_TRUE(timing_caveats(plain, server_timing_figures(plain), 1.0).empty());
  // Usage cached_tokens (no timings) and 2.5 tokens an event.
  std::vector<metrics::Trace> cached = plain;
  cached[0].cached_input_tokens = 60;
  const std::vector<metrics::Caveat> c = timing_caveats(cached, server_timing_figures(cached), 2.5);
  EXPECT_EQ(codes(c), (std::vector<std::string>{"prompt_cache", "tokens_per_event"}));
  const std::string text = c[0].text;
  EXPECT_NE(text.find("60 of 200 prompt tokens"), std::string::npos) << text;
  EXPECT_NE(text.find("usage cached_tokens"), std::string::npos) << text;
  EXPECT_NE(c[1].text.find("2.5 tokens"), std::string::npos);
  // Warm-up requests do not count.
  cached[0].phase = "warmup";
  EXPECT_TRUE(timing_caveats(cached, server_timing_figures(cached), 1.0).empty());
  // Timings from the engine: its boundaries, and its cache_n as the source.
  std::vector<metrics::Trace> timed{
      ok_trace(R"({"prompt_n":40,"prompt_ms":10,"cache_n":60,"predicted_n":5,"predicted_ms":20})")};
  timed[0].input_tokens = 100;
  const std::vector<metrics::Caveat> t = timing_caveats(timed, server_timing_figures(timed), 1.0);
  EXPECT_EQ(codes(t), (std::vector<std::string>{"engine_timer_boundaries", "prompt_cache"}));
  EXPECT_NE(t[1].text.find("(response timings)"), std::string::npos);
}

TEST(ServerTimings, RatesTokensAndDrafts) {
  std::vector<metrics::Trace> traces{
      // 100 computed + 28 cached prompt tokens in 50 ms -> 2000 tok/s prefill;
      // 11 output tokens, first to last in 100 ms -> 10 decode intervals -> 100 tok/s.
      ok_trace(R"({"cache_n":28,"prompt_n":100,"prompt_ms":50.0,"predicted_n":11,)"
               R"("predicted_ms":100.0,"predicted_per_second":110.0,"draft_n":9,)"
               R"("draft_n_accepted":6})"),
      // 300 tokens in 100 ms -> 3000 tok/s; 5 tokens in 20 ms -> 200 tok/s.
      ok_trace(R"({"cache_n":0,"prompt_n":300,"prompt_ms":100.0,"predicted_n":5,)"
               R"("predicted_ms":20.0,"draft_n":3,"draft_n_accepted":0})"),
      // One output token: no decode rate; prompt time 0 (zero-delay engine): no prefill rate,
      // but the prompt time counts.
      ok_trace(R"({"cache_n":0,"prompt_n":7,"prompt_ms":0.0,"predicted_n":1,"predicted_ms":0.0})"),
      // No timings at all.
      ok_trace(""),
      // Unparseable timings count as none.
      ok_trace("{not json"),
      // Warm-up responses are left out, with or without timings.
      ok_trace(R"({"cache_n":1000,"prompt_n":1,"prompt_ms":1.0,"predicted_n":2,)"
               R"("predicted_ms":1.0,"draft_n":100,"draft_n_accepted":100})",
               "warmup"),
  };
  // A failed request with timings is left out too.
  metrics::Trace failed = ok_trace(R"({"prompt_n":5,"prompt_ms":1.0})");
  failed.status = metrics::RequestStatus::kError;
  traces.push_back(failed);

  const engine::ServerTimingFigures f = engine::server_timing_figures(traces);
  EXPECT_EQ(f.with_timings, 3u);
  EXPECT_EQ(f.without_timings, 2u);
  EXPECT_EQ(f.reason, "");
  EXPECT_EQ(f.prompt_tokens_computed, 407);
  EXPECT_EQ(f.prompt_tokens_cached, 28);
  EXPECT_DOUBLE_EQ(*f.prompt_cached_fraction, 28.0 / 435.0);
  EXPECT_EQ(f.predicted_tokens, 17);
  EXPECT_EQ(f.prompt_ms.count, 3u);
  EXPECT_DOUBLE_EQ(*f.prompt_ms.max, 100.0);
  ASSERT_EQ(f.prefill_rate.count, 2u);
  EXPECT_DOUBLE_EQ(*f.prefill_rate.min, 2000.0);
  EXPECT_DOUBLE_EQ(*f.prefill_rate.max, 3000.0);
  // The run's engine-timed prefill rate weighs each prompt by its time: (100 + 300) tokens over
  // (50 + 100) ms, not the mean of the two rates (2500); the 0 ms prompt adds nothing.
  ASSERT_TRUE(f.prefill_tokens_per_s);
  EXPECT_DOUBLE_EQ(*f.prefill_tokens_per_s, 400.0 / 0.150);
  // (predicted_n − 1) / predicted_ms, not llama.cpp's predicted_per_second (110 here).
  ASSERT_EQ(f.decode_rate_per_user.count, 2u);
  EXPECT_DOUBLE_EQ(*f.decode_rate_per_user.min, 100.0);
  EXPECT_DOUBLE_EQ(*f.decode_rate_per_user.max, 200.0);
  EXPECT_EQ(f.draft_tokens, 12);
  EXPECT_EQ(f.draft_tokens_accepted, 6);
  EXPECT_DOUBLE_EQ(*f.acceptance_rate, 0.5);

  const json::object o = engine::server_timings_json(f);
  EXPECT_EQ(o.at("source").as_string(), "response timings");
  EXPECT_EQ(o.at("requests_with_timings").as_uint64(), 3u);
  EXPECT_EQ(o.at("prompt_tokens_computed").as_int64(), 407);
  EXPECT_EQ(o.at("prompt_tokens_cached").as_int64(), 28);
  EXPECT_EQ(o.at("predicted_tokens").as_int64(), 17);
  EXPECT_EQ(o.at("draft_tokens").as_int64(), 12);
  EXPECT_EQ(o.at("draft_tokens_accepted").as_int64(), 6);
  EXPECT_DOUBLE_EQ(o.at("spec_decode_acceptance_rate").as_double(), 0.5);
  EXPECT_DOUBLE_EQ(o.at("prefill_rate").at("p50").as_double(), 2500.0);
  EXPECT_DOUBLE_EQ(o.at("prefill_tokens_per_s").as_double(), 400.0 / 0.150);
  EXPECT_EQ(o.at("decode_rate_per_user").at("count").as_uint64(), 2u);
  EXPECT_FALSE(o.contains("reason"));
}

TEST(ServerTimings, FieldsAnEngineDoesNotReportStayNull) {
  // An older llama.cpp: no cache_n, no speculative decoding.
  std::vector<metrics::Trace> traces{
      ok_trace(R"({"prompt_n":13,"prompt_ms":4.5,"predicted_n":4,"predicted_ms":6.0})")};
  const engine::ServerTimingFigures f = engine::server_timing_figures(traces);
  EXPECT_EQ(f.with_timings, 1u);
  EXPECT_FALSE(f.prompt_tokens_cached);
  EXPECT_FALSE(f.prompt_cached_fraction);
  EXPECT_FALSE(f.draft_tokens);
  EXPECT_FALSE(f.acceptance_rate);
  const json::object o = engine::server_timings_json(f);
  EXPECT_TRUE(o.at("prompt_tokens_cached").is_null());
  EXPECT_TRUE(o.at("draft_tokens").is_null());
  EXPECT_TRUE(o.at("spec_decode_acceptance_rate").is_null());
  EXPECT_DOUBLE_EQ(o.at("decode_rate_per_user").at("mean").as_double(), 500.0);  // 3 / 6 ms
}

TEST(ServerTimings, NoPromptTimeNoEngineTimedPrefillRate) {
  // Prompts the engine timed at 0 ms (a zero-delay engine) give no rate: null, never infinite.
  std::vector<metrics::Trace> traces{
      ok_trace(R"({"prompt_n":13,"prompt_ms":0.0,"predicted_n":4,"predicted_ms":6.0})")};
  const engine::ServerTimingFigures f = engine::server_timing_figures(traces);
  EXPECT_FALSE(f.prefill_tokens_per_s);
  EXPECT_TRUE(engine::server_timings_json(f).at("prefill_tokens_per_s").is_null());
}

}  // namespace
}  // namespace dyno::engine

namespace dyno::engine {
namespace {

TEST(ServerTimings, ComputedAndCachedPromptTokensFromPromptN) {
  // llama.cpp reports prompt_n (computed) and no cache_n: cached = usage prompt − prompt_n.
  metrics::Trace t = ok_trace(R"({"prompt_n":40,"prompt_ms":10.0,"predicted_n":4})");
  t.input_tokens = 100;
  EXPECT_EQ(computed_prompt_tokens(t), 40);
  const std::vector<metrics::Trace> traces{t};
  const engine::ServerTimingFigures f = engine::server_timing_figures(traces);
  EXPECT_EQ(f.prompt_tokens_computed, 40);
  ASSERT_TRUE(f.prompt_tokens_cached);
  EXPECT_EQ(*f.prompt_tokens_cached, 60);
  ASSERT_TRUE(f.prompt_cached_fraction);
  EXPECT_DOUBLE_EQ(*f.prompt_cached_fraction, 0.6);

  // Without timings: usage prompt − usage cached; neither: unknown.
  metrics::Trace u = ok_trace("");
  u.input_tokens = 100;
  u.cached_input_tokens = 30;
  EXPECT_EQ(computed_prompt_tokens(u), 70);
  u.cached_input_tokens.reset();
  EXPECT_EQ(computed_prompt_tokens(u), std::nullopt);
}

TEST(ServerTimings, WarnsWhenTtftIsFarAboveTheEnginesPromptTime) {
  const auto trace = [](double ttft_ms, double prompt_ms) {
    metrics::Trace t = ok_trace(R"({"prompt_n":10,"prompt_ms":)" + std::to_string(prompt_ms) +
                                R"(,"predicted_n":2})");
    t.sent_ns = 0;
    t.first_token_ns = static_cast<std::int64_t>(ttft_ms * 1e6);
    return t;
  };
  // A few ms outside the engine's prefill: no warning.
  std::vector<metrics::Trace> fine{trace(12, 8), trace(13, 9), trace(11, 8)};
  engine::ServerTimingFigures f = engine::server_timing_figures(fine);
  ASSERT_TRUE(f.ttft_minus_prompt_ms.p50);
  EXPECT_NEAR(*f.ttft_minus_prompt_ms.p50, 4.0, 1e-6);
  EXPECT_FALSE(engine::prefill_gap_warning(f));
  // Requests that queued 5 s behind idle connections: warned, with both numbers.
  std::vector<metrics::Trace> queued{trace(5010, 8), trace(5012, 9), trace(5011, 8)};
  f = engine::server_timing_figures(queued);
  const auto w = engine::prefill_gap_warning(f);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->code, metrics::WarningCode::kTtftFarAboveServerPrefill);
  EXPECT_NE(w->message.find("8.0 ms"), std::string::npos) << w->message;
  EXPECT_NE(w->message.find("5003.0 ms"), std::string::npos) << w->message;
  // A long prefill that TTFT follows closely: no warning either.
  std::vector<metrics::Trace> long_prefill{trace(2100, 1900)};
  EXPECT_FALSE(engine::prefill_gap_warning(engine::server_timing_figures(long_prefill)));
}

}  // namespace
}  // namespace dyno::engine
