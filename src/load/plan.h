// Load planning: the shared load flags (load/options.h) → a cell's LoadConfig. The one place
// they are read, used by `dyno run`, every protocol (sweep, ladder, speed, real) and so every
// campaign cell (each one of those commands), so a flag means the same load everywhere.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "load/options.h"
#include "load/runner.h"
#include "metrics/summary.h"

namespace dyno::load {

/// What one cell asks of the load beside the shared flags: its shape and its length.
struct CellLoad {
  std::uint32_t concurrency = 1;     ///< closed loop: requests (or sessions) kept in flight
  std::optional<double> rate_per_s;  ///< open loop on the flags' --arrival, --burstiness, --seed
  std::optional<Replay> replay;      ///< open loop at the stream's at_ms instead
  std::optional<std::uint64_t> requests;
  std::optional<double> duration_s;
  /// Discarded requests sent first; unset: --warmup. (A protocol that warms up otherwise says
  /// so: speed's warm-up goes before its first cell only.)
  std::optional<std::uint64_t> warmup;
};

/// What the record keeps of each request (--no-chunk-times, --keep-outputs).
struct Keep {
  bool event_times = true;
  bool output_text = false;
};

/// The cell's load: `cell`'s shape and length with every shared flag applied the same way —
/// --warmup, --client-threads (unset: default_client_threads()), --unreachable-after, the
/// arrival schedule of an open loop (--arrival, --burstiness, --seed) — and `keep`. Throws
/// UsageError naming --arrival when it is not poisson, constant or gamma. (--shard and
/// --start-at are `dyno run`'s own and are applied after.)
LoadConfig plan_load(const LoadOptions& flags, const CellLoad& cell, Keep keep);

/// Reads one objective's value ("500ms", "2s", "50": ms unless s) into milliseconds, or throws
/// UsageError naming --slo and `key`.
using SloValueReader = double (*)(const std::string& value, const std::string& key);

/// --slo "ttft=500ms,tpot=50ms,e2e=10s" (ms unless s) as objectives in seconds; UsageError
/// naming --slo. Each value is read by `read_ms`; by default as a JSON number (plain decimal: no
/// hexadecimal, no leading zero) from 1 ms to 30 days. The command line's flag parser passes its
/// own reader (app/flag_values.h check_slo), so a --slo is checked by the rules of every flag.
metrics::Slo parse_slo(const std::string& text, SloValueReader read_ms = nullptr);

}  // namespace dyno::load
