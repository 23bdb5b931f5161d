// Pinned expectations of a board spec (engine commits, requests per cell, cohort sizes, the
// spec's own SHA-256): a board whose runs do not match refuses to render, or, by policy,
// renders with the failures in its status and findings. Accuracy marked not comparable: no
// accuracy delta, warning or verdict. Engine-timed figures: read from summary.json, shown only
// when some run has one, compared only for the engine's two rates.
#include "compare/expect.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include "compare/board.h"
#include "compare/inputs.h"
#include "temp_dir.h"
#include "test_records.h"

namespace dyno::compare {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using testing::copy_run;
using testing::fixed_options;
using testing::fixture_input;
using testing::set_manifest;
using testing::set_path;

const std::string kCommitA = "1111111111111111111111111111111111111111";
const std::string kCommitB = "2222222222222222222222222222222222222222";
const std::string kCommitC = "3333333333333333333333333333333333333333";

/// The fixture board (fast vs slow, cells c1 and c4) with each run changed by `change`, which
/// gets the run's arm and protocol cell.
BoardInput fixture_with(
    const std::function<void(RunRecord&, const std::string&, const std::string&)>& change) {
  BoardInput in = fixture_input();
  for (auto& arm : in.arms) {
    for (auto& run : arm.runs) {
      auto copy = copy_run(run);
      change(*copy, arm.name, *string_at(copy->manifest_json, "workload.protocol.cell"));
      dyno::testing::retype(*copy);
      run = copy;
    }
  }
  return in;
}

/// fast's c1 from commit A, its c4 from commit B; slow's both from commit C.
BoardInput with_commits() {
  return fixture_with([](RunRecord& r, const std::string& arm, const std::string& cell) {
    const std::string commit = arm == "slow" ? kCommitC : cell == "c1" ? kCommitA : kCommitB;
    set_manifest(r, "engine.source",
                 json::object{{"checkout", "engine"}, {"commit", commit}, {"dirty", false}});
  });
}

std::size_t failures(const Board& b) {
  std::size_t n = 0;
  for (const auto& r : b.expectations) n += r.pass ? 0 : 1;
  return n;
}

TEST(Expectations, CommitsMatchWhenAbbreviated) {
  EXPECT_TRUE(commit_matches(kCommitA, "1111111"));
  EXPECT_TRUE(commit_matches(kCommitA, kCommitA));
  EXPECT_TRUE(commit_matches("ABCDEF1234", "abcdef1"));
  EXPECT_FALSE(commit_matches(kCommitA, "2222222"));
  EXPECT_FALSE(commit_matches("111", "1111111"));
  EXPECT_FALSE(commit_matches(kCommitA, ""));
}

TEST(Expectations, ABoardThatMatchesItsPinsRenders) {
  BoardOptions o = fixed_options();
  o.expect.engine_commits = {{"fast", {"1111111", "2222222"}}, {"slow", {kCommitC}}};
  o.expect.requests = 12;
  o.expect.cell_requests = {{"stories260K/sweep/c4", 24}};
  o.expect.cells_per_arm = {{"fast", 2}, {"slow", 2}};
  o.expect.cells_per_engine_commit = {{"fast", {{"1111111", 1}, {"2222222", 1}}}};
  const Board b = build_board(with_commits(), o);
  EXPECT_EQ(b.status, "complete");
  EXPECT_EQ(failures(b), 0u);
  // 4 runs' commits, 4 runs' requests, 2 arms' cells, 2 pinned commits' cells.
  EXPECT_EQ(b.expectations.size(), 12u);
  for (const auto& f : b.findings) EXPECT_NE(f.type, "expectation_failed");
}

TEST(Expectations, AMismatchRefusesNamingTheArmCellAndBothValues) {
  BoardOptions o = fixed_options();
  o.expect.engine_commits = {{"fast", {"1111111"}}};  // c4 was built from commit B
  try {
    build_board(with_commits(), o);
    FAIL() << "expected ExpectationError";
  } catch (const ExpectationError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("refusing to render"), std::string::npos) << what;
    EXPECT_NE(what.find("arm fast, cell stories260K/sweep/c4, run 20261130T004322Z-dd1bd8-fast: "
                        "engine commit (manifest engine.source.commit) expected 1111111, found " +
                        kCommitB),
              std::string::npos)
        << what;
    EXPECT_EQ(what.find("sweep/c1"), std::string::npos) << what;  // passes are not listed
    EXPECT_NE(what.find("--expect-policy report"), std::string::npos) << what;
  }
  // A run without an engine source has no commit to match.
  try {
    build_board(fixture_input(), o);
    FAIL() << "expected ExpectationError";
  } catch (const ExpectationError& e) {
    EXPECT_NE(std::string(e.what()).find("expected 1111111, found none"), std::string::npos)
        << e.what();
  }
}

