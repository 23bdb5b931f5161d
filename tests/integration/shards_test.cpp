// `dyno run --shard K/N --start-at TIME` and `dyno runs merge` (docs/scale.md, "Load from
// several client hosts"): two shards of one run, started together against one `dyno sim`,
// merged, agree with the same load run unsharded.
#include <chrono>
#include <ctime>

#include "integration/integration_fixture.h"

using namespace dyno::integration;  // the fixture, fs, json, Child, read_json(l)

namespace {

class Shards : public Integration {
 protected:
  std::string sim_url() {
    std::ofstream(dir_ / "profile.json")
        << R"({"base":"small-gpu","prefill_tokens_per_s":8000,"step_base_s":0.008})";
    return start_sim({"--profile", (dir_ / "profile.json").string()});
  }

  /// RFC 3339 UTC, whole seconds, `ahead` from now (one time for every shard).
  static std::string start_time(std::chrono::seconds ahead) {
    const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now() +
                                                               ahead + std::chrono::seconds(1));
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
  }

  /// Runs every shard of `load` at once (--shard k/n --start-at the same time); their record
  /// directories, in shard order.
  std::vector<fs::path> run_shards(const std::vector<std::string>& load, int n) {
    const std::string at = start_time(std::chrono::seconds(1));
    std::vector<std::unique_ptr<Child>> children;
    for (int k = 0; k < n; ++k) {
      std::vector<std::string> argv = {DYNO_BINARY, "run", "--json", "-q", "--runs-root", runs()};
      argv.insert(argv.end(), load.begin(), load.end());
      for (const std::string& a :
           {std::string("--shard"), std::to_string(k) + "/" + std::to_string(n),
            std::string("--start-at"), at}) {
        argv.push_back(a);
      }
      const std::string name = "shard" + std::to_string(k);
      children.push_back(std::make_unique<Child>(argv, (dir_ / (name + ".out")).string(),
                                                 (dir_ / (name + ".err")).string()));
    }
    std::vector<fs::path> dirs;
    for (auto& c : children) {
      EXPECT_EQ(c->wait(), 0) << c->err();
      const json::object summary = json::parse(c->out()).as_object();
      dirs.emplace_back(std::string(summary.at("record_dir").as_string()));
    }
    return dirs;
  }

  /// `dyno runs merge` of `dirs`; the merged record's directory.
  fs::path merge(const std::vector<fs::path>& dirs) {
    std::vector<std::string> args = {
        "runs", "merge", "--runs-root", runs(), "--json", "--max-clock-offset-ms", "100"};
    for (const fs::path& d : dirs) args.push_back(d.string());
    const Outcome o = dyno(args);
    EXPECT_EQ(o.exit_code, 0) << o.err;
    return std::string(json::parse(o.out).at("dir").as_string());
  }

  static double number(const json::object& summary, const char* section, const char* key,
                       const char* sub = nullptr) {
    const json::value& v = summary.at(section).at(key);
    return (sub != nullptr ? v.at(sub) : v).to_number<double>();
  }

