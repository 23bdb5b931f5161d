// The frontier and the cost on a board made by the `dyno` binary from two simulated engines:
// board.json's cost is the formula over the board's own output tok/s and GPU count, an arm's
// own price in the spec wins over --gpu-hour-cost, the frontier chart's description says of
// every point what board.json says, and a bad price is exit 2 naming the flag or the key.
#include <cmath>
#include <fstream>

#include "integration/integration_fixture.h"

using namespace dyno::integration;  // the fixture, fs, json, Child, read_json(l)

namespace {

class BoardFrontier : public Integration {
 protected:
  /// Two arms of a sweep: `base` on the small-gpu profile, `fast` with a faster step.
  void run_arms() {
    const fs::path fast = dir_ / "fast.json";
    std::ofstream(fast) << R"({"base": "small-gpu", "step_base_s": 0.002})";
    for (const auto& [label, profile] : std::vector<std::pair<std::string, std::string>>{
             {"base", "small-gpu"}, {"fast", fast.string()}}) {
      const Outcome o = dyno({"sweep", "-q", "--runs-root", runs(), "--profile", profile, "--label",
                              label, "--concurrencies", "1,4", "--min-requests", "12", "--per-slot",
                              "3", "--output-tokens", "16", "--input-tokens", "96"});
      ASSERT_EQ(o.exit_code, 0) << o.err;
    }
  }

  std::vector<std::string> arms() const {
    return {"--runs-root", runs(), "--arm", "fast=label=fast", "--arm", "base=label=base"};
  }

  /// board.json's cost of every point is the formula over its own figures, at `price(arm)`.
  void check_costs(const json::object& board, const std::map<std::string, double>& price) {
    std::size_t points = 0;
    for (const auto& cv : board.at("cells").as_array()) {
      for (const auto& av : cv.at("arms").as_array()) {
        const std::string arm(av.at("arm").as_string());
        SCOPED_TRACE(std::string(cv.at("id").as_string()) + " " + arm);
        const json::object& figures = av.at("figures").as_object();
        const json::object& p = av.at("operating_point").as_object();
        const double out = figures.at("output_tokens_per_s").to_number<double>();
        const double in = figures.at("input_tokens_per_s").to_number<double>();
        const double gpus = p.at("gpus").to_number<double>();
        const auto in_record = p.at("gpus_in_record").to_number<std::int64_t>();
        EXPECT_EQ(gpus, in_record == 0 ? 1.0 : static_cast<double>(in_record));
        EXPECT_NEAR(p.at("output_tokens_per_s_per_gpu").to_number<double>(), out / gpus,
                    1e-9 * out);
        EXPECT_EQ(p.at("gpu_hour_cost").to_number<double>(), price.at(arm));
        const double want_out = price.at(arm) * gpus / 3600.0 / out * 1e6;
        const double want_total = price.at(arm) * gpus / 3600.0 / (out + in) * 1e6;
        EXPECT_NEAR(p.at("usd_per_mtok_output").to_number<double>(), want_out, 1e-9 * want_out);
        EXPECT_NEAR(p.at("usd_per_mtok_total").to_number<double>(), want_total, 1e-9 * want_total);
        ++points;
      }
    }
    EXPECT_EQ(points, 4u);  // two cells, two arms
    for (const auto& a : board.at("arms").as_array()) {
      EXPECT_EQ(a.at("gpu_hour_cost").to_number<double>(),
                price.at(std::string(a.at("name").as_string())));
    }
  }

