// A board mixing a dyno run with imported vLLM results (docs/compare.md "Imported runs"): the
// imported run with per-request data pairs with the dyno run in the same cell and gets
// intervals; a summary-only import gets point deltas labelled "no interval: summary only" and
// a tally line of its own; the checks an imported record cannot answer are unresolved (the
// board refuses until they are allowed), naming the tool.
#include "integration/integration_fixture.h"

using namespace dyno::integration;  // the fixture, fs, json, Child, read_json(l)

namespace {

class ImportBoard : public Integration {
 protected:
  /// A vLLM --save-result file of 20 requests at max_concurrency 4 whose prompts add up to
  /// `input_total` tokens (as the dyno run's, so the input-token check passes), each with 16
  /// output tokens, its first token after `ttft_s`, then 15 gaps of `gap_s`. With
  /// `detailed`, the per-request arrays (send times on one clock); else the summary keys only.
  fs::path vllm_file(const std::string& name, const std::string& model, const std::string& api,
                     std::int64_t input_total, bool detailed, double ttft_s, double gap_s) {
    const int n = 20;
    json::object o{{"date", "20260101-120000"},
                   {"backend", api == "chat" ? "openai-chat" : "openai"},
                   {"model_id", model},
                   {"num_prompts", n},
                   {"request_rate", "inf"},
                   {"burstiness", 1.0},
                   {"max_concurrency", 4},
                   {"duration", 2.0},
                   {"completed", n},
                   {"failed", 0},
                   {"total_input_tokens", input_total},
                   {"total_output_tokens", 16 * n},
                   {"mean_ttft_ms", ttft_s * 1000},
                   {"median_ttft_ms", ttft_s * 1000},
                   {"p99_ttft_ms", ttft_s * 1000}};
    if (detailed) {
      json::array in, out, ttfts, itls, errors, starts, latencies;
      for (int i = 0; i < n; ++i) {
        // Slightly different requests, so the bootstrap has a spread to resample.
        const double ttft = ttft_s * (1.0 + 0.01 * (i % 5));
        in.push_back(input_total / n + (i < input_total % n ? 1 : 0));
        out.push_back(16);
        ttfts.push_back(ttft);
        json::array gaps;
        for (int k = 0; k < 15; ++k) gaps.push_back(gap_s * (1.0 + 0.02 * ((i + k) % 3)));
        double latency = ttft;
        for (const auto& g : gaps) latency += g.as_double();
        itls.push_back(std::move(gaps));
        errors.push_back("");
        starts.push_back(1000.0 + 0.25 * (i / 4));
        latencies.push_back(latency + 0.001);
      }
      o["input_lens"] = std::move(in);
      o["output_lens"] = std::move(out);
      o["ttfts"] = std::move(ttfts);
      o["itls"] = std::move(itls);
      o["errors"] = std::move(errors);
      o["start_times"] = std::move(starts);
      o["latencies"] = std::move(latencies);
    }
    const fs::path p = dir_ / name;
    std::ofstream(p) << json::serialize(o);
    return p;
  }
};

TEST_F(ImportBoard, ADynoRunAndImportedVllmResultsShareACell) {
  const Outcome run = run_dyno({"-n", "20", "-c", "4", "--output-tokens", "16", "--input-tokens",
                                "32", "--label", "dyno-sim", "--telemetry", "off"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json::object m = read_json(run.run_dir / "manifest.json");
  const std::string model(m.at("model").at("id").as_string());
  const std::string api(m.at("workload").at("api").as_string());
  ASSERT_EQ(run.summary.at("requests").at("total").as_int64(), 20);
  const std::int64_t input_total = run.summary.at("tokens").at("input_total").as_int64();
  // Faster than the sim (whose first token and gaps take milliseconds) by a wide margin.
  const fs::path detailed =
      vllm_file("detailed.json", model, api, input_total, true, 0.002, 0.0002);
  const fs::path summary = vllm_file("summary.json", model, api, input_total, false, 0.002, 0.0002);
  for (const auto& [file, label] :
       {std::pair{detailed, "vllm-detailed"}, std::pair{summary, "vllm-summary"}}) {
    const Outcome imp = dyno({"import", "vllm-bench", file.string(), "--runs-root", runs(),
                              "--label", label, "--engine", "vllm"});
    ASSERT_EQ(imp.exit_code, 0) << imp.err;
  }
  const std::vector<std::string> arms = {"compare",
                                         "--runs-root",
                                         runs(),
                                         "--arm",
                                         "dyno=label=dyno-sim",
                                         "--arm",
                                         "detailed=label=vllm-detailed",
                                         "--arm",
                                         "summary=label=vllm-summary",
                                         "--baseline",
                                         "dyno"};
  // The checks an imported record cannot answer are unresolved: refused until allowed.
  const Outcome refused = dyno(arms);
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("request_stream"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("imported from vllm bench serve"), std::string::npos) << refused.err;

  std::vector<std::string> allowed = arms;
  allowed.insert(allowed.end(), {"--allow-unresolved", "--json"});
  const Outcome board = dyno(allowed);
  ASSERT_EQ(board.exit_code, 0) << board.err;
  const json::object b = json::parse(board.out).as_object();
  ASSERT_EQ(b.at("cells").as_array().size(), 1u) << board.out;  // one cell: c4
  const json::object& cell = b.at("cells").as_array()[0].as_object();
  EXPECT_EQ(cell.at("cell").as_string(), "c4");
  std::map<std::string, json::object> by_arm;
  for (const auto& c : cell.at("comparisons").as_array()) {
    by_arm[std::string(c.at("arm").as_string())] = c.as_object();
  }
  ASSERT_EQ(by_arm.size(), 2u);
  // Per-request data: an interval over requests, and the vLLM run is the faster one.
  const json::object& ttft = by_arm["detailed"].at("deltas").at("ttft_p50_ms").as_object();
  EXPECT_EQ(ttft.at("method").as_string(), "bootstrap_requests");
  EXPECT_EQ(ttft.at("verdict").as_string(), "win");
  EXPECT_FALSE(ttft.at("summary_only").as_bool());
  // Summary only: a point delta, never a verdict from an interval.
  const json::object& sttft = by_arm["summary"].at("deltas").at("ttft_p50_ms").as_object();
  EXPECT_TRUE(sttft.at("summary_only").as_bool());
  EXPECT_EQ(sttft.at("verdict").as_string(), "no_interval");
  EXPECT_EQ(sttft.at("no_interval").as_string(), "summary only");
  EXPECT_GT(sttft.at("value").as_double(), 0);
  // Checks: what the file cannot say is unresolved and names the tool.
  for (const auto& ch : by_arm["detailed"].at("checks").as_array()) {
    if (ch.at("name").as_string() != "request_stream") continue;
    EXPECT_EQ(ch.at("outcome").as_string(), "unresolved");
    EXPECT_NE(std::string(ch.at("note").as_string()).find("imported from vllm bench serve"),
              std::string::npos);
  }
  // Tallies: the summary-only pair has a line of its own with point-estimate counts.
  bool summary_line = false;
  for (const auto& t : b.at("tallies").as_array()) {
    if (t.at("arm").as_string() != "summary") continue;
    EXPECT_EQ(t.at("basis").as_string(), "summary_only");
    EXPECT_EQ(t.at("wins").as_int64(), 0);
    summary_line = true;
  }
  EXPECT_TRUE(summary_line);
  bool imported_finding = false;
  for (const auto& f : b.at("findings").as_array()) {
    imported_finding = imported_finding || f.at("type").as_string() == "imported_run";
  }
  EXPECT_TRUE(imported_finding);

  // The README board says it in words.
  allowed.pop_back();
  const Outcome text = dyno(allowed);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("no interval: summary only"), std::string::npos) << text.out;
}

}  // namespace
