// `dyno run`: options as the user gave them, and the command that executes them.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "app/exit_codes.h"
#include "app/run_options.h"
#include "metrics/summary.h"

namespace dyno::app {

/// Runs the benchmark; returns the exit code. Throws UsageError for bad options.
int run_command(const RunOptions& options);

/// `dyno doctor`: probes every telemetry source with the telemetry flags and prints what this
/// host offers and why a source is missing; exit 0.
int doctor_command(const telemetry::TelemetryOptions& telemetry);

}  // namespace dyno::app
