// Every measuring command honours every shared load flag exactly as `dyno run` does (issue 32:
// `dyno sweep --client-threads 4` once recorded client.threads = 1): `run`, `sweep`, `ladder`,
// `speed`, `real` and a campaign cell (`--scheduler local`), each against the embedded
// simulated engine with the same shared flags, and every record they write checked (and signed:
// --sign-key, verified against the public key). Also --extra-body: checked as a JSON object,
// refused over fields dyno sets unless overridden, recorded, and part of the request stream's
// hash.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "integration/json_files.h"
#include "integration/process.h"
#include "integration/test_keys.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::testing::Child;
using dyno::testing::read_json;
using dyno::testing::read_jsonl;

struct Result {
  int code = -1;
  std::string out;
  std::string err;
};

/// The shared flags under test, and what each record must then say.
const std::vector<std::string> kShared = {
    "--client-threads",
    "3",
    "--warmup",
    "1",
    "--seed",
    "7",
    "--error-budget",
    "0.5",
    "--unreachable-after",
    "4",
    "--connect-timeout",
    "3",
    "--first-token-timeout",
    "20",
    "--timeout",
    "30",
    "--idle-timeout",
    "9",
    "--temperature",
    "0.5",
    "--slo",
    "ttft=900ms",
    "--extra-body",
    R"({"cache_prompt":false,"chat_template_kwargs":{"x":1}})",
    "--keep-outputs",
    "--no-chunk-times",
    "--telemetry",
    "off",
    "--idle-baseline",
    "0",
    "-q"};

class SharedFlags : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = dyno::testing::make_temp_dir("dyno-shared-flags"); }
  void TearDown() override {
    if (sim_) {
      sim_->signal(SIGTERM);
      sim_->wait(std::chrono::seconds(10));
    }
    if (!HasFailure() && std::getenv("DYNO_KEEP") == nullptr) fs::remove_all(dir_);
  }

  std::string runs() const { return (dir_ / "runs").string(); }

  /// `dyno sim --port 0` in another process, as the integration tests start it; its base URL.
  std::string start_sim() {
    sim_ = std::make_unique<Child>(std::vector<std::string>{DYNO_BINARY, "sim", "--port", "0"},
                                   (dir_ / "sim.out").string(), (dir_ / "sim.err").string());
    const std::string out = sim_->wait_for_output("/v1");
    std::smatch m;
    if (!std::regex_search(out, m, std::regex("listening on (http://[0-9.]+:[0-9]+/v1)"))) {
      throw std::runtime_error("no address in: " + out);
    }
    return m[1];
  }

  Result dyno(std::vector<std::string> args) {
    args.insert(args.begin(), DYNO_BINARY);
    Child c(args, (dir_ / "cmd.out").string(), (dir_ / "cmd.err").string());
    Result r;
    r.code = c.wait();
    r.out = c.out();
    r.err = c.err();
    return r;
  }

  /// `dyno <command> <own flags> <kShared> --sign-key K --runs-root R`: every record signed by
  /// the key `signing_key()` made.
  Result measure(const std::string& command, std::vector<std::string> own) {
    std::vector<std::string> args = {command, "--runs-root", runs()};
    args.insert(args.end(), own.begin(), own.end());
    args.insert(args.end(), kShared.begin(), kShared.end());
    args.insert(args.end(), {"--sign-key", signing_key().priv.string()});
    return dyno(args);
  }

  const dyno::testing::KeyFiles& signing_key() {
    if (!key_) key_ = dyno::testing::make_key(dir_, "shared");
    return *key_;
  }

  /// Every run directory under the runs root.
  std::vector<fs::path> records() const {
    std::vector<fs::path> out;
    if (!fs::is_directory(dir_ / "runs")) return out;
    for (const auto& e : fs::directory_iterator(dir_ / "runs")) {
      if (e.is_directory() && fs::exists(e.path() / "manifest.json")) out.push_back(e.path());
    }
    return out;
  }

  fs::path dir_;
  std::unique_ptr<Child> sim_;
  std::optional<dyno::testing::KeyFiles> key_;
};

double num(const json::value& v) { return v.to_number<double>(); }

