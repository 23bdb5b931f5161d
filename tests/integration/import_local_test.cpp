// `dyno import llama-bench` and `dyno import guidellm` end to end: hand-written files
// (tests/record/data/llama_bench/, guidellm/) become one record per test or benchmark, each
// of which `dyno runs verify` passes; a report in a layout dyno does not read exits 2 and
// leaves nothing in the store.
#include "integration/integration_fixture.h"

using namespace dyno::integration;  // the fixture, fs, json, Child, read_json(l)

namespace {

const fs::path kData = fs::path(DYNO_SOURCE_DIR) / "tests/record/data";

class ImportLocal : public Integration {};

TEST_F(ImportLocal, LlamaBenchAndGuideLlmFilesBecomeRecordsThatVerify) {
  const Outcome llama =
      dyno({"import", "llama-bench", (kData / "llama_bench/tests.json").string(),
            (kData / "llama_bench/old.csv").string(), "--runs-root", runs(), "--json"});
  ASSERT_EQ(llama.exit_code, 0) << llama.err;
  const Outcome guide = dyno({"import", "guidellm", (kData / "guidellm/report.json").string(),
                              "--runs-root", runs(), "--json"});
  ASSERT_EQ(guide.exit_code, 0) << guide.err;
  std::vector<std::string> ids;
  for (const Outcome* o : {&llama, &guide}) {
    const json::value rows = json::parse(o->out);
    for (const auto& row : rows.as_array()) {
      ids.emplace_back(row.at("run_id").as_string());
    }
  }
  ASSERT_EQ(ids.size(), 3u + 2u + 2u);
  for (const std::string& id : ids) {
    const Outcome verify = dyno({"runs", "verify", id, "--runs-root", runs()});
    EXPECT_EQ(verify.exit_code, 0) << id << "\n" << verify.out << verify.err;
  }
  const json::object m = read_json(dir_ / "runs" / ids[0] / "manifest.json");
  EXPECT_EQ(m.at("workload").at("api").as_string(), "in_process");
  EXPECT_EQ(m.at("workload").at("protocol").at("cell").as_string(), "pp512");
  EXPECT_EQ(m.at("engine").at("source").at("commit").as_string(), "3a5ba33f");
  const json::object s = read_json(dir_ / "runs" / ids[0] / "summary.json");
  EXPECT_DOUBLE_EQ(s.at("server").at("timings").at("prefill_rate").at("p50").to_number<double>(),
                   2560.0);
  const json::object g = read_json(dir_ / "runs" / ids[5] / "manifest.json");
  EXPECT_EQ(g.at("source").at("part").as_string(), "$.benchmarks[0]");
}

TEST_F(ImportLocal, ANewerGuideLlmLayoutExits2AndImportsNothing) {
  const Outcome o = dyno({"import", "guidellm", (kData / "guidellm/report.json").string(),
                          (kData / "guidellm/newer.json").string(), "--runs-root", runs()});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("newer.json: $.metadata"), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(dir_ / "runs") && !fs::is_empty(dir_ / "runs"));
}

}  // namespace
