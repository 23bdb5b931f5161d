// The flags every measuring command shares (`dyno run` and the protocols: the engine, the
// workload, the record, telemetry) and `dyno run`'s load flags, added to a CLI11 command; and
// what a measuring command does with them before it starts.
#pragma once

#include "app/run_options.h"

namespace CLI {
class App;
}

namespace dyno::app {

/// Telemetry: which sources, how often, the idle baseline; roots for tests and containers
/// (also `dyno doctor`'s flags).
void add_telemetry_flags(CLI::App& cmd, telemetry::TelemetryOptions& t);

/// Flags every measuring command shares: the engine, the workload, the output.
void add_common_flags(CLI::App& cmd, RunOptions& o);

/// `dyno run`'s load: closed loop (--concurrency) or open loop (--rate), and its limits.
void add_load_flags(CLI::App& cmd, RunOptions& o);

/// Everything `dyno run` takes: the common flags, the load flags, and a shard's (--shard,
/// --clock-ref, --start-at; docs/scale.md).
void add_run_options(CLI::App& cmd, RunOptions& o);

/// What every measuring command does first: it answers SIGINT/SIGTERM from now on (a signal
/// during preparation — building a large stream, launching an engine — stops the run before its
/// first request), and an --engine spec's [extra_body] joins --extra-body's fields (the flag's
/// win). Returns the options the command runs with.
RunOptions start_measuring(RunOptions options);

}  // namespace dyno::app
