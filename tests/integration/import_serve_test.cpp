// `dyno import sglang-bench` and `dyno import aiperf` end to end: a two-line SGLang JSONL and
// AIPerf's exports (tests/record/data/) become records that `dyno runs verify` passes and
// `dyno runs list` shows with their source; a bad line exits 2 naming FILE:LINE and imports
// nothing.
#include "integration/integration_fixture.h"

using namespace dyno::integration;  // the fixture, fs, json, Child, read_json(l)

namespace {

const fs::path kData = fs::path(DYNO_SOURCE_DIR) / "tests/record/data";

class ImportServe : public Integration {
 protected:
  std::map<std::string, json::object> listed() {
    const Outcome list = dyno({"runs", "list", "--json", "--runs-root", runs()});
    EXPECT_EQ(list.exit_code, 0) << list.err;
    std::map<std::string, json::object> rows;
    const json::value all = json::parse(list.out);
    for (const auto& row : all.as_array()) {
      rows[std::string(row.at("run_id").as_string())] = row.as_object();
    }
    return rows;
  }
};

TEST_F(ImportServe, SglangAndAiperfFilesBecomeRecordsThatVerifyAndList) {
  const std::string sglang = (kData / "sglang_bench/summary_only.jsonl").string();
  const Outcome a = dyno({"import", "sglang-bench", sglang, "--runs-root", runs(), "--model",
                          "example-org/tiny-base", "--engine", "sglang", "--json"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const json::array lines = json::parse(a.out).as_array();
  ASSERT_EQ(lines.size(), 2u);  // a record per line of the file
  EXPECT_EQ(lines[0].at("part").as_string(), "line 1");
  EXPECT_EQ(lines[1].at("part").as_string(), "line 3");

  const Outcome b = dyno({"import", "aiperf", (kData / "aiperf/profile_export.jsonl").string(),
                          (kData / "aiperf/profile_export_aiperf.json").string(), "--runs-root",
                          runs(), "--model", "example-org/tiny-chat", "--api", "chat", "--json"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const json::array aiperf = json::parse(b.out).as_array();
  ASSERT_EQ(aiperf.size(), 2u);
  EXPECT_EQ(aiperf[0].at("timing").as_string(), "shared_clock");
  EXPECT_EQ(aiperf[1].at("timing").as_string(), "summary_only");

  std::vector<std::string> ids;
  for (const json::array* out : {&lines, &aiperf}) {
    for (const auto& o : *out) ids.emplace_back(o.at("run_id").as_string());
  }
  for (const std::string& id : ids) {
    const Outcome verify = dyno({"runs", "verify", id, "--runs-root", runs()});
    EXPECT_EQ(verify.exit_code, 0) << id << "\n" << verify.out << verify.err;
  }
  const json::object m = read_json(dir_ / "runs" / ids[0] / "manifest.json");
  EXPECT_EQ(m.at("source").at("format").as_string(), "sglang-bench");
  EXPECT_EQ(m.at("source").at("part").as_string(), "line 1");
  EXPECT_EQ(
      read_json(dir_ / "runs" / ids[2] / "manifest.json").at("source").at("format").as_string(),
      "aiperf");

  auto rows = listed();
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[ids[0]].at("protocol").as_string(), "import");
  EXPECT_EQ(rows[ids[0]].at("model_id").as_string(), "example-org/tiny-base");
  EXPECT_DOUBLE_EQ(rows[ids[0]].at("ttft_p50_ms").as_double(), 110.0);
  EXPECT_EQ(rows[ids[2]].at("requests_ok").as_int64(), 2);
  EXPECT_EQ(rows[ids[3]].at("load_mode").as_string(), "imported");
}

TEST_F(ImportServe, ABadLineExitsTwoNamingFileAndLineAndImportsNothing) {
  const Outcome bad =
      dyno({"import", "sglang-bench", (kData / "sglang_bench/not_json.jsonl").string(),
            "--runs-root", runs(), "--model", "m"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("not_json.jsonl:3: not JSON"), std::string::npos) << bad.err;
  const Outcome no_model =
      dyno({"import", "aiperf", (kData / "aiperf/profile_export.jsonl").string(), "--runs-root",
            runs(), "--api", "chat"});
  EXPECT_EQ(no_model.exit_code, 2);
  EXPECT_NE(no_model.err.find("--model"), std::string::npos) << no_model.err;
  const Outcome no_api = dyno({"import", "aiperf", (kData / "aiperf/profile_export.jsonl").string(),
                               "--runs-root", runs(), "--model", "m"});
  EXPECT_EQ(no_api.exit_code, 2);
  EXPECT_NE(no_api.err.find("profile_export.jsonl: the file does not say whether the chat or the "
                            "completions endpoint"),
            std::string::npos)
      << no_api.err;
  EXPECT_FALSE(fs::exists(dir_ / "runs") && !fs::is_empty(dir_ / "runs"));
}

}  // namespace
