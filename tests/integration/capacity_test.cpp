// `dyno capacity` end to end against the embedded simulated engine: the answer agrees with an
// exhaustive sweep judged by the same objectives, the campaign file verifies (and a forged
// answer does not), a search killed mid-way is resumed, hostile flags are refused.
#include "protocol/capacity.h"

#include <csignal>

#include "integration/integration_fixture.h"
#include "record/campaign_file.h"
#include "record/run_record.h"

using namespace dyno::integration;  // the fixture, fs, json, Child, read_json(l)

namespace {

// Each decoding sequence adds 6 ms to a 4 ms step, prefill is instant: a request's TPOT is
// about 4 + 6·B ms with B requests decoding, so tpot_p90 <= 37 ms holds up to 5 users
// (34 ms) and not at 6 (40 ms).
constexpr const char* kProfile =
    R"({"base": "small-gpu", "step_base_s": 0.004, "decode_seq_s": 0.006,
        "prefill_tokens_per_s": 10000000, "decode_ctx_token_s": 0, "max_running_seqs": 64})";
constexpr const char* kSlo = "tpot_p90=37ms,errors=5%";

class Capacity : public Integration {
 protected:
  fs::path profile() {
    const fs::path p = dir_ / "profile.json";
    std::ofstream(p) << kProfile;
    return p;
  }

  std::vector<std::string> measure_flags() {
    return {"--profile",       profile().string(),
            "--input-tokens",  "16",
            "--output-tokens", "10",
            "--min-requests",  "30",
            "--per-slot",      "4"};
  }

  Outcome capacity(std::vector<std::string> extra) {
    std::vector<std::string> args = {"capacity", "--json", "-q", "--runs-root",
                                     runs(),     "--slo",  kSlo};
    for (const auto& f : measure_flags()) args.push_back(f);
    args.insert(args.end(), extra.begin(), extra.end());
    return dyno(args);
  }

  /// The capacity an exhaustive sweep over 1..top gives, each cell judged by the search's own
  /// objectives (protocol::judge over the record's requests; an unclear cell by its point
  /// estimates): the largest level below the first that fails.
  std::pair<double, std::size_t> exhaustive(int top) {
    std::string levels;
    for (int c = 1; c <= top; ++c) levels += (c > 1 ? "," : "") + std::to_string(c);
    std::vector<std::string> args = {
        "sweep",           "--json", "-q", "--runs-root", (dir_ / "sweep").string(),
        "--concurrencies", levels};
    for (const auto& f : measure_flags()) args.push_back(f);
    const Outcome o = dyno(args);
    EXPECT_EQ(o.exit_code, 0) << o.err;
    const json::object doc = json::parse(o.out).as_object();
    const auto slo = dyno::protocol::parse_capacity_slo(kSlo, 0.95);
    double capacity = 0;
    bool failed = false;
    for (const auto& cell : doc.at("cells").as_array()) {
      const std::string id(cell.at("runs").as_array()[0].at("run_id").as_string());
      const auto rec = dyno::record::read_run(dir_ / "sweep" / id);
      std::vector<const dyno::metrics::Trace*> ptrs;
      for (const auto& t : rec.traces) ptrs.push_back(&t);
      if (!dyno::protocol::judge(slo, ptrs).holds()) failed = true;
      if (!failed) capacity = cell.at("params").at("concurrency").to_number<double>();
    }
    return {capacity, doc.at("cells").as_array().size()};
  }
};

