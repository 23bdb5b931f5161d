// One piece, though long: every chart family here (lines over the level, the delta heatmaps,
// the trade-off, the CDFs, the power and energy timelines) draws through the same file stems
// (Stems: unique names per board) and splitting helpers of the anonymous namespace, and the
// kinds table at the end names each family's builder. The words the charts share are in
// chart_text.h, what they look up in a board in board_lookup.h.
#include "report/board_charts.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "compare/chart_data.h"
#include "report/board_lookup.h"
#include "report/chart_text.h"
#include "report/format.h"

namespace dyno::report {

using namespace chart_text;    // the charts' words (numbers, levels, devices, safe text)
using namespace board_lookup;  // what the charts look up in the board

namespace {

using compare::Board;
using compare::Section;

/// Panels per image: beyond this a chart is split into parts (12 rows of 3 columns).
constexpr std::size_t kMaxPanels = 36;

// ---- Splitting and naming ----------------------------------------------------------------

/// Keeps stems unique: a repeat gets -2, -3, ….
class Stems {
 public:
  std::string take(const std::string& wanted) {
    std::string s = wanted;
    for (int i = 2; used_.count(s) != 0; ++i) s = wanted + "-" + std::to_string(i);
    used_.insert(s);
    return s;
  }

 private:
  std::set<std::string> used_;
};

}  // namespace

/// The charts made so far, and their stems (a repeat gets -2, -3, …).
class ChartSet {
 public:
  std::vector<BoardChart> charts;
  Stems stems;
};

namespace {

/// Adds a chart with panels, split into parts of at most kMaxPanels panels (a multiple of
/// the grid's columns) so that no image grows past what reads well.
template <typename XyChart, typename PanelT>
void add_split(std::vector<BoardChart>& out, Stems& stems, const std::string& stem,
               const std::string& caption, Section section, XyChart c,
               std::vector<PanelT> XyChart::*panels) {
  const std::vector<PanelT> all = std::move(c.*panels);
  std::size_t per = kMaxPanels;
  if (c.grid.columns > 0) per = std::max<std::size_t>(c.grid.columns, per - per % c.grid.columns);
  const std::size_t parts = std::max<std::size_t>(1, (all.size() + per - 1) / per);
  const std::string title = c.title;
  for (std::size_t p = 0; p < parts; ++p) {
    XyChart part = c;
    const auto first = all.begin() + static_cast<std::ptrdiff_t>(std::min(all.size(), p * per));
    const auto last =
        all.begin() + static_cast<std::ptrdiff_t>(std::min(all.size(), (p + 1) * per));
    part.*panels = std::vector<PanelT>(first, last);
    std::string s = stem;
    if (parts > 1) {
      part.title = title + " (part " + std::to_string(p + 1) + " of " + std::to_string(parts) + ")";
      if (p > 0) s += "-part" + std::to_string(p + 1);
    }
    out.push_back({stems.take(s), part.title, caption, section, std::move(part)});
  }
}

// ---- Line charts over the level ----------------------------------------------------------

struct LineSpec {
  std::string metric;  ///< catalogue key
  std::string stem;    ///< "throughput-by" → throughput-by-concurrency
  std::string title;   ///< "Output throughput vs" → "… vs concurrency" (the x axis' title)
  std::string subtitle;
  chart::Axis y;
  std::string what;  ///< the caption's first sentence (what and from where)
  Section section = Section::kThroughput;
  std::function<bool(const std::string&)> kinds;  ///< the level kinds it is drawn for
};

/// The x axis' title in a chart title: "concurrency", "context depth".
std::string axis_words(const std::string& kind) {
  std::string t = level_axis(kind).title;
  if (!t.empty()) t[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(t[0])));
  return t;
}

/// A chart's footnote: its sentences joined.
std::string sentences(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) {
    if (!p.empty()) out += (out.empty() ? "" : " ") + p;
  }
  return out;
}