TEST(Expectations, ByPolicyTheBoardRendersWithTheFailuresInItsStatus) {
  BoardOptions o = fixed_options();
  o.expect.policy = ExpectPolicy::kReport;
  o.expect.requests = 12;  // c4 ran 24 requests per run
  o.expect.cells_per_arm = {{"slow", 3}};
  o.expect.cells_per_engine_commit = {{"fast", {{"1111111", 2}}}};
  const Board b = build_board(with_commits(), o);
  EXPECT_EQ(b.status, "expectations_failed");
  std::vector<const Finding*> found;
  for (const auto& f : b.findings) {
    if (f.type == "expectation_failed") found.push_back(&f);
  }
  ASSERT_EQ(found.size(), failures(b));
  // Two c4 runs with 24 requests; slow's 2 cells; commit A's 1 cell, commit B's unexpected 1.
  ASSERT_EQ(found.size(), 5u);
  EXPECT_EQ(found[0]->cell, "stories260K/sweep/c4");
  EXPECT_EQ(found[0]->arm, "fast");
  EXPECT_EQ(found[0]->data.at("kind").as_string(), "requests");
  EXPECT_EQ(found[0]->data.at("expected"), json::value(12));
  EXPECT_EQ(found[0]->data.at("found"), json::value(24));
  EXPECT_NE(found[0]->message.find("measured requests (summary requests.total) expected 12, "
                                   "found 24"),
            std::string::npos)
      << found[0]->message;
  EXPECT_EQ(found[0]->message.find("run 20261130T004322Z-dd1bd8-fast: "), 0u) << found[0]->message;
  EXPECT_NE(found[2]->message.find("cells on the board expected 3, found 2"), std::string::npos)
      << found[2]->message;
  EXPECT_NE(found[3]->message.find("cells with a run of engine commit 1111111 expected 2, found 1"),
            std::string::npos)
      << found[3]->message;
  EXPECT_NE(found[4]->message.find(kCommitB + " (no pinned commit matches it) expected 0, found 1"),
            std::string::npos)
      << found[4]->message;
  // The failures come first, right after the board-wide findings.
  EXPECT_EQ(b.findings.front().type, "expectation_failed");
}

TEST(Expectations, APinnedCellNotOnTheBoardFails) {
  BoardOptions o = fixed_options();
  o.expect.policy = ExpectPolicy::kReport;
  o.expect.cell_requests = {{"stories260K/sweep/c8", 48}};
  const Board b = build_board(fixture_input(), o);
  ASSERT_EQ(failures(b), 1u);
  EXPECT_EQ(b.expectations.back().cell, "stories260K/sweep/c8");
  EXPECT_EQ(b.expectations.back().found, json::value("not on the board"));
}

TEST(Expectations, ThePinnedSpecHashRefusesWhateverThePolicy) {
  BoardOptions o = fixed_options();
  o.expect.policy = ExpectPolicy::kReport;
  o.spec_file_sha256 = std::string(64, 'a');
  o.expect.spec_sha256 = std::string(64, 'b');
  try {
    build_board(fixture_input(), o);
    FAIL() << "expected ExpectationError";
  } catch (const ExpectationError& e) {
    EXPECT_NE(std::string(e.what()).find("the board spec file's SHA-256 expected " +
                                         std::string(64, 'b') + ", found " + std::string(64, 'a')),
              std::string::npos)
        << e.what();
  }
  o.expect.spec_sha256 = std::string(64, 'a');
  const Board b = build_board(fixture_input(), o);
  EXPECT_EQ(b.status, "complete");
  ASSERT_EQ(b.expectations.size(), 1u);
  EXPECT_TRUE(b.expectations[0].pass);
}

TEST(Expectations, AnUnknownArmIsAnError) {
  BoardOptions o = fixed_options();
  o.expect.cells_per_arm = {{"nobody", 1}};
  try {
    build_board(fixture_input(), o);
    FAIL();
  } catch (const CompareError& e) {
    EXPECT_NE(std::string(e.what()).find("expect.cells_per_arm.nobody: not an arm"),
              std::string::npos)
        << e.what();
  }
}

