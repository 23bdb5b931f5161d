// The figures a board compares (docs/metrics.md "Comparison boards"): where each is read from a
// run record, which way is better, and how the bootstrap recomputes it from the run's requests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compare/run_record.h"
#include "metrics/registry.h"

namespace dyno::compare {

// A board's figures come from the metric registry (metrics/registry.h): their directions,
// sections and resampling are its types.
using metrics::DeltaKind;
using metrics::Direction;
using metrics::Resample;
using metrics::Section;

struct MetricDef {
  std::string key;    ///< e.g. "output_tokens_per_s" (board.json, board.csv)
  std::string label;  ///< e.g. "Output tok/s" (tables)
  std::string unit;   ///< e.g. "tok/s", "ms", "W"; "" for counts and fractions
  Direction direction = Direction::kNone;
  DeltaKind delta_kind = DeltaKind::kPercent;
  Section section = Section::kThroughput;
  bool headline = false;  ///< counted at a glance; a non-win is a finding
  Resample resample = Resample::kNone;
  double percentile = 50;  ///< for kPercentile
  int decimals = 1;        ///< in tables
  std::string source;      ///< where the record holds it (docs)
  /// Who measured it when the engine did: "response timings" (llama.cpp `timings` of each
  /// response) or "/metrics" (the engine's counters); "" for the client's own figures.
  std::string engine_source;
  /// The registry's figure this view shows, and which statistic of it (a distribution's).
  const metrics::Figure* figure = nullptr;
  std::string stat;
};

/// Every figure a board shows, in table order: the board views of the metric registry's
/// figures (metrics::figures()), one MetricDef each.
const std::vector<MetricDef>& metric_catalog();

/// The keys of the two prefill figures a board judges a cell by: the engine's own rate
/// (engine-timed prompt tokens over the engine's prompt time) and the client's per-request p50
/// (input tokens over TTFT).
inline constexpr const char* kEnginePrefillKey = "server_prefill_tokens_per_s";
inline constexpr const char* kClientPrefillKey = "prefill_rate_client_p50";

/// A cell's prefill figure (docs/compare.md "A cell's own figures"): the engine-timed prefill
/// rate when every run given has it, else the client's per-request prefill rate.
std::string prefill_figure(const std::vector<const RunRecord*>& runs);

/// Whether a cell of `level_kind` (Cell::level_kind) measures `metric` at all: a ladder cell is
/// one request, so the aggregate rates over a service window (output, input, request and
/// decode tok/s, goodput) are that request's own latency inverted, and are not compared.
bool measures(const MetricDef& metric, const std::string& level_kind);

/// The figures a cell of `level_kind` is judged by, whose prefill figure is `prefill`
/// (prefill_figure()): counted at a glance, coloured in its heatmap, bold in the tables, a
/// non-win a finding. A ladder decode cell by its per-user decode rate, a ladder prefill cell
/// by its prefill figure, every other cell by the aggregate output, request and decode rates
/// (the registry's headline views) and its prefill figure.
std::vector<std::string> own_figures(const std::string& level_kind, const std::string& prefill);

/// Whether a board shows `metric` at all: the engine-timed section's figures (Section::kEngine)
/// only when some run on it has an engine-reported figure (Board::engine_figures).
bool shown(const MetricDef& metric, bool engine_figures);

/// The catalog entry for `key`; nullptr when there is none.
const MetricDef* find_metric(const std::string& key);

/// The figure as the record states it (summary.json; a few derived from its energy section,
/// see docs/metrics.md). nullopt when the record has no such figure.
std::optional<double> read_figure(const MetricDef& metric, const RunRecord& run);

/// Whether the run's mean power (power_mean_w: its energy counter over the window) exceeds the
/// peak of its power samples (power_peak_w): metrics::power_sources_disagree.
bool power_disagreement(const RunRecord& run);

/// Whether the record holds any figure the engine reported (a catalog entry with an
/// engine_source).
bool has_engine_figure(const RunRecord& run);

/// The signed delta of arm `a` against baseline `b` (positive = a better); nullopt when either
/// is absent, the metric has no direction, or (percent deltas) either figure is not > 0.
std::optional<double> delta_of(const MetricDef& metric, std::optional<double> a,
                               std::optional<double> b);

/// Deterministic random numbers for the bootstrap: splitmix64 (Steele, Lea & Flood 2014),
/// the same sequence on every platform.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  /// Uniform in [0, n), n > 0, without modulo bias (rejection of the short top range).
  std::uint64_t below(std::uint64_t n);

 private:
  std::uint64_t state_;
};

/// A run's requests in the form the bootstrap resamples for one figure.
class Sample {
 public:
  /// The sample of `metric` from the run's measured requests; nullopt when the metric has no
  /// per-request form (Resample::kNone) or no request contributes to it.
  static std::optional<Sample> of(const MetricDef& metric, const RunRecord& run);

  /// Per-request values (percentile, jitter, mean).
  static Sample values(Resample kind, double percentile, std::vector<double> values);
  /// A ratio figure R = Σ num / W: per-request numerators and occupancies, and the run's
  /// window W (the service window, or the decode union).
  static Sample ratio(Resample kind, std::vector<double> num, std::vector<double> den,
                      double window);

  std::size_t size() const;
  /// The figure on the whole sample (equals the record's figure for a consistent record).
  std::optional<double> point() const;
  /// The figure on one resample with replacement of size() items; `scratch` is reused space.
  std::optional<double> resampled(Rng& rng, std::vector<std::uint32_t>& scratch) const;

 private:
  bool is_ratio() const;
  Resample kind_ = Resample::kNone;
  double percentile_ = 50;
  std::vector<double> values_;  ///< sorted ascending
  std::vector<double> num_, den_;
  double scale_ = 0;  ///< Σ den / W: the run's occupancy, held fixed over resamples
};

}  // namespace dyno::compare