void add_line_charts(std::vector<BoardChart>& out, Stems& stems, const Board& b,
                     const LineSpec& spec) {
  const auto series = compare::figure_series(b, spec.metric);
  std::vector<std::string> kinds;
  for (const auto& s : series) {
    if (std::find(kinds.begin(), kinds.end(), s.level_kind) == kinds.end()) {
      kinds.push_back(s.level_kind);
    }
  }
  for (const auto& kind : kinds) {
    if (!spec.kinds(kind)) continue;
    bool any = false;
    std::vector<std::pair<std::string, std::string>> keys;  // (model, protocol) in order
    std::set<std::string> protocols;
    for (const auto& s : series) {
      if (s.level_kind != kind) continue;
      any = any || !s.points.empty();
      protocols.insert(s.protocol);
      if (std::find(keys.begin(), keys.end(), std::pair{s.model, s.protocol}) == keys.end()) {
        keys.emplace_back(s.model, s.protocol);
      }
    }
    if (!any) continue;
    chart::LineChart c;
    const std::string word = level_word(kind);
    c.title = spec.title + " " + axis_words(kind);
    c.subtitle = spec.subtitle;
    c.x = level_axis(kind);
    c.y = spec.y;
    c.grid.shared_y = keys.size() == 1;
    c.note = sentences(
        {keys.size() > 1 ? "One panel per model; each panel has its own y scale." : "",
         c.x.scale == chart::Scale::kOrdinal ? "Levels evenly spaced on x, not to scale." : ""});
    for (const auto& [model, protocol] : keys) {
      chart::Panel p;
      p.title = defuse(protocols.size() > 1 ? model + " · " + protocol : model);
      for (const auto& s : series) {
        if (s.level_kind != kind || s.model != model || s.protocol != protocol) continue;
        chart::Series cs;
        cs.name = arm_name(b, s.arm);
        cs.style = arm_style(b, s.arm);
        for (const auto& pt : s.points) cs.points.push_back({pt.level, pt.value, {}});
        p.series.push_back(std::move(cs));
      }
      c.panels.push_back(std::move(p));
    }
    const auto cells = cells_where(
        b, [&kind](const compare::Cell& cl) { return cl.level && cl.level_kind == kind; });
    const std::string caption = spec.what + " of each arm's selected run in each " +
                                level_cells(kind) + ", one line per arm and one panel per model. " +
                                runs_phrase(b, cells);
    add_split(out, stems, slug(spec.stem + "-" + word), caption, spec.section, std::move(c),
              &chart::LineChart::panels);
  }
}

// ---- Delta heatmap -----------------------------------------------------------------------

/// A heatmap column: one cell name of one protocol.
struct HeatColumn {
  std::string protocol, name, label;
  std::optional<double> level;
  bool concurrency = false;
};

/// Columns: (protocol, cell name) of the compared cells `in` holds for, ordered by protocol
/// (first appearance), then level, then name.
std::vector<HeatColumn> heatmap_columns(const Board& b,
                                        const std::function<bool(const compare::Cell&)>& in) {
  std::vector<std::string> protocol_order;
  std::vector<HeatColumn> columns;
  for (const auto& c : b.cells) {
    if (c.comparisons.empty() || !in(c)) continue;
    if (std::find(protocol_order.begin(), protocol_order.end(), c.protocol) ==
        protocol_order.end()) {
      protocol_order.push_back(c.protocol);
    }
    if (std::none_of(columns.begin(), columns.end(), [&c](const HeatColumn& k) {
          return k.protocol == c.protocol && k.name == c.name;
        })) {
      columns.push_back(
          {c.protocol, c.name, cell_label(b, c), c.level, c.level_kind == "concurrency"});
    }
  }
  const auto rank = [&protocol_order](const std::string& p) {
    return std::find(protocol_order.begin(), protocol_order.end(), p) - protocol_order.begin();
  };
  std::stable_sort(columns.begin(), columns.end(),
                   [&rank](const HeatColumn& x, const HeatColumn& y) {
                     if (rank(x.protocol) != rank(y.protocol)) {
                       return rank(x.protocol) < rank(y.protocol);
                     }
                     const double lx = x.level.value_or(INFINITY), ly = y.level.value_or(INFINITY);
                     if (lx != ly) return lx < ly;
                     return x.name < y.name;
                   });
  return columns;
}

/// A delta's verdict as its cell's label ("" when it has none).
std::string verdict_label(const compare::Delta& d) {
  if (d.summary_only && d.verdict == compare::Verdict::kNoInterval) return "summary only";
  switch (d.verdict) {
    case compare::Verdict::kWin:
      return "win";
    case compare::Verdict::kTie:
      return "tie";
    case compare::Verdict::kLoss:
      return "loss";
    case compare::Verdict::kNoInterval:
      return "no interval";
    case compare::Verdict::kNotApplicable:
      break;
  }
  return "";
}

/// One row of the heatmap, (model, arm): a delta and its verdict per column; no value for a
/// cell not compared, nothing for one without a comparison.
void add_heatmap_row(chart::Heatmap& h, const std::vector<compare::DeltaPoint>& grid,
                     const std::string& model, const std::string& arm,
                     const std::vector<HeatColumn>& columns,
                     const std::function<std::string(const std::string&)>& source_of) {
  std::vector<std::optional<double>> values;
  std::vector<std::string> labels;
  for (const auto& k : columns) {
    const auto it = std::find_if(grid.begin(), grid.end(), [&](const compare::DeltaPoint& p) {
      return p.model == model && p.arm == arm && p.protocol == k.protocol && p.cell_name == k.name;
    });
    if (it == grid.end()) {
      values.emplace_back();
      labels.emplace_back();
      continue;
    }
    if (!it->compared) {
      values.emplace_back();
      labels.emplace_back("not compared");
      continue;
    }
    values.push_back(it->delta.value);
    std::string label = verdict_label(it->delta);
    if (source_of && it->delta.value) label += (label.empty() ? "" : " · ") + source_of(it->metric);
    labels.push_back(std::move(label));
  }
  h.values.push_back(std::move(values));
  h.cell_labels.push_back(std::move(labels));
}

