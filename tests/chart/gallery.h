// Realistic example charts of every kind (two arms "A"/"B", concurrency 1..256, tok/s in
// thousands, latencies in ms, power in W), plus degenerate ones. Used by chart_test and by
// dyno_chart_gallery, which writes them as SVG and PNG for a person to look at.
// The data are made up by formulas and a fixed-seed generator, so every build draws the same.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "chart/chart.h"

namespace dyno::chart::gallery {

/// splitmix64: a small fixed generator (std:: distributions differ between libraries).
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  double uniform() {  // (0, 1)
    state_ += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (static_cast<double>(z >> 11) + 0.5) / 9007199254740992.0;
  }
  double normal() {  // Box–Muller
    const double u1 = uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  std::uint64_t state_;
};

inline const std::vector<std::string>& model_names() {
  static const std::vector<std::string> kNames = {"Llama-3.1-8B-Instruct",
                                                  "Qwen2.5-7B-Instruct",
                                                  "Mistral-7B-Instruct-v0.3",
                                                  "gemma-2-9b-it",
                                                  "Phi-3.5-mini",
                                                  "Llama-3.2-3B-Instruct",
                                                  "Qwen2.5-14B-Instruct",
                                                  "DeepSeek-R1-Distill-Qwen-7B",
                                                  "granite-3.1-8b",
                                                  "Llama-3.3-70B-Instruct-AWQ"};
  return kNames;
}

inline std::vector<double> ladder(std::size_t steps) {
  std::vector<double> c;
  for (std::size_t i = 0; i < steps; ++i) c.push_back(std::pow(2.0, static_cast<double>(i)));
  return c;
}

// Per-user decode rate holds at low concurrency and falls once the batch saturates the GPU,
// so aggregate throughput (per-user × concurrency) levels off near base × knee; arm B
// saturates later.
inline double per_user_tok_s(std::size_t model, int arm, double c) {
  const double base = 120.0 - 9.0 * static_cast<double>(model);
  const double knee = (arm == 0 ? 36.0 : 44.0) + 3.0 * static_cast<double>(model % 3);
  return base / std::sqrt(1.0 + (c / knee) * (c / knee));
}

inline Axis concurrency_axis() {
  return Axis{.title = "Concurrency",
              .unit = "requests in flight",
              .scale = Scale::kLog2,
              .ticks_at_data = true};
}

inline LineChart throughput(std::size_t models, std::size_t steps) {
  LineChart chart;
  chart.title = "Output throughput vs concurrency";
  chart.subtitle = "A: engine 0.6.3  ·  B: engine 0.7.0  ·  same GPU, same request stream";
  chart.x = concurrency_axis();
  chart.y = Axis{.title = "Aggregate output", .unit = "tok/s", .include_zero = true};
  for (std::size_t m = 0; m < models; ++m) {
    Panel p;
    p.title = model_names()[m % model_names().size()];
    for (int arm = 0; arm < 2; ++arm) {
      Series s;
      s.name = arm == 0 ? "A" : "B";
      for (double c : ladder(steps)) s.points.push_back({c, c * per_user_tok_s(m, arm, c), {}});
      p.series.push_back(std::move(s));
    }
    chart.panels.push_back(std::move(p));
  }
  return chart;
}

inline LineChart prefill(std::size_t models, std::size_t steps) {
  LineChart chart;
  chart.title = "Prefill throughput vs concurrency";
  chart.x = concurrency_axis();
  chart.y = Axis{.title = "Prefill", .unit = "tok/s", .include_zero = true};
  for (std::size_t m = 0; m < models; ++m) {
    Panel p;
    p.title = model_names()[m % model_names().size()];
    for (int arm = 0; arm < 2; ++arm) {
      Series s;
      s.name = arm == 0 ? "A" : "B";
      const double peak = (arm == 0 ? 9000.0 : 10500.0) - 500.0 * static_cast<double>(m);
      for (double c : ladder(steps)) s.points.push_back({c, peak * c / (c + 6.0), {}});
      p.series.push_back(std::move(s));
    }
    chart.panels.push_back(std::move(p));
  }
  return chart;
}

/// A ladder board's decode chart: per-user decode rate over context depths 0 … 64k on an
/// ordinal axis (depth 0 shown, the depths evenly spaced); decode slows as the context grows.
inline LineChart ladder_decode(std::size_t models) {
  LineChart chart;
  chart.title = "Decode rate vs context depth";
  chart.subtitle = "Per-user decode tok/s (p50) of one request at each depth; higher is better";
  chart.x = Axis{.title = "Context depth", .unit = "tokens", .scale = Scale::kOrdinal};
  chart.y = Axis{.title = "Per-user decode, p50", .unit = "tok/s", .include_zero = true};
  for (std::size_t m = 0; m < models; ++m) {
    Panel p;
    p.title = model_names()[m % model_names().size()];
    for (int arm = 0; arm < 2; ++arm) {
      Series s;
      s.name = arm == 0 ? "A" : "B";
      const double base = (arm == 0 ? 118.0 : 124.0) - 9.0 * static_cast<double>(m);
      const double knee = arm == 0 ? 40000.0 : 30000.0;
      for (double depth : {0.0, 8000.0, 16000.0, 32000.0, 64000.0}) {
        s.points.push_back({depth, base / (1.0 + depth / knee), {}});
      }
      p.series.push_back(std::move(s));
    }
    chart.panels.push_back(std::move(p));
  }
  return chart;
}

inline TradeOff trade_off(std::size_t models, std::size_t steps) {
  TradeOff chart;
  chart.title = "Serving trade-off: aggregate vs per-user speed";
  chart.subtitle = "Each point is one concurrency; up and to the right is better";
  chart.x = Axis{.title = "Per-user decode", .unit = "tok/s", .include_zero = true};
  chart.y = Axis{.title = "Aggregate output", .unit = "tok/s", .include_zero = true};
  for (std::size_t m = 0; m < models; ++m) {
    Panel p;
    p.title = models > 1 ? model_names()[m % model_names().size()] : "";
    for (int arm = 0; arm < 2; ++arm) {
      Series s;
      s.name = arm == 0 ? "A" : "B";
      for (double c : ladder(steps)) {
        const double u = per_user_tok_s(m, arm, c);
        s.points.push_back({u, u * c, "c=" + std::to_string(static_cast<int>(c))});
      }
      p.series.push_back(std::move(s));
    }
    chart.panels.push_back(std::move(p));
  }
  return chart;
}

/// The frontier of two arms over a concurrency ladder: per GPU (y) against per user (x), the
/// points no other beats marked as a board marks them (compare::pareto_frontier's rule).
inline Frontier frontier(std::size_t models, std::size_t steps) {
  Frontier chart;
  chart.title = "Frontier: output per GPU against speed per user";
  chart.subtitle = "One point per cell and arm; the line joins the points no other beats in both";
  chart.x = Axis{.title = "Per-user decode, p50", .unit = "tok/s", .include_zero = true};
  chart.y = Axis{.title = "Output per GPU", .unit = "tok/s", .include_zero = true};
  chart.note = "Faded: dominated.";
  for (std::size_t m = 0; m < models; ++m) {
    FrontierPanel p;
    p.title = models > 1 ? model_names()[m % model_names().size()] : "";
    std::vector<std::pair<double, double>> all;
    for (int arm = 0; arm < 2; ++arm) {
      for (double c : ladder(steps)) {
        const double u = per_user_tok_s(m, arm, c);
        all.emplace_back(u, u * c / (arm == 0 ? 1.0 : 2.0));  // B runs on two GPUs
      }
    }
    std::size_t i = 0;
    for (int arm = 0; arm < 2; ++arm) {
      FrontierSeries s;
      s.name = arm == 0 ? "A" : "B";
      s.style = static_cast<std::size_t>(arm);
      for (double c : ladder(steps)) {
        const auto [x, y] = all[i++];
        bool dominated = false;
        for (const auto& [qx, qy] : all)
          dominated = dominated || (qx >= x && qy >= y && (qx > x || qy > y));
        s.points.push_back({x, y, "c=" + std::to_string(static_cast<int>(c)), !dominated,
                            "$" + std::to_string(static_cast<int>(1000.0 / y)) + "/Mtok"});
      }
      p.series.push_back(std::move(s));
    }
    chart.panels.push_back(std::move(p));
  }
  return chart;
}

inline Heatmap delta_heatmap(std::size_t models, std::size_t cells) {
  Heatmap h;
  h.title = "Output throughput, B vs A";
  h.subtitle = "Relative change of B over A per model and cell (paired runs)";
  h.row_title = "Model";
  h.column_title = "Cell (concurrency)";
  h.scale_title = "Δ output tok/s (%)";
  h.positive_label = "B higher";
  h.negative_label = "B lower";
  h.format = ValueFormat{1, true, "%"};
  h.min_limit = 5.0;
  Random rng(7);
  for (std::size_t c = 0; c < cells; ++c) {
    h.columns.push_back("c=" + std::to_string(1 << c));
  }
  for (std::size_t m = 0; m < models; ++m) {
    h.rows.push_back(model_names()[m % model_names().size()]);
    std::vector<std::optional<double>> row;
    std::vector<std::string> labels;  // the verdict, as a board marks it
    for (std::size_t c = 0; c < cells; ++c) {
      if (models > 2 && (m * 7 + c * 3) % 23 == 5) {
        row.push_back(std::nullopt);  // a cell whose run failed
        labels.push_back("not compared");
        continue;
      }
      const double v = -6.0 + 3.5 * static_cast<double>(c) + 4.0 * rng.normal() -
                       static_cast<double>(m % 4) * 2.0;
      row.push_back(v);
      labels.push_back(v > 3.0 ? "win" : v < -3.0 ? "loss" : "tie");
    }
    h.values.push_back(std::move(row));
    h.cell_labels.push_back(std::move(labels));
  }
  return h;
}

inline Cdf latency_cdf(std::size_t cells, std::size_t n) {
  Cdf chart;
  chart.title = "Time to first token, per cell";
  chart.subtitle = "Llama-3.1-8B-Instruct; " + std::to_string(n) + " requests per arm and cell";
  chart.x = Axis{.title = "TTFT", .unit = "ms", .scale = Scale::kLog10};
  Random rng(11);
  for (std::size_t cell = 0; cell < cells; ++cell) {
    const double c = std::pow(2.0, static_cast<double>(cell));
    CdfPanel p;
    p.title = "c=" + std::to_string(static_cast<int>(c));
    for (int arm = 0; arm < 2; ++arm) {
      Sample s;
      s.name = arm == 0 ? "A" : "B";
      const double median = (arm == 0 ? 45.0 : 38.0) * (1.0 + c / 24.0);
      for (std::size_t i = 0; i < n; ++i)
        s.values.push_back(median * std::exp(0.45 * rng.normal()));
      p.samples.push_back(std::move(s));
    }
    chart.panels.push_back(std::move(p));
  }
  return chart;
}

inline Timeline power_timeline(std::size_t cells) {
  Timeline chart;
  chart.title = "GPU power during the run";
  chart.subtitle = "Sampled every 100 ms; shaded: the measured service window";
  chart.x = Axis{.title = "Time since start", .unit = "s", .include_zero = true};
  chart.y = Axis{.title = "Power", .unit = "W", .include_zero = true};
  Random rng(3);
  for (std::size_t cell = 0; cell < cells; ++cell) {
    const double c = std::pow(2.0, static_cast<double>(cell * 2 + 2));
    Panel p;
    p.title = "c=" + std::to_string(static_cast<int>(c));
    const double start = 8.0;
    const double end = 98.0 + static_cast<double>(cell) * 4.0;
    p.windows.push_back({start, end, "measured"});
    for (int arm = 0; arm < 2; ++arm) {
      Series s;
      s.name = arm == 0 ? "A" : "B";
      const double busy = std::min(690.0, 260.0 + 80.0 * std::log2(c)) - (arm == 1 ? 35.0 : 0.0);
      for (int i = 0; i <= 1100; ++i) {
        const double t = i * 0.1;
        double w = 72.0;
        if (t >= start - 1.0 && t <= end + 1.5) {
          const double ramp = std::min(1.0, (t - start + 1.0) / 1.5);
          w = 72.0 + (busy - 72.0) * ramp;
        }
        s.points.push_back({t, w + 9.0 * rng.normal(), {}});
      }
      p.series.push_back(std::move(s));
    }
    chart.panels.push_back(std::move(p));
  }
  return chart;
}

inline Timeline energy_timeline() {
  Timeline chart;
  chart.title = "Cumulative GPU energy";
  chart.x = Axis{.title = "Time since start", .unit = "s", .include_zero = true};
  chart.y = Axis{.title = "Energy", .unit = "kJ", .include_zero = true};
  Panel p;
  p.windows.push_back({8.0, 98.0, "measured"});
  for (int arm = 0; arm < 2; ++arm) {
    Series s;
    s.name = arm == 0 ? "A" : "B";
    double e = 0.0;
    for (int i = 0; i <= 1100; ++i) {
      const double t = i * 0.1;
      const double w = (t >= 8.0 && t <= 98.0) ? (arm == 0 ? 610.0 : 560.0) : 72.0;
      e += w * 0.1 / 1000.0;
      s.points.push_back({t, e, {}});
    }
    p.series.push_back(std::move(s));
  }
  chart.panels.push_back(std::move(p));
  return chart;
}

/// Six arms in one panel: every palette entry a reader must tell apart (colour, marker, dash).
inline LineChart many_arms() {
  LineChart chart;
  chart.title = "Output throughput of six engine builds";
  chart.x = concurrency_axis();
  chart.y = Axis{.title = "Aggregate output", .unit = "tok/s", .include_zero = true};
  Panel p;
  p.title = model_names()[0];
  for (int arm = 0; arm < 6; ++arm) {
    Series s;
    s.name = std::string("build ") + static_cast<char>('A' + arm) + (arm == 5 ? " (nightly)" : "");
    for (double c : ladder(9)) {
      const double knee = 30.0 + 4.0 * arm;
      s.points.push_back({c, c * 110.0 / std::sqrt(1.0 + (c / knee) * (c / knee)), {}});
    }
    p.series.push_back(std::move(s));
  }
  chart.panels.push_back(std::move(p));
  return chart;
}

/// Probes of a search against a limit (a capacity search's TTFT p90): markers only, one series
/// per verdict, each with a confidence interval as an error bar (one without its lower end),
/// the limit as a horizontal rule, the answer as a vertical one with its spread shaded, a
/// prediction dashed.
inline LineChart limit_probes() {
  LineChart chart;
  chart.title = "TTFT p90 against concurrency";
  chart.subtitle = "SLO 500 ms, capacity 24 users (22–26 over 3 repetitions); predicted 20 users";
  chart.note = "Bars: 95 % confidence bounds over each probe's requests.";
  chart.x = Axis{.title = "Concurrency", .unit = "users"};
  chart.y = Axis{.title = "TTFT p90", .unit = "ms", .include_zero = true};
  chart.legend_always = true;
  chart.description = "Probes: 1: 95 ms holds; 64: 2100 ms fails.";
  Panel p;
  Series holds{.name = "holds", .points = {}, .style = 2, .joined = false};
  Series fails{.name = "fails", .points = {}, .style = 13, .joined = false};
  Series unclear{.name = "unclear", .points = {}, .style = 1, .joined = false};
  for (double c : {1.0, 2.0, 4.0, 8.0, 16.0, 24.0}) {
    const double v = 90.0 + c * c * 0.6;
    holds.points.push_back({.x = c, .y = v, .low = v * 0.9, .high = v * 1.12});
  }
  fails.points.push_back({.x = 32.0, .y = 720.0, .low = 640.0, .high = 810.0});
  fails.points.push_back({.x = 64.0, .y = 2100.0, .high = 2400.0});
  unclear.points.push_back({.x = 28.0, .y = 480.0, .low = 430.0, .high = 540.0});
  p.series = {holds, fails, unclear};
  p.y_rules.push_back({500.0, "SLO 500 ms", false});
  p.x_rules.push_back({24.0, "capacity 24 users", false});
  p.x_rules.push_back({20.0, "predicted 20 users", true});
  p.windows.push_back({22.0, 26.0, ""});
  chart.panels.push_back(std::move(p));
  return chart;
}

/// A heatmap whose column labels are too long to sit side by side (they turn upright).
inline Heatmap long_labels_heatmap() {
  Heatmap h = delta_heatmap(4, 6);
  h.title = "TTFT p99, B vs A";
  h.scale_title = "Δ TTFT p99 (%)";
  h.positive_label = "B slower";
  h.negative_label = "B faster";
  h.columns = {"c=1 · 1k in / 128 out", "c=8 · 1k in / 128 out", "c=64 · 1k in / 128 out",
               "c=1 · 8k in / 512 out", "c=8 · 8k in / 512 out", "c=64 · 8k in / 512 out"};
  return h;
}

/// Degenerate inputs every kind must draw without failing: one point, all-equal values, zeros,
/// empty series and panels, NaN/inf, negative values, values <= 0 on log axes.
inline std::vector<std::pair<std::string, Chart>> degenerate() {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<std::pair<std::string, Chart>> out;

  LineChart one;
  one.title = "One point";
  one.x = concurrency_axis();
  one.y = Axis{.title = "Output", .unit = "tok/s"};
  one.panels.push_back({"model", {{"A", {{16.0, 1234.0, {}}}, {}}}, {}});
  out.emplace_back("degenerate_one_point", one);

  LineChart equal = one;
  equal.title = "All values equal, zeros, NaN and an empty series";
  equal.panels = {
      {"equal", {{"A", {{1, 500, {}}, {2, 500, {}}, {4, 500, {}}}, {}}}, {}},
      {"zeros", {{"A", {{1, 0, {}}, {2, 0, {}}, {4, 0, {}}}, {}}, {"B", {{1, 0, {}}}, {}}}, {}},
      {"NaN and inf",
       {{"A", {{1, 10, {}}, {2, kNaN, {}}, {4, 30, {}}, {kNaN, 5, {}}, {8, kInf, {}}}, {}}},
       {}},
      {"empty", {{"C", {}, {}}}, {}},
      {"", {}, {}},
  };
  out.emplace_back("degenerate_mixed", equal);

  LineChart ordinal = one;
  ordinal.title = "Ordinal x: one level, negative levels and NaN, no data";
  ordinal.x = Axis{.title = "Context depth", .unit = "tokens", .scale = Scale::kOrdinal};
  ordinal.grid.shared_x = false;
  ordinal.panels = {
      {"one level", {{"A", {{0, 50, {}}}, {}}}, {}},
      {"negative, NaN", {{"A", {{-5, 1, {}}, {0, kNaN, {}}, {10, 3, {}}, {kInf, 4, {}}}, {}}}, {}},
      {"empty", {{"B", {}, {}}}, {}},
  };
  out.emplace_back("degenerate_ordinal", ordinal);

  Timeline ordinal_windows;
  ordinal_windows.title = "Ordinal timeline: windows between and beyond the levels";
  ordinal_windows.x = Axis{.title = "Step", .unit = "", .scale = Scale::kOrdinal};
  ordinal_windows.y = Axis{.title = "Power", .unit = "W"};
  ordinal_windows.panels.push_back({"",
                                    {{"A", {{1, 100, {}}, {2, 120, {}}, {8, 90, {}}}, {}}},
                                    {{1.5, 5, "between"}, {-9, 99, "all"}}});
  out.emplace_back("degenerate_ordinal_timeline", ordinal_windows);

  LineChart none;
  none.title = "No panels";
  out.emplace_back("degenerate_no_panels", none);

  TradeOff negative;
  negative.title = "Negative values and one labelled point";
  negative.x = Axis{.title = "Δ per-user", .unit = "tok/s"};
  negative.y = Axis{.title = "Δ aggregate", .unit = "tok/s"};
  negative.panels.push_back({"",
                             {{"A", {{-5, -200, "c=1"}, {-2, -50, "c=2"}, {3, 120, "c=4"}}, {}},
                              {"B", {{-1e-9, 0, "c=8"}}, {}}},
                             {}});
  out.emplace_back("degenerate_negative", negative);

  Cdf cdf;
  cdf.title = "CDF of one value, an empty sample and values <= 0 on a log axis";
  cdf.x = Axis{.title = "E2E latency", .unit = "ms", .scale = Scale::kLog10};
  cdf.panels.push_back({"one", {{"A", {42.0}, {}}, {"B", {}, {}}}});
  cdf.panels.push_back({"log", {{"A", {0.0, -3.0, 5.0, 7.0, kNaN}, {}}}});
  out.emplace_back("degenerate_cdf", cdf);

  Timeline tl;
  tl.title = "Timeline with a window outside the data and a reversed window";
  tl.x = Axis{.title = "Time", .unit = "s"};
  tl.y = Axis{.title = "Power", .unit = "W"};
  tl.panels.push_back({"", {{"A", {{0, 100, {}}}, {}}}, {{50, 60, "far"}, {3, -3, "reversed"}}});
  out.emplace_back("degenerate_timeline", tl);

  Heatmap h;
  h.title = "Heatmap: all missing but one zero";
  h.rows = {"r"};
  h.columns = {"a", "b"};
  h.values = {{std::nullopt, 0.0}};
  out.emplace_back("degenerate_heatmap", h);

  Heatmap empty;
  empty.title = "Empty heatmap";
  out.emplace_back("degenerate_heatmap_empty", empty);
  return out;
}

/// Every realistic chart, named (file stem) — the first few at the smallest and largest sizes
/// the board produces (1 model × 1 cell, 10 models × 8 cells).
inline std::vector<std::pair<std::string, Chart>> realistic() {
  std::vector<std::pair<std::string, Chart>> out;
  out.emplace_back("throughput_1x1", throughput(1, 1));
  out.emplace_back("throughput_1x9", throughput(1, 9));
  out.emplace_back("throughput_10x8", throughput(10, 8));
  out.emplace_back("prefill_4x9", prefill(4, 9));
  out.emplace_back("ladder_decode_1", ladder_decode(1));
  out.emplace_back("ladder_decode_3", ladder_decode(3));
  out.emplace_back("tradeoff_1x9", trade_off(1, 9));
  out.emplace_back("tradeoff_10x8", trade_off(10, 8));
  out.emplace_back("frontier_1x9", frontier(1, 9));
  out.emplace_back("frontier_4x9", frontier(4, 9));
  out.emplace_back("heatmap_1x1", delta_heatmap(1, 1));
  out.emplace_back("heatmap_10x8", delta_heatmap(10, 8));
  out.emplace_back("heatmap_long_labels", long_labels_heatmap());
  out.emplace_back("throughput_6_arms", many_arms());
  out.emplace_back("limit_probes", limit_probes());
  out.emplace_back("cdf_1x1", latency_cdf(1, 400));
  out.emplace_back("cdf_8_cells", latency_cdf(8, 3000));
  out.emplace_back("power_2_cells", power_timeline(2));
  out.emplace_back("energy_1", energy_timeline());
  return out;
}

}  // namespace dyno::chart::gallery