class SpecFile : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = dyno::testing::make_temp_dir("dyno-expect"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path write(const std::string& text) {
    const fs::path p = dir_ / "spec.json";
    std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
    return p;
  }
  /// The error read_board_spec gives for `text` ("" when none).
  std::string error_of(const std::string& text) {
    try {
      read_board_spec(write(text));
    } catch (const CompareError& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

TEST_F(SpecFile, ReadsExpectationsAndAccuracyMarks) {
  const BoardSpec s = read_board_spec(write(R"({
    "arms": [{"name": "fast", "runs": "label=fast"}, {"name": "slow", "runs": "label=slow"}],
    "cells": [{"name": "x", "runs": {"fast": "a"}, "accuracy_comparable": false,
               "reason": "the parser drops the answer tag"}],
    "expect": {"policy": "report", "engine_commits": {"fast": "ABCDEF1", "slow": ["1234567", "89abcde"]},
               "requests": 12, "cell_requests": {"stories260K/sweep/c4": 24},
               "cells_per_arm": {"fast": 2},
               "cells_per_engine_commit": {"fast": {"abcdef1": 26, "1234567": 1}}},
    "accuracy_not_comparable": [{"cell": "stories260K/sweep/c1", "arm": "fast", "reason": "r"}]})"));
  EXPECT_EQ(s.expect.policy, ExpectPolicy::kReport);
  EXPECT_EQ(s.expect.engine_commits.at("fast"), std::vector<std::string>{"abcdef1"});
  EXPECT_EQ(s.expect.engine_commits.at("slow").size(), 2u);
  EXPECT_EQ(*s.expect.requests, 12u);
  EXPECT_EQ(s.expect.cell_requests.at("stories260K/sweep/c4"), 24u);
  EXPECT_EQ(s.expect.cells_per_arm.at("fast"), 2u);
  EXPECT_EQ(s.expect.cells_per_engine_commit.at("fast").at("abcdef1"), 26u);
  ASSERT_EQ(s.accuracy_marks.size(), 2u);
  EXPECT_EQ(s.accuracy_marks[0].cell, "x");
  EXPECT_EQ(s.accuracy_marks[0].reason, "the parser drops the answer tag");
  EXPECT_EQ(s.accuracy_marks[1].arm, "fast");
  EXPECT_NE(s.accuracy_marks[1].key.find("accuracy_not_comparable[0]"), std::string::npos);
  EXPECT_EQ(s.cells[0].accuracy_not_comparable, "the parser drops the answer tag");
}

TEST_F(SpecFile, BadExpectationsNameTheKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"expect": {"policy": "maybe"}})", "expect.policy"},
      {R"({"expect": {"engine_commits": {"a": "xyz1234"}}})", "expect.engine_commits.a"},
      {R"({"expect": {"engine_commits": {"a": "abc"}}})", "expect.engine_commits.a"},
      {R"({"expect": {"engine_commits": {"a": []}}})", "expect.engine_commits.a"},
      {R"({"expect": {"engine_commits": {"a": ["abcdef1", 7]}}})", "expect.engine_commits.a[1]"},
      {R"({"expect": {"requests": -1}})", "expect.requests"},
      {R"({"expect": {"requests": 1.5}})", "expect.requests"},
      {R"({"expect": {"cell_requests": {"c": "12"}}})", "expect.cell_requests.c"},
      {R"({"expect": {"cells_per_arm": []}})", "expect.cells_per_arm"},
      {R"({"expect": {"cells_per_engine_commit": {"a": {"nothex!": 1}}}})",
       "expect.cells_per_engine_commit.a.nothex!"},
      {R"({"expect": {"cells_per_engine_commit": {"a": {}}}})", "expect.cells_per_engine_commit.a"},
      {R"({"expect": {"spec_sha256": "00"}})", "expect.spec_sha256"},
      {R"({"expect": 3})", "expect"},
      {R"({"accuracy_not_comparable": [{"cell": "c"}]})", "accuracy_not_comparable[0].reason"},
      {R"({"accuracy_not_comparable": [{"cell": "c", "reason": ""}]})",
       "accuracy_not_comparable[0].reason"},
      {R"({"accuracy_not_comparable": {"cell": "c"}})", "accuracy_not_comparable"},
      {R"({"arms": [{"name": "a"}], "expect": {"cells_per_arm": {"b": 1}}})",
       "expect.cells_per_arm.b"},
      {R"({"arms": [{"name": "a"}], "expect": {"engine_commits": {"b": "abcdef1"}}})",
       "expect.engine_commits.b"},
      {R"({"arms": [{"name": "a"}],
           "accuracy_not_comparable": [{"cell": "c", "arm": "b", "reason": "r"}]})",
       "accuracy_not_comparable[0].arm"},
      {R"({"arms": [{"name": "a"}], "cells": [{"name": "c", "runs": {"a": "x"},
           "accuracy_comparable": false}]})",
       "cells[0].reason"},
      {R"({"arms": [{"name": "a"}], "cells": [{"name": "c", "runs": {"a": "x"},
           "reason": "why"}]})",
       "cells[0].reason"},
      {R"({"arms": [{"name": "a"}], "cells": [{"name": "c", "runs": {"a": "x"},
           "accuracy_comparable": "no", "reason": "why"}]})",
       "cells[0].accuracy_comparable"},
  };
  for (const auto& [text, key] : cases) {
    const std::string e = error_of(text);
    EXPECT_NE(e.find("`" + key + "`"), std::string::npos) << text << " -> " << e;
    EXPECT_NE(e.find("spec.json"), std::string::npos) << e;
  }
  EXPECT_THROW(parse_sha256("xyz", "--expect-spec-sha256"), CompareError);
  EXPECT_EQ(parse_sha256(std::string(64, 'A'), "--expect-spec-sha256"), std::string(64, 'a'));
  EXPECT_THROW(parse_expect_policy("never", "--expect-policy"), CompareError);
}