/// A delta heatmap: which figure, and the cells it is drawn for.
struct HeatSpec {
  std::string stem;
  std::string title;         ///< "Output throughput"
  std::string figure;        ///< "output tok/s", "prefill tok/s"
  std::string short_figure;  ///< the colour bar's title, short enough for one row: "prefill tok/s"
  std::string field;         ///< the record field, "summary.json throughput.output_tokens_per_s"
  Section section = Section::kThroughput;
  /// The figure's key in a cell, "" for a cell not judged by it (compare::Cell::judged_by):
  /// a heatmap colours only what the cell's tally and findings count.
  std::function<std::string(const compare::Cell&)> key_of;
  /// The source a cell's label names when the key varies by cell ("engine", "client"); empty
  /// when it does not.
  std::function<std::string(const std::string&)> source_of;
};

/// The kinds of cell a heatmap leaves out, as a sentence ("" when it leaves none out).
std::string left_out(const Board& b, const HeatSpec& spec) {
  std::vector<std::string> kinds;
  for (const auto& c : b.cells) {
    if (c.comparisons.empty() || !spec.key_of(c).empty()) continue;
    const std::string k = c.level_kind == "decode_tokens"    ? "ladder decode cells"
                          : c.level_kind == "prefill_tokens" ? "ladder prefill cells"
                                                             : "cells of " + c.protocol;
    if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
  }
  if (kinds.empty()) return "";
  std::string out;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == kinds.size() ? " and " : ", ") + kinds[i];
  }
  out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out + " are left out: they are judged by another figure (docs/compare.md). ";
}

void add_heatmap(std::vector<BoardChart>& out, Stems& stems, const Board& b, const HeatSpec& spec) {
  const auto in = [&spec](const compare::Cell& c) { return !spec.key_of(c).empty(); };
  const std::vector<compare::DeltaPoint> grid = compare::delta_grid(b, spec.key_of);
  if (grid.empty()) return;
  std::vector<std::string> arms;  // non-baseline arms with a comparison, board order
  for (const auto& a : b.arms) {
    if (std::any_of(grid.begin(), grid.end(), [&a](const auto& p) { return p.arm == a; })) {
      arms.push_back(a);
    }
  }
  const bool several_arms = arms.size() > 1;
  // Rows: (model, arm) in board order. Columns: heatmap_columns().
  std::vector<std::pair<std::string, std::string>> rows;
  for (const auto& model : models_of(b)) {
    for (const auto& a : arms) {
      if (std::any_of(grid.begin(), grid.end(),
                      [&](const auto& p) { return p.model == model && p.arm == a; })) {
        rows.emplace_back(model, a);
      }
    }
  }
  const std::vector<HeatColumn> columns = heatmap_columns(b, in);

  chart::Heatmap h;
  const std::string arm_word = several_arms ? "each arm" : arms.front();
  const std::string conf = percent(b.bootstrap.confidence);
  h.title = spec.title + ": " + arm_word + " vs " + b.baseline;
  h.subtitle =
      "Δ " + spec.figure + " in % of " + b.baseline + ", per model and cell, with its verdict";
  h.row_title = several_arms ? "Model · arm" : "Model";
  h.column_title =
      std::all_of(columns.begin(), columns.end(), [](const HeatColumn& k) { return k.concurrency; })
          ? "Cell (concurrency)"
          : "Cell";
  h.format = chart::ValueFormat{1, true, "%"};
  h.min_limit = 5.0;
  h.scale_title = "Δ " + spec.short_figure + " (%)";
  h.positive_label = (several_arms ? std::string("arm") : arms.front()) + " better";
  h.negative_label = b.baseline + " better";
  h.note = "win / loss: the " + conf +
           " interval of Δ lies above / below 0; tie: it holds 0 "
           "(intervals in board.json).";
  for (const auto& k : columns) h.columns.push_back(k.label);
  for (const auto& [model, arm] : rows) {
    h.rows.push_back(defuse(several_arms ? model + " · " + arm : model));
    add_heatmap_row(h, grid, model, arm, columns, spec.source_of);
  }
  std::string caption = "Δ " + spec.figure + " (" + spec.field + ") = (arm / " + b.baseline +
                        " − 1) · 100 of the selected runs in every compared cell (positive: the "
                        "arm is better), each cell labelled win, tie or loss by its " +
                        conf +
                        " bootstrap interval; hatched n/a: not compared (a required check failed) "
                        "or no runs. ";
  caption += left_out(b, spec);
  caption += runs_phrase(
      b, cells_where(b, [&in](const compare::Cell& c) { return !c.comparisons.empty() && in(c); }));
  out.push_back({stems.take(spec.stem), h.title, caption, spec.section, std::move(h)});
}

// ---- Serving trade-off -------------------------------------------------------------------

