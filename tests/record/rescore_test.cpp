// dyno rescore's logic (record/rescore.h): the kept outputs of a real record (the v1 fixture,
// its scored request given an expected answer) judged again into a derived record that
// verifies, keeps every figure but quality, never touches its source and is no duplicate of it.
#include "record/rescore.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "digest/digest.h"
#include "record/manifest.h"
#include "record/record_schema.h"
#include "record/run_verify.h"
#include "record/run_writer.h"
#include "store/run_index.h"
#include "temp_dir.h"
#include "workload/scorer_spec.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::record::effective_expectation;
using dyno::record::rescore_requests;
using dyno::record::rescore_run;
using dyno::record::RescoreError;
using dyno::record::RescoreOptions;
using dyno::record::RescoreOutcome;
using dyno::workload::Expectation;

namespace {

const fs::path kFixture = fs::path(DYNO_SOURCE_DIR) / "tests/record/data/run_v1";
constexpr const char* kId = "20261130T003554Z-7157eb-fixture";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json::object parse(const std::string& text) { return json::parse(text).as_object(); }

std::vector<json::object> lines_of(const fs::path& file) {
  std::vector<json::object> out;
  std::istringstream in(slurp(file));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(parse(line));
  }
  return out;
}

json::object* line_of(std::vector<json::object>& lines, const std::string& request_id) {
  for (auto& l : lines) {
    if (l.at("request_id").as_string() == request_id) return &l;
  }
  return nullptr;
}

/// The fixture's scored request ("scored", relaxed_numeric, output " bird run turn") as this
/// dyno writes it: with its expected answer. "too-long" (failed) becomes scored too.
void with_expectations(std::vector<json::object>& lines) {
  line_of(lines, "scored")->at("score").as_object()["expected"] = "Bird Run Turn!";
  (*line_of(lines, "too-long"))["score"] =
      json::object{{"correct", false}, {"extracted", ""}, {"scorer", "exact"}, {"expected", "4"}};
}

class Rescore : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = dyno::testing::make_temp_dir("dyno-rescore"); }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  /// The fixture copied under runs/, its lines changed by `edit`, SHA256SUMS signed again.
  fs::path source(const std::function<void(std::vector<json::object>&)>& edit = with_expectations,
                  const std::function<void(json::object&)>& edit_manifest = {}) {
    const fs::path dir = dir_ / "runs" / kId;
    fs::create_directories(dir.parent_path());
    fs::copy(kFixture, dir, fs::copy_options::recursive);
    std::vector<json::object> lines = lines_of(dir / "requests.jsonl");
    if (edit) edit(lines);
    std::string text;
    for (const auto& l : lines) text += json::serialize(l) + "\n";
    dyno::record::write_file_atomic(dir / "requests.jsonl", text);
    if (edit_manifest) {
      json::object m = parse(slurp(dir / "manifest.json"));
      edit_manifest(m);
      dyno::record::write_file_atomic(dir / "manifest.json", json::serialize(m));
    }
    dyno::record::write_sha256sums(dir);
    return dir;
  }

  RescoreOutcome rescore(const fs::path& src, const std::optional<std::string>& scorer,
                         const std::optional<std::string>& label = std::nullopt) {
    RescoreOptions o;
    o.source = src;
    o.runs_root = dir_ / "runs";
    o.label = label;
    if (scorer) o.scorer = dyno::workload::parse_scorer_spec(*scorer, "--scorer");
    o.harness =
        dyno::record::harness_from_json(json::object{{"name", "dyno"},
                                                     {"version", "9.9.9"},
                                                     {"git_commit", "unknown"},
                                                     {"git_dirty", false},
                                                     {"build_type", "Debug"},
                                                     {"executable_sha256", std::string(64, '9')}});
    return rescore_run(o);
  }

  /// Every file of a directory with its bytes.
  static std::map<std::string, std::string> files(const fs::path& dir) {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (e.is_regular_file()) out[fs::relative(e.path(), dir).string()] = slurp(e.path());
    }
    return out;
  }

  template <typename F>
  static std::string error_of(F&& f) {
    try {
      f();
    } catch (const dyno::Error& e) {
      EXPECT_EQ(e.kind(), dyno::ErrorKind::input) << e.what();  // exit 2
      return e.what();
    }
    ADD_FAILURE() << "no error";
    return {};
  }

  fs::path dir_;
};

}  // namespace

