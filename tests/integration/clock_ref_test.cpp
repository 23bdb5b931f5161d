// `dyno clock serve` and `dyno run --shard K/N --clock-ref` (docs/scale.md, "Clock offsets"):
// the shards' clocks measured against a reference on loopback, recorded, and used by
// `dyno runs merge` — checked against the exact steady clock the shards share on this host.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>

#include "free_port.h"
#include "integration/integration_fixture.h"

using namespace dyno::integration;  // the fixture, fs, json, Child, read_json(l)

namespace {

class ClockRef : public Integration {
 protected:
  void TearDown() override {
    for (auto& r : refs_) {
      r->signal(SIGTERM);
      EXPECT_EQ(r->wait(std::chrono::seconds(10)), 0) << "dyno clock serve did not stop";
    }
    stop_sims();
    Integration::TearDown();
  }

  /// Starts `dyno clock serve --listen 127.0.0.1:0 [extra]`; returns HOST:PORT.
  std::string start_reference(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {DYNO_BINARY, "clock", "serve", "--listen", "127.0.0.1:0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    const std::string name = "ref" + std::to_string(refs_.size());
    refs_.push_back(std::make_unique<Child>(argv, (dir_ / (name + ".out")).string(),
                                            (dir_ / (name + ".err")).string()));
    const std::string out = refs_.back()->wait_for_output("reference id");
    std::smatch m;
    if (!std::regex_search(out, m, std::regex("udp ([0-9.]+:[0-9]+), reference id [0-9a-f]{16}"))) {
      throw std::runtime_error("no address in: " + out);
    }
    return m[1];
  }

  /// Two shards of a small closed-loop run against a sim, each measuring against `ref`.
  std::vector<fs::path> run_shards(const std::string& ref) {
    const std::string url = start_sim({});
    const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now() +
                                                               std::chrono::seconds(2));
    std::tm tm{};
    gmtime_r(&t, &tm);
    char at[32];
    std::strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", &tm);
    std::vector<std::unique_ptr<Child>> children;
    for (int k = 0; k < 2; ++k) {
      const std::string name = "shard" + std::to_string(k);
      children.push_back(std::make_unique<Child>(std::vector<std::string>{DYNO_BINARY,
                                                                          "run",
                                                                          "--json",
                                                                          "-q",
                                                                          "--runs-root",
                                                                          runs(),
                                                                          "--url",
                                                                          url,
                                                                          "--model",
                                                                          "dyno-sim",
                                                                          "-n",
                                                                          "10",
                                                                          "-c",
                                                                          "2",
                                                                          "--output-tokens",
                                                                          "8",
                                                                          "--client-threads",
                                                                          "1",
                                                                          "--seed",
                                                                          "5",
                                                                          "--shard",
                                                                          std::to_string(k) + "/2",
                                                                          "--start-at",
                                                                          at,
                                                                          "--clock-ref",
                                                                          ref},
                                                 (dir_ / (name + ".out")).string(),
                                                 (dir_ / (name + ".err")).string()));
    }
    std::vector<fs::path> dirs;
    for (auto& c : children) {
      EXPECT_EQ(c->wait(), 0) << c->err();
      dirs.emplace_back(std::string(json::parse(c->out()).at("record_dir").as_string()));
    }
    return dirs;
  }

  Outcome merge(const std::vector<fs::path>& dirs, std::vector<std::string> extra) {
    std::vector<std::string> args = {
        "runs", "merge", "--runs-root", runs(), "--json", "--max-clock-offset-ms", "100"};
    args.insert(args.end(), extra.begin(), extra.end());
    for (const fs::path& d : dirs) args.push_back(d.string());
    return dyno(args);
  }

