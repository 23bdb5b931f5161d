// Gauge sampling against the simulated engine's /metrics, in-process.
#include "engine/server_gauges.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <sstream>
#include <thread>

#include "sim/profile.h"
#include "sim/server.h"

namespace json = boost::json;

TEST(ServerGauges, KeysSortLabels) {
  EXPECT_EQ(dyno::engine::GaugeSampler::key_of("vllm:num_requests_running", {}),
            "vllm:num_requests_running");
  EXPECT_EQ(dyno::engine::GaugeSampler::key_of("g", {{"b", "2"}, {"a", "1"}}),
            "g{a=\"1\",b=\"2\"}");
}

TEST(ServerGauges, SamplesEveryGaugeOnThePeriodAndSummarisesEachSeries) {
  dyno::sim::ServerOptions so;
  so.profile = dyno::sim::resolve_profile("small-gpu");
  dyno::sim::Server sim(so);
  const auto port = sim.start();
  const auto url =
      dyno::transport::BaseUrl::parse("http://127.0.0.1:" + std::to_string(port) + "/v1");
  dyno::engine::GaugeSampler g(url, std::nullopt, true, std::nullopt, 20'000'000);  // floor: 100 ms
  g.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(550));
  g.stop();
  g.stop();  // idempotent
  sim.stop();
  // ~6 scrapes in 550 ms at 100 ms; a loaded machine may manage fewer, never more than 7.
  EXPECT_GE(g.scrapes(), 2u);
  EXPECT_LE(g.scrapes(), 7u);
  const json::object s = g.summary_json();
  EXPECT_DOUBLE_EQ(s.at("period_ms").as_double(), 100.0);
  EXPECT_EQ(s.at("failed_scrapes").as_uint64(), 0u);
  const auto& series = s.at("series").as_object();
  const auto* running = series.if_contains("vllm:num_requests_running{model_name=\"dyno-sim\"}");
  ASSERT_NE(running, nullptr) << json::serialize(s);
  EXPECT_EQ(running->at("max").as_double(), 0.0);  // idle engine
  EXPECT_TRUE(series.contains("llamacpp:kv_cache_usage_ratio"));
  EXPECT_FALSE(series.contains("vllm:generation_tokens_total"));  // a counter, not a gauge
  std::istringstream lines(g.evidence_jsonl(0));
  std::string line;
  std::size_t n = 0;
  std::int64_t last = -1;
  while (std::getline(lines, line)) {
    const json::value v = json::parse(line);
    EXPECT_GT(v.at("t_ns").as_int64(), last);
    last = v.at("t_ns").as_int64();
    EXPECT_TRUE(
        v.at("values").as_object().contains("vllm:num_requests_waiting{model_name=\"dyno-sim\"}"));
    ++n;
  }
  EXPECT_EQ(n, g.scrapes());
}

TEST(ServerGauges, AnEngineWithoutMetricsCountsFailedScrapes) {
  dyno::engine::GaugeSampler g(dyno::transport::BaseUrl::parse("http://127.0.0.1:1/v1"),
                               std::nullopt, true, std::nullopt, 100'000'000);
  g.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  g.stop();
  EXPECT_EQ(g.scrapes(), 0u);
  EXPECT_GE(g.summary_json().at("failed_scrapes").as_uint64(), 1u);
}
