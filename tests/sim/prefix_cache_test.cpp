// The simulated engine's prefix cache: block hashing, LRU eviction, the model's use of it
// (cached tokens are not prefilled) and what the server reports (usage, timings, /metrics, truth).
#include "sim/prefix_cache.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "sim/model.h"
#include "sim/request.h"
#include "sim/server.h"
#include "sim/sim_client.h"
#include "temp_dir.h"

namespace dyno::sim {
namespace {

namespace json = boost::json;
using testing::Client;
using testing::read_truth;
using testing::sse_data;

std::vector<std::int32_t> iota_ids(std::size_t n, std::int32_t first = 1) {
  std::vector<std::int32_t> ids(n);
  std::iota(ids.begin(), ids.end(), first);
  return ids;
}

TEST(PrefixCache, BlocksAreSharedAlongIdenticalPrefixesOnly) {
  const auto a = iota_ids(64);
  auto b = a;
  b[40] = 9999;  // differs in block 2 (tokens 32..47)
  const auto ha = prefix_block_hashes(a, 16);
  const auto hb = prefix_block_hashes(b, 16);
  ASSERT_EQ(ha.size(), 4u);
  ASSERT_EQ(hb.size(), 4u);
  EXPECT_EQ(ha[0], hb[0]);
  EXPECT_EQ(ha[1], hb[1]);
  EXPECT_NE(ha[2], hb[2]);
  EXPECT_NE(ha[3], hb[3]);  // block 3 is identical in both, but its prefix is not
  // Only full blocks: 63 tokens have 3.
  EXPECT_EQ(prefix_block_hashes(std::span(a).first(63), 16).size(), 3u);
  EXPECT_TRUE(prefix_block_hashes(std::span(a).first(15), 16).empty());
  EXPECT_TRUE(prefix_block_hashes(a, 0).empty());
  // A block's identity is its position's whole prefix: the same ids one block later differ.
  std::vector<std::int32_t> shifted(16, 7);
  shifted.insert(shifted.end(), a.begin(), a.begin() + 16);
  EXPECT_NE(prefix_block_hashes(shifted, 16)[1], ha[0]);

  PrefixCache cache(16);
  cache.insert(ha);
  EXPECT_EQ(cache.match(hb, 100), 2u);  // the run stops at the first difference
  EXPECT_EQ(cache.match(ha, 100), 4u);
  EXPECT_EQ(cache.match(ha, 3), 3u);  // capped
}

TEST(PrefixCache, EvictsTheLeastRecentlyUsedBlock) {
  PrefixCache cache(3);
  const std::vector<std::uint64_t> abc{1, 2, 3};
  cache.insert(abc);
  EXPECT_EQ(cache.size(), 3u);
  // A hit on block 1 makes it the most recently used: 2 is evicted next, then 3.
  EXPECT_EQ(cache.match(std::vector<std::uint64_t>{1}, 1), 1u);
  cache.insert(std::vector<std::uint64_t>{4});
  EXPECT_TRUE(cache.contains(1));
  EXPECT_FALSE(cache.contains(2));
  EXPECT_TRUE(cache.contains(3));
  cache.insert(std::vector<std::uint64_t>{5});
  EXPECT_FALSE(cache.contains(3));
  EXPECT_TRUE(cache.contains(1));
  EXPECT_TRUE(cache.contains(4));
  EXPECT_TRUE(cache.contains(5));
  EXPECT_EQ(cache.size(), 3u);
  // Re-inserting a present block touches it instead of duplicating it.
  cache.insert(std::vector<std::uint64_t>{1});
  cache.insert(std::vector<std::uint64_t>{6});
  EXPECT_FALSE(cache.contains(4));
  EXPECT_TRUE(cache.contains(1));
}

TEST(PrefixCache, CapacityZeroIsOff) {
  PrefixCache cache(0);
  EXPECT_FALSE(cache.enabled());
  cache.insert(std::vector<std::uint64_t>{1, 2});
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.match(std::vector<std::uint64_t>{1, 2}, 2), 0u);
}

Profile cache_profile(std::int64_t blocks) {
  Profile p;
  p.max_running_seqs = 8;
  p.step_token_budget = 4096;
  p.prefill_tokens_per_s = 10000.0;
  p.step_base_s = 0.01;
  p.decode_seq_s = 0.001;
  p.decode_ctx_token_s = 0.0;
  p.prefix_cache_block_tokens = 16;
  p.prefix_cache_blocks = blocks;
  return p;
}

ModelRequest cached_request(std::uint64_t id, const std::vector<std::int32_t>& ids) {
  ModelRequest r;
  r.id = id;
  r.prompt_tokens = static_cast<std::int64_t>(ids.size());
  r.max_tokens = 2;
  r.seed = id;
  r.block_hashes = prefix_block_hashes(ids, 16);
  return r;
}

// Runs one request alone to its first token; returns (TTFT from submission, cached tokens).
std::pair<double, std::int64_t> first_token(Model& m, const ModelRequest& r) {
  const double t0 = m.clock();
  m.submit(r, t0);
  for (const Event& e : m.run_until(t0 + 1000.0)) {  // finite: the idle clock moves there
    if (e.request_id == r.id && e.first) return {e.time_s - t0, e.cached_tokens};
  }
  ADD_FAILURE() << "no first token";
  return {0.0, 0};
}

TEST(PrefixCacheModel, CachedTokensAreNotPrefilled) {
  Model m(cache_profile(1024));
  const auto shared = iota_ids(200);
  auto second = shared;
  second.resize(230, 5);  // the same 200 tokens, then 30 others
  const auto [ttft1, cached1] = first_token(m, cached_request(1, shared));
  EXPECT_EQ(cached1, 0);  // a cold cache
  EXPECT_NEAR(ttft1, 0.01 + 200 / 10000.0, 1e-12);
  const auto [ttft2, cached2] = first_token(m, cached_request(2, second));
  EXPECT_EQ(cached2, 192);  // 200 shared tokens rounded down to 12 whole blocks
  EXPECT_NEAR(ttft2, 0.01 + (230 - 192) / 10000.0, 1e-12);
  EXPECT_LT(ttft2, ttft1);
  EXPECT_EQ(m.prefix_cache_queries(), 430);
  EXPECT_EQ(m.prefix_cache_hits(), 192);
}

TEST(PrefixCacheModel, TheLastPromptTokenIsAlwaysComputed) {
  Model m(cache_profile(1024));
  const auto ids = iota_ids(64);  // exactly 4 blocks
  EXPECT_EQ(first_token(m, cached_request(1, ids)).second, 0);
  // The same prompt again: only 3 blocks may hit, the 4th holds the last token.
  const auto [ttft, cached] = first_token(m, cached_request(2, ids));
  EXPECT_EQ(cached, 48);
  EXPECT_NEAR(ttft, 0.01 + 16 / 10000.0, 1e-12);
  // A one-block prompt never hits.
  const auto one = iota_ids(16);
  first_token(m, cached_request(3, one));
  EXPECT_EQ(first_token(m, cached_request(4, one)).second, 0);
}

TEST(PrefixCacheModel, OffByDefaultAndWithCapacityZero) {
  for (const std::string& name : builtin_profile_names()) {
    EXPECT_EQ(builtin_profile(name).prefix_cache_blocks, 0) << name;
    EXPECT_EQ(builtin_profile(name).prefix_cache_block_tokens, 16) << name;
  }
  Model m(cache_profile(0));
  const auto ids = iota_ids(100);
  first_token(m, cached_request(1, ids));
  const auto [ttft, cached] = first_token(m, cached_request(2, ids));
  EXPECT_EQ(cached, 0);
  EXPECT_NEAR(ttft, 0.01 + 100 / 10000.0, 1e-12);
  EXPECT_EQ(m.prefix_cache_queries(), 0);
}

TEST(PrefixCacheModel, EvictionLimitsHits) {
  Model m(cache_profile(4));    // 4 blocks
  const auto a = iota_ids(48);  // 3 blocks
  const auto b = iota_ids(48, 1000);
  first_token(m, cached_request(1, a));
  EXPECT_EQ(first_token(m, cached_request(2, a)).second, 32);  // 2 blocks (the 3rd: last token)
  // b's 3 blocks evict a's 2 least recently used ones, its first among them.
  first_token(m, cached_request(3, b));
  EXPECT_EQ(first_token(m, cached_request(4, a)).second, 0);
  EXPECT_EQ(first_token(m, cached_request(5, b)).second, 0);  // a's reinsert evicted b's head
  EXPECT_EQ(m.prefix_cache().size(), 4u);
}

TEST(PrefixCacheRequest, HashesTheTemplatedPromptOrTheGivenIds) {
  Profile p = cache_profile(64);
  CompletionRequest r;
  set_text_prompt(r, std::string(200, 'a'));  // 34 six-letter chunks: 2 full blocks
  EXPECT_EQ(prompt_block_hashes(r, p).size(), static_cast<std::size_t>(r.prompt_tokens / 16));
  CompletionRequest ids = parse_completion(R"({"model":"dyno-sim","prompt":[)" +
                                               std::string("1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,"
                                                           "17") +
                                               "]}",
                                           false, p);
  EXPECT_EQ(prompt_block_hashes(ids, p), prefix_block_hashes(iota_ids(16), 16));
  p.prefix_cache_blocks = 0;
  EXPECT_TRUE(prompt_block_hashes(r, p).empty());
}

json::object completion_body(const std::string& prompt, bool stream) {
  json::object o{{"model", "dyno-sim"}, {"prompt", prompt}, {"max_tokens", 3}, {"stream", stream}};
  if (stream) o["stream_options"] = json::object{{"include_usage", true}};
  return o;
}

std::int64_t metric(const std::string& text, const std::string& name) {
  const std::size_t at = text.find("\n" + name + "{");
  if (at == std::string::npos) return -1;
  const std::size_t space = text.find("} ", at);
  return std::stoll(text.substr(space + 2));
}

TEST(PrefixCacheServer, ReportsCachedTokensLikeVllmAndLlamaCpp) {
  const auto truth = dyno::testing::process_temp_dir() / "sim_prefix_cache_truth.jsonl";
  ServerOptions o;
  o.profile = testing::fast_profile();
  o.profile.prefix_cache_blocks = 1024;
  o.truth_path = truth;
  std::string long_text;
  for (int i = 0; i < 60; ++i) long_text += " word" + std::to_string(i);
  std::vector<json::object> usages;
  std::vector<json::object> timings;
  std::string metrics;
  {
    Server server(o);
    Client c(server.start());
    const json::value whole =
        json::parse(c.post("/v1/completions", completion_body(long_text, false)).body);
    usages.push_back(whole.at("usage").as_object());
    timings.push_back(whole.at("timings").as_object());
    const auto events = sse_data(c.post("/v1/completions", completion_body(long_text, true)).body);
    ASSERT_GE(events.size(), 2u);
    const json::object last = json::parse(events[events.size() - 2]).as_object();
    usages.push_back(last.at("usage").as_object());
    timings.push_back(last.at("timings").as_object());
    metrics = c.request(boost::beast::http::verb::get, "/metrics").body;
    server.stop();
  }
  const std::int64_t prompt = usages[0].at("prompt_tokens").to_number<std::int64_t>();
  const std::int64_t expect_cached = (prompt - 1) / 16 * 16;
  ASSERT_GT(expect_cached, 0);
  EXPECT_EQ(usages[0].at("prompt_tokens_details").at("cached_tokens").to_number<int>(), 0);
  EXPECT_EQ(usages[1].at("prompt_tokens_details").at("cached_tokens").to_number<std::int64_t>(),
            expect_cached);
  EXPECT_EQ(timings[0].at("cache_n").to_number<int>(), 0);
  EXPECT_EQ(timings[0].at("prompt_n").to_number<std::int64_t>(), prompt);
  EXPECT_EQ(timings[1].at("cache_n").to_number<std::int64_t>(), expect_cached);
  EXPECT_EQ(timings[1].at("prompt_n").to_number<std::int64_t>(), prompt - expect_cached);
  EXPECT_LT(timings[1].at("prompt_ms").to_number<double>(),
            timings[0].at("prompt_ms").to_number<double>());
  EXPECT_EQ(metric(metrics, "vllm:prefix_cache_queries_total"), 2 * prompt);
  EXPECT_EQ(metric(metrics, "vllm:prefix_cache_hits_total"), expect_cached);
  const auto lines = read_truth(truth);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].at("cached_tokens").to_number<int>(), 0);
  EXPECT_EQ(lines[1].at("cached_tokens").to_number<std::int64_t>(), expect_cached);
  std::filesystem::remove(truth);
}

TEST(PrefixCacheServer, NoPromptDetailsWithTheCacheOff) {
  ServerOptions o;
  o.profile = testing::fast_profile();
  Server server(o);
  Client c(server.start());
  const json::value v =
      json::parse(c.post("/v1/completions", completion_body("Hello there", false)).body);
  EXPECT_FALSE(v.at("usage").as_object().contains("prompt_tokens_details"));
  server.stop();
}

}  // namespace
}  // namespace dyno::sim
