// Cost and energy per million tokens: the one definition every writer, board, chart and the
// capacity answer read (docs/metrics.md "Cost and energy per million tokens"). Pure.
#pragma once

#include <cstddef>
#include <optional>

namespace dyno::metrics {

/// Dollars per million tokens served at `tokens_per_s` (aggregate, over the measured window) by
/// `gpus` accelerators each costing `gpu_hour_cost` dollars an hour:
///   gpu_hour_cost × gpus / 3600 / tokens_per_s × 1e6.
/// nullopt when the price is not given, gpus is not > 0, or the rate is absent or not > 0.
std::optional<double> cost_per_mtok(std::optional<double> gpu_hour_cost, double gpus,
                                    std::optional<double> tokens_per_s);

/// Joules per million tokens: energy_j / tokens × 1e6; nullopt when energy was not measured or
/// tokens is not > 0.
std::optional<double> joules_per_mtok(std::optional<double> energy_j, std::optional<double> tokens);

/// The accelerators a cost or a per-GPU figure is normalised by: the record's GPU count, or 1
/// on a host with none (a CPU host, or telemetry off; the board says so).
double normalising_gpus(std::size_t gpus_in_record);

}  // namespace dyno::metrics
