// `dyno import table` end to end: a hand-written ledger of two engines at three concurrencies
// (tests/record/data/table/ledger.csv, TTFT in seconds) becomes one record a row that `dyno
// runs verify` passes and `dyno runs list` shows; a board of the two engines pairs the rows
// cell by cell (same model, same load), as the ledger's publisher compared them; a ledger
// without --map, or with a column that is not there, exits 2 and imports nothing.
#include "integration/integration_fixture.h"
#include "record/run_writer.h"

using namespace dyno::integration;  // the fixture, fs, json, Child, read_json(l)

namespace {

const fs::path kData = fs::path(DYNO_SOURCE_DIR) / "tests/record/data/table";

class ImportTable : public Integration {};

const std::vector<std::string> kMap{"--map", "Engine=engine",
                                    "--map", "Version=engine.version",
                                    "--map", "Model=model",
                                    "--map", "GPU=gpu",
                                    "--map", "Concurrency=concurrency",
                                    "--map", "Prompts=requests",
                                    "--map", "Completed=requests.ok",
                                    "--map", "Failed=requests.failed",
                                    "--map", "Output tok/s=throughput.output_tokens_per_s",
                                    "--map", "Req/s=throughput.requests_per_s",
                                    "--map", "TTFT p50 (s)=latency_ms.ttft.p50:s",
                                    "--map", "TTFT p99 (s)=latency_ms.ttft.p99:s",
                                    "--map", "TPOT p50 (ms)=latency_ms.tpot.p50",
                                    "--map", "E2E mean (s)=latency_ms.e2e.mean:s"};

TEST_F(ImportTable, ALedgerBecomesRecordsThatVerifyListAndPairCellByCell) {
  std::vector<std::string> args{"import",      "table",  (kData / "ledger.csv").string(),
                                "--runs-root", runs(),   "--label",
                                "ledger",      "--json", "--api",
                                "completions"};
  args.insert(args.end(), kMap.begin(), kMap.end());
  const Outcome imp = dyno(args);
  ASSERT_EQ(imp.exit_code, 0) << imp.err;
  const json::array imported = json::parse(imp.out).as_array();
  ASSERT_EQ(imported.size(), 6u);
  EXPECT_EQ(imported[0].at("part").as_string(), "row 2");
  EXPECT_EQ(imported[0].at("timing").as_string(), "summary_only");

  for (const auto& row : imported) {
    const std::string id(row.at("run_id").as_string());
    const Outcome verify = dyno({"runs", "verify", id, "--runs-root", runs()});
    EXPECT_EQ(verify.exit_code, 0) << id << "\n" << verify.out << verify.err;
  }
  const Outcome list = dyno({"runs", "list", "--json", "--runs-root", runs()});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  const json::array listed = json::parse(list.out).as_array();
  ASSERT_EQ(listed.size(), 6u);
  std::map<std::string, int> per_engine;
  for (const auto& row : listed) {
    EXPECT_EQ(row.at("protocol").as_string(), "import");
    EXPECT_EQ(row.at("model_id").as_string(), "example-org/tiny-chat");
    ++per_engine[std::string(row.at("engine_name").as_string())];
  }
  EXPECT_EQ(per_engine["vllm"], 3);
  EXPECT_EQ(per_engine["sglang"], 3);

  // The publisher's board re-derived: sglang against vllm, cell by cell.
  const Outcome board =
      dyno({"compare", "--runs-root", runs(), "--arm", "vllm=engine=vllm", "--arm",
            "sglang=engine=sglang", "--baseline", "vllm", "--allow-unresolved", "--json"});
  ASSERT_EQ(board.exit_code, 0) << board.err;
  const json::object b = json::parse(board.out).as_object();
  std::vector<std::string> cells;
  for (const auto& c : b.at("cells").as_array()) {
    cells.emplace_back(c.at("cell").as_string());
    ASSERT_EQ(c.at("comparisons").as_array().size(), 1u) << board.out;
    const json::object& cmp = c.at("comparisons").as_array()[0].as_object();
    const json::object& out = cmp.at("deltas").at("output_tokens_per_s").as_object();
    EXPECT_TRUE(out.at("summary_only").as_bool());
    EXPECT_EQ(out.at("verdict").as_string(), "no_interval");
    EXPECT_GT(out.at("value").as_double(), 0) << board.out;  // sglang published more tok/s
  }
  // A summary-only pair's deltas are no verdicts: no nonwin finding for any of them.
  for (const auto& f : b.at("findings").as_array()) {
    EXPECT_NE(f.at("type").as_string(), "nonwin") << f;
  }
  EXPECT_EQ(cells, (std::vector<std::string>{"c1", "c8", "c32"})) << board.out;
  EXPECT_TRUE(b.at("unpaired").as_array().empty()) << board.out;
  // The same deltas the publisher's figures give: rates (A/B − 1)·100, latencies (B/A − 1)·100.
  const json::array& cs = b.at("cells").as_array();
  const auto delta = [&](std::size_t cell, const char* metric) {
    return cs[cell].at("comparisons").as_array()[0].at("deltas").at(metric).at("value").as_double();
  };
  EXPECT_NEAR(delta(0, "output_tokens_per_s"), (84.0 / 81.5 - 1) * 100, 1e-9);
  EXPECT_NEAR(delta(1, "output_tokens_per_s"), (612.5 / 590.25 - 1) * 100, 1e-9);
  EXPECT_NEAR(delta(2, "output_tokens_per_s"), (1805.75 / 1710 - 1) * 100, 1e-9);
  EXPECT_NEAR(delta(1, "ttft_p50_ms"), (34.0 / 31.0 - 1) * 100, 1e-9);  // the sheet's seconds
  // Point-estimate win counts, on a tally line of their own: never interval wins.
  bool tallied = false;
  for (const auto& t : b.at("tallies").as_array()) {
    if (t.at("metric").as_string() != "output_tokens_per_s") continue;
    EXPECT_EQ(t.at("basis").as_string(), "summary_only");
    EXPECT_EQ(t.at("compared").as_int64(), 3);
    EXPECT_EQ(t.at("point_wins").as_int64(), 3);
    EXPECT_EQ(t.at("wins").as_int64(), 0);
    tallied = true;
  }
  EXPECT_TRUE(tallied) << board.out;
  const Outcome text = dyno({"compare", "--runs-root", runs(), "--arm", "vllm=engine=vllm", "--arm",
                             "sglang=engine=sglang", "--baseline", "vllm", "--allow-unresolved"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Output tok/s, summary-only pairs (no interval: summary only): 3/3 cells "
                          "ahead by point estimate"),
            std::string::npos)
      << text.out;
}

TEST_F(ImportTable, ALedgersEngineTimedPrefillRateIsRecordedAndCompared) {
  // A lab's "model prefill" column: the engine's own prompt tokens over its prompt time.
  const fs::path ledger = fs::path(runs()).parent_path() / "prefill.csv";
  fs::create_directories(ledger.parent_path());
  std::ofstream(ledger) << "engine,model,c,ok,out_tok_s,model_prefill\n"
                           "alpha,m,8,40,600,1500\n"
                           "beta,m,8,40,500,1200\n"
                           "gamma,m,8,40,550,\n";
  const Outcome imp = dyno({"import",        "table",
                            ledger.string(), "--runs-root",
                            runs(),          "--api",
                            "chat",          "--json",
                            "--map",         "engine=engine",
                            "--map",         "model=model",
                            "--map",         "c=concurrency",
                            "--map",         "ok=requests.ok",
                            "--map",         "out_tok_s=throughput.output_tokens_per_s",
                            "--map",         "model_prefill=server.timings.prefill_tokens_per_s"});
  ASSERT_EQ(imp.exit_code, 0) << imp.err;
  const json::array imported = json::parse(imp.out).as_array();
  ASSERT_EQ(imported.size(), 3u);
  for (const auto& row : imported) {
    const std::string id(row.at("run_id").as_string());
    const Outcome verify = dyno({"runs", "verify", id, "--runs-root", runs()});
    EXPECT_EQ(verify.exit_code, 0) << id << "\n" << verify.out << verify.err;
    const json::object s = read_json(fs::path(runs()) / id / "summary.json");
    const json::object& server = s.at("server").as_object();
    if (id == std::string(imported[2].at("run_id").as_string())) {
      EXPECT_FALSE(server.contains("timings")) << server;  // an empty cell: not stated
      continue;
    }
    const json::object& t = server.at("timings").as_object();
    EXPECT_EQ(t.at("source").as_string(), "stated by the imported file");
    EXPECT_EQ(t.at("prefill_tokens_per_s").to_number<double>(),
              id == std::string(imported[0].at("run_id").as_string()) ? 1500.0 : 1200.0);
  }
  const Outcome board =
      dyno({"compare", "--runs-root", runs(), "--arm", "beta=engine=beta", "--arm",
            "alpha=engine=alpha", "--baseline", "beta", "--allow-unresolved", "--json"});
  ASSERT_EQ(board.exit_code, 0) << board.err;
  const json::object b = json::parse(board.out).as_object();
  ASSERT_EQ(b.at("cells").as_array().size(), 1u) << board.out;
  const json::object& cmp = b.at("cells").as_array()[0].at("comparisons").as_array()[0].as_object();
  EXPECT_NEAR(cmp.at("deltas").at("server_prefill_tokens_per_s").at("value").as_double(), 25.0,
              1e-9)
      << board.out;
  // Each arm's figure as its ledger row stated it, under the registry's board key.
  std::map<std::string, double> stated;
  for (const auto& arm : b.at("cells").as_array()[0].at("arms").as_array()) {
    stated[std::string(arm.at("arm").as_string())] =
        arm.at("figures").at("server_prefill_tokens_per_s").to_number<double>();
  }
  EXPECT_EQ(stated, (std::map<std::string, double>{{"alpha", 1500.0}, {"beta", 1200.0}}))
      << board.out;
}

TEST_F(ImportTable, NoMapOrAMissingColumnExitsTwoAndImportsNothing) {
  const std::string ledger = (kData / "ledger.csv").string();
  const Outcome none = dyno({"import", "table", ledger, "--runs-root", runs()});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("no --map"), std::string::npos) << none.err;
  const Outcome missing = dyno({"import", "table", ledger, "--runs-root", runs(), "--map",
                                "Model=model", "--map", "TTFT=latency_ms.ttft.p50"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("column 'TTFT' (--map 'TTFT=latency_ms.ttft.p50') is not in the file"),
            std::string::npos)
      << missing.err;
  EXPECT_EQ(record_count(), 0u);
}

TEST_F(ImportTable, ALedgersIdentitiesAreKeptSoThePairChecksResolveFromThem) {
  // A lab's two-arm ledger: per cell the model revision, each GPU's UUID, the driver, the
  // request stream's and the harness's SHA-256, the engine's commit, accuracy and the engine's
  // own prefill rate. The pair checks then resolve from the records, and pass or fail by the
  // values: beta's c8 row was measured on another GPU.
  const std::string stream(64, 'a'), harness(64, 'b');
  const fs::path ledger = fs::path(runs()).parent_path() / "lab.csv";
  fs::create_directories(ledger.parent_path());
  std::ofstream(ledger)
      << "engine,model,revision,c,ok,out_tok_s,gpu,gpu_uuid,driver_version,stream,harness,"
         "commit,accuracy,model_prefill\n"
      << "alpha,m,r1,1,10,100,2x H100,GPU-1 GPU-2,570.86," << stream << ",sha256:" << harness
      << ",aaaa111,0.5,1500\n"
      << "alpha,m,r1,8,40,600,2x H100,GPU-1 GPU-2,570.86," << stream << "," << harness
      << ",aaaa111,0.5,1400\n"
      << "beta,m,r1,1,10,90,2x H100,\"GPU-1,GPU-2\",570.86," << stream << "," << harness
      << ",bbbb222,0.25,1200\n"
      << "beta,m,r1,8,40,500,2x H100,GPU-3 GPU-4,570.86," << stream << "," << harness
      << ",bbbb222,0.25,\n";
  std::vector<std::string> args{
      "import",        "table",
      ledger.string(), "--runs-root",
      runs(),          "--api",
      "chat",          "--json",
      "--map",         "engine=engine",
      "--map",         "model=model",
      "--map",         "revision=model.revision",
      "--map",         "c=concurrency",
      "--map",         "ok=requests.ok",
      "--map",         "out_tok_s=throughput.output_tokens_per_s",
      "--map",         "gpu=gpu",
      "--map",         "gpu_uuid=gpu.uuid",
      "--map",         "driver_version=gpu.driver",
      "--map",         "stream=request_stream.sha256",
      "--map",         "harness=harness.sha256",
      "--map",         "commit=engine.commit",
      "--map",         "accuracy=quality.accuracy",
      "--map",         "model_prefill=server.timings.prefill_tokens_per_s"};
  const Outcome imp = dyno(args);
  ASSERT_EQ(imp.exit_code, 0) << imp.err;
  const json::array imported = json::parse(imp.out).as_array();
  ASSERT_EQ(imported.size(), 4u);
  const fs::path first = fs::path(runs()) / std::string(imported[0].at("run_id").as_string());
  const json::object m = read_json(first / "manifest.json");
  EXPECT_EQ(m.at("model").at("revision").as_string(), "r1");
  EXPECT_EQ(m.at("workload").at("request_stream").at("sha256").as_string(), stream);
  EXPECT_EQ(m.at("source").at("harness_sha256").as_string(), harness);  // "sha256:" dropped
  EXPECT_TRUE(m.at("workload").at("warmup_requests").is_null());        // not stated: never 0
  const json::array& gpus = m.at("hardware").at("gpus").as_array();
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[1].at("uuid").as_string(), "GPU-2");
  EXPECT_EQ(gpus[1].at("driver").as_string(), "570.86");
  EXPECT_EQ(gpus[1].at("name").as_string(), "H100");
  for (const auto& row : imported) {
    const std::string id(row.at("run_id").as_string());
    const Outcome verify = dyno({"runs", "verify", id, "--runs-root", runs()});
    EXPECT_EQ(verify.exit_code, 0) << id << "\n" << verify.out << verify.err;
  }
  const fs::path out = fs::path(runs()).parent_path() / "board";
  const Outcome rep = dyno({"report", "--runs-root", runs(), "--arm", "alpha=engine=alpha", "--arm",
                            "beta=engine=beta", "--baseline", "beta", "--allow-unresolved",
                            "--report-only", "engine_commit", "--out", out.string()});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  const std::string readme = dyno::record::read_file(out / "README.md");
  for (const char* check : {"request stream 2/2", "input tokens 0/2", "model revision 2/2",
                            "driver 2/2", "GPU model 2/2", "GPU UUID 1/2 (1 differ) (reported)",
                            "harness 2/2", "engine commit 0/2 (2 differ) (reported)"}) {
    EXPECT_NE(readme.find(check), std::string::npos) << check << "\n" << readme;
  }
  // What the ledger did not state reads so in the Methodology, never dyno's own defaults.
  EXPECT_NE(readme.find("warm-up not stated by table file"), std::string::npos) << readme;
  EXPECT_NE(readme.find("concurrency 8 (open or closed loop, arrivals, seed and limits not "
                        "stated by table file)"),
            std::string::npos)
      << readme;
  EXPECT_EQ(readme.find("0 warm-up"), std::string::npos) << readme;
  EXPECT_EQ(readme.find("closed loop, concurrency"), std::string::npos) << readme;
  EXPECT_EQ(readme.find("clean tree"), std::string::npos) << readme;
  EXPECT_NE(readme.find("table (version not stated by table file), sha256 bbbbbbbbbbbb"),
            std::string::npos)
      << readme;
  const json::object bd = read_json(out / "board.json");
  for (const auto& cell : bd.at("cells").as_array()) {
    const json::object& cmp = cell.at("comparisons").as_array()[0].as_object();
    EXPECT_EQ(cmp.at("quality").at("accuracy_delta_pp").as_double(), 25.0);
  }
  // The same file again: each row marked a duplicate of its first import, as before.
  const Outcome again = dyno(args);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const json::array twice = json::parse(again.out).as_array();
  ASSERT_EQ(twice.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(twice[i].at("duplicate_of"), imported[i].at("run_id")) << again.out;
  }
}

}  // namespace