  /// The merged record against the unsharded one: every request once, token totals exact,
  /// throughput and median latencies within 15 % (the sim is exact in tokens, not in time).
  void expect_same_load(const fs::path& merged, const fs::path& whole, std::size_t requests) {
    const auto merged_lines = check_record(merged);
    const auto whole_lines = check_record(whole);
    ASSERT_EQ(merged_lines.size(), requests);
    ASSERT_EQ(whole_lines.size(), requests);
    std::multiset<std::string> a, b;
    for (const auto& l : merged_lines) a.insert(std::string(l.at("request_id").as_string()));
    for (const auto& l : whole_lines) b.insert(std::string(l.at("request_id").as_string()));
    EXPECT_EQ(a, b);  // the same requests, each as often as the unsharded run sent it
    const json::object ms = read_json(merged / "summary.json");
    const json::object ws = read_json(whole / "summary.json");
    EXPECT_EQ(ms.at("status").as_string(), "ok");
    EXPECT_EQ(ms.at("requests").at("ok").as_int64(), static_cast<std::int64_t>(requests));
    EXPECT_EQ(ms.at("tokens").at("input_total"), ws.at("tokens").at("input_total"));
    EXPECT_EQ(ms.at("tokens").at("output_total"), ws.at("tokens").at("output_total"));
    // Within 15 % (latencies: plus 5 ms, the scheduling jitter of three processes on a busy
    // 2-core machine against a TTFT of a few tens of ms).
    const auto near = [&](const char* section, const char* key, const char* sub, double ms_slack) {
      const double m = number(ms, section, key, sub), w = number(ws, section, key, sub);
      EXPECT_NEAR(m, w, 0.15 * w + ms_slack)
          << section << "." << key << (sub ? std::string(".") + sub : "");
    };
    near("throughput", "output_tokens_per_s", nullptr, 0);
    near("throughput", "requests_per_s", nullptr, 0);
    near("latency_ms", "ttft", "p50", 5);
    near("latency_ms", "e2e", "p50", 5);
    const json::object manifest = read_json(merged / "manifest.json");
    EXPECT_FALSE(manifest.contains("shard"));
    const json::object& from = manifest.at("merged_from").as_object();
    EXPECT_EQ(from.at("clock_method").as_string(), "steady_clock");  // one host
    EXPECT_EQ(from.at("shards").as_array().size(), 2u);
  }
};

TEST_F(Shards, TwoClosedLoopShardsMergeIntoTheUnshardedRun) {
  const std::string url = sim_url();
  const std::vector<std::string> load = {"--url",
                                         url,
                                         "--model",
                                         "dyno-sim",
                                         "-n",
                                         "40",
                                         "-c",
                                         "4",
                                         "--seed",
                                         "7",
                                         "--input-tokens",
                                         "64",
                                         "--output-tokens",
                                         "24",
                                         "--client-threads",
                                         "1"};
  const std::vector<fs::path> shards = run_shards(load, 2);
  ASSERT_EQ(shards.size(), 2u);
  for (std::size_t k = 0; k < 2; ++k) {
    const json::object m = read_json(shards[k] / "manifest.json");
    EXPECT_EQ(m.at("shard").at("k").as_int64(), static_cast<std::int64_t>(k));
    EXPECT_EQ(m.at("shard").at("n").as_int64(), 2);
    EXPECT_TRUE(m.at("shard").at("start_at").is_string());
    EXPECT_EQ(check_record(shards[k]).size(), 20u);  // requests i with i mod 2 == k
  }
  const fs::path merged = merge(shards);
  const Outcome whole = run_dyno(load);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  stop_sims();
  expect_same_load(merged, whole.run_dir, 40);
}

TEST_F(Shards, TwoOpenLoopShardsSendTheSeededScheduleBetweenThem) {
  const std::string url = sim_url();
  const std::vector<std::string> load = {"--url",
                                         url,
                                         "--model",
                                         "dyno-sim",
                                         "-n",
                                         "40",
                                         "--rate",
                                         "40",
                                         "--seed",
                                         "11",
                                         "--input-tokens",
                                         "64",
                                         "--output-tokens",
                                         "24",
                                         "--client-threads",
                                         "1"};
  const std::vector<fs::path> shards = run_shards(load, 2);
  ASSERT_EQ(shards.size(), 2u);
  const fs::path merged = merge(shards);
  const Outcome whole = run_dyno(load);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  stop_sims();
  expect_same_load(merged, whole.run_dir, 40);
  // The arrivals are the seeded schedule's: the merged record's scheduled times are the
  // unsharded run's (each within 2 ms: the shards' t0 differ by their start).
  const auto m = read_jsonl(merged / "requests.jsonl");
  const auto w = read_jsonl(whole.run_dir / "requests.jsonl");
  const std::int64_t m0 = i64(m.front().at("scheduled_ns")), w0 = i64(w.front().at("scheduled_ns"));
  for (std::size_t i = 0; i < m.size() && i < w.size(); ++i) {
    EXPECT_NEAR(static_cast<double>(i64(m[i].at("scheduled_ns")) - m0),
                static_cast<double>(i64(w[i].at("scheduled_ns")) - w0), 2e6)
        << i;
  }
}