void add_tradeoff(std::vector<BoardChart>& out, Stems& stems, const Board& b) {
  const auto series = compare::serving_tradeoff(b);
  std::vector<std::string> kinds;
  for (const auto& s : series) {
    // A ladder sends one request per cell: there is no load to trade against.
    if (!s.points.empty() && !ladder_kind(s.level_kind) &&
        std::find(kinds.begin(), kinds.end(), s.level_kind) == kinds.end()) {
      kinds.push_back(s.level_kind);
    }
  }
  for (const auto& kind : kinds) {
    const std::string word = level_word(kind);
    std::vector<std::pair<std::string, std::string>> keys;
    std::set<std::string> protocols;
    for (const auto& s : series) {
      if (s.level_kind != kind) continue;
      protocols.insert(s.protocol);
      if (std::find(keys.begin(), keys.end(), std::pair{s.model, s.protocol}) == keys.end()) {
        keys.emplace_back(s.model, s.protocol);
      }
    }
    chart::TradeOff c;
    c.title = "Serving trade-off" + (kinds.size() > 1 ? " by " + word : std::string());
    c.subtitle = "Aggregate output tok/s against per-user decode tok/s (p50), points labelled by " +
                 word + "; up and to the right is better";
    c.x = chart::Axis{.title = "Per-user decode, p50", .unit = "tok/s", .include_zero = true};
    c.y = chart::Axis{.title = "Aggregate output", .unit = "tok/s", .include_zero = true};
    c.grid.shared_x = keys.size() == 1;
    c.grid.shared_y = keys.size() == 1;
    if (keys.size() > 1) c.note = "One panel per model; each panel has its own scales.";
    for (const auto& [model, protocol] : keys) {
      chart::Panel p;
      p.title = defuse(protocols.size() > 1 ? model + " · " + protocol : model);
      for (const auto& s : series) {
        if (s.level_kind != kind || s.model != model || s.protocol != protocol) continue;
        chart::Series cs;
        cs.name = arm_name(b, s.arm);
        cs.style = arm_style(b, s.arm);
        for (const auto& pt : s.points) {
          cs.points.push_back(
              {pt.per_user_decode_tok_s, pt.aggregate_output_tok_s, level_label(kind, pt.level)});
        }
        p.series.push_back(std::move(cs));
      }
      c.panels.push_back(std::move(p));
    }
    const auto cells = cells_where(
        b, [&kind](const compare::Cell& cl) { return cl.level && cl.level_kind == kind; });
    const std::string caption =
        "Aggregate output tok/s (throughput.output_tokens_per_s, y) against the median per-user "
        "decode rate (rates_tok_s.decode_rate_per_user.p50, x) of each arm's selected run in "
        "each " +
        word + " cell, joined in " + word + " order. " + runs_phrase(b, cells);
    add_split(out, stems, slug(kinds.size() > 1 ? "serving-tradeoff-" + word : "serving-tradeoff"),
              caption, Section::kThroughput, std::move(c), &chart::TradeOff::panels);
  }
}

// ---- The frontier ------------------------------------------------------------------------

/// The frontier of each model's load cells across arms: output tok/s per GPU against per-user
/// decode tok/s, the flags and costs as the board holds them (compare::frontier_points).
void add_frontier(std::vector<BoardChart>& out, Stems& stems, const Board& b) {
  const auto points = compare::frontier_points(b);
  if (points.empty()) return;
  const bool priced = !b.gpu_hour_cost.empty();
  const bool assumed = std::any_of(points.begin(), points.end(),
                                   [](const auto& p) { return p.point.gpus_in_record == 0; });
  std::vector<std::string> models;
  for (const auto& p : points) {
    if (std::find(models.begin(), models.end(), p.cell->model) == models.end()) {
      models.push_back(p.cell->model);
    }
  }
  chart::Frontier c;
  c.title = "Frontier: output per GPU against speed per user";
  c.subtitle = "One point per cell and arm; the line joins the points no other beats in both";
  c.x = chart::Axis{.title = "Per-user decode, p50", .unit = "tok/s", .include_zero = true};
  c.y = chart::Axis{.title = "Output per GPU", .unit = "tok/s", .include_zero = true};
  c.grid.shared_x = models.size() == 1;
  c.grid.shared_y = models.size() == 1;
  c.note = sentences({"Faded: dominated.", assumed ? "Per GPU: 1 on a host without GPUs." : "",
                      models.size() > 1 ? "One panel per model, each with its own scales." : ""});
  std::vector<const compare::Cell*> cells;
  for (const auto& model : models) {
    chart::FrontierPanel panel;
    panel.title = defuse(model);
    for (const auto& arm : b.arms) {
      chart::FrontierSeries series;
      series.name = arm_name(b, arm);
      series.style = arm_style(b, arm);
      for (const auto& p : points) {
        if (p.cell->model != model || p.arm != arm) continue;
        if (std::find(cells.begin(), cells.end(), p.cell) == cells.end()) cells.push_back(p.cell);
        std::string detail = number(p.point.gpus, 0) + (p.point.gpus == 1 ? " GPU" : " GPUs") +
                             (p.point.gpus_in_record == 0 ? " (none in the record)" : "");
        if (priced) {
          detail += ", " + usd(p.point.usd_per_mtok_output) + "/Mtok output, " +
                    usd(p.point.usd_per_mtok_total) + "/Mtok total";
        }
        series.points.push_back({*p.point.per_user_tok_s, *p.point.output_tok_s_per_gpu,
                                 cell_label(b, *p.cell), *p.point.on_frontier, detail});
      }
      if (!series.points.empty()) panel.series.push_back(std::move(series));
    }
    c.panels.push_back(std::move(panel));
  }
  std::string caption =
      "Output tok/s per GPU (summary.json throughput.output_tokens_per_s over the record's GPU "
      "count, manifest hardware.gpus" +
      std::string(assumed ? "; 1 on a host without GPUs" : "") +
      ") against the median per-user decode rate (rates_tok_s.decode_rate_per_user.p50) of each "
      "arm's selected run in each load cell (a ladder's cells, one request each, are not "
      "operating points), per model across arms and cells. The line joins the Pareto frontier: "
      "the points no other point equals or beats in both and beats in one; dominated points are "
      "faded. ";
  if (priced) {
    caption +=
        "Each point's cost per million output and total tokens is in the chart's description "
        "and the table below. ";
  }
  caption += runs_phrase(b, cells);
  add_split(out, stems, "frontier", caption, Section::kFrontier, std::move(c),
            &chart::Frontier::panels);
}

