// The x/y charts (line, trade-off, timeline, CDF, frontier): a grid of panels sharing one
// legend and one pair of axis titles. One piece though long: every kind goes through the same
// preparation (scales, roles, error bars, rules) and the same panel drawing, and differs only
// by XyKind and the series' roles (draw.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "chart/draw.h"
#include "chart/scale.h"

namespace dyno::chart::detail {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool valid_on(double v, Scale s) { return std::isfinite(v) && (!is_log(s) || v > 0.0); }

// Pixel-snapped coordinate for a 1 px line: crisp in the PNG, harmless in the SVG.
double snap(double v) { return std::floor(v) + 0.5; }

struct Extent {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  bool any() const { return lo <= hi; }
  void add(double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  void add(const Extent& e) {
    if (e.any()) {
      add(e.lo);
      add(e.hi);
    }
  }
};

// An axis' range and ticks; on an ordinal axis lo and hi are in slots and `categories` are
// the values the slots stand for.
struct AxisTicks {
  double lo = 0.0;
  double hi = 1.0;
  std::vector<double> values;
  std::vector<std::string> labels;
  std::vector<double> categories;
};

// Maps data values to pixels along one axis.
struct Mapper {
  Mapper(Scale s, const AxisTicks& t, double from, double to)
      : scale(s), lo(t.lo), hi(t.hi), p0(from), p1(to), categories(&t.categories) {}
  Scale scale;
  double lo;
  double hi;
  double p0;
  double p1;
  const std::vector<double>* categories;  // ordinal axes
  double operator()(double v) const {
    double t = 0.0;
    if (scale == Scale::kOrdinal) {
      t = (ordinal_position(*categories, v) - lo) / (hi - lo);
    } else if (!is_log(scale)) {
      t = (v - lo) / (hi - lo);
    } else {
      t = (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo));
    }
    return p0 + t * (p1 - p0);
  }
};

struct PreparedSeries {
  std::string name;
  std::size_t style = 0;
  SeriesRole role = SeriesRole::kNormal;
  std::vector<Point> points;  // a point with a NaN coordinate breaks the line
  std::size_t valid = 0;
};

struct PreparedPanel {
  std::string title;
  std::vector<PreparedSeries> series;
  std::vector<Window> windows;
  std::vector<Rule> y_rules;  // only those the axes can show
  std::vector<Rule> x_rules;
  Extent x;
  Extent y;
  std::vector<double> x_values;  // distinct valid x values, for ticks at data
  std::vector<double> y_values;
};

struct LegendEntry {
  std::string name;
  std::size_t style = 0;
  bool has_data = false;
  SeriesRole role = SeriesRole::kNormal;
};

bool kind_has_markers(XyKind kind) { return kind == XyKind::kLine || kind == XyKind::kTradeOff; }

bool points_only(SeriesRole role) {
  return role == SeriesRole::kPoints || role == SeriesRole::kFadedPoints;
}

// The frontier line: neutral, so that it is no arm's.
constexpr Rgb kFrontierLine{0.25, 0.25, 0.25};

// A dominated point's marker: its arm's colour, most of the way to white.
Rgb faded(Rgb c) {
  constexpr double k = 0.6;
  return {c.r + (1.0 - c.r) * k, c.g + (1.0 - c.g) * k, c.b + (1.0 - c.b) * k};
}

double line_width(XyKind kind) {
  switch (kind) {
    case XyKind::kTimeline:
      return 1.6;
    case XyKind::kCdf:
      return 2.0;
    default:
      return 2.2;
  }
}

std::vector<double> distinct_sorted(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// Styles: explicit, or the position of the series' name among the chart's distinct names.
std::vector<PreparedPanel> prepare(const XyFigure& f, std::vector<LegendEntry>& legend) {
  std::vector<std::string> names;
  const auto auto_style = [&names](const std::string& name) {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it != names.end()) return static_cast<std::size_t>(it - names.begin());
    names.push_back(name);
    return names.size() - 1;
  };
  std::vector<PreparedPanel> out;
  for (std::size_t pi = 0; pi < f.panels.size(); ++pi) {
    const Panel& panel = f.panels[pi];
    PreparedPanel p;
    p.title = panel.title;
    p.windows = panel.windows;
    for (const Rule& r : panel.y_rules) {
      if (!valid_on(r.at, f.y.scale)) continue;
      p.y_rules.push_back(r);
      p.y.add(r.at);
    }
    for (const Rule& r : panel.x_rules) {
      if (!valid_on(r.at, f.x.scale)) continue;
      p.x_rules.push_back(r);
      p.x.add(r.at);
    }
    for (std::size_t si = 0; si < panel.series.size(); ++si) {
      const Series& s = panel.series[si];
      PreparedSeries ps;
      ps.name = s.name;
      if (pi < f.roles.size() && si < f.roles[pi].size()) ps.role = f.roles[pi][si];
      if (!s.joined && ps.role == SeriesRole::kNormal) ps.role = SeriesRole::kPoints;
      const std::size_t automatic = auto_style(s.name);
      ps.style = s.style.value_or(automatic);
      for (const Point& pt : s.points) {
        const bool vx = valid_on(pt.x, f.x.scale);
        const bool vy = valid_on(pt.y, f.y.scale);
        if (f.kind == XyKind::kLine && !std::isfinite(pt.x)) continue;  // cannot be sorted
        Point q = pt;
        // Error bar ends the y axis cannot show are left out (the bar runs from the point).
        for (std::optional<double>* end : {&q.low, &q.high}) {
          if (*end && !valid_on(**end, f.y.scale)) end->reset();
        }
        if (!vx || !vy) {
          q.y = kNaN;  // a break in the line
        } else {
          ++ps.valid;
          p.x.add(q.x);
          p.y.add(q.y);
          if (q.low) p.y.add(*q.low);
          if (q.high) p.y.add(*q.high);
          p.x_values.push_back(q.x);
          p.y_values.push_back(q.y);
        }
        ps.points.push_back(std::move(q));
      }
      if (f.kind == XyKind::kLine) {
        std::stable_sort(ps.points.begin(), ps.points.end(),
                         [](const Point& a, const Point& b) { return a.x < b.x; });
      }
      const auto it = std::find_if(legend.begin(), legend.end(), [&ps](const LegendEntry& e) {
        return e.name == ps.name && e.style == ps.style;
      });
      if (it == legend.end()) {
        legend.push_back({ps.name, ps.style, ps.valid > 0, ps.role});
      } else {
        it->has_data = it->has_data || ps.valid > 0;
      }
      p.series.push_back(std::move(ps));
    }
    p.x_values = distinct_sorted(std::move(p.x_values));
    p.y_values = distinct_sorted(std::move(p.y_values));
    out.push_back(std::move(p));
  }
  if (out.empty()) out.emplace_back();  // one empty panel that says "no data"
  return out;
}

AxisTicks make_ticks(const Axis& axis, Extent data, const std::vector<double>& data_values,
                     int target) {
  AxisTicks a;
  Ticks t;
  if (axis.scale == Scale::kOrdinal) {
    t = ordinal_ticks(data_values);
    a.labels = category_labels(t.values);
    a.categories = data_values;
  } else if (axis.scale == Scale::kLinear) {
    if (axis.include_zero) data.add(0.0);
    if (!data.any()) data = Extent{0.0, 1.0};
    t = linear_ticks(data.lo, data.hi, target, axis.min, axis.max);
    a.labels = format_ticks(t.values, t.step);
  } else {
    if (!data.any()) data = Extent{1.0, axis.scale == Scale::kLog2 ? 2.0 : 10.0};
    t = log_ticks(data.lo, data.hi, axis.scale == Scale::kLog2 ? 2 : 10, target, axis.min,
                  axis.max);
    for (double v : t.values) a.labels.push_back(format_compact(v));
  }
  a.lo = t.lo;
  a.hi = t.hi;
  a.values = t.values;
  if (axis.ticks_at_data && !data_values.empty() && axis.scale != Scale::kOrdinal) {
    a.values.clear();
    a.labels.clear();
    for (double v : data_values) {
      if (v >= a.lo && v <= a.hi) {
        a.values.push_back(v);
        a.labels.push_back(format_compact(v));
      }
    }
  }
  return a;
}

// X tick labels that fit side by side: fewer ticks are asked for until they fit; for ticks at
// data values, labels that would touch the previous one are left out (the tick mark stays).
AxisTicks fit_x_ticks(Canvas& c, const Axis& axis, const Extent& data,
                      const std::vector<double>& values, double plot_w) {
  c.set_font(font::kTick);
  const double gap = 10.0;
  // Log labels are short (1, 2, 5, 10, …), so they may sit closer.
  const double spacing = is_log(axis.scale) ? 50.0 : 80.0;
  // Ticks at data and ordinal slots are all wanted: crowded labels go, not ticks.
  const bool every_value = axis.ticks_at_data || axis.scale == Scale::kOrdinal;
  int target = std::clamp(static_cast<int>(plot_w / spacing), 2, 12);
  for (;; --target) {
    AxisTicks a = make_ticks(axis, data, values, target);
    const Mapper m(axis.scale, a, 0.0, plot_w);
    std::vector<bool> keep(a.values.size(), true);
    bool overlap = false;
    double last_right = -1e300;
    for (std::size_t i = 0; i < a.values.size(); ++i) {
      const double w = c.text_width(a.labels[i]);
      const double left = m(a.values[i]) - w / 2.0;
      if (left < last_right + gap) {
        overlap = true;
        keep[i] = false;
      } else {
        last_right = left + w;
      }
    }
    if (!overlap || target <= 2 || every_value) {
      for (std::size_t i = 0; i < a.labels.size(); ++i) {
        if (!keep[i]) a.labels[i].clear();  // tick mark stays, label goes
      }
      return a;
    }
  }
}

std::pair<std::size_t, std::size_t> shape(std::size_t n, const Grid& grid) {
  n = std::max<std::size_t>(n, 1);
  std::size_t cols = grid.columns;
  if (cols == 0) {
    if (n <= 3) {
      cols = n;
    } else if (n == 4) {
      cols = 2;
    } else {
      cols = 3;
    }
  }
  cols = std::clamp<std::size_t>(cols, 1, n);
  return {cols, (n + cols - 1) / cols};
}

// One legend row layout: swatch, gap, name; entries wrap onto new rows.
double draw_legend(Canvas& c, const std::vector<LegendEntry>& entries, XyKind kind, double x0,
                   double y0, double max_w) {
  c.set_font(font::kLegend);
  const double swatch = 34.0;
  const double row_h = c.line_height() + 8.0;
  double x = x0;
  double y = y0;
  for (const LegendEntry& e : entries) {
    const std::string label =
        c.ellipsize(e.has_data ? e.name : e.name + " (no data)", max_w - swatch - 8.0);
    const double w = swatch + 7.0 + c.text_width(label);
    if (x > x0 && x + w > x0 + max_w) {
      x = x0;
      y += row_h;
    }
    const SeriesStyle s = series_style(e.style);
    const double mid = y + row_h / 2.0;
    if (e.role == SeriesRole::kFrontierLine) {
      c.line(x, mid, x + swatch, mid, kFrontierLine, line_width(kind));
    } else if (!points_only(e.role)) {
      c.line(x, mid, x + swatch, mid, s.line, line_width(kind), s.dashes);
    }
    if (kind_has_markers(kind) || points_only(e.role)) {
      c.marker(s.marker, x + swatch / 2.0, mid, 4.5,
               e.role == SeriesRole::kFadedPoints ? faded(s.line) : s.line, s.hollow);
    }
    c.text(label, x + swatch + 7.0, mid, HAlign::kLeft, VAlign::kMiddle, colour::kText);
    x += w + 24.0;
  }
  return y + row_h;
}

struct PanelFrame {
  Rect cell;
  Rect plot;
};

void draw_series_lines(Canvas& c, const PreparedSeries& s, const Mapper& mx, const Mapper& my,
                       XyKind kind) {
  if (points_only(s.role)) return;
  const SeriesStyle style = series_style(s.style);
  cairo_t* cr = c.cr();
  bool pen_down = false;
  for (const Point& p : s.points) {
    if (std::isnan(p.y)) {
      pen_down = false;
      continue;
    }
    const double px = mx(p.x);
    const double py = my(p.y);
    if (pen_down) {
      cairo_line_to(cr, px, py);
    } else {
      cairo_move_to(cr, px, py);
      pen_down = true;
    }
  }
  const bool frontier = s.role == SeriesRole::kFrontierLine;
  c.set_colour(frontier ? kFrontierLine : style.line);
  cairo_set_line_width(cr, line_width(kind));
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
  cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
  cairo_set_dash(cr, frontier ? nullptr : style.dashes.data(),
                 frontier ? 0 : static_cast<int>(style.dashes.size()), 0.0);
  cairo_stroke(cr);
  cairo_set_dash(cr, nullptr, 0, 0.0);
}

// A point gets a marker when the kind draws markers, when the series is not joined, or when
// no line reaches it (an isolated point would otherwise be invisible).
std::vector<bool> marker_mask(const PreparedSeries& s, XyKind kind) {
  std::vector<bool> mask(s.points.size(), false);
  if (s.role == SeriesRole::kFrontierLine) return mask;
  for (std::size_t i = 0; i < s.points.size(); ++i) {
    if (std::isnan(s.points[i].y)) continue;
    if (points_only(s.role)) {
      mask[i] = true;
      continue;
    }
    const bool prev = i > 0 && !std::isnan(s.points[i - 1].y);
    const bool next = i + 1 < s.points.size() && !std::isnan(s.points[i + 1].y);
    mask[i] = kind_has_markers(kind) || (!prev && !next);
  }
  return mask;
}

constexpr double kMarkerRadius = 4.5;
constexpr double kErrorCap = 4.0;  // half the width of an error bar's cap
constexpr double kErrorBarWidth = 1.5;

// Error bars under the markers, in the series' colour: from low (or the point) to high (or
// the point), capped at each end given.
void draw_error_bars(Canvas& c, const PreparedSeries& s, const Mapper& mx, const Mapper& my) {
  const SeriesStyle style = series_style(s.style);
  for (const Point& p : s.points) {
    if (std::isnan(p.y) || (!p.low && !p.high)) continue;
    const double px = snap(mx(p.x));
    const double top = my(p.high.value_or(p.y));
    const double bottom = my(p.low.value_or(p.y));
    c.line(px, top, px, bottom, style.line, kErrorBarWidth);
    if (p.high) c.line(px - kErrorCap, top, px + kErrorCap, top, style.line, kErrorBarWidth);
    if (p.low) c.line(px - kErrorCap, bottom, px + kErrorCap, bottom, style.line, kErrorBarWidth);
  }
}

// What labels must not cover: every drawn point's marker and error bar.
std::vector<Rect> data_boxes(const PreparedPanel& p, const Mapper& mx, const Mapper& my) {
  std::vector<Rect> taken;
  for (const PreparedSeries& s : p.series) {
    for (const Point& pt : s.points) {
      if (std::isnan(pt.y)) continue;
      const double r = kMarkerRadius + 1.0;
      const double px = mx(pt.x);
      taken.push_back({px - r, my(pt.y) - r, 2.0 * r, 2.0 * r});
      if (pt.low || pt.high) {
        const double top = my(pt.high.value_or(pt.y));
        const double bottom = my(pt.low.value_or(pt.y));
        taken.push_back({px - kErrorCap - 1.0, std::min(top, bottom) - 1.0, 2.0 * kErrorCap + 2.0,
                         std::abs(bottom - top) + 2.0});
      }
    }
  }
  return taken;
}

constexpr Rgb kRuleColour{0.2, 0.2, 0.2};
constexpr double kRuleWidth = 1.5;

// The rules' lines, over the grid and under the data; a rule outside a fixed range is not
// drawn.
void draw_rules(Canvas& c, const PreparedPanel& p, const Rect& plot, const Mapper& mx,
                const Mapper& my) {
  static const std::vector<double> kDashes = {6.0, 4.0};
  static const std::vector<double> kSolid;
  for (const Rule& r : p.y_rules) {
    const double y = snap(my(r.at));
    if (y < plot.y - 0.5 || y > plot.bottom() + 0.5) continue;
    c.line(plot.x, y, plot.right(), y, kRuleColour, kRuleWidth, r.dashed ? kDashes : kSolid);
  }
  for (const Rule& r : p.x_rules) {
    const double x = snap(mx(r.at));
    if (x < plot.x - 0.5 || x > plot.right() + 0.5) continue;
    c.line(x, plot.y, x, plot.bottom(), kRuleColour, kRuleWidth, r.dashed ? kDashes : kSolid);
  }
}

// The rules' labels: a horizontal rule's at its right end (else its left end), above the line
// or below it; a vertical rule's at the top, right of the line or left of it, a row lower when
// the row is taken. A place clear of every marker, bar and other label is taken first; else
// the first place inside the plot; a label the plot cannot hold anywhere is shortened to its
// width. The boxes drawn are added to `taken`.
void label_rules(Canvas& c, const PreparedPanel& p, const Rect& plot, const Mapper& mx,
                 const Mapper& my, std::vector<Rect>& taken) {
  struct Spot {
    double x;
    double y;
    HAlign h;
    VAlign v;
  };
  c.set_font(font::kPointLabel);
  const Rect bounds{plot.x + 1.0, plot.y + 1.0, plot.w - 2.0, plot.h - 2.0};
  const auto place = [&](const std::string& label, const std::vector<Spot>& spots) {
    std::optional<Spot> inside;
    for (const Spot& s : spots) {
      const Rect box = c.text_box(label, s.x, s.y, s.h, s.v);
      if (!bounds.contains(box)) continue;
      if (!inside) inside = s;
      const bool clash = std::any_of(taken.begin(), taken.end(),
                                     [&box](const Rect& t) { return t.intersects(box); });
      if (clash) continue;
      taken.push_back(c.text(label, s.x, s.y, s.h, s.v, colour::kText, true));
      return;
    }
    if (inside) {
      taken.push_back(
          c.text(label, inside->x, inside->y, inside->h, inside->v, colour::kText, true));
      return;
    }
    const Spot& s = spots.front();
    taken.push_back(c.text(c.ellipsize(label, bounds.w - 8.0), bounds.x + 4.0, s.y, HAlign::kLeft,
                           s.v, colour::kText, true));
  };
  for (const Rule& r : p.y_rules) {
    const double y = my(r.at);
    if (r.label.empty() || y < plot.y - 0.5 || y > plot.bottom() + 0.5) continue;
    place(r.label, {{plot.right() - 4.0, y - 3.0, HAlign::kRight, VAlign::kBottom},
                    {plot.right() - 4.0, y + 3.0, HAlign::kRight, VAlign::kTop},
                    {plot.x + 4.0, y - 3.0, HAlign::kLeft, VAlign::kBottom},
                    {plot.x + 4.0, y + 3.0, HAlign::kLeft, VAlign::kTop}});
  }
  const double row = c.line_height() + 3.0;
  for (const Rule& r : p.x_rules) {
    const double x = mx(r.at);
    if (r.label.empty() || x < plot.x - 0.5 || x > plot.right() + 0.5) continue;
    std::vector<Spot> spots;
    for (int k = 0; k < 4; ++k) {
      const double top = plot.y + 4.0 + row * static_cast<double>(k);
      spots.push_back({x + 5.0, top, HAlign::kLeft, VAlign::kTop});
      spots.push_back({x - 5.0, top, HAlign::kRight, VAlign::kTop});
    }
    place(r.label, spots);
  }
}

// Labels go where they overlap no marker and no other label, trying eight positions around
// the point. A label that fits nowhere is left out rather than drawn over another: the ends of
// each series are placed first, so a crowded middle loses labels before the ends do.
// `taken` holds what is already drawn that labels must not cover (markers, rules' labels).
void draw_point_labels(Canvas& c, const PreparedPanel& p, const Mapper& mx, const Mapper& my,
                       const Rect& bounds, std::vector<Rect> taken) {
  c.set_font(font::kPointLabel);
  struct Candidate {
    double dx;
    double dy;
    HAlign h;
    VAlign v;
  };
  static constexpr Candidate kCandidates[] = {
      {7.0, -5.0, HAlign::kLeft, VAlign::kBottom},   {-7.0, -5.0, HAlign::kRight, VAlign::kBottom},
      {7.0, 5.0, HAlign::kLeft, VAlign::kTop},       {-7.0, 5.0, HAlign::kRight, VAlign::kTop},
      {10.0, 0.0, HAlign::kLeft, VAlign::kMiddle},   {-10.0, 0.0, HAlign::kRight, VAlign::kMiddle},
      {0.0, -8.0, HAlign::kCenter, VAlign::kBottom}, {0.0, 8.0, HAlign::kCenter, VAlign::kTop},
  };
  struct Job {
    const Point* point;
    std::size_t style;
  };
  std::vector<Job> jobs;     // the ends of every series first
  std::vector<Job> middles;  // then the points between
  for (const PreparedSeries& s : p.series) {
    std::vector<const Point*> labelled;
    for (const Point& pt : s.points) {
      if (!std::isnan(pt.y) && !pt.label.empty()) labelled.push_back(&pt);
    }
    if (labelled.empty()) continue;
    jobs.push_back({labelled.back(), s.style});
    if (labelled.size() > 1) jobs.push_back({labelled.front(), s.style});
    for (std::size_t i = 1; i + 1 < labelled.size(); ++i) middles.push_back({labelled[i], s.style});
  }
  jobs.insert(jobs.end(), middles.begin(), middles.end());
  for (const Job& job : jobs) {
    const double px = mx(job.point->x);
    const double py = my(job.point->y);
    for (const Candidate& k : kCandidates) {
      const Rect box = c.text_box(job.point->label, px + k.dx, py + k.dy, k.h, k.v);
      if (!bounds.contains(box)) continue;
      const Rect padded{box.x - 1.0, box.y, box.w + 2.0, box.h};
      const bool clash = std::any_of(taken.begin(), taken.end(),
                                     [&padded](const Rect& t) { return t.intersects(padded); });
      if (clash) continue;
      taken.push_back(c.text(job.point->label, px + k.dx, py + k.dy, k.h, k.v,
                             series_style(job.style).text, true));
      break;
    }
  }
}

void draw_panel(Canvas& c, const XyFigure& f, const PreparedPanel& p, const PanelFrame& frame,
                const AxisTicks& xt, const AxisTicks& yt) {
  const Rect& plot = frame.plot;
  const Mapper mx(f.x.scale, xt, plot.x, plot.right());
  const Mapper my(f.y.scale, yt, plot.bottom(), plot.y);
  cairo_t* cr = c.cr();

  if (!p.title.empty()) {
    c.set_font(font::kPanelTitle, true);
    const std::string title = c.ellipsize(p.title, frame.cell.w - 8.0);
    c.text(title, plot.x + plot.w / 2.0, frame.cell.y, HAlign::kCenter, VAlign::kTop,
           colour::kText);
  }

  // Shaded windows under everything else; their labels go on top of the data (below).
  struct Band {
    double a;
    double b;
    const std::string* label;
  };
  std::vector<Band> bands;
  for (const Window& w : p.windows) {
    if (!valid_on(w.start, f.x.scale) || !valid_on(w.end, f.x.scale)) continue;
    const double a = std::clamp(mx(std::min(w.start, w.end)), plot.x, plot.right());
    const double b = std::clamp(mx(std::max(w.start, w.end)), plot.x, plot.right());
    if (b <= a) continue;
    c.fill_rect({a, plot.y, b - a, plot.h}, {0.55, 0.55, 0.55}, 0.14);
    bands.push_back({a, b, &w.label});
  }
  const auto label_bands = [&] {
    c.set_font(font::kPointLabel);
    for (const Band& band : bands) {
      if (band.label->empty()) continue;
      c.text(c.ellipsize(*band.label, plot.right() - band.a - 8.0), band.a + 4.0, plot.y + 3.0,
             HAlign::kLeft, VAlign::kTop, colour::kMuted, true);
    }
  };

  // Grid lines and ticks.
  c.set_font(font::kTick);
  for (std::size_t i = 0; i < yt.values.size(); ++i) {
    const double y = snap(my(yt.values[i]));
    c.line(plot.x, y, plot.right(), y, colour::kGrid, 1.0);
    c.line(plot.x - 4.0, y, plot.x, y, colour::kAxis, 1.0);
    c.text(yt.labels[i], plot.x - 7.0, y, HAlign::kRight, VAlign::kMiddle, colour::kText);
  }
  for (std::size_t i = 0; i < xt.values.size(); ++i) {
    const double x = snap(mx(xt.values[i]));
    c.line(x, plot.y, x, plot.bottom(), colour::kGrid, 1.0);
    c.line(x, plot.bottom(), x, plot.bottom() + 4.0, colour::kAxis, 1.0);
    if (!xt.labels[i].empty()) {
      c.text(xt.labels[i], x, plot.bottom() + 6.0, HAlign::kCenter, VAlign::kTop, colour::kText);
    }
  }
  c.stroke_rect({snap(plot.x), snap(plot.y), std::round(plot.w), std::round(plot.h)},
                {0.72, 0.72, 0.72}, 1.0);
  c.line(snap(plot.x), snap(plot.bottom()), snap(plot.right()), snap(plot.bottom()), colour::kAxis,
         1.0);
  c.line(snap(plot.x), snap(plot.y), snap(plot.x), snap(plot.bottom()), colour::kAxis, 1.0);

  draw_rules(c, p, plot, mx, my);
  std::vector<Rect> taken = data_boxes(p, mx, my);

  // Data, clipped a marker's width beyond the frame (fixed ranges may cut data).
  bool any_data = false;
  for (const PreparedSeries& s : p.series) any_data = any_data || s.valid > 0;
  if (!any_data) {
    c.set_font(font::kAxisTitle);
    taken.push_back(c.text("no data", plot.x + plot.w / 2.0, plot.y + plot.h / 2.0, HAlign::kCenter,
                           VAlign::kMiddle, colour::kMuted));
    label_rules(c, p, plot, mx, my, taken);
    label_bands();
    return;
  }
  cairo_save(cr);
  const double slack = kMarkerRadius + 2.0;
  cairo_rectangle(cr, plot.x - slack, plot.y - slack, plot.w + 2.0 * slack, plot.h + 2.0 * slack);
  cairo_clip(cr);
  for (const PreparedSeries& s : p.series) draw_series_lines(c, s, mx, my, f.kind);
  for (const PreparedSeries& s : p.series) draw_error_bars(c, s, mx, my);
  // Faded (dominated) points first, so that no point on the frontier is drawn under one.
  for (const bool faded_pass : {true, false}) {
    for (const PreparedSeries& s : p.series) {
      if ((s.role == SeriesRole::kFadedPoints) != faded_pass) continue;
      const SeriesStyle style = series_style(s.style);
      const std::vector<bool> mask = marker_mask(s, f.kind);
      for (std::size_t i = 0; i < s.points.size(); ++i) {
        if (mask[i]) {
          c.marker(style.marker, mx(s.points[i].x), my(s.points[i].y), kMarkerRadius,
                   faded_pass ? faded(style.line) : style.line, style.hollow);
        }
      }
    }
  }
  cairo_restore(cr);
  label_bands();
  label_rules(c, p, plot, mx, my, taken);
  draw_point_labels(c, p, mx, my, {plot.x + 1.0, plot.y + 1.0, plot.w - 2.0, plot.h - 2.0},
                    std::move(taken));
}

}  // namespace

