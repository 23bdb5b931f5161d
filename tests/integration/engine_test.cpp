// `dyno run --engine spec.toml`: dyno launches `dyno sim` as a child process, measures ready_s,
// keeps its log, stops it at the end and on SIGINT, reports engine_crashed when it dies
// mid-run, and fails fast (leaving no process behind) when it cannot start or never gets ready.
#include <gtest/gtest.h>
#include <signal.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "integration/json_files.h"
#include "integration/process.h"
#include "integration/record_check.h"
#include "scrub/scrub.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::testing::Child;
using dyno::testing::read_json;

namespace {

std::size_t count_lines(const fs::path& path) {
  std::ifstream in(path);
  std::size_t n = 0;
  std::string line;
  while (std::getline(in, line)) n += line.empty() ? 0 : 1;
  return n;
}

/// Alive and not a zombie.
bool alive(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string s;
  if (!std::getline(stat, s)) return false;
  const auto close = s.rfind(')');
  return close != std::string::npos && close + 2 < s.size() && s[close + 2] != 'Z';
}

/// Every process whose command line contains `needle` (our own test's sims only: the needle
/// holds this test's unique directory).
std::vector<int> processes_with(const std::string& needle) {
  std::vector<int> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmd = Child::slurp((e.path() / "cmdline").string());
    for (auto& c : cmd) {
      if (c == '\0') c = ' ';
    }
    if (cmd.find(needle) != std::string::npos && alive(std::stoi(name))) {
      out.push_back(std::stoi(name));
    }
  }
  return out;
}

