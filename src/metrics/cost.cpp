#include "metrics/cost.h"

#include <cmath>

namespace dyno::metrics {

std::optional<double> cost_per_mtok(std::optional<double> gpu_hour_cost, double gpus,
                                    std::optional<double> tokens_per_s) {
  if (!gpu_hour_cost || !std::isfinite(*gpu_hour_cost) || *gpu_hour_cost < 0) return std::nullopt;
  if (!(gpus > 0) || !tokens_per_s || !(*tokens_per_s > 0) || !std::isfinite(*tokens_per_s)) {
    return std::nullopt;
  }
  return *gpu_hour_cost * gpus / 3600.0 / *tokens_per_s * 1e6;
}

std::optional<double> joules_per_mtok(std::optional<double> energy_j,
                                      std::optional<double> tokens) {
  if (!energy_j || !std::isfinite(*energy_j) || *energy_j < 0) return std::nullopt;
  if (!tokens || !(*tokens > 0)) return std::nullopt;
  return *energy_j / *tokens * 1e6;
}

double normalising_gpus(std::size_t gpus_in_record) {
  return gpus_in_record == 0 ? 1.0 : static_cast<double>(gpus_in_record);
}

}  // namespace dyno::metrics
