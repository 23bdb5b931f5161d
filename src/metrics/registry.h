// The figures of a run, each defined once (docs/metrics.md): where summary.json holds it, its
// unit and kind of number, which way is better, who measured it, the section of
// docs/metrics.md that defines it, where the typed summary (Summary) keeps it, and how a board
// shows it. The summary writer writes the typed figures through it (record/record_json.cpp),
// boards take their figures and directions from it (compare/figures.cpp), `dyno import table
// --map` names its targets by it (interop/import_table_map.cpp), and a test holds it against
// docs/metrics.md and summary.json's schema. Adding a figure: its computation where its
// measurer is (a client figure: its field in summary.h, computed in summary.cpp; the engine's:
// engine/server_timings.cpp), one entry here, its definition in docs/metrics.md and its place
// in docs/schema/summary.schema.json (tests/metrics/registry_test.cpp checks both).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/summary.h"

namespace dyno::metrics {

/// Which way is better. kNone: shown, never compared (operating figures such as power).
enum class Direction { kHigher, kLower, kNone };

/// Who measured a figure: the client's own clock and counts, the engine (its responses'
/// `timings` or its /metrics counters), or the telemetry sampler (power, energy, memory).
enum class Source { kClient, kEngine, kTelemetry };

/// What kind of number a figure is: what units an import may give it in, and how it is checked
/// (docs/interop.md, "table").
enum class Quantity {
  kCount,     ///< a whole number ≥ 0 (requests, tokens)
  kTimeMs,    ///< ≥ 0, in ms (latency_ms.*)
  kTimeS,     ///< ≥ 0, in s (a window)
  kRate,      ///< ≥ 0, per second
  kFraction,  ///< 0 to 1
  kNumber,    ///< ≥ 0, no unit (tokens per event, concurrency, lengths)
  kPhysical,  ///< a physical quantity in its own unit (J, W, °C, bytes, J/tok, tok/J)
};

/// How a board's delta is expressed: a signed percentage (rates (A/B − 1)·100, latencies
/// (B/A − 1)·100) or percentage points ((A − B)·100, for fractions such as accuracy).
enum class DeltaKind { kPercent, kPoints };

/// The board section (README / report.html) a figure belongs to.
enum class Section {
  kThroughput,
  kFrontier,  ///< the frontier (per GPU against per user) and the cost per million tokens
  kPrefill,
  kLatency,
  kEngine,
  kQuality,
  kGpu,
  kEnergy
};

/// How the bootstrap over requests recomputes a board figure (docs/metrics.md "Intervals").
enum class Resample {
  kServiceRate,  ///< Σ x / W, resampled as a ratio of per-request sums (x over occupancy)
  kDecodeRate,   ///< Σ (out − 1) / decode union, resampled as a ratio over decode spans
  kPercentile,   ///< a percentile of per-request values
  kJitter,       ///< p95 − p50 of per-request values
  /// Σ prompt tokens the engine computed / Σ its prompt time, resampled as a ratio of the
  /// requests' own `timings` (llama.cpp's prompt_n over prompt_ms)
  kEnginePrefill,
  kMean,  ///< the mean of per-request values
  kNone,  ///< no per-request form (energy, VRAM): intervals only over repetitions
};

/// One figure as a board shows it (a distribution may be shown as several: TTFT p50 and p99).
struct BoardView {
  std::string key;    ///< board.json / board.csv key, e.g. "ttft_p50_ms"
  std::string label;  ///< table label, e.g. "TTFT p50"
  std::string stat;   ///< of a distribution: "p50", "p99", "mean", "jitter_p95_minus_p50"
  Section section = Section::kThroughput;
  Resample resample = Resample::kNone;
  double percentile = 50;  ///< for Resample::kPercentile
  int decimals = 1;        ///< in tables
  bool headline = false;   ///< counted at a glance; a non-win is a finding
  int order = 0;           ///< place in a board's tables (ascending)
};

/// One figure of a run.
struct Figure {
  /// Where summary.json holds it, e.g. "throughput.output_tokens_per_s" or (a distribution)
  /// "latency_ms.ttft". For a figure a board derives from other fields of the record it is the
  /// board key, and `formula` says how (e.g. power_mean_w).
  std::string path;
  std::string unit;  ///< "tok/s", "ms", "W", …; "" for counts and fractions
  Quantity quantity = Quantity::kNumber;
  Direction direction = Direction::kNone;
  Source source = Source::kClient;
  /// The heading of docs/metrics.md that defines it, as a GitHub anchor (its slug).
  std::string anchor;
  bool distribution = false;  ///< count, mean, stddev, min, p50 … max, jitter_p95_minus_p50
  /// Derived by the board from other fields of the record: how (docs/metrics.md, "Comparison
  /// boards"); "" for a figure summary.json states at `path`.
  std::string formula;
  /// Who measured it when the engine did: "response timings" or "/metrics"; "".
  std::string engine_source;
  DeltaKind delta_kind = DeltaKind::kPercent;
  /// Where the typed summary keeps it (at most one is set; none for the figures the summary
  /// writer does not hold: the engine's, the telemetry's, the request counts).
  std::optional<double> Summary::*value = nullptr;
  std::optional<std::uint64_t> Summary::*count = nullptr;
  Distribution Summary::*dist = nullptr;
  /// A distribution over every completed request (its count is requests.ok), not a subset
  /// (tpot and the decode rate need two tokens; event gaps are pooled).
  bool over_completed = false;
  /// A target of `dyno import table --map` (a figure an imported ledger may state).
  bool importable = false;
  std::vector<BoardView> board;  ///< how boards show it; empty: not on boards
};

/// Every figure, in summary.json's order.
const std::vector<Figure>& figures();

/// The figure at `path`; nullptr when there is none.
const Figure* find_figure(std::string_view path);

/// The figures whose path lies in summary.json's section `section` ("throughput",
/// "latency_ms", …), in order; the summary writer writes those sections from this list.
std::vector<const Figure*> figures_in(std::string_view section);

/// The key of a figure within its section: "output_tokens_per_s" of
/// "throughput.output_tokens_per_s".
std::string_view leaf(const Figure& f);

/// Mean power over a window, the definition of power_mean_w wherever it is shown (a device's,
/// a run's, a campaign's; docs/metrics.md "Energy and power"): energy_j / window_s; nullopt
/// without an energy figure or with an empty window.
std::optional<double> mean_power_w(std::optional<double> energy_j, double window_s);

/// How far a mean power may stand above the peak before the sources are said to disagree: a
/// counter's energy over a window is read at sample times, so its mean carries the window's
/// edges (a constant 600 W reads 600.3 W over a few seconds at 100 ms); 1 %.
inline constexpr double kPowerDisagreementMargin = 0.01;

/// Whether a mean power (the energy counter over the window, mean_power_w) exceeds the peak
/// of the power samples over the same window by more than kPowerDisagreementMargin: a mean
/// cannot exceed a peak of the same source, so the two sources disagree (a counter that counts
/// what the samples miss, averaged readings, a window mismatch). Shown with both figures and
/// their sources, never silently.
bool power_sources_disagree(std::optional<double> mean_w, std::optional<double> peak_w);

/// Whether the typed summary holds `f` (one of value, count, dist is set).
bool typed(const Figure& f);

/// A statistic of a distribution by its summary.json name ("count", "mean", "p50", "p99_9",
/// "jitter_p95_minus_p50", …); nullopt when absent or the name is not a statistic.
std::optional<double> statistic(const Distribution& d, std::string_view stat);

/// The value of `f` in a typed summary — of a distribution, its statistic `stat` — as the
/// record holds it: nullopt when absent, non-finite, or `f` is not typed (see `typed`).
std::optional<double> value_of(const Summary& s, const Figure& f, std::string_view stat = {});

/// A figure a protocol campaign may pick its median repetition by (`--select`, the campaign
/// file's `selection.metric`; docs/protocols.md): its name there, and the registry figure and
/// statistic it is. The campaign and a board's cross-check of the campaign's choice read it here.
struct SelectionMetric {
  std::string_view name;  ///< e.g. "ttft_p50_ms"
  std::string_view path;  ///< the figure's path, e.g. "latency_ms.ttft"
  std::string_view stat;  ///< of a distribution, e.g. "p50"; "" otherwise
};
const std::vector<SelectionMetric>& selection_metrics();

/// The value of the selection metric `name` in a typed summary; nullopt when the summary has
/// none, or `name` is not a selection metric.
std::optional<double> selection_value(const Summary& s, std::string_view name);

const char* to_string(Direction d);
const char* to_string(Section s);
const char* to_string(Source s);

}  // namespace dyno::metrics
