// The x/y chart specs turned into one form (XyFigure): line charts, trade-offs and timelines
// as given, CDFs as step lines; values a log axis cannot show are counted in a note.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "chart/draw.h"
#include "chart/scale.h"

namespace dyno::chart::detail {

namespace {

// `dropped` counts values removed before the figure was built (CDF samples).
void add_log_note(XyFigure& f, std::size_t dropped) {
  for (const Panel& p : f.panels) {
    for (const Series& s : p.series) {
      for (const Point& pt : s.points) {
        const bool bad_x = is_log(f.x.scale) && std::isfinite(pt.x) && pt.x <= 0.0;
        const bool bad_y = is_log(f.y.scale) && std::isfinite(pt.y) && pt.y <= 0.0;
        if (bad_x || bad_y) ++dropped;
        // An error bar's end a log axis cannot show (the bar is drawn from the point).
        for (const std::optional<double>& end : {pt.low, pt.high}) {
          if (!bad_x && !bad_y && is_log(f.y.scale) && end && std::isfinite(*end) && *end <= 0.0) {
            ++dropped;
          }
        }
      }
    }
  }
  if (dropped > 0) {
    f.notes.push_back(std::to_string(dropped) + (dropped == 1 ? " value" : " values") +
                      " at or below 0 not shown on the log axis.");
  }
}

template <typename XyChart>
XyFigure from_xy(const XyChart& chart, XyKind kind) {
  XyFigure f;
  f.kind = kind;
  f.title = chart.title;
  f.subtitle = chart.subtitle;
  if (!chart.note.empty()) f.notes.push_back(chart.note);
  f.x = chart.x;
  f.y = chart.y;
  f.panels = chart.panels;
  f.grid = chart.grid;
  add_log_note(f, 0);
  return f;
}

// Type-7 quantile of an ascending sample, q in [0, 1].
double quantile_sorted(const std::vector<double>& v, double q) {
  const double h = static_cast<double>(v.size() - 1) * q;
  const double lo_d = std::floor(h);
  const auto lo = static_cast<std::size_t>(lo_d);
  if (lo + 1 >= v.size()) return v.back();
  return v[lo] + (v[lo + 1] - v[lo]) * (h - lo_d);
}

}  // namespace

XyFigure to_figure(const LineChart& chart) {
  XyFigure f = from_xy(chart, XyKind::kLine);
  f.description = chart.description;
  f.legend_always = chart.legend_always;
  return f;
}
XyFigure to_figure(const TradeOff& chart) { return from_xy(chart, XyKind::kTradeOff); }
XyFigure to_figure(const Timeline& chart) { return from_xy(chart, XyKind::kTimeline); }

// Each series becomes its points on the frontier and its faded dominated points (one legend
// entry: same name and style), and every panel gets the frontier line through its points on
// the frontier, in x order, drawn last in the legend.
XyFigure to_figure(const Frontier& chart) {
  XyFigure f;
  f.kind = XyKind::kFrontier;
  f.title = chart.title;
  f.subtitle = chart.subtitle;
  if (!chart.note.empty()) f.notes.push_back(chart.note);
  f.x = chart.x;
  f.y = chart.y;
  f.grid = chart.grid;
  constexpr std::size_t kLineStyle = 1000;  // not an arm's: the line is drawn neutral
  for (const FrontierPanel& fp : chart.panels) {
    Panel panel;
    panel.title = fp.title;
    std::vector<SeriesRole> roles;
    std::vector<Point> line;
    for (const FrontierSeries& fs : fp.series) {
      Series on{fs.name, {}, fs.style};
      Series off{fs.name, {}, fs.style};
      for (const FrontierPoint& p : fs.points) {
        (p.on_frontier ? on : off).points.push_back({p.x, p.y, p.label});
        if (p.on_frontier && std::isfinite(p.x) && std::isfinite(p.y)) {
          line.push_back({p.x, p.y, {}});
        }
      }
      panel.series.push_back(std::move(on));
      roles.push_back(SeriesRole::kPoints);
      if (!off.points.empty()) {
        panel.series.push_back(std::move(off));
        roles.push_back(SeriesRole::kFadedPoints);
      }
    }
    std::stable_sort(line.begin(), line.end(), [](const Point& a, const Point& b) {
      return a.x < b.x || (a.x == b.x && a.y > b.y);
    });
    if (!line.empty()) {
      panel.series.push_back({chart.line_name, std::move(line), kLineStyle});
      roles.push_back(SeriesRole::kFrontierLine);
    }
    f.panels.push_back(std::move(panel));
    f.roles.push_back(std::move(roles));
  }
  add_log_note(f, 0);
  return f;
}

// Small samples are drawn as exact steps (every value a riser); from 2000 values on, through
// 1001 quantiles, which is indistinguishable at chart resolution and keeps the SVG small.
XyFigure to_figure(const Cdf& chart) {
  XyFigure f;
  f.kind = XyKind::kCdf;
  f.title = chart.title;
  f.subtitle = chart.subtitle;
  if (!chart.note.empty()) f.notes.push_back(chart.note);
  f.x = chart.x;
  f.x.ticks_at_data = false;
  if (f.x.scale == Scale::kOrdinal) f.x.scale = Scale::kLinear;  // a sample has no levels
  f.y = Axis{chart.y_title, "%", Scale::kLinear, false, true, 0.0, 100.0};
  f.grid = chart.grid;
  std::size_t dropped = 0;
  for (const CdfPanel& cp : chart.panels) {
    Panel panel;
    panel.title = cp.title;
    for (const Sample& sample : cp.samples) {
      std::vector<double> v;
      v.reserve(sample.values.size());
      for (double x : sample.values) {
        if (!std::isfinite(x)) continue;
        if (is_log(f.x.scale) && x <= 0.0) {
          ++dropped;
          continue;
        }
        v.push_back(x);
      }
      std::sort(v.begin(), v.end());
      Series s;
      s.name = sample.name;
      s.style = sample.style;
      const std::size_t n = v.size();
      if (n > 0 && n < 2000) {
        s.points.reserve(2 * n);
        const double dn = static_cast<double>(n);
        s.points.push_back({v[0], 0.0, {}});
        for (std::size_t i = 0; i < n; ++i) {
          if (i > 0) s.points.push_back({v[i], 100.0 * static_cast<double>(i) / dn, {}});
          s.points.push_back({v[i], 100.0 * static_cast<double>(i + 1) / dn, {}});
        }
      } else if (n > 0) {
        s.points.reserve(1001);
        for (int k = 0; k <= 1000; ++k) {
          const double q = k / 1000.0;
          s.points.push_back({quantile_sorted(v, q), q * 100.0, {}});
        }
      }
      panel.series.push_back(std::move(s));
    }
    f.panels.push_back(std::move(panel));
  }
  add_log_note(f, dropped);
  return f;
}

}  // namespace dyno::chart::detail