  std::vector<std::unique_ptr<Child>> refs_;
};

TEST_F(ClockRef, LoopbackOffsetsAreMeasuredRecordedAndAgreeWithTheSteadyClock) {
  const std::string ref = start_reference();
  const std::vector<fs::path> shards = run_shards(ref);
  ASSERT_EQ(shards.size(), 2u);
  std::string id;
  for (const fs::path& s : shards) {
    const json::object m = read_json(s / "manifest.json");
    const json::object& r = m.at("clock").at("reference").as_object();
    EXPECT_EQ(r.at("address").as_string(), ref);
    if (id.empty()) id = std::string(r.at("id").as_string());
    EXPECT_EQ(r.at("id").as_string(), id);  // one reference
    // One host's clock against itself: offset 0 within the uncertainty, well under 1 ms.
    const std::int64_t u = i64(r.at("uncertainty_ns"));
    EXPECT_GT(u, 0);
    EXPECT_LT(u, 1'000'000);
    EXPECT_LE(std::llabs(i64(r.at("offset_ns"))), u + 1'000);
    EXPECT_GE(i64(r.at("samples")), 8);
    ASSERT_TRUE(r.at("after").is_object()) << r;
    EXPECT_TRUE(r.at("after_error").is_null());
    EXPECT_LE(std::llabs(i64(r.at("drift_ns"))), u + i64(r.at("after").at("uncertainty_ns")));
  }
  // auto on one host: the exact steady clock; forced measured_offset: the same offsets within
  // the stated uncertainty.
  Outcome o = merge(shards, {});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const json::object steady = json::parse(o.out).at("merged_from").as_object();
  EXPECT_EQ(steady.at("clock_method").as_string(), "steady_clock");
  o = merge(shards, {"--clock-method", "measured_offset"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const json::object measured = json::parse(o.out).at("merged_from").as_object();
  EXPECT_EQ(measured.at("clock_method").as_string(), "measured_offset");
  EXPECT_EQ(measured.at("clock_reference_id").as_string(), id);
  const std::int64_t bound = i64(measured.at("uncertainty_ns"));
  EXPECT_LT(bound, 2'000'000);
  const auto offset_1 = [](const json::object& from) {  // shard 1's minus shard 0's
    const json::array& s = from.at("shards").as_array();
    return i64(s[1].at("offset_ns")) - i64(s[0].at("offset_ns"));
  };
  EXPECT_LE(std::llabs(offset_1(measured) - offset_1(steady)), bound + 1'000) << measured << "\n"
                                                                              << steady;
  for (const auto& s : measured.at("shards").as_array()) {
    EXPECT_TRUE(s.as_object().contains("clock_offset_ns")) << s;
  }
  EXPECT_FALSE(measured.contains("clock_bound_exceeded"));
  // A bound tighter than any measurement: refused, naming the shards and figures; accepted
  // on request, the merged record says so.
  const std::size_t before = record_count();
  o = merge(shards,
            {"--clock-method", "measured_offset", "--max-clock-uncertainty-ms", "0.0000001"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--max-clock-uncertainty-ms"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("shard 0 (run "), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("uncertainty "), std::string::npos) << o.err;
  EXPECT_EQ(record_count(), before);
  o = merge(shards, {"--clock-method", "measured_offset", "--max-clock-uncertainty-ms", "0.0000001",
                     "--accept-clock-uncertainty"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.err.find("warning: merged with clocks over the bound"), std::string::npos) << o.err;
  const fs::path flagged(std::string(json::parse(o.out).at("dir").as_string()));
  const json::object fm = read_json(flagged / "manifest.json");
  EXPECT_NE(
      std::string(fm.at("merged_from").at("clock_bound_exceeded").as_string()).find("shard 1"),
      std::string::npos);
  EXPECT_EQ(dyno({"runs", "verify", "--runs-root", runs(), flagged.string()}).exit_code, 0);
  for (const char* file : {"summary.json", "manifest.json"}) {
    const json::object doc = read_json(flagged / file);
    const json::array& warnings = doc.at("warnings").as_array();
    EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [](const json::value& w) {
      return w.at("code").as_string() == "clock_uncertain";
    })) << file;
  }
}

TEST_F(ClockRef, ASkewedReferenceIsMeasuredAndCancelsInTheMerge) {
  // A reference 250 ms behind this host (a rehearsal of a badly set clock).
  const std::string ref = start_reference({"--skew-ms", "-250"});
  const std::vector<fs::path> shards = run_shards(ref);
  ASSERT_EQ(shards.size(), 2u);
  for (const fs::path& s : shards) {
    const json::object r = read_json(s / "manifest.json").at("clock").at("reference").as_object();
    EXPECT_LE(std::llabs(i64(r.at("offset_ns")) - 250'000'000), i64(r.at("uncertainty_ns")) + 1'000)
        << r;
  }
  const Outcome o = merge(shards, {"--clock-method", "measured_offset"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const json::object from = json::parse(o.out).at("merged_from").as_object();
  EXPECT_LT(i64(from.at("start_spread_ns")), 100'000'000);  // not 250 ms: the skew cancels
}

TEST_F(ClockRef, UnusableReferencesAndFlagsExitTwoNamingThem) {
  // A UDP port nothing listens on: bind one, note it, close it.
  const std::string closed =
      "127.0.0.1:" + std::to_string(dyno::testing::free_loopback_port(SOCK_DGRAM));
  const std::string url = start_sim({});
  const auto t0 = std::chrono::steady_clock::now();
  Outcome o = run_dyno(
      {"--url", url, "--model", "dyno-sim", "-n", "2", "--shard", "0/1", "--clock-ref", closed});
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_NE(o.err.find("--clock-ref " + closed + ": nothing listens"), std::string::npos) << o.err;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  o = run_dyno(
      {"--url", url, "--model", "dyno-sim", "-n", "2", "--shard", "0/1", "--clock-ref", "no-port"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("give HOST:PORT"), std::string::npos) << o.err;
  o = run_dyno({"-n", "2", "--clock-ref", closed});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--clock-ref"), std::string::npos) << o.err;
  o = run_dyno({"-n", "2", "--shard", "slurm"}, {{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "2"}});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("SLURM_PROCID=3 with SLURM_NTASKS=2"), std::string::npos) << o.err;
  o = dyno({"clock", "serve", "--listen", "nowhere"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--listen nowhere"), std::string::npos) << o.err;
  o = dyno({"clock", "serve", "--listen", "127.0.0.1:0", "--skew-ms", "1e9"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--skew-ms"), std::string::npos) << o.err;
  EXPECT_EQ(record_count(), 0u);
}

}  // namespace
