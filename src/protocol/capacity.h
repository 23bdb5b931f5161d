// Capacity at an SLO (`dyno capacity`, docs/protocols.md "Capacity"): the objectives and their
// judgement over a probe's requests with confidence bounds, the search over load levels —
// bracket by doubling (or from a prediction), bisect to the resolution, repeat the boundary —
// and the campaign file's `capacity` member built from the probes' outcomes alone, so that
// `runs verify` recomputes it from the records. Pure: no request, no file.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine_session/run_cell.h"
#include "metrics/summary.h"
#include "metrics/trace.h"
#include "record/run_record.h"

namespace dyno::protocol {

/// One objective: a latency quantile within a limit (seconds), or the failed share of requests
/// within a limit (a fraction).
struct Objective {
  std::string name;                ///< as written: ttft_p90, tpot_p99, e2e_p50, errors
  std::string figure;              ///< ttft | tpot | e2e | errors
  std::optional<double> quantile;  ///< 0.9 for p90; nullopt for errors
  double limit = 0;                ///< seconds, or a fraction for errors
  std::string unit() const { return quantile ? "s" : "fraction"; }
};

struct CapacitySlo {
  std::string text;  ///< as given
  std::vector<Objective> objectives;
  double confidence = 0.95;
};

/// Reads "ttft_p90=500ms,tpot_p90=50ms,e2e_p99=10s,errors=1%": a latency objective is
/// <ttft|tpot|e2e>_p<N> (N in (0, 100), e.g. p90, p99.9) = a duration (ms unless s); errors = a
/// percentage (with %) or a fraction in [0, 1). Each objective at most once, at least one
/// latency objective. Throws UsageError naming --slo.
CapacitySlo parse_capacity_slo(const std::string& text, double confidence);

/// The per-request bounds of the objectives (each latency objective's limit), which each probe's
/// record counts as goodput (summary goodput_requests): the same limits, request by request.
metrics::Slo goodput_slo(const CapacitySlo& slo);

enum class Verdict { kHolds, kFails, kUnclear };
std::string to_string(Verdict v);

/// An objective over a probe's requests: the point estimate (the quantile, or the failed
/// share), its confidence bounds (metrics/quantile_bound.h; null when the requests are too few
/// for one), how many requests it was judged on, and the verdict: a latency objective holds
/// when the upper bound of its quantile is within the limit and fails when the lower bound is
/// beyond it; the errors objective holds when the failed share is within the limit and fails
/// when its lower bound is beyond it; otherwise unclear.
struct ObjectiveCheck {
  Objective objective;
  std::optional<double> value, low, high;
  std::size_t requests = 0;
  Verdict verdict = Verdict::kUnclear;
};

/// A probe's judgement: holds when every objective holds, fails when one fails, else unclear.
struct Judgement {
  Verdict verdict = Verdict::kUnclear;
  std::vector<ObjectiveCheck> checks;
  /// The decision an unclear judgement falls back on once the probe cannot be repeated:
  /// every point estimate within its limit.
  bool point_estimate_holds = false;
  /// The decision once no more runs will come: held by its bounds, or unclear and held by
  /// its point estimates (what one repetition, and an exhaustive sweep's cell, counts as).
  bool holds() const {
    return verdict == Verdict::kHolds || (verdict == Verdict::kUnclear && point_estimate_holds);
  }
};

/// Judges the measured requests of `traces` (warm-up and cancelled requests left out; failed
/// ones count only for errors; a latency figure a request does not define — TPOT of a
/// one-token answer — is left out of that objective).
Judgement judge(const CapacitySlo& slo, const std::vector<const metrics::Trace*>& traces);

/// How the search moves over load levels.
struct SearchOptions {
  bool integer = true;                ///< concurrency: whole levels
  double min = 1;                     ///< the lowest level probed
  double max = 256;                   ///< the highest
  double resolution = 1;              ///< stop bisecting when first-failing − capacity <= this
  bool relative = false;              ///< resolution is a fraction of the capacity (rate: 0.1)
  std::uint32_t repeat_boundary = 3;  ///< runs of each boundary cell (and of an unclear probe)
  std::optional<double> start;        ///< a predicted capacity: bracket from it
  std::size_t max_probes = 60;        ///< runs in all, a safety stop (answer: unresolved)
};

/// What the search knows of one level: the decision of each repetition on its own and the
/// pooled decision over all of them.
struct LevelState {
  std::vector<bool> each_holds;  ///< per repetition (its bound, or its point estimate if unclear)
  Verdict pooled = Verdict::kUnclear;
  bool pooled_point_holds = false;
};

/// The answer: the largest level at which every objective held, with the first failing level
/// above it and the spread over the boundary's repetitions.
struct Answer {
  std::string status;  ///< found | at_least_max | below_min | unresolved
  std::optional<double> capacity;
  std::optional<double> first_failing;
  std::optional<double> spread_min, spread_max;
  std::uint32_t spread_repetitions = 0;
  bool non_monotone = false;  ///< a level above the first failing one held (pooled)
};

/// The search's next step and its answer from what the levels show so far (`levels`: every
/// level probed, with its repetitions). `next` is nullopt when the search is done.
struct Step {
  std::optional<double> next;
  Answer answer;
};
Step search_step(const SearchOptions& o, const std::map<double, LevelState>& levels);

/// A level's state from its repetitions' judgements (each on its own) and the pooled one.
LevelState level_state(const std::vector<Judgement>& each, const Judgement& pooled,
                       std::uint32_t repeat_boundary);

/// The capacity campaign's parameters (protocol.params of the campaign file) that the
/// `capacity` member is recomputed from.
struct CapacityParams {
  std::string by;  ///< concurrency | rate
  CapacitySlo slo;
  SearchOptions search;
  std::optional<double> gpu_hour_cost;
  double gpus = 1;                  ///< the hardware's GPU count (1 without GPUs)
  std::optional<double> predicted;  ///< the predicted capacity, when a profile was given
  std::optional<std::string> predicted_with;
};
boost::json::object params_json(const CapacityParams& p);
/// Reads params_json's form back; throws std::invalid_argument naming the member.
CapacityParams params_from_json(const boost::json::object& params);

/// A probe: a level and the outcomes of its repetitions, in the order they ran.
struct Probe {
  double level = 0;
  std::string cell;
  std::vector<const engine_session::CellOutcome*> reps;
};

/// A probe of `cell` at `level` over the repetitions it is judged on: every one but an
/// interrupted repetition (which `--resume` runs again).
Probe probe_of(const std::string& cell, double level,
               const std::vector<engine_session::CellOutcome>& reps);

/// A capacity cell's level from its params (a sweep cell's `concurrency` or `rate_per_s`);
/// nullopt when neither is a number.
std::optional<double> level_of(const boost::json::object& cell_params);

/// The search's next step and its answer so far, from the probes.
Step next_step(const CapacityParams& p, const std::vector<Probe>& probes);

/// Why a run went as it did, from its record (diagnose/diagnose.h's findings as JSON).
using DiagnoseRun = std::function<boost::json::value(const engine_session::CellOutcome&)>;

/// The findings capacity_json keeps for the boundary run: diagnose::diagnose_run of the record
/// as read back (requests included), its `findings` array. The command and `runs verify` both
/// diagnose through this, from the record on disk.
boost::json::value boundary_findings(const record::RunRecord& run);

/// The campaign file's `capacity` member: the objectives, each probe's verdicts and bounds
/// (pooled and per repetition), the answer with its spread, the cost and energy at the
/// capacity point, the prediction beside the measurement, and with `diagnose` the diagnosis of
/// the boundary: the first failing level's selected run (the lowest level's when none held;
/// none when every level held).
boost::json::object capacity_json(const CapacityParams& p, const std::vector<Probe>& probes,
                                  const DiagnoseRun& diagnose = {});

/// The answer recomputed from the probes (what capacity_json's `answer` says).
Answer answer_of(const CapacityParams& p, const std::vector<Probe>& probes);

/// A cell's name for a level: c<N> for concurrency, r<rate> for rate.
std::string cell_name(const std::string& by, double level);

/// The one plain sentence the console answers with, e.g. "capacity 24 users: ttft_p90 <= 500
/// ms, tpot_p90 <= 50 ms and errors <= 1 % held at 24 and not at 26 (22–26 over 3
/// repetitions; 95 % bounds over requests)".
std::string answer_sentence(const CapacityParams& p, const Answer& a);

}  // namespace dyno::protocol