// ---- Latency CDFs ------------------------------------------------------------------------

/// A latency CDF: which latency, and its words.
struct CdfSpec {
  std::string stem, title, axis, source;
  std::vector<double> compare::LatencySamples::*values;
};

void add_cdfs(std::vector<BoardChart>& out, Stems& stems, const Board& b, const CdfSpec& k) {
  const auto samples = compare::all_latency_samples(b);
  const auto models = models_of(b);
  for (const auto& model : models) {
    chart::Cdf c;
    c.title = k.title + " CDF, " + defuse(model);
    c.subtitle =
        "Completed measured requests of each arm's selected run, one panel per cell; "
        "further left is faster";
    c.x = chart::Axis{.title = k.axis, .unit = "ms"};
    c.grid.shared_x = false;
    bool any = false;
    std::vector<const compare::Cell*> cells;
    for (const auto& cell : b.cells) {
      if (cell.model != model) continue;
      chart::CdfPanel p;
      p.title = cell_label(b, cell);
      // A distribution needs more than one request: a cell of one request per arm (a
      // ladder's) is drawn as points over its level instead (ttft-by-…, e2e-by-…).
      bool several = false;
      for (const auto& s : samples) {
        if (s.cell != cell.id) continue;
        const auto& v = s.*(k.values);
        several = several || v.size() > 1;
        p.samples.push_back({arm_name(b, s.arm), v, arm_style(b, s.arm)});
      }
      if (!several) continue;
      any = true;
      cells.push_back(&cell);
      c.panels.push_back(std::move(p));
    }
    if (!any) continue;
    if (c.panels.size() > 1) c.note = "Each panel has its own x scale.";
    const std::string caption = "Empirical CDF of the " + k.source +
                                " of every completed measured request (requests.jsonl) of "
                                "each arm's selected run, one panel per cell of " +
                                defuse(model) + ". " + runs_phrase(b, cells);
    const std::string stem = models.size() > 1 ? k.stem + "-" + slug(model) : k.stem;
    add_split(out, stems, stem, caption, Section::kLatency, std::move(c), &chart::Cdf::panels);
  }
}

// ---- Power and energy timelines ----------------------------------------------------------

/// One device of one run over time: power or energy.
struct Track {
  std::string cell, arm, run_id, source;
  std::int64_t device = 0;
  std::vector<chart::Point> points;
  std::optional<double> begin, end;
};

struct TimelineSpec {
  std::string stem, title, what;
  chart::Axis y;
  Section section = Section::kGpu;
};

void add_timelines(std::vector<BoardChart>& out, Stems& stems, const Board& b,
                   const std::vector<Track>& tracks, const TimelineSpec& spec) {
  if (tracks.empty()) return;
  const auto models = models_of(b);
  for (const auto& model : models) {
    chart::Timeline c;
    c.title = spec.title + ", " + defuse(model);
    c.subtitle = "One panel per cell, device and arm; shaded: the run's service window";
    c.x = chart::Axis{.title = "Time since run start", .unit = "s"};
    c.y = spec.y;
    // Headroom above the highest reading, so the window's label at the top of its band never
    // sits on a line (constant power would otherwise run along the top edge, under the label).
    double top = 0.0;
    for (const auto& t : tracks) {
      for (const auto& p : t.points) {
        if (std::isfinite(p.y)) top = std::max(top, p.y);
      }
    }
    if (top > 0.0) c.y.max = top * 1.15;
    std::vector<const compare::Cell*> cells;
    std::size_t arms_in_row = 0;
    bool any = false;
    for (const auto& cell : b.cells) {
      if (cell.model != model) continue;
      std::vector<std::pair<std::string, std::int64_t>> devices;
      for (const auto& t : tracks) {
        if (t.cell == cell.id && std::find(devices.begin(), devices.end(),
                                           std::pair{t.source, t.device}) == devices.end()) {
          devices.emplace_back(t.source, t.device);
        }
      }
      if (devices.empty()) continue;
      cells.push_back(&cell);
      arms_in_row = std::max(arms_in_row, cell.arms.size());
      for (const auto& [source, device] : devices) {
        for (const auto& a : cell.arms) {
          chart::Panel p;
          p.title = cell_label(b, cell) + " · " + device_label(source, device) + " · " + a.arm;
          chart::Series s;
          s.name = arm_name(b, a.arm);
          s.style = arm_style(b, a.arm);
          for (const auto& t : tracks) {
            if (t.cell != cell.id || t.arm != a.arm || t.source != source || t.device != device) {
              continue;
            }
            s.points = t.points;
            any = any || !t.points.empty();
            if (t.begin && t.end) p.windows.push_back({*t.begin, *t.end, "service window"});
          }
          p.series.push_back(std::move(s));
          c.panels.push_back(std::move(p));
        }
      }
    }
    if (!any) continue;
    // One row per cell and device, its arms side by side (when they fit three across).
    if (arms_in_row >= 1 && arms_in_row <= 3) c.grid.columns = arms_in_row;
    const std::string caption = spec.what +
                                " of each device (telemetry.jsonl) over each arm's "
                                "selected run in the cells of " +
                                defuse(model) +
                                ", the run's service window shaded; a panel without a line: that "
                                "run has no such reading. " +
                                runs_phrase(b, cells);
    const std::string stem = models.size() > 1 ? spec.stem + "-" + slug(model) : spec.stem;
    add_split(out, stems, stem, caption, spec.section, std::move(c), &chart::Timeline::panels);
  }
}

