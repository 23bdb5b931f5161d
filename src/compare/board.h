// The comparison board: run records arranged into arms, paired into cells, checked for
// fairness, compared with uncertainty, audited for quality; every finding listed
// (docs/compare.md). A Board is a value: report/ serializes it (README.md, board.json,
// board.csv, report.html) and never computes a figure of its own.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compare/expect.h"
#include "compare/fairness.h"
#include "compare/figures.h"
#include "compare/run_record.h"

namespace dyno::compare {

inline constexpr int kBoardSchemaVersion = 1;

using RunPtr = std::shared_ptr<const RunRecord>;

/// The board refuses to render: a required identity is missing from some record and
/// unresolved identities were not allowed. The message lists them and what to do.
class UnresolvedError : public CompareError {
 public:
  using CompareError::CompareError;
};

/// One arm as the user declared it: a name and its runs (already selected and loaded).
struct ArmInput {
  std::string name;
  std::vector<std::string> selectors;  ///< as given (provenance)
  std::vector<RunPtr> runs;            ///< paired automatically
  /// What one GPU of this arm costs an hour, in USD (`--gpu-hour-cost`, or the arm's own
  /// `gpu_hour_cost` in the board spec, which wins); nullopt: no cost is shown for the arm.
  std::optional<double> gpu_hour_cost{};
};

/// A cell mapped explicitly (board spec file): its runs per arm, repetitions of one cell.
struct ExplicitCell {
  std::string name;
  std::string model;                                ///< display name; "" = the first run's model id
  std::map<std::string, std::vector<RunPtr>> runs;  ///< by arm name
};

struct BoardInput {
  std::string title;                                 ///< "" = "<arms> vs <baseline>"
  std::vector<ArmInput> arms;                        ///< at least two
  std::string baseline;                              ///< "" = the last arm
  std::vector<ExplicitCell> cells;                   ///< explicit cells (board spec)
  std::map<std::string, std::string> model_aliases;  ///< model id -> name used for pairing
  /// Campaign files by id (<runs-root>/campaigns/<id>.json), to cross-check the repetition
  /// each selected.
  std::map<std::string, boost::json::object> campaigns;
  /// Records under the runs root left out because their manifest could not be read:
  /// "<path>: <why>", for a warning (one broken record does not stop a query).
  std::vector<std::string> skipped;
};

struct QualityThresholds {
  double accuracy_pp = 2.0;      ///< |accuracy_delta_pp| at or above warns
  double output_gap_pct = 10.0;  ///< output_mean_gap_pct at or above warns
};

struct BootstrapOptions {
  std::uint32_t resamples = 2000;
  double confidence = 0.95;
  std::uint64_t seed = 0;
  std::size_t min_requests = 10;    ///< fewer per arm: no interval over requests
  std::size_t min_repetitions = 3;  ///< at least this many per arm: intervals over repetitions
};

/// Who rendered the board (written into board.json; fixed in golden tests).
struct Generator {
  std::string name = "dyno";
  std::string version;
  std::string git_commit;
  std::string executable_sha256;  ///< of the binary that made the board ("" = unknown)
};

/// A cell whose accuracy is not comparable (board spec): its comparisons get no accuracy delta,
/// verdict or accuracy warning, and say why.
struct AccuracyMark {
  std::string cell;    ///< a cell id of the board (or of an unpaired run)
  std::string arm;     ///< "" = every comparison in the cell; else those the arm is part of
  std::string reason;  ///< why, as the spec gives it
  std::string key;     ///< the spec key it came from (errors)
};

struct BoardOptions {
  Policy policy;
  QualityThresholds quality;
  BootstrapOptions bootstrap;
  bool allow_unresolved = false;
  Generator generator;
  std::string spec_file_sha256;  ///< of the board spec file, when one was given
  Expectations expect;           ///< pinned by the spec (and --expect-spec-sha256)
  std::vector<AccuracyMark> accuracy_marks;
};

enum class Verdict { kWin, kTie, kLoss, kNoInterval, kNotApplicable };
const char* to_string(Verdict v);

/// A delta of one figure between an arm and the baseline in one cell.
struct Delta {
  std::optional<double> value;  ///< positive = the arm is better (percent or points)
  std::optional<double> low;    ///< the interval (confidence of the board)
  std::optional<double> high;
  std::string method;       ///< "bootstrap_requests", "bootstrap_repetitions" or ""
  std::string no_interval;  ///< why there is no interval ("" when there is one)
  /// A run of the pair is summary-only (an import without per-request data): the delta is a
  /// point estimate of the tools' figures, no_interval "summary only", never a win or loss.
  bool summary_only = false;
  Verdict verdict = Verdict::kNotApplicable;
  std::size_t n_arm = 0;  ///< requests (or repetitions) behind the interval
  std::size_t n_baseline = 0;
};

using Figures = std::map<std::string, std::optional<double>>;  ///< metric key -> value

/// Where an arm's selected run in a cell stands on the frontier, and what its tokens cost
/// (compare/frontier.h; docs/metrics.md "Cost and energy per million tokens").
struct OperatingPoint {
  std::size_t gpus_in_record = 0;  ///< the selected run's manifest hardware.gpus
  double gpus = 1;                 ///< metrics::normalising_gpus: 1 on a host without GPUs
  std::optional<double> output_tok_s_per_gpu;  ///< output_tokens_per_s / gpus
  std::optional<double> per_user_tok_s;        ///< decode_rate_per_user_p50
  /// On the Pareto frontier of its model's load cells across arms; nullopt when the point is
  /// not on the chart (a ladder cell: one request; or either figure absent).
  std::optional<bool> on_frontier;
  std::optional<double> gpu_hour_cost;        ///< the arm's price, USD per GPU-hour
  std::optional<double> usd_per_mtok_output;  ///< metrics::cost_per_mtok over output tok/s
  std::optional<double> usd_per_mtok_total;   ///< over input + output tok/s
};

/// One arm's runs in one cell.
struct ArmCell {
  std::string arm;
  std::vector<RunPtr> runs;      ///< repetitions, in repetition order
  std::size_t selected = 0;      ///< index into runs: the repetition the declared rule picked
  std::string selection;         ///< e.g. "median of 3 by output_tokens_per_s"; "" for one run
  std::vector<Figures> figures;  ///< per repetition
  OperatingPoint point;          ///< the selected run's
  const RunRecord& run() const { return *runs[selected]; }
  const Figures& selected_figures() const { return figures[selected]; }
};

struct AnswerDisagreement {
  std::string request_id;
  bool arm_correct = false;
  bool baseline_correct = false;
  std::string arm_extracted;  ///< model-derived text: escape before showing it
  std::string baseline_extracted;
};

/// Quality audit of a pair (docs/metrics.md "Comparisons").
struct QualityAudit {
  std::optional<double> accuracy_arm, accuracy_baseline;
  std::optional<std::uint64_t> scored_arm, scored_baseline, correct_arm, correct_baseline;
  std::optional<double> accuracy_delta_pp;  ///< (acc arm − acc baseline) · 100
  std::optional<double> output_mean_arm, output_mean_baseline;
  std::optional<double> output_mean_gap_pct;
  bool accuracy_comparable = true;  ///< false: marked in the board spec (no accuracy delta)
  std::string accuracy_reason;      ///< why not, as the spec gives it
  bool warning = false;
  std::vector<std::string> reasons;
  std::vector<AnswerDisagreement> disagreements;  ///< requests scored differently, by id
};

enum class ComparisonStatus { kCompared, kFailedChecks };
const char* to_string(ComparisonStatus s);

/// One arm against the baseline in one cell.
struct Comparison {
  std::string arm;
  std::string baseline;
  ComparisonStatus status = ComparisonStatus::kCompared;
  std::vector<Check> checks;
  std::map<std::string, Delta> deltas;  ///< by metric key; empty when checks failed
  QualityAudit quality;
  bool unresolved = false;  ///< some required check is unresolved (allowed)
  const Check* check(const std::string& name) const;
};

/// What is compared: one model, one protocol cell (e.g. a concurrency level).
struct Cell {
  std::string id;               ///< "<model>/<protocol>/<cell>", unique in the board
  std::string model;            ///< after aliases (the pairing key)
  std::string protocol;         ///< e.g. "sweep", "run"
  std::string name;             ///< the protocol's cell name, e.g. "c4"
  std::string level_kind;       ///< "concurrency", "rate", "decode_tokens", "prefill_tokens" or ""
  std::optional<double> level;  ///< the x value of charts (concurrency, rate, tokens)
  std::vector<ArmCell> arms;    ///< in board arm order, only arms with runs here
  std::vector<Comparison> comparisons;  ///< every non-baseline arm present, vs the baseline
  /// The cell's prefill figure, a metric key (prefill_figure(): the engine-timed rate when
  /// every run of the cell has it, else the client's per-request p50).
  std::string prefill_figure;
  const ArmCell* arm(const std::string& arm_name) const;
  /// Whether the cell is judged by `metric` (own_figures() of its kind and prefill figure).
  bool judged_by(const std::string& metric) const;
};

/// A run that is part of no comparison, and why (never dropped silently).
struct UnpairedRun {
  std::string arm;
  std::string run_id;  ///< "" for a selector that gave no usable run
  std::string cell;    ///< the cell id it would belong to ("" when unknown)
  std::string reason;
};

/// A run a board spec cell puts another run in place of (docs/compare.md "Board spec file"):
/// in no comparison, but not missing either.
struct ReplacedRun {
  std::string arm;
  std::string run_id;
  std::string cell;         ///< the spec cell that holds its replacement
  std::string replaced_by;  ///< the run in its place
  /// "derived": the replacement is a derived record of it (dyno rescore, derived_from);
  /// "rerun": the replacement measured the same arm in the same model, protocol and cell.
  std::string how;
};

struct Finding {
  std::string type;     ///< docs/compare.md "Findings"
  std::string cell;     ///< cell id, "" for board-wide findings
  std::string arm;      ///< "" when not about one arm
  std::string message;  ///< one sentence with the numbers
  boost::json::object data;
};

/// The win / tie / loss count of one headline figure for one arm against the baseline.
struct Tally {
  std::string arm;
  std::string metric;
  /// "intervals": pairs with requests behind both figures (verdicts from intervals);
  /// "summary_only": pairs with a summary-only run (point deltas only; own line).
  std::string basis = "intervals";
  std::size_t wins = 0, ties = 0, losses = 0, no_interval = 0, compared = 0;
  /// Point-estimate verdicts, the sign of each compared cell's delta, beside the interval
  /// verdicts (how a ledger without intervals counts wins).
  std::size_t point_wins = 0, point_ties = 0, point_losses = 0;
  /// The smallest, largest and median of the compared cells' deltas (the median of an even
  /// count: the mean of the two middle ones); nullopt when no delta is defined.
  std::optional<double> delta_min, delta_max, delta_median;
};

/// How one fairness check went over the board's pairs (ignored checks are not tallied).
struct CheckTally {
  std::string check;
  std::size_t pass = 0, fail = 0, unresolved = 0, pairs = 0;
};

struct Board {
  int schema_version = kBoardSchemaVersion;
  std::string title;
  /// expectations_failed | checks_failed | unresolved_allowed | incomplete | complete
  std::string status;
  std::vector<std::string> arms;  ///< declared order
  std::string baseline;
  std::map<std::string, std::vector<std::string>> selectors;  ///< by arm
  std::vector<Cell> cells;
  std::vector<UnpairedRun> unpaired;
  std::vector<ReplacedRun> replaced;  ///< runs a spec cell replaced (not unpaired)
  std::vector<Finding> findings;
  /// Per non-baseline arm, per headline metric: the interval line, and a summary-only line
  /// when some pair has a summary-only run.
  std::vector<Tally> tallies;
  std::vector<CheckTally> check_tallies;  ///< per check not ignored, in check_catalog() order
  /// Required checks that are unresolved somewhere (allowed with --allow-unresolved).
  std::vector<std::string> unresolved_checks;
  Policy policy;
  QualityThresholds quality;
  BootstrapOptions bootstrap;
  bool allow_unresolved = false;
  Generator generator;
  std::string spec_file_sha256;
  Expectations expect;
  std::vector<ExpectationResult> expectations;  ///< every pinned expectation checked
  /// Some run on the board has a figure the engine reported (metric_catalog() entries with an
  /// engine_source): only then does the board show its engine-timed section.
  bool engine_figures = false;
  /// The arms that have a price (USD per GPU-hour): the board shows cost only when some has.
  std::map<std::string, double> gpu_hour_cost;