/// What every record of a command run with kShared must say: the load, the request fields,
/// what was kept.
void expect_shared(const fs::path& run, const std::string& command) {
  SCOPED_TRACE(command + " " + run.filename().string());
  const json::object m = read_json(run / "manifest.json");
  EXPECT_EQ(m.at("status").as_string(), "ok");
  const json::object& load = m.at("load").as_object();
  EXPECT_EQ(load.at("client_threads").as_int64(), 3);
  EXPECT_DOUBLE_EQ(num(load.at("error_budget")), 0.5);
  EXPECT_DOUBLE_EQ(num(load.at("unreachable_after_s")), 4.0);
  EXPECT_EQ(load.at("seed").as_int64(), 7);
  const json::object& t = load.at("timeouts_s").as_object();
  EXPECT_DOUBLE_EQ(num(t.at("connect")), 3.0);
  EXPECT_DOUBLE_EQ(num(t.at("first_token")), 20.0);
  EXPECT_DOUBLE_EQ(num(t.at("total")), 30.0);
  EXPECT_DOUBLE_EQ(num(t.at("idle")), 9.0);
  EXPECT_DOUBLE_EQ(num(m.at("slo").at("ttft_s")), 0.9);
  const json::object& w = m.at("workload").as_object();
  EXPECT_EQ(json::serialize(w.at("extra_body")),
            R"({"cache_prompt":false,"chat_template_kwargs":{"x":1}})");
  EXPECT_FALSE(w.contains("extra_body_override"));
  EXPECT_DOUBLE_EQ(num(w.at("sampling").at("temperature")), 0.5);
  const json::object s = read_json(run / "summary.json");
  EXPECT_EQ(s.at("client").at("threads").as_int64(), 3);
  for (const auto& line : read_jsonl(run / "requests.jsonl")) {
    EXPECT_FALSE(line.contains("chunk_times_ns")) << line;  // --no-chunk-times
    if (line.at("status").as_string() == "ok") {
      EXPECT_TRUE(line.contains("output_text")) << line;  // --keep-outputs
    }
  }
}

TEST_F(SharedFlags, RunAndEveryProtocolRecordEveryFlag) {
  std::ofstream(dir_ / "cases.jsonl")
      << R"({"id":"a","prompt":"one two three","max_tokens":4,"tags":{"case":"x"}})"
         "\n"
      << R"({"id":"b","prompt":"four five six","max_tokens":4,"tags":{"case":"y"}})"
         "\n";
  const std::vector<std::string> synthetic = {"--api", "completions",     "--input-tokens",
                                              "16",    "--output-tokens", "4"};
  struct Command {
    std::string name;
    std::vector<std::string> own;
    std::size_t records;
    bool every_record_warms_up;  ///< --warmup per cell (run, sweep, ladder); else the first only
  };
  std::vector<Command> commands = {
      {"run", {"-n", "2", "-c", "1"}, 1, true},
      {"sweep", {"--concurrencies", "1", "--min-requests", "2", "--per-slot", "1"}, 1, true},
      {"ladder",
       {"--depths", "16", "--prefill-sizes", "", "--decode-tokens", "4", "--repeat", "1"},
       1,
       true},
      {"speed", {"--passes", "p", "--burst", "2"}, 2, false},
      {"real", {"--stream", (dir_ / "cases.jsonl").string()}, 2, false},
  };
  for (auto& c : commands) {
    if (c.name != "real") c.own.insert(c.own.end(), synthetic.begin(), synthetic.end());
    if (c.name == "real") c.own.insert(c.own.end(), {"--api", "completions"});
    fs::remove_all(dir_ / "runs");
    const Result r = measure(c.name, c.own);
    ASSERT_EQ(r.code, 0) << c.name << "\n" << r.out << r.err;
    const auto recs = records();
    ASSERT_EQ(recs.size(), c.records) << c.name;
    std::uint64_t warmups = 0;
    const Result verified = dyno({"runs", "verify", "--runs-root", runs(), "--all", "--verify-key",
                                  signing_key().pub.string()});
    EXPECT_EQ(verified.code, 0) << c.name << ": --sign-key\n" << verified.out << verified.err;
    for (const auto& run : recs) {
      EXPECT_TRUE(fs::exists(run / "SIGNATURE")) << c.name << ": --sign-key";
      expect_shared(run, c.name);
      const auto n = read_json(run / "manifest.json").at("workload").at("warmup_requests");
      warmups += static_cast<std::uint64_t>(n.as_int64());
      if (c.every_record_warms_up) {
        EXPECT_EQ(n.as_int64(), 1) << c.name;
      }
    }
    EXPECT_EQ(warmups, c.every_record_warms_up ? c.records : 1u) << c.name;
  }
}