std::vector<Track> power_tracks(const Board& b) {
  std::vector<Track> out;
  for (const auto& t : compare::power_timelines(b)) {
    Track k{t.cell, t.arm, t.run_id, t.source, t.device, {}, t.window_begin_s, t.window_end_s};
    for (const auto& p : t.points) k.points.push_back({p.t_s, p.power_w, {}});
    out.push_back(std::move(k));
  }
  return out;
}

std::vector<Track> energy_tracks(const Board& b) {
  std::vector<Track> out;
  for (const auto& t : compare::energy_timelines(b)) {
    Track k{t.cell, t.arm, t.run_id, t.source, t.device, {}, t.window_begin_s, t.window_end_s};
    for (const auto& p : t.points) k.points.push_back({p.t_s, p.energy_j, {}});
    out.push_back(std::move(k));
  }
  return out;
}

// ---- The chart kinds --------------------------------------------------------------------

/// A load chart is drawn for cells with a load level (concurrency, rate), not a ladder's.
bool load_kind(const std::string& kind) { return !ladder_kind(kind); }

/// A y axis of tok/s from 0.
chart::Axis tok_s(const std::string& title) {
  return chart::Axis{.title = title, .unit = "tok/s", .include_zero = true};
}

void throughput_by_level(const Board& b, ChartSet& s) {
  add_line_charts(
      s.charts, s.stems, b,
      {"output_tokens_per_s", "throughput-by", "Output throughput vs",
       "Aggregate output tok/s of each arm; higher is better", tok_s("Aggregate output"),
       "Aggregate output tok/s (summary.json throughput.output_tokens_per_s)", Section::kThroughput,
       load_kind});
}

/// Per-user decode: how it scales with load…
void decode_per_user_by_level(const Board& b, ChartSet& s) {
  add_line_charts(
      s.charts, s.stems, b,
      {"decode_rate_per_user_p50", "decode-per-user-by", "Decode scaling: per-user decode rate vs",
       "Median per-request decode tok/s of each arm as load grows; higher is better",
       tok_s("Per-user decode, p50"),
       "The median per-request decode rate, (output tokens − 1) / (last − first "
       "token) (summary.json rates_tok_s.decode_rate_per_user.p50)",
       Section::kThroughput, load_kind});
}

/// …and a ladder's decode rate over context depth (its decode cells' headline, decode_tok_s).
/// Not drawn for a ladder's prefill cells.
void decode_per_user_by_context(const Board& b, ChartSet& s) {
  add_line_charts(s.charts, s.stems, b,
                  {"decode_rate_per_user_p50", "decode-per-user-by", "Per-user decode rate vs",
                   "Median decode tok/s of one request at each context depth; higher is better",
                   tok_s("Per-user decode, p50"),
                   "The median per-request decode rate, (output tokens − 1) / (last − first "
                   "token) (summary.json rates_tok_s.decode_rate_per_user.p50; the ladder's "
                   "decode_tok_s)",
                   Section::kThroughput,
                   [](const std::string& k) { return ladder_kind(k) && k != "prefill_tokens"; }});
}

/// The key of `metric` for a cell judged by it, else "".
std::function<std::string(const compare::Cell&)> judged(std::string metric) {
  return [metric = std::move(metric)](const compare::Cell& c) {
    return c.judged_by(metric) ? metric : std::string();
  };
}

void delta_heatmap(const Board& b, ChartSet& s) {
  add_heatmap(s.charts, s.stems, b,
              {"delta-heatmap",
               "Output throughput",
               "output tok/s",
               "output tok/s",
               "summary.json throughput.output_tokens_per_s",
               Section::kThroughput,
               judged("output_tokens_per_s"),
               {}});
}

/// A ladder's decode cells, one request each, are judged by their per-user decode rate.
void decode_delta_heatmap(const Board& b, ChartSet& s) {
  add_heatmap(s.charts, s.stems, b,
              {"decode-delta-heatmap",
               "Per-user decode rate",
               "per-user decode tok/s p50",
               "decode tok/s",
               "summary.json rates_tok_s.decode_rate_per_user.p50",
               Section::kThroughput,
               judged("decode_rate_per_user_p50"),
               {}});
}

