// `dyno import vllm-bench` end to end: hand-written vLLM result files (tests/record/data/
// vllm_bench/) become records that `dyno runs verify` passes and `dyno runs list` shows with
// their source; the same file again is a duplicate; a bad file exits 2 naming the file and
// where, and leaves nothing in the store.
#include "digest/digest.h"
#include "integration/integration_fixture.h"
#include "record/run_writer.h"

using namespace dyno::integration;  // the fixture, fs, json, Child, read_json(l)

namespace {

const fs::path kData = fs::path(DYNO_SOURCE_DIR) / "tests/record/data/vllm_bench";

class ImportResults : public Integration {};

TEST_F(ImportResults, VllmResultsBecomeRecordsThatVerifyAndListWithTheirSource) {
  const std::string detailed = (kData / "detailed.json").string();
  const std::string summary = (kData / "summary_only.json").string();
  const Outcome imp = dyno({"import", "vllm-bench", detailed, summary, "--runs-root", runs(),
                            "--engine", "vllm", "--json"});
  ASSERT_EQ(imp.exit_code, 0) << imp.err;
  const json::array imported = json::parse(imp.out).as_array();
  ASSERT_EQ(imported.size(), 2u);
  EXPECT_EQ(imported[0].at("timing").as_string(), "shared_clock");
  EXPECT_EQ(imported[1].at("timing").as_string(), "summary_only");
  EXPECT_TRUE(imported[0].at("duplicate_of").is_null());
  const std::string id(imported[0].at("run_id").as_string());
  const std::string summary_id(imported[1].at("run_id").as_string());
  EXPECT_EQ(imported[0].at("sha256").as_string(),
            dyno::digest::sha256_hex(dyno::record::read_file(detailed)));

  for (const std::string& run : {id, summary_id}) {
    const Outcome verify = dyno({"runs", "verify", run, "--runs-root", runs()});
    EXPECT_EQ(verify.exit_code, 0) << run << "\n" << verify.out << verify.err;
  }
  const json::object manifest = read_json(dir_ / "runs" / id / "manifest.json");
  EXPECT_EQ(manifest.at("source").at("format").as_string(), "vllm-bench");
  EXPECT_EQ(manifest.at("engine").at("name").as_string(), "vllm");

  const Outcome list = dyno({"runs", "list", "--json", "--runs-root", runs()});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  std::map<std::string, json::object> rows;
  const json::value listed = json::parse(list.out);
  for (const auto& row : listed.as_array()) {
    rows[std::string(row.at("run_id").as_string())] = row.as_object();
  }
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[id].at("protocol").as_string(), "import");
  EXPECT_EQ(rows[id].at("model_id").as_string(), "example-org/tiny-chat");
  EXPECT_EQ(rows[id].at("requests_ok").as_int64(), 3);
  EXPECT_EQ(rows[summary_id].at("load_mode").as_string(), "imported");
  EXPECT_DOUBLE_EQ(rows[summary_id].at("ttft_p50_ms").as_double(), 38.25);

  // The same file again: a new record, marked a duplicate of the first.
  const Outcome again = dyno({"import", "vllm-bench", detailed, "--runs-root", runs()});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("duplicate of " + id), std::string::npos) << again.out;
}

TEST_F(ImportResults, ABadFileExitsTwoNamingWhereAndImportsNothing) {
  // The good file first on the line: nothing is imported when any file is bad.
  const Outcome bad = dyno({"import", "vllm-bench", (kData / "summary_only.json").string(),
                            (kData / "wrong_type_ttft.json").string(), "--runs-root", runs()});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("wrong_type_ttft.json: $.ttfts[1]: expected a number"), std::string::npos)
      << bad.err;
  EXPECT_EQ(record_count(), 0u);

  const Outcome not_json =
      dyno({"import", "vllm-bench", (kData / "not_json.json").string(), "--runs-root", runs()});
  EXPECT_EQ(not_json.exit_code, 2);
  EXPECT_NE(not_json.err.find("not_json.json:7: not JSON"), std::string::npos) << not_json.err;
  const Outcome unknown = dyno({"import", "no-such-tool", (kData / "detailed.json").string()});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.err;
  EXPECT_NE(unknown.err.find("no-such-tool"), std::string::npos) << unknown.err;
  // The wrong format for the file: a vLLM result read as SGLang's JSONL names where it fails.
  const Outcome wrong =
      dyno({"import", "sglang-bench", (kData / "detailed.json").string(), "--runs-root", runs()});
  EXPECT_EQ(wrong.exit_code, 2) << wrong.err;
  EXPECT_NE(wrong.err.find("detailed.json:"), std::string::npos) << wrong.err;
  const Outcome missing =
      dyno({"import", "vllm-bench", (dir_ / "absent.json").string(), "--runs-root", runs()});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_NE(missing.err.find("absent.json"), std::string::npos) << missing.err;
  EXPECT_EQ(record_count(), 0u);
}

}  // namespace