TEST_F(Rescore, AScorerGivenJudgesEveryScoredRequestIntoAVerifiedDerivedRecord) {
  const fs::path src = source();
  const auto before = files(src);
  const RescoreOutcome r = rescore(src, "normalized");

  // The source is untouched, byte for byte.
  EXPECT_EQ(files(src), before);
  EXPECT_EQ(r.source_run_id, kId);
  EXPECT_EQ(r.dir, dir_ / "runs" / r.run_id);
  EXPECT_NE(r.run_id, kId);
  EXPECT_TRUE(r.run_id.ends_with("-fixture-rescore")) << r.run_id;
  EXPECT_EQ(r.scored, 2u);
  EXPECT_EQ(r.changed, 1u);  // "scored" is now correct; the failed request stays incorrect
  EXPECT_EQ(r.before, parse(slurp(src / "summary.json")).at("quality").as_object());
  EXPECT_EQ(r.after, (json::object{{"scored", 2}, {"correct", 1}, {"accuracy", 0.5}}));

  // It verifies, schema included, and conforms like every record.
  const auto report = dyno::record::verify_run_dir(r.dir);
  EXPECT_TRUE(report.ok()) << (report.ok() ? "" : report.problems.front().message);
  EXPECT_TRUE(dyno::record::validate_run_dir(r.dir).empty());

  // requests.jsonl: the new score on scored lines, every other line and key as it was.
  std::vector<json::object> old_lines = lines_of(src / "requests.jsonl");
  std::vector<json::object> new_lines = lines_of(r.dir / "requests.jsonl");
  ASSERT_EQ(new_lines.size(), old_lines.size());
  EXPECT_EQ(line_of(new_lines, "scored")->at("score"),
            (json::object{{"correct", true},
                          {"extracted", "bird run turn"},
                          {"scorer", "normalized"},
                          {"expected", "Bird Run Turn!"}}));
  EXPECT_EQ(
      line_of(new_lines, "too-long")->at("score"),
      (json::object{
          {"correct", false}, {"extracted", ""}, {"scorer", "normalized"}, {"expected", "4"}}));
  for (std::size_t i = 0; i < new_lines.size(); ++i) {
    new_lines[i].erase("score");
    old_lines[i].erase("score");
    EXPECT_EQ(new_lines[i], old_lines[i]) << "line " << i + 1;
  }

  // summary.json: quality recomputed, every other figure the source's.
  json::object old_summary = parse(slurp(src / "summary.json"));
  json::object new_summary = parse(slurp(r.dir / "summary.json"));
  EXPECT_EQ(new_summary.at("run_id").as_string(), r.run_id);
  EXPECT_EQ(new_summary.at("quality").as_object(), r.after);
  for (const char* key : {"run_id", "quality"}) {
    old_summary.erase(key);
    new_summary.erase(key);
  }
  EXPECT_EQ(new_summary, old_summary);

  // manifest.json: the source's identity, a new id and label, and where it came from.
  json::object old_manifest = parse(slurp(src / "manifest.json"));
  json::object new_manifest = parse(slurp(r.dir / "manifest.json"));
  EXPECT_EQ(new_manifest.at("run_id").as_string(), r.run_id);
  EXPECT_EQ(new_manifest.at("label").as_string(), "fixture-rescore");
  const json::object& d = new_manifest.at("derived_from").as_object();
  EXPECT_EQ(d, r.derived_from);
  EXPECT_EQ(d.at("kind").as_string(), "rescore");
  EXPECT_EQ(d.at("run_id").as_string(), kId);
  EXPECT_EQ(d.at("summary_sha256").as_string(),
            dyno::digest::sha256_hex_file(src / "summary.json"));
  EXPECT_EQ(d.at("sha256sums_sha256").as_string(),
            dyno::digest::sha256_hex_file(src / "SHA256SUMS"));
  EXPECT_EQ(d.at("scorer").as_string(), "normalized");
  EXPECT_EQ(d.at("harness").at("version").as_string(), "9.9.9");
  // The manifest is read and written typed: a record of an older dyno comes out in this
  // dyno's shape (the fixture predates request_stream.cycle, which reads as false).
  EXPECT_FALSE(new_manifest.at("workload").at("request_stream").at("cycle").as_bool());
  new_manifest["workload"].as_object()["request_stream"].as_object().erase("cycle");
  for (const char* key :
       {"harness", "engine", "model", "hardware", "workload", "load", "slo", "status", "started_at",
        "ended_at", "campaign", "warnings", "evidence", "telemetry", "clock", "scrubbed_fields"}) {
    EXPECT_EQ(new_manifest.at(key), old_manifest.at(key)) << key;
  }
  // Telemetry and evidence are the source's bytes.
  for (const char* f :
       {"telemetry.jsonl", "evidence/metrics_before.txt", "evidence/metrics_after.txt"}) {
    EXPECT_EQ(slurp(r.dir / f), slurp(src / f)) << f;
  }
}

