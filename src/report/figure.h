// A chart as the board receives it: drawn elsewhere (one drawing code gives both the SVG and
// the PNG), written next to the board as <stem>.svg and <stem>.png, referenced from README.md
// and inlined in report.html. The board never draws.
#pragma once

#include <string>
#include <vector>

#include "compare/figures.h"

namespace dyno::report {

struct Figure {
  std::string title;  ///< e.g. "Output tok/s by concurrency" (alt text, HTML caption)
  std::string stem;   ///< file name without extension: [a-z0-9-]+, unique in a board
  compare::Section section = compare::Section::kThroughput;  ///< where it is shown
  std::string caption;  ///< optional sentence under it ("" for none)
  std::string svg;      ///< SVG document bytes
  std::string png;      ///< PNG bytes
};

/// Throws std::invalid_argument when a stem is not [a-z0-9-]+, is reserved (README, board,
/// report, SHA256SUMS) or repeats, or a figure lacks its SVG or PNG bytes.
void validate_figures(const std::vector<Figure>& figures);

}  // namespace dyno::report
