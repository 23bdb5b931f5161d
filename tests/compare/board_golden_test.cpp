// Golden files: the fixture records (tests/compare/data/runs) give byte-identical README.md,
// board.json and board.csv. Regenerate with DYNO_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "golden.h"
#include "report/board_document.h"
#include "report/board_files.h"
#include "test_records.h"

namespace dyno::report {
namespace {

compare::Board fixture_board() {
  return compare::build_board(testing::fixture_input(), testing::fixed_options());
}

TEST(BoardGolden, Readme) {
  const compare::Board b = fixture_board();
  testing::expect_golden("tests/compare/golden/README.md",
                         to_markdown(board_document(b, {}, DocumentKind::kFull), {}));
}

TEST(BoardGolden, Ledger) {
  testing::expect_golden("tests/compare/golden/board.json", board_json(fixture_board(), {}));
}

TEST(BoardGolden, Csv) {
  testing::expect_golden("tests/compare/golden/board.csv", board_csv(fixture_board()));
}

TEST(BoardGolden, Console) {
  testing::expect_golden("tests/compare/golden/console.txt",
                         to_text(board_document(fixture_board(), {}, DocumentKind::kConsole)));
}

TEST(BoardGolden, ThreeArmsAgainstABaseline) {
  // The slow runs twice (as "slow" and "slow-again") against fast as the baseline: identical
  // arms tie, the slower engine loses.
  compare::BoardInput in = compare::load_board_input(
      testing::fixture_root(),
      {{"slow", {"label=slow"}}, {"slow-again", {"label=slow"}}, {"fast", {"label=fast"}}}, {});
  const compare::Board b = compare::build_board(in, testing::fixed_options());
  testing::expect_golden("tests/compare/golden/three-arms.md",
                         to_markdown(board_document(b, {}, DocumentKind::kFull), {}));
  ASSERT_EQ(b.tallies.size(), 8u);  // two arms, four headline figures
  for (const auto& t : b.tallies) EXPECT_EQ(t.losses, 2u) << t.arm << " " << t.metric;
}

/// The fixture board with the engine's own timings in every record, c1's accuracy marked not
/// comparable, and expectations pinned with policy report (one of them fails).
compare::Board annotated_board() {
  compare::BoardInput in = testing::fixture_input();
  for (auto& arm : in.arms) {
    for (auto& run : arm.runs) {
      auto copy = testing::copy_run(run);
      const bool fast = arm.name == "fast";
      testing::set_engine_timings(*copy, fast ? 2400.0 : 1200.0, fast ? 310.5 : 150.25,
                                  fast ? 400 : 410, fast ? 10 : 0);
      testing::set_manifest(
          *copy, "engine.source",
          boost::json::object{{"checkout", "engine"},
                              {"commit", fast ? std::string(40, 'a') : std::string(40, 'b')},
                              {"dirty", false}});
      run = copy;
    }
  }
  compare::BoardOptions o = testing::fixed_options();
  o.accuracy_marks = {
      {"stories260K/sweep/c1", "", "fast's answers are wrapped in a tag the scorer drops", "k"}};
  o.expect.policy = compare::ExpectPolicy::kReport;
  o.expect.engine_commits = {{"fast", {"aaaaaaa"}}, {"slow", {"bbbbbbb"}}};
  o.expect.requests = 12;
  o.expect.cells_per_arm = {{"fast", 2}};
  return compare::build_board(in, o);
}

TEST(BoardGolden, EngineFiguresAccuracyMarksAndExpectations) {
  const compare::Board b = annotated_board();
  ASSERT_EQ(b.status, "expectations_failed");  // c4 ran 24 requests per run, not 12
  const std::string readme = to_markdown(board_document(b, {}, DocumentKind::kFull), {});
  testing::expect_golden("tests/compare/golden/annotated.md", readme);
  testing::expect_golden("tests/compare/golden/annotated.csv", board_csv(b));
  // The same words in every rendering.
  const std::string html = to_html(board_document(b, {}, DocumentKind::kFull), {});
  const std::string console = to_text(board_document(b, {}, DocumentKind::kConsole));
  for (const std::string& text : {readme, html, console}) {
    EXPECT_NE(text.find("expectations_failed"), std::string::npos);
    EXPECT_NE(text.find("not comparable"), std::string::npos);
    EXPECT_NE(text.find("wrapped in a tag the scorer drops"), std::string::npos);
  }
  for (const std::string& text : {readme, html}) {
    EXPECT_NE(text.find("Engine-timed figures"), std::string::npos);
    EXPECT_NE(text.find("Prefill tok/s per request p50 (engine)"), std::string::npos);
    EXPECT_NE(text.find("Draft acceptance (engine, /metrics)"), std::string::npos);
  }
  const auto ledger = boost::json::parse(board_json(b, {})).as_object();
  EXPECT_EQ(ledger.at("status").as_string(), "expectations_failed");
  const auto& ex = ledger.at("expectations").as_object();
  EXPECT_EQ(ex.at("policy").as_string(), "report");
  EXPECT_EQ(ex.at("outcome").as_string(), "fail");
  EXPECT_EQ(ex.at("failed").to_number<int>(), 2);
  EXPECT_EQ(ex.at("pinned").at("requests").to_number<int>(), 12);
  EXPECT_EQ(ledger.at("status_detail").at("expectations_failed").to_number<int>(), 2);
  const auto& c1 = ledger.at("cells").at(0).as_object();
  const auto& cmp = c1.at("comparisons").at(0).as_object();
  EXPECT_EQ(cmp.at("deltas").at("accuracy").at("verdict").as_string(), "not_comparable");
  EXPECT_EQ(cmp.at("quality").at("accuracy_comparable"), boost::json::value(false));
  EXPECT_EQ(cmp.at("deltas").at("server_decode_tok_s").at("verdict").as_string(), "no_interval");
  EXPECT_EQ(c1.at("arms").at(0).at("figures").at("server_prefill_tok_s").to_number<double>(),
            2400.0);
  bool engine_definition = false;
  for (const auto& m : ledger.at("definitions").at("metrics").as_array()) {
    if (m.at("key").as_string() == "draft_acceptance_metrics") {
      engine_definition = m.at("engine_source").as_string() == "/metrics";
    }
  }
  EXPECT_TRUE(engine_definition);
}

TEST(BoardGolden, NoEngineFiguresNoEngineSection) {
  const compare::Board b = fixture_board();
  const std::string readme = to_markdown(board_document(b, {}, DocumentKind::kFull), {});
  EXPECT_EQ(readme.find("Engine-timed"), std::string::npos);
  const std::string ledger = board_json(b, {});
  EXPECT_EQ(ledger.find("server_prefill_tok_s"), std::string::npos);
  EXPECT_EQ(ledger.find("tokens_per_event"), std::string::npos);
  EXPECT_EQ(board_csv(b).find("server_"), std::string::npos);
  EXPECT_NE(ledger.find("\"expectations\": null"), std::string::npos);
}

}  // namespace
}  // namespace dyno::report
