// Load planning: the shared load flags (load/options.h) → a cell's load. The one place they are
// read — parsed, checked together, defaulted and bounded — used by `dyno run`, by every cell of
// every protocol (sweep, ladder, speed, real) and so by every campaign cell (each one of those
// commands): a flag means the same load everywhere, and a bad one fails everywhere with the same
// message (a UsageError, exit 2) before the engine starts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "load/options.h"
#include "load/runner.h"
#include "metrics/summary.h"
#include "workload/request.h"

namespace dyno::load {

/// A --duration run of the synthetic stream without -n walks this many requests cyclically.
inline constexpr std::uint64_t kSyntheticCycle = 1000;

/// The flags a cell's rate, duration and request count come from, as messages name them.
struct CellFlagNames {
  std::string rate = "--rate";
  std::string duration = "--duration";
  std::string requests = "-n";  ///< "": the cell's count is not a flag the user can lower
};

/// What a cell asks of the load beside the shared flags: its shape and its length. An unset
/// member is the flags' (`dyno run`'s -c, else 8; --rate; -n, else what the stream decides;
/// --duration; --warmup); a protocol sets its cell's own.
struct CellLoad {
  std::optional<std::uint32_t> concurrency;  ///< closed loop: requests (or sessions) in flight
  std::optional<double> rate_per_s;          ///< open loop on --arrival, --burstiness, --seed
  std::optional<std::uint64_t> requests;
  std::optional<double> duration_s;
  /// Discarded requests sent first. (A protocol that warms up otherwise says so: speed's
  /// warm-up goes before its first cell only.)
  std::optional<std::uint64_t> warmup;
  CellFlagNames names;
};

/// The stream a cell sends, as far as its load depends on it.
struct StreamFacts {
  /// --stream, named in messages; unset: the synthetic stream, made as long as the load needs.
  std::optional<std::string> file;
  bool cycle = false;  ///< --cycle: the --stream sent again from its start when -n asks more
  /// The --stream's requests once read: their count bounds -n and --warmup, their at_ms make a
  /// replay. nullptr with a file: not read yet — the flags are checked, and what the stream
  /// decides (the request count, a replay's window) is left open.
  const std::vector<workload::Request>* requests = nullptr;
};

/// A cell's load as the shared flags and the cell decide it.
struct LoadPlan {
  /// What the runner gets: the shape (closed loop, open-loop schedule or replay), requests,
  /// duration, warm-up, client threads, unreachable-after, shard and start time. The record's
  /// keeps (--keep-outputs, --no-chunk-times) are the record flags'
  /// (engine_session::cell_from_flags).
  LoadConfig config;
  std::uint64_t seed = 0;  ///< --seed
  double error_budget = 0.05;
  std::optional<metrics::Slo> slo;  ///< --slo, parsed
  std::optional<std::string> slo_text;
  /// The load may send a request of the stream again (--cycle, or a synthetic stream walked
  /// cyclically for a --duration).
  bool cycles = false;
  /// The synthetic stream's length this load needs (warm-up included; kSyntheticCycle for a
  /// --duration without -n); 0 for a --stream.
  std::uint64_t synthetic_requests = 0;
  /// The console's load line, e.g. "closed loop, concurrency 8, 100 requests, warm-up 2".
  std::string text;
};

/// The cell's load: `cell` over the shared `flags`, on `stream`. Checks the flags together (-c
/// and --rate, --schedule timestamps and its --time-scale / --time-window, --cycle, --arrival
/// even where the cell has no schedule, --slo, --shard / --start-at / --clock-ref), defaults
/// (-c 8; -n 100, or the stream's lines after --warmup; --client-threads: the machine's
/// default_client_threads()), and bounds an open loop's schedule and a replay's span. Throws
/// UsageError naming the flag.
LoadPlan plan(const LoadOptions& flags, const CellLoad& cell = {}, const StreamFacts& stream = {});

/// --slo "ttft=500ms,tpot=50ms,e2e=10s" (ms unless s) as objectives in seconds, each value read
/// by the rules of every numeric flag (load/flag_numbers.h: plain decimal, from 1 ms to 30
/// days); UsageError naming --slo.
metrics::Slo parse_slo(const std::string& text);

/// One objective's duration within --slo ("500ms", "2s", "50": ms unless s) in seconds, by
/// parse_slo's rules; `key` names the objective in the UsageError (e.g. "ttft_p90"). Shared
/// with the capacity objectives (protocol/capacity.h).
double slo_seconds(const std::string& value, const std::string& key);

}  // namespace dyno::load