std::pair<std::size_t, std::size_t> grid_shape(std::size_t panels, const Grid& grid) {
  return shape(panels, grid);
}

void draw_xy(Canvas& c, const XyFigure& f, double width, double height) {
  c.fill_rect({0.0, 0.0, width, height}, colour::kWhite);
  std::vector<LegendEntry> legend;
  const std::vector<PreparedPanel> panels = prepare(f, legend);

  double top = draw_header(c, f.title, f.subtitle, width);
  c.set_font(font::kAxisTitle);
  const double axis_title_h = c.line_height();
  const double grid_left = kMargin + axis_title_h + 6.0;
  if (legend.size() > 1 || (f.legend_always && !legend.empty())) {
    top = draw_legend(c, legend, f.kind, grid_left, top, width - grid_left - kMargin);
  }
  top += 6.0;
  double bottom = draw_notes(c, f.notes, width, height);
  bottom -= axis_title_h + 6.0;
  const double x_title_y = bottom + 4.0;

  const auto [cols, rows] = shape(panels.size(), f.grid);
  const Rect grid{grid_left, top, width - kMargin - grid_left, bottom - top};
  const double cell_w = grid.w / static_cast<double>(cols);
  const double cell_h = grid.h / static_cast<double>(rows);

  bool any_title = false;
  for (const PreparedPanel& p : panels) any_title = any_title || !p.title.empty();
  c.set_font(font::kPanelTitle, true);
  const double title_h = any_title ? c.line_height() + 4.0 : 0.0;
  c.set_font(font::kTick);
  const double tick_h = c.line_height();
  const double plot_h_px =
      std::max(10.0, cell_h - title_h - 8.0 - (6.0 + tick_h) - (rows > 1 ? 14.0 : 2.0));

  // Shared scales use every panel's data; per-panel scales only their own.
  Extent all_x;
  Extent all_y;
  std::vector<double> all_xv;
  std::vector<double> all_yv;
  for (const PreparedPanel& p : panels) {
    all_x.add(p.x);
    all_y.add(p.y);
    all_xv.insert(all_xv.end(), p.x_values.begin(), p.x_values.end());
    all_yv.insert(all_yv.end(), p.y_values.begin(), p.y_values.end());
  }
  all_xv = distinct_sorted(std::move(all_xv));
  all_yv = distinct_sorted(std::move(all_yv));

  const int y_target = std::clamp(static_cast<int>(plot_h_px / 60.0), 2, 8);
  std::vector<AxisTicks> yticks;
  double ytick_w = 0.0;
  c.set_font(font::kTick);
  for (const PreparedPanel& p : panels) {
    yticks.push_back(f.grid.shared_y ? make_ticks(f.y, all_y, all_yv, y_target)
                                     : make_ticks(f.y, p.y, p.y_values, y_target));
    for (const std::string& l : yticks.back().labels) ytick_w = std::max(ytick_w, c.text_width(l));
  }
  const double right_pad = cols > 1 ? 18.0 : 14.0;
  const double plot_w_px = std::max(10.0, cell_w - ytick_w - 10.0 - right_pad);

  std::vector<PanelFrame> frames;
  double plot_left_min = width;
  double plot_right_max = 0.0;
  for (std::size_t i = 0; i < panels.size(); ++i) {
    const std::size_t col = i % cols;
    const std::size_t row = i / cols;
    PanelFrame fr;
    fr.cell = {grid.x + cell_w * static_cast<double>(col),
               grid.y + cell_h * static_cast<double>(row), cell_w, cell_h};
    fr.plot = {fr.cell.x + ytick_w + 10.0, fr.cell.y + title_h + 8.0, plot_w_px, plot_h_px};
    plot_left_min = std::min(plot_left_min, fr.plot.x);
    plot_right_max = std::max(plot_right_max, fr.plot.right());
    frames.push_back(fr);
  }
  for (std::size_t i = 0; i < panels.size(); ++i) {
    const PreparedPanel& p = panels[i];
    const AxisTicks xt = f.grid.shared_x ? fit_x_ticks(c, f.x, all_x, all_xv, plot_w_px)
                                         : fit_x_ticks(c, f.x, p.x, p.x_values, plot_w_px);
    draw_panel(c, f, p, frames[i], xt, yticks[i]);
  }

  // Axis titles, once for the grid.
  c.set_font(font::kAxisTitle);
  const std::string x_title = c.ellipsize(axis_label(f.x), width - 2.0 * kMargin);
  c.text(x_title, (plot_left_min + plot_right_max) / 2.0, x_title_y, HAlign::kCenter, VAlign::kTop,
         colour::kText);
  const std::string y_title = c.ellipsize(axis_label(f.y), grid.h);
  const double first_plot_mid = frames.front().plot.y + frames.front().plot.h / 2.0;
  c.text_vertical(y_title, kMargin + axis_title_h / 2.0,
                  rows == 1 ? first_plot_mid : grid.y + grid.h / 2.0, colour::kText);
}

