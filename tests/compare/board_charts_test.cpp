// The board's charts: which charts a board gets, from which figures, with stable arm styles;
// every chart draws as SVG and PNG (the PNG at the size asked for) from 1 model × 1 cell up to
// 10 models × 8 cells; the board directory lists, references and inlines them with unique ids.
// Chart bytes are not compared with golden files (they depend on the cairo and font versions).
#include "report/board_charts.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <variant>

#include "chart/chart.h"
#include "compare/chart_data.h"
#include "digest/digest.h"
#include "record/run_writer.h"
#include "report/board_document.h"
#include "report/board_files.h"
#include "report/format.h"
#include "temp_dir.h"
#include "test_records.h"

namespace dyno::report {
namespace {

namespace fs = std::filesystem;

using dyno::testing::count;
using dyno::testing::slurp;

/// Width and height from a PNG's IHDR chunk (the first chunk, right after the signature).
chart::Size png_size(const std::string& png) {
  EXPECT_GE(png.size(), 24u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(png.substr(12, 4), "IHDR");
  const auto be32 = [&png](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(png[at + i]);
    return static_cast<int>(v);
  };
  return {be32(16), be32(20)};
}

std::vector<std::string> stems(const std::vector<BoardChart>& charts) {
  std::vector<std::string> out;
  for (const auto& c : charts) out.push_back(c.stem);
  return out;
}

const BoardChart& by_stem(const std::vector<BoardChart>& charts, const std::string& stem) {
  for (const auto& c : charts) {
    if (c.stem == stem) return c;
  }
  throw std::runtime_error("no chart " + stem);
}

/// Every series' (name, style) of a chart; CDF samples included.
std::vector<std::pair<std::string, std::size_t>> styles(const chart::Chart& c) {
  std::vector<std::pair<std::string, std::size_t>> out;
  std::visit(
      [&out](const auto& spec) {
        using T = std::decay_t<decltype(spec)>;
        if constexpr (std::is_same_v<T, chart::Cdf>) {
          for (const auto& p : spec.panels) {
            for (const auto& s : p.samples) out.emplace_back(s.name, s.style.value_or(99));
          }
        } else if constexpr (!std::is_same_v<T, chart::Heatmap>) {
          for (const auto& p : spec.panels) {
            for (const auto& s : p.series) out.emplace_back(s.name, s.style.value_or(99));
          }
        }
      },
      c);
  return out;
}

/// Every PNG has the size asked for: default_size, and another one.
void expect_draws(const BoardChart& c) {
  SCOPED_TRACE(c.stem);
  const Figure f = render_figure(c);
  EXPECT_EQ(f.stem, c.stem);
  EXPECT_FALSE(f.title.empty());
  EXPECT_FALSE(f.caption.empty());
  EXPECT_EQ(f.svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(f.svg.find("<svg"), std::string::npos);
  const chart::Size want = chart::default_size(c.chart);
  const chart::Size got = png_size(f.png);
  EXPECT_EQ(got.width, want.width);
  EXPECT_EQ(got.height, want.height);
  // Every title, label and legend name whole at the default size: nothing drawn with "…".
  EXPECT_EQ(chart::shortened_texts(c.chart, want.width, want.height), std::vector<std::string>{});
  const chart::Size asked = png_size(chart::render(c.chart, chart::Format::kPng, 800, 500));
  EXPECT_EQ(asked.width, 800);
  EXPECT_EQ(asked.height, 500);
}

class BoardCharts : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = dyno::testing::make_temp_dir("dyno-board-charts"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(BoardCharts, TheFixtureBoardGetsEveryChart) {
  const compare::Board b = compare::build_board(testing::fixture_input(), testing::fixed_options());
  const auto charts = board_charts(b);
  EXPECT_EQ(stems(charts),
            (std::vector<std::string>{
                "throughput-by-concurrency", "decode-per-user-by-concurrency", "delta-heatmap",
                "serving-tradeoff", "frontier", "input-throughput-by-concurrency",
                "prefill-per-user-by-concurrency", "prefill-delta-heatmap", "e2e-latency-cdf",
                "ttft-cdf", "power-timeline", "energy-timeline"}));
  EXPECT_EQ(by_stem(charts, "delta-heatmap").section, compare::Section::kThroughput);
  EXPECT_EQ(by_stem(charts, "decode-per-user-by-concurrency").section,
            compare::Section::kThroughput);
  EXPECT_EQ(by_stem(charts, "input-throughput-by-concurrency").section, compare::Section::kPrefill);
  EXPECT_EQ(by_stem(charts, "prefill-delta-heatmap").section, compare::Section::kPrefill);
  EXPECT_EQ(by_stem(charts, "ttft-cdf").section, compare::Section::kLatency);
  EXPECT_EQ(by_stem(charts, "power-timeline").section, compare::Section::kGpu);
  EXPECT_EQ(by_stem(charts, "energy-timeline").section, compare::Section::kEnergy);

  // Each arm keeps its style (its index in the board) in every chart.
  for (const auto& c : charts) {
    for (const auto& [name, style] : styles(c.chart)) {
      EXPECT_EQ(style, name.starts_with("fast") ? 0u : 1u) << c.stem << " " << name;
      EXPECT_TRUE(name == "fast" || name == "slow (baseline)") << c.stem << " " << name;
    }
  }

  // The throughput chart plots the board's figures.
  const auto& line = std::get<chart::LineChart>(by_stem(charts, "throughput-by-concurrency").chart);
  ASSERT_EQ(line.panels.size(), 1u);
  EXPECT_EQ(line.panels[0].title, "stories260K");
  EXPECT_EQ(line.x.unit, "requests in flight");
  EXPECT_EQ(line.y.unit, "tok/s");
  ASSERT_EQ(line.panels[0].series.size(), 2u);
  ASSERT_EQ(line.panels[0].series[0].points.size(), 2u);
  EXPECT_EQ(line.panels[0].series[0].points[1].x, 4.0);
  EXPECT_EQ(line.panels[0].series[0].points[1].y,
            *b.cells[1].arm("fast")->selected_figures().at("output_tokens_per_s"));

  // The heatmap: Δ output tok/s per cell with its verdict, on a scale that says which way is
  // better.
  const auto& h = std::get<chart::Heatmap>(by_stem(charts, "delta-heatmap").chart);
  EXPECT_EQ(h.rows, (std::vector<std::string>{"stories260K"}));
  EXPECT_EQ(h.columns, (std::vector<std::string>{"c=1", "c=4"}));
  const auto grid = compare::delta_grid(b, "output_tokens_per_s");
  ASSERT_EQ(grid.size(), 2u);
  EXPECT_EQ(h.values[0][0], grid[0].delta.value);
  EXPECT_EQ(h.values[0][1], grid[1].delta.value);
  EXPECT_EQ(h.cell_labels, (std::vector<std::vector<std::string>>{{"win", "win"}}));
  EXPECT_EQ(h.positive_label, "fast better");
  EXPECT_EQ(h.negative_label, "slow better");
  EXPECT_EQ(h.format.suffix, "%");
  EXPECT_FALSE(h.limit.has_value());  // symmetric around 0 from the data
  EXPECT_NE(by_stem(charts, "delta-heatmap").caption.find("throughput.output_tokens_per_s"),
            std::string::npos);

  // The prefill heatmap beside it: Δ each cell's prefill figure (here the client's: the fixture's
  // engine reported no timings), labelled with its source, the same layout and scale rules.
  const BoardChart& prefill_heat = by_stem(charts, "prefill-delta-heatmap");
  const auto& ph = std::get<chart::Heatmap>(prefill_heat.chart);
  for (const auto& c : b.cells) EXPECT_EQ(c.prefill_figure, "prefill_rate_client_p50");
  const auto prefill_grid = compare::delta_grid(b, "prefill_rate_client_p50");
  ASSERT_EQ(prefill_grid.size(), 2u);
  EXPECT_EQ(ph.rows, h.rows);
  EXPECT_EQ(ph.columns, h.columns);
  ASSERT_TRUE(prefill_grid[0].delta.value.has_value());
  EXPECT_EQ(ph.values[0][0], prefill_grid[0].delta.value);
  EXPECT_EQ(ph.values[0][1], prefill_grid[1].delta.value);
  for (std::size_t k = 0; k < 2; ++k) {
    const compare::Verdict v = prefill_grid[k].delta.verdict;
    ASSERT_TRUE(v == compare::Verdict::kWin || v == compare::Verdict::kTie ||
                v == compare::Verdict::kLoss);
    EXPECT_EQ(ph.cell_labels[0][k], std::string(compare::to_string(v)) + " · client");
  }
  EXPECT_EQ(ph.scale_title, "Δ prefill tok/s (%)");
  EXPECT_NE(ph.subtitle.find("Δ prefill tok/s in % of slow"), std::string::npos) << ph.subtitle;
  EXPECT_NE(ph.title.find("Prefill rate"), std::string::npos) << ph.title;
  EXPECT_EQ(ph.min_limit, h.min_limit);
  EXPECT_EQ(ph.positive_label, h.positive_label);
  EXPECT_NE(prefill_heat.caption.find("rates_tok_s.prefill_rate_client.p50"), std::string::npos)
      << prefill_heat.caption;
  EXPECT_EQ(prefill_heat.caption.find("input_tokens_per_s"), std::string::npos);
  EXPECT_NE(prefill_heat.caption.find("20261130T004322Z"), std::string::npos);
  {
    // The heatmap draws the cell's prefill figure, not the aggregate input rate: plant both.
    compare::Board planted = b;
    planted.cells[1].comparisons[0].deltas["prefill_rate_client_p50"].value = -12.5;
    planted.cells[1].comparisons[0].deltas["input_tokens_per_s"].value = 99.0;
    const auto again = board_charts(planted);
    const auto& planted_heat =
        std::get<chart::Heatmap>(by_stem(again, "prefill-delta-heatmap").chart);
    EXPECT_EQ(planted_heat.values[0][1], -12.5);
    EXPECT_EQ(std::get<chart::Heatmap>(by_stem(again, "delta-heatmap").chart).values, h.values);
  }

  // Decode scaling: per-user decode tok/s p50 (not aggregate output) over concurrency.
  const BoardChart& scaling = by_stem(charts, "decode-per-user-by-concurrency");
  const auto& d = std::get<chart::LineChart>(scaling.chart);
  EXPECT_EQ(d.title, "Decode scaling: per-user decode rate vs concurrency");
  EXPECT_EQ(d.x.scale, chart::Scale::kLog2);
  EXPECT_EQ(d.y.title, "Per-user decode, p50");
  ASSERT_EQ(d.panels.size(), 1u);
  ASSERT_EQ(d.panels[0].series.size(), 2u);
  for (std::size_t arm = 0; arm < 2; ++arm) {
    const auto& series = d.panels[0].series[arm];
    const std::string name = arm == 0 ? "fast" : "slow";
    ASSERT_EQ(series.points.size(), 2u);
    for (std::size_t cell = 0; cell < 2; ++cell) {
      const auto& figures = b.cells[cell].arm(name)->selected_figures();
      EXPECT_EQ(series.points[cell].x, *b.cells[cell].level);
      EXPECT_EQ(series.points[cell].y, *figures.at("decode_rate_per_user_p50"));
      EXPECT_NE(series.points[cell].y, *figures.at("output_tokens_per_s"));
    }
  }
  EXPECT_NE(scaling.caption.find("rates_tok_s.decode_rate_per_user.p50"), std::string::npos);
  EXPECT_NE(scaling.caption.find("each concurrency cell"), std::string::npos);

  // Trade-off points are labelled by level; the power timeline has the service window.
  const auto& t = std::get<chart::TradeOff>(by_stem(charts, "serving-tradeoff").chart);
  EXPECT_EQ(t.panels[0].series[0].points[0].label, "c=1");
  EXPECT_EQ(t.y.title, "Aggregate output");
  const auto& p = std::get<chart::Timeline>(by_stem(charts, "power-timeline").chart);
  ASSERT_EQ(p.panels.size(), 4u);  // two cells × one GPU × two arms
  EXPECT_EQ(p.panels[0].title, "c=1 · GPU 0 · fast");
  ASSERT_EQ(p.panels[0].windows.size(), 1u);
  EXPECT_EQ(p.y.unit, "W");
  // Captions say what and from which runs.
  EXPECT_NE(by_stem(charts, "throughput-by-concurrency").caption.find("20261130T004322Z"),
            std::string::npos);

  for (const auto& c : charts) expect_draws(c);
}

/// The README's table rows whose first three cells are (model, cell, arm).
std::vector<std::string> frontier_row(const std::string& readme, const std::string& model,
                                      const std::string& cell, const std::string& arm) {
  std::istringstream in(readme);
  std::string line;
  const std::string lead = "| " + model + " | " + cell + " | " + arm + " | ";
  while (std::getline(in, line)) {
    if (line.rfind(lead, 0) != 0) continue;
    std::vector<std::string> cells;
    std::size_t pos = 2;
    for (std::size_t bar = line.find(" | ", pos); bar != std::string::npos;
         bar = line.find(" | ", pos)) {
      cells.push_back(line.substr(pos, bar - pos));
      pos = bar + 3;
    }
    cells.push_back(line.substr(pos, line.rfind(" |") - pos));
    return cells;
  }
  return {};
}

// Same question, same answer: the frontier chart's points, its SVG description, the README's
// table and board.json say the same of every operating point, as the board holds it.
TEST_F(BoardCharts, TheFrontierChartTheTableAndTheLedgerAgreePointByPoint) {
  compare::BoardInput in = testing::fixture_input();
  in.arms[0].gpu_hour_cost = 2.5;  // fast priced, slow not
  const compare::Board b = compare::build_board(in, testing::fixed_options());
  const auto charts = board_charts(b);
  const BoardChart& fc = by_stem(charts, "frontier");
  EXPECT_EQ(fc.section, compare::Section::kFrontier);
  const auto& f = std::get<chart::Frontier>(fc.chart);
  EXPECT_EQ(f.x.title, "Per-user decode, p50");
  EXPECT_EQ(f.y.title, "Output per GPU");
  EXPECT_EQ(f.note.find("host without GPUs"), std::string::npos);  // every record has a GPU
  ASSERT_EQ(f.panels.size(), 1u);
  ASSERT_EQ(f.panels[0].series.size(), 2u);
  const Figure fig = render_figure(fc);
  const std::vector<Figure> figures = board_figures(b);
  const std::string readme = to_markdown(board_document(b, figures, DocumentKind::kFull), figures);
  EXPECT_NE(readme.find("## Frontier and cost"), std::string::npos);
  EXPECT_NE(readme.find("Prices: fast $2.50 per GPU-hour, slow no price."), std::string::npos);
  const boost::json::object ledger = boost::json::parse(board_json(b, figures)).as_object();
  std::size_t seen = 0, on = 0;
  for (const auto& series : f.panels[0].series) {
    const std::string arm = series.name.substr(0, series.name.find(' '));
    ASSERT_EQ(series.points.size(), 2u);
    for (std::size_t k = 0; k < 2; ++k) {
      const auto& pt = series.points[k];
      const compare::Cell& cell = b.cells[k];
      const compare::OperatingPoint& op = cell.arm(arm)->point;
      SCOPED_TRACE(cell.id + " " + arm);
      EXPECT_EQ(pt.label, k == 0 ? "c=1" : "c=4");
      EXPECT_EQ(pt.x, *op.per_user_tok_s);
      EXPECT_EQ(pt.y, *op.output_tok_s_per_gpu);
      EXPECT_EQ(pt.on_frontier, *op.on_frontier);
      on += pt.on_frontier ? 1 : 0;
      // The SVG's description says it point by point.
      const std::string flag = pt.on_frontier ? "on the frontier" : "dominated";
      EXPECT_NE(fig.svg.find("stories260K · " + series.name + " · " + pt.label + ": x "),
                std::string::npos);
      const std::size_t at = fig.svg.find(series.name + " · " + pt.label + ": x ");
      ASSERT_NE(at, std::string::npos);
      const std::string item = fig.svg.substr(at, fig.svg.find(';', at) - at);
      EXPECT_NE(item.find(flag), std::string::npos) << item;
      EXPECT_NE(item.find("1 GPU"), std::string::npos) << item;
      // The table: the same figures and flag (and cost, the chart's detail says the same).
      const auto row = frontier_row(readme, "stories260K", cell.name, arm);
      ASSERT_EQ(row.size(), 10u) << readme;
      EXPECT_EQ(row[3], "1");
      EXPECT_EQ(row[4], number(op.output_tok_s_per_gpu, 1));
      EXPECT_EQ(row[5], number(op.per_user_tok_s, 1));
      EXPECT_EQ(row[6], flag);
      EXPECT_EQ(row[8], usd(op.usd_per_mtok_output));
      EXPECT_EQ(row[9], usd(op.usd_per_mtok_total));
      EXPECT_NE(item.find(usd(op.usd_per_mtok_output) + "/Mtok output"), std::string::npos) << item;
      if (arm == "fast") {
        EXPECT_NE(row[8], "n/a");
      } else {
        EXPECT_EQ(row[8], "n/a");  // slow has no price: nothing invented
      }
      // board.json: the same point.
      for (const auto& cv : ledger.at("cells").as_array()) {
        if (cv.at("id").as_string() != cell.id) continue;
        for (const auto& av : cv.at("arms").as_array()) {
          if (av.at("arm").as_string() != arm) continue;
          const auto& o = av.at("operating_point").as_object();
          EXPECT_EQ(o.at("on_frontier").as_bool(), pt.on_frontier);
          EXPECT_EQ(o.at("output_tokens_per_s_per_gpu").to_number<double>(), pt.y);
          EXPECT_EQ(o.at("decode_rate_per_user_p50").to_number<double>(), pt.x);
          if (op.usd_per_mtok_output) {
            EXPECT_EQ(o.at("usd_per_mtok_output").to_number<double>(), *op.usd_per_mtok_output);
          } else {
            EXPECT_TRUE(o.at("usd_per_mtok_output").is_null());
          }
          ++seen;
        }
      }
    }
  }
  EXPECT_EQ(seen, 4u);
  EXPECT_GE(on, 1u);  // some point is always on the frontier
  expect_draws(fc);
}

// A record that counts no GPU is normalised by 1, and the chart and the table say so; a record
// of two GPUs is divided by two. Without a price there is no cost anywhere.
TEST_F(BoardCharts, PerGpuIsTheRecordsGpuCountAndOneOnAHostWithoutGpus) {
  compare::BoardInput in = testing::fixture_input();
  for (auto& arm : in.arms) {
    for (auto& r : arm.runs) {
      auto copy = testing::copy_run(r);
      boost::json::array gpus;
      if (arm.name == "fast") {
        const auto& one = copy->manifest_json.at("hardware").at("gpus").as_array().at(0);
        gpus = {one, one};
      }
      testing::set_manifest(*copy, "hardware.gpus", gpus);
      r = copy;
    }
  }
  const compare::Board b = compare::build_board(in, testing::fixed_options());
  for (const auto& cell : b.cells) {
    const auto& fast = cell.arm("fast")->point;
    const auto& slow = cell.arm("slow")->point;
    EXPECT_EQ(fast.gpus, 2.0);
    EXPECT_EQ(fast.gpus_in_record, 2u);
    EXPECT_DOUBLE_EQ(*fast.output_tok_s_per_gpu,
                     *cell.arm("fast")->selected_figures().at("output_tokens_per_s") / 2.0);
    EXPECT_EQ(slow.gpus, 1.0);
    EXPECT_EQ(slow.gpus_in_record, 0u);
    EXPECT_EQ(slow.output_tok_s_per_gpu,
              cell.arm("slow")->selected_figures().at("output_tokens_per_s"));
  }
  const auto charts = board_charts(b);
  const auto& f = std::get<chart::Frontier>(by_stem(charts, "frontier").chart);
  EXPECT_NE(f.note.find("Per GPU: 1 on a host without GPUs."), std::string::npos) << f.note;
  const std::vector<Figure> figures = board_figures(b);
  const std::string readme = to_markdown(board_document(b, figures, DocumentKind::kFull), figures);
  EXPECT_NE(readme.find("Per GPU: 1 on a host without GPUs"), std::string::npos);
  EXPECT_EQ(frontier_row(readme, "stories260K", "c1", "slow").at(3), "1 (none counted)");
  EXPECT_EQ(frontier_row(readme, "stories260K", "c1", "fast").at(3), "2");
  EXPECT_EQ(frontier_row(readme, "stories260K", "c1", "fast").size(), 7u);  // no cost columns
  EXPECT_EQ(readme.find("$/Mtok"), std::string::npos);
  const std::string json = board_json(b, figures);
  EXPECT_EQ(json.find("usd_per_mtok"), std::string::npos);
  EXPECT_EQ(json.find("gpu_hour_cost"), std::string::npos);
  EXPECT_EQ(board_csv(b).find("usd_per_mtok"), std::string::npos);
  EXPECT_NE(board_csv(b).find("output_tokens_per_s_per_gpu"), std::string::npos);
}

TEST_F(BoardCharts, TheBoardDirectoryListsReferencesAndInlinesThem) {
  // The fixture's fast c4 run answered q00 with a planted <script>; the model's name too.
  compare::BoardInput in = testing::fixture_input();
  for (auto& arm : in.arms) {
    for (auto& r : arm.runs) {
      auto copy = testing::copy_run(r);
      testing::set_manifest(*copy, "model.id", "<script>alert(1)</script> javascript:x");
      r = copy;
    }
  }
  const compare::Board b = compare::build_board(in, testing::fixed_options());
  const std::vector<Figure> figures = board_figures(b);
  ASSERT_EQ(figures.size(), 12u);
  const auto names = write_board(dir_, b, figures);
  EXPECT_EQ(names.size(), 4u + 2u * figures.size() + 1u);
  EXPECT_EQ(names.back(), "SHA256SUMS");

  std::istringstream sums(slurp(dir_ / "SHA256SUMS"));
  std::set<std::string> listed;
  std::string line;
  while (std::getline(sums, line)) {
    const std::string name = line.substr(66);
    EXPECT_EQ(line.substr(0, 64), digest::sha256_hex(slurp(dir_ / name))) << name;
    listed.insert(name);
  }
  const std::string readme = slurp(dir_ / "README.md");
  const std::string html = slurp(dir_ / "report.html");
  const std::string ledger = slurp(dir_ / "board.json");
  for (const auto& f : figures) {
    SCOPED_TRACE(f.stem);
    EXPECT_EQ(listed.count(f.stem + ".svg"), 1u);
    EXPECT_EQ(listed.count(f.stem + ".png"), 1u);
    EXPECT_EQ(slurp(dir_ / (f.stem + ".svg")), f.svg);
    EXPECT_EQ(slurp(dir_ / (f.stem + ".png")), f.png);
    EXPECT_NE(readme.find("](" + f.stem + ".png)"), std::string::npos);
    // Inlined as SVG, its ids prefixed with its stem.
    EXPECT_NE(html.find(chart::inline_svg(f.svg, "svg-" + f.stem)), std::string::npos);
    EXPECT_NE(ledger.find("\"svg_sha256\": \"" + digest::sha256_hex(f.svg) + "\""),
              std::string::npos);
  }
  // No two charts share an id, and every reference finds its element.
  std::multiset<std::string> ids;
  const std::regex id_re(R"re(\sid="([^"]*)")re");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), id_re);
       it != std::sregex_iterator(); ++it) {
    ids.insert((*it)[1].str());
  }
  for (const auto& id : ids) EXPECT_EQ(ids.count(id), 1u) << id;
  const std::regex ref_re(R"re(href="#([^"]*)")re");
  std::size_t refs = 0;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), ref_re);
       it != std::sregex_iterator(); ++it, ++refs) {
    EXPECT_EQ(ids.count((*it)[1].str()), 1u) << (*it)[1].str();
  }
  EXPECT_GT(refs, 100u);
  EXPECT_EQ(count(html, "<svg "), figures.size());
  // Still escaped: one script (the table sorter), nothing from a record.
  EXPECT_EQ(count(html, "<script"), 1u);
  EXPECT_NE(html.find("&lt;script&gt;alert(&quot;board&quot;)&lt;/script&gt;"), std::string::npos);
  EXPECT_EQ(readme.find("<script"), readme.find("\\<script") + 1);  // only as escaped text
  // The model name's "javascript:" reached the charts defused (U+2236 for its colon).
  const auto cdf = std::find_if(figures.begin(), figures.end(),
                                [](const Figure& f) { return f.stem == "e2e-latency-cdf"; });
  ASSERT_NE(cdf, figures.end());
  EXPECT_NE(cdf->svg.find("javascript\u2236x"), std::string::npos);
  EXPECT_NE(cdf->svg.find("&lt;script&gt;"), std::string::npos);
}

/// A board of `models` × `cells` (concurrency 1, 2, 4, …) of two arms; arm b is slower and, in
/// one cell of a larger board, was sent another request stream (not compared).
compare::Board synthetic_board(std::size_t models, std::size_t cells) {
  compare::BoardInput in;
  in.arms = {{"a", {"label=a"}, {}}, {"b", {"label=b"}, {}}};
  for (std::size_t m = 0; m < models; ++m) {
    for (std::size_t k = 0; k < cells; ++k) {
      const int concurrency = 1 << k;
      for (std::size_t arm = 0; arm < 2; ++arm) {
        std::vector<double> e2e;
        for (std::size_t i = 0; i < 12; ++i) {
          e2e.push_back((40.0 + 10.0 * static_cast<double>(m) + static_cast<double>(i % 5) +
                         3.0 * static_cast<double>(k)) *
                        (arm == 0 ? 1.0 : 1.2 + 0.05 * static_cast<double>(k)));
        }
        const std::string id =
            "r-" + std::to_string(m) + "-" + std::to_string(k) + "-" + (arm == 0 ? "a" : "b");
        auto r = testing::copy_run(testing::make_run(id, arm == 0 ? "a" : "b",
                                                     testing::sequential_traces(e2e), concurrency));
        testing::set_manifest(*r, "model.id", "model-" + std::to_string(m));
        if (models > 2 && m == 2 && k == 1 && arm == 1) {
          testing::set_manifest(*r, "workload.request_stream.sha256", std::string(64, '6'));
        }
        in.arms[arm].runs.push_back(r);
      }
    }
  }
  compare::BoardOptions o = testing::fixed_options();
  o.bootstrap.resamples = 200;
  return compare::build_board(in, o);
}

TEST_F(BoardCharts, DrawFromOneModelAndCellToTenModelsAndEightCells) {
  for (const auto& [models, cells] :
       std::vector<std::pair<std::size_t, std::size_t>>{{1, 1}, {1, 8}, {3, 4}, {10, 8}}) {
    SCOPED_TRACE(std::to_string(models) + " × " + std::to_string(cells));
    const compare::Board b = synthetic_board(models, cells);
    ASSERT_EQ(b.cells.size(), models * cells);
    std::vector<BoardChart> charts;
    ASSERT_NO_THROW(charts = board_charts(b));
    // No telemetry: no power or energy charts. One CDF chart per model and latency; the
    // frontier across arms and cells.
    std::vector<std::string> want = {"throughput-by-concurrency",
                                     "decode-per-user-by-concurrency",
                                     "delta-heatmap",
                                     "serving-tradeoff",
                                     "frontier",
                                     "input-throughput-by-concurrency",
                                     "prefill-per-user-by-concurrency",
                                     "prefill-delta-heatmap"};
    for (const char* kind : {"e2e-latency-cdf", "ttft-cdf"}) {
      if (models == 1) {
        want.emplace_back(kind);
      } else {
        for (std::size_t m = 0; m < models; ++m) {
          want.push_back(std::string(kind) + "-model-" + std::to_string(m));
        }
      }
    }
    EXPECT_EQ(stems(charts), want);
    const auto& line = std::get<chart::LineChart>(charts[0].chart);
    EXPECT_EQ(line.panels.size(), models);
    const auto& scaling =
        std::get<chart::LineChart>(by_stem(charts, "decode-per-user-by-concurrency").chart);
    ASSERT_EQ(scaling.panels.size(), models);
    for (std::size_t m = 0; m < models; ++m) {
      EXPECT_EQ(scaling.panels[m].title, "model-" + std::to_string(m));
      ASSERT_EQ(scaling.panels[m].series.size(), 2u);
      EXPECT_EQ(scaling.panels[m].series[1].points.size(), cells);
    }
    EXPECT_EQ(scaling.grid.shared_y, models == 1);
    const auto& ph = std::get<chart::Heatmap>(by_stem(charts, "prefill-delta-heatmap").chart);
    EXPECT_EQ(ph.rows.size(), models);
    EXPECT_EQ(ph.columns.size(), cells);
    if (models > 2) {
      EXPECT_EQ(ph.cell_labels[2][1], "not compared");
    }
    const auto& h = std::get<chart::Heatmap>(by_stem(charts, "delta-heatmap").chart);
    EXPECT_EQ(h.rows.size(), models);
    EXPECT_EQ(h.columns.size(), cells);
    for (std::size_t m = 0; m < models; ++m) {
      for (std::size_t k = 0; k < cells; ++k) {
        if (models > 2 && m == 2 && k == 1) {
          EXPECT_FALSE(h.values[m][k].has_value());
          EXPECT_EQ(h.cell_labels[m][k], "not compared");
        } else {
          EXPECT_EQ(h.cell_labels[m][k], "win") << m << " " << k;  // arm a is faster
          EXPECT_GT(h.values[m][k].value_or(-1.0), 0.0);
        }
      }
    }
    const auto& cdf = std::get<chart::Cdf>(
        by_stem(charts, models == 1 ? "e2e-latency-cdf" : "e2e-latency-cdf-model-0").chart);
    EXPECT_EQ(cdf.panels.size(), cells);
    for (const auto& c : charts) {
      for (const auto& [name, style] : styles(c.chart)) {
        EXPECT_EQ(style, name == "a" ? 0u : 1u) << c.stem << " " << name;
      }
    }
    for (const auto& c : charts) expect_draws(c);
  }
}

/// A ladder board of `models` models: decode cells decode@0 … decode@32000 (256 output tokens
/// at each context depth) and prefill cells prefill@512 … prefill@8192 (one output token), two
/// arms, b the baseline; arm b decodes slower at depth and prefills faster. Model 1 has no
/// decode@8000.
compare::Board ladder_board(std::size_t models) {
  compare::BoardInput in;
  in.arms = {{"a", {"label=a"}, {}}, {"b", {"label=b"}, {}}};
  struct LadderCell {
    std::string kind;
    int tokens;
  };
  const std::vector<LadderCell> cells = {{"decode", 0},     {"decode", 8000}, {"decode", 16000},
                                         {"decode", 32000}, {"prefill", 512}, {"prefill", 2048},
                                         {"prefill", 8192}};
  for (std::size_t m = 0; m < models; ++m) {
    for (const auto& cell : cells) {
      if (m == 1 && cell.kind == "decode" && cell.tokens == 8000) continue;
      const std::string name = cell.kind + "@" + std::to_string(cell.tokens);
      const bool decode = cell.kind == "decode";
      for (std::size_t arm = 0; arm < 2; ++arm) {
        const double depth = static_cast<double>(cell.tokens);
        const double ms = decode ? 2000.0 * (1.0 + depth / (arm == 0 ? 40000.0 : 20000.0))
                                 : depth / (arm == 0 ? 4.0 : 5.0) + 20.0;
        std::vector<double> e2e;
        for (int i = 0; i < 12; ++i) e2e.push_back(ms * (1.0 + 0.01 * (i % 4)));
        const std::string id = "l-" + std::to_string(m) + "-" + name + (arm == 0 ? "-a" : "-b");
        auto r = testing::copy_run(testing::make_run(
            id, arm == 0 ? "a" : "b",
            testing::sequential_traces(e2e, decode ? 256 : 1, std::max(cell.tokens, 1))));
        testing::set_manifest(*r, "model.id", "model-" + std::to_string(m));
        testing::set_manifest(*r, "workload.protocol.name", "ladder");
        testing::set_manifest(*r, "workload.protocol.cell", name);
        testing::set_manifest(
            *r, "workload.protocol.cell_params",
            boost::json::object{{"kind", cell.kind}, {"target_tokens", cell.tokens}});
        in.arms[arm].runs.push_back(r);
      }
    }
  }
  compare::BoardOptions o = testing::fixed_options();
  o.bootstrap.resamples = 200;
  return compare::build_board(in, o);
}

/// (x, y) of every point of a line chart's series, by panel and series.
std::vector<std::pair<double, double>> xy(const chart::Series& s) {
  std::vector<std::pair<double, double>> out;
  for (const auto& p : s.points) out.emplace_back(p.x, p.y);
  return out;
}

/// The selected figure `metric` of an arm in the board's cell named `name` of `model`.
double figure_of(const compare::Board& b, const std::string& model, const std::string& name,
                 const std::string& arm, const std::string& metric) {
  for (const auto& c : b.cells) {
    if (c.model == model && c.name == name) {
      return c.arm(arm)->selected_figures().at(metric).value();
    }
  }
  throw std::runtime_error("no cell " + name);
}

TEST_F(BoardCharts, ALadderPlotsDecodeOverDepthAndPrefillOverPromptSize) {
  const compare::Board b = ladder_board(2);
  ASSERT_EQ(b.cells.size(), 13u);
  const auto charts = board_charts(b);
  // No aggregate or load charts: a ladder sends one request per cell.
  EXPECT_EQ(stems(charts),
            (std::vector<std::string>{"decode-per-user-by-context", "decode-delta-heatmap",
                                      "prefill-per-user-by-prompt", "prefill-delta-heatmap",
                                      "e2e-latency-cdf-model-0", "e2e-latency-cdf-model-1",
                                      "ttft-cdf-model-0", "ttft-cdf-model-1", "ttft-by-context",
                                      "ttft-by-prompt", "e2e-by-context", "e2e-by-prompt"}));

  // Decode: per-user decode tok/s p50 (the ladder's decode_tok_s) over the context depth,
  // depth 0 included, on an ordinal axis; one line per arm, one panel per model.
  const BoardChart& decode = by_stem(charts, "decode-per-user-by-context");
  EXPECT_EQ(decode.section, compare::Section::kThroughput);
  const auto& d = std::get<chart::LineChart>(decode.chart);
  EXPECT_EQ(d.title, "Per-user decode rate vs context depth");
  EXPECT_EQ(d.x.title, "Context depth");
  EXPECT_EQ(d.x.unit, "tokens");
  EXPECT_EQ(d.x.scale, chart::Scale::kOrdinal);
  EXPECT_EQ(d.y.title, "Per-user decode, p50");
  EXPECT_TRUE(d.grid.shared_x);
  EXPECT_NE(d.note.find("evenly spaced"), std::string::npos) << d.note;
  ASSERT_EQ(d.panels.size(), 2u);
  for (std::size_t m = 0; m < 2; ++m) {
    const std::string model = "model-" + std::to_string(m);
    EXPECT_EQ(d.panels[m].title, model);
    ASSERT_EQ(d.panels[m].series.size(), 2u);
    for (std::size_t arm = 0; arm < 2; ++arm) {
      const std::string name = arm == 0 ? "a" : "b";
      std::vector<std::pair<double, double>> want;
      for (int depth : {0, 8000, 16000, 32000}) {
        if (m == 1 && depth == 8000) continue;
        want.emplace_back(depth, figure_of(b, model, "decode@" + std::to_string(depth), name,
                                           "decode_rate_per_user_p50"));
      }
      EXPECT_EQ(xy(d.panels[m].series[arm]), want) << model << " " << name;
      EXPECT_EQ(d.panels[m].series[arm].style, arm);
    }
  }
  // Arm b decodes slower as the context grows.
  EXPECT_GT(d.panels[0].series[0].points[3].y, d.panels[0].series[1].points[3].y);
  EXPECT_NE(decode.caption.find("rates_tok_s.decode_rate_per_user.p50"), std::string::npos);
  EXPECT_NE(decode.caption.find("ladder decode cell"), std::string::npos) << decode.caption;

  // Prefill: per-user prefill tok/s p50 (input tokens / TTFT) over the prompt size.
  const BoardChart& prefill = by_stem(charts, "prefill-per-user-by-prompt");
  EXPECT_EQ(prefill.section, compare::Section::kPrefill);
  const auto& p = std::get<chart::LineChart>(prefill.chart);
  EXPECT_EQ(p.x.title, "Prompt size");
  EXPECT_EQ(p.x.scale, chart::Scale::kOrdinal);
  EXPECT_EQ(p.y.title, "Per-user prefill, p50");
  for (std::size_t arm = 0; arm < 2; ++arm) {
    const std::string name = arm == 0 ? "a" : "b";
    std::vector<std::pair<double, double>> want;
    for (int size : {512, 2048, 8192}) {
      want.emplace_back(size, figure_of(b, "model-0", "prefill@" + std::to_string(size), name,
                                        "prefill_rate_client_p50"));
    }
    EXPECT_EQ(xy(p.panels[0].series[arm]), want) << name;
  }
  EXPECT_NE(prefill.caption.find("rates_tok_s.prefill_rate_client.p50"), std::string::npos);

  // The heatmaps keep to the cells judged by their figure, named as the ladder names them:
  // decode cells by their per-user decode rate, prefill cells by their prefill figure.
  const auto& h = std::get<chart::Heatmap>(by_stem(charts, "decode-delta-heatmap").chart);
  EXPECT_EQ(h.columns,
            (std::vector<std::string>{"decode@0", "decode@8000", "decode@16000", "decode@32000"}));
  EXPECT_FALSE(h.values[1][1].has_value());  // model-1 has no decode@8000
  const BoardChart& prefill_heat = by_stem(charts, "prefill-delta-heatmap");
  const auto& ph = std::get<chart::Heatmap>(prefill_heat.chart);
  EXPECT_EQ(ph.columns, (std::vector<std::string>{"prefill@512", "prefill@2048", "prefill@8192"}));
  EXPECT_EQ(ph.rows, (std::vector<std::string>{"model-0", "model-1"}));
  for (const auto& row : ph.values) {
    for (const auto& v : row) EXPECT_LT(v.value_or(1.0), 0.0);  // a prefills slower than b
  }
  EXPECT_NE(prefill_heat.caption.find("Ladder decode cells are left out"), std::string::npos)
      << prefill_heat.caption;
  // Latency panels are named by cell: decode@512 and prefill@512 would both be "512 tok".
  const auto& cdf = std::get<chart::Cdf>(by_stem(charts, "ttft-cdf-model-0").chart);
  EXPECT_EQ(cdf.panels.front().title, "decode@0");
  EXPECT_EQ(cdf.panels.back().title, "prefill@8192");

  for (const auto& c : charts) expect_draws(c);
}

TEST_F(BoardCharts, SeveralArmsGetARowEachAndABoardWithoutCellsNoCharts) {
  // slow and slow-again (the same runs) against fast: identical arms keep their own styles.
  const compare::BoardInput in = compare::load_board_input(
      testing::fixture_root(),
      {{"slow", {"label=slow"}}, {"slow-again", {"label=slow"}}, {"fast", {"label=fast"}}}, {});
  const compare::Board b = compare::build_board(in, testing::fixed_options());
  const auto charts = board_charts(b);
  const auto& h = std::get<chart::Heatmap>(by_stem(charts, "delta-heatmap").chart);
  EXPECT_EQ(h.rows, (std::vector<std::string>{"stories260K · slow", "stories260K · slow-again"}));
  EXPECT_EQ(h.row_title, "Model · arm");
  EXPECT_EQ(h.positive_label, "arm better");
  EXPECT_EQ(h.negative_label, "fast better");
  EXPECT_EQ(h.cell_labels[0], (std::vector<std::string>{"loss", "loss"}));
  for (const auto& c : charts) {
    for (const auto& [name, style] : styles(c.chart)) {
      const std::size_t want = name == "slow" ? 0u : name == "slow-again" ? 1u : 2u;
      EXPECT_EQ(style, want) << c.stem << " " << name;
    }
  }
  const auto& p = std::get<chart::Timeline>(by_stem(charts, "power-timeline").chart);
  EXPECT_EQ(p.grid.columns, 3u);  // the three arms side by side
  EXPECT_EQ(p.panels.size(), 6u);

  // Two arms that share no cell: every run is unpaired, nothing to draw.
  auto x = testing::copy_run(testing::make_run("rx", "x", testing::sequential_traces({10, 20})));
  testing::set_manifest(*x, "model.id", "other-model");
  const compare::Board none = compare::build_board(
      testing::pair_input(x, testing::make_run("ry", "y", testing::sequential_traces({10, 20}))),
      testing::fixed_options());
  EXPECT_TRUE(none.cells.empty());
  EXPECT_TRUE(board_charts(none).empty());
}

TEST_F(BoardCharts, ChartsWithTooManyPanelsAreSplitIntoParts) {
  const compare::Board b = synthetic_board(40, 1);
  const auto charts = board_charts(b);
  const auto& first =
      std::get<chart::LineChart>(by_stem(charts, "throughput-by-concurrency").chart);
  const auto& second =
      std::get<chart::LineChart>(by_stem(charts, "throughput-by-concurrency-part2").chart);
  EXPECT_EQ(first.panels.size(), 36u);
  EXPECT_EQ(second.panels.size(), 4u);
  EXPECT_NE(first.title.find("(part 1 of 2)"), std::string::npos) << first.title;
  EXPECT_EQ(by_stem(charts, "serving-tradeoff-part2").section, compare::Section::kThroughput);
  expect_draws(by_stem(charts, "throughput-by-concurrency"));
  // Unique stems, valid for the board directory.
  const auto all = stems(charts);
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), all.size());
  std::vector<Figure> placeholders;
  for (const auto& c : charts) {
    placeholders.push_back({c.title, c.stem, c.section, c.caption, "<svg/>", "png"});
  }
  EXPECT_NO_THROW(validate_figures(placeholders));
}

// A ladder cell measures one request: its headline is the rate the ladder measures, not the
// aggregate rates of a load (docs/compare.md, "At a glance").
TEST(LadderBoard, TalliesAndNonWinsCountWhatALadderMeasures) {
  const compare::Board b = ladder_board(1);
  std::map<std::string, const compare::Tally*> by_metric;
  for (const auto& t : b.tallies) {
    if (t.arm == "a") by_metric[t.metric] = &t;
  }
  ASSERT_EQ(by_metric.size(), 2u);  // no output tok/s, req/s, decode tok/s, aggregate prefill
  const compare::Tally& decode = *by_metric.at("decode_rate_per_user_p50");
  const compare::Tally& prefill = *by_metric.at("prefill_rate_client_p50");
  EXPECT_EQ(decode.compared, 4u);   // the decode cells only
  EXPECT_EQ(prefill.compared, 3u);  // the prefill cells only
  EXPECT_EQ(prefill.losses, 3u);    // arm a prefills slower
  EXPECT_GE(decode.wins, 3u);       // ...and decodes faster at depth
  // One request: the aggregate rates over a service window are not compared at all.
  for (const auto& c : b.cells) {
    for (const auto& cmp : c.comparisons) {
      for (const char* k :
           {"output_tokens_per_s", "requests_per_s", "decode_tokens_per_s", "input_tokens_per_s"}) {
        EXPECT_EQ(cmp.deltas.count(k), 0u) << c.id << " " << k;
      }
      EXPECT_EQ(cmp.deltas.count("ttft_p50_ms"), 1u) << c.id;
    }
  }
  for (const auto& f : b.findings) {
    if (f.type != "nonwin") continue;
    const std::string metric(f.data.at("metric").as_string());
    const bool decode_cell = f.cell.find("decode@") != std::string::npos;
    EXPECT_EQ(metric, decode_cell ? "decode_rate_per_user_p50" : "prefill_rate_client_p50")
        << f.cell;
  }
}

}  // namespace
}  // namespace dyno::report
