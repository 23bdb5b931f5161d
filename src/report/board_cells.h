// Table cells of a board's figures and deltas, shared by the board's document
// (board_document.cpp) and its engine-timed section (board_engine.cpp). Internal to
// dyno_report.
#pragma once

#include <optional>
#include <string>

#include "compare/board.h"
#include "report/document.h"

namespace dyno::report::cells {

/// The catalog entry of `key` (a metric_catalog() key).
const compare::MetricDef& metric(const std::string& key);

/// The selected run's figure of an arm in a cell; nullopt when absent (or no arm).
std::optional<double> fig(const compare::ArmCell* a, const std::string& key);

/// A figure as tables show it: GiB for bytes, percent for fractions, else its decimals.
std::string value_text(const compare::MetricDef& m, std::optional<double> v);

/// A delta with its interval and verdict, e.g. "+12.3 % [+8.1, +16.0] win".
std::string delta_text(const compare::MetricDef& m, const compare::Delta& d);

/// The delta of `key` in a comparison of `cell` ("not compared", "n/a", "one request" for an
/// aggregate rate of a ladder cell, or delta_text, bold when a win in a figure the cell is
/// judged by); the accuracy of a pair the board spec marks not comparable says so, with the
/// reason.
TableCell delta_cell(const compare::Cell& cell, const compare::Comparison& cmp,
                     const std::string& key);

/// The figure of `key` of an arm in a cell, sortable by its value.
TableCell value_cell(const compare::ArmCell* a, const std::string& key);

}  // namespace dyno::report::cells