TEST_F(SharedFlags, ACampaignCellTakesThemFromItsPlan) {
  std::ofstream(dir_ / "sim.toml") << "name = \"sim\"\npreset = \"sim\"\nmodel = \"dyno-sim\"\n"
                                   << "[engine_args]\nprofile = \"small-gpu\"\n[ready]\n"
                                   << "timeout_s = 60\n";
  std::ofstream(dir_ / "plan.toml")
      << "name = \"flags\"\n[arms.a]\nengine = \"sim.toml\"\n[models.sim]\nmodel = \"dyno-sim\"\n"
      << "[protocols.sw]\nkind = \"sweep\"\n"
      << "args = { concurrencies = [1], min_requests = 2, per_slot = 1, input_tokens = 16, "
      << "output_tokens = 4, api = \"completions\", client_threads = 3, warmup = 1, seed = 7, "
      << "error_budget = 0.5, unreachable_after = 4, connect_timeout = 3, "
      << "first_token_timeout = 20, timeout = 30, idle_timeout = 9, temperature = 0.5, "
      << "slo = \"ttft=900ms\", keep_outputs = true, no_chunk_times = true, telemetry = \"off\", "
      << "idle_baseline = 0, extra_body = { cache_prompt = false, chat_template_kwargs = "
      << "{ x = 1 } } }\n";
  const Result r = dyno({"campaign", "submit", (dir_ / "plan.toml").string(), "--scheduler",
                         "local", "--runs-root", runs()});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  expect_shared(recs[0], "campaign sweep cell");
}

TEST_F(SharedFlags, ExtraBodyIsCheckedRecordedAndPartOfTheStreamsIdentity) {
  const std::vector<std::string> base = {"run",
                                         "--runs-root",
                                         runs(),
                                         "-n",
                                         "2",
                                         "-c",
                                         "1",
                                         "--output-tokens",
                                         "4",
                                         "-q",
                                         "--telemetry",
                                         "off",
                                         "--idle-baseline",
                                         "0",
                                         "--json"};
  const auto with = [&](std::vector<std::string> more, const char* input_tokens = "16") {
    std::vector<std::string> a = base;
    a.insert(a.end(), {"--input-tokens", input_tokens});
    a.insert(a.end(), more.begin(), more.end());
    return dyno(a);
  };
  // Not a JSON object: exit 2 naming the flag, before anything runs.
  for (const char* bad : {"[1]", "{nope", "3"}) {
    const Result r = with({"--extra-body", bad});
    EXPECT_EQ(r.code, 2) << bad << r.err;
    EXPECT_NE(r.err.find("--extra-body"), std::string::npos) << r.err;
  }
  // A field dyno sets itself: refused, naming the override.
  const Result own = with({"--extra-body", R"({"stream":false})"});
  EXPECT_EQ(own.code, 2) << own.err;
  EXPECT_NE(own.err.find("--extra-body-override"), std::string::npos) << own.err;
  const Result sampled = with({"--extra-body", R"({"max_tokens":2})"});  // the synthetic stream's
  EXPECT_EQ(sampled.code, 2) << sampled.err;
  EXPECT_NE(sampled.err.find("max_tokens"), std::string::npos) << sampled.err;
  EXPECT_NE(sampled.err.find("--extra-body-override"), std::string::npos) << sampled.err;
  EXPECT_TRUE(records().empty());  // nothing was recorded for a refused flag
  // Overridden: the user's value is sent (2 tokens instead of 4), and the record says so.
  const Result over = with({"--extra-body", R"({"max_tokens":2})", "--extra-body-override"});
  ASSERT_EQ(over.code, 0) << over.err;
  const json::object s = json::parse(over.out).as_object();
  EXPECT_EQ(s.at("tokens").at("output_total").as_int64(), 4);  // 2 requests x 2 tokens
  const fs::path over_dir = std::string(s.at("record_dir").as_string());
  const json::object m = read_json(over_dir / "manifest.json");
  EXPECT_TRUE(m.at("workload").at("extra_body_override").as_bool());
  // The fields are part of what is sent: the stream's hash differs from the plain run's.
  const Result plain = with({});
  ASSERT_EQ(plain.code, 0) << plain.err;
  const json::object pm = read_json(
      fs::path(std::string(json::parse(plain.out).at("record_dir").as_string())) / "manifest.json");
  EXPECT_FALSE(pm.at("workload").as_object().contains("extra_body"));
  EXPECT_NE(pm.at("workload").at("request_stream").at("sha256"),
            m.at("workload").at("request_stream").at("sha256"));
  // A stream line's own extra_body is checked the same way, and the override serves it too.
  std::ofstream(dir_ / "lines.jsonl")
      << R"({"id":"a","prompt":"one two","max_tokens":4,"extra_body":{"max_tokens":1}})"
         "\n"
      << R"({"id":"b","prompt":"three four","max_tokens":4,"extra_body":{"max_tokens":1}})"
         "\n";
  const std::vector<std::string> lines = {"--stream", (dir_ / "lines.jsonl").string(), "--api",
                                          "completions"};
  const Result line = with(lines);
  EXPECT_EQ(line.code, 2) << line.err;
  EXPECT_NE(line.err.find("request 'a'"), std::string::npos) << line.err;
  std::vector<std::string> line_over = lines;
  line_over.emplace_back("--extra-body-override");
  const Result line_ok = with(line_over);
  ASSERT_EQ(line_ok.code, 0) << line_ok.err;
  EXPECT_EQ(json::parse(line_ok.out).at("tokens").at("output_total").as_int64(), 2);
  // The synthetic prompts of about one token a word: --input-tokens far from what the engine
  // counted is a warning with both numbers, pointing to `stream make`.
  const Result far = with({}, "4");
  ASSERT_EQ(far.code, 0) << far.err;
  bool warned = false;
  const json::value far_summary = json::parse(far.out);
  for (const auto& w : far_summary.at("warnings").as_array()) {
    if (w.at("code").as_string() == "input_length_differs") {
      warned = true;
      EXPECT_NE(std::string(w.at("hint").as_string()).find("dyno stream make"), std::string::npos);
    }
  }
  EXPECT_TRUE(warned) << far.out;
  EXPECT_NE(far.err.find("input_length_differs"), std::string::npos) << far.err;
}

