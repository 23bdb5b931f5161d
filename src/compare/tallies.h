// The board's tallies (docs/compare.md "Figures, deltas, intervals, verdicts"): per arm and
// headline figure, wins, ties and losses from intervals with the point-estimate counts beside
// them (summary-only pairs on a line of their own), and how each fairness check went over the
// pairs. Internal to dyno_compare (board.cpp).
#pragma once

#include <vector>

#include "compare/board.h"

namespace dyno::compare {

/// Per non-baseline arm and headline figure (a headline of some cell on the board): the
/// interval line, and a summary-only line when some pair has a summary-only run.
std::vector<Tally> win_tallies(const Board& board);

/// Per check the policy does not ignore, in check_catalog() order: pass, fail and unresolved
/// over the board's pairs; empty when nothing is compared.
std::vector<CheckTally> check_tallies(const Board& board);

}  // namespace dyno::compare
