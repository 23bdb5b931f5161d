// The `dyno` command line as a user meets it (issue 11): numeric flag ranges, signals and the
// record they leave, file-descriptor limits, a request stream's length and hash, campaign
// medians. Each test has a private directory (mkdtemp).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "integration/json_files.h"
#include "integration/process.h"
#include "integration/record_check.h"
#include "integration/stall_server.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::testing::Child;
using dyno::testing::read_json;
using dyno::testing::read_jsonl;

namespace {

struct Result {
  int code = -1;
  std::string out;
  std::string err;
};

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "dyno-cli-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    dyno::testing::expect_records_conform(runs());
    if (!HasFailure()) fs::remove_all(dir_);
  }

  fs::path runs() const { return dir_ / "runs"; }

  Result dyno(const std::vector<std::string>& args,
              std::chrono::seconds timeout = std::chrono::seconds(120)) {
    std::vector<std::string> argv = {DYNO_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    Child c(argv, (dir_ / "out").string(), (dir_ / "err").string());
    Result r;
    r.code = c.wait(timeout);
    r.out = c.out();
    r.err = c.err();
    return r;
  }

  /// The run directories under runs().
  std::vector<fs::path> run_dirs() const {
    std::vector<fs::path> out;
    if (!fs::is_directory(runs())) return out;
    for (const auto& e : fs::directory_iterator(runs())) {
      if (e.is_directory() && e.path().filename() != "campaigns") out.push_back(e.path());
    }
    return out;
  }

  /// `dyno runs verify DIR`: the exit code (0: verifies), with its output on failure.
  int verify(const fs::path& run, std::string* report = nullptr) {
    const Result r = dyno({"runs", "verify", "--runs-root", runs().string(), run.string()});
    if (report != nullptr) *report = r.out + r.err;
    return r.code;
  }

  /// A stream file of `n` chat requests.
  fs::path stream_file(int n) {
    const fs::path file = dir_ / ("stream-" + std::to_string(n) + ".jsonl");
    std::ofstream out(file);
    for (int i = 0; i < n; ++i) {
      // Formatted unlike the canonical form: the canonical hash must not care.
      out << "{ \"messages\": [{\"role\": \"user\", \"content\": \"question number " << i
          << "\"}], \"id\": \"q" << i << "\", \"max_tokens\": 4 }\n";
    }
    return file;
  }

  /// Waits until a run directory under runs() holds at least `lines` request lines.
  fs::path wait_for_requests(std::size_t lines) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      for (const fs::path& d : run_dirs()) {
        if (fs::exists(d / "requests.jsonl") && read_jsonl(d / "requests.jsonl").size() >= lines) {
          return d;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return {};
  }

  fs::path dir_;
};

// ---------------------------------------------------------------------------------------------
// 15. Every numeric flag is range-checked as it is parsed: exit 2, the flag named, no record.

struct BadValue {
  std::vector<std::string> args;
  std::string flag;  ///< the message names it
};

TEST_F(Cli, OutOfRangeNumbersAreUsageErrorsNamingTheFlag) {
  const std::string out = (dir_ / "x.jsonl").string();
  const std::vector<BadValue> cases = {
      // Reproduced in issue 11.
      {{"run", "-n", "-5"}, "--requests"},
      {{"run", "-n", "4294967296"}, "--requests"},
      {{"run", "--input-tokens", "2000000000"}, "--input-tokens"},
      {{"run", "--warmup", "-1"}, "--warmup"},
      {{"run", "--duration", "1e10"}, "--duration"},
      {{"run", "--timeout", "nan"}, "--timeout"},
      // Every kind of value: counts, sizes, rates, durations, fractions, seeds, octal/hex.
      {{"run", "-c", "0"}, "--concurrency"},
      {{"run", "-c", "-1"}, "--concurrency"},
      {{"run", "-n", "0x10"}, "--requests"},
      {{"run", "--rate", "inf"}, "--rate"},
      {{"run", "--rate", "0"}, "--rate"},
      {{"run", "--temperature", "-0.5"}, "--temperature"},
      {{"run", "--error-budget", "1.5"}, "--error-budget"},
      {{"run", "--seed", "-1"}, "--seed"},
      {{"run", "--connect-timeout", "0"}, "--connect-timeout"},
      {{"run", "--first-token-timeout", "-2"}, "--first-token-timeout"},
      {{"run", "--telemetry-period-ms", "5"}, "--telemetry-period-ms"},
      {{"run", "--idle-baseline", "-1"}, "--idle-baseline"},
      {{"run", "--burstiness", "0"}, "--burstiness"},
      {{"run", "--max-tokens", "0"}, "--max-tokens"},
      {{"run", "--output-tokens", "99999999999"}, "--output-tokens"},
      {{"run", "--slo", "ttft=nan"}, "--slo"},
      // Flags that are fine alone but not together.
      {{"run", "-n", "10000000", "--input-tokens", "100"}, "--input-tokens"},
      {{"run", "--rate", "1000000", "--duration", "1000"}, "--rate"},
      // The protocols' own.
      {{"sweep", "--concurrencies", "1,0"}, "--concurrencies"},
      {{"sweep", "--concurrencies", "2.5"}, "--concurrencies"},
      {{"sweep", "--rates", "4,nan"}, "--rates"},
      {{"sweep", "--per-slot", "-1"}, "--per-slot"},
      {{"sweep", "--rate-duration", "0"}, "--rate-duration"},
      {{"sweep", "--repeat", "0"}, "--repeat"},
      {{"ladder", "--depths", "0,1e12"}, "--depths"},
      {{"ladder", "--decode-tokens", "1"}, "--decode-tokens"},
      {{"speed", "--burst", "0"}, "--burst"},
      // The other subcommands.
      {{"sim", "--port", "70000"}, "--port"},
      {{"sim", "--fault-500", "-1"}, "--fault-500"},
      {{"stream", "make", "--count", "-2", "--input-tokens", "8", "--output-tokens", "4", "-o",
        out},
       "--count"},
      {{"stream", "import", "sharegpt", out, "-o", out, "--limit", "-1"}, "--limit"},
      {{"runs", "list", "--limit", "-1"}, "--limit"},
      {{"compare", "--confidence", "2", "--arm", "a=x", "--arm", "b=y"}, "--confidence"},
      {{"compare", "--resamples", "-1", "--arm", "a=x", "--arm", "b=y"}, "--resamples"},
  };
  const std::set<std::string> with_root = {"run", "sweep", "ladder", "speed", "runs", "compare"};
  for (const BadValue& c : cases) {
    std::vector<std::string> args = c.args;
    if (with_root.count(args[0]) != 0) {
      args.insert(args.end(), {"--runs-root", runs().string()});
    }
    if (args[0] == "run" || args[0] == "sweep" || args[0] == "ladder" || args[0] == "speed") {
      args.insert(args.end(), {"-q", "--telemetry", "off"});
    }
    std::string shown;
    for (const auto& a : c.args) shown += a + " ";
    const Result r = dyno(args, std::chrono::seconds(30));
    EXPECT_EQ(r.code, 2) << shown << r.err;
    EXPECT_NE(r.err.find("error: "), std::string::npos) << shown << r.err;
    EXPECT_NE(r.err.find(c.flag), std::string::npos) << shown << r.err;
    EXPECT_TRUE(run_dirs().empty()) << shown << ": a record was created";
    for (const auto& d : run_dirs()) fs::remove_all(d);
  }
}

TEST_F(Cli, RangeMessagesSayWhatWasGivenAndWhatIsExpected) {
  Result r = dyno({"run", "--warmup", "-1", "--runs-root", runs().string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--warmup: -1 is negative (expected an integer between 0 and 10000000)"),
            std::string::npos)
      << r.err;
  r = dyno({"run", "--timeout", "nan", "--runs-root", runs().string()});
  EXPECT_NE(r.err.find("--timeout: nan is not a finite number (expected 0 (off) or a duration "
                       "from 0.001 to 2592000 s)"),
            std::string::npos)
      << r.err;
  // A leading zero is refused (issue 32: read as 10 here, as 8 by tools that read octal).
  r = dyno({"run", "-n", "010", "-c", "2", "--output-tokens", "2", "--telemetry", "off", "-q",
            "--json", "--runs-root", runs().string()});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--requests: '010' has a leading zero"), std::string::npos) << r.err;
}

// ---------------------------------------------------------------------------------------------
// 16. Two signals in a short window are one interrupt; an at-once exit still closes the record.

TEST_F(Cli, TwoSigtermsAMillisecondApartAreOneInterrupt) {
  Child c({DYNO_BINARY, "run", "-q", "--runs-root", runs().string(), "--duration", "120", "-c", "2",
           "--output-tokens", "64", "--telemetry", "off"},
          (dir_ / "out").string(), (dir_ / "err").string());
  const fs::path run = wait_for_requests(1);
  ASSERT_FALSE(run.empty()) << c.err();
  c.signal(SIGTERM);  // what GNU timeout does: the process, then its group
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  c.signal(SIGTERM);
  EXPECT_EQ(c.wait(std::chrono::seconds(30)), 130) << c.err();
  EXPECT_EQ(c.err().find("second interrupt"), std::string::npos) << c.err();
  EXPECT_EQ(read_json(run / "manifest.json").at("status"), "interrupted");
  std::string report;
  EXPECT_EQ(verify(run, &report), 0) << report;
}

TEST_F(Cli, ASecondSigintASecondLaterFindsTheRecordClosed) {
  Child c({DYNO_BINARY, "run", "-q", "--runs-root", runs().string(), "--duration", "120", "-c", "2",
           "--output-tokens", "64", "--telemetry", "off"},
          (dir_ / "out").string(), (dir_ / "err").string());
  const fs::path run = wait_for_requests(1);
  ASSERT_FALSE(run.empty()) << c.err();
  c.signal(SIGINT);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  c.signal(SIGINT);  // by now the first one has finished the record (the sim answers at once)
  EXPECT_EQ(c.wait(std::chrono::seconds(30)), 130) << c.err();
  EXPECT_EQ(read_json(run / "manifest.json").at("status"), "interrupted");
  std::string report;
  EXPECT_EQ(verify(run, &report), 0) << report;
}

TEST_F(Cli, ASecondSigintWhileFinishingHangsExitsAtOnceAndClosesTheRecord) {
  dyno::testing::StallServer server;
  Child c({DYNO_BINARY, "run", "-q", "--runs-root", runs().string(), "--url", server.base_url(),
           "--model", "m", "--duration", "120", "-c", "2"},
          (dir_ / "out").string(), (dir_ / "err").string());
  const fs::path run = wait_for_requests(4);
  ASSERT_FALSE(run.empty()) << c.err();
  server.stall_metrics();  // the /metrics snapshot after the run never comes
  c.signal(SIGINT);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  // Still finishing: the record is open, dyno waits for /metrics.
  ASSERT_EQ(read_json(run / "manifest.json").at("status"), "running") << c.err();
  EXPECT_GE(server.stalled_metrics_requests(), 1);
  const auto sent = std::chrono::steady_clock::now();
  c.signal(SIGINT);
  EXPECT_EQ(c.wait(std::chrono::seconds(30)), 130) << c.err();
  EXPECT_LT(std::chrono::steady_clock::now() - sent, std::chrono::seconds(5)) << c.err();
  EXPECT_NE(c.err().find("second interrupt"), std::string::npos) << c.err();
  const json::object manifest = read_json(run / "manifest.json");
  EXPECT_EQ(manifest.at("status"), "interrupted");
  ASSERT_FALSE(manifest.at("warnings").as_array().empty());
  EXPECT_EQ(manifest.at("warnings").as_array().back().at("code"), "exited_at_once");
  std::string report;
  EXPECT_EQ(verify(run, &report), 0) << report;
  // The store reads it like any other record.
  Result r = dyno({"runs", "list", "--runs-root", runs().string()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(run.filename().string()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("interrupted"), std::string::npos) << r.out;
  r = dyno({"runs", "show", "--runs-root", runs().string(), run.string()});
  EXPECT_EQ(r.code, 0) << r.err;
  // The summary is the requests on disk.
  const auto lines = read_jsonl(run / "requests.jsonl");
  std::int64_t ok = 0;
  for (const auto& l : lines) ok += l.at("status") == "ok" && l.at("phase") == "measured" ? 1 : 0;
  EXPECT_GE(ok, 4);
  EXPECT_EQ(read_json(run / "summary.json").at("requests").at("ok").to_number<std::int64_t>(), ok);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    EXPECT_LT(lines[i - 1].at("index").as_int64(), lines[i].at("index").as_int64());
  }
}

// ---------------------------------------------------------------------------------------------
// 13. More connections than `ulimit -n` allows: refused before sending, both numbers named.

TEST_F(Cli, ConcurrencyAboveTheDescriptorLimitIsRefused) {
  const std::string cmd = "ulimit -n 128 && exec " + std::string(DYNO_BINARY) +
                          " run -q --telemetry off -n 400 -c 200 --output-tokens 2 --runs-root " +
                          runs().string();
  Child c({"/bin/sh", "-c", cmd}, (dir_ / "out").string(), (dir_ / "err").string());
  EXPECT_EQ(c.wait(std::chrono::seconds(60)), 2) << c.err();
  EXPECT_NE(c.err().find("ulimit -n allows 128"), std::string::npos) << c.err();
  EXPECT_NE(c.err().find("-c 200 needs about "), std::string::npos) << c.err();
  EXPECT_TRUE(run_dirs().empty());
  // Within the limit the same run works.
  const std::string fits = "ulimit -n 128 && exec " + std::string(DYNO_BINARY) +
                           " run -q --telemetry off -n 40 -c 20 --output-tokens 2 --runs-root " +
                           runs().string();
  Child ok({"/bin/sh", "-c", fits}, (dir_ / "out").string(), (dir_ / "err").string());
  EXPECT_EQ(ok.wait(std::chrono::seconds(60)), 0) << ok.err();
}

// ---------------------------------------------------------------------------------------------
// 7. A --stream's length is the default -n; wrapping only with --cycle, named in the record.

TEST_F(Cli, AStreamIsSentOnceUnlessCycleIsGiven) {
  const std::string file = stream_file(5).string();
  const std::vector<std::string> base = {"run",           "-q",       "--json", "--telemetry",
                                         "off",           "-c",       "2",      "--runs-root",
                                         runs().string(), "--stream", file};
  Result r = dyno(base);
  ASSERT_EQ(r.code, 0) << r.err;
  fs::path run(std::string(json::parse(r.out).at("record_dir").as_string()));
  json::object m = read_json(run / "manifest.json");
  EXPECT_EQ(m.at("load").at("requests").to_number<std::int64_t>(), 5);
  EXPECT_EQ(m.at("workload").at("request_stream").at("count").to_number<std::int64_t>(), 5);
  EXPECT_EQ(m.at("workload").at("request_stream").at("cycle"), false);
  std::set<std::string> ids;
  for (const auto& l : read_jsonl(run / "requests.jsonl")) {
    ids.insert(std::string(l.at("request_id").as_string()));
  }
  EXPECT_EQ(ids.size(), 5u);

  // More than the stream holds: a usage error naming both numbers and the flag.
  std::vector<std::string> args = base;
  args.insert(args.end(), {"-n", "7"});
  r = dyno(args);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("-n 7"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("holds 5 requests"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--cycle"), std::string::npos) << r.err;
  args = base;
  args.insert(args.end(), {"-n", "4", "--warmup", "2"});
  r = dyno(args);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("ask for 6 requests"), std::string::npos) << r.err;

  // With the warm-ups: -n defaults to what they leave.
  args = base;
  args.insert(args.end(), {"--warmup", "2"});
  r = dyno(args);
  ASSERT_EQ(r.code, 0) << r.err;
  run = std::string(json::parse(r.out).at("record_dir").as_string());
  EXPECT_EQ(read_json(run / "manifest.json").at("load").at("requests").to_number<std::int64_t>(),
            3);

  // --cycle: asked for, and named in the record.
  args = base;
  args.insert(args.end(), {"-n", "7", "--cycle"});
  r = dyno(args);
  ASSERT_EQ(r.code, 0) << r.err;
  run = std::string(json::parse(r.out).at("record_dir").as_string());
  m = read_json(run / "manifest.json");
  EXPECT_EQ(m.at("workload").at("request_stream").at("cycle"), true);
  EXPECT_EQ(read_jsonl(run / "requests.jsonl").size(), 7u);

  // A duration run stops when the stream is sent (not after 60 s).
  args = base;
  args.insert(args.end(), {"--duration", "60"});
  const auto started = std::chrono::steady_clock::now();
  r = dyno(args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(30));
  run = std::string(json::parse(r.out).at("record_dir").as_string());
  EXPECT_EQ(read_jsonl(run / "requests.jsonl").size(), 5u);
}

TEST_F(Cli, StreamMakePrintsTheHashTheRunRecords) {
  const std::string file = (dir_ / "made.jsonl").string();
  const std::vector<std::string> make = {
      "stream", "make", "--count", "6", "--input-tokens", "40", "--output-tokens", "3", "-o", file};
  Result r = dyno(make);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto at = r.out.find("canonical sha256 ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string printed = r.out.substr(at + 17, 64);
  std::vector<std::string> json_make = make;
  json_make.push_back("--json");
  r = dyno(json_make);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).at("canonical_sha256"), printed.c_str());

  // --temperature fills what the requests leave unset: the record's hash is still the file's.
  r = dyno({"run", "-q", "--json", "--telemetry", "off", "-c", "2", "--temperature", "0.5",
            "--runs-root", runs().string(), "--stream", file});
  ASSERT_EQ(r.code, 0) << r.err;
  const fs::path run(std::string(json::parse(r.out).at("record_dir").as_string()));
  const json::object m = read_json(run / "manifest.json");
  EXPECT_EQ(m.at("workload").at("request_stream").at("sha256"), printed.c_str());
  EXPECT_EQ(m.at("workload").at("sampling").at("temperature").to_number<double>(), 0.5);
}

// ---------------------------------------------------------------------------------------------
// 6. Campaign figures are one run's values: `selected`, and a median that never averages two.

/// The figure values the repetitions of `cell` had.
std::map<std::string, std::vector<double>> rep_values(const json::object& cell) {
  std::map<std::string, std::vector<double>> out;
  for (const auto& run : cell.at("runs").as_array()) {
    for (const auto& kv : run.at("figures").as_object()) {
      if (kv.value().is_number()) out[kv.key()].push_back(kv.value().to_number<double>());
    }
  }
  return out;
}

TEST_F(Cli, CampaignFiguresAreValuesOfOneRun) {
  for (const char* repeat : {"2", "4"}) {
    const std::vector<std::string> args = {"sweep",       "--concurrencies",
                                           "1,3",         "--min-requests",
                                           "6",           "--per-slot",
                                           "2",           "--output-tokens",
                                           "12",          "--input-tokens",
                                           "16",          "--telemetry",
                                           "off",         "-q",
                                           "--repeat",    repeat,
                                           "--runs-root", runs().string()};
    Result r = dyno(args);
    ASSERT_EQ(r.code, 0) << r.err;
    const std::string table = r.out;
    const auto file_at = table.find("campaign file ");
    ASSERT_NE(file_at, std::string::npos) << table;
    std::string file = table.substr(file_at + 14);
    file = file.substr(0, file.find('\n'));
    const json::object doc = read_json(file);
    // The table's header, then one row per cell: every printed figure is the selected run's.
    std::istringstream lines(table);
    std::string header;
    std::getline(lines, header);
    std::getline(lines, header);
    std::vector<std::string> columns;
    std::istringstream hs(header);
    for (std::string c; hs >> c;) columns.push_back(c);
    for (const auto& cv : doc.at("cells").as_array()) {
      const json::object& cell = cv.as_object();
      std::string row;
      std::getline(lines, row);
      std::istringstream rs(row);
      std::string name;
      rs >> name;
      EXPECT_EQ(name, cell.at("cell").as_string());
      const std::string selected(cell.at("selected_run").as_string());
      const json::object* figures = nullptr;
      for (const auto& run : cell.at("runs").as_array()) {
        if (run.at("run_id") == selected.c_str()) figures = &run.at("figures").as_object();
      }
      ASSERT_NE(figures, nullptr);
      const auto values = rep_values(cell);
      for (const std::string& col : columns) {
        std::string text;
        rs >> text;
        const json::object& spread = cell.at("figures").at(col).as_object();
        const json::value& mine = figures->at(col);
        EXPECT_EQ(spread.at("selected"), mine) << col;
        if (mine.is_number()) {
          EXPECT_NEAR(std::stod(text), mine.to_number<double>(), 0.006) << col << " " << row;
        }
        // The median is a value some repetition had.
        if (!spread.at("median").is_null()) {
          const double med = spread.at("median").to_number<double>();
          const auto& v = values.at(col);
          EXPECT_NE(std::find(v.begin(), v.end(), med), v.end()) << col << " median " << med;
        }
      }
    }
  }
}

}  // namespace
