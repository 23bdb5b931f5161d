#include "engine/server_metrics.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <vector>

#include "engine/server_timings.h"
#include "metrics/sessions.h"

namespace dyno::engine {
namespace {

namespace json = boost::json;

TEST(ServerMetrics, PrefixCacheCountersGiveTheHitRateWhenNoRequestCounted) {
  const std::string types =
      "# TYPE vllm:prefix_cache_queries_total counter\n"
      "# TYPE vllm:prefix_cache_hits_total counter\n";
  const std::string before = types +
                             "vllm:prefix_cache_queries_total{model_name=\"m\"} 100\n"
                             "vllm:prefix_cache_hits_total{model_name=\"m\"} 40\n";
  const std::string after = types +
                            "vllm:prefix_cache_queries_total{model_name=\"m\"} 1100\n"
                            "vllm:prefix_cache_hits_total{model_name=\"m\"} 790\n";
  const json::object server = server_section(before, after);
  EXPECT_EQ(server.at("prefix_cache_queries").to_number<double>(), 1000.0);
  EXPECT_EQ(server.at("prefix_cache_hits").to_number<double>(), 750.0);
  const auto cache = prefix_cache_from_counters(server);
  ASSERT_TRUE(cache);
  EXPECT_EQ(cache->at("source").as_string(), "metrics");
  EXPECT_EQ(cache->at("prompt_tokens").as_int64(), 1000);
  EXPECT_EQ(cache->at("cached_tokens").as_int64(), 750);
  EXPECT_DOUBLE_EQ(cache->at("hit_rate").as_double(), 0.75);
  EXPECT_TRUE(cache->at("requests").is_null());
  // No counters, no lookups, or more hits than lookups (not believed): nothing.
  EXPECT_FALSE(prefix_cache_from_counters(server_section("", "")));
  const auto counted = [](double queries, double hits) {
    json::object s = server_section("", "");
    s["prefix_cache_queries"] = queries;
    s["prefix_cache_hits"] = hits;
    return s;
  };
  EXPECT_FALSE(prefix_cache_from_counters(counted(0.0, 0.0)));
  EXPECT_FALSE(prefix_cache_from_counters(counted(10.0, 11.0)));
  EXPECT_TRUE(prefix_cache_from_counters(counted(10.0, 10.0)));
  // A section it cannot have written: the typed reader names the key.
  EXPECT_THROW(prefix_cache_from_counters(json::object{{"prefix_cache_queries", 10.0}}),
               std::runtime_error);
}

TEST(ServerMetrics, LlamaCppCacheNBecomesTheCachedCountWhenUsageHasNone) {
  std::vector<metrics::Trace> traces(3);
  traces[0].server_timings_json = R"({"cache_n":96,"prompt_n":4})";
  traces[1].server_timings_json = R"({"cache_n":50})";
  traces[1].cached_input_tokens = 48;  // usage said: usage wins
  traces[1].cached_source = metrics::CachedSource::kUsage;
  traces[2].server_timings_json = R"({"prompt_n":4})";
  cached_tokens_from_timings(traces);
  EXPECT_EQ(traces[0].cached_input_tokens, 96);
  EXPECT_EQ(traces[0].cached_source, metrics::CachedSource::kTimings);
  EXPECT_EQ(traces[1].cached_input_tokens, 48);
  EXPECT_EQ(traces[1].cached_source, metrics::CachedSource::kUsage);
  EXPECT_FALSE(traces[2].cached_input_tokens);  // no input count: nothing to subtract from
}

/// llama.cpp builds without cache_n (b4748): the input tokens less prompt_n, the prompt tokens
/// the engine computed — the count the server section reports as cached, so the per-turn and
/// prefix-cache figures agree with it.
TEST(ServerMetrics, PromptNGivesTheCachedCountWhenTimingsHaveNoCacheN) {
  std::vector<metrics::Trace> traces(3);
  traces[0].server_timings_json = R"({"prompt_n":40,"prompt_ms":10.0})";
  traces[0].input_tokens = 100;
  traces[1].server_timings_json = R"({"prompt_n":140})";  // more than the prompt: not believed
  traces[1].input_tokens = 100;
  traces[2].server_timings_json = R"({"prompt_n":40})";
  cached_tokens_from_timings(traces);
  EXPECT_EQ(traces[0].cached_input_tokens, 60);
  EXPECT_EQ(traces[0].cached_source, metrics::CachedSource::kTimingsPromptN);
  EXPECT_FALSE(traces[1].cached_input_tokens);
  EXPECT_FALSE(traces[2].cached_input_tokens);
  // The same count as the server section's.
  for (auto& t : traces) t.status = metrics::RequestStatus::kOk;
  const ServerTimingFigures f = server_timing_figures(std::vector<metrics::Trace>{traces[0]});
  EXPECT_EQ(f.prompt_tokens_cached, traces[0].cached_input_tokens);
  const auto cache = metrics::prefix_cache_figures(std::vector<metrics::Trace>{traces[0]});
  ASSERT_TRUE(cache.has_value());
  EXPECT_EQ(cache->source, "timings_prompt_n");
  EXPECT_EQ(cache->totals.cached_tokens, 60);
}

}  // namespace
}  // namespace dyno::engine
