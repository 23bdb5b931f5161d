// The record schemas (docs/schema/) against records: the golden files, a version-1 run
// directory and campaign file as dyno wrote them (tests/record/data/), and the same with
// planted faults; and the schema_version check every reader goes through.
#include "record/record_schema.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>

#include "json/json_text.h"
#include "record/embedded_schemas.h"
#include "record/record_json.h"
#include "record/record_reader.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::record::RecordReadError;
using dyno::record::SchemaProblem;

namespace {

const fs::path kSource = DYNO_SOURCE_DIR;
const fs::path kRunFixture = kSource / "tests/record/data/run_v1";
const fs::path kCampaignFixture = kSource / "tests/record/data/campaign_v1.json";

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

json::object read_object(const fs::path& p) { return json::parse(read_file(p)).as_object(); }

void write_object(const fs::path& p, const json::object& o) {
  write_file(p, dyno::json_text::pretty(o));
}

std::string all_text(const std::vector<SchemaProblem>& problems) {
  std::string s;
  for (const auto& p : problems) s += p.to_string() + "\n";
  return s;
}

/// True when some problem is in `file` at `pointer` and its message contains `needle`.
bool has_problem(const std::vector<SchemaProblem>& problems, const std::string& file,
                 const std::string& pointer, const std::string& needle) {
  for (const auto& p : problems) {
    if (p.file == file && p.pointer == pointer && p.message.find(needle) != std::string::npos) {
      return true;
    }
  }
  return false;
}

/// A copy of the run fixture in a temporary directory, removed at the end.
class RunCopy : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dyno::testing::make_temp_dir("dyno-schema");
    dir_ = root_ / "run";
    fs::copy(kRunFixture, dir_, fs::copy_options::recursive);
  }
  void TearDown() override { fs::remove_all(root_); }

  /// Rewrites one line of a JSONL file (1-based) through `edit`.
  void edit_line(const std::string& file, std::size_t line,
                 const std::function<void(json::object&)>& edit) {
    std::istringstream in(read_file(dir_ / file));
    std::string text, l;
    for (std::size_t n = 1; std::getline(in, l); ++n) {
      if (n == line) {
        json::object o = json::parse(l).as_object();
        edit(o);
        l = dyno::json_text::compact(o);
      }
      text += l + "\n";
    }
    write_file(dir_ / file, text);
  }

  fs::path root_;
  fs::path dir_;
};

TEST(RecordSchema, EveryFileOfDocsSchemaIsEmbeddedAsItIs) {
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(kSource / "docs/schema")) {
    const std::string name = e.path().filename().string();
    if (!name.ends_with(".schema.json")) continue;
    ++files;
    bool found = false;
    for (const auto& s : dyno::record::embedded::kSchemas) {
      if (s.file != name) continue;
      found = true;
      EXPECT_EQ(s.text, read_file(e.path())) << name << " is stale in the build: rebuild";
    }
    EXPECT_TRUE(found) << name;
    // Draft 2020-12, with an $id, a title and a description.
    const json::object doc = read_object(e.path());
    EXPECT_EQ(doc.at("$schema").as_string(), "https://json-schema.org/draft/2020-12/schema");
    EXPECT_TRUE(doc.at("$id").as_string().starts_with("urn:dyno:schema:1:")) << name;
    EXPECT_FALSE(doc.at("title").as_string().empty()) << name;
    EXPECT_FALSE(doc.at("description").as_string().empty()) << name;
    const std::string kind = name.substr(0, name.find('.'));
    EXPECT_EQ(dyno::record::record_schema(kind).id(), doc.at("$id").as_string());
  }
  EXPECT_EQ(files, std::size(dyno::record::embedded::kSchemas));
  EXPECT_GE(files, 5u);  // manifest, summary, request, telemetry, campaign
  EXPECT_THROW(dyno::record::record_schema("board"), std::invalid_argument);
}

TEST(RecordSchema, GoldenRequestLineConforms) {
  const json::value line =
      json::parse(read_file(kSource / "tests/record/golden/request_line.json"));
  const auto problems = dyno::record::record_schema("request").validate(line);
  EXPECT_TRUE(problems.empty()) << all_text(problems);
}

