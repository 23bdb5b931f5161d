#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "digest/digest.h"
#include "golden.h"
#include "json/json_text.h"
#include "metrics/summary.h"
#include "record/record_json.h"
#include "record/record_schema.h"
#include "record/run_id.h"
#include "record/run_writer.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::metrics::Trace;

namespace {

Trace sample_trace() {
  Trace t;
  t.index = 7;
  t.request_id = "syn-0-7";
  t.phase = "measured";
  t.scheduled_ns = 1'000;
  t.sent_ns = 1'500;
  t.first_byte_ns = 2'000'000;
  t.first_token_ns = 30'000'000;
  t.first_content_ns = 30'000'000;
  t.last_token_ns = 50'000'000;
  t.done_ns = 50'100'000;
  t.event_times_ns = {30'000'000, 40'000'000, 50'000'000};
  t.input_tokens = 12;
  t.output_tokens = 3;
  t.token_count_source = dyno::metrics::TokenCountSource::kUsage;
  t.http_status = 200;
  t.finish_reason = "length";
  t.server_timings_json = R"({"prompt_n":12,"prompt_ms":4.5})";
  t.output_text = "42";
  t.correct = true;
  t.extracted_answer = "42";
  t.scorer = "relaxed_numeric";
  t.expected_answer = "42.0";
  return t;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class TempDir {
 public:
  TempDir() { path_ = dyno::testing::make_temp_dir("dyno-record"); }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST(RecordJson, RequestLineMatchesGolden) {
  const std::string line =
      dyno::json_text::compact(dyno::record::trace_to_json(sample_trace(), true));
  dyno::testing::expect_golden("tests/record/golden/request_line.json", line + "\n");
}

TEST(RecordJson, ChunkTimesAreDeltaEncodedAndRoundTrip) {
  const json::object o = dyno::record::trace_to_json(sample_trace(), true);
  const auto& deltas = o.at("chunk_times_ns").as_array();
  ASSERT_EQ(deltas.size(), 3u);
  EXPECT_EQ(deltas[0].as_int64(), 30'000'000);
  EXPECT_EQ(deltas[1].as_int64(), 10'000'000);
  const Trace back = dyno::record::trace_from_json(o);
  EXPECT_EQ(back.event_times_ns, sample_trace().event_times_ns);
  EXPECT_EQ(back.first_token_ns, sample_trace().first_token_ns);
  EXPECT_EQ(back.output_tokens, 3);
  EXPECT_EQ(back.server_timings_json, R"({"prompt_n":12,"prompt_ms":4.5})");
  EXPECT_EQ(back.finish_reason, "length");
  EXPECT_EQ(back.correct, true);
  EXPECT_EQ(back.extracted_answer, "42");
  EXPECT_EQ(back.scorer, "relaxed_numeric");
}

TEST(RecordJson, ScoreIsWrittenOnlyWhenScoredAndReadBack) {
  Trace unscored = sample_trace();
  unscored.correct.reset();
  unscored.extracted_answer.clear();
  unscored.scorer.clear();
  const json::object plain = dyno::record::trace_to_json(unscored, false);
  EXPECT_FALSE(plain.contains("score"));
  EXPECT_FALSE(dyno::record::trace_from_json(plain).correct);

  Trace wrong = sample_trace();
  wrong.correct = false;
  wrong.extracted_answer = "";
  wrong.scorer = "choice";
  wrong.expected_answer.reset();  // as records written before dyno kept it
  const json::object o = dyno::record::trace_to_json(wrong, false);
  EXPECT_EQ(dyno::json_text::compact(o.at("score")),
            R"({"correct":false,"extracted":"","scorer":"choice"})");
  const Trace back = dyno::record::trace_from_json(o);
  EXPECT_EQ(back.correct, false);
  EXPECT_EQ(back.extracted_answer, "");
  EXPECT_EQ(back.scorer, "choice");

  json::object bad = o;
  bad["score"] = json::object{{"correct", "yes"}};
  EXPECT_THROW(dyno::record::trace_from_json(bad), std::runtime_error);
  bad["score"] = 1;
  EXPECT_THROW(dyno::record::trace_from_json(bad), std::runtime_error);
}

TEST(RecordJson, AScoreKeepsWhatItJudgedAndTheOutputItJudged) {
  // What `dyno rescore` needs: the expectation, and the output even when it was empty.
  Trace t = sample_trace();
  t.output_text.clear();
  t.correct = false;
  t.extracted_answer.clear();
  t.scorer = "choice";
  t.expected_answer = "B";
  t.scorer_choices = {"A", "B"};
  const json::object o = dyno::record::trace_to_json(t, false);
  EXPECT_EQ(
      dyno::json_text::compact(o.at("score")),
      R"({"correct":false,"extracted":"","scorer":"choice","expected":"B","choices":["A","B"]})");
  EXPECT_EQ(o.at("output_text").as_string(), "");
  const auto problems = dyno::record::record_schema("request").validate(o);
  for (const auto& p : problems) ADD_FAILURE() << p.pointer << ": " << p.message;
  const Trace back = dyno::record::trace_from_json(o);
  EXPECT_EQ(back.expected_answer, "B");
  EXPECT_EQ(back.scorer_choices, (std::vector<std::string>{"A", "B"}));
  EXPECT_TRUE(back.scorer_pattern.empty());

  t.scorer = "regex";
  t.scorer_choices.clear();
  t.scorer_pattern = "answer: (\\w+)";
  EXPECT_EQ(dyno::record::trace_from_json(dyno::record::trace_to_json(t, false)).scorer_pattern,
            "answer: (\\w+)");

  // An unscored or failed request keeps no empty output.
  Trace unscored = sample_trace();
  unscored.correct.reset();
  unscored.output_text.clear();
  EXPECT_FALSE(dyno::record::trace_to_json(unscored, false).contains("output_text"));
  t.status = dyno::metrics::RequestStatus::kError;
  t.error_category = "http_status";
  EXPECT_FALSE(dyno::record::trace_to_json(t, false).contains("output_text"));

  json::object bad = o;
  bad["score"].as_object()["expected"] = 4;
  EXPECT_THROW(dyno::record::trace_from_json(bad), std::runtime_error);
  bad["score"].as_object()["expected"] = "B";
  bad["score"].as_object()["choices"] = json::array{1};
  EXPECT_THROW(dyno::record::trace_from_json(bad), std::runtime_error);
}

TEST(RecordJson, ErrorTraceCarriesCategoryAndNoChunkTimesWhenDropped) {
  Trace t = sample_trace();
  t.status = dyno::metrics::RequestStatus::kError;
  t.error_category = "timeout";
  t.error_message = "total timeout after 1500 ms";
  const json::object o = dyno::record::trace_to_json(t, false);
  EXPECT_FALSE(o.contains("chunk_times_ns"));
  EXPECT_EQ(o.at("error").at("category").as_string(), "timeout");
  EXPECT_EQ(o.at("status").as_string(), "error");
}

TEST(RecordJson, NonFiniteNumbersBecomeNull) {
  EXPECT_TRUE(dyno::record::number_or_null(std::nan("")).is_null());
  EXPECT_TRUE(dyno::record::number_or_null(std::nullopt).is_null());
  EXPECT_EQ(dyno::record::number_or_null(1.5).as_double(), 1.5);
}

TEST(RecordJson, SummaryMatchesGolden) {
  std::vector<Trace> traces;
  for (int i = 0; i < 4; ++i) {
    Trace t = sample_trace();
    t.index = static_cast<std::uint64_t>(i);
    t.sent_ns = i * 10'000'000;
    t.scheduled_ns = t.sent_ns;
    t.first_token_ns = *t.sent_ns + 20'000'000 + i * 1'000'000;
    t.event_times_ns = {*t.first_token_ns, *t.first_token_ns + 8'000'000,
                        *t.first_token_ns + 16'000'000};
    t.last_token_ns = t.event_times_ns.back();
    t.done_ns = *t.last_token_ns + 100'000;
    // Quality: requests 0 and 1 correct, 2 wrong, 3 not scored.
    if (i < 3) {
      t.correct = i < 2;
    } else {
      t.correct.reset();
    }
    traces.push_back(t);
  }
  Trace failed;
  failed.index = 4;
  failed.request_id = "syn-0-4";
  failed.sent_ns = 5'000'000;
  failed.done_ns = 6'000'000;
  failed.status = dyno::metrics::RequestStatus::kError;
  failed.error_category = "http_status";
  failed.http_status = 500;
  failed.correct = false;  // had an expected answer: scored, incorrect
  failed.scorer = "exact";
  traces.push_back(failed);
  dyno::metrics::SummaryOptions opt;
  opt.declared_concurrency = 4;
  opt.slo.ttft_s = 0.0225;
  const auto summary = dyno::metrics::summarize_run(traces, opt);
  dyno::testing::expect_golden("tests/record/golden/summary.json",
                               dyno::record::pretty_json(dyno::record::summary_to_json(summary)));
}

TEST(RunWriter, WritesAtomicallyAppendsAndSumsEveryFile) {
  TempDir tmp;
  std::vector<Trace> traces;
  {
    dyno::record::RunWriter w(tmp.path(), "run-1", true);
    EXPECT_THROW(dyno::record::RunWriter(tmp.path(), "run-1", true), dyno::record::RecordError);
    w.write_json("manifest.json", json::object{{"schema_version", 1}});
    for (std::uint64_t i = 0; i < 5; ++i) {
      Trace t = sample_trace();
      t.index = 4 - i;  // finish out of order
      w.append_request(t);
      traces.push_back(t);
    }
    w.flush_requests();
    // Appended as they finished: already on disk before finalize (what an interrupt keeps).
    std::string appended = read_file(w.dir() / "requests.jsonl");
    EXPECT_EQ(std::count(appended.begin(), appended.end(), '\n'), 5);
    w.write_text("evidence/note.txt", "hello\n");
    w.finalize(traces);
    // Final file is in index order.
    std::ifstream in(w.dir() / "requests.jsonl");
    std::string line;
    std::int64_t expected = 0;
    while (std::getline(in, line)) {
      EXPECT_EQ(json::parse(line).at("index").as_int64(), expected++);
    }
    EXPECT_EQ(expected, 5);
    const std::string sums = read_file(w.dir() / "SHA256SUMS");
    EXPECT_NE(sums.find("  evidence/note.txt\n"), std::string::npos);
    EXPECT_NE(sums.find("  manifest.json\n"), std::string::npos);
    EXPECT_NE(sums.find("  requests.jsonl\n"), std::string::npos);
    EXPECT_NE(sums.find(dyno::digest::sha256_hex("hello\n") + "  evidence/note.txt"),
              std::string::npos);
    EXPECT_EQ(sums.find("SHA256SUMS"), std::string::npos);
    for (const auto& e : fs::recursive_directory_iterator(w.dir())) {
      EXPECT_FALSE(e.path().string().ends_with(".tmp")) << e.path();
    }
  }
}

TEST(RunId, IsSortableAndCarriesTheLabel) {
  const auto t = std::chrono::system_clock::from_time_t(1796000000);
  const std::string id = dyno::record::make_run_id(t, "my label/x");
  EXPECT_EQ(id.substr(0, 17), "20261130T005320Z-");
  EXPECT_TRUE(id.ends_with("-my-label-x")) << id;
  EXPECT_EQ(dyno::record::iso8601_utc(t), "2026-11-30T00:53:20.000Z");
}

}  // namespace