class Engines : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = dyno::testing::make_temp_dir("dyno-eng"); }
  void TearDown() override {
    dyno::testing::expect_records_conform(dir_ / "runs");  // docs/schema/
    if (!HasFailure()) fs::remove_all(dir_);
  }

  /// A spec launching this build's `dyno sim` (the {dyno} placeholder is this dyno binary).
  fs::path sim_spec(const std::string& extra_args, const std::string& extra = "") {
    const fs::path p = dir_ / "sim.toml";
    std::ofstream(p) << "name = \"sim-under-test\"\npreset = \"sim\"\nport = \"auto\"\n"
                     << extra << "\n[engine_args]\nprofile = \"small-gpu\"\n"
                     << extra_args << "\n[ready]\ntimeout_s = 60\n[stop]\ngrace_s = 10\n";
    return p;
  }

  std::vector<std::string> dyno(const std::string& cmd, std::vector<std::string> args) {
    std::vector<std::string> argv = {
        DYNO_BINARY, cmd, "-q", "--telemetry", "off", "--runs-root", (dir_ / "runs").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  std::vector<fs::path> run_dirs() const {
    std::vector<fs::path> out;
    if (!fs::exists(dir_ / "runs")) return out;
    for (const auto& e : fs::directory_iterator(dir_ / "runs")) {
      if (e.is_directory() && fs::exists(e.path() / "manifest.json")) out.push_back(e.path());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  fs::path dir_;
};

}  // namespace

TEST_F(Engines, SpecLaunchesTheSimMeasuresReadinessKeepsTheLogAndStopsIt) {
  Child c(
      dyno("run", {"--engine", sim_spec("").string(), "--requests", "20", "--concurrency", "4"}),
      (dir_ / "out").string(), (dir_ / "err").string());
  ASSERT_EQ(c.wait(), 0) << c.err();
  const auto runs = run_dirs();
  ASSERT_EQ(runs.size(), 1u);
  const json::object m = read_json(runs[0] / "manifest.json");
  EXPECT_EQ(m.at("status").as_string(), "ok");
  // No GPU identity without telemetry, and the record says why.
  EXPECT_TRUE(m.at("hardware").at("gpus").as_array().empty());
  EXPECT_NE(
      std::string(m.at("hardware").at("unknown").at("gpus").as_string()).find("telemetry off"),
      std::string::npos);
  const auto& engine = m.at("engine").as_object();
  EXPECT_EQ(engine.at("name").as_string(), "sim-under-test");
  EXPECT_EQ(engine.at("reached").at("kind").as_string(), "launched");
  EXPECT_EQ(engine.at("version").as_string(), engine.at("reported").at("version").as_string());
  EXPECT_EQ(engine.at("reported").at("name").as_string(), "dyno-sim");
  EXPECT_EQ(engine.at("reported").at("model_id").as_string(), "dyno-sim");
  const auto& launch = engine.at("launch").as_object();
  const double ready_s = launch.at("ready_s").as_double();
  EXPECT_GT(ready_s, 0.0);
  EXPECT_LT(ready_s, 60.0);
  EXPECT_GE(ready_s, launch.at("probe_ready_s").as_double());
  EXPECT_EQ(launch.at("cell_index").as_int64(), 0);
  EXPECT_EQ(launch.at("preset").as_string(), "sim");
  // The exact launch line, with the port it picked.
  const auto& argv = launch.at("argv").as_array();
  ASSERT_GE(argv.size(), 4u);
  EXPECT_EQ(argv[1].as_string(), "sim");
  const int port = static_cast<int>(launch.at("port").as_int64());
  EXPECT_NE(std::find(argv.begin(), argv.end(), json::value(std::to_string(port))), argv.end());
  // Its log is evidence, hashed in the manifest and in SHA256SUMS.
  const std::string log = Child::slurp((runs[0] / "evidence/engine.log").string());
  EXPECT_NE(log.find("dyno sim listening on http://127.0.0.1:" + std::to_string(port)),
            std::string::npos);
  bool listed = false;
  for (const auto& e : m.at("evidence").as_array()) {
    listed = listed || e.at("path").as_string() == "evidence/engine.log";
  }
  EXPECT_TRUE(listed);
  EXPECT_NE(Child::slurp((runs[0] / "SHA256SUMS").string()).find("evidence/engine.log"),
            std::string::npos);
  EXPECT_NE(c.err().find("ready in"), std::string::npos);
  EXPECT_NE(c.err().find("stopped (SIGINT"), std::string::npos) << c.err();
  // Stopped: nothing of it is left.
  EXPECT_TRUE(processes_with(std::to_string(port)).empty());
}

TEST_F(Engines, OneLaunchServesEveryCellOfAProtocol) {
  Child c(dyno("sweep", {"--engine", sim_spec("").string(), "--concurrencies", "1,2",
                         "--min-requests", "4", "--per-slot", "2"}),
          (dir_ / "out").string(), (dir_ / "err").string());
  ASSERT_EQ(c.wait(), 0) << c.err();
  const auto runs = run_dirs();
  ASSERT_EQ(runs.size(), 2u);
  std::set<std::string> launches;
  std::set<std::int64_t> cells;
  for (const auto& r : runs) {
    const auto launch = read_json(r / "manifest.json").at("engine").at("launch").as_object();
    launches.insert(std::string(launch.at("launch_id").as_string()));
    cells.insert(launch.at("cell_index").as_int64());
    EXPECT_TRUE(launch.at("shared_by_cells").as_bool());
    EXPECT_TRUE(fs::exists(r / "evidence/engine.log"));
  }
  EXPECT_EQ(launches.size(), 1u);
  EXPECT_EQ(cells, (std::set<std::int64_t>{0, 1}));
  // One "starting engine" line: no reload between cells.
  const std::string err = c.err();
  EXPECT_EQ(err.find("starting engine"), err.rfind("starting engine"));
}

TEST_F(Engines, AnEngineThatExitsMidRunEndsItAsEngineCrashedKeepingFinishedRequests) {
  Child c(dyno("run", {"--engine", sim_spec("exit_after = 12").string(), "--requests", "200",
                       "--concurrency", "2"}),
          (dir_ / "out").string(), (dir_ / "err").string());
  EXPECT_EQ(c.wait(), 3) << c.err();
  EXPECT_NE(c.err().find("during the run"), std::string::npos) << c.err();
  const auto runs = run_dirs();
  ASSERT_EQ(runs.size(), 1u);
  const json::object m = read_json(runs[0] / "manifest.json");
  const json::object s = read_json(runs[0] / "summary.json");
  EXPECT_EQ(m.at("status").as_string(), "engine_crashed");
  EXPECT_EQ(s.at("status").as_string(), "engine_crashed");
  const auto& exit = m.at("engine").at("exit").as_object();
  EXPECT_EQ(exit.at("code").as_int64(), 0);
  EXPECT_TRUE(exit.contains("log_tail"));
  // The requests the engine finished are kept (the 12th is the last it served; with two in
  // flight one or two more may have been cut), and the run did not wait for all 200.
  const auto ok = s.at("requests").at("ok").as_int64();
  EXPECT_GE(ok, 10);
  EXPECT_LE(ok, 12);
  EXPECT_EQ(count_lines(runs[0] / "requests.jsonl"),
            static_cast<std::size_t>(s.at("requests").at("total").as_int64() +
                                     s.at("requests").at("cancelled").as_int64()));
  EXPECT_TRUE(fs::exists(runs[0] / "SHA256SUMS"));
  // Sending stopped at the crash: no request went on into the closed port (each would have
  // failed at connect), and the few that raced the exit are not failures of the engine. How
  // many raced it depends on how soon the exit is noticed: on a loaded machine (the sanitizer
  // suite beside other builds) 17 lines were seen, so the bound leaves room for a few more
  // per slot while staying far below the 200 requests a run that kept sending would write.
  EXPECT_LE(count_lines(runs[0] / "requests.jsonl"), 24u);
  // Each request as it happened: one never written to the engine's socket is "not sent"
  // (cancelled); one that had been written is the engine's failure, never "not sent".
  std::ifstream lines(runs[0] / "requests.jsonl");
  std::string line;
  while (std::getline(lines, line)) {
    const json::object r = json::parse(line).as_object();
    const std::string status(r.at("status").as_string());
    if (status == "cancelled") {
      EXPECT_TRUE(r.at("sent_ns").is_null()) << line;
      EXPECT_EQ(std::string(r.at("error").at("message").as_string()).rfind("not sent: ", 0), 0u)
          << line;
    } else if (status == "error") {
      EXPECT_FALSE(r.at("sent_ns").is_null())
          << "a request never sent counted as a failure: " << line;
      const std::string category(r.at("error").at("category").as_string());
      EXPECT_TRUE(category == "connect" || category == "stream_truncated") << line;
    }
  }
}

TEST_F(Engines, SigintStopsTheRunAndTheEngine) {
  Child c(
      dyno("run", {"--engine", sim_spec("").string(), "--duration", "60", "--concurrency", "2"}),
      (dir_ / "out").string(), (dir_ / "err").string());
  // Wait until requests flow (the record's requests.jsonl grows).
  bool flowing = false;
  for (int i = 0; i < 3000 && !flowing; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    for (const auto& r : run_dirs()) flowing = flowing || count_lines(r / "requests.jsonl") > 0;
  }
  ASSERT_TRUE(flowing) << c.err();
  const auto runs = run_dirs();
  const auto launch = read_json(runs[0] / "manifest.json").at("engine").at("launch").as_object();
  const std::string port = std::to_string(launch.at("port").as_int64());
  ASSERT_FALSE(processes_with(port).empty());
  c.signal(SIGINT);
  EXPECT_EQ(c.wait(std::chrono::seconds(60)), 130) << c.err();
  EXPECT_EQ(read_json(runs[0] / "manifest.json").at("status").as_string(), "interrupted");
  EXPECT_TRUE(processes_with(port).empty()) << "the engine outlived dyno";
}

TEST_F(Engines, ACommandThatDoesNotExistFailsFastWithAClearError) {
  const fs::path p = dir_ / "missing.toml";
  std::ofstream(p) << "name = \"ghost\"\nmodel = \"m\"\ncommand = [\"no-such-engine-xyz\", "
                      "\"serve\"]\n[ready]\nhttp_path = \"/health\"\n";
  const auto t0 = std::chrono::steady_clock::now();
  Child c(dyno("run", {"--engine", p.string(), "--requests", "5"}), (dir_ / "out").string(),
          (dir_ / "err").string());
  EXPECT_EQ(c.wait(), 2);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  EXPECT_NE(c.err().find("--engine " + p.string() +
                         ": engine command 'no-such-engine-xyz' was not found on PATH"),
            std::string::npos)
      << c.err();
  EXPECT_TRUE(run_dirs().empty());  // no record for a run that never started
}

TEST_F(Engines, AnEngineThatNeverGetsReadyFailsAtTheTimeoutAndLeavesNoProcess) {
  // A "server" that never listens: a shell whose worker sleeps, so the whole group must go.
  const fs::path p = dir_ / "stuck.toml";
  const std::string marker = (dir_ / "stuck-marker").string();
  std::ofstream(p) << "name = \"stuck\"\nmodel = \"m\"\ncommand = [\"sh\", \"-c\", "
                      "\"echo loading weights; sh -c 'sleep 120; true "
                   << marker
                   << "' & wait\"]\n[ready]\nhttp_path = \"/health\"\ntimeout_s = 1.5\n"
                      "interval_s = 0.1\n";
  Child c(dyno("run", {"--engine", p.string(), "--requests", "5"}), (dir_ / "out").string(),
          (dir_ / "err").string());
  EXPECT_EQ(c.wait(std::chrono::seconds(60)), 1) << c.err();
  const std::string err = c.err();
  EXPECT_NE(err.find("engine stuck (" + p.string() + ") was not ready within 1 s"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("loading weights"), std::string::npos) << "the log's tail is shown";
  for (int i = 0; i < 200 && !processes_with(marker).empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(processes_with(marker).empty()) << "an engine process was orphaned";
  EXPECT_TRUE(run_dirs().empty());
}

TEST_F(Engines, AnEngineThatExitsDuringLaunchIsReportedWithItsLog) {
  const fs::path p = dir_ / "dies.toml";
  std::ofstream(p) << "name = \"dies\"\nmodel = \"m\"\ncommand = [\"sh\", \"-c\", "
                      "\"echo CUDA out of memory >&2; exit 1\"]\n[ready]\nhttp_path = "
                      "\"/health\"\ntimeout_s = 60\n";
  Child c(dyno("run", {"--engine", p.string(), "--requests", "5"}), (dir_ / "out").string(),
          (dir_ / "err").string());
  EXPECT_EQ(c.wait(std::chrono::seconds(60)), 1);
  EXPECT_NE(c.err().find("exited with code 1 before it was ready"), std::string::npos) << c.err();
  EXPECT_NE(c.err().find("CUDA out of memory"), std::string::npos);
}

TEST_F(Engines, SecretsInTheSpecNeverReachTheRecord) {
  const std::string secret = "sk-spec-canary-7c1d9e";
  // A secret in the engine's environment, and dyno's own API key.
  const fs::path p = dir_ / "secret.toml";
  std::ofstream(p) << "name = \"sim-secret\"\npreset = \"sim\"\nport = \"auto\"\n"
                      "command = [\"{dyno}\", \"sim\", \"--host\", \"{host}\", \"--port\", "
                      "\"{port}\"]\n"
                      "[env]\nHF_TOKEN = \""
                   << secret << "\"\n[ready]\ntimeout_s = 60\n";
  Child c(dyno("run", {"--engine", p.string(), "--requests", "5", "--concurrency", "1"}),
          (dir_ / "out").string(), (dir_ / "err").string(), {{"DYNO_API_KEY", secret + "-key"}});
  ASSERT_EQ(c.wait(), 0) << c.err();
  for (const auto& e : fs::recursive_directory_iterator(dir_ / "runs")) {
    if (!e.is_regular_file()) continue;
    EXPECT_EQ(Child::slurp(e.path().string()).find(secret), std::string::npos) << e.path();
  }
  EXPECT_EQ(c.out().find(secret), std::string::npos);
  EXPECT_EQ(c.err().find(secret), std::string::npos);
  const auto runs = run_dirs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(read_json(runs[0] / "manifest.json")
                .at("engine")
                .at("launch")
                .at("env")
                .at("HF_TOKEN")
                .as_string(),
            dyno::scrub::scrub_marker("secret"));
}

TEST_F(Engines, TheSpecsCheckoutCommitAndDirtyFlagAreRecorded) {
  const fs::path repo = dir_ / "engine-src";
  fs::create_directories(repo);
  std::ofstream(repo / "engine.py") << "print('v1')\n";
  const std::string git = "git -C " + repo.string() + " ";
  ASSERT_EQ(std::system((git + "init -q && " + git + "add engine.py && " + git +
                         "-c user.name=t -c user.email=t@t commit -qm v1")
                            .c_str()),
            0);
  std::ofstream(repo / "engine.py") << "print('v2')\n";  // a tracked change: dirty
  Child c(dyno("run", {"--engine", sim_spec("", "checkout = \"" + repo.string() + "\"").string(),
                       "--requests", "4", "--concurrency", "2"}),
          (dir_ / "out").string(), (dir_ / "err").string());
  ASSERT_EQ(c.wait(), 0) << c.err();
  const auto runs = run_dirs();
  ASSERT_EQ(runs.size(), 1u);
  const auto source = read_json(runs[0] / "manifest.json").at("engine").at("source").as_object();
  EXPECT_EQ(source.at("commit").as_string().size(), 40u);
  EXPECT_TRUE(source.at("dirty").as_bool());
  EXPECT_EQ(source.at("checkout").as_string(), "engine-src");
}

TEST_F(Engines, AServerReachedByUrlIsIdentifiedFromItsOwnEndpoints) {
  Child sim({DYNO_BINARY, "sim", "--port", "0", "--profile", "cpu"}, (dir_ / "sim.out").string(),
            (dir_ / "sim.err").string());
  const std::string out = sim.wait_for_output("/v1");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex("(http://[0-9.]+:[0-9]+/v1)")));
  Child c(dyno("run", {"--url", m[1], "--model", "dyno-sim", "--requests", "4"}),
          (dir_ / "out").string(), (dir_ / "err").string());
  ASSERT_EQ(c.wait(), 0) << c.err();
  sim.signal(SIGTERM);
  sim.wait(std::chrono::seconds(10));
  const auto engine = read_json(run_dirs().at(0) / "manifest.json").at("engine").as_object();
  EXPECT_EQ(engine.at("name").as_string(), "dyno-sim");
  EXPECT_EQ(engine.at("reported").at("sources").at("/version").at("profile").as_string(), "cpu");
  EXPECT_TRUE(engine.at("reported").at("unavailable").as_object().contains("/props"));
}

TEST_F(Engines, ALogLineCanBeTheReadinessProbe) {
  const fs::path p = dir_ / "logline.toml";
  std::ofstream(p) << "name = \"sim-log\"\npreset = \"sim\"\n[ready]\n"
                      "log_line = \"dyno sim listening on\"\nfirst_request = false\n";
  Child c(dyno("run", {"--engine", p.string(), "--requests", "4", "--concurrency", "2"}),
          (dir_ / "out").string(), (dir_ / "err").string());
  ASSERT_EQ(c.wait(), 0) << c.err();
  const auto launch =
      read_json(run_dirs().at(0) / "manifest.json").at("engine").at("launch").as_object();
  EXPECT_EQ(launch.at("ready").at("log_line").as_string(), "dyno sim listening on");
  EXPECT_TRUE(launch.at("ready").at("http_path").is_null());  // the log line replaces the probe
  EXPECT_TRUE(launch.at("first_request_s").is_null());
  EXPECT_DOUBLE_EQ(launch.at("ready_s").as_double(), launch.at("probe_ready_s").as_double());
}
