// Calibration: the performance model's parameters fitted to measured cells of one engine and
// model (`dyno sim fit`; docs/sim.md "Calibration"). Pure: it takes per-request observations
// and cell descriptions, never files.
//
// Method: (1) initial estimates by least squares on the step structure the traces show —
// inter-event gaps of decoding requests against the number of requests decoding at that moment
// and their context, and the step that produced each first token against the prompt tokens
// prefilled in it (and their attention context, the quadratic part); max_running_seqs from the most
// requests ever seen decoding at once; (2) refinement: every cell replayed through the Model in
// virtual time (sim/replay.h) with candidate parameters, minimising Σ over cells of |log(predicted
// / measured)| of TTFT p50, TPOT p50 and output tokens/s, by a deterministic Nelder–Mead search in
// log space. The attention structure (per sequence, or a KV cache shared by all sequences) is
// the one whose fit reaches the lower objective.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "metrics/trace.h"
#include "sim/fit_regression.h"
#include "sim/profile.h"
#include "sim/replay.h"

namespace dyno::sim {

/// One measured cell: its load and its measured requests (any order; warm-up, failed and
/// cancelled traces are ignored). Times are the traces' own (ns from the run's t0).
struct ObservedCell {
  std::string name;                          ///< e.g. the run id
  std::optional<std::uint32_t> concurrency;  ///< closed loop; nullopt: open loop (sent times)
  std::vector<metrics::Trace> traces;
};

/// The cell as the replay plays it: the measured ok requests in index order, each with its
/// input, cached and output token counts; a closed loop keeps the concurrency, an open loop
/// sends each request at its measured sent time (relative to the first). Throws
/// std::invalid_argument naming the cell when no measured request is usable (ok, with sent,
/// first-token and done times, input and output token counts).
CellSpec cell_spec(const ObservedCell& cell);

struct FitOptions {
  /// Where every parameter that is not fitted comes from (step_token_budget,
  /// kv_capacity_tokens, max_model_len, ...), and max_running_seqs when no cell saturated.
  Profile base;
  int max_evaluations = 600;  ///< replays of every cell in the refinement
  /// The attention structure to fit; nullopt: both are fitted and the one with the lower
  /// objective is kept (per sequence on a tie).
  std::optional<Attention> attention;
};

/// Measured and predicted figures of one cell.
struct CellComparison {
  std::string name;
  CellFigures measured;
  CellFigures predicted;
};

struct FitResult {
  Profile profile;  ///< the fitted profile (base + fitted parameters)
  Profile initial;  ///< the regression estimates the refinement started from
  /// max_running_seqs was seen: some cell had more requests in flight than ever decoded at
  /// once. Otherwise the profile keeps max(base, the most seen decoding at once).
  bool max_running_identified = false;
  std::uint32_t max_decoding_seen = 0;
  std::int64_t regression_rows = 0;   ///< steps the regression used
  int evaluations = 0;                ///< replays of all cells in the refinement
  double objective = 0.0;             ///< Σ |log errors| at the optimum
  std::vector<CellComparison> cells;  ///< in-sample: each input cell, measured vs predicted
  std::vector<std::string> notes;     ///< what could not be identified, and why
  Attention attention = Attention::kPerSequence;  ///< the structure fitted
  /// Each structure's objective when both were fitted (empty when the structure was given).
  std::vector<std::pair<Attention, double>> attention_objectives;
};

/// Fits the model to the cells. Throws std::invalid_argument when no cell is given, a cell is
/// unusable (see cell_spec) or no request produced two tokens (nothing to time a step with).
FitResult fit_profile(const std::vector<ObservedCell>& cells, const FitOptions& options);

/// Compares a profile's replay of a measured cell with the measurement.
CellComparison compare_cell(const Profile& profile, const ObservedCell& cell);

/// Median of |relative error| over cells of one figure (nullopt when no cell has it).
enum class Figure { kTtftP50, kTpotP50, kOutputTokensPerS, kE2eP50, kRequestsPerS };
std::optional<double> median_abs_error(const std::vector<CellComparison>& cells, Figure figure);

/// One measurement of a cell, and which cell it measured (runs with the same key measured the
/// same requests under the same load).
struct Measurement {
  std::string key;
  CellFigures figures;
};

/// How far the engine repeats itself: over every pair of measurements with the same key (in
/// the order given), |later / earlier − 1| of one figure; their median (nullopt when no key
/// has two measurements with that figure). No prediction can be judged closer than this.
std::optional<double> median_repeat_difference(const std::vector<Measurement>& measurements,
                                               Figure figure);
std::optional<double> figure_of(const CellFigures& f, Figure figure);

}  // namespace dyno::sim
