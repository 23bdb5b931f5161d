// The board's "Engine-timed figures" section: what the engine itself reported (llama.cpp
// `timings` of each response, its /metrics counters), beside the client's figures and labelled
// so that none is taken for one of them (docs/compare.md). Internal to dyno_report.
#pragma once

#include <optional>

#include "compare/board.h"
#include "report/document.h"

namespace dyno::report {

/// The section, or nullopt when no run on the board has an engine-reported figure.
std::optional<Section> engine_section(const compare::Board& board);

}  // namespace dyno::report
