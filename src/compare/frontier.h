// The frontier and the cost of a board's operating points (docs/metrics.md "Cost and energy
// per million tokens", docs/compare.md "Frontier and cost"): each arm's selected run in each
// load cell as output tok/s per GPU against per-user decode tok/s, which of them no other
// point beats, and what a million tokens cost at the arm's price. The cost itself is
// metrics::cost_per_mtok (metrics/cost.h), defined there once. Used by build_board.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "compare/board.h"

namespace dyno::compare {

/// Which of `points` (x, y; higher is better in both) are on the Pareto frontier: a point is
/// dominated when another is at least as high in both and higher in one; every other point is
/// on the frontier. Equal points are both on it (neither beats the other). A point with a
/// non-finite coordinate is never on it and dominates nothing.
std::vector<bool> pareto_frontier(const std::vector<std::pair<double, double>>& points);

/// Whether a cell of `level_kind` is a point of the frontier: a load cell (a ladder cell is one
/// request, not an operating point).
bool on_frontier_chart(const std::string& level_kind);

/// The operating point of `arm`'s selected run in `cell` at `gpu_hour_cost` (USD per
/// GPU-hour; nullopt: no cost): its GPU count (metrics::normalising_gpus), output tok/s per
/// GPU, per-user decode tok/s p50 and cost per million output and total (input + output)
/// tokens (metrics::cost_per_mtok). on_frontier is left unset (mark_frontier sets it).
OperatingPoint operating_point(const Cell& cell, const ArmCell& arm,
                               std::optional<double> gpu_hour_cost);

/// Sets on_frontier of every arm in every load cell with both figures: per model, across
/// arms and cells (pareto_frontier of (per-user decode tok/s, output tok/s per GPU)).
void mark_frontier(std::vector<Cell>& cells);

/// Gives every arm without its own price `flag` (`--gpu-hour-cost`): an arm's own
/// `gpu_hour_cost` (board spec) wins over the flag.
void default_gpu_hour_cost(std::vector<ArmInput>& arms, std::optional<double> flag);

}  // namespace dyno::compare