TEST(RecordSchema, GoldenSummaryConformsOnceTheSessionsKeysAreAdded) {
  // The golden file holds summary_to_json's part; the session adds identity, the client's
  // connection count, energy and server (src/engine_session/run_cell.cpp).
  json::object summary{{"schema_version", dyno::record::kSchemaVersion},
                       {"run_id", "20260101T000000Z-abcdef"},
                       {"status", "partial"}};
  for (const auto& kv : read_object(kSource / "tests/record/golden/summary.json")) {
    summary[kv.key()] = kv.value();
  }
  summary["client"].as_object()["connections_opened"] = 2;
  summary["energy"] = json::object{{"energy_j", nullptr}, {"reason", "telemetry off"}};
  summary["server"] = json::object{{"source", nullptr}, {"reason", "no /metrics"}};
  const auto& schema = dyno::record::record_schema("summary");
  auto problems = schema.validate(summary);
  EXPECT_TRUE(problems.empty()) << all_text(problems);
  // Without what the session adds, the summary is incomplete.
  summary.erase("energy");
  problems = schema.validate(summary);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].message, "missing required key `energy`");
}

TEST(RecordSchema, AVersion1RunDirectoryConforms) {
  const auto problems = dyno::record::validate_run_dir(kRunFixture);
  EXPECT_TRUE(problems.empty()) << all_text(problems);
}

TEST(RecordSchema, AVersion1CampaignFileConforms) {
  const auto problems = dyno::record::validate_campaign_file(kCampaignFixture);
  EXPECT_TRUE(problems.empty()) << all_text(problems);
}

TEST_F(RunCopy, APlantedTypeErrorInTheManifestIsFound) {
  json::object m = read_object(dir_ / "manifest.json");
  m["load"].as_object()["concurrency"] = "1";
  write_object(dir_ / "manifest.json", m);
  const auto problems = dyno::record::validate_run_dir(dir_);
  EXPECT_TRUE(has_problem(problems, "manifest.json", "/load/concurrency",
                          "expected integer or null, found string \"1\""))
      << all_text(problems);
}

TEST_F(RunCopy, AnUnknownKeyInTheSummaryIsFound) {
  json::object s = read_object(dir_ / "summary.json");
  s["latency_ms"].as_object()["ttft"].as_object()["p42"] = 1.0;
  write_object(dir_ / "summary.json", s);
  const auto problems = dyno::record::validate_run_dir(dir_);
  ASSERT_EQ(problems.size(), 1u) << all_text(problems);
  EXPECT_EQ(problems[0].to_string(),
            "summary.json: /latency_ms/ttft/p42: unexpected key `p42` (the schema does not "
            "allow it)");
}

TEST_F(RunCopy, ANullWhereTheWriterNeverWritesOneIsFound) {
  json::object s = read_object(dir_ / "summary.json");
  s["requests"].as_object()["total"] = nullptr;
  write_object(dir_ / "summary.json", s);
  // Only an imported record (summary `import`) may leave a count its file does not give null.
  EXPECT_TRUE(has_problem(dyno::record::validate_run_dir(dir_), "summary.json", "",
                          "/requests/total: expected integer, found null"))
      << all_text(dyno::record::validate_run_dir(dir_));
  s["requests"].as_object()["total"] = 12;
  s["latency_ms"].as_object()["ttft"].as_object()["count"] = nullptr;
  write_object(dir_ / "summary.json", s);
  EXPECT_TRUE(has_problem(dyno::record::validate_run_dir(dir_), "summary.json", "",
                          "/latency_ms/ttft/count: expected integer, found null"))
      << all_text(dyno::record::validate_run_dir(dir_));
}

TEST_F(RunCopy, RequestLinesAreCheckedOneByOneAndNamedByLine) {
  edit_line("requests.jsonl", 2, [](json::object& o) { o["status"] = "done"; });
  edit_line("requests.jsonl", 4, [](json::object& o) { o["sent_ns"] = 1.5; });
  const auto problems = dyno::record::validate_run_dir(dir_);
  EXPECT_TRUE(has_problem(problems, "requests.jsonl:2", "/status", "\"done\""))
      << all_text(problems);
  EXPECT_TRUE(has_problem(problems, "requests.jsonl:4", "/sent_ns", "expected integer or null"))
      << all_text(problems);
}