void serving_tradeoff(const Board& b, ChartSet& s) { add_tradeoff(s.charts, s.stems, b); }

void frontier(const Board& b, ChartSet& s) { add_frontier(s.charts, s.stems, b); }

/// Aggregate input tok/s: a rate of requests (Σ input tokens over the service window), never
/// called prefill.
void input_by_level(const Board& b, ChartSet& s) {
  add_line_charts(s.charts, s.stems, b,
                  {"input_tokens_per_s", "input-throughput-by", "Input throughput vs",
                   "Aggregate input tok/s of each arm (Σ input tokens over the service window: "
                   "a rate of requests, not of prefill); higher is better",
                   tok_s("Aggregate input"),
                   "Aggregate input tok/s (summary.json throughput.input_tokens_per_s)",
                   Section::kPrefill, load_kind});
}

void prefill_per_user_by_level(const Board& b, ChartSet& s) {
  add_line_charts(s.charts, s.stems, b,
                  {"prefill_rate_client_p50", "prefill-per-user-by", "Per-user prefill rate vs",
                   "Median over requests of input tokens / TTFT (queueing and network included); "
                   "higher is better",
                   tok_s("Per-user prefill, p50"),
                   "The median per-request prefill rate, input tokens / TTFT (summary.json "
                   "rates_tok_s.prefill_rate_client.p50)",
                   Section::kPrefill, load_kind});
}

/// A ladder's prefill cells over prompt size, in their prefill figure: the engine-timed rate
/// when every such cell has it, else the client's.
void prefill_per_user_by_prompt(const Board& b, ChartSet& s) {
  const bool engine = std::all_of(b.cells.begin(), b.cells.end(), [](const compare::Cell& c) {
    return c.level_kind != "prefill_tokens" || c.prefill_figure == compare::kEnginePrefillKey;
  });
  const auto kinds = [](const std::string& k) { return ladder_kind(k) && k != "decode_tokens"; };
  if (engine) {
    add_line_charts(s.charts, s.stems, b,
                    {compare::kEnginePrefillKey, "prefill-per-user-by", "Prefill rate vs",
                     "The engine's own prefill rate of one request at each prompt size; higher "
                     "is better",
                     tok_s("Prefill, engine-timed"),
                     "The engine-timed prefill rate, the prompt tokens the engine computed over "
                     "its prompt time (summary.json server.timings.prefill_tokens_per_s)",
                     Section::kPrefill, kinds});
    return;
  }
  add_line_charts(s.charts, s.stems, b,
                  {"prefill_rate_client_p50", "prefill-per-user-by", "Per-user prefill rate vs",
                   "Median input tokens / TTFT of one request at each prompt size (network "
                   "included); higher is better",
                   tok_s("Per-user prefill, p50"),
                   "The median per-request prefill rate, input tokens / TTFT (summary.json "
                   "rates_tok_s.prefill_rate_client.p50; the ladder's prefill_tok_s)",
                   Section::kPrefill, kinds});
}

void prefill_delta_heatmap(const Board& b, ChartSet& s) {
  add_heatmap(
      s.charts, s.stems, b,
      {"prefill-delta-heatmap", "Prefill rate", "prefill tok/s", "prefill tok/s",
       "the cell's prefill figure: summary.json server.timings.prefill_tokens_per_s where every "
       "run of the cell has it (engine-timed), else rates_tok_s.prefill_rate_client.p50 (the "
       "client's input tokens / TTFT per request, median); each cell's label names its source",
       Section::kPrefill,
       [](const compare::Cell& c) {
         return c.judged_by(c.prefill_figure) ? c.prefill_figure : std::string();
       },
       [](const std::string& key) {
         return key == compare::kEnginePrefillKey ? std::string("engine") : std::string("client");
       }});
}

void e2e_latency_cdf(const Board& b, ChartSet& s) {
  add_cdfs(s.charts, s.stems, b,
           {"e2e-latency-cdf", "End-to-end latency", "End-to-end latency",
            "end-to-end latency (sent to done)", &compare::LatencySamples::e2e_ms});
}

void ttft_cdf(const Board& b, ChartSet& s) {
  add_cdfs(s.charts, s.stems, b,
           {"ttft-cdf", "Time to first token", "Time to first token",
            "time to first token (sent to the first token)", &compare::LatencySamples::ttft_ms});
}

/// A ladder cell is one request: its latency is a point at its level, not a distribution.
/// `what` names the latency ("Time to first token"), `span` where it runs ("sent to the first
/// token"), `path` its summary.json place.
void latency_by_ladder_level(const Board& b, ChartSet& s, const std::string& metric,
                             const std::string& stem, const std::string& what,
                             const std::string& span, const std::string& path) {
  add_line_charts(s.charts, s.stems, b,
                  {metric, stem, what + " vs",
                   "The one request of each arm's selected run in each ladder cell; lower is "
                   "better",
                   chart::Axis{.title = what, .unit = "ms", .include_zero = true},
                   what + ", " + span + ", of the cell's one request (summary.json " + path + ")",
                   Section::kLatency, ladder_kind});
}

