// Selecting runs: run ids and prefixes, directories, campaign ids, queries over manifests.
#include "compare/select.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "record/record_json.h"
#include "temp_dir.h"
#include "test_records.h"

namespace dyno::compare {
namespace {

namespace fs = std::filesystem;
using testing::fixture_root;

std::vector<std::string> ids(const std::vector<fs::path>& dirs) {
  std::vector<std::string> out;
  for (const auto& d : dirs) out.push_back(d.filename().string());
  return out;
}

class Select : public ::testing::Test {
 protected:
  void SetUp() override { manifests_ = scan_manifests(fixture_root()); }
  std::vector<fs::path> resolve(const std::string& s) {
    return resolve_selector(s, fixture_root(), manifests_);
  }
  std::vector<ManifestEntry> manifests_;
};

TEST_F(Select, ScansEveryRunInIdOrder) {
  ASSERT_EQ(manifests_.size(), 4u);
  EXPECT_LT(manifests_[0].dir.filename(), manifests_[1].dir.filename());
}

TEST_F(Select, ByQuery) {
  const auto fast = resolve("label=fast");
  ASSERT_EQ(fast.size(), 2u);
  for (const auto& d : fast) EXPECT_NE(d.filename().string().find("-fast"), std::string::npos);
  EXPECT_EQ(resolve("label=slow,cell=c4").size(), 1u);
  EXPECT_EQ(resolve("profile=slow,concurrency=4").size(), 1u);  // numbers compare as numbers
  EXPECT_EQ(resolve("engine=dyno-sim,protocol=sweep").size(), 4u);
  EXPECT_EQ(resolve("engine.sim_profile.name=fast").size(), 2u);  // a dotted manifest path
  EXPECT_THROW(resolve("label=nothing"), CompareError);
  try {
    resolve("colour=blue");
    FAIL();
  } catch (const CompareError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown key 'colour'"), std::string::npos);
  }
  EXPECT_THROW(parse_query("=x"), CompareError);
}

TEST_F(Select, ByRunIdPrefixPathAndCampaign) {
  const std::string first = manifests_[0].dir.filename().string();
  EXPECT_EQ(ids(resolve(first)), std::vector<std::string>{first});
  EXPECT_EQ(ids(resolve(first.substr(0, 24))), std::vector<std::string>{first});
  EXPECT_EQ(ids(resolve(manifests_[0].dir.string())), std::vector<std::string>{first});
  // A prefix every run shares is ambiguous: the error lists candidates.
  try {
    resolve("2026");
    FAIL();
  } catch (const CompareError& e) {
    EXPECT_NE(std::string(e.what()).find("matches 4 runs"), std::string::npos) << e.what();
  }
  EXPECT_THROW(resolve("zzz"), CompareError);
  // A campaign id selects every run its campaign file lists.
  const std::string campaign = *string_at(manifests_[0].manifest, "campaign");
  const auto runs = resolve(campaign);
  EXPECT_EQ(runs.size(), 2u);
  EXPECT_TRUE(read_campaign(fixture_root(), campaign).has_value());
  EXPECT_FALSE(read_campaign(fixture_root(), "no-such-campaign").has_value());
}

TEST(Query, MatchesScalarsAsText) {
  const boost::json::object m{{"x", boost::json::object{{"a", 4.0},
                                                        {"b", "x"},
                                                        {"c", nullptr},
                                                        {"d", true},
                                                        {"e", boost::json::object{{"f", 2}}}}},
                              {"label", "l"}};
  EXPECT_TRUE(query_matches(m, parse_query("x.a=4")));
  EXPECT_TRUE(query_matches(m, parse_query("x.a=4.0")));
  EXPECT_TRUE(query_matches(m, parse_query("x.b=x,x.d=true,x.c=null,label=l")));
  EXPECT_TRUE(query_matches(m, parse_query("x.e.f=2")));
  EXPECT_FALSE(query_matches(m, parse_query("x.e=2")));  // an object is not a scalar
  EXPECT_FALSE(query_matches(m, parse_query("x.b=y")));
  EXPECT_FALSE(query_matches(m, parse_query("z.y=1")));
  EXPECT_THROW(parse_query("a=4"), CompareError);  // neither a key nor a path
}

TEST(Query, ScalarText) {
  EXPECT_EQ(scalar_text(boost::json::value(4.0)), "4");
  EXPECT_EQ(scalar_text(boost::json::value(0.5)), "0.5");
  EXPECT_EQ(scalar_text(boost::json::value(std::int64_t{12})), "12");
  EXPECT_EQ(scalar_text(boost::json::value("s")), "s");
}

TEST(RunRecordLoad, ReadsAndVerifiesAFixture) {
  const auto manifests = scan_manifests(fixture_root());
  const RunRecord r = read_run(manifests[0].dir);
  EXPECT_TRUE(r.has_summary());
  EXPECT_FALSE(r.traces.empty());
  EXPECT_TRUE(r.has_telemetry);
  EXPECT_EQ(r.sums_sha256.size(), 64u);
  EXPECT_TRUE(r.integrity_problems.empty()) << r.integrity_problems.front();
  EXPECT_FALSE(read_telemetry(r.dir).empty());
}

TEST(RunRecordLoad, ReportsTamperingAndBadFiles) {
  const dyno::testing::TempDir tmp_dir("dyno-compare-load");
  const fs::path tmp = tmp_dir.path();
  const auto manifests = scan_manifests(fixture_root());
  fs::copy(manifests[0].dir, tmp, fs::copy_options::recursive);
  {
    std::ofstream f(tmp / "requests.jsonl", std::ios::app);
    f << "\n";  // a blank line is skipped, but the bytes changed
  }
  { std::ofstream(tmp / "extra.txt") << "x"; }
  RunRecord r = read_run(tmp);
  ASSERT_EQ(r.integrity_problems.size(), 2u);
  EXPECT_NE(r.integrity_problems[0].find("extra.txt: not listed in SHA256SUMS"), std::string::npos);
  EXPECT_NE(
      r.integrity_problems[1].find("requests.jsonl: content differs from its SHA256SUMS digest"),
      std::string::npos);
  { std::ofstream(tmp / "requests.jsonl", std::ios::app) << "{not json\n"; }
  try {
    read_run(tmp);
    FAIL();
  } catch (const dyno::record::RecordReadError& e) {
    EXPECT_NE(std::string(e.what()).find("requests.jsonl:"), std::string::npos) << e.what();
  }
  fs::remove(tmp / "SHA256SUMS");
  fs::remove(tmp / "requests.jsonl");
  r = read_run(tmp);
  EXPECT_NE(r.integrity_problems.at(0).find("SHA256SUMS: missing"), std::string::npos);
  fs::remove(tmp / "manifest.json");
  EXPECT_THROW(read_run(tmp), dyno::record::RecordReadError);
  fs::remove_all(tmp);
  EXPECT_THROW(scan_manifests(tmp), dyno::record::RecordReadError);
}

TEST(RunRecordLoad, AQueryLeavesOutARecordWhoseManifestCannotBeReadAndNamesIt) {
  const dyno::testing::TempDir tmp_dir("dyno-compare-skip");
  const fs::path tmp = tmp_dir.path();
  fs::copy(fixture_root(), tmp, fs::copy_options::recursive);
  for (const char* junk : {"20261201T000000Z-000000-junk", "20261201T000001Z-000001-array"}) {
    fs::create_directories(tmp / junk);
  }
  std::ofstream(tmp / "20261201T000000Z-000000-junk" / "manifest.json") << "{ not json";
  std::ofstream(tmp / "20261201T000001Z-000001-array" / "manifest.json") << "[1, 2]";
  EXPECT_THROW(scan_manifests(tmp),
               dyno::record::RecordReadError);  // asked to read them all: an error
  std::vector<std::string> skipped;
  const auto manifests = scan_manifests(tmp, &skipped);
  EXPECT_EQ(manifests.size(), scan_manifests(fixture_root()).size());
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_NE(skipped[0].find((tmp / "20261201T000000Z-000000-junk" / "manifest.json").string()),
            std::string::npos)
      << skipped[0];
  EXPECT_NE(skipped[1].find("20261201T000001Z-000001-array"), std::string::npos) << skipped[1];
  const BoardInput in =
      load_board_input(tmp, {{"fast", {"label=fast"}}, {"slow", {"label=slow"}}}, {});
  EXPECT_EQ(in.skipped, skipped);
  EXPECT_NO_THROW(build_board(in, testing::fixed_options()));
}

/// Replaces the first `"schema_version": 1` of a file with the next version.
void bump_schema_version(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  const std::string from = "\"schema_version\": 1";
  const auto pos = text.find(from);
  ASSERT_NE(pos, std::string::npos) << file;
  text.replace(pos, from.size(),
               "\"schema_version\": " + std::to_string(record::kSchemaVersion + 1));
  std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
}

TEST(RunRecordLoad, RefusesARecordOfANewerSchemaVersionNamingTheFile) {
  const dyno::testing::TempDir tmp_dir("dyno-compare-version");
  const fs::path tmp = tmp_dir.path();
  fs::copy(fixture_root(), tmp, fs::copy_options::recursive);
  const std::string newer = ": schema_version " + std::to_string(record::kSchemaVersion + 1) +
                            " is newer than this dyno reads (" +
                            std::to_string(record::kSchemaVersion) + "); upgrade dyno";
  const auto board_error = [&tmp]() -> std::string {
    try {
      build_board(load_board_input(tmp, {{"fast", {"label=fast"}}, {"slow", {"label=slow"}}}, {}),
                  testing::fixed_options());
    } catch (const dyno::Error& e) {  // a CompareError, or the record's RecordReadError
      return e.what();
    }
    return "(no error)";
  };
  ASSERT_EQ(board_error(), "(no error)");  // the copy as it is makes a board

  const fs::path run = tmp / "20261130T004322Z-4c1237-fast";
  const fs::path saved = tmp / "saved";
  fs::copy(run, saved, fs::copy_options::recursive);
  bump_schema_version(run / "summary.json");
  EXPECT_EQ(board_error(), (run / "summary.json").string() + newer);
  fs::remove_all(run);
  fs::copy(saved, run, fs::copy_options::recursive);
  bump_schema_version(run / "manifest.json");
  // Scanning the runs root for a query leaves that record out, named, rather than failing
  // every query; selected by its directory, it is an error.
  EXPECT_EQ(board_error(), "(no error)");
  const BoardInput skipping =
      load_board_input(tmp, {{"fast", {"label=fast"}}, {"slow", {"label=slow"}}}, {});
  ASSERT_EQ(skipping.skipped.size(), 1u);
  EXPECT_EQ(skipping.skipped[0], (run / "manifest.json").string() + newer);
  EXPECT_THROW(load_board_input(tmp, {{"fast", {run.string()}}, {"slow", {"label=slow"}}}, {}),
               dyno::record::RecordReadError);
  try {
    read_telemetry(run);
    ADD_FAILURE() << "telemetry of a newer record was read";
  } catch (const dyno::record::RecordReadError& e) {
    EXPECT_EQ(std::string(e.what()), (run / "manifest.json").string() + newer);
  }
  try {
    read_run(run);
    ADD_FAILURE() << "a newer record was loaded";
  } catch (const dyno::record::RecordReadError& e) {
    EXPECT_EQ(std::string(e.what()), (run / "manifest.json").string() + newer);
  }
  fs::remove_all(run);
  fs::copy(saved, run, fs::copy_options::recursive);
  fs::remove_all(saved);
  const fs::path campaign = tmp / "campaigns" / "20261130T004322Z-edfa07-sweep.json";
  bump_schema_version(campaign);
  EXPECT_EQ(board_error(), campaign.string() + newer);
  fs::remove_all(tmp);
}

}  // namespace
}  // namespace dyno::compare
