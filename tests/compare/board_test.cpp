// Pairing and the board model: cells, unpaired runs, several arms against a baseline, explicit
// cells from a spec file, repetition cross-checks, record audits, and the chart data.
#include "compare/board.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "compare/chart_data.h"
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
using testing::fixture_root;
using testing::make_run;
using testing::pair_input;
using testing::sequential_traces;
using testing::set_manifest;
using testing::set_path;

std::vector<double> constant(std::size_t n, double v) { return std::vector<double>(n, v); }

TEST(Board, PairsTheFixtureByModelProtocolAndCell) {
  const Board b = build_board(fixture_input(), fixed_options());
  ASSERT_EQ(b.cells.size(), 2u);
  EXPECT_EQ(b.cells[0].id, "stories260K/sweep/c1");
  EXPECT_EQ(b.cells[1].id, "stories260K/sweep/c4");
  EXPECT_EQ(b.cells[1].level_kind, "concurrency");
  EXPECT_EQ(*b.cells[1].level, 4.0);
  EXPECT_EQ(b.baseline, "slow");
  EXPECT_EQ(b.title, "fast vs slow");
  EXPECT_TRUE(b.unpaired.empty());
  // The simulated engine with the shorter step wins every headline figure in every cell.
  for (const auto& t : b.tallies) {
    EXPECT_EQ(t.wins, 2u) << t.metric;
    EXPECT_EQ(t.compared, 2u);
  }
  // The hand-edited answers: c1 differs by one request of twelve (a quality warning).
  const QualityAudit& q = b.cells[0].comparisons[0].quality;
  EXPECT_NEAR(*q.accuracy_delta_pp, 100.0 / 12.0, 1e-9);
  EXPECT_TRUE(q.warning);
  EXPECT_EQ(q.disagreements.size(), 1u);
  // Every fixture record is intact and consistent with its requests.
  for (const auto& f : b.findings) {
    EXPECT_NE(f.type, "record_integrity") << f.message;
    EXPECT_NE(f.type, "summary_mismatch") << f.message;
  }
}

TEST(Board, ListsUnpairedRunsAndNeverDropsThem) {
  // Arm fast has both cells, slow only c1: fast's c4 run is unpaired.
  const Board b = build_board(fixture_input("label=fast", "label=slow,cell=c1"), fixed_options());
  ASSERT_EQ(b.cells.size(), 1u);
  ASSERT_EQ(b.unpaired.size(), 1u);
  EXPECT_EQ(b.unpaired[0].arm, "fast");
  EXPECT_EQ(b.unpaired[0].cell, "stories260K/sweep/c4");
  EXPECT_NE(b.unpaired[0].reason.find("baseline"), std::string::npos);
  EXPECT_EQ(b.status, "incomplete");
  EXPECT_EQ(b.findings.at(0).type, "unpaired_runs");
}

TEST(Board, UnusableRunsAreListed) {
  BoardInput in = fixture_input();
  auto broken = copy_run(in.arms[0].runs[0]);
  broken->summary.reset();
  broken->summary_json = {};
  set_manifest(*broken, "status", "running");
  in.arms[0].runs[0] = broken;
  const Board b = build_board(in, fixed_options());
  bool listed = false;
  for (const auto& u : b.unpaired) listed = listed || u.run_id == broken->run_id;
  EXPECT_TRUE(listed);
}

TEST(Board, EveryArmAgainstTheDeclaredBaseline) {
  const auto a = make_run("ra", "a", sequential_traces(constant(20, 50)));
  const auto b = make_run("rb", "b", sequential_traces(constant(20, 100)));
  const auto c = make_run("rc", "c", sequential_traces(constant(20, 200)));
  BoardInput in;
  in.arms = {{"a", {"x"}, {a}}, {"b", {"x"}, {b}}, {"c", {"x"}, {c}}};
  in.baseline = "b";
  const Board board = build_board(in, BoardOptions{});
  EXPECT_EQ(board.title, "a and c vs b");
  ASSERT_EQ(board.cells.size(), 1u);
  ASSERT_EQ(board.cells[0].comparisons.size(), 2u);
  EXPECT_EQ(board.cells[0].comparisons[0].arm, "a");
  EXPECT_EQ(board.cells[0].comparisons[1].arm, "c");
  EXPECT_NEAR(*board.cells[0].comparisons[0].deltas.at("output_tokens_per_s").value, 100.0, 1e-6);
  EXPECT_NEAR(*board.cells[0].comparisons[1].deltas.at("output_tokens_per_s").value, -50.0, 1e-6);
  // Default baseline: the last arm.
  in.baseline.clear();
  EXPECT_EQ(build_board(in, BoardOptions{}).baseline, "c");
  in.baseline = "nobody";
  EXPECT_THROW(build_board(in, BoardOptions{}), CompareError);
  BoardInput one;
  one.arms = {{"a", {"x"}, {a}}};
  EXPECT_THROW(build_board(one, BoardOptions{}), CompareError);
  BoardInput twice;
  twice.arms = {{"a", {"x"}, {a}}, {"a", {"x"}, {b}}};
  EXPECT_THROW(build_board(twice, BoardOptions{}), CompareError);
}