/// An --engine spec's [extra_body] is sent with every request of every measuring command, under
/// --extra-body's fields (the flag's win); a field dyno sets itself is refused there too.
TEST_F(SharedFlags, AnEngineSpecsExtraBodyJoinsTheFlags) {
  const fs::path spec = dir_ / "sim.toml";
  std::ofstream(spec) << "name = \"sim-under-test\"\npreset = \"sim\"\nport = \"auto\"\n"
                      << "[engine_args]\nprofile = \"small-gpu\"\n[ready]\ntimeout_s = 60\n"
                      << "[stop]\ngrace_s = 10\n[extra_body]\ncache_prompt = false\nn_probs = 0\n"
                      << "chat_template_kwargs = { enable_thinking = false }\n";
  const Result r = dyno({"run",
                         "--engine",
                         spec.string(),
                         "--runs-root",
                         runs(),
                         "-n",
                         "2",
                         "-c",
                         "1",
                         "--input-tokens",
                         "16",
                         "--output-tokens",
                         "4",
                         "-q",
                         "--telemetry",
                         "off",
                         "--idle-baseline",
                         "0",
                         "--json",
                         "--extra-body",
                         R"({"n_probs":1})"});
  ASSERT_EQ(r.code, 0) << r.err;
  const fs::path record = std::string(json::parse(r.out).at("record_dir").as_string());
  const json::object m = read_json(record / "manifest.json");
  EXPECT_EQ(
      json::serialize(m.at("workload").at("extra_body")),
      R"({"cache_prompt":false,"n_probs":1,"chat_template_kwargs":{"enable_thinking":false}})");
  // A field dyno sets, given in the spec: refused as from the flag, nothing recorded.
  const fs::path own = dir_ / "own.toml";
  std::ofstream(own) << "name = \"sim-under-test\"\npreset = \"sim\"\nport = \"auto\"\n"
                     << "[extra_body]\nstream = false\n";
  const std::size_t before = records().size();
  const Result refused =
      dyno({"sweep", "--engine", own.string(), "--runs-root", runs(), "--concurrencies", "1",
            "--min-requests", "2", "--per-slot", "1", "-q", "--telemetry", "off"});
  EXPECT_EQ(refused.code, 2) << refused.err;
  EXPECT_NE(refused.err.find("stream"), std::string::npos) << refused.err;
  EXPECT_EQ(records().size(), before);
}