TEST_F(Rescore, WithoutAScorerTheRequestsOwnScorersJudgeAsThisDynoDoes) {
  // The record says "incorrect" for "scored" (relaxed_numeric); judged now, the answer is no
  // number, so relaxed_numeric compares normalized forms: "bird run turn" is right.
  const RescoreOutcome r = rescore(source(), std::nullopt, "fixed-parser");
  EXPECT_EQ(r.changed, 1u);
  EXPECT_TRUE(r.derived_from.at("scorer").is_null());
  EXPECT_TRUE(r.run_id.ends_with("-fixed-parser"));
  std::vector<json::object> lines = lines_of(r.dir / "requests.jsonl");
  EXPECT_EQ(line_of(lines, "scored")->at("score").at("scorer").as_string(), "relaxed_numeric");
  EXPECT_TRUE(line_of(lines, "scored")->at("score").at("correct").as_bool());
  EXPECT_EQ(line_of(lines, "too-long")->at("score").at("scorer").as_string(), "exact");
  EXPECT_TRUE(dyno::record::verify_run_dir(r.dir).ok());
}

TEST_F(Rescore, ARescoredRecordCanBeRescoredAgain) {
  const RescoreOutcome first = rescore(source(), "exact");
  EXPECT_EQ(first.after.at("correct").to_number<int>(), 0);
  const RescoreOutcome second = rescore(first.dir, "normalized", "again");
  EXPECT_EQ(second.source_run_id, first.run_id);
  EXPECT_EQ(second.before, first.after);
  EXPECT_EQ(second.after.at("correct").to_number<int>(), 1);
  EXPECT_TRUE(dyno::record::verify_run_dir(second.dir).ok());
}

TEST_F(Rescore, ARegexOrChoiceScorerTakesItsPatternOrChoicesFromTheFlagOrTheRequest) {
  const RescoreOutcome r = rescore(source(), R"({"kind":"regex","pattern":"(run) turn"})");
  std::vector<json::object> lines = lines_of(r.dir / "requests.jsonl");
  const json::object& score = line_of(lines, "scored")->at("score").as_object();
  EXPECT_EQ(score.at("extracted").as_string(), "run");
  EXPECT_FALSE(score.at("correct").as_bool());
  EXPECT_EQ(score.at("pattern").as_string(), "(run) turn");
  EXPECT_EQ(r.derived_from.at("scorer"),
            (json::object{{"kind", "regex"}, {"pattern", "(run) turn"}}));

  // By name, the request's own pattern; a request without one is named in the error.
  const Expectation own{"run", "regex", "(r[a-z]+)", {}};
  const Expectation by_name = dyno::workload::parse_scorer_spec("regex", "--scorer");
  EXPECT_EQ(effective_expectation(own, by_name, "here").pattern, "(r[a-z]+)");
  const Expectation plain{"run", "exact", "", {}};
  EXPECT_NE(error_of([&] {
              effective_expectation(plain, by_name, "line 3 (request q)");
            }).find("line 3 (request q): --scorer regex needs a pattern"),
            std::string::npos);
  const Expectation choice_by_name = dyno::workload::parse_scorer_spec("choice", "--scorer");
  const Expectation mc{"B", "choice", "", {"A", "B"}};
  EXPECT_EQ(effective_expectation(mc, choice_by_name, "here").choices,
            (std::vector<std::string>{"A", "B"}));
  EXPECT_NE(error_of([&] {
              effective_expectation(plain, choice_by_name, "here");
            }).find("--scorer choice needs choices"),
            std::string::npos);
  // Another scorer drops the request's pattern and choices; an answer that is no choice fails.
  const Expectation normalized = dyno::workload::parse_scorer_spec("normalized", "--scorer");
  EXPECT_EQ(effective_expectation(mc, normalized, "here"),
            (Expectation{"B", "normalized", "", {}}));
  const Expectation abcd =
      dyno::workload::parse_scorer_spec(R"({"kind":"choice","choices":["A","C"]})", "--scorer");
  EXPECT_NE(error_of([&] {
              effective_expectation(mc, abcd, "here");
            }).find("the expected answer \"B\" is not one of the choices"),
            std::string::npos);
  // Without a scorer given, the request's own expectation as it is.
  EXPECT_EQ(effective_expectation(mc, std::nullopt, "here"), mc);
}

