// `dyno run`: options as the user gave them, and the command that executes them.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "app/exit_codes.h"
#include "app/run_options.h"
#include "engine_session/run_cell.h"
#include "metrics/summary.h"

namespace dyno::app {

/// Runs the benchmark; returns the exit code. Throws UsageError for bad options.
int run_command(const RunOptions& options);

/// `dyno run`'s one cell with `options` (start_measuring's), shown as run_and_show shows it
/// (`print_summary`: its table or JSON on stdout); returns the cell's outcome, its exit code
/// set. `run_command` is this; `dyno quick` measures its one user with it.
engine_session::CellOutcome run_one_cell(const RunOptions& options, bool print_summary = true);

/// `dyno doctor`: probes every telemetry source with the telemetry flags and prints what this
/// host offers and why a source is missing; exit 0.
int doctor_command(const telemetry::TelemetryOptions& telemetry);

}  // namespace dyno::app