TEST_F(Capacity, FindsTheBoundaryAnExhaustiveSweepFindsInFewerCells) {
  const Outcome o = capacity({"--max", "64", "--repeat-boundary", "2"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const json::object doc = json::parse(o.out).as_object();
  EXPECT_EQ(doc.at("status").as_string(), "ok");
  EXPECT_EQ(doc.at("protocol").at("name").as_string(), "capacity");
  const json::object& cap = doc.at("capacity").as_object();
  const json::object& answer = cap.at("answer").as_object();
  ASSERT_EQ(answer.at("status").as_string(), "found") << o.out;
  const double found = answer.at("capacity").to_number<double>();
  const auto [truth, sweep_cells] = exhaustive(8);
  EXPECT_NEAR(found, truth, 1.0) << "search " << found << ", exhaustive " << truth;
  EXPECT_NEAR(found, 5.0, 1.0);
  // Distinct levels probed: fewer than the exhaustive sweep's cells, though it went up to 64.
  EXPECT_LT(cap.at("probes").as_array().size(), sweep_cells);
  // The boundary was repeated: its two cells ran twice each; the spread is stated.
  std::size_t boundary_runs = 0;
  for (const auto& p : cap.at("probes").as_array()) {
    const double level = p.at("level").to_number<double>();
    if (level == found || level == answer.at("first_failing").to_number<double>()) {
      boundary_runs += p.at("repetitions").as_array().size();
    }
  }
  EXPECT_EQ(boundary_runs, 4u);
  EXPECT_EQ(answer.at("spread").at("repetitions").as_int64(), 2);
  // Every probe is a verifying record of the campaign, and the file verifies with its answer
  // recomputed from the records.
  const std::string campaign(doc.at("campaign_id").as_string());
  const Outcome v = dyno({"runs", "verify", campaign, "--runs-root", runs()});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  // The console's sentence is the file's.
  const std::string sentence(answer.at("sentence").as_string());
  const std::string users = std::to_string(static_cast<int>(found)) + " users";
  EXPECT_NE(sentence.find("capacity " + users), std::string::npos) << sentence;
  // The boundary is diagnosed from the first failing level's run: every cause looked for.
  const json::object& diagnosis = cap.at("diagnosis").as_object();
  EXPECT_EQ(diagnosis.at("level").to_number<double>(),
            answer.at("first_failing").to_number<double>());
  EXPECT_EQ(diagnosis.at("findings").as_array().size(), 5u);
  // One chart per objective beside the campaign file, saying the same capacity.
  const fs::path charts(std::string(doc.at("charts_dir").as_string()));
  for (const char* stem : {"capacity-tpot-p90", "capacity-errors"}) {
    ASSERT_TRUE(fs::exists(charts / (std::string(stem) + ".png"))) << charts << stem;
    std::ifstream in(charts / (std::string(stem) + ".svg"));
    const std::string svg((std::istreambuf_iterator<char>(in)), {});
    EXPECT_NE(svg.find("capacity " + users), std::string::npos) << stem;
  }
}

TEST_F(Capacity, AForgedAnswerDoesNotVerify) {
  const Outcome o = capacity({"--max", "8", "--repeat-boundary", "1"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  json::object doc = json::parse(o.out).as_object();
  const fs::path file(std::string(doc.at("campaign_file").as_string()));
  json::object written = read_json(file);
  written.erase("sha256");
  written["capacity"].as_object()["answer"].as_object()["capacity"] = 64;
  // A forger recomputes the file's own digest: the recompute from the records still refuses it.
  std::ofstream(file, std::ios::trunc) << dyno::record::signed_campaign_text(written);
  const Outcome v = dyno(
      {"runs", "verify", std::string(doc.at("campaign_id").as_string()), "--runs-root", runs()});
  EXPECT_EQ(v.exit_code, 3) << v.out << v.err;
  EXPECT_NE((v.out + v.err).find("capacity.answer.capacity"), std::string::npos) << v.out << v.err;
}

TEST_F(Capacity, AnInterruptedSearchIsResumedWithItsFinishedRuns) {
  std::vector<std::string> argv = {
      DYNO_BINARY, "capacity", "-q", "--runs-root",       runs(), "--slo",
      kSlo,        "--max",    "64", "--repeat-boundary", "1"};
  for (const auto& f : measure_flags()) argv.push_back(f);
  {
    Child c(argv, (dir_ / "c.out").string(), (dir_ / "c.err").string());
    // Wait for the campaign file a finished probe leaves, then interrupt the search.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    fs::path file;
    while (std::chrono::steady_clock::now() < deadline && file.empty()) {
      if (fs::exists(dir_ / "runs" / "campaigns")) {
        for (const auto& e : fs::directory_iterator(dir_ / "runs" / "campaigns")) {
          if (e.path().extension() == ".json") file = e.path();
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_FALSE(file.empty());
    c.signal(SIGINT);
    EXPECT_EQ(c.wait(), 130) << c.err();
  }
  const auto ids = dyno::record::campaign_ids(dir_ / "runs");
  ASSERT_EQ(ids.size(), 1u);
  const json::object before = read_json(dir_ / "runs" / "campaigns" / (ids[0] + ".json"));
  EXPECT_EQ(before.at("status").as_string(), "interrupted");
  EXPECT_EQ(before.at("capacity").at("answer").at("status").as_string(), "incomplete");
  std::set<std::string> finished;
  for (const auto& cell : before.at("cells").as_array()) {
    for (const auto& r : cell.at("runs").as_array()) {
      if (r.at("status") != "interrupted") finished.insert(std::string(r.at("run_id").as_string()));
    }
  }
  ASSERT_GE(finished.size(), 1u);
  // Other flags: refused, naming what differs.
  const Outcome other = capacity({"--max", "32", "--repeat-boundary", "1", "--resume", ids[0]});
  EXPECT_EQ(other.exit_code, 2) << other.err;
  EXPECT_NE(other.err.find("--resume"), std::string::npos) << other.err;
  // The same flags: the search goes on in the same campaign, every finished run kept.
  const Outcome o = capacity({"--max", "64", "--repeat-boundary", "1", "--resume", "auto"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const json::object doc = json::parse(o.out).as_object();
  EXPECT_EQ(std::string(doc.at("campaign_id").as_string()), ids[0]);
  EXPECT_EQ(doc.at("status").as_string(), "ok");
  EXPECT_EQ(doc.at("capacity").at("answer").at("status").as_string(), "found");
  std::set<std::string> after;
  for (const auto& cell : doc.at("cells").as_array()) {
    for (const auto& r : cell.at("runs").as_array())
      after.insert(std::string(r.at("run_id").as_string()));
  }
  for (const auto& id : finished) EXPECT_TRUE(after.contains(id)) << id;
  const Outcome v = dyno({"runs", "verify", ids[0], "--runs-root", runs()});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

TEST_F(Capacity, AProfilePredictsTheCapacityAndSeedsTheBracket) {
  // The engine's own profile predicts it: the search starts at the prediction and the file
  // puts the measured capacity beside it; a cost per GPU-hour prices the capacity point.
  const Outcome o = capacity({"--max", "64", "--repeat-boundary", "1", "--predict-with",
                              profile().string(), "--gpu-hour-cost", "3.6"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const json::object doc = json::parse(o.out).as_object();
  const json::object& cap = doc.at("capacity").as_object();
  const double predicted = cap.at("prediction").at("capacity").to_number<double>();
  EXPECT_NEAR(predicted, 5.0, 1.0);
  EXPECT_EQ(cap.at("search").at("start").to_number<double>(), predicted);
  // The first probe ran at the prediction, not at --min.
  EXPECT_EQ(doc.at("cells").as_array()[0].at("params").at("concurrency").to_number<double>(),
            predicted);
  const double measured = cap.at("answer").at("capacity").to_number<double>();
  EXPECT_NEAR(cap.at("prediction").at("measured_over_predicted").to_number<double>(),
              measured / predicted - 1, 1e-12);
  // $3.60 an hour on one "GPU" (none here: counted as 1) over the capacity cell's output rate.
  const json::object& at = cap.at("at_capacity").as_object();
  EXPECT_EQ(cap.at("gpus").to_number<double>(), 1.0);
  const double tok_s = at.at("output_tokens_per_s").to_number<double>();
  EXPECT_NEAR(at.at("usd_per_mtok_output").to_number<double>(), 3.6 / 3600 / tok_s * 1e6,
              1e-9 * tok_s);
  EXPECT_TRUE(at.at("joules_per_mtok_output").is_null());  // no energy measured
  // The campaign names its selected run, and that run's summary holds the same rate.
  const fs::path run = dir_ / "runs" / std::string(at.at("run_id").as_string());
  EXPECT_EQ(read_json(run / "summary.json")
                .at("throughput")
                .at("output_tokens_per_s")
                .to_number<double>(),
            tok_s);
}

TEST_F(Capacity, HostileFlagsAreRefusedNamingTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"capacity"}, "--slo"},
      {{"capacity", "--slo", "ttft=500ms"}, "--slo"},
      {{"capacity", "--slo", "ttft_p90=500ms", "--by", "tokens"}, "--by"},
      {{"capacity", "--slo", "ttft_p90=500ms", "--min", "0"}, "--min"},
      {{"capacity", "--slo", "ttft_p90=500ms", "--min", "2.5"}, "--min"},
      {{"capacity", "--slo", "ttft_p90=500ms", "--min", "8", "--max", "4"}, "--min"},
      {{"capacity", "--slo", "ttft_p90=500ms", "--resolution", "abc"}, "--resolution"},
      {{"capacity", "--slo", "ttft_p90=500ms", "--confidence", "1"}, "--confidence"},
      {{"capacity", "--slo", "ttft_p90=500ms", "--gpu-hour-cost", "-1"}, "--gpu-hour-cost"},
      {{"capacity", "--slo", "ttft_p90=500ms", "-c", "4"}, "-c"},
      {{"capacity", "--slo", "ttft_p90=500ms", "--resume", "nope"}, "--resume"},
      {{"capacity", "--slo", "ttft_p90=500ms", "--predict-with", "/nonexistent.json"},
       "--predict-with"},
  };
  for (const auto& [args, flag] : cases) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--runs-root", runs()});
    const Outcome o = dyno(a);
    EXPECT_EQ(o.exit_code, 2) << args.back() << ": " << o.err;
    EXPECT_NE(o.err.find(flag), std::string::npos) << o.err;
  }
  EXPECT_EQ(record_count(), 0u);
}

}  // namespace