  /// The frontier chart's description says of every point what board.json says.
  void check_frontier_desc(const fs::path& dir) {
    const json::object board = read_json(dir / "board.json");
    const std::string svg = Child::slurp((dir / "frontier.svg").string());
    const std::string desc =
        svg.substr(svg.find("<desc>"), svg.find("</desc>") - svg.find("<desc>"));
    std::size_t on = 0;
    for (const auto& cv : board.at("cells").as_array()) {
      const std::string model(cv.at("model").as_string());
      const std::string label = "c=" + std::to_string(cv.at("level").to_number<int>());
      for (const auto& av : cv.at("arms").as_array()) {
        const std::string arm(av.at("arm").as_string());
        const std::string name = arm == "base" ? "base (baseline)" : arm;
        const json::object& p = av.at("operating_point").as_object();
        const bool flag = p.at("on_frontier").as_bool();
        on += flag ? 1 : 0;
        const std::string head = model + " · " + name + " · " + label + ": x ";
        const std::size_t at = desc.find(head);
        ASSERT_NE(at, std::string::npos) << head << " not in " << desc;
        const std::string item = desc.substr(at, desc.find(';', at) - at);
        EXPECT_NE(item.find(flag ? "on the frontier" : "dominated"), std::string::npos) << item;
        char y[64];
        std::snprintf(y, sizeof y, ", y %.1f,",
                      p.at("output_tokens_per_s_per_gpu").to_number<double>());
        EXPECT_NE(item.find(y), std::string::npos) << item << " wants" << y;
      }
    }
    EXPECT_GE(on, 1u);
  }
};

TEST_F(BoardFrontier, CostIsTheFormulaOverTheBoardsOwnFiguresAndTheChartAgrees) {
  run_arms();
  // --gpu-hour-cost prices every arm.
  const fs::path flag_board = dir_ / "board-flag";
  std::vector<std::string> args = {"report"};
  for (const auto& a : arms()) args.push_back(a);
  for (const auto& a : {"--gpu-hour-cost", "2.5", "--out"}) args.push_back(a);
  args.push_back(flag_board.string());
  Outcome o = dyno(args);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  check_costs(read_json(flag_board / "board.json"), {{"fast", 2.5}, {"base", 2.5}});
  check_frontier_desc(flag_board);
  const std::string readme = Child::slurp((flag_board / "README.md").string());
  EXPECT_NE(readme.find("## Frontier and cost"), std::string::npos);
  EXPECT_NE(readme.find("frontier.png"), std::string::npos);
  EXPECT_NE(readme.find("$/Mtok output"), std::string::npos);
  const json::object b = read_json(flag_board / "board.json");
  const bool cpu_host = b.at("cells")
                            .as_array()[0]
                            .at("arms")
                            .as_array()[0]
                            .at("operating_point")
                            .at("gpus_in_record") == 0;
  if (cpu_host) {
    EXPECT_NE(readme.find("Per GPU: 1 on a host without GPUs"), std::string::npos);
    const std::string svg = Child::slurp((flag_board / "frontier.svg").string());
    EXPECT_NE(svg.find("Per GPU: 1 on a host without GPUs."), std::string::npos);
  }

  // A spec's arm price wins over the flag; the flag prices the other arm.
  const fs::path spec = dir_ / "spec.json";
  std::ofstream(spec) << R"({"arms": [{"name": "fast", "runs": "label=fast", "gpu_hour_cost": 1.2},
    {"name": "base", "runs": "label=base"}]})";
  const fs::path spec_board = dir_ / "board-spec";
  o = dyno({"report", "--runs-root", runs(), "--spec", spec.string(), "--gpu-hour-cost", "2.5",
            "--out", spec_board.string()});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  check_costs(read_json(spec_board / "board.json"), {{"fast", 1.2}, {"base", 2.5}});

  // The console answers with the section when asked a price; without one, no cost anywhere.
  args = {"compare"};
  for (const auto& a : arms()) args.push_back(a);
  args.push_back("--gpu-hour-cost");
  args.push_back("2.5");
  o = dyno(args);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("Frontier and cost"), std::string::npos) << o.out;
  args = {"compare"};
  for (const auto& a : arms()) args.push_back(a);
  args.push_back("--json");
  o = dyno(args);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out.find("usd_per_mtok"), std::string::npos);
  EXPECT_EQ(o.out.find("gpu_hour_cost"), std::string::npos);
  EXPECT_NE(o.out.find("\"on_frontier\""), std::string::npos);

  // A price that is no price: exit 2, naming the flag or the spec's key.
  for (const char* bad : {"-1", "nan", "inf", "abc", "1e7"}) {
    args = {"compare"};
    for (const auto& a : arms()) args.push_back(a);
    args.push_back("--gpu-hour-cost");
    args.push_back(bad);
    o = dyno(args);
    EXPECT_EQ(o.exit_code, 2) << bad;
    EXPECT_NE(o.err.find("--gpu-hour-cost"), std::string::npos) << bad << ": " << o.err;
  }
  std::ofstream(spec) << R"({"arms": [{"name": "fast", "runs": "label=fast", "gpu_hour_cost": -3},
    {"name": "base", "runs": "label=base"}]})";
  o = dyno({"compare", "--runs-root", runs(), "--spec", spec.string()});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("spec.json"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("arms[0].gpu_hour_cost"), std::string::npos) << o.err;
}

}  // namespace