// ---- accuracy comparability --------------------------------------------------------------

TEST(AccuracyComparability, AMarkedCellHasNoAccuracyDeltaWarningOrVerdict) {
  // The fixture's c1: accuracy 10/12 vs 9/12, a quality warning on accuracy.
  const Board before = build_board(fixture_input(), fixed_options());
  const Comparison& c1 = before.cells[0].comparisons[0];
  ASSERT_TRUE(c1.quality.warning);
  ASSERT_EQ(c1.deltas.count("accuracy"), 1u);
  BoardOptions o = fixed_options();
  o.accuracy_marks = {{"stories260K/sweep/c1", "", "one engine wraps answers in a tag", "k"}};
  const Board b = build_board(fixture_input(), o);
  const Comparison& m = b.cells[0].comparisons[0];
  EXPECT_FALSE(m.quality.accuracy_comparable);
  EXPECT_EQ(m.quality.accuracy_reason, "one engine wraps answers in a tag");
  EXPECT_EQ(m.deltas.count("accuracy"), 0u);
  EXPECT_FALSE(m.quality.accuracy_delta_pp.has_value());
  EXPECT_FALSE(m.quality.warning);
  EXPECT_TRUE(m.quality.disagreements.empty());
  EXPECT_NEAR(*m.quality.accuracy_arm, 10.0 / 12.0, 1e-12);  // still shown as measured
  // Other figures are compared as before; c4 is not marked.
  EXPECT_EQ(m.deltas.count("output_tokens_per_s"), 1u);
  EXPECT_TRUE(b.cells[1].comparisons[0].quality.accuracy_comparable);
  EXPECT_EQ(b.cells[1].comparisons[0].deltas.count("accuracy"), 1u);
  std::size_t marked = 0, warnings = 0;
  for (const auto& f : b.findings) {
    if (f.type == "accuracy_not_comparable") {
      ++marked;
      EXPECT_EQ(f.cell, "stories260K/sweep/c1");
      EXPECT_NE(f.message.find("one engine wraps answers in a tag"), std::string::npos);
    }
    if (f.type == "quality_warning") ++warnings;
  }
  EXPECT_EQ(marked, 1u);
  EXPECT_EQ(warnings, 0u);
}

TEST(AccuracyComparability, AMarkKeepsAnOutputLengthWarning) {
  BoardInput in = fixture_with([](RunRecord& r, const std::string& arm, const std::string&) {
    if (arm == "fast") set_path(r.summary_json, "lengths_tokens.output.mean", 100.0);
  });
  BoardOptions o = fixed_options();
  o.accuracy_marks = {{"stories260K/sweep/c1", "fast", "reason", "k"}};
  const Board b = build_board(in, o);
  const QualityAudit& q = b.cells[0].comparisons[0].quality;
  EXPECT_TRUE(q.warning);
  ASSERT_EQ(q.reasons.size(), 1u);
  EXPECT_NE(q.reasons[0].find("mean output length"), std::string::npos) << q.reasons[0];
}

TEST(AccuracyComparability, AMarkNamingNoCellOrArmIsAnError) {
  BoardOptions o = fixed_options();
  o.accuracy_marks = {{"stories260K/sweep/c9", "", "r", "spec.json: key `accuracy[0]`"}};
  try {
    build_board(fixture_input(), o);
    FAIL();
  } catch (const CompareError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("key `accuracy[0]`: no cell 'stories260K/sweep/c9'"), std::string::npos)
        << what;
    EXPECT_NE(what.find("stories260K/sweep/c1"), std::string::npos) << what;  // the known ones
  }
  o.accuracy_marks = {{"stories260K/sweep/c1", "nobody", "r", "k"}};
  EXPECT_THROW(build_board(fixture_input(), o), CompareError);
}