double draw_header(Canvas& c, const std::string& title, const std::string& subtitle, double width) {
  double y = kMargin - 2.0;
  if (!title.empty()) {
    c.set_font(font::kTitle, true);
    c.text(c.ellipsize(title, width - 2.0 * kMargin), kMargin, y, HAlign::kLeft, VAlign::kTop,
           colour::kText);
    y += c.line_height() + 2.0;
  }
  if (!subtitle.empty()) {
    c.set_font(font::kSubtitle);
    c.text(c.ellipsize(subtitle, width - 2.0 * kMargin), kMargin, y, HAlign::kLeft, VAlign::kTop,
           colour::kMuted);
    y += c.line_height() + 2.0;
  }
  return y + 4.0;
}

double draw_notes(Canvas& c, const std::vector<std::string>& notes, double width, double height) {
  c.set_font(font::kNote);
  const double lh = c.line_height() + 2.0;
  double y = height - kMargin + 4.0;
  for (auto it = notes.rbegin(); it != notes.rend(); ++it) {
    c.text(c.ellipsize(*it, width - 2.0 * kMargin), kMargin, y, HAlign::kLeft, VAlign::kBottom,
           colour::kMuted);
    y -= lh;
  }
  return y - 2.0;
}

}  // namespace dyno::chart::detail