TEST(Board, RunsOfOneCellFromSeveralCampaignsAreAnError) {
  const auto a1 = make_run("ra1", "a", sequential_traces(constant(12, 50)), 1, "camp-1");
  const auto a2 = make_run("ra2", "a", sequential_traces(constant(12, 50)), 1, "camp-2");
  const auto b = make_run("rb", "b", sequential_traces(constant(12, 60)));
  BoardInput in;
  in.arms = {{"a", {"x"}, {a1, a2}}, {"b", {"x"}, {b}}};
  try {
    build_board(in, BoardOptions{});
    FAIL();
  } catch (const CompareError& e) {
    EXPECT_NE(std::string(e.what()).find("not repetitions of one campaign"), std::string::npos);
  }
}

TEST(Board, ModelAliasesPairDifferentlyNamedModels) {
  auto a = copy_run(make_run("ra", "a", sequential_traces(constant(12, 50))));
  set_manifest(*a, "model.id", "org/Model-7B");
  BoardInput in = pair_input(a, make_run("rb", "b", sequential_traces(constant(12, 60))));
  EXPECT_TRUE(build_board(in, BoardOptions{}).cells.empty());  // "org/Model-7B" vs "m"
  in.model_aliases["org/Model-7B"] = "m";
  EXPECT_EQ(build_board(in, BoardOptions{}).cells.size(), 1u);
}

TEST(Board, SelectionMismatchWithTheCampaignFileIsAFinding) {
  BoardInput in;
  ArmInput a{"a", {"x"}, {}};
  for (int r = 0; r < 3; ++r) {
    a.runs.push_back(make_run("ra" + std::to_string(r), "a",
                              sequential_traces(constant(12, 50.0 + 10.0 * r)), 1, "camp", r + 1,
                              3));
  }
  in.arms = {a, {"b", {"x"}, {make_run("rb", "b", sequential_traces(constant(12, 80)))}}};
  in.campaigns["camp"] =
      json::object{{"cells", json::array{json::object{{"cell", "c1"}, {"selected_run", "ra0"}}}}};
  const Board b = build_board(in, BoardOptions{});
  EXPECT_EQ(b.cells[0].arm("a")->run().run_id, "ra1");  // the median by output tok/s
  bool mismatch = false;
  for (const auto& f : b.findings) mismatch = mismatch || f.type == "selection_mismatch";
  EXPECT_TRUE(mismatch);
  // Re-scored repetitions (dyno rescore) stand for the measured runs they were made from.
  in.campaigns["camp"]["cells"].as_array()[0].as_object()["selected_run"] = "ra1";
  for (auto& run : in.arms[0].runs) {
    auto derived = copy_run(run);
    dyno::record::DerivedFrom from;
    from.run_id = run->run_id;
    from.harness = derived->manifest.harness;
    derived->manifest.derived_from = from;
    derived->manifest_json = dyno::record::manifest_to_json(derived->manifest);
    derived->run_id += "-rescore";
    run = derived;
  }
  const Board d = build_board(in, BoardOptions{});
  EXPECT_EQ(d.cells[0].arm("a")->run().run_id, "ra1-rescore");
  for (const auto& f : d.findings) EXPECT_NE(f.type, "selection_mismatch") << f.message;
}

TEST(Board, SummaryThatDisagreesWithItsRequestsIsAFinding) {
  BoardInput in = fixture_input("label=fast,cell=c1", "label=slow,cell=c1");
  auto r = copy_run(in.arms[1].runs[0]);
  set_path(r->summary_json, "throughput.output_tokens_per_s", 1.0);
  dyno::testing::retype(*r);
  in.arms[1].runs[0] = r;
  const Board b = build_board(in, fixed_options());
  bool found = false;
  for (const auto& f : b.findings) {
    if (f.type == "summary_mismatch" && f.data.at("metric").as_string() == "output_tokens_per_s")
      found = true;
  }
  EXPECT_TRUE(found);
}

