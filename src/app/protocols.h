// Named, versioned protocols: sweep, ladder, speed, real. Each runs many cells against one
// engine session and writes one run record per cell (and repetition), grouped by a campaign
// id; a campaign file (<runs-root>/campaigns/<id>.json) lists the cells, every repetition and
// the one the declared selection rule picked.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "app/run_command.h"

namespace dyno::app {

/// Selection of one repetition among K: the median by `select` (a metric name, see
/// docs/protocols.md); every repetition stays in the campaign file.
struct RepeatOptions {
  std::uint32_t repeat = 1;
  std::string select;  ///< "" = the protocol's primary metric
};

struct SweepOptions {
  std::string concurrencies = "1,2,4,8";  ///< closed-loop cells
  std::optional<std::string> rates;       ///< open-loop cells instead (req/s)
  std::uint64_t min_requests = 32;        ///< each cell gets max(min_requests, k·C) requests
  std::uint64_t per_slot = 8;             ///< k
  double rate_duration_s = 30.0;          ///< open-loop cells: how long each sends
  RepeatOptions rep;
};

struct LadderOptions {
  std::string depths = "0,8000,16000,32000";    ///< decode cells: context depth in tokens
  std::string prefill_sizes = "512,2048,8192";  ///< prefill-only cells: prompt size
  std::int64_t decode_tokens = 256;             ///< output tokens of a decode cell
  RepeatOptions rep{3, ""};
};

struct SpeedOptions {
  std::string passes = "main";    ///< named passes, e.g. "fr,en,fr2"
  std::uint32_t concurrency = 8;  ///< the aggregate burst
  RepeatOptions rep;
};

struct RealOptions {
  RepeatOptions rep;
};

int sweep_command(const RunOptions& options, const SweepOptions& sweep);
int ladder_command(const RunOptions& options, const LadderOptions& ladder);
int speed_command(const RunOptions& options, const SpeedOptions& speed);
int real_command(const RunOptions& options, const RealOptions& real);

}  // namespace dyno::app
