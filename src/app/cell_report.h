// A cell run for a person: engine_session::run_cell with the progress bar, then the cell's table
// (or JSON), its warnings and, when it failed, why; and its exit code.
#pragma once

#include <atomic>
#include <set>

#include "app/run_options.h"
#include "engine_session/engine_session.h"
#include "engine_session/run_cell.h"

namespace dyno::app {

/// Runs `cell` (its record under --runs-root) and shows it; `print_summary`: the per-run table
/// (or JSON with --json) on stdout — protocols print one table for the campaign instead. Sets
/// and returns the outcome with its exit code (kExitOk, kExitRunFailed, kExitInterrupted).
/// `shown`, for a campaign of many cells: the warning codes already printed, each printed once
/// (every record keeps its own warnings).
engine_session::CellOutcome run_and_show(engine_session::EngineSession& engine,
                                         const engine_session::CellSpec& cell,
                                         const RunOptions& options, const std::atomic<bool>& stop,
                                         bool print_summary = true,
                                         std::set<metrics::WarningCode>* shown = nullptr);

}  // namespace dyno::app
