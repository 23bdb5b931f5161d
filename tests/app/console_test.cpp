#include "app/console.h"

#include <gtest/gtest.h>

#include "golden.h"

namespace {

dyno::metrics::Summary fixed_summary() {
  dyno::metrics::Summary s;
  s.requests_total = 100;
  s.requests_ok = 98;
  s.requests_failed = 2;
  s.warmup_requests = 5;
  s.errors_by_category = {{"http_status", 1}, {"timeout", 1}};
  s.error_rate = 0.02;
  s.service_window_s = 12.3456;
  s.input_tokens_total = 25088;
  s.output_tokens_total = 12544;
  s.token_count_sources = {{"usage", 98}};
  s.output_tokens_per_s = 1016.07;
  s.input_tokens_per_s = 2032.1;
  s.requests_per_s = 7.94;
  s.decode_tokens_per_s = 1100.5;
  s.achieved_concurrency = 7.91;
  s.goodput_requests_per_s = 7.5;
  s.goodput_requests = 93;
  s.tokens_per_event = 1.0;
  auto d = [](double base) {
    dyno::metrics::Distribution x;
    x.count = 98;
    x.mean = base;
    x.stddev = base / 10;
    x.min = base / 2;
    x.p50 = base;
    x.p90 = base * 1.2;
    x.p95 = base * 1.3;
    x.p99 = base * 1.5;
    x.p999 = base * 1.6;
    x.max = base * 1.7;
    x.jitter = base * 0.3;
    return x;
  };
  s.ttft_ms = d(45.5);
  s.ttft_from_schedule_ms = d(45.6);
  s.tpot_ms = d(6.4);
  s.event_gap_ms = d(6.3);
  s.e2e_ms = d(860.0);
  s.queue_delay_ms = d(0.012);
  s.decode_rate_per_user = d(156.2);
  s.prefill_rate_client = d(5600.0);
  s.client_cpu_s = 0.42;
  s.client_peak_rss_bytes = 24.0 * 1024 * 1024;
  s.client_loop_lag_ms = d(0.05);
  s.warnings.push_back({dyno::metrics::WarningCode::kHighErrorRate,
                        "2 of 100 requests failed (2.0 %)", "look at errors_by_category"});
  return s;
}

TEST(Console, SummaryTableMatchesGolden) {
  dyno::app::RunHeadline h;
  h.run_id = "20261129T220000Z-abc123";
  h.engine = "dyno-sim (embedded, profile small-gpu)";
  h.model = "dyno-sim";
  h.api = "chat, streamed";
  h.load = "closed loop, concurrency 8, 100 requests, warm-up 5";
  h.status = "partial";
  h.record_dir = "runs/20261129T220000Z-abc123";
  h.slo_text = "ttft=100ms";
  dyno::testing::expect_golden("tests/app/golden/summary_table.txt",
                               dyno::app::render_summary(h, fixed_summary(), false));
}

TEST(Console, ServerFiguresSitUnderTheClientsRows) {
  dyno::app::RunHeadline h;
  h.run_id = "20261129T220000Z-def456";
  h.engine = "http://127.0.0.1:8080/v1";
  h.model = "qwen";
  h.api = "chat, streamed";
  h.load = "closed loop, concurrency 8, 100 requests, warm-up 5";
  h.status = "partial";
  h.record_dir = "runs/20261129T220000Z-def456";
  h.slo_text = "ttft=100ms";
  dyno::engine::ServerTimingFigures f;
  f.with_timings = 97;
  f.without_timings = 1;
  f.prompt_tokens_computed = 20000;
  f.prompt_tokens_cached = 5088;
  f.predicted_tokens = 12416;
  auto d = [](double base) {
    dyno::metrics::Distribution x;
    x.count = 97;
    x.mean = base;
    x.p50 = base;
    x.p90 = base * 1.1;
    x.p99 = base * 1.2;
    x.max = base * 1.3;
    x.jitter = base * 0.15;
    return x;
  };
  f.prompt_ms = d(30.25);
  f.decode_rate_per_user = d(160.4);
  f.prefill_rate = d(8200.0);
  f.draft_tokens = 9000;
  f.draft_tokens_accepted = 4600;
  f.acceptance_rate = 4600.0 / 9000.0;
  h.server_timings = f;
  h.metrics_acceptance_rate = 0.513;
  dyno::testing::expect_golden("tests/app/golden/summary_table_server.txt",
                               dyno::app::render_summary(h, fixed_summary(), false));

  // No response had timings: no server rows; the /metrics rate alone still shows.
  h.server_timings = dyno::engine::ServerTimingFigures{};
  const std::string text = dyno::app::render_summary(h, fixed_summary(), false);
  EXPECT_EQ(text.find("(server)"), std::string::npos);
  EXPECT_EQ(text.find("server      "), std::string::npos);
  EXPECT_NE(text.find("speculative acceptance 51.3 % (/metrics)\n"), std::string::npos) << text;
}

TEST(Console, WarningsCarryTheirHint) {
  const std::string text = dyno::app::render_warnings(fixed_summary().warnings, false);
  EXPECT_EQ(text,
            "warning[high_error_rate]: 2 of 100 requests failed (2.0 %)\n"
            "  hint: look at errors_by_category\n");
}

TEST(Console, AbsentFiguresPrintAsNa) {
  EXPECT_EQ(dyno::app::fmt(std::nullopt, 2), "n/a");
  EXPECT_EQ(dyno::app::fmt(1.23456, 2), "1.23");
  dyno::metrics::Summary empty;
  const std::string text = dyno::app::render_summary({}, empty, false);
  EXPECT_NE(text.find("n/a"), std::string::npos);
  EXPECT_EQ(text.find("nan"), std::string::npos);
}

TEST(Console, NoColorIsHonoured) {
  setenv("NO_COLOR", "1", 1);
  EXPECT_FALSE(dyno::app::detect_style("auto", false).color);
  EXPECT_TRUE(dyno::app::detect_style("always", false).color);
  EXPECT_FALSE(dyno::app::detect_style("never", false).color);
  unsetenv("NO_COLOR");
}

}  // namespace
