#include "compare/frontier.h"

#include <cmath>
#include <map>
#include <string>

#include "metrics/cost.h"

namespace dyno::compare {

std::vector<bool> pareto_frontier(const std::vector<std::pair<double, double>>& points) {
  const auto finite = [](const std::pair<double, double>& p) {
    return std::isfinite(p.first) && std::isfinite(p.second);
  };
  std::vector<bool> on(points.size(), false);
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (!finite(points[i])) continue;
    const auto [x, y] = points[i];
    bool dominated = false;
    for (std::size_t j = 0; j < points.size() && !dominated; ++j) {
      if (j == i || !finite(points[j])) continue;
      const auto [qx, qy] = points[j];
      dominated = qx >= x && qy >= y && (qx > x || qy > y);
    }
    on[i] = !dominated;
  }
  return on;
}

bool on_frontier_chart(const std::string& level_kind) {
  return level_kind != "decode_tokens" && level_kind != "prefill_tokens";
}

OperatingPoint operating_point(const Cell& cell, const ArmCell& arm,
                               std::optional<double> gpu_hour_cost) {
  OperatingPoint p;
  p.gpus_in_record = arm.run().manifest.hardware.gpus.size();
  p.gpus = metrics::normalising_gpus(p.gpus_in_record);
  const Figures& f = arm.selected_figures();
  const auto at = [&f](const char* key) {
    const auto it = f.find(key);
    return it == f.end() ? std::nullopt : it->second;
  };
  const std::optional<double> output = at("output_tokens_per_s");
  const std::optional<double> input = at("input_tokens_per_s");
  p.per_user_tok_s = at("decode_rate_per_user_p50");
  p.gpu_hour_cost = gpu_hour_cost;
  // A ladder cell is one request: its rates over the window are that request's latency
  // inverted (docs/compare.md "A cell's own figures"), no operating point and no cost.
  if (!on_frontier_chart(cell.level_kind)) return p;
  if (output) p.output_tok_s_per_gpu = *output / p.gpus;
  p.usd_per_mtok_output = metrics::cost_per_mtok(gpu_hour_cost, p.gpus, output);
  p.usd_per_mtok_total = metrics::cost_per_mtok(
      gpu_hour_cost, p.gpus,
      output && input ? std::optional<double>(*output + *input) : std::nullopt);
  return p;
}

void mark_frontier(std::vector<Cell>& cells) {
  std::map<std::string, std::vector<OperatingPoint*>> by_model;
  for (Cell& c : cells) {
    if (!on_frontier_chart(c.level_kind)) continue;
    for (ArmCell& a : c.arms) {
      a.point.on_frontier.reset();
      if (a.point.per_user_tok_s && a.point.output_tok_s_per_gpu) {
        by_model[c.model].push_back(&a.point);
      }
    }
  }
  for (auto& [model, points] : by_model) {
    std::vector<std::pair<double, double>> xy;
    for (const OperatingPoint* p : points)
      xy.emplace_back(*p->per_user_tok_s, *p->output_tok_s_per_gpu);
    const std::vector<bool> on = pareto_frontier(xy);
    for (std::size_t i = 0; i < points.size(); ++i) points[i]->on_frontier = on[i];
  }
}

void default_gpu_hour_cost(std::vector<ArmInput>& arms, std::optional<double> flag) {
  for (ArmInput& a : arms) {
    if (!a.gpu_hour_cost) a.gpu_hour_cost = flag;
  }
}

}  // namespace dyno::compare
