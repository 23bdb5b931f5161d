// `dyno run --shard K/N --start-at TIME`: one shard of a run's load, started at an agreed
// wall-clock time (docs/scale.md, "Load from several client hosts").
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "load/runner.h"

namespace dyno::load {

/// Parses --shard K/N (K 0-based, 0 <= K < N, N >= 1). Throws UsageError naming --shard.
Shard parse_shard(const std::string& text);

/// --shard slurm: K from SLURM_PROCID, N from SLURM_NTASKS (srun sets both in every task of a
/// job step); the arguments are those variables' values, nullptr when unset. Throws
/// UsageError naming --shard slurm and the variable when one is missing, not a number, or
/// K >= N.
Shard slurm_shard(const char* procid, const char* ntasks);

/// --shard as given: K/N, or `slurm` (read from this process's environment).
Shard resolve_shard(const std::string& text);

/// The latest --start-at accepted: this far after `now`, against typos.
inline constexpr std::chrono::hours kMaxStartAhead{24};

/// Parses --start-at: an RFC 3339 UTC time (2026-12-03T14:30:00Z, fractions of a second
/// allowed) or now+N{ms,s,m}; ns since the Unix epoch. Throws UsageError naming --start-at for
/// a malformed time, one more than a second before `now`, or more than kMaxStartAhead after.
std::int64_t parse_start_at(const std::string& text, std::chrono::system_clock::time_point now);

}  // namespace dyno::load