TEST(Board, ExplicitCellsFromASpecFile) {
  const dyno::testing::TempDir tmp("dyno-spec");
  const fs::path spec = tmp / "spec.json";
  const auto manifests = scan_manifests(fixture_root());
  // Pair fast's c1 with slow's c4 explicitly (a cross mapping no automatic pairing makes).
  std::string fast_c1, slow_c4;
  for (const auto& m : manifests) {
    const auto label = *string_at(m.manifest, "label");
    const auto cell = *string_at(m.manifest, "workload.protocol.cell");
    if (label == "fast" && cell == "c1") fast_c1 = m.dir.filename().string();
    if (label == "slow" && cell == "c4") slow_c4 = m.dir.filename().string();
  }
  std::ofstream(spec) << R"({"title": "Spec board", "baseline": "slow",
    "arms": [{"name": "fast", "runs": "label=fast"}, {"name": "slow", "runs": ["label=slow"]}],
    "cells": [{"name": "cross", "model": "tiny", "runs": {"fast": ")"
                      << fast_c1 << R"(", "slow": ")" << slow_c4 << R"("}}],
    "policy": {"reported": ["load", "request_count", "input_tokens"]},
    "quality": {"accuracy_pp": 5}})";
  const BoardSpec s = read_board_spec(spec);
  EXPECT_EQ(s.title, "Spec board");
  EXPECT_EQ(s.sha256.size(), 64u);
  ASSERT_EQ(s.cells.size(), 1u);
  BoardInput in = load_board_input(fixture_root(), s.arms, s.cells);
  in.title = s.title;
  in.baseline = s.baseline;
  BoardOptions o = fixed_options();
  for (const auto& n : s.reported) o.policy.set(n, CheckLevel::kReported);
  const Board b = build_board(in, o);
  EXPECT_EQ(b.cells.front().id, "cross");
  EXPECT_EQ(b.cells.front().model, "tiny");
  EXPECT_EQ(b.cells.front().comparisons[0].status, ComparisonStatus::kCompared);
  // The explicitly mapped runs leave automatic pairing: fast's c4 and slow's c1 remain, in
  // cells no other arm has, so they are listed as unpaired.
  EXPECT_EQ(b.cells.size(), 1u);
  EXPECT_EQ(b.unpaired.size(), 2u);
  // Bad spec files name the key.
  std::ofstream(spec) << R"({"arms": [{"name": "x", "runz": []}]})";
  try {
    read_board_spec(spec);
    FAIL();
  } catch (const CompareError& e) {
    EXPECT_NE(std::string(e.what()).find("arms[0].runz"), std::string::npos) << e.what();
  }
  std::ofstream(spec)
      << R"({"arms": [{"name": "x"}], "cells": [{"name": "c", "runs": {"y": "a"}}]})";
  EXPECT_THROW(read_board_spec(spec), CompareError);
  std::ofstream(spec) << "[1]";
  EXPECT_THROW(read_board_spec(spec), CompareError);
  fs::remove(spec);
}

TEST(Arms, ParseAndMerge) {
  const ArmSpec a = parse_arm("vllm=label=x,protocol=sweep");
  EXPECT_EQ(a.name, "vllm");
  EXPECT_EQ(a.selectors, std::vector<std::string>{"label=x,protocol=sweep"});
  EXPECT_THROW(parse_arm("novalue="), CompareError);
  EXPECT_THROW(parse_arm("=x"), CompareError);
  EXPECT_THROW(parse_arm("bad name=x"), CompareError);
  const auto merged = merge_arms({parse_arm("a=1"), parse_arm("b=2"), parse_arm("a=3")});
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].selectors, (std::vector<std::string>{"1", "3"}));
}

