#include "metrics/summary.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace dyno::metrics {
namespace {

constexpr double kEps = 1e-9;
constexpr std::int64_t kMs = 1'000'000;

/// An ok streamed request: sent, first token, events every `gap_ms` to the last token, done.
Trace streamed(std::int64_t sent_ms, std::int64_t first_ms, std::int64_t last_ms,
               std::int64_t done_ms, std::int64_t out, std::int64_t events) {
  Trace t;
  t.sent_ns = sent_ms * kMs;
  t.first_token_ns = first_ms * kMs;
  t.last_token_ns = last_ms * kMs;
  t.done_ns = done_ms * kMs;
  t.output_tokens = out;
  t.token_count_source = TokenCountSource::kUsage;
  for (std::int64_t i = 0; i < events; ++i) {
    t.event_times_ns.push_back(events == 1
                                   ? t.first_token_ns.value()
                                   : (first_ms + (last_ms - first_ms) * i / (events - 1)) * kMs);
  }
  return t;
}

Trace failed(std::int64_t sent_ms, std::int64_t done_ms, std::string category) {
  Trace t;
  t.status = RequestStatus::kError;
  t.sent_ns = sent_ms * kMs;
  t.done_ns = done_ms * kMs;
  t.error_category = std::move(category);
  return t;
}

bool has_warning(const Summary& s, const std::string& code) {
  for (const Warning& w : s.warnings) {
    if (to_string(w.code) == code) {
      EXPECT_FALSE(w.message.empty());
      EXPECT_FALSE(w.hint.empty());
      return true;
    }
  }
  return false;
}

const Warning* find_warning(const Summary& s, const std::string& code) {
  for (const Warning& w : s.warnings) {
    if (to_string(w.code) == code) return &w;
  }
  return nullptr;
}

TEST(Trace, EnumNames) {
  EXPECT_STREQ(to_string(TokenCountSource::kNone), "none");
  EXPECT_STREQ(to_string(TokenCountSource::kUsage), "usage");
  EXPECT_STREQ(to_string(TokenCountSource::kTokenizer), "tokenizer");
  EXPECT_STREQ(to_string(TokenCountSource::kChunks), "chunks");
  EXPECT_STREQ(to_string(RequestStatus::kOk), "ok");
  EXPECT_STREQ(to_string(RequestStatus::kError), "error");
  EXPECT_STREQ(to_string(RequestStatus::kCancelled), "cancelled");
}

TEST(RequestFigures, EveryFormula) {
  Trace t = streamed(1, 101, 301, 302, 5, 5);  // events at 101, 151, 201, 251, 301 ms
  t.scheduled_ns = 0;
  t.input_tokens = 100;
  const RequestFigures f = request_figures(t);
  EXPECT_NEAR(*f.queue_delay_s, 0.001, kEps);            // sent − scheduled
  EXPECT_NEAR(*f.ttft_s, 0.100, kEps);                   // first_token − sent
  EXPECT_NEAR(*f.ttft_from_schedule_s, 0.101, kEps);     // first_token − scheduled
  EXPECT_NEAR(*f.e2e_s, 0.301, kEps);                    // done − sent
  EXPECT_NEAR(*f.tpot_s, 0.200 / 4, kEps);               // (last − first) / (out − 1)
  EXPECT_NEAR(*f.decode_rate, 4 / 0.200, kEps);          // (out − 1) / (last − first)
  EXPECT_NEAR(*f.prefill_rate_client, 100 / 0.1, kEps);  // input / ttft
  EXPECT_NEAR(*f.tokens_per_event, 1.0, kEps);
  const std::vector<double> gaps = event_gaps_s(t);
  ASSERT_EQ(gaps.size(), 4u);
  for (double g : gaps) EXPECT_NEAR(g, 0.05, kEps);
}

TEST(RequestFigures, MissingInputsGiveNoFigure) {
  const RequestFigures none = request_figures(Trace{});
  EXPECT_FALSE(none.queue_delay_s);
  EXPECT_FALSE(none.ttft_s);
  EXPECT_FALSE(none.ttft_from_schedule_s);
  EXPECT_FALSE(none.e2e_s);
  EXPECT_FALSE(none.tpot_s);
  EXPECT_FALSE(none.decode_rate);
  EXPECT_FALSE(none.prefill_rate_client);
  EXPECT_FALSE(none.tokens_per_event);
  EXPECT_TRUE(event_gaps_s(Trace{}).empty());

  // Closed loop (no schedule): no queue delay, no ttft_from_schedule.
  const RequestFigures closed = request_figures(streamed(0, 10, 20, 20, 3, 3));
  EXPECT_FALSE(closed.queue_delay_s);
  EXPECT_FALSE(closed.ttft_from_schedule_s);
  EXPECT_TRUE(closed.ttft_s);
  EXPECT_FALSE(closed.prefill_rate_client);  // input tokens unknown

  // One output token: no decode step.
  const RequestFigures one = request_figures(streamed(0, 10, 10, 11, 1, 1));
  EXPECT_FALSE(one.tpot_s);
  EXPECT_FALSE(one.decode_rate);
  EXPECT_NEAR(*one.tokens_per_event, 1.0, kEps);

  // Non-streamed: every token at once, decode interval 0.
  const RequestFigures whole = request_figures(streamed(0, 50, 50, 50, 10, 1));
  EXPECT_FALSE(whole.tpot_s);
  EXPECT_FALSE(whole.decode_rate);
  EXPECT_NEAR(*whole.tokens_per_event, 10.0, kEps);

  // ttft 0 gives no prefill rate.
  Trace instant = streamed(5, 5, 9, 9, 3, 3);
  instant.input_tokens = 10;
  EXPECT_FALSE(request_figures(instant).prefill_rate_client);

  // Output count unknown: no tpot, decode rate, tokens per event.
  Trace unknown = streamed(0, 10, 20, 20, 3, 3);
  unknown.output_tokens.reset();
  EXPECT_FALSE(request_figures(unknown).tpot_s);
  EXPECT_FALSE(request_figures(unknown).tokens_per_event);
}

TEST(Slo, EachBound) {
  RequestFigures f;
  f.ttft_s = 0.2;
  f.tpot_s = 0.05;
  f.e2e_s = 1.0;
  EXPECT_TRUE(meets_slo(f, Slo{}));
  EXPECT_TRUE(meets_slo(f, Slo{0.2, std::nullopt, std::nullopt}));  // bound inclusive
  EXPECT_FALSE(meets_slo(f, Slo{0.19, std::nullopt, std::nullopt}));
  EXPECT_TRUE(meets_slo(f, Slo{std::nullopt, 0.05, std::nullopt}));
  EXPECT_FALSE(meets_slo(f, Slo{std::nullopt, 0.04, std::nullopt}));
  EXPECT_TRUE(meets_slo(f, Slo{std::nullopt, std::nullopt, 1.0}));
  EXPECT_FALSE(meets_slo(f, Slo{std::nullopt, std::nullopt, 0.9}));
  EXPECT_FALSE(meets_slo(f, Slo{1.0, 1.0, 0.9}));  // every bound must hold
  f.tpot_s.reset();                                // undefined (one output token): treated as met
  EXPECT_TRUE(meets_slo(f, Slo{std::nullopt, 0.001, std::nullopt}));
}

TEST(UnionLength, ClosedIntervals) {
  EXPECT_EQ(union_length({}), 0.0);
  EXPECT_EQ(union_length({{20, 30}, {0, 10}, {5, 15}}), 25.0);     // [0,15] ∪ [20,30]
  EXPECT_EQ(union_length({{0, 5}, {5, 10}}), 10.0);                // touching
  EXPECT_EQ(union_length({{0, 100}, {10, 20}, {30, 40}}), 100.0);  // nested
  EXPECT_EQ(union_length({{3, 3}}), 0.0);
  EXPECT_EQ(union_length({{10, 0}, {0, 4}}), 4.0);  // b < a is empty
}

/// The reference run (ms): W = [1000, 2000].
///   warm-up  sent 0, done 10000 (excluded)
///   A ok     sent 1000, first 1100, last 1300, done 1300, out 5, in 100, 5 events, usage
///   B ok     sent 1200, first 1250, last 1450, done 1500, out 3, in 50, 2 events, tokenizer
///   F failed sent 1400, done 2000, timeout
///   X cancelled sent 1100 (excluded)
std::vector<Trace> reference_run() {
  Trace warm = streamed(0, 100, 9000, 10000, 50, 50);
  warm.phase = "warmup";
  Trace a = streamed(1000, 1100, 1300, 1300, 5, 5);
  a.input_tokens = 100;
  Trace b = streamed(1200, 1250, 1450, 1500, 3, 2);
  b.input_tokens = 50;
  b.token_count_source = TokenCountSource::kTokenizer;
  Trace x;
  x.status = RequestStatus::kCancelled;
  x.sent_ns = 1100 * kMs;
  x.first_token_ns = 1150 * kMs;
  return {warm, a, b, failed(1400, 2000, "timeout"), x};
}

TEST(SummarizeRun, EventGapsAreEveryGapInMsSummarized) {
  // Enough events for the linear sort, with uneven gaps: the figures are, bit for bit, those
  // of summarize() over every gap converted to ms in any order.
  std::mt19937_64 rng(3);
  std::vector<Trace> traces;
  std::vector<double> all_ms;
  for (int r = 0; r < 20; ++r) {
    Trace t;
    t.index = static_cast<std::uint64_t>(r);
    t.sent_ns = 0;
    t.first_byte_ns = 1000;
    std::int64_t at = 5000;
    std::vector<std::int64_t> times;
    for (int e = 0; e < 300; ++e) {
      times.push_back(at);
      const std::int64_t gap = static_cast<std::int64_t>(rng() % 3'000'000) + (e == 7 ? kMs : 0);
      if (e + 1 < 300) all_ms.push_back(static_cast<double>(gap) / 1e9 * 1e3);
      at += gap;
    }
    t.event_times_ns = metrics::EventTimes(times);
    t.first_token_ns = times.front();
    t.last_token_ns = times.back();
    t.done_ns = times.back() + 10;
    t.output_tokens = 300;
    traces.push_back(std::move(t));
  }
  const Summary s = summarize_run(traces, SummaryOptions{});
  const Distribution expected = summarize(all_ms);
  EXPECT_EQ(s.event_gap_ms.count, expected.count);
  EXPECT_EQ(s.event_gap_ms.mean, expected.mean);
  EXPECT_EQ(s.event_gap_ms.stddev, expected.stddev);
  EXPECT_EQ(s.event_gap_ms.min, expected.min);
  EXPECT_EQ(s.event_gap_ms.p50, expected.p50);
  EXPECT_EQ(s.event_gap_ms.p99, expected.p99);
  EXPECT_EQ(s.event_gap_ms.p999, expected.p999);
  EXPECT_EQ(s.event_gap_ms.max, expected.max);
}

TEST(SummarizeRun, ReferenceRun) {
  const std::vector<Trace> traces = reference_run();
  const Summary s = summarize_run(traces, SummaryOptions{});
  EXPECT_EQ(s.definition_set, "dyno-metrics/v1");
  EXPECT_EQ(s.warmup_requests, 1u);
  EXPECT_EQ(s.requests_ok, 2u);
  EXPECT_EQ(s.requests_failed, 1u);
  EXPECT_EQ(s.requests_total, 3u);
  EXPECT_EQ(s.requests_cancelled, 1u);
  EXPECT_EQ(s.errors_by_category, (std::map<std::string, std::uint64_t>{{"timeout", 1}}));
  EXPECT_NEAR(*s.error_rate, 1.0 / 3.0, kEps);

  EXPECT_NEAR(*s.service_window_s, 1.0, kEps);
  EXPECT_EQ(s.output_tokens_total, 8);
  EXPECT_EQ(s.input_tokens_total, 150);
  EXPECT_NEAR(*s.output_tokens_per_s, 8.0, kEps);
  EXPECT_NEAR(*s.input_tokens_per_s, 150.0, kEps);
  EXPECT_NEAR(*s.requests_per_s, 2.0, kEps);
  // Σ(out − 1) = 4 + 2 over [1100, 1300] ∪ [1250, 1450] = 0.35 s.
  EXPECT_NEAR(*s.decode_tokens_per_s, 6.0 / 0.35, kEps);
  // Σ e2e = 0.3 + 0.3 + 0.6 (the failed request occupied the service too).
  EXPECT_NEAR(*s.achieved_concurrency, 1.2, kEps);
  EXPECT_NEAR(*s.tokens_per_event, 8.0 / 7.0, kEps);
  EXPECT_EQ(s.token_count_sources,
            (std::map<std::string, std::uint64_t>{{"tokenizer", 1}, {"usage", 1}}));
  EXPECT_FALSE(s.goodput_requests);
  EXPECT_FALSE(s.goodput_requests_per_s);

  EXPECT_EQ(s.ttft_ms.count, 2u);
  EXPECT_NEAR(*s.ttft_ms.min, 50.0, kEps);
  EXPECT_NEAR(*s.ttft_ms.max, 100.0, kEps);
  EXPECT_NEAR(*s.ttft_ms.p50, 75.0, kEps);
  EXPECT_EQ(s.e2e_ms.count, 2u);  // ok requests only
  EXPECT_NEAR(*s.e2e_ms.mean, 300.0, kEps);
  EXPECT_NEAR(*s.tpot_ms.min, 50.0, kEps);
  EXPECT_NEAR(*s.tpot_ms.max, 100.0, kEps);
  EXPECT_NEAR(*s.decode_rate_per_user.min, 10.0, kEps);
  EXPECT_NEAR(*s.decode_rate_per_user.max, 20.0, kEps);
  EXPECT_NEAR(*s.prefill_rate_client.min, 1000.0, kEps);  // 100 / 0.1 and 50 / 0.05
  EXPECT_NEAR(*s.prefill_rate_client.max, 1000.0, kEps);
  EXPECT_EQ(s.event_gap_ms.count, 5u);  // 4 of A (50 ms) + 1 of B (200 ms), pooled
  EXPECT_NEAR(*s.event_gap_ms.mean, 400.0 / 5.0, kEps);
  EXPECT_NEAR(*s.event_gap_ms.max, 200.0, kEps);
  EXPECT_NEAR(*s.input_tokens.mean, 75.0, kEps);
  EXPECT_NEAR(*s.output_tokens.mean, 4.0, kEps);
  EXPECT_EQ(s.queue_delay_ms.count, 0u);  // closed loop: no schedule stamps
  EXPECT_FALSE(s.queue_delay_ms.mean);
  EXPECT_FALSE(s.ttft_from_schedule_ms.p50);

  EXPECT_TRUE(has_warning(s, "high_error_rate"));
  EXPECT_FALSE(has_warning(s, "no_completed_requests"));
  EXPECT_FALSE(has_warning(s, "client_saturated"));
  EXPECT_FALSE(has_warning(s, "concurrency_underfilled"));
}

TEST(SummarizeRun, QueueDelayAndScheduleFigures) {
  Trace a = streamed(1010, 1100, 1200, 1200, 2, 2);
  a.scheduled_ns = 1000 * kMs;
  Trace b = streamed(2030, 2050, 2100, 2100, 2, 2);
  b.scheduled_ns = 2000 * kMs;
  const std::vector<Trace> traces = {a, b};
  const Summary s = summarize_run(traces, SummaryOptions{});
  EXPECT_EQ(s.queue_delay_ms.count, 2u);
  EXPECT_NEAR(*s.queue_delay_ms.mean, 20.0, kEps);
  EXPECT_NEAR(*s.ttft_from_schedule_ms.min, 50.0, kEps);
  EXPECT_NEAR(*s.ttft_from_schedule_ms.max, 100.0, kEps);
}

TEST(SummarizeRun, GoodputEachSloKind) {
  const std::vector<Trace> traces = reference_run();  // A: ttft 0.1, tpot 0.05, e2e 0.3
  SummaryOptions o;                                   // B: ttft 0.05, tpot 0.1, e2e 0.3
  o.slo.ttft_s = 0.08;
  Summary s = summarize_run(traces, o);
  EXPECT_EQ(s.goodput_requests, 1u);
  EXPECT_NEAR(*s.goodput_requests_per_s, 1.0, kEps);

  o.slo = Slo{};
  o.slo.tpot_s = 0.06;
  s = summarize_run(traces, o);
  EXPECT_EQ(s.goodput_requests, 1u);

  o.slo = Slo{};
  o.slo.e2e_s = 0.3;
  s = summarize_run(traces, o);
  EXPECT_EQ(s.goodput_requests, 2u);
  EXPECT_NEAR(*s.goodput_requests_per_s, 2.0, kEps);

  o.slo.e2e_s = 0.29;
  s = summarize_run(traces, o);
  EXPECT_EQ(s.goodput_requests, 0u);  // a real zero: the SLO was given
  EXPECT_NEAR(*s.goodput_requests_per_s, 0.0, kEps);

  o.slo = Slo{0.08, 0.06, std::nullopt};  // nobody meets both
  s = summarize_run(traces, o);
  EXPECT_EQ(s.goodput_requests, 0u);
}

TEST(SummarizeRun, ErrorCategoriesAndRate) {
  const std::vector<Trace> traces = {streamed(0, 10, 20, 30, 2, 2), failed(0, 5, "connect"),
                                     failed(1, 6, "connect"), failed(2, 7, "http_status"),
                                     failed(3, 8, "")};
  SummaryOptions o;
  o.high_error_rate = 0.9;
  const Summary s = summarize_run(traces, o);
  EXPECT_EQ(s.errors_by_category, (std::map<std::string, std::uint64_t>{
                                      {"connect", 2}, {"http_status", 1}, {"unknown", 1}}));
  EXPECT_NEAR(*s.error_rate, 0.8, kEps);
  EXPECT_FALSE(has_warning(s, "high_error_rate"));  // 0.8 <= 0.9
}

/// What the servers said, counted: the most frequent (category, message) pairs first, ties by
/// category then message, at most kMaxErrorMessages named, the rest counted together.
TEST(SummarizeRun, ErrorsByMessageMostFrequentFirst) {
  std::vector<Trace> traces;
  const auto add = [&](const char* category, const std::string& message, int n) {
    for (int i = 0; i < n; ++i) {
      Trace t = failed(i, i + 1, category);
      t.error_message = message;
      traces.push_back(t);
    }
  };
  add("server_error", "server_error: out of KV cache", 3);
  add("connect", "refused", 3);
  add("unfinished", "no finish reason", 5);
  for (int m = 0; m < 12; ++m) add("http_status", "429 slow down " + std::to_string(m), 1);
  const Summary s = summarize_run(traces, {});
  ASSERT_EQ(s.errors_by_message.size(), kMaxErrorMessages);
  EXPECT_EQ(s.errors_by_message[0].category, "unfinished");
  EXPECT_EQ(s.errors_by_message[0].count, 5u);
  EXPECT_EQ(s.errors_by_message[1].category, "connect");  // 3 each: by category
  EXPECT_EQ(s.errors_by_message[2].message, "server_error: out of KV cache");
  EXPECT_EQ(s.errors_by_message[3].message, "429 slow down 0");
  // 12 distinct single messages: 7 named, 5 counted together.
  EXPECT_EQ(s.errors_other_messages, 5u);
  std::uint64_t named = 0;
  for (const auto& m : s.errors_by_message) named += m.count;
  EXPECT_EQ(named + s.errors_other_messages, s.requests_failed);
}

/// A partial sum of input counts is no total: unknown, never a number that looks like one.
TEST(SummarizeRun, InputTotalIsUnknownWhenACompletedRequestHasNoCount) {
  Trace a = streamed(0, 10, 20, 30, 2, 2);
  a.input_tokens = 100;
  Trace b = streamed(0, 12, 22, 32, 2, 2);
  Summary s = summarize_run(std::vector<Trace>{a, b}, {});
  EXPECT_FALSE(s.input_tokens_complete);
  EXPECT_FALSE(s.input_tokens_per_s.has_value());
  b.input_tokens = 50;
  s = summarize_run(std::vector<Trace>{a, b}, {});
  EXPECT_TRUE(s.input_tokens_complete);
  EXPECT_EQ(s.input_tokens_total, 150);
  EXPECT_TRUE(s.input_tokens_per_s.has_value());
}

TEST(SummarizeRun, WarmupAndCancelledAreExcluded) {
  std::vector<Trace> traces = reference_run();
  std::vector<Trace> only_measured;
  for (const Trace& t : traces) {
    if (t.measured() && t.status != RequestStatus::kCancelled) only_measured.push_back(t);
  }
  const Summary all = summarize_run(traces, {});
  const Summary measured = summarize_run(only_measured, {});
  EXPECT_EQ(all.service_window_s, measured.service_window_s);
  EXPECT_EQ(all.output_tokens_total, measured.output_tokens_total);
  EXPECT_EQ(all.ttft_ms.count, measured.ttft_ms.count);
  EXPECT_EQ(all.achieved_concurrency, measured.achieved_concurrency);
  EXPECT_EQ(all.requests_total, measured.requests_total);
  EXPECT_EQ(measured.warmup_requests, 0u);
  EXPECT_EQ(measured.requests_cancelled, 0u);
}

TEST(SummarizeRun, NoDataMeansNoFigures) {
  const Summary s = summarize_run({}, {});
  EXPECT_EQ(s.requests_total, 0u);
  EXPECT_FALSE(s.error_rate);
  EXPECT_FALSE(s.service_window_s);
  EXPECT_FALSE(s.output_tokens_per_s);
  EXPECT_FALSE(s.input_tokens_per_s);
  EXPECT_FALSE(s.requests_per_s);
  EXPECT_FALSE(s.decode_tokens_per_s);
  EXPECT_FALSE(s.achieved_concurrency);
  EXPECT_FALSE(s.tokens_per_event);
  EXPECT_FALSE(s.client_cpu_s);
  EXPECT_EQ(s.ttft_ms.count, 0u);
  EXPECT_FALSE(s.ttft_ms.p50);
  EXPECT_EQ(s.client_loop_lag_ms.count, 0u);
  EXPECT_TRUE(has_warning(s, "no_completed_requests"));
  EXPECT_FALSE(has_warning(s, "high_error_rate"));

  // Completed, but without token counts or streaming: token rates stay absent.
  Trace t;
  t.sent_ns = 0;
  t.done_ns = 100 * kMs;
  const std::vector<Trace> bare = {t};
  const Summary b = summarize_run(bare, {});
  EXPECT_NEAR(*b.requests_per_s, 10.0, kEps);
  EXPECT_FALSE(b.output_tokens_per_s);
  EXPECT_FALSE(b.input_tokens_per_s);
  EXPECT_FALSE(b.decode_tokens_per_s);
  EXPECT_FALSE(b.tokens_per_event);
  EXPECT_EQ(b.token_count_sources, (std::map<std::string, std::uint64_t>{{"none", 1}}));

  // Non-streamed responses: no decode figures.
  const std::vector<Trace> whole = {streamed(0, 50, 50, 50, 10, 1)};
  const Summary w = summarize_run(whole, {});
  EXPECT_FALSE(w.decode_tokens_per_s);
  EXPECT_EQ(w.tpot_ms.count, 0u);
  EXPECT_NEAR(*w.output_tokens_per_s, 200.0, kEps);
}

TEST(SummarizeRun, AccuracyOverScoredEndedRequests) {
  const auto scored = [](Trace t, std::optional<bool> correct) {
    t.correct = correct;
    t.scorer = correct ? "exact" : "";
    return t;
  };
  Trace warmup = scored(streamed(0, 10, 20, 21, 3, 3), true);
  warmup.phase = "warmup";
  Trace cancelled = scored(streamed(0, 10, 20, 21, 3, 3), true);
  cancelled.status = RequestStatus::kCancelled;
  const std::vector<Trace> traces = {
      warmup,                                               // excluded
      cancelled,                                            // excluded
      scored(streamed(0, 10, 20, 21, 3, 3), true),          // correct
      scored(streamed(5, 15, 25, 26, 3, 3), true),          // correct
      scored(streamed(5, 15, 25, 26, 3, 3), false),         // incorrect
      scored(streamed(5, 15, 25, 26, 3, 3), std::nullopt),  // not scored
      scored(failed(6, 7, "timeout"), false),               // scored, incorrect
      scored(failed(6, 7, "timeout"), true),                // failed: incorrect regardless
      scored(failed(6, 7, "connect"), std::nullopt),        // not scored
  };
  const Summary s = summarize_run(traces, {});
  EXPECT_EQ(s.scored_requests, 5u);
  EXPECT_EQ(s.correct_requests, 2u);
  EXPECT_NEAR(*s.accuracy, 0.4, kEps);

  // Nothing scored: every quality figure is absent (not 0).
  const std::vector<Trace> unscored = {streamed(0, 10, 20, 21, 3, 3), failed(6, 7, "timeout")};
  const Summary u = summarize_run(unscored, {});
  EXPECT_FALSE(u.scored_requests);
  EXPECT_FALSE(u.correct_requests);
  EXPECT_FALSE(u.accuracy);
  const std::vector<Trace> only_warmup = {warmup, cancelled};
  EXPECT_FALSE(summarize_run(only_warmup, {}).accuracy);

  // Every scored request wrong: accuracy 0, present.
  const std::vector<Trace> wrong = {scored(streamed(0, 10, 20, 21, 3, 3), false)};
  const Summary z = summarize_run(wrong, {});
  EXPECT_EQ(z.scored_requests, 1u);
  EXPECT_EQ(z.correct_requests, 0u);
  EXPECT_EQ(z.accuracy, 0.0);
}

TEST(SummarizeRun, ClientCostCopied) {
  SummaryOptions o;
  o.client.cpu_s = 1.5;
  o.client.peak_rss_bytes = 1e8;
  o.client.loop_lag_s = {0.001, 0.002};
  const std::vector<Trace> traces = {streamed(0, 10, 20, 30, 2, 2)};
  const Summary s = summarize_run(traces, o);
  EXPECT_EQ(s.client_cpu_s, 1.5);
  EXPECT_EQ(s.client_peak_rss_bytes, 1e8);
  EXPECT_EQ(s.client_loop_lag_ms.count, 2u);
  EXPECT_NEAR(*s.client_loop_lag_ms.max, 2.0, kEps);
  EXPECT_FALSE(has_warning(s, "client_saturated"));
}

TEST(Warnings, NoCompletedRequests) {
  const std::vector<Trace> traces = {failed(0, 10, "connect")};
  const Summary s = summarize_run(traces, {});
  EXPECT_TRUE(has_warning(s, "no_completed_requests"));
  EXPECT_TRUE(has_warning(s, "high_error_rate"));
  EXPECT_NE(find_warning(s, "high_error_rate")->message.find("100.0 %"), std::string::npos);
  EXPECT_NE(find_warning(s, "high_error_rate")->message.find("connect: 1"), std::string::npos);
}

TEST(Warnings, ConcurrencyUnderfilled) {
  const std::vector<Trace> traces = reference_run();  // achieved 1.2
  SummaryOptions o;
  o.declared_concurrency = 2.0;  // 1.2 < 1.8
  Summary s = summarize_run(traces, o);
  ASSERT_TRUE(has_warning(s, "concurrency_underfilled"));
  const Warning* w = find_warning(s, "concurrency_underfilled");
  EXPECT_NE(w->message.find("1.2"), std::string::npos);
  EXPECT_NE(w->hint.find("--requests"), std::string::npos);
  o.declared_concurrency = 1.3;  // 1.2 >= 1.17
  s = summarize_run(traces, o);
  EXPECT_FALSE(has_warning(s, "concurrency_underfilled"));
}

TEST(Warnings, HighErrorRateThreshold) {
  const std::vector<Trace> traces = reference_run();  // 1/3
  SummaryOptions o;
  o.high_error_rate = 0.3;
  EXPECT_TRUE(has_warning(summarize_run(traces, o), "high_error_rate"));
  o.high_error_rate = 0.34;
  EXPECT_FALSE(has_warning(summarize_run(traces, o), "high_error_rate"));
}

TEST(Warnings, ClientSaturatedByLoopLag) {
  const std::vector<Trace> traces = {streamed(0, 10, 20, 30, 2, 2)};
  SummaryOptions o;
  o.client.loop_lag_s = {0.001, 0.001, 0.001, 0.020};  // p99 = 19.43 ms
  Summary s = summarize_run(traces, o);
  ASSERT_TRUE(has_warning(s, "client_saturated"));
  EXPECT_NE(find_warning(s, "client_saturated")->message.find("event-loop lag"), std::string::npos);
  EXPECT_NE(find_warning(s, "client_saturated")->hint.find("client_cpu_s"), std::string::npos);
  o.client.loop_lag_s = {0.001, 0.004, 0.005};  // p99 <= 5 ms
  EXPECT_FALSE(has_warning(summarize_run(traces, o), "client_saturated"));
}

std::vector<Trace> open_loop_run(const std::vector<std::int64_t>& delays_ms) {
  std::vector<Trace> traces;
  std::int64_t at = 0;
  for (std::int64_t d : delays_ms) {
    Trace t = streamed(at + d, at + d + 10, at + d + 20, at + d + 20, 2, 2);
    t.scheduled_ns = at * kMs;
    traces.push_back(t);
    at += 100;
  }
  return traces;
}

TEST(Warnings, ClientSaturatedByQueueDelay) {
  SummaryOptions o;
  o.open_loop = true;
  // p99 of {0, 0, 0, 30} ms = 29.1 ms > 10 ms; growth of the quarters: 0 → 30 ms too.
  std::vector<Trace> traces = open_loop_run({0, 0, 0, 30});
  ASSERT_TRUE(has_warning(summarize_run(traces, o), "client_saturated"));
  EXPECT_NE(
      find_warning(summarize_run(traces, o), "client_saturated")->message.find("queue delay p99"),
      std::string::npos);
  // Closed loop: queue delay is slot wait, not client distortion.
  o.open_loop = false;
  EXPECT_FALSE(has_warning(summarize_run(traces, o), "client_saturated"));

  // Small and flat: no warning.
  o.open_loop = true;
  traces = open_loop_run({2, 1, 3, 2, 1, 2, 3, 2});
  EXPECT_FALSE(has_warning(summarize_run(traces, o), "client_saturated"));
}

TEST(Warnings, ClientSaturatedByQueueGrowth) {
  SummaryOptions o;
  o.open_loop = true;
  // p99 = 8 ms (under 10) but the last quarter's mean (8) exceeds the first's (0) by 8 > 5 ms.
  const std::vector<Trace> traces = open_loop_run({0, 0, 1, 1, 2, 2, 8, 8});
  const Summary s = summarize_run(traces, o);
  ASSERT_TRUE(has_warning(s, "client_saturated"));
  const std::string& msg = find_warning(s, "client_saturated")->message;
  EXPECT_NE(msg.find("grew"), std::string::npos);
  EXPECT_EQ(msg.find("queue delay p99"), std::string::npos);
  // Growth of 4 ms is tolerated.
  const std::vector<Trace> mild = open_loop_run({0, 0, 1, 1, 2, 2, 4, 4});
  EXPECT_FALSE(has_warning(summarize_run(mild, o), "client_saturated"));
}

TEST(Warnings, InputLengthDiffersGivesBothNumbersAndPointsToStreamMake) {
  std::vector<Trace> traces;
  for (std::int64_t i = 0; i < 4; ++i) {
    traces.push_back(streamed(0, 10, 50, 55, 8, 8));
    traces.back().input_tokens = 280 + i * 4;  // mean 286
  }
  SummaryOptions o;
  o.requested_input_tokens = 256;
  const Summary off = summarize_run(traces, o);
  const Warning* w = find_warning(off, "input_length_differs");
  ASSERT_NE(w, nullptr);
  EXPECT_NE(w->message.find("256 tokens"), std::string::npos) << w->message;
  EXPECT_NE(w->message.find("286.0"), std::string::npos) << w->message;
  EXPECT_NE(w->message.find("+11.7 %"), std::string::npos) << w->message;
  EXPECT_NE(w->hint.find("dyno stream make"), std::string::npos) << w->hint;
  o.requested_input_tokens = 280;  // 2.1 % off: within 5 %
  EXPECT_EQ(find_warning(summarize_run(traces, o), "input_length_differs"), nullptr);
  o.requested_input_tokens.reset();  // a --stream or exact prompts: nothing asked
  EXPECT_EQ(find_warning(summarize_run(traces, o), "input_length_differs"), nullptr);
}

}  // namespace
}  // namespace dyno::metrics

// Every warning code has its name, reads back from it, and is in docs/metrics.md's table.
TEST(Warnings, EveryCodeIsNamedAndDocumented) {
  std::ifstream in(std::string(DYNO_SOURCE_DIR) + "/docs/metrics.md");
  ASSERT_TRUE(in.good());
  const std::string docs((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::set<std::string> names;
  for (const dyno::metrics::WarningCode c : dyno::metrics::kWarningCodes) {
    const std::string name = dyno::metrics::to_string(c);
    EXPECT_NE(name, "unknown");
    EXPECT_TRUE(names.insert(name).second) << name << " twice";
    EXPECT_EQ(dyno::metrics::warning_code_from(name), c) << name;
    EXPECT_NE(docs.find("| `" + name + "` |"), std::string::npos)
        << name << " is not in docs/metrics.md's Warnings table";
  }
  EXPECT_FALSE(dyno::metrics::warning_code_from("engine_said"));
}