TEST_F(Rescore, ARecordWithoutKeptOutputsIsRefusedNamingTheFlag) {
  const fs::path src = source([](std::vector<json::object>& lines) {
    with_expectations(lines);
    for (auto& l : lines) l.erase("output_text");
  });
  const std::string e = error_of([&] { rescore(src, "normalized"); });
  EXPECT_NE(e.find("request scored"), std::string::npos) << e;
  EXPECT_NE(e.find("output text was not kept"), std::string::npos) << e;
  EXPECT_NE(e.find("--keep-outputs"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(dir_ / "runs" / "index.sqlite"));
  EXPECT_EQ(dyno::store::run_directory_names(dir_ / "runs").size(), 1u);  // nothing written
}

TEST_F(Rescore, ARecordWithoutExpectedAnswersIsRefused) {
  const fs::path src = source(nullptr);  // the fixture as an older dyno wrote it
  const std::string e = error_of([&] { rescore(src, "normalized"); });
  EXPECT_NE(e.find("has no `expected` answer"), std::string::npos) << e;
}

TEST_F(Rescore, ARecordWithoutScoredRequestsIsRefused) {
  const fs::path src = source([](std::vector<json::object>& lines) {
    for (auto& l : lines) l.erase("score");
  });
  const std::string e = error_of([&] { rescore(src, std::nullopt); });
  EXPECT_NE(e.find("has no scored request"), std::string::npos) << e;
}

TEST_F(Rescore, ARunningRecordIsRefused) {
  const fs::path src = source(with_expectations, [](json::object& m) { m["status"] = "running"; });
  const std::string e = error_of([&] { rescore(src, "exact"); });
  EXPECT_NE(e.find("is still running"), std::string::npos) << e;
}

TEST_F(Rescore, ARecordThatFailsVerificationIsRefused) {
  const fs::path src = source();
  std::string text = slurp(src / "requests.jsonl");
  text.replace(text.find("bird run turn"), 4, "fish");  // changed after it was signed
  dyno::record::write_file_atomic(src / "requests.jsonl", text);
  const std::string e = error_of([&] { rescore(src, "exact"); });
  EXPECT_NE(e.find("fails `dyno runs verify`"), std::string::npos) << e;
  EXPECT_NE(e.find("requests.jsonl"), std::string::npos) << e;
}

TEST_F(Rescore, ADerivedRecordIsNoDuplicateOfItsSourceButTwoAlikeAreDuplicates) {
  const fs::path src = source();
  const RescoreOutcome a = rescore(src, "normalized");
  const RescoreOutcome b = rescore(src, "normalized");
  const RescoreOutcome c = rescore(src, "exact");
  const auto key = [](const fs::path& dir) {
    return dyno::store::duplicate_key(parse(slurp(dir / "manifest.json")));
  };
  EXPECT_NE(key(a.dir), key(src));
  EXPECT_EQ(key(a.dir), key(b.dir));  // the same measurement judged the same way again
  EXPECT_NE(key(a.dir), key(c.dir));

  std::ostringstream warnings;
  dyno::store::RunIndex index(dir_ / "runs", warnings);
  index.sync();
  EXPECT_FALSE(index.find(kId)->duplicate_of.has_value());
  EXPECT_FALSE(index.find(c.run_id)->duplicate_of.has_value());
  // a and b share the source's started_at, and may share a second of their ids: the later of
  // the two by run id is the duplicate.
  const bool a_first = a.run_id < b.run_id;
  EXPECT_FALSE(index.find(a_first ? a.run_id : b.run_id)->duplicate_of.has_value());
  EXPECT_EQ(index.find(a_first ? b.run_id : a.run_id)->duplicate_of, a_first ? a.run_id : b.run_id);
}
