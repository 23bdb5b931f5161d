// Golden files: the fixture records (tests/compare/data/runs) give byte-identical README.md,
// board.json and board.csv. Regenerate with DYNO_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace dyno::report
