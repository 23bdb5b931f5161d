// The Methodology section of a board's document (board_document.cpp places it): how each
// arm's runs were made, described from their records, and how the board compares them
// (pairing, intervals, verdicts, fairness policy). Internal to dyno_report.
#pragma once

#include "compare/board.h"
#include "report/document.h"

namespace dyno::report {

/// The "Methodology" section (level 2): one bullet list.
Section methodology_section(const compare::Board& board);

}  // namespace dyno::report