  /// Comparisons in cell order (every non-baseline arm's), with their cell.
  std::vector<std::pair<const Cell*, const Comparison*>> comparisons() const;
  /// Every run behind the board (selected or not), once, in run-id order.
  std::vector<RunPtr> runs() const;
};

/// Builds the board. Throws UnresolvedError when a required check is unresolved and
/// options.allow_unresolved is false; ExpectationError when a pinned expectation fails and the
/// policy refuses (a pinned spec SHA-256 that differs refuses whatever the policy);
/// CompareError for inconsistent input (fewer than two arms, an unknown baseline, an arm with
/// one cell's runs from several campaigns, an accuracy mark naming no cell).
Board build_board(const BoardInput& input, const BoardOptions& options);

/// The repetition a selection rule picks: the median by `metric` (the lower middle one for an
/// even count), ties broken by repetition order, as the protocols pick it
/// (docs/protocols.md). `values` holds the metric per repetition; nullopt ones are skipped.
/// nullopt when no repetition has a value.
std::optional<std::size_t> median_repetition(const std::vector<std::optional<double>>& values);

/// The value a protocol's selection metric names (docs/protocols.md "--select") in a record's
/// summary; nullopt for an unknown name or an absent figure.
std::optional<double> selection_metric(const RunRecord& run, const std::string& metric);

}  // namespace dyno::compare
