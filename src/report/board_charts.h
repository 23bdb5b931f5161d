// The board's charts (docs/compare.md "Charts"): drawn from a built Board through the data of
// compare/chart_data.h with the cairo chart library (chart/chart.h), each as an SVG and a PNG
// from one drawing code, handed to the writers as report::Figure values. Nothing here computes
// a figure: every value plotted is one the board (or the selected run's record) holds.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chart/chart.h"
#include "compare/board.h"
#include "report/figure.h"

namespace dyno::report {

/// One chart of a board before it is drawn: where it goes and what it says.
struct BoardChart {
  std::string stem;     ///< file name without extension ([a-z0-9-]+, unique in the board)
  std::string title;    ///< the chart's title (alt text, HTML caption)
  std::string caption;  ///< what is plotted, from which figure and which runs
  compare::Section section = compare::Section::kThroughput;
  chart::Chart chart;
};

/// The charts of a board as the kinds add them (board_charts.cpp).
class ChartSet;

/// An entry of the chart registry (error/registry.h): a kind of chart a board may have.
struct ChartKind {
  std::string_view name;      ///< its file stem, or the stem's pattern: "throughput-by-<level>"
  std::string_view describe;  ///< one line: what is plotted
  /// Adds the kind's charts of `board` to `charts` (none when it has nothing to draw).
  void (*add)(const compare::Board& board, ChartSet& charts);
};

/// Every chart kind, in the order a board shows them (docs/compare.md "Charts").
std::span<const ChartKind> chart_kinds();

/// The board's charts (each kind of chart_kinds() in turn), in the order they are shown:
///   throughput-by-<level>     output tok/s vs concurrency or rate, one panel per model
///   decode-per-user-by-<level>  per-user decode tok/s p50 vs concurrency or rate (decode
///                             scaling), or vs a ladder's context depth (decode cells)
///   delta-heatmap             Δ output tok/s per model (× arm) and cell judged by it
///   decode-delta-heatmap      Δ per-user decode tok/s p50 of the cells judged by it (a
///                             ladder's decode cells)
///   serving-tradeoff[-<lvl>]  aggregate output tok/s vs per-user decode tok/s, points by level
///   frontier                  output tok/s per GPU vs per-user decode tok/s of every load cell
///                             and arm, one panel per model, the Pareto frontier drawn and the
///                             dominated points faded (section Frontier and cost)
///   input-throughput-by-<level>  aggregate input tok/s (a rate of requests) vs concurrency or rate
///   prefill-per-user-by-<level>  per-user prefill tok/s p50 vs concurrency or rate, or a
///                             ladder's prefill figure vs its prompt size (prefill cells)
///   prefill-delta-heatmap     Δ each cell's prefill figure, labelled with its source
///   e2e-latency-cdf[-<model>], ttft-cdf[-<model>]     latency CDFs, one panel per cell of
///                             more than one request
///   ttft-by-<ladder-level>, e2e-by-<ladder-level>    a ladder's one-request cells as points
///   power-timeline[-<model>], energy-timeline[-<model>]  per device, when telemetry exists
/// Every heatmap colours a cell only by a figure the cell is judged by (compare::Cell::
/// judged_by). A ladder's cells (one request each) get no aggregate or load chart: its x axes
/// are ordinal (depth 0 shown, levels evenly spaced).
/// `<model>` (a slug of the model name) is appended when the board has several models; a chart
/// with more panels than fit one image is split into parts (`-2`, `-3`, …). Charts without
/// anything to draw (no telemetry, no compared cell) are left out. Series keep their arm's
/// style (the arm's index in the board) in every chart.
/// Throws compare::CompareError on a malformed telemetry.jsonl.
std::vector<BoardChart> board_charts(const compare::Board& board);

/// Draws one chart as SVG and PNG at chart::default_size.
Figure render_figure(const BoardChart& chart);

/// board_charts(), drawn.
std::vector<Figure> board_figures(const compare::Board& board);

}  // namespace dyno::report