TEST_F(RunCopy, ACompletedRequestWithAnErrorIsFound) {
  edit_line("requests.jsonl", 1, [](json::object& o) {
    o["error"] = json::object{{"category", "timeout"}, {"message", "late"}};
  });
  EXPECT_TRUE(has_problem(dyno::record::validate_run_dir(dir_), "requests.jsonl:1", "",
                          "matches none of the allowed forms"));
}

TEST_F(RunCopy, TelemetryLinesAreChecked) {
  edit_line("telemetry.jsonl", 1, [](json::object& o) { o["fan_rpm"] = 1200; });
  EXPECT_TRUE(has_problem(dyno::record::validate_run_dir(dir_), "telemetry.jsonl:1", "/fan_rpm",
                          "unexpected key"));
}

TEST_F(RunCopy, ATornOrDamagedJsonlFileIsFound) {
  std::ofstream(dir_ / "requests.jsonl", std::ios::app) << "{\"index\":4,\"requ";
  const auto problems = dyno::record::validate_run_dir(dir_);
  EXPECT_TRUE(has_problem(problems, "requests.jsonl", "", "not terminated by a newline"))
      << all_text(problems);
  EXPECT_TRUE(has_problem(problems, "requests.jsonl:5", "", "not valid JSON"))
      << all_text(problems);
}

TEST_F(RunCopy, AFutureSchemaVersionIsOneClearProblem) {
  json::object m = read_object(dir_ / "manifest.json");
  m["schema_version"] = 2;
  m["a_key_of_version_2"] = true;
  write_object(dir_ / "manifest.json", m);
  const auto problems = dyno::record::validate_run_dir(dir_);
  ASSERT_EQ(problems.size(), 1u) << all_text(problems);
  EXPECT_EQ(problems[0].to_string(),
            "manifest.json: (root): schema_version 2 is newer than this dyno reads (1); upgrade "
            "dyno");
}

TEST_F(RunCopy, AMissingSchemaVersionIsOneClearProblem) {
  json::object m = read_object(dir_ / "manifest.json");
  m.erase("schema_version");
  write_object(dir_ / "manifest.json", m);
  const auto problems = dyno::record::validate_run_dir(dir_);
  ASSERT_EQ(problems.size(), 1u) << all_text(problems);
  EXPECT_NE(problems[0].message.find("no schema_version"), std::string::npos);
}

TEST_F(RunCopy, AnEndedRunNeedsItsSummaryAKilledOneDoesNot) {
  fs::remove(dir_ / "summary.json");
  auto problems = dyno::record::validate_run_dir(dir_);
  ASSERT_EQ(problems.size(), 1u) << all_text(problems);
  EXPECT_EQ(problems[0].to_string(),
            "summary.json: (root): missing (the manifest says the run ended)");
  // As a run killed outright leaves it: the first manifest, no summary.
  json::object m = read_object(dir_ / "manifest.json");
  m["status"] = "running";
  m["ended_at"] = nullptr;
  m.erase("clock");
  m.erase("telemetry");
  write_object(dir_ / "manifest.json", m);
  problems = dyno::record::validate_run_dir(dir_);
  EXPECT_TRUE(problems.empty()) << all_text(problems);
  // A running manifest with an end time is not one the writer produces.
  m["ended_at"] = "2026-01-01T00:00:00.000Z";
  write_object(dir_ / "manifest.json", m);
  EXPECT_TRUE(has_problem(dyno::record::validate_run_dir(dir_), "manifest.json", "",
                          "matches none of the allowed forms"));
}

TEST_F(RunCopy, MissingFilesAreNamed) {
  fs::remove(dir_ / "requests.jsonl");
  fs::remove(dir_ / "manifest.json");
  const auto problems = dyno::record::validate_run_dir(dir_);
  EXPECT_TRUE(has_problem(problems, "manifest.json", "", "missing")) << all_text(problems);
  EXPECT_TRUE(has_problem(problems, "requests.jsonl", "", "missing")) << all_text(problems);
  EXPECT_FALSE(dyno::record::validate_run_dir(root_ / "nowhere").empty());
}

