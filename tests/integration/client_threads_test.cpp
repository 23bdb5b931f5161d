// `--client-threads N` (transport/sharded_target.h): the connections shared out over N event
// loops, one clock and one record. Against `dyno sim --truth` in another process.
#include "integration/integration_fixture.h"

using namespace dyno::integration;  // the fixture, fs, json, Child, read_json(l)

namespace {

TEST_F(Integration, TwoClientThreadsTimeEveryEventAsTheSimulatorWroteIt) {
  std::ofstream(dir_ / "profile.json")
      << R"({"base":"small-gpu","prefill_tokens_per_s":8000,"step_base_s":0.004})";
  const fs::path truth = dir_ / "truth.jsonl";
  const std::string url =
      start_sim({"--profile", (dir_ / "profile.json").string(), "--truth", truth.string()});
  const Outcome o =
      run_dyno({"--url", url, "--model", "dyno-sim", "-n", "48", "-c", "8", "--warmup", "2",
                "--input-tokens", "100", "--output-tokens", "24", "--client-threads", "2"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  stop_sims();
  const auto lines = check_record(o.run_dir);
  ASSERT_EQ(lines.size(), 50u);
  const json::object& client = o.summary.at("client").as_object();
  EXPECT_EQ(client.at("threads").as_int64(), 2);
  EXPECT_EQ(client.at("cpu_scope").as_string(), "process");
  EXPECT_GT(client.at("loop_cpu_s").to_number<double>(), 0.0);
  // Keep-alive holds: each shard opens at most the connections it has in flight at once.
  EXPECT_LE(client.at("connections_opened").as_int64(), 8 + 2);
  EXPECT_EQ(o.summary.at("requests").at("ok").as_int64(), 48);
  EXPECT_EQ(o.summary.at("tokens").at("output_total").as_int64(), 48 * 24);

  const json::object manifest = read_json(o.run_dir / "manifest.json");
  const std::string run_id(manifest.at("run_id").as_string());
  const std::int64_t t0 = manifest.at("clock").at("t0_steady_ns").as_int64();
  std::map<std::string, json::object> by_id;
  for (auto& t : read_jsonl(truth)) by_id[std::string(t.at("request_id").as_string())] = t;
  ASSERT_EQ(by_id.size(), 50u);
  std::set<std::int64_t> indices;
  for (const auto& r : lines) {
    indices.insert(i64(r.at("index")));
    const std::string xid = run_id + "-" + std::to_string(r.at("index").as_int64());
    ASSERT_TRUE(by_id.count(xid)) << xid;
    const json::object& t = by_id[xid];
    EXPECT_EQ(i64(r.at("output_tokens")), i64(t.at("completion_tokens"))) << xid;
    EXPECT_EQ(i64(r.at("input_tokens")), i64(t.at("prompt_tokens"))) << xid;
    // Every event the sim wrote was seen once, in order, after it was written and soon after
    // (tolerant: the two processes share a busy 2-core machine).
    const auto& written = t.at("event_times_ns").as_array();
    const auto& deltas = r.at("chunk_times_ns").as_array();
    ASSERT_EQ(deltas.size(), written.size()) << xid;
    std::int64_t seen = t0;
    for (std::size_t i = 0; i < deltas.size(); ++i) {
      seen += deltas[i].as_int64();
      const std::int64_t w = written[i].to_number<std::int64_t>();
      EXPECT_GE(seen, w) << xid << " event " << i;
      EXPECT_LT(seen - w, 20'000'000) << xid << " event " << i;
    }
    // The request was sent before the sim's kernel received it.
    EXPECT_GE(i64(t.at("arrived_ns")), t0 + i64(r.at("sent_ns"))) << xid;
  }
  EXPECT_EQ(indices.size(), 50u);  // one record line per submission, none twice
}

TEST_F(Integration, TwoClientThreadsCountFailuresAndKeepEveryRequestOfAnInterruptedRun) {
  const std::string url = start_sim({"--profile", "small-gpu", "--fault-500", "5"});
  const Outcome o =
      run_dyno({"--url", url, "--model", "dyno-sim", "-n", "40", "-c", "6", "--output-tokens", "8",
                "--input-tokens", "16", "--client-threads", "3", "--error-budget", "1"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto lines = check_record(o.run_dir);
  ASSERT_EQ(lines.size(), 40u);
  std::size_t http_errors = 0;
  for (const auto& r : lines) {
    if (r.at("status").as_string() != "ok") {
      EXPECT_EQ(r.at("error").at("category").as_string(), "http_status");
      ++http_errors;
    }
  }
  EXPECT_EQ(http_errors, 8u);  // every 5th request of the sim: 40 / 5

  // An interrupt while requests are in flight on every shard: a valid record that keeps every
  // finished request.
  std::vector<std::string> argv = {DYNO_BINARY,
                                   "run",
                                   "-q",
                                   "--runs-root",
                                   (dir_ / "runs2").string(),
                                   "--url",
                                   url,
                                   "--model",
                                   "dyno-sim",
                                   "--duration",
                                   "60",
                                   "-c",
                                   "6",
                                   "--output-tokens",
                                   "64",
                                   "--client-threads",
                                   "2"};
  Child c(argv, (dir_ / "run2.out").string(), (dir_ / "run2.err").string());
  fs::path run_dir;
  for (int i = 0; i < 600 && run_dir.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!fs::is_directory(dir_ / "runs2")) continue;
    for (const auto& e : fs::directory_iterator(dir_ / "runs2")) {
      const fs::path requests = e.path() / "requests.jsonl";
      if (e.is_directory() && fs::exists(requests) && read_jsonl(requests).size() >= 8) {
        run_dir = e.path();
      }
    }
  }
  ASSERT_FALSE(run_dir.empty()) << c.err();
  c.signal(SIGINT);
  EXPECT_EQ(c.wait(std::chrono::seconds(30)), 130) << c.err();
  const auto kept = check_record(run_dir);
  const json::object summary = read_json(run_dir / "summary.json");
  EXPECT_EQ(summary.at("status").as_string(), "interrupted");
  std::size_t ok = 0;
  for (const auto& r : kept) {
    if (r.at("status").as_string() == "ok") {
      ++ok;
    } else if (r.at("status").as_string() == "error") {  // the sim's every 5th: an HTTP 500
      EXPECT_EQ(r.at("error").at("category").as_string(), "http_status");
    }
  }
  EXPECT_GE(kept.size(), 8u);
  EXPECT_GE(ok, 4u);
  EXPECT_EQ(static_cast<std::size_t>(summary.at("requests").at("ok").as_int64()), ok);
  EXPECT_EQ(summary.at("client").at("threads").as_int64(), 2);
}

TEST_F(Integration, ClientThreadsFlagIsChecked) {
  const Outcome zero = run_dyno({"-n", "2", "--client-threads", "0"});
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_NE(zero.err.find("--client-threads"), std::string::npos) << zero.err;
  // A refused port on several shards: every request a connect error, and the run ends.
  const Outcome refused = run_dyno({"--url", "http://127.0.0.1:1/v1", "--model", "m", "-n", "6",
                                    "-c", "3", "--client-threads", "2"});
  EXPECT_EQ(refused.exit_code, 3) << refused.err;
  const auto lines = check_record(refused.run_dir);
  ASSERT_EQ(lines.size(), 6u);
  for (const auto& r : lines) EXPECT_EQ(r.at("error").at("category").as_string(), "connect");
}

}  // namespace