// The issue's own case, against `dyno sim` in another process: every cell of a sweep, closed
// and open, runs on the --client-threads asked and records it (manifest load.client_threads,
// summary client.threads), as `dyno run` does; an open cell also keeps --arrival, --burstiness
// and --seed.
TEST_F(SharedFlags, EverySweepCellRunsOnTheClientThreadsAsked) {
  const std::string url = start_sim();
  const std::vector<std::string> target = {
      "--url", url,           "--model", "dyno-sim", "--input-tokens", "16", "--output-tokens",
      "4",     "--telemetry", "off",     "-q"};
  const auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), target.begin(), target.end());
    args.insert(args.end(), {"--runs-root", runs(), "--client-threads", "4"});
    return dyno(args);
  };
  const auto expect_threads = [&](const std::string& what, std::size_t n) {
    const auto recs = records();
    ASSERT_EQ(recs.size(), n) << what;
    for (const auto& run : recs) {
      SCOPED_TRACE(what + " " + run.filename().string());
      const json::object m = read_json(run / "manifest.json");
      EXPECT_EQ(m.at("load").at("client_threads").as_int64(), 4);
      EXPECT_EQ(read_json(run / "summary.json").at("client").at("threads").as_int64(), 4);
    }
  };
  Result r = with({"run", "-n", "2", "-c", "2"});
  ASSERT_EQ(r.code, 0) << r.err;
  expect_threads("run", 1);
  fs::remove_all(dir_ / "runs");
  r = with({"sweep", "--concurrencies", "1,2", "--min-requests", "2", "--per-slot", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  expect_threads("sweep --concurrencies 1,2", 2);
  fs::remove_all(dir_ / "runs");
  r = with({"sweep", "--rates", "4", "--rate-duration", "1", "--arrival", "gamma", "--burstiness",
            "0.5", "--seed", "9"});
  ASSERT_EQ(r.code, 0) << r.err;
  expect_threads("sweep --rates 4", 1);
  const json::object load = read_json(records().at(0) / "manifest.json").at("load").as_object();
  EXPECT_EQ(load.at("mode").as_string(), "open");
  EXPECT_EQ(load.at("arrival").as_string(), "gamma");
  EXPECT_DOUBLE_EQ(num(load.at("burstiness")), 0.5);
  EXPECT_EQ(load.at("seed").as_int64(), 9);
}

// --arrival was read only where a cell was open-loop: `run -c` and ladder, speed and real took
// a typo silently (sweep refused it). load::plan reads it for every cell: the same usage error
// (exit 2) from every command and from a campaign cell, before any engine starts or record opens.
TEST_F(SharedFlags, ABadArrivalIsRefusedByEveryCommandAndCampaignCell) {
  const std::string url = start_sim();
  std::ofstream(dir_ / "cases.jsonl") << R"({"id":"a","prompt":"one two","max_tokens":2})"
                                         "\n";
  const std::vector<std::vector<std::string>> commands = {
      {"run", "-c", "1", "-n", "1"},
      {"run", "--rate", "2", "-n", "1"},
      {"sweep", "--concurrencies", "1", "--min-requests", "1", "--per-slot", "1"},
      {"ladder", "--depths", "16", "--prefill-sizes", "", "--decode-tokens", "2"},
      {"speed", "--passes", "p", "--burst", "1"},
      {"real", "--stream", (dir_ / "cases.jsonl").string()}};
  for (std::vector<std::string> args : commands) {
    args.insert(args.end(), {"--url", url, "--model", "dyno-sim", "--runs-root", runs(),
                             "--arrival", "bogus", "--telemetry", "off", "-q"});
    const Result r = dyno(args);
    EXPECT_EQ(r.code, 2) << args[0] << "\n" << r.err;
    EXPECT_NE(r.err.find("error: --arrival: 'bogus'; use poisson, constant or gamma"),
              std::string::npos)
        << args[0] << "\n"
        << r.err;
  }
  EXPECT_TRUE(records().empty());
  std::ofstream(dir_ / "sim.toml") << "name = \"sim\"\npreset = \"sim\"\nmodel = \"dyno-sim\"\n"
                                   << "[engine_args]\nprofile = \"small-gpu\"\n[ready]\n"
                                   << "timeout_s = 60\n";
  std::ofstream(dir_ / "plan.toml")
      << "name = \"arrival\"\n[arms.a]\nengine = \"sim.toml\"\n[models.sim]\n"
      << "model = \"dyno-sim\"\n[protocols.ld]\nkind = \"ladder\"\n"
      << "args = { depths = [16], prefill_sizes = \"\", decode_tokens = 2, arrival = \"bogus\", "
      << "telemetry = \"off\" }\n";
  const Result c = dyno({"campaign", "submit", (dir_ / "plan.toml").string(), "--scheduler",
                         "local", "--runs-root", runs()});
  EXPECT_EQ(c.code, 3) << c.out << c.err;
  EXPECT_NE(c.out.find("exit 2"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("--arrival: 'bogus'; use poisson, constant or gamma"), std::string::npos)
      << c.out;
  EXPECT_TRUE(records().empty());
}

// --slo was checked by the flags' reader and then read into the cell by another: "ttft=.5s" or
// "e2e=+20s", plain decimal to every other flag, passed the check and failed (exit 2) once the
// engine had started, in `run`, every protocol and every campaign cell. One reader now.
TEST_F(SharedFlags, AnSloIsReadByTheFlagsRulesInEveryCommandAndCampaignCell) {
  std::ofstream(dir_ / "cases.jsonl") << R"({"id":"a","prompt":"one two","max_tokens":2})"
                                         "\n";
  const std::vector<std::string> common = {"--api",
                                           "completions",
                                           "--input-tokens",
                                           "16",
                                           "--output-tokens",
                                           "2",
                                           "--telemetry",
                                           "off",
                                           "--idle-baseline",
                                           "0",
                                           "-q",
                                           "--slo",
                                           "ttft=.5s,e2e=+20s"};
  const std::vector<std::vector<std::string>> commands = {
      {"run", "-c", "1", "-n", "1"},
      {"sweep", "--concurrencies", "1", "--min-requests", "1", "--per-slot", "1"},
      {"ladder", "--depths", "16", "--prefill-sizes", "", "--decode-tokens", "2", "--repeat", "1"},
      {"speed", "--passes", "p", "--burst", "1"},
      {"real", "--stream", (dir_ / "cases.jsonl").string()}};
  const auto expect_slo = [&](const std::string& what) {
    const auto recs = records();
    ASSERT_FALSE(recs.empty()) << what;
    for (const auto& run : recs) {
      SCOPED_TRACE(what + " " + run.filename().string());
      const json::object m = read_json(run / "manifest.json");
      EXPECT_DOUBLE_EQ(num(m.at("slo").at("ttft_s")), 0.5);
      EXPECT_DOUBLE_EQ(num(m.at("slo").at("e2e_s")), 20.0);
    }
  };
  for (std::vector<std::string> args : commands) {
    fs::remove_all(dir_ / "runs");
    args.insert(args.end(), common.begin(), common.end());
    args.insert(args.end(), {"--runs-root", runs()});
    const Result r = dyno(args);
    ASSERT_EQ(r.code, 0) << args[0] << "\n" << r.err;
    expect_slo(args[0]);
  }
  fs::remove_all(dir_ / "runs");
  std::ofstream(dir_ / "sim.toml") << "name = \"sim\"\npreset = \"sim\"\nmodel = \"dyno-sim\"\n"
                                   << "[engine_args]\nprofile = \"small-gpu\"\n[ready]\n"
                                   << "timeout_s = 60\n";
  std::ofstream(dir_ / "plan.toml")
      << "name = \"slo\"\n[arms.a]\nengine = \"sim.toml\"\n[models.sim]\nmodel = \"dyno-sim\"\n"
      << "[protocols.sw]\nkind = \"sweep\"\n"
      << "args = { concurrencies = [1], min_requests = 1, per_slot = 1, input_tokens = 16, "
      << "output_tokens = 2, api = \"completions\", telemetry = \"off\", idle_baseline = 0, "
      << "slo = \"ttft=.5s,e2e=+20s\" }\n";
  const Result c = dyno({"campaign", "submit", (dir_ / "plan.toml").string(), "--scheduler",
                         "local", "--runs-root", runs()});
  ASSERT_EQ(c.code, 0) << c.out << c.err;
  expect_slo("campaign sweep cell");
}

// A sweep's open cells are bounded as `dyno run --rate` is (one check, load::plan), naming the
// sweep's own flags, before a stream is built or an engine started.
TEST_F(SharedFlags, ASweepsOpenLoopCellsAreBoundedAsRunsAre) {
  const Result r = dyno({"sweep", "--rates", "1,50000", "--rate-duration", "30", "--runs-root",
                         runs(), "--telemetry", "off", "-q"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--rates 50000 for --rate-duration 30 s would schedule about 1500000 "
                       "requests, more than the limit of 1000000 for an open loop"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(records().empty());
}

}  // namespace