// ---- engine-timed figures ----------------------------------------------------------------

TEST(EngineFigures, ReadFromTheSummaryAndComparedForTheEnginesRatesOnly) {
  const Board none = build_board(fixture_input(), fixed_options());
  EXPECT_FALSE(none.engine_figures);
  EXPECT_EQ(none.cells[0].comparisons[0].deltas.count("server_prefill_tok_s"), 0u);
  const Board b =
      build_board(fixture_with([](RunRecord& r, const std::string& arm, const std::string&) {
                    testing::set_engine_timings(r, arm == "fast" ? 2000.0 : 1000.0,
                                                arm == "fast" ? 300.0 : 200.0, 400, 10);
                  }),
                  fixed_options());
  EXPECT_TRUE(b.engine_figures);
  const ArmCell& fast = *b.cells[0].arm("fast");
  EXPECT_EQ(*fast.selected_figures().at("server_prefill_tok_s"), 2000.0);
  EXPECT_EQ(*fast.selected_figures().at("server_decode_tok_s"), 300.0);
  EXPECT_EQ(*fast.selected_figures().at("server_prompt_tokens_computed"), 400.0);
  EXPECT_EQ(*fast.selected_figures().at("server_prompt_tokens_cached"), 10.0);
  EXPECT_EQ(*fast.selected_figures().at("draft_acceptance_timings"), 0.5);
  EXPECT_EQ(*fast.selected_figures().at("draft_acceptance_metrics"), 0.25);
  EXPECT_EQ(*fast.selected_figures().at("tokens_per_event"), 1.0);
  const Comparison& cmp = b.cells[0].comparisons[0];
  EXPECT_NEAR(*cmp.deltas.at("server_prefill_tok_s").value, 100.0, 1e-9);
  EXPECT_NEAR(*cmp.deltas.at("server_decode_tok_s").value, 50.0, 1e-9);
  // No per-response form on the board: an interval needs repetitions.
  EXPECT_EQ(cmp.deltas.at("server_prefill_tok_s").verdict, Verdict::kNoInterval);
  for (const char* shown_only :
       {"server_prompt_tokens_computed", "server_prompt_tokens_cached", "draft_acceptance_timings",
        "draft_acceptance_metrics", "tokens_per_event"}) {
    EXPECT_EQ(cmp.deltas.count(shown_only), 0u) << shown_only;
  }
  // Never a headline figure; the one engine figure a cell is judged by is its prefill figure,
  // the engine-timed prefill rate, since every run here has it (docs/compare.md "A cell's own
  // figures"): the tallies and non-win findings are otherwise the client's.
  for (const auto& c : b.cells) EXPECT_EQ(c.prefill_figure, "server_prefill_tokens_per_s");
  for (const auto& c : none.cells) EXPECT_EQ(c.prefill_figure, "prefill_rate_client_p50");
  const auto client_or_prefill = [](const std::string& key) {
    return find_metric(key)->engine_source.empty() || key == "server_prefill_tokens_per_s";
  };
  bool prefill_tallied = false;
  for (const auto& t : b.tallies) {
    EXPECT_TRUE(client_or_prefill(t.metric)) << t.metric;
    prefill_tallied = prefill_tallied || t.metric == "server_prefill_tokens_per_s";
  }
  EXPECT_TRUE(prefill_tallied);
  for (const auto& f : b.findings) {
    if (f.type == "nonwin") {
      EXPECT_TRUE(client_or_prefill(std::string(f.data.at("metric").as_string())));
    }
  }
  for (const auto& m : metric_catalog()) {
    if (!m.engine_source.empty()) {
      EXPECT_FALSE(m.headline) << m.key;
      EXPECT_NE(m.label.find("(engine"), std::string::npos) << m.key;
    }
  }
}

TEST(EngineFigures, OneArmWithoutTheEnginesTimingsHasNoDelta) {
  const Board b =
      build_board(fixture_with([](RunRecord& r, const std::string& arm, const std::string&) {
                    if (arm == "fast") testing::set_engine_timings(r, 2000.0, 300.0, 400, 0);
                  }),
                  fixed_options());
  EXPECT_TRUE(b.engine_figures);
  const Delta& d = b.cells[0].comparisons[0].deltas.at("server_prefill_tok_s");
  EXPECT_FALSE(d.value.has_value());
  EXPECT_EQ(d.verdict, Verdict::kNotApplicable);
}

}  // namespace
}  // namespace dyno::compare
