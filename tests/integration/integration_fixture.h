// The fixture of the `dyno` binary's integration tests: a temporary directory, `dyno sim` in
// other processes, `dyno run` with --json, and the checks every record must pass. In a named
// namespace (one fixture class for the test files of one executable), with what every test
// file uses: `using namespace dyno::integration;`.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "integration/json_files.h"
#include "integration/process.h"
#include "integration/record_check.h"
#include "record/record_schema.h"
#include "temp_dir.h"
#include "workload/stream_test_util.h"

namespace dyno::integration {

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::testing::Child;
using dyno::testing::read_json;
using dyno::testing::read_jsonl;

inline std::int64_t i64(const json::value& v) {
  return v.is_null() ? -1 : v.to_number<std::int64_t>();
}

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
  fs::path run_dir;
  json::object summary;
};

class Integration : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = dyno::testing::make_temp_dir("dyno-it"); }
  void TearDown() override {
    dyno::testing::expect_records_conform(dir_ /
                                          "runs");  // whatever the test ran, its records conform
    if (!HasFailure() && std::getenv("DYNO_KEEP") == nullptr) fs::remove_all(dir_);
  }

  /// The test's runs root (what run_dyno writes into).
  std::string runs() const { return (dir_ / "runs").string(); }

  /// Run directories under runs() (0 when it does not exist).
  std::size_t record_count() const {
    std::size_t n = 0;
    if (!fs::is_directory(dir_ / "runs")) return 0;
    for (const auto& e : fs::directory_iterator(dir_ / "runs")) n += e.is_directory() ? 1 : 0;
    return n;
  }

  /// Starts `dyno sim --port 0 ...`; returns its base URL.
  std::string start_sim(std::vector<std::string> extra) {
    std::vector<std::string> argv = {DYNO_BINARY, "sim", "--port", "0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    sims_.push_back(
        std::make_unique<Child>(argv, (dir_ / "sim.out").string(), (dir_ / "sim.err").string()));
    const std::string out = sims_.back()->wait_for_output("/v1");
    std::smatch m;
    const std::regex re("listening on (http://[0-9.]+:[0-9]+/v1)");
    if (!std::regex_search(out, m, re)) throw std::runtime_error("no address in: " + out);
    return m[1];
  }

  void stop_sims() {
    for (auto& s : sims_) {
      s->signal(SIGTERM);
      s->wait(std::chrono::seconds(10));
    }
  }

  /// `dyno <args…>`: its exit code, stdout and stderr.
  Outcome dyno(std::vector<std::string> args, const std::map<std::string, std::string>& env = {}) {
    args.insert(args.begin(), DYNO_BINARY);
    Child c(args, (dir_ / "cmd.out").string(), (dir_ / "cmd.err").string(), env);
    Outcome o;
    o.exit_code = c.wait();
    o.out = c.out();
    o.err = c.err();
    return o;
  }

  Outcome run_dyno(std::vector<std::string> args,
                   const std::map<std::string, std::string>& env = {}) {
    std::vector<std::string> argv = {DYNO_BINARY, "run",         "--json",
                                     "-q",        "--runs-root", (dir_ / "runs").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    Child c(argv, (dir_ / "run.out").string(), (dir_ / "run.err").string(), env);
    Outcome o;
    o.exit_code = c.wait();
    o.out = c.out();
    o.err = c.err();
    try {
      o.summary = json::parse(o.out).as_object();
      o.run_dir = std::string(o.summary.at("record_dir").as_string());
    } catch (const std::exception&) {
    }
    return o;
  }

  /// A trace for the fake GPU (tests/telemetry/fake_nvml, FAKE_NVML_TRACE) in the test's
  /// directory: `watts` drawn for ten minutes, `mem_bytes` in use, the SM clock at `sm_mhz`,
  /// the temperature `temp_c`, then `temp_after_2s_c` from two seconds on.
  fs::path fake_gpu_trace(long long watts, long long mem_bytes, int temp_c, int temp_after_2s_c,
                          int sm_mhz) {
    const fs::path path = dir_ / "trace.csv";
    std::ofstream trace(path);
    trace << "t_ms,energy_mJ,power_instant_mW,power_average_mW,mem_used_B,temp_C,sm_MHz,event\n";
    for (long long t = 0; t <= 600000; t += 100) {
      trace << t << "," << t * watts << "," << watts * 1000 << "," << watts * 1000 << ","
            << mem_bytes << "," << (t < 2000 ? temp_c : temp_after_2s_c) << "," << sm_mhz << ",\n";
    }
    return path;
  }

  /// Checks the invariants every record must satisfy; returns the request lines.
  std::vector<json::object> check_record(const fs::path& run) {
    EXPECT_TRUE(fs::exists(run / "manifest.json"));
    EXPECT_TRUE(fs::exists(run / "summary.json"));
    EXPECT_TRUE(fs::exists(run / "requests.jsonl"));
    EXPECT_TRUE(fs::exists(run / "SHA256SUMS"));
    // SHA256SUMS names every file and its digest matches.
    std::ifstream sums(run / "SHA256SUMS");
    std::string line;
    int listed = 0;
    while (std::getline(sums, line)) {
      const std::string digest = line.substr(0, 64);
      const std::string name = line.substr(66);
      Child c({"/usr/bin/sha256sum", (run / name).string()}, (dir_ / "sum.out").string(),
              (dir_ / "sum.err").string());
      EXPECT_EQ(c.wait(), 0);
      EXPECT_EQ(c.out().substr(0, 64), digest) << name;
      ++listed;
    }
    EXPECT_GE(listed, 3);
    const json::object manifest = read_json(run / "manifest.json");
    EXPECT_EQ(manifest.at("schema_version").as_int64(), 1);
    const auto lines = read_jsonl(run / "requests.jsonl");
    for (std::size_t i = 1; i < lines.size(); ++i) {
      EXPECT_LT(lines[i - 1].at("index").as_int64(), lines[i].at("index").as_int64());
    }
    return lines;
  }

  /// The run directory under dir_/runs once its requests.jsonl holds `n` finished requests, or
  /// after 30 s as it is then (empty when no run directory appeared).
  fs::path wait_for_finished_requests(std::size_t n) {
    fs::path run_dir;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      if (fs::exists(dir_ / "runs")) {
        for (const auto& e : fs::directory_iterator(dir_ / "runs")) run_dir = e.path();
      }
      if (!run_dir.empty() && fs::exists(run_dir / "requests.jsonl") &&
          read_jsonl(run_dir / "requests.jsonl").size() >= n) {
        return run_dir;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return run_dir;
  }

  fs::path dir_;
  std::vector<std::unique_ptr<Child>> sims_;
};

}  // namespace dyno::integration
