// End to end: two simulated engines (a faster and a slower JSON profile) through `dyno sweep`,
// then `dyno report` and `dyno compare`: the board's wins match the profiles.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "digest/digest.h"
#include "integration/process.h"
#include "integration/record_check.h"
#include "record/run_writer.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::testing::Child;

namespace {

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// The board's charts (SVG and PNG each); no telemetry, so no power or energy.
const std::vector<std::string> kCharts = {"throughput-by-concurrency",
                                          "decode-per-user-by-concurrency",
                                          "delta-heatmap",
                                          "serving-tradeoff",
                                          "frontier",
                                          "input-throughput-by-concurrency",
                                          "prefill-per-user-by-concurrency",
                                          "prefill-delta-heatmap",
                                          "e2e-latency-cdf",
                                          "ttft-cdf"};

std::string verdict(const json::object& comparison, const char* metric) {
  return std::string(comparison.at("deltas").at(metric).at("verdict").as_string());
}

class Report : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = dyno::testing::make_temp_dir("dyno-report-it"); }
  void TearDown() override {
    dyno::testing::expect_records_conform(dir_ / "runs");  // docs/schema/
    if (!HasFailure()) fs::remove_all(dir_);
  }

  Result dyno(std::vector<std::string> args) {
    std::vector<std::string> argv = {DYNO_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    Child c(argv, (dir_ / "out.txt").string(), (dir_ / "err.txt").string());
    Result r;
    r.exit_code = c.wait();
    r.out = c.out();
    r.err = c.err();
    return r;
  }

  /// A sweep over concurrency 1 and 4 against the embedded simulated engine with `profile`.
  void sweep(const std::string& label, const std::string& profile_json) {
    const fs::path profile = dir_ / (label + ".json");
    std::ofstream(profile) << profile_json;
    const Result r = dyno({"sweep",
                           "--concurrencies",
                           "1,4",
                           "--min-requests",
                           "16",
                           "--per-slot",
                           "6",
                           "--input-tokens",
                           "32",
                           "--output-tokens",
                           "16",
                           "--telemetry",
                           "off",
                           "--profile",
                           profile.string(),
                           "--label",
                           label,
                           "--runs-root",
                           runs().string(),
                           "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  /// SHA256SUMS holds every file, and sha256sum agrees; returns how many it lists.
  int expect_sums_agree(const fs::path& board) {
    std::ifstream sums(board / "SHA256SUMS");
    std::string line;
    int listed = 0;
    while (std::getline(sums, line)) {
      Child c({"/usr/bin/sha256sum", (board / line.substr(66)).string()},
              (dir_ / "sum.out").string(), (dir_ / "sum.err").string());
      EXPECT_EQ(c.wait(), 0);
      EXPECT_EQ(c.out().substr(0, 64), line.substr(0, 64)) << line;
      ++listed;
    }
    return listed;
  }

  /// The charts: SVG and PNG of each, in README.md and report.html, and none of power or energy.
  void expect_charts(const fs::path& board, const std::string& report_out) {
    EXPECT_NE(report_out.find(std::to_string(kCharts.size()) + " charts"), std::string::npos)
        << report_out;
    const std::string readme_text = Child::slurp((board / "README.md").string());
    const std::string html = Child::slurp((board / "report.html").string());
    for (const auto& stem : kCharts) {
      SCOPED_TRACE(stem);
      const std::string png = Child::slurp((board / (stem + ".png")).string());
      ASSERT_GT(png.size(), 24u);
      EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
      const std::string svg = Child::slurp((board / (stem + ".svg")).string());
      EXPECT_NE(svg.find("<svg"), std::string::npos);
      EXPECT_NE(readme_text.find("](" + stem + ".png)"), std::string::npos);
      EXPECT_NE(html.find("<figure id=\"fig-" + stem + "\">"), std::string::npos);
    }
    EXPECT_FALSE(fs::exists(board / "power-timeline.png"));
    // One panel, one model: the throughput chart at its default size, 960 × 600.
    const std::string png = Child::slurp((board / "throughput-by-concurrency.png").string());
    const auto be32 = [&png](std::size_t at) {
      std::uint32_t v = 0;
      for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(png[at + i]);
      return v;
    };
    EXPECT_EQ(png.substr(12, 4), "IHDR");
    EXPECT_EQ(be32(16), 960u);
    EXPECT_EQ(be32(20), 600u);
    std::size_t inlined = 0;
    for (auto pos = html.find("<svg "); pos != std::string::npos;
         pos = html.find("<svg ", pos + 1)) {
      ++inlined;
    }
    EXPECT_EQ(inlined, kCharts.size());
  }

  /// board.json: in every cell the faster engine wins the headline figures; the checks a sim
  /// can pass pass (its model, which dyno knows, included), and the GPU identities of runs
  /// with telemetry off are unresolved.
  void expect_fast_wins(const fs::path& board) {
    const json::object ledger =
        json::parse(Child::slurp((board / "board.json").string())).as_object();
    EXPECT_EQ(ledger.at("status").as_string(), "unresolved_allowed");
    // The binary that made the board, by hash (SHA256SUMS covers board.json, so this too).
    EXPECT_EQ(ledger.at("provenance").at("generator").at("executable_sha256"),
              json::value(dyno::digest::sha256_hex_file(DYNO_BINARY)));
    const auto& cells = ledger.at("cells").as_array();
    ASSERT_EQ(cells.size(), 2u);
    for (const auto& cv : cells) {
      const auto& cell = cv.as_object();
      const auto& cmp = cell.at("comparisons").as_array().at(0).as_object();
      SCOPED_TRACE(std::string(cell.at("id").as_string()));
      EXPECT_EQ(cmp.at("status").as_string(), "compared");
      // The faster engine: more tokens and requests per second, faster decode, lower latency.
      EXPECT_EQ(verdict(cmp, "output_tokens_per_s"), "win");
      EXPECT_EQ(verdict(cmp, "requests_per_s"), "win");
      EXPECT_EQ(verdict(cmp, "decode_tokens_per_s"), "win");
      EXPECT_EQ(verdict(cmp, "tpot_p50_ms"), "win");
      EXPECT_EQ(verdict(cmp, "e2e_p50_ms"), "win");
      const auto& d = cmp.at("deltas").at("output_tokens_per_s").as_object();
      EXPECT_GT(d.at("low").to_number<double>(), 0.0);
      EXPECT_EQ(d.at("method").as_string(), "bootstrap_requests");
      // The requests, stream, load, harness and the embedded sim's model match; the GPU
      // identities of runs with telemetry off are unresolved.
      for (const auto& ch : cmp.at("checks").as_array()) {
        const std::string name(ch.at("name").as_string());
        const std::string outcome(ch.at("outcome").as_string());
        if (name == "request_stream" || name == "request_count" || name == "sampling" ||
            name == "load" || name == "harness" || name == "model_fingerprint" ||
            name == "model_revision") {
          EXPECT_EQ(outcome, "pass") << name;
        }
        if (name == "driver" || name == "gpu_model") {
          EXPECT_EQ(outcome, "unresolved") << name;
        }
      }
    }
    for (const auto& t : ledger.at("tallies").as_array()) {
      EXPECT_EQ(t.at("wins").to_number<int>(), 2) << json::serialize(t);
    }
  }

  fs::path runs() const { return dir_ / "runs"; }
  fs::path dir_;
};

TEST_F(Report, AFasterSimulatedEngineWinsEveryCellOfTheBoard) {
  // The same model, workload and harness; only the engine step time differs (2 ms vs 12 ms).
  sweep("fast", R"({"base": "small-gpu", "name": "fast", "step_base_s": 0.002})");
  sweep("slow", R"({"base": "small-gpu", "name": "slow", "step_base_s": 0.012})");
  const fs::path board = dir_ / "board";
  const std::vector<std::string> arms = {"--runs-root",     runs().string(), "--arm",
                                         "fast=label=fast", "--arm",         "slow=label=slow"};

  // The sweeps ran with telemetry off, so their records do not know their GPUs: the board
  // refuses to render until that is allowed, and writes nothing.
  std::vector<std::string> args = {"report", "--out", board.string()};
  args.insert(args.end(), arms.begin(), arms.end());
  Result r = dyno(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("refusing to render a board with unresolved identities"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("gpu_model"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("telemetry was off"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("model_fingerprint"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--allow-unresolved"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(board));

  args.push_back("--allow-unresolved");
  r = dyno(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* f : {"README.md", "report.html", "board.json", "board.csv", "SHA256SUMS"}) {
    EXPECT_TRUE(fs::exists(board / f)) << f;
  }
  EXPECT_EQ(expect_sums_agree(board), 4 + 2 * static_cast<int>(kCharts.size()));
  ASSERT_NO_FATAL_FAILURE(expect_charts(board, r.out));

  ASSERT_NO_FATAL_FAILURE(expect_fast_wins(board));
  // The board says at the top that it was rendered with unresolved identities.
  const std::string readme = Child::slurp((board / "README.md").string());
  const auto first_section = readme.find("\n## ");
  EXPECT_NE(readme.substr(0, first_section).find("Unresolved identities"), std::string::npos)
      << readme.substr(0, 600);

  // The other way round, the slower engine loses every headline figure.
  std::vector<std::string> reversed = {"compare",         "--json",        "--allow-unresolved",
                                       "--runs-root",     runs().string(), "--arm",
                                       "slow=label=slow", "--arm",         "fast=label=fast"};
  r = dyno(reversed);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json::object rev = json::parse(r.out).as_object();
  EXPECT_EQ(rev.at("baseline").as_string(), "fast");
  for (const auto& t : rev.at("tallies").as_array()) {
    EXPECT_EQ(t.at("losses").to_number<int>(), 2) << json::serialize(t);
  }

  // The console table.
  std::vector<std::string> text = {"compare", "--allow-unresolved"};
  text.insert(text.end(), arms.begin(), arms.end());
  r = dyno(text);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("fast vs slow"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Output tok/s: 2/2 cells won"), std::string::npos) << r.out;
}

TEST_F(Report, ASpecPinsExpectationsMarksAccuracyAndTheEngineTimesShow) {
  sweep("only", R"({"base": "small-gpu", "name": "only"})");
  // The cell ids, from a board of the sweep against itself.
  Result r = dyno({"compare", "--json", "--allow-unresolved", "--runs-root", runs().string(),
                   "--arm", "a=label=only", "--arm", "b=label=only"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json::object plain = json::parse(r.out).as_object();
  const std::string c1(plain.at("cells").at(0).at("id").as_string());
  const fs::path spec = dir_ / "spec.json";
  std::ofstream(spec) << R"({"arms": [{"name": "a", "runs": "label=only"},
                                      {"name": "b", "runs": "label=only"}],
    "allow_unresolved": true,
    "expect": {"requests": 16, "cells_per_arm": {"a": 2}},
    "accuracy_not_comparable": [{"cell": ")"
                      << c1 << R"(", "reason": "answers scored by two parsers"}]})";
  const std::vector<std::string> base = {"compare",       "--json", "--runs-root",
                                         runs().string(), "--spec", spec.string()};
  // The c4 runs measured 24 requests, not the 16 pinned: no board, each mismatch named.
  r = dyno(base);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("refusing to render: the board's runs do not match the spec's "
                       "expectations"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("/sweep/c4, run "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("expected 16, found 24"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  // By policy, the board is made and says so.
  std::vector<std::string> args = base;
  args.insert(args.end(), {"--expect-policy", "report"});
  r = dyno(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json::object board = json::parse(r.out).as_object();
  EXPECT_EQ(board.at("status").as_string(), "expectations_failed");
  EXPECT_EQ(board.at("expectations").at("failed").to_number<int>(), 2);  // a's and b's c4 run
  const auto& cmp = board.at("cells").at(0).at("comparisons").at(0).as_object();
  EXPECT_EQ(cmp.at("deltas").at("accuracy").at("verdict").as_string(), "not_comparable");
  EXPECT_EQ(cmp.at("deltas").at("accuracy").at("reason").as_string(),
            "answers scored by two parsers");
  // The simulated engine sends llama.cpp-style timings: the engine's own figures are on the
  // board, beside the client's.
  const auto& figures = board.at("cells").at(0).at("arms").at(0).at("figures").as_object();
  ASSERT_TRUE(figures.contains("server_prefill_tok_s"));
  EXPECT_TRUE(figures.at("server_decode_tok_s").is_number());
  EXPECT_TRUE(figures.at("server_prompt_tokens_computed").is_number());
  // The spec's own hash, pinned by the caller: a different one refuses, whatever the policy.
  const std::string sha = dyno::digest::sha256_hex_file(spec.string());
  args.insert(args.end(), {"--expect-spec-sha256", std::string(64, '0')});
  r = dyno(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("the board spec file's SHA-256 expected " + std::string(64, '0') +
                       ", found " + sha),
            std::string::npos)
      << r.err;
  args.back() = sha;
  r = dyno(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  board = json::parse(r.out).as_object();
  EXPECT_EQ(board.at("expectations").at("pinned").at("spec_sha256").as_string(), sha);
  // The README and the console say it too.
  const fs::path out = dir_ / "pinned-board";
  r = dyno({"report", "--runs-root", runs().string(), "--spec", spec.string(), "--expect-policy",
            "report", "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string readme = Child::slurp((out / "README.md").string());
  EXPECT_NE(readme.find("## Engine-timed figures"), std::string::npos);
  EXPECT_NE(readme.find("not comparable: answers scored by two parsers"), std::string::npos);
  EXPECT_NE(readme.find("Expectations failed"), std::string::npos);
  r = dyno({"compare", "--runs-root", runs().string(), "--spec", spec.string(), "--expect-policy",
            "report"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("expectation_failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("accuracy_not_comparable"), std::string::npos) << r.out;
  // Bad pins are usage errors.
  r = dyno({"compare", "--runs-root", runs().string(), "--arm", "a=label=only", "--arm",
            "b=label=only", "--expect-spec-sha256", sha});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--expect-spec-sha256 pins the --spec file's hash"), std::string::npos)
      << r.err;
  r = dyno({"compare", "--runs-root", runs().string(), "--spec", spec.string(),
            "--expect-spec-sha256", "beef"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not a SHA-256"), std::string::npos) << r.err;
  r = dyno({"compare", "--runs-root", runs().string(), "--spec", spec.string(), "--expect-policy",
            "maybe"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--expect-policy: 'maybe' is not a policy"), std::string::npos) << r.err;
}

TEST_F(Report, ALadderBoardPlotsDecodeOverDepthAndPrefillOverPromptSize) {
  for (const auto& [label, step] : {std::pair{"fast", "0.002"}, std::pair{"slow", "0.012"}}) {
    const fs::path profile = dir_ / (std::string(label) + ".json");
    std::ofstream(profile) << R"({"base": "small-gpu", "name": ")" << label
                           << R"(", "step_base_s": )" << step << "}";
    const Result r =
        dyno({"ladder", "--depths", "0,64", "--prefill-sizes", "32,128", "--decode-tokens", "8",
              "--repeat", "1", "--telemetry", "off", "--profile", profile.string(), "--label",
              label, "--runs-root", runs().string(), "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const fs::path board = dir_ / "board";
  const Result r = dyno({"report", "--out", board.string(), "--runs-root", runs().string(), "--arm",
                         "fast=label=fast", "--arm", "slow=label=slow", "--allow-unresolved"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Decode over context depth (depth 0 among them), prefill over prompt size; no aggregate or
  // load chart for cells of one request, and their latency as points over the level, not CDFs.
  const std::vector<std::string> charts = {"decode-per-user-by-context",
                                           "decode-delta-heatmap",
                                           "prefill-per-user-by-prompt",
                                           "prefill-delta-heatmap",
                                           "ttft-by-context",
                                           "ttft-by-prompt",
                                           "e2e-by-context",
                                           "e2e-by-prompt"};
  const json::object ledger =
      json::parse(Child::slurp((board / "board.json").string())).as_object();
  std::vector<std::string> stems;
  for (const auto& f : ledger.at("provenance").at("figures").as_array()) {
    stems.emplace_back(f.at("stem").as_string());
  }
  EXPECT_EQ(stems, charts);
  EXPECT_EQ(expect_sums_agree(board), 4 + 2 * static_cast<int>(charts.size()));
  EXPECT_FALSE(fs::exists(board / "throughput-by-context.png"));
  EXPECT_FALSE(fs::exists(board / "serving-tradeoff-context.png"));
  // Each in its section of README.md.
  const std::string readme = Child::slurp((board / "README.md").string());
  const auto at = [&readme](const std::string& text) { return readme.find(text); };
  EXPECT_LT(at("## Service throughput"), at("](decode-per-user-by-context.png)"));
  EXPECT_LT(at("](decode-per-user-by-context.png)"), at("## Prefill"));
  EXPECT_LT(at("## Prefill"), at("](prefill-per-user-by-prompt.png)"));
  EXPECT_LT(at("](prefill-delta-heatmap.png)"), at("## Latency"));
  EXPECT_NE(at("rates\\_tok\\_s.decode\\_rate\\_per\\_user.p50"), std::string::npos) << readme;
  // The decode chart's SVG names its axis: context depth, on which depth 0 is a slot.
  const std::string svg = Child::slurp((board / "decode-per-user-by-context.svg").string());
  EXPECT_NE(svg.find("x axis: Context depth (tokens)"), std::string::npos);
  EXPECT_EQ(svg.find("not shown on the log axis"), std::string::npos);
}

TEST_F(Report, BadArgumentsAreUsageErrors) {
  sweep("only", R"({"base": "firehose"})");
  Result r = dyno({"compare", "--runs-root", runs().string(), "--arm", "one=label=only"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("at least two arms"), std::string::npos) << r.err;
  r = dyno({"compare", "--runs-root", runs().string(), "--arm", "a=label=only", "--arm",
            "b=label=nobody"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("matches no run"), std::string::npos) << r.err;
  r = dyno({"compare", "--runs-root", runs().string(), "--arm", "a=label=only", "--arm",
            "b=label=only", "--ignore", "nonsense"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--ignore: unknown check 'nonsense'"), std::string::npos) << r.err;
  r = dyno(
      {"report", "--runs-root", runs().string(), "--arm", "a=label=only", "--arm", "b=label=only"});
  EXPECT_EQ(r.exit_code, 2);  // --out is required
  r = dyno({"compare", "--runs-root", (dir_ / "missing").string(), "--arm", "a=x", "--arm", "b=y"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--runs-root"), std::string::npos) << r.err;
}

TEST_F(Report, ARecordOfANewerSchemaVersionIsRefusedNamingTheFile) {
  sweep("only", R"({"base": "firehose"})");
  // A copy of the runs root is changed: the records under runs() stay as dyno wrote them.
  const fs::path root = dir_ / "newer-runs";
  fs::copy(runs(), root, fs::copy_options::recursive);
  fs::path run;
  for (const auto& e : fs::directory_iterator(root)) {
    if (fs::exists(e.path() / "summary.json")) run = e.path();
  }
  ASSERT_FALSE(run.empty());
  const auto bump = [](const fs::path& file) {
    std::string text = Child::slurp(file.string());
    const std::string from = "\"schema_version\": 1";
    const auto pos = text.find(from);
    ASSERT_NE(pos, std::string::npos) << file;
    text.replace(pos, from.size(), "\"schema_version\": 2");
    std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
  };
  const fs::path board = dir_ / "board";
  const std::vector<std::string> args = {
      "report", "--runs-root",  root.string(), "--out",        board.string(),
      "--arm",  "a=label=only", "--arm",       "b=label=only", "--allow-unresolved"};
  bump(run / "summary.json");
  Result r = dyno(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("error: " + (run / "summary.json").string() +
                       ": schema_version 2 is newer than this dyno reads (1); upgrade dyno"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(board));
  bump(run / "manifest.json");
  // Scanning for a query, a manifest this dyno cannot read leaves its record out with a
  // warning naming it (docs/compare.md); the other runs of the query still make a board.
  r = dyno({"compare", "--runs-root", root.string(), "--arm", "a=label=only", "--arm",
            "b=label=only", "--allow-unresolved"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("dyno: warning: left out of the query, its manifest cannot be read: " +
                       (run / "manifest.json").string() +
                       ": schema_version 2 is newer than this dyno reads (1); upgrade dyno"),
            std::string::npos)
      << r.err;
}

}  // namespace
