// The board's charts (docs/compare.md "Charts"): drawn from a built Board through the data of
// compare/chart_data.h with the cairo chart library (chart/chart.h), each as an SVG and a PNG
// from one drawing code, handed to the writers as report::Figure values. Nothing here computes
// a figure: every value plotted is one the board (or the selected run's record) holds.
#pragma once

#include <string>
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

/// The board's charts, in the order they are shown:
///   throughput-by-<level>     output tok/s vs the level (concurrency, …), one panel per model
///   delta-heatmap             Δ output tok/s per model (× arm) and cell, labelled win/tie/loss
///   serving-tradeoff[-<lvl>]  aggregate output tok/s vs per-user decode tok/s, points by level
///   prefill-by-<level>, prefill-per-user-by-<level>   aggregate and per-user prefill tok/s
///   e2e-latency-cdf[-<model>], ttft-cdf[-<model>]     latency CDFs, one panel per cell
///   power-timeline[-<model>], energy-timeline[-<model>]  per device, when telemetry exists
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