TEST_F(Shards, MalformedShardAndStartAtExitTwoNamingThem) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--shard", "1"}, "--shard"},
      {{"--shard", "2/2"}, "--shard"},
      {{"--shard", "0/0"}, "--shard"},
      {{"--shard", "a/b"}, "--shard"},
      {{"--shard", "0/4", "-c", "2"}, "--shard"},
      {{"--shard", "0/2", "--start-at", "2020-01-01T00:00:00Z"}, "--start-at"},
      {{"--shard", "0/2", "--start-at", "tomorrow"}, "--start-at"},
      {{"--shard", "0/2", "--start-at", "2026-02-30T00:00:00Z"}, "--start-at"},
      {{"--start-at", "now+1s"}, "--start-at"}};
  for (const auto& [bad, flag] : cases) {
    std::vector<std::string> args = {"-n", "2"};
    args.insert(args.end(), bad.begin(), bad.end());
    const Outcome o = run_dyno(args);
    EXPECT_EQ(o.exit_code, 2) << bad.back() << ": " << o.err;
    EXPECT_NE(o.err.find(flag), std::string::npos) << bad.back() << ": " << o.err;
  }
  EXPECT_EQ(record_count(), 0u);
}

TEST_F(Shards, MergeRefusesWhatIsNotOneShardedRun) {
  const std::string url = sim_url();
  const std::vector<std::string> load = {
      "--url",           url, "--model",          "dyno-sim", "-n", "6", "-c", "2",
      "--output-tokens", "4", "--client-threads", "1"};
  const std::vector<fs::path> shards = run_shards(load, 2);
  ASSERT_EQ(shards.size(), 2u);
  const Outcome plain = run_dyno(load);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  std::vector<std::string> other_load = load;
  other_load[7] = "3";  // -c 3: another run
  other_load.insert(other_load.end(), {"--shard", "1/2"});
  const Outcome other = run_dyno(other_load);
  ASSERT_EQ(other.exit_code, 0) << other.err;
  stop_sims();
  const auto merge_of = [&](std::vector<std::string> extra, std::vector<fs::path> dirs) {
    std::vector<std::string> args = {"runs", "merge", "--runs-root", runs()};
    args.insert(args.end(), extra.begin(), extra.end());
    for (const fs::path& d : dirs) args.push_back(d.string());
    return dyno(args);
  };
  const std::size_t before = record_count();
  Outcome o = merge_of({}, {shards[0]});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("shard 1 of 2 is missing"), std::string::npos) << o.err;
  o = merge_of({}, {shards[0], shards[0]});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("shard 0 is given twice"), std::string::npos) << o.err;
  o = merge_of({}, {shards[0], plain.run_dir});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("not a shard's record"), std::string::npos) << o.err;
  o = merge_of({}, {shards[0], other.run_dir});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("differ in load.concurrency"), std::string::npos) << o.err;
  o = merge_of({"--max-clock-offset-ms", "0"}, shards);
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--max-clock-offset-ms"), std::string::npos) << o.err;
  o = merge_of({"--max-clock-offset-ms", "-1"}, shards);
  EXPECT_EQ(o.exit_code, 2);
  // A shard whose record no longer verifies.
  std::ofstream(shards[1] / "requests.jsonl", std::ios::app) << "{}\n";
  o = merge_of({"--max-clock-offset-ms", "100"}, shards);
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("fails `dyno runs verify`"), std::string::npos) << o.err;
  EXPECT_EQ(record_count(), before);  // nothing written
  fs::remove_all(shards[1]);          // the tampered record would fail the TearDown's check
}

}  // namespace
