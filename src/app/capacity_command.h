// `dyno capacity` (docs/protocols.md "Capacity"): the largest load at which every SLO holds,
// found by a bracket and a bisection of full cells (each a record), its boundary repeated for
// the spread, the search kept as a campaign file that a later command resumes. `dyno quick`
// runs a short one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "app/run_options.h"
#include "protocol/plan.h"

namespace dyno::app {

struct CapacityOptions {
  std::string by = "concurrency";  ///< --by: concurrency (users) or rate (req/s)
  std::optional<double> min;       ///< --min: the first load probed (default 1)
  std::optional<double> max;       ///< --max: the most load probed (default 256 / 64 req/s)
  /// --resolution: bisection stops this close — a number in the unit, or a share of the
  /// capacity with % (default 1 user; 10 % for rate)
  std::optional<std::string> resolution;
  std::uint32_t repeat_boundary = 3;  ///< --repeat-boundary N: runs of each boundary cell
  std::uint64_t min_requests = 32;    ///< a probe sends max(min_requests, per_slot·C)
  std::uint64_t per_slot = 8;
  double rate_duration_s = 30.0;            ///< --by rate: seconds each probe sends
  double confidence = 0.95;                 ///< --confidence of the percentile bounds
  std::optional<std::string> predict_with;  ///< --predict-with: a fitted sim profile
  std::optional<double> gpu_hour_cost;      ///< --gpu-hour-cost: $ per GPU-hour
  std::optional<std::string> resume;        ///< --resume: a capacity campaign id to continue
  protocol::CampaignDeclared declared;
  /// The probe table, sentence and why on stdout (or the JSON document with --json); `dyno
  /// quick` prints its own answer instead.
  bool print = true;
};

/// What the search answered, for a caller that speaks for it (`dyno quick`).
struct CapacityResult {
  std::filesystem::path campaign_file;
  std::string status;              ///< the campaign's: ok | partial | interrupted | …
  std::string answer_status;       ///< found | at_least_max | below_min | unresolved
  std::optional<double> capacity;  ///< the largest load at which every SLO held
  std::string unit;                ///< "users" or "req/s"
  std::string sentence;            ///< the console's one plain sentence
  /// The boundary's diagnosis: "<finding>: <summary>" of each finding that says yes, else
  /// the unknown ones' reasons; empty when no level failed.
  std::vector<std::string> why;
  std::filesystem::path charts_dir;  ///< the capacity charts (SVG and PNG), one per objective
};

/// Runs the search with `o`'s measuring flags (its --slo read as capacity objectives, e.g.
/// ttft_p90=500ms,tpot_p90=50ms,errors=1%) and returns the exit code; `result`, when given,
/// receives the answer.
int capacity_command(const RunOptions& o, const CapacityOptions& c,
                     CapacityResult* result = nullptr);

}  // namespace dyno::app
