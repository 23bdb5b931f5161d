// `dyno run --plugin`: the simulated engine's plugin end to end, against the same engine reached
// over loopback HTTP (the embedded sim), and the usage errors around --plugin.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "integration/json_files.h"
#include "integration/process.h"
#include "integration/record_check.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::testing::Child;
using dyno::testing::read_json;
using dyno::testing::read_jsonl;

namespace {

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
  fs::path run_dir;
};

class PluginRun : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = dyno::testing::make_temp_dir("dyno-plugin-it"); }
  void TearDown() override {
    dyno::testing::expect_records_conform(dir_ / "runs");  // docs/schema/
    if (!HasFailure()) fs::remove_all(dir_);
  }

  std::vector<std::string> argv(const std::string& command, const std::vector<std::string>& args) {
    std::vector<std::string> a = {DYNO_BINARY,   command,       "--json",
                                  "-q",          "--runs-root", (dir_ / "runs").string(),
                                  "--telemetry", "off"};
    a.insert(a.end(), args.begin(), args.end());
    return a;
  }

  Outcome run(const std::vector<std::string>& args) {
    Child c(argv("run", args), (dir_ / "run.out").string(), (dir_ / "run.err").string());
    Outcome o;
    o.exit_code = c.wait();
    o.out = c.out();
    o.err = c.err();
    try {
      o.run_dir = std::string(json::parse(o.out).at("record_dir").as_string());
    } catch (const std::exception&) {
    }
    return o;
  }

  std::string sha256sum(const std::string& path) {
    Child c({"/usr/bin/sha256sum", path}, (dir_ / "sum.out").string(), (dir_ / "sum.err").string());
    EXPECT_EQ(c.wait(), 0);
    return c.out().substr(0, 64);
  }

  fs::path dir_;
};

}  // namespace

TEST_F(PluginRun, SimPluginEndToEndMatchesTheSimOverHttp) {
  const std::vector<std::string> workload = {
      "-n",     "12", "-c", "1", "--input-tokens", "48", "--output-tokens", "20", "--keep-outputs",
      "--seed", "5"};
  std::vector<std::string> plugin_args = {"--plugin", SIM_PLUGIN_PATH, "--plugin-config",
                                          "profile=small-gpu,seed=5"};
  plugin_args.insert(plugin_args.end(), workload.begin(), workload.end());
  const Outcome p = run(plugin_args);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  std::vector<std::string> http_args = {"--profile", "small-gpu"};
  http_args.insert(http_args.end(), workload.begin(), workload.end());
  const Outcome h = run(http_args);
  ASSERT_EQ(h.exit_code, 0) << h.err;

  const json::object manifest = read_json(p.run_dir / "manifest.json");
  const json::object summary = read_json(p.run_dir / "summary.json");
  EXPECT_EQ(manifest.at("status").as_string(), "ok");
  EXPECT_EQ(summary.at("status").as_string(), "ok");
  const auto& engine = manifest.at("engine").as_object();
  EXPECT_EQ(engine.at("name").as_string(), "dyno-sim");
  EXPECT_EQ(engine.at("reached").at("kind").as_string(), "plugin");
  EXPECT_EQ(engine.at("reached").at("file").as_string(), "libdyno_sim_plugin.so");
  EXPECT_EQ(engine.at("reached").at("sha256").as_string(), sha256sum(SIM_PLUGIN_PATH));
  EXPECT_EQ(engine.at("identity").at("engine_name").as_string(), "dyno-sim");
  EXPECT_EQ(engine.at("identity").at("model_id").as_string(), "dyno-sim");
  EXPECT_EQ(engine.at("identity").at("args").at("profile").at("name").as_string(), "small-gpu");
  EXPECT_EQ(engine.at("engine_args").at("plugin_config").as_string(), "profile=small-gpu,seed=5");
  // No absolute path of this host in the record.
  EXPECT_EQ(Child::slurp((p.run_dir / "manifest.json").string())
                .find(fs::path(SIM_PLUGIN_PATH).parent_path().string()),
            std::string::npos);
  EXPECT_EQ(read_json(h.run_dir / "manifest.json").at("engine").at("reached").at("kind"),
            "embedded-sim");

  // The same stream, the same engine: the same tokens and text, request by request.
  const auto plugin_lines = read_jsonl(p.run_dir / "requests.jsonl");
  const auto http_lines = read_jsonl(h.run_dir / "requests.jsonl");
  ASSERT_EQ(plugin_lines.size(), 12u);
  ASSERT_EQ(http_lines.size(), 12u);
  std::int64_t events = 0;
  for (std::size_t i = 0; i < plugin_lines.size(); ++i) {
    const auto& a = plugin_lines[i];
    const auto& b = http_lines[i];
    EXPECT_EQ(a.at("status").as_string(), "ok");
    EXPECT_EQ(a.at("request_id"), b.at("request_id"));
    EXPECT_EQ(a.at("input_tokens"), b.at("input_tokens")) << i;
    EXPECT_EQ(a.at("output_tokens"), b.at("output_tokens")) << i;
    EXPECT_EQ(a.at("output_tokens").as_int64(), 20);
    EXPECT_EQ(a.at("token_events"), b.at("token_events")) << i;
    EXPECT_EQ(a.at("output_text"), b.at("output_text")) << i;
    EXPECT_EQ(a.at("finish_reason"), b.at("finish_reason")) << i;
    EXPECT_TRUE(a.at("first_byte_ns").is_null());
    events += a.at("token_events").as_int64();
  }
  // Every event and every end carried the engine's own time.
  const auto& stamps = manifest.at("clock").at("event_stamps").as_object();
  EXPECT_EQ(stamps.at("engine").as_int64(), events + 12);
  EXPECT_EQ(stamps.at("receive").as_int64(), 0);
  EXPECT_EQ(stamps.at("rejected").as_int64(), 0);
  EXPECT_EQ(summary.at("tokens").at("output_total"),
            read_json(h.run_dir / "summary.json").at("tokens").at("output_total"));
  // The record is complete: SHA256SUMS lists the files with their digests.
  std::ifstream sums(p.run_dir / "SHA256SUMS");
  std::string line;
  int listed = 0;
  while (std::getline(sums, line)) {
    EXPECT_EQ(sha256sum((p.run_dir / line.substr(66)).string()), line.substr(0, 64));
    ++listed;
  }
  EXPECT_GE(listed, 3);
}

