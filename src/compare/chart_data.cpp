#include "compare/chart_data.h"

#include <algorithm>
#include <map>

#include "metrics/summary.h"

namespace dyno::compare {

namespace {

std::optional<double> figure(const ArmCell& a, const std::string& metric) {
  const auto& f = a.selected_figures();
  const auto it = f.find(metric);
  return it == f.end() ? std::nullopt : it->second;
}

void sort_points(std::vector<SeriesPoint>& p) {
  std::stable_sort(p.begin(), p.end(),
                   [](const SeriesPoint& a, const SeriesPoint& b) { return a.level < b.level; });
}

/// The service window of a run (earliest sent to latest done of its measured requests that
/// were not cancelled), in seconds from t0.
std::pair<std::optional<double>, std::optional<double>> window_of(const RunRecord& r) {
  std::optional<std::int64_t> lo, hi;
  for (const auto& t : r.traces) {
    if (!t.measured() || t.status == metrics::RequestStatus::kCancelled) continue;
    if (t.sent_ns) lo = std::min(lo.value_or(*t.sent_ns), *t.sent_ns);
    if (t.done_ns) hi = std::max(hi.value_or(*t.done_ns), *t.done_ns);
  }
  std::pair<std::optional<double>, std::optional<double>> w;
  if (lo) w.first = static_cast<double>(*lo) * 1e-9;
  if (hi) w.second = static_cast<double>(*hi) * 1e-9;
  return w;
}

}  // namespace

std::vector<Series> figure_series(const Board& board, const std::string& metric) {
  std::vector<Series> out;
  const auto find = [&out](const Cell& c, const std::string& arm) -> Series& {
    for (auto& s : out) {
      if (s.model == c.model && s.protocol == c.protocol && s.level_kind == c.level_kind &&
          s.arm == arm) {
        return s;
      }
    }
    out.push_back({c.model, c.protocol, c.level_kind, arm, {}});
    return out.back();
  };
  for (const auto& c : board.cells) {
    if (!c.level) continue;
    for (const auto& arm : board.arms) {
      const ArmCell* a = c.arm(arm);
      if (a == nullptr) continue;
      const auto v = figure(*a, metric);
      Series& s = find(c, arm);
      if (v) s.points.push_back({c.id, *c.level, *v});
    }
  }
  for (auto& s : out) sort_points(s.points);
  return out;
}

std::vector<DeltaPoint> delta_grid(const Board& board, const std::string& metric) {
  return delta_grid(board, [&metric](const Cell&) { return metric; });
}

std::vector<DeltaPoint> delta_grid(const Board& board,
                                   const std::function<std::string(const Cell&)>& key_of) {
  std::vector<DeltaPoint> out;
  for (const auto& c : board.cells) {
    const std::string metric = key_of(c);
    if (metric.empty()) continue;
    for (const auto& cmp : c.comparisons) {
      DeltaPoint p;
      p.cell = c.id;
      p.model = c.model;
      p.protocol = c.protocol;
      p.cell_name = c.name;
      p.level_kind = c.level_kind;
      p.level = c.level;
      p.arm = cmp.arm;
      p.baseline = cmp.baseline;
      p.metric = metric;
      p.compared = cmp.status == ComparisonStatus::kCompared;
      const auto it = cmp.deltas.find(metric);
      if (it != cmp.deltas.end()) p.delta = it->second;
      out.push_back(std::move(p));
    }
  }
  return out;
}

std::vector<FrontierChartPoint> frontier_points(const Board& board) {
  std::vector<FrontierChartPoint> out;
  for (const auto& c : board.cells) {
    for (const auto& arm : board.arms) {
      const ArmCell* a = c.arm(arm);
      if (a != nullptr && a->point.on_frontier) out.push_back({&c, arm, a->point});
    }
  }
  return out;
}

std::vector<TradeoffSeries> serving_tradeoff(const Board& board) {
  std::vector<TradeoffSeries> out;
  for (const auto& c : board.cells) {
    if (!c.level) continue;
    for (const auto& arm : board.arms) {
      const ArmCell* a = c.arm(arm);
      if (a == nullptr) continue;
      auto it = std::find_if(out.begin(), out.end(), [&](const TradeoffSeries& s) {
        return s.model == c.model && s.protocol == c.protocol && s.level_kind == c.level_kind &&
               s.arm == arm;
      });
      if (it == out.end()) {
        out.push_back({c.model, c.protocol, c.level_kind, arm, {}});
        it = out.end() - 1;
      }
      const auto x = figure(*a, "output_tokens_per_s");
      const auto y = figure(*a, "decode_rate_per_user_p50");
      if (x && y) it->points.push_back({c.id, *c.level, *x, *y});
    }
  }
  for (auto& s : out) {
    std::stable_sort(
        s.points.begin(), s.points.end(),
        [](const TradeoffPoint& a, const TradeoffPoint& b) { return a.level < b.level; });
  }
  return out;
}

LatencySamples latency_samples(const Cell& cell, const ArmCell& arm) {
  LatencySamples s;
  s.cell = cell.id;
  s.arm = arm.arm;
  s.run_id = arm.run().run_id;
  for (const auto& t : arm.run().traces) {
    if (!t.measured() || !t.ok()) continue;
    const metrics::RequestFigures f = metrics::request_figures(t);
    if (f.e2e_s) s.e2e_ms.push_back(*f.e2e_s * 1e3);
    if (f.ttft_s) s.ttft_ms.push_back(*f.ttft_s * 1e3);
  }
  std::sort(s.e2e_ms.begin(), s.e2e_ms.end());
  std::sort(s.ttft_ms.begin(), s.ttft_ms.end());
  return s;
}

std::vector<LatencySamples> all_latency_samples(const Board& board) {
  std::vector<LatencySamples> out;
  for (const auto& c : board.cells) {
    for (const auto& a : c.arms) out.push_back(latency_samples(c, a));
  }
  return out;
}

std::vector<PowerTimeline> power_timelines(const Board& board) {
  std::vector<PowerTimeline> out;
  for (const auto& c : board.cells) {
    for (const auto& a : c.arms) {
      const RunRecord& r = a.run();
      if (!r.has_telemetry) continue;
      const auto [lo, hi] = window_of(r);
      std::map<std::pair<std::string, std::int64_t>, PowerTimeline> by_device;
      for (const auto& reading : read_telemetry(r.dir)) {
        const auto w = reading.power_instant_w ? reading.power_instant_w : reading.power_average_w;
        if (!w) continue;
        PowerTimeline& p = by_device[{reading.source, reading.device}];
        if (p.points.empty()) {
          p.cell = c.id;
          p.arm = a.arm;
          p.run_id = r.run_id;
          p.source = reading.source;
          p.device = reading.device;
          p.window_begin_s = lo;
          p.window_end_s = hi;
        }
        p.points.push_back({reading.t_s, *w});
      }
      for (auto& kv : by_device) out.push_back(std::move(kv.second));
    }
  }
  return out;
}

std::vector<EnergyTimeline> energy_timelines(const Board& board) {
  std::vector<EnergyTimeline> out;
  for (const auto& c : board.cells) {
    for (const auto& a : c.arms) {
      const RunRecord& r = a.run();
      if (!r.has_telemetry) continue;
      const auto [lo, hi] = window_of(r);
      struct Device {
        EnergyTimeline timeline;
        double last_counter = 0;
      };
      std::map<std::pair<std::string, std::int64_t>, Device> by_device;
      for (const auto& reading : read_telemetry(r.dir)) {
        if (!reading.energy_j) continue;
        Device& d = by_device[{reading.source, reading.device}];
        EnergyTimeline& e = d.timeline;
        if (e.points.empty()) {
          e.cell = c.id;
          e.arm = a.arm;
          e.run_id = r.run_id;
          e.source = reading.source;
          e.device = reading.device;
          e.window_begin_s = lo;
          e.window_end_s = hi;
          e.points.push_back({reading.t_s, 0.0});
        } else {
          const double step = *reading.energy_j - d.last_counter;
          e.points.push_back({reading.t_s, e.points.back().energy_j + std::max(step, 0.0)});
        }
        d.last_counter = *reading.energy_j;
      }
      for (auto& kv : by_device) out.push_back(std::move(kv.second.timeline));
    }
  }
  return out;
}

}  // namespace dyno::compare