TEST(ChartData, ServesTheChartsFromTheBoard) {
  const Board b = build_board(fixture_input(), fixed_options());
  const auto series = figure_series(b, "output_tokens_per_s");
  ASSERT_EQ(series.size(), 2u);  // one model, two arms
  EXPECT_EQ(series[0].arm, "fast");
  ASSERT_EQ(series[0].points.size(), 2u);
  EXPECT_EQ(series[0].points[0].level, 1.0);
  EXPECT_EQ(series[0].points[1].level, 4.0);
  EXPECT_EQ(series[0].points[1].value,
            *b.cells[1].arm("fast")->selected_figures().at("output_tokens_per_s"));
  const auto grid = delta_grid(b, "output_tokens_per_s");
  ASSERT_EQ(grid.size(), 2u);
  EXPECT_TRUE(grid[0].compared);
  EXPECT_EQ(grid[0].delta.verdict, Verdict::kWin);
  const auto trade = serving_tradeoff(b);
  ASSERT_EQ(trade.size(), 2u);
  EXPECT_GT(trade[0].points[0].per_user_decode_tok_s, 0.0);
  const auto lat = latency_samples(b.cells[0], *b.cells[0].arm("slow"));
  EXPECT_EQ(lat.e2e_ms.size(), 12u);
  EXPECT_TRUE(std::is_sorted(lat.e2e_ms.begin(), lat.e2e_ms.end()));
  EXPECT_EQ(all_latency_samples(b).size(), 4u);
  const auto power = power_timelines(b);
  ASSERT_EQ(power.size(), 4u);  // one GPU per selected run (the host source reports no power)
  EXPECT_EQ(power[0].source, "nvml");
  EXPECT_FALSE(power[0].points.empty());
  EXPECT_TRUE(power[0].window_begin_s.has_value());
  EXPECT_EQ(power[0].points[0].power_w, 300.0);
  const auto energy = energy_timelines(b);
  ASSERT_EQ(energy.size(), 4u);  // the fake GPU's counter; the host source has none
  EXPECT_EQ(energy[0].source, "nvml");
  EXPECT_EQ(energy[0].run_id, power[0].run_id);
  EXPECT_EQ(energy[0].points.front().energy_j, 0.0);
  EXPECT_EQ(energy[0].window_begin_s, power[0].window_begin_s);
  for (const auto& e : energy) {
    for (std::size_t i = 1; i < e.points.size(); ++i) {
      EXPECT_GE(e.points[i].energy_j, e.points[i - 1].energy_j) << e.run_id;
    }
  }
}

TEST(ChartData, EnergyTimelinesAddTheCountersIncrementsAndSkipAReset) {
  namespace fs = std::filesystem;
  const dyno::testing::TempDir tmp("dyno-chart-data");
  const fs::path dir = tmp.path();
  std::ofstream(dir / "manifest.json") << R"({"schema_version": 1, "run_id": "x"})";
  std::ofstream(dir / "telemetry.jsonl")
      << R"({"t_ns":0,"source":"nvml","device":0,"energy_j":1000.0,"power_instant_w":200.0})"
         "\n"
      << R"({"t_ns":100000000,"source":"rapl","device":0,"energy_j":50.0})"
         "\n"
      << R"({"t_ns":500000000,"source":"nvml","device":0,"energy_j":1100.0})"
         "\n"
      << R"({"t_ns":1000000000,"source":"nvml","device":0,"energy_j":20.0})"
         "\n"  // reset
      << R"({"t_ns":1500000000,"source":"nvml","device":0,"energy_j":120.0})"
         "\n"
      << R"({"t_ns":2000000000,"source":"host","device":0,"utilization_pct":5.0})"
         "\n";
  auto a = testing::copy_run(testing::make_run("a", "a", testing::sequential_traces({10, 20, 30})));
  a->dir = dir;
  a->has_telemetry = true;
  auto b = testing::make_run("b", "b", testing::sequential_traces({10, 20, 30}));
  const Board bd = build_board(testing::pair_input(a, b), fixed_options());
  const auto energy = energy_timelines(bd);
  ASSERT_EQ(energy.size(), 2u);  // nvml 0 and rapl 0 of arm a; arm b has no telemetry
  const auto& gpu = energy[0].source == "nvml" ? energy[0] : energy[1];
  ASSERT_EQ(gpu.points.size(), 4u);
  EXPECT_EQ(gpu.points[1].energy_j, 100.0);
  EXPECT_EQ(gpu.points[2].energy_j, 100.0);  // the reset adds nothing
  EXPECT_EQ(gpu.points[3].energy_j, 200.0);
  EXPECT_DOUBLE_EQ(gpu.points[3].t_s, 1.5);
  const auto power = power_timelines(bd);
  ASSERT_EQ(power.size(), 1u);
  EXPECT_EQ(power[0].points.size(), 1u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dyno::compare