TEST_F(RunCopy, AFutureCampaignFileIsOneClearProblem) {
  json::object c = read_object(kCampaignFixture);
  c["schema_version"] = 3;
  write_object(root_ / "c.json", c);
  const auto problems = dyno::record::validate_campaign_file(root_ / "c.json");
  ASSERT_EQ(problems.size(), 1u) << all_text(problems);
  EXPECT_EQ(problems[0].to_string(),
            "c.json: (root): schema_version 3 is newer than this dyno reads (1); upgrade dyno");
  c["schema_version"] = 1;
  c["cells"].as_array()[0].as_object()["selected_run"] = 7;
  write_object(root_ / "c.json", c);
  EXPECT_TRUE(has_problem(dyno::record::validate_campaign_file(root_ / "c.json"), "c.json",
                          "/cells/0/selected_run", "matches none"));
}

// -- The schema_version check of every reader ---------------------------------------------------

std::string version_error(const std::string& doc) {
  try {
    dyno::record::check_schema_version(json::parse(doc), "x/manifest.json");
  } catch (const RecordReadError& e) {
    return e.what();
  }
  return "";
}

TEST(SchemaVersion, ThisVersionIsRead) {
  EXPECT_EQ(version_error(R"({"schema_version":1})"), "");
  EXPECT_EQ(version_error(R"({"schema_version":1.0})"), "");
}

TEST(SchemaVersion, ANewerVersionSaysUpgrade) {
  EXPECT_EQ(version_error(R"({"schema_version":2})"),
            "x/manifest.json: schema_version 2 is newer than this dyno reads (1); upgrade dyno");
  EXPECT_NE(version_error(R"({"schema_version":18446744073709551615})").find("upgrade dyno"),
            std::string::npos);
}

TEST(SchemaVersion, MissingOrMalformedVersionsNameTheFile) {
  EXPECT_EQ(version_error(R"({"run_id":"x"})"),
            "x/manifest.json: no schema_version: not a dyno record, or a damaged one");
  EXPECT_EQ(version_error(R"({"schema_version":"1"})"),
            "x/manifest.json: schema_version must be an integer, found \"1\"");
  EXPECT_EQ(version_error(R"({"schema_version":1.5})"),
            "x/manifest.json: schema_version must be an integer, found 1.5");
  EXPECT_EQ(version_error(R"({"schema_version":0})"),
            "x/manifest.json: schema_version 0 is not a dyno schema version (the first is 1)");
  EXPECT_EQ(version_error("[1]"), "x/manifest.json: not a dyno record (not a JSON object)");
}

TEST_F(RunCopy, ReadersGoThroughTheVersionCheck) {
  const auto traces = dyno::record::read_requests(dir_);
  ASSERT_EQ(traces.size(), 4u);
  EXPECT_EQ(traces[0].phase, "warmup");
  EXPECT_EQ(traces[2].error_category, "http_status");
  EXPECT_EQ(dyno::record::read_record_json(dir_ / "summary.json").at("run_id"),
            dyno::record::read_record_json(dir_ / "manifest.json").at("run_id"));

  json::object m = read_object(dir_ / "manifest.json");
  m["schema_version"] = 2;
  write_object(dir_ / "manifest.json", m);
  try {
    dyno::record::read_requests(dir_);
    ADD_FAILURE() << "read a record of a newer schema";
  } catch (const RecordReadError& e) {
    EXPECT_EQ(std::string(e.what()),
              (dir_ / "manifest.json").string() +
                  ": schema_version 2 is newer than this dyno reads (1); upgrade dyno");
  }
  EXPECT_THROW(dyno::record::read_record_json(dir_ / "manifest.json"), RecordReadError);
  EXPECT_THROW(dyno::record::check_run_dir_version(root_), RecordReadError);  // no manifest
  write_file(root_ / "broken.json", "{\"schema_version\": ");
  try {
    dyno::record::read_record_json(root_ / "broken.json");
    ADD_FAILURE() << "read broken JSON";
  } catch (const RecordReadError& e) {
    EXPECT_NE(std::string(e.what()).find("broken.json: not valid JSON"), std::string::npos);
  }
}

TEST_F(RunCopy, AMalformedRequestLineNamesItsLine) {
  edit_line("requests.jsonl", 3, [](json::object& o) { o["status"] = "weird"; });
  try {
    dyno::record::read_requests(dir_);
    ADD_FAILURE() << "read a malformed line";
  } catch (const RecordReadError& e) {
    EXPECT_NE(std::string(e.what()).find("requests.jsonl:3: key `status`"), std::string::npos)
        << e.what();
  }
}

}  // namespace
