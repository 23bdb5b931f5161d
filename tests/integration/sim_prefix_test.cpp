// `dyno run` against the embedded simulated engine with its prefix cache on: requests that share
// a long prefix carry the block-aligned cached token counts the sim predicts, and their TTFT is
// lower than the same run with the cache off.
#include <boost/json.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "integration/integration_fixture.h"
#include "sim/tokenizer.h"

namespace dyno::integration {
namespace {

constexpr int kRequests = 4;
constexpr std::int64_t kBlock = 16;

std::string shared_text() {
  std::string text = "You are a careful assistant. Here is the document:";
  for (int i = 0; i < 300; ++i) text += " lorem" + std::to_string(i % 10) + " ipsum";
  return text;
}

std::string question(int i) {
  return shared_text() + " Question " + std::string(1, static_cast<char>('a' + i)) + "?";
}

std::vector<std::int32_t> chat_ids(const std::string& content) {
  std::vector<std::int32_t> ids;
  for (const sim::Token& t : sim::tokenize(sim::apply_chat_template({{"user", content}}))) {
    ids.push_back(t.id);
  }
  return ids;
}

// The cached tokens the sim must report for request i (run one at a time, in order): the
// longest common token prefix with an earlier prompt, rounded down to whole blocks, at most
// (prompt − 1) tokens.
std::int64_t predicted_cached(int i) {
  if (i == 0) return 0;
  const auto ids = chat_ids(question(i));
  std::int64_t best = 0;
  for (int j = 0; j < i; ++j) {
    const auto other = chat_ids(question(j));
    std::int64_t common = 0;
    while (common < static_cast<std::int64_t>(std::min(ids.size(), other.size())) &&
           ids[static_cast<std::size_t>(common)] == other[static_cast<std::size_t>(common)]) {
      ++common;
    }
    best = std::max(best, common);
  }
  best = std::min<std::int64_t>(best, static_cast<std::int64_t>(ids.size()) - 1);
  return best / kBlock * kBlock;
}

class SimPrefix : public Integration {
 protected:
  fs::path write_files(std::int64_t cache_blocks) {
    const fs::path profile = dir_ / ("profile_" + std::to_string(cache_blocks) + ".json");
    std::ofstream(profile) << json::serialize(json::object{{"base", "small-gpu"},
                                                           {"prefill_tokens_per_s", 10000},
                                                           {"step_base_s", 0.002},
                                                           {"prefix_cache_block_tokens", kBlock},
                                                           {"prefix_cache_blocks", cache_blocks}});
    return profile;
  }
  fs::path write_stream() {
    const fs::path stream = dir_ / "stream.jsonl";
    std::ofstream out(stream);
    for (int i = 0; i < kRequests; ++i) {
      json::object line{
          {"id", "q" + std::to_string(i)},
          {"messages", json::array{json::object{{"role", "user"}, {"content", question(i)}}}},
          {"max_tokens", 4}};
      out << json::serialize(line) << '\n';
    }
    return stream;
  }
  std::vector<json::object> run(std::int64_t cache_blocks) {
    const Outcome o =
        run_dyno({"--profile", write_files(cache_blocks).string(), "--stream",
                  write_stream().string(), "-n", std::to_string(kRequests), "-c", "1"});
    EXPECT_EQ(o.exit_code, 0) << o.err;
    if (o.run_dir.empty()) return {};
    return check_record(o.run_dir);
  }
};

std::int64_t ttft_ns(const json::object& r) {
  return i64(r.at("first_token_ns")) - i64(r.at("sent_ns"));
}

TEST_F(SimPrefix, CachedTokensAreBlockAlignedAndCutTtft) {
  const auto cached = run(4096);
  const auto uncached = run(0);
  ASSERT_EQ(cached.size(), static_cast<std::size_t>(kRequests));
  ASSERT_EQ(uncached.size(), static_cast<std::size_t>(kRequests));
  ASSERT_GT(predicted_cached(1), 500);  // the shared prefix is long
  for (int i = 0; i < kRequests; ++i) {
    const json::object& r = cached[static_cast<std::size_t>(i)];
    EXPECT_EQ(i64(r.at("cached_input_tokens")), predicted_cached(i)) << "request " << i;
    EXPECT_EQ(i64(r.at("input_tokens")), static_cast<std::int64_t>(chat_ids(question(i)).size()));
    // Cache off: the sim reports no prompt_tokens_details, but its llama.cpp-style timings say
    // cache_n 0, and that is the count the record keeps (named as such).
    EXPECT_EQ(i64(uncached[static_cast<std::size_t>(i)].at("cached_input_tokens")), 0);
    EXPECT_EQ(uncached[static_cast<std::size_t>(i)].at("cached_source").as_string(), "timings");
    EXPECT_EQ(r.at("cached_source").as_string(), "usage");
  }
  // The first request prefills the whole prompt either way; the later ones only their tails.
  for (int i = 1; i < kRequests; ++i) {
    const auto on = ttft_ns(cached[static_cast<std::size_t>(i)]);
    const auto off = ttft_ns(uncached[static_cast<std::size_t>(i)]);
    EXPECT_LT(on, off) << "request " << i;
    // The saved prefill (cached tokens at 10k tok/s) shows up almost whole.
    EXPECT_LT(static_cast<double>(on),
              static_cast<double>(off) - 0.5 * static_cast<double>(predicted_cached(i)) * 1e5);
  }
}

// The in-process engine (libdyno_sim_plugin.so) shares the model, the tokenizer and so the
// cache: the same stream gives the same cached tokens through the plugin ABI.
TEST_F(SimPrefix, ThePluginEngineReportsTheSameCachedTokens) {
  const Outcome o = run_dyno({"--plugin", SIM_PLUGIN_PATH, "--plugin-config",
                              "profile=" + write_files(4096).string(), "--stream",
                              write_stream().string(), "-n", std::to_string(kRequests), "-c", "1"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto lines = check_record(o.run_dir);
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(kRequests));
  for (int i = 0; i < kRequests; ++i) {
    EXPECT_EQ(i64(lines[static_cast<std::size_t>(i)].at("cached_input_tokens")),
              predicted_cached(i))
        << "request " << i;
  }
}

}  // namespace
}  // namespace dyno::integration
