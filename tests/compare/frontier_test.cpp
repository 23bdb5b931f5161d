// The frontier and the cost of a board's operating points (compare/frontier.h): Pareto
// membership on constructed points (ties, one arm, dominated points, ladder cells left out),
// the cost with and without a price, the arm's own price winning over the flag, and the spec
// file's gpu_hour_cost read with its errors naming the file and key.
#include "compare/frontier.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "metrics/cost.h"
#include "temp_dir.h"
#include "test_records.h"

namespace dyno::compare {
namespace {

namespace fs = std::filesystem;
using dyno::testing::fixed_options;
using dyno::testing::fixture_input;

using XY = std::vector<std::pair<double, double>>;

TEST(Pareto, APointBeatenInBothIsDominated) {
  // (10, 100) beats (5, 50) in both; (20, 40) is faster per user, (10, 100) higher per GPU.
  EXPECT_EQ(pareto_frontier(XY{{10, 100}, {5, 50}, {20, 40}}),
            (std::vector<bool>{true, false, true}));
}

TEST(Pareto, TiesEqualPointsAreBothOnItAnEqualCoordinateAndLessIsDominated) {
  // Equal points: neither beats the other, both on the frontier.
  EXPECT_EQ(pareto_frontier(XY{{10, 100}, {10, 100}}), (std::vector<bool>{true, true}));
  // As fast per user, lower per GPU: dominated; as high per GPU, slower per user: dominated.
  EXPECT_EQ(pareto_frontier(XY{{10, 100}, {10, 50}, {5, 100}}),
            (std::vector<bool>{true, false, false}));
  // A tie on the frontier with a third point beaten by both.
  EXPECT_EQ(pareto_frontier(XY{{10, 100}, {10, 100}, {9, 99}}),
            (std::vector<bool>{true, true, false}));
}

TEST(Pareto, OnePointAndNonFinitePoints) {
  EXPECT_EQ(pareto_frontier(XY{{3, 4}}), std::vector<bool>{true});
  EXPECT_EQ(pareto_frontier(XY{}), std::vector<bool>{});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  // A non-finite point is never on it and dominates nothing.
  EXPECT_EQ(pareto_frontier(XY{{nan, 1000}, {inf, inf}, {1, 1}}),
            (std::vector<bool>{false, false, true}));
}

/// A cell of `kind` whose arms' points are (per user, per GPU).
Cell cell_of(const std::string& model, const std::string& kind,
             const std::vector<std::pair<std::string, std::pair<double, double>>>& arms) {
  Cell c;
  c.model = model;
  c.level_kind = kind;
  for (const auto& [arm, xy] : arms) {
    ArmCell a;
    a.arm = arm;
    a.point.per_user_tok_s = xy.first;
    a.point.output_tok_s_per_gpu = xy.second;
    c.arms.push_back(std::move(a));
  }
  return c;
}

TEST(Frontier, AcrossArmsAndCellsPerModelLadderCellsLeftOut) {
  std::vector<Cell> cells;
  // Model m: c1 is fast per user, c8 high per GPU; arm b's c8 is beaten by arm a's c8.
  cells.push_back(cell_of("m", "concurrency", {{"a", {50, 40}}, {"b", {45, 38}}}));
  cells.push_back(cell_of("m", "concurrency", {{"a", {20, 300}}, {"b", {19, 250}}}));
  // A ladder cell (one request): not a point, whatever its figures.
  cells.push_back(cell_of("m", "decode_tokens", {{"a", {500, 5000}}, {"b", {1, 1}}}));
  // Model n: its own frontier; one arm only, its points one above the other.
  cells.push_back(cell_of("n", "rate", {{"a", {10, 10}}}));
  cells.push_back(cell_of("n", "rate", {{"a", {10, 20}}}));
  // A point without its per-user figure is not a point.
  cells.push_back(cell_of("n", "rate", {{"b", {0, 0}}}));
  cells.back().arms[0].point.per_user_tok_s.reset();
  mark_frontier(cells);
  EXPECT_EQ(cells[0].arms[0].point.on_frontier, true);
  EXPECT_EQ(cells[0].arms[1].point.on_frontier, false);  // beaten by a's c1 in both
  EXPECT_EQ(cells[1].arms[0].point.on_frontier, true);
  EXPECT_EQ(cells[1].arms[1].point.on_frontier, false);
  EXPECT_EQ(cells[2].arms[0].point.on_frontier, std::nullopt);  // the ladder cell
  EXPECT_EQ(cells[2].arms[1].point.on_frontier, std::nullopt);
  EXPECT_EQ(cells[3].arms[0].point.on_frontier, false);  // model n: (10, 20) beats (10, 10)
  EXPECT_EQ(cells[4].arms[0].point.on_frontier, true);
  EXPECT_EQ(cells[5].arms[0].point.on_frontier, std::nullopt);
}

TEST(Frontier, TheFixtureBoardsPointsCostNothingWithoutAPrice) {
  const Board b = build_board(fixture_input(), fixed_options());
  EXPECT_TRUE(b.gpu_hour_cost.empty());
  for (const Cell& c : b.cells) {
    for (const ArmCell& a : c.arms) {
      SCOPED_TRACE(c.id + " " + a.arm);
      const OperatingPoint& p = a.point;
      EXPECT_EQ(p.gpus_in_record, a.run().manifest.hardware.gpus.size());
      EXPECT_EQ(p.gpus, 1.0);  // one GPU in each fixture record
      ASSERT_TRUE(p.output_tok_s_per_gpu);
      EXPECT_DOUBLE_EQ(*p.output_tok_s_per_gpu, *a.selected_figures().at("output_tokens_per_s"));
      EXPECT_EQ(p.per_user_tok_s, a.selected_figures().at("decode_rate_per_user_p50"));
      EXPECT_TRUE(p.on_frontier.has_value());
      EXPECT_FALSE(p.gpu_hour_cost);
      EXPECT_FALSE(p.usd_per_mtok_output);
      EXPECT_FALSE(p.usd_per_mtok_total);
    }
  }
}

TEST(Frontier, APricedArmsCellsGetTheCostOfTheirOwnFigures) {
  BoardInput in = fixture_input();
  in.arms[0].gpu_hour_cost = 2.5;  // fast has a price, slow none
  const Board b = build_board(in, fixed_options());
  EXPECT_EQ(b.gpu_hour_cost, (std::map<std::string, double>{{"fast", 2.5}}));
  for (const Cell& c : b.cells) {
    const ArmCell& fast = *c.arm("fast");
    const auto out = *fast.selected_figures().at("output_tokens_per_s");
    const auto in_rate = *fast.selected_figures().at("input_tokens_per_s");
    ASSERT_TRUE(fast.point.usd_per_mtok_output);
    EXPECT_DOUBLE_EQ(*fast.point.usd_per_mtok_output, 2.5 * 1 / 3600.0 / out * 1e6);
    EXPECT_DOUBLE_EQ(*fast.point.usd_per_mtok_total, 2.5 * 1 / 3600.0 / (out + in_rate) * 1e6);
    EXPECT_EQ(fast.point.usd_per_mtok_output,
              metrics::cost_per_mtok(2.5, fast.point.gpus, out));  // the one definition
    EXPECT_LT(*fast.point.usd_per_mtok_total, *fast.point.usd_per_mtok_output);
    const ArmCell& slow = *c.arm("slow");
    EXPECT_FALSE(slow.point.usd_per_mtok_output);  // no price: nothing invented
    EXPECT_FALSE(slow.point.usd_per_mtok_total);
  }
  // A price that is no price is refused.
  in.arms[0].gpu_hour_cost = -1;
  EXPECT_THROW(build_board(in, fixed_options()), CompareError);
  in.arms[0].gpu_hour_cost = std::numeric_limits<double>::infinity();
  EXPECT_THROW(build_board(in, fixed_options()), CompareError);
}

TEST(Frontier, TheArmsOwnPriceWinsOverTheFlag) {
  std::vector<ArmInput> arms(3);
  arms[0].name = "a";
  arms[0].gpu_hour_cost = 4.0;
  arms[1].name = "b";
  arms[2].name = "c";
  arms[2].gpu_hour_cost = 0.0;  // free is a price
  default_gpu_hour_cost(arms, 2.0);
  EXPECT_EQ(arms[0].gpu_hour_cost, 4.0);
  EXPECT_EQ(arms[1].gpu_hour_cost, 2.0);
  EXPECT_EQ(arms[2].gpu_hour_cost, 0.0);
  std::vector<ArmInput> unpriced(1);
  default_gpu_hour_cost(unpriced, std::nullopt);
  EXPECT_FALSE(unpriced[0].gpu_hour_cost);
}

TEST(Frontier, TheSpecFilesPricePerArm) {
  const dyno::testing::TempDir tmp("dyno-spec-cost");
  const fs::path spec = tmp / "spec.json";
  std::ofstream(spec) << R"({"arms": [{"name": "fast", "runs": "label=fast", "gpu_hour_cost": 2.1},
    {"name": "slow", "runs": "label=slow"}]})";
  const BoardSpec s = read_board_spec(spec);
  ASSERT_EQ(s.arms.size(), 2u);
  EXPECT_EQ(s.arms[0].gpu_hour_cost, 2.1);
  EXPECT_FALSE(s.arms[1].gpu_hour_cost);
  // Loaded with --gpu-hour-cost 3: fast keeps its own 2.1, slow takes the flag's.
  BoardInput in = load_board_input(dyno::testing::fixture_root(), s.arms, s.cells);
  default_gpu_hour_cost(in.arms, 3.0);
  const Board b = build_board(in, fixed_options());
  EXPECT_EQ(b.gpu_hour_cost, (std::map<std::string, double>{{"fast", 2.1}, {"slow", 3.0}}));
  EXPECT_EQ(b.cells.front().arm("fast")->point.gpu_hour_cost, 2.1);
  EXPECT_EQ(b.cells.front().arm("slow")->point.gpu_hour_cost, 3.0);
  // A bad price names the file and the key.
  for (const char* bad : {"-0.5", "\"2.1\"", "true", "1e999"}) {
    SCOPED_TRACE(bad);
    std::ofstream(spec) << R"({"arms": [{"name": "fast", "runs": "x", "gpu_hour_cost": )" << bad
                        << "}]}";
    try {
      read_board_spec(spec);
      ADD_FAILURE() << "accepted";
    } catch (const CompareError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(spec.string()), std::string::npos) << what;
      if (std::string(bad) != "1e999") {  // Boost.JSON refuses 1e999 as a number itself
        EXPECT_NE(what.find("arms[0].gpu_hour_cost"), std::string::npos) << what;
      }
    }
  }
}

}  // namespace
}  // namespace dyno::compare
