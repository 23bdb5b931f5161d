// The words and board look-ups the board's charts share (board_charts.cpp): numbers, level
// labels and axes, stems, arm names and styles, the runs a caption names. Internal to
// dyno_report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "chart/chart.h"
#include "compare/board.h"

namespace dyno::report::chart_words {

// ---- Words -------------------------------------------------------------------------------

/// A number in its shortest plain form: 4, 2.5, 8000.
std::string num(double v);
/// The cell's x as a point label: c=4, 2.5/s, 8000 tok.
std::string level_label(const std::string& kind, double level);
/// The level kind in a title and a stem: "concurrency", "rate", "context", "prompt".
std::string level_word(const std::string& kind);
/// A ladder's kinds (token targets: "decode_tokens", "prefill_tokens", "target_tokens"):
/// one request per cell, so aggregate and load charts do not apply.
bool ladder_kind(const std::string& kind);
/// The cells of a level kind in a caption: "concurrency cell", "ladder decode cell", ….
std::string level_cells(const std::string& kind);
/// The x axis of a chart over a level kind: concurrency on log2 with ticks at the levels,
/// rates linear, a ladder's token targets ordinal (depth 0 shown, levels evenly spaced).
chart::Axis level_axis(const std::string& kind);
/// [a-z0-9-]+ from any text: lower case, every other run of characters one '-', at most 40.
std::string slug(const std::string& text);
/// Text from records, safe in an SVG that report.html embeds ("javascript:" loses its colon).
std::string defuse(std::string text);
/// A telemetry device by source: "GPU 0", "CPU package 1".
std::string device_label(const std::string& source, std::int64_t device);
/// A fraction as a percentage: 0.95 → "95 %".
std::string percent(double fraction);

// ---- The board ---------------------------------------------------------------------------

/// The arm's style: its index in the board.
std::size_t arm_style(const compare::Board& b, const std::string& arm);
/// The arm's name in a legend ("(baseline)" after the baseline's).
std::string arm_name(const compare::Board& b, const std::string& arm);
/// Models in board cell order.
std::vector<std::string> models_of(const compare::Board& b);
std::size_t protocol_count(const compare::Board& b);
/// A cell as a panel title or a heatmap column: c=4, 2.5/s, else (ladder cells, cells
/// without a level) the cell's name (decode@8000, prefill@512), with its protocol when the
/// board has several.
std::string cell_label(const compare::Board& b, const compare::Cell& c);
/// The selected runs behind some cells: listed when few, else counted with the arms'
/// selectors (board.json lists every cell's runs).
std::string runs_phrase(const compare::Board& b, const std::vector<const compare::Cell*>& cells);
/// The board's cells that `f` holds for, in board order.
std::vector<const compare::Cell*> cells_where(const compare::Board& b,
                                              const std::function<bool(const compare::Cell&)>& f);

}  // namespace dyno::report::chart_words
