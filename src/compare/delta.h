// What a board says of one figure and of answers, arm against baseline: the delta with its
// bootstrap interval and verdict (over requests, or over repetitions when there are enough),
// and the quality audit (docs/compare.md). Used by build_board.
#pragma once

#include <string>

#include "compare/board.h"
#include "compare/figures.h"
#include "compare/run_record.h"

namespace dyno::compare {

/// `v` with `decimals` digits after the point, as board messages write numbers.
std::string fixed_text(double v, int decimals);

/// The delta of figure `m` in `cell`, arm `a` against baseline `b`, with its seeded bootstrap
/// interval (the seed depends on the cell, figure and arm, never on board order) and verdict.
Delta compare_metric(const MetricDef& m, const Cell& cell, const ArmCell& a, const ArmCell& b,
                     const BootstrapOptions& options);

/// Accuracy, output length and per-request score disagreements of run `a` against run `b`.
/// With `accuracy_not_comparable` (the board spec's reason), accuracy is shown but not
/// compared: no accuracy_delta_pp, no accuracy warning, no disagreements.
QualityAudit audit(const RunRecord& a, const RunRecord& b, const QualityThresholds& thresholds,
                   const std::string& accuracy_not_comparable = "");

}  // namespace dyno::compare