void ttft_by_ladder_level(const Board& b, ChartSet& s) {
  latency_by_ladder_level(b, s, "ttft_p50_ms", "ttft-by", "Time to first token",
                          "sent to the first token", "latency_ms.ttft.p50");
}

void e2e_by_ladder_level(const Board& b, ChartSet& s) {
  latency_by_ladder_level(b, s, "e2e_p50_ms", "e2e-by", "End-to-end latency", "sent to done",
                          "latency_ms.e2e.p50");
}

void power_timeline(const Board& b, ChartSet& s) {
  add_timelines(s.charts, s.stems, b, power_tracks(b),
                {"power-timeline", "Power over time",
                 "Power (the instantaneous reading, else the averaged one)",
                 chart::Axis{.title = "Power", .unit = "W", .include_zero = true}, Section::kGpu});
}

void energy_timeline(const Board& b, ChartSet& s) {
  add_timelines(
      s.charts, s.stems, b, energy_tracks(b),
      {"energy-timeline", "Energy over time",
       "Energy used since the run's first reading (the sum of the energy counter's "
       "increments)",
       chart::Axis{.title = "Energy since first reading", .unit = "J", .include_zero = true},
       Section::kEnergy});
}

}  // namespace

std::span<const ChartKind> chart_kinds() {
  static constexpr ChartKind kKinds[] = {
      {.name = "throughput-by-<level>",
       .describe = "aggregate output tok/s vs concurrency or rate, one panel per model",
       .add = throughput_by_level},
      {.name = "decode-per-user-by-<level>",
       .describe = "decode scaling: per-user decode tok/s p50 vs concurrency or rate",
       .add = decode_per_user_by_level},
      {.name = "decode-per-user-by-context",
       .describe = "a ladder's decode cells: per-user decode tok/s p50 vs context depth",
       .add = decode_per_user_by_context},
      {.name = "delta-heatmap",
       .describe = "Δ output tok/s per model (× arm) and cell judged by it, labelled win/tie/loss",
       .add = delta_heatmap},
      {.name = "decode-delta-heatmap",
       .describe = "Δ per-user decode tok/s p50 of a ladder's decode cells",
       .add = decode_delta_heatmap},
      {.name = "serving-tradeoff",
       .describe = "aggregate output tok/s vs per-user decode tok/s, points by level",
       .add = serving_tradeoff},
      {.name = "frontier",
       .describe = "output tok/s per GPU vs per-user decode tok/s, every load cell of every arm, "
                   "the Pareto frontier drawn, dominated points faded",
       .add = frontier},
      {.name = "input-throughput-by-<level>",
       .describe = "aggregate input tok/s (a rate of requests, not prefill) vs concurrency or rate",
       .add = input_by_level},
      {.name = "prefill-per-user-by-<level>",
       .describe = "per-user prefill tok/s p50 vs concurrency or rate",
       .add = prefill_per_user_by_level},
      {.name = "prefill-per-user-by-prompt",
       .describe = "a ladder's prefill cells: per-user prefill tok/s p50 vs prompt size",
       .add = prefill_per_user_by_prompt},
      {.name = "prefill-delta-heatmap",
       .describe = "Δ each cell's prefill figure (engine-timed, else the client's p50), "
                   "labelled with its source",
       .add = prefill_delta_heatmap},
      {.name = "e2e-latency-cdf",
       .describe = "CDF of end-to-end latency, one panel per cell of more than one request",
       .add = e2e_latency_cdf},
      {.name = "ttft-cdf",
       .describe = "CDF of time to first token, one panel per cell of more than one request",
       .add = ttft_cdf},
      {.name = "ttft-by-<ladder-level>",
       .describe = "a ladder's one-request cells: time to first token vs prompt size or depth",
       .add = ttft_by_ladder_level},
      {.name = "e2e-by-<ladder-level>",
       .describe = "a ladder's one-request cells: end-to-end latency vs prompt size or depth",
       .add = e2e_by_ladder_level},
      {.name = "power-timeline",
       .describe = "power of each device over each selected run, when telemetry exists",
       .add = power_timeline},
      {.name = "energy-timeline",
       .describe = "energy of each device since the run's first reading, when telemetry exists",
       .add = energy_timeline},
  };
  return kKinds;
}

std::vector<BoardChart> board_charts(const Board& b) {
  ChartSet set;
  for (const ChartKind& kind : chart_kinds()) kind.add(b, set);
  return std::move(set.charts);
}

Figure render_figure(const BoardChart& c) {
  Figure f;
  f.title = c.title;
  f.stem = c.stem;
  f.section = c.section;
  f.caption = c.caption;
  f.svg = chart::render(c.chart, chart::Format::kSvg);
  f.png = chart::render(c.chart, chart::Format::kPng);
  return f;
}

std::vector<Figure> board_figures(const Board& b) {
  std::vector<Figure> out;
  for (const auto& c : board_charts(b)) out.push_back(render_figure(c));
  return out;
}

}  // namespace dyno::report
