// The words of the board's charts (board_charts.cpp): numbers and percentages, a level kind's
// labels, cells and axis (concurrency, rate, a ladder's token targets), telemetry device names,
// and text from records made safe for a file name (slug) and for an SVG in report.html
// (defuse). No board look-ups: those are board_lookup.h. Internal to dyno_report.
#pragma once

#include <cstdint>
#include <string>

#include "chart/chart.h"

namespace dyno::report::chart_text {

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

}  // namespace dyno::report::chart_text