TEST_F(PluginRun, ABareFileNameIsFoundNextToTheBinaryAndProtocolsTakeThePlugin) {
  Child c(argv("sweep", {"--plugin", "libdyno_sim_plugin.so", "--plugin-config", "profile=firehose",
                         "--concurrencies", "1,2", "--min-requests", "4", "--per-slot", "2",
                         "--output-tokens", "8", "--input-tokens", "16"}),
          (dir_ / "p.out").string(), (dir_ / "p.err").string());
  ASSERT_EQ(c.wait(), 0) << c.err();
  const json::object doc = json::parse(c.out()).as_object();
  EXPECT_EQ(doc.at("status").as_string(), "ok");
  const auto& cells = doc.at("cells").as_array();
  ASSERT_EQ(cells.size(), 2u);
  for (const auto& cell : cells) {
    for (const auto& r : cell.at("runs").as_array()) {
      const fs::path run = dir_ / "runs" / std::string(r.at("run_id").as_string());
      const json::object m = read_json(run / "manifest.json");
      EXPECT_EQ(m.at("engine").at("reached").at("kind").as_string(), "plugin");
      EXPECT_EQ(m.at("status").as_string(), "ok");
    }
  }
}

TEST_F(PluginRun, ThePluginServesFinishWork) {
  // As the HTTP sim (sim_fit_test.cpp): 60 ms of work after each finished request holds the
  // next step, so a closed loop's next request waits for it.
  const fs::path profile = dir_ / "finishing.json";
  std::ofstream(profile) << R"({"max_running_seqs": 4, "step_token_budget": 2048,
    "prefill_tokens_per_s": 10000, "step_base_s": 0.005, "decode_seq_s": 0, "finish_s": 0.06})";
  const Outcome o =
      run({"--plugin", SIM_PLUGIN_PATH, "--plugin-config", "profile=" + profile.string(), "-c", "1",
           "-n", "3", "--input-tokens", "16", "--output-tokens", "4"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto lines = read_jsonl(o.run_dir / "requests.jsonl");
  ASSERT_EQ(lines.size(), 3u);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const double wait_s = static_cast<double>(lines[i].at("first_token_ns").as_int64() -
                                              lines[i - 1].at("done_ns").as_int64()) *
                          1e-9;
    EXPECT_GE(wait_s, 0.06 - 0.002) << i;
  }
}

TEST_F(PluginRun, SigintCancelsTheEngineRequestsAndKeepsTheRecord) {
  // The cpu profile is slow (~40 ms per token): 4 requests of 2000 tokens are still running.
  Child c(argv("run", {"--plugin", SIM_PLUGIN_PATH, "--plugin-config", "profile=cpu", "-c", "4",
                       "-n", "4", "--output-tokens", "2000", "--input-tokens", "16"}),
          (dir_ / "run.out").string(), (dir_ / "run.err").string());
  // Wait until the record exists, then interrupt mid-stream.
  fs::path run_dir;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (run_dir.empty() && std::chrono::steady_clock::now() < deadline) {
    if (fs::exists(dir_ / "runs")) {
      for (const auto& e : fs::directory_iterator(dir_ / "runs")) {
        if (e.is_directory()) run_dir = e.path();  // not the index (index.sqlite)
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_FALSE(run_dir.empty());
  // The record exists a moment before the first request is sent, and a signal before then
  // sends none; 2000 tokens take seconds, so 1 s later the four are streaming.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  c.signal(SIGINT);
  EXPECT_EQ(c.wait(std::chrono::seconds(30)), 130) << c.err();
  EXPECT_EQ(read_json(run_dir / "manifest.json").at("status").as_string(), "interrupted");
  const auto lines = read_jsonl(run_dir / "requests.jsonl");
  ASSERT_EQ(lines.size(), 4u);
  for (const auto& l : lines) {
    EXPECT_EQ(l.at("status").as_string(), "cancelled");
    EXPECT_EQ(l.at("error").at("category").as_string(), "cancelled");
  }
}

TEST_F(PluginRun, UsageErrorsNameTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--plugin", SIM_PLUGIN_PATH, "--url", "http://127.0.0.1:9/v1", "--model", "m"},
       "--plugin and --url exclude each other"},
      {{"--plugin", (dir_ / "missing.so").string()}, "missing.so: no such file"},
      {{"--plugin", SIM_PLUGIN_PATH, "--plugin-config", "profile=nope"}, "unknown profile"},
      {{"--plugin", NOT_A_PLUGIN_PATH}, "is not a dyno engine plugin"},
      {{"--plugin-config", "profile=cpu"}, "--plugin-config is the configuration of a --plugin"},
  };
  for (const Case& k : cases) {
    std::vector<std::string> args = k.args;
    args.insert(args.end(), {"-n", "1"});
    const Outcome o = run(args);
    EXPECT_EQ(o.exit_code, 2) << k.message;
    EXPECT_NE(o.err.find(k.message), std::string::npos) << o.err;
    EXPECT_NE(o.err.find("error: "), std::string::npos) << o.err;
  }
  EXPECT_FALSE(fs::exists(dir_ / "runs"));  // no record for a run that never started
}
