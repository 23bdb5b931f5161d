// What the board's charts draw, taken from a built Board (no figure is computed here that the
// board does not hold; latency samples and power readings come from the selected runs'
// requests.jsonl and telemetry.jsonl). docs/compare.md "Charts" lists which chart uses which.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compare/board.h"

namespace dyno::compare {

struct SeriesPoint {
  std::string cell;  ///< cell id
  double level = 0;  ///< x: concurrency, rate or tokens (the cell's level_kind)
  double value = 0;  ///< y: the selected run's figure
};

/// One line of a small multiple: one arm's figure over the levels of one model and protocol.
struct Series {
  std::string model;
  std::string protocol;
  std::string level_kind;  ///< "concurrency", "rate", "decode_tokens", "prefill_tokens"
  std::string arm;
  std::vector<SeriesPoint> points;  ///< sorted by level
};

/// `metric` (a metric_catalog() key, e.g. "output_tokens_per_s" for throughput vs
/// concurrency, "input_tokens_per_s" or "prefill_rate_client_p50" for prefill) of every arm,
/// grouped by (model, protocol, level kind), panels in board cell order and arms in board
/// order. Cells without a level and absent figures are skipped.
std::vector<Series> figure_series(const Board& board, const std::string& metric);

/// One cell of a delta heatmap (rows: model, columns: level).
struct DeltaPoint {
  std::string cell;  ///< cell id
  std::string model;
  std::string protocol;
  std::string cell_name;
  std::string level_kind;
  std::optional<double> level;
  std::string arm;
  std::string baseline;
  std::string metric;     ///< the figure's key
  bool compared = false;  ///< false: the cell failed a required check (no delta)
  Delta delta;
};

/// `metric`'s delta of every comparison, in board cell order.
std::vector<DeltaPoint> delta_grid(const Board& board, const std::string& metric);

/// The delta of every comparison in the figure `key_of` names for its cell (a metric key; ""
/// leaves the cell out), in board cell order: a heatmap of the figure each cell is judged by.
std::vector<DeltaPoint> delta_grid(const Board& board,
                                   const std::function<std::string(const Cell&)>& key_of);

struct TradeoffPoint {
  std::string cell;
  double level = 0;
  double aggregate_output_tok_s = 0;  ///< output_tokens_per_s
  double per_user_decode_tok_s = 0;   ///< decode_rate_per_user_p50
};

/// The serving trade-off: aggregate output tok/s (x) against per-user decode tok/s (y), one
/// line per (model, protocol, arm), points labelled by level.
struct TradeoffSeries {
  std::string model;
  std::string protocol;
  std::string level_kind;
  std::string arm;
  std::vector<TradeoffPoint> points;  ///< sorted by level
};

std::vector<TradeoffSeries> serving_tradeoff(const Board& board);

/// One point of the frontier chart: an arm's selected run in a load cell, as the board holds
/// it (ArmCell::point; compare/frontier.h).
struct FrontierChartPoint {
  const Cell* cell = nullptr;
  std::string arm;
  OperatingPoint point;  ///< on_frontier is set
};

/// Every point of the frontier (a load cell's arm whose on_frontier the board set), in board
/// cell order, then arm order.
std::vector<FrontierChartPoint> frontier_points(const Board& board);

/// Per-request latencies of a cell's arm (its selected run): completed measured requests, in
/// milliseconds, sorted ascending (a CDF's x values).
struct LatencySamples {
  std::string cell;
  std::string arm;
  std::string run_id;
  std::vector<double> e2e_ms;
  std::vector<double> ttft_ms;
};

LatencySamples latency_samples(const Cell& cell, const ArmCell& arm);

/// Every cell's, every arm's latency samples, in board order.
std::vector<LatencySamples> all_latency_samples(const Board& board);

struct PowerPoint {
  double t_s = 0;      ///< seconds from the run's t0
  double power_w = 0;  ///< instantaneous power, else the averaged reading
};

/// One device's power over one selected run (telemetry.jsonl), with the service window.
struct PowerTimeline {
  std::string cell;
  std::string arm;
  std::string run_id;
  std::string source;  ///< nvml, amdgpu, rapl
  std::int64_t device = 0;
  std::vector<PowerPoint> points;
  std::optional<double> window_begin_s;  ///< service window W, seconds from t0
  std::optional<double> window_end_s;
};

/// Power timelines of every selected run that has telemetry.jsonl with power readings; empty
/// when no run has one. Throws CompareError on a malformed telemetry.jsonl.
std::vector<PowerTimeline> power_timelines(const Board& board);

struct EnergyPoint {
  double t_s = 0;       ///< seconds from the run's t0
  double energy_j = 0;  ///< the device's energy counter since the run's first reading of it
};

/// One device's energy counter over one selected run (telemetry.jsonl `energy_j`), as energy
/// used since the first reading: the sum of the counter's increments. A decrease (a counter
/// reset) adds nothing, as in the energy window (docs/telemetry.md, `counter_reset`).
struct EnergyTimeline {
  std::string cell;
  std::string arm;
  std::string run_id;
  std::string source;  ///< nvml, amdgpu, rapl
  std::int64_t device = 0;
  std::vector<EnergyPoint> points;
  std::optional<double> window_begin_s;  ///< service window W, seconds from t0
  std::optional<double> window_end_s;
};

/// Energy timelines of every selected run whose telemetry.jsonl has energy counter readings
/// (GPUs with a counter, CPU packages); empty when none has. Throws CompareError on a
/// malformed telemetry.jsonl.
std::vector<EnergyTimeline> energy_timelines(const Board& board);

}  // namespace dyno::compare
