// The heatmap: a grid of annotated cells on a diverging scale, with a colour bar.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "chart/draw.h"
#include "chart/scale.h"

namespace dyno::chart::detail {

namespace {

constexpr double kMaxCellW = 170.0;
constexpr double kMaxCellH = 64.0;
constexpr Rgb kMissing{0.93, 0.93, 0.93};
constexpr Rgb kHatch{0.74, 0.74, 0.74};

// ±limit: the given one, else the largest |value| (at least min_limit); never 0, so an
// all-zero grid stays white.
double symmetric_limit(const Heatmap& h) {
  if (h.limit && std::isfinite(*h.limit) && *h.limit > 0.0) return *h.limit;
  double m = std::isfinite(h.min_limit) ? std::max(h.min_limit, 0.0) : 0.0;
  for (const auto& row : h.values) {
    for (const auto& v : row) {
      if (v && std::isfinite(*v)) m = std::max(m, std::abs(*v));
    }
  }
  return m > 0.0 ? m : 1.0;
}

bool any_missing(const Heatmap& h) {
  for (const auto& row : h.values) {
    for (const auto& v : row) {
      if (!v || !std::isfinite(*v)) return true;
    }
  }
  return false;
}

void hatch(Canvas& c, const Rect& r) {
  cairo_t* cr = c.cr();
  cairo_save(cr);
  cairo_rectangle(cr, r.x, r.y, r.w, r.h);
  cairo_clip(cr);
  for (double d = -r.h; d < r.w; d += 9.0) {
    cairo_move_to(cr, r.x + d, r.bottom());
    cairo_line_to(cr, r.x + d + r.h, r.y);
  }
  c.set_colour(kHatch);
  cairo_set_line_width(cr, 1.0);
  cairo_stroke(cr);
  cairo_restore(cr);
}

struct BarTick {
  double value = 0.0;
  std::string label;
};

std::vector<BarTick> bar_ticks(double limit, const ValueFormat& format) {
  const Ticks t = linear_ticks(-limit, limit, 4, -limit, limit);
  const std::vector<std::string> labels = format_ticks(t.values, t.step);
  std::vector<BarTick> out;
  for (std::size_t i = 0; i < t.values.size(); ++i) {
    std::string l = labels[i];
    if (format.sign && t.values[i] > 0.0) l = "+" + l;
    out.push_back({t.values[i], l + format.suffix});
  }
  return out;
}

}  // namespace

void check_heatmap(const Heatmap& h) {
  if (h.values.size() != h.rows.size()) {
    throw std::invalid_argument("heatmap \"" + h.title + "\": " + std::to_string(h.rows.size()) +
                                " row labels but " + std::to_string(h.values.size()) +
                                " rows of values");
  }
  for (std::size_t r = 0; r < h.values.size(); ++r) {
    if (h.values[r].size() != h.columns.size()) {
      throw std::invalid_argument("heatmap \"" + h.title + "\": row " + std::to_string(r) +
                                  " has " + std::to_string(h.values[r].size()) + " values for " +
                                  std::to_string(h.columns.size()) + " column labels");
    }
  }
  if (!h.cell_labels.empty()) {
    if (h.cell_labels.size() != h.rows.size()) {
      throw std::invalid_argument(
          "heatmap \"" + h.title + "\": " + std::to_string(h.cell_labels.size()) +
          " rows of cell labels for " + std::to_string(h.rows.size()) + " rows");
    }
    for (std::size_t r = 0; r < h.cell_labels.size(); ++r) {
      if (h.cell_labels[r].size() != h.columns.size()) {
        throw std::invalid_argument("heatmap \"" + h.title + "\": row " + std::to_string(r) +
                                    " has " + std::to_string(h.cell_labels[r].size()) +
                                    " cell labels for " + std::to_string(h.columns.size()) +
                                    " column labels");
      }
    }
  }
  if (h.format.decimals < 0 || h.format.decimals > 12) {
    throw std::invalid_argument("heatmap \"" + h.title + "\": decimals must be in [0, 12]");
  }
}

namespace {

constexpr double kBarW = 18.0;         // the colour bar's width
constexpr double kCaptionMax = 190.0;  // the colour bar's end captions are cut beyond this

// Where draw_heatmap puts things: the grid, its labels and the colour bar block.
struct Layout {
  double limit = 1.0;  // the scale's ±limit
  double axis_title_h = 0.0;
  double bottom = 0.0;  // above the notes and the column title
  double column_title_y = 0.0;
  double row_label_w = 0.0;
  double grid_left = 0.0;
  double grid_top = 0.0;
  double cell_w = 0.0;
  double cell_h = 0.0;
  double grid_w = 0.0;
  double grid_h = 0.0;
  bool horizontal = true;  // column labels upright (false) or level (true)
  double column_label_h = 0.0;
  std::vector<BarTick> ticks;
  double tick_w = 0.0;
  double caption_h = 0.0;
};

Layout heatmap_layout(Canvas& c, const Heatmap& h, double width, double height, double top,
                      double bottom) {
  Layout l;
  const std::size_t nrows = h.rows.size();
  const std::size_t ncols = h.columns.size();
  l.limit = symmetric_limit(h);

  c.set_font(font::kAxisTitle);
  l.axis_title_h = c.line_height();
  const double left = kMargin + (h.row_title.empty() ? 0.0 : l.axis_title_h + 8.0);
  if (!h.column_title.empty()) bottom -= l.axis_title_h + 6.0;
  l.bottom = bottom;
  l.column_title_y = bottom + 4.0;

  // Colour bar block: gap, bar, tick labels, title (turned), and the end captions.
  l.ticks = bar_ticks(l.limit, h.format);
  c.set_font(font::kTick);
  for (const BarTick& t : l.ticks) l.tick_w = std::max(l.tick_w, c.text_width(t.label));
  double block_w =
      24.0 + kBarW + 6.0 + l.tick_w + (h.scale_title.empty() ? 0.0 : 10.0 + l.axis_title_h);
  c.set_font(font::kNote);
  l.caption_h = c.line_height() + 6.0;
  double caption_w = 0.0;
  for (const std::string* s : {&h.positive_label, &h.negative_label}) {
    if (!s->empty()) caption_w = std::max(caption_w, std::min(c.text_width(*s), kCaptionMax));
  }
  block_w = std::max(block_w, 24.0 + caption_w);
  const double grid_right_max = width - kMargin - block_w;

  // Row labels, right-aligned against the grid: whole, unless that leaves the columns less
  // than 40 px each (default_size() makes room for them).
  c.set_font(font::kLegend);
  const double label_h = c.line_height();
  for (const std::string& r : h.rows) l.row_label_w = std::max(l.row_label_w, c.text_width(r));
  l.row_label_w = std::min(
      l.row_label_w,
      std::max(width * 0.3, grid_right_max - left - 10.0 - 40.0 * static_cast<double>(ncols)));
  l.grid_left = left + l.row_label_w + 10.0;

  l.cell_w = std::min(kMaxCellW,
                      std::max(8.0, (grid_right_max - l.grid_left) / static_cast<double>(ncols)));
  c.set_font(font::kLegend);
  double column_label_w = 0.0;
  for (const std::string& col : h.columns) {
    column_label_w = std::max(column_label_w, c.text_width(col));
  }
  l.horizontal = column_label_w <= l.cell_w - 6.0;
  // Upright labels whole, unless that leaves the rows less than 24 px each (default_size()
  // makes room for them).
  l.grid_top = top + 4.0;
  l.column_label_h = l.horizontal
                         ? label_h + 8.0
                         : std::min(column_label_w + 10.0,
                                    std::max(height * 0.4, bottom - l.grid_top -
                                                               24.0 * static_cast<double>(nrows)));
  l.cell_h = std::min(kMaxCellH, std::max(8.0, (bottom - l.column_label_h - l.grid_top) /
                                                   static_cast<double>(nrows)));
  l.grid_w = l.cell_w * static_cast<double>(ncols);
  l.grid_h = l.cell_h * static_cast<double>(nrows);
  return l;
}

// A cell's text at (cx, cy): the value, and its label under it or after it when that fits.
void draw_cell_text(Canvas& c, const Rect& cell, const std::string& text, const std::string& label,
                    double size, const Rgb& ink, bool halo) {
  const double cx = cell.x + cell.w / 2.0;
  const double cy = cell.y + cell.h / 2.0;
  const double value_h = c.line_height();
  if (!label.empty()) {
    // Two lines when they fit: the value, then the label in the small size.
    const double label_size = std::min(size, font::kSmall);
    c.set_font(label_size);
    const double second_h = c.line_height();
    if (value_h + 2.0 + second_h <= cell.h - 4.0 && c.text_width(label) <= cell.w - 6.0) {
      const double block_top = cy - (value_h + 2.0 + second_h) / 2.0;
      c.text(label, cx, block_top + value_h + 2.0 + second_h / 2.0, HAlign::kCenter,
             VAlign::kMiddle, ink, halo);
      c.set_font(size);
      c.text(text, cx, block_top + value_h / 2.0, HAlign::kCenter, VAlign::kMiddle, ink, halo);
      return;
    }
    // One line, "value label", as small as 7 px; else the value alone.
    const std::string line = text + " " + label;
    double one = size;
    c.set_font(one);
    while (one > 7.0 && c.text_width(line) > cell.w - 6.0) {
      one -= 0.5;
      c.set_font(one);
    }
    if (c.text_width(line) <= cell.w - 6.0 && c.line_height() <= cell.h) {
      c.text(line, cx, cy, HAlign::kCenter, VAlign::kMiddle, ink, halo);
      return;
    }
  }
  c.set_font(size);
  c.text(text, cx, cy, HAlign::kCenter, VAlign::kMiddle, ink, halo);
}

// One cell: its colour (hatched grey when it has no value), value and label, white border.
void draw_cell(Canvas& c, const Heatmap& h, const Layout& l, std::size_t r, std::size_t k,
               double value_font) {
  const Rect cell{l.grid_left + l.cell_w * static_cast<double>(k),
                  l.grid_top + l.cell_h * static_cast<double>(r), l.cell_w, l.cell_h};
  const std::optional<double>& v = h.values[r][k];
  const std::string label = h.cell_labels.empty() ? std::string() : h.cell_labels[r][k];
  const bool has_value = v && std::isfinite(*v);
  Rgb ink = colour::kMuted;
  if (has_value) {
    const Rgb fill = diverging(*v / l.limit);
    c.fill_rect(cell, fill);
    ink = luminance(fill) < 0.33 ? colour::kWhite : colour::kText;
  } else {
    c.fill_rect(cell, kMissing);
    hatch(c, cell);
  }
  const std::string text = has_value ? format_value(*v, h.format) : "n/a";
  const bool halo = !has_value;  // over the hatching
  double size = has_value ? value_font : std::min(value_font, font::kSmall);
  c.set_font(size);
  if (size > font::kSmall && c.text_width(text) > cell.w - 6.0) {
    size = font::kSmall;
    c.set_font(size);
  }
  while (size > 7.0 && c.text_width(text) > cell.w - 6.0) {
    size -= 0.5;
    c.set_font(size);
  }
  draw_cell_text(c, cell, text, label, size, ink, halo);
  c.stroke_rect(cell, colour::kWhite, 2.0);
}

// Row and column labels, and the axis titles.
void draw_grid_labels(Canvas& c, const Heatmap& h, const Layout& l, double width) {
  c.set_font(font::kLegend);
  for (std::size_t r = 0; r < h.rows.size(); ++r) {
    const double cy = l.grid_top + l.cell_h * (static_cast<double>(r) + 0.5);
    c.text(c.ellipsize(h.rows[r], l.row_label_w), l.grid_left - 8.0, cy, HAlign::kRight,
           VAlign::kMiddle, colour::kText);
  }
  for (std::size_t k = 0; k < h.columns.size(); ++k) {
    const double cx = l.grid_left + l.cell_w * (static_cast<double>(k) + 0.5);
    if (l.horizontal) {
      c.text(h.columns[k], cx, l.grid_top + l.grid_h + 6.0, HAlign::kCenter, VAlign::kTop,
             colour::kText);
    } else {
      c.text_vertical_end(c.ellipsize(h.columns[k], l.column_label_h - 10.0), cx,
                          l.grid_top + l.grid_h + 6.0, colour::kText);
    }
  }
  c.set_font(font::kAxisTitle);
  if (!h.row_title.empty()) {
    c.text_vertical(c.ellipsize(h.row_title, std::max(l.grid_h, 60.0)),
                    kMargin + l.axis_title_h / 2.0, l.grid_top + l.grid_h / 2.0, colour::kText);
  }
  if (!h.column_title.empty()) {
    c.text(c.ellipsize(h.column_title, width - 2.0 * kMargin), l.grid_left + l.grid_w / 2.0,
           std::min(l.column_title_y, l.grid_top + l.grid_h + l.column_label_h), HAlign::kCenter,
           VAlign::kTop, colour::kText);
  }
}

// Colour bar beside the grid: a gradient through the scale's stops, ticks, captions.
void draw_colour_bar(Canvas& c, const Heatmap& h, const Layout& l) {
  const double bar_x = l.grid_left + l.grid_w + 24.0;
  const double room = l.bottom - l.grid_top - 2.0 * l.caption_h;
  const double bar_h =
      std::min(std::max(l.grid_h - 2.0 * l.caption_h, 140.0), std::min(room, 320.0));
  const double bar_y = l.grid_top + l.caption_h;
  cairo_t* cr = c.cr();
  cairo_pattern_t* gradient = cairo_pattern_create_linear(0.0, bar_y + bar_h, 0.0, bar_y);
  for (const auto& [t, rgb] : diverging_stops()) {
    cairo_pattern_add_color_stop_rgb(gradient, (t + 1.0) / 2.0, rgb.r, rgb.g, rgb.b);
  }
  cairo_rectangle(cr, bar_x, bar_y, kBarW, bar_h);
  cairo_set_source(cr, gradient);
  cairo_fill(cr);
  cairo_pattern_destroy(gradient);
  c.stroke_rect({bar_x, bar_y, kBarW, bar_h}, {0.6, 0.6, 0.6}, 1.0);
  c.set_font(font::kTick);
  for (const BarTick& t : l.ticks) {
    const double y = bar_y + bar_h * (1.0 - (t.value + l.limit) / (2.0 * l.limit));
    c.line(bar_x + kBarW, y, bar_x + kBarW + 4.0, y, colour::kAxis, 1.0);
    c.text(t.label, bar_x + kBarW + 6.0, y, HAlign::kLeft, VAlign::kMiddle, colour::kText);
  }
  if (!h.scale_title.empty()) {
    c.set_font(font::kAxisTitle);
    c.text_vertical(c.ellipsize(h.scale_title, std::max(bar_h + 2.0 * l.caption_h, 80.0)),
                    bar_x + kBarW + 6.0 + l.tick_w + 10.0 + l.axis_title_h / 2.0,
                    bar_y + bar_h / 2.0, colour::kText);
  }
  c.set_font(font::kNote);
  if (!h.positive_label.empty()) {
    c.text(c.ellipsize(h.positive_label, kCaptionMax), bar_x, bar_y - 5.0, HAlign::kLeft,
           VAlign::kBottom, colour::kMuted);
  }
  if (!h.negative_label.empty()) {
    c.text(c.ellipsize(h.negative_label, kCaptionMax), bar_x, bar_y + bar_h + 5.0, HAlign::kLeft,
           VAlign::kTop, colour::kMuted);
  }
}

}  // namespace

void draw_heatmap(Canvas& c, const Heatmap& h, double width, double height) {
  c.fill_rect({0.0, 0.0, width, height}, colour::kWhite);
  const double top = draw_header(c, h.title, h.subtitle, width) + 4.0;
  std::vector<std::string> notes;
  if (!h.note.empty()) notes.push_back(h.note);
  if (any_missing(h)) notes.push_back("n/a: no value for this cell.");
  const double bottom = draw_notes(c, notes, width, height);

  if (h.rows.empty() || h.columns.empty()) {
    c.set_font(font::kAxisTitle);
    c.text("no data", width / 2.0, (top + bottom) / 2.0, HAlign::kCenter, VAlign::kMiddle,
           colour::kMuted);
    return;
  }
  const Layout l = heatmap_layout(c, h, width, height, top, bottom);

  // Cells.
  // Cell values in one of the two standard sizes when they fit (fewer glyph sets in the SVG),
  // smaller only when the cells are.
  const double value_font =
      l.cell_h >= 34.0 ? font::kLarge : std::clamp(l.cell_h * 0.45, 7.0, font::kSmall);
  for (std::size_t r = 0; r < h.rows.size(); ++r) {
    for (std::size_t k = 0; k < h.columns.size(); ++k) draw_cell(c, h, l, r, k, value_font);
  }
  draw_grid_labels(c, h, l, width);
  draw_colour_bar(c, h, l);
}

// The size at which cells are about 100 × 48 px: text is measured on a scratch surface with
// the fonts draw_heatmap uses, so long labels get the room they need.
Size heatmap_default_size(const Heatmap& h) {
  cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1);
  cairo_t* cr = cairo_create(surface);
  double row_label_w = 0.0;
  double column_label_w = 0.0;
  double block_w = 0.0;
  double axis_title_h = 0.0;
  {
    Canvas c(cr);
    c.set_font(font::kAxisTitle);
    axis_title_h = c.line_height();
    c.set_font(font::kLegend);
    for (const std::string& r : h.rows) row_label_w = std::max(row_label_w, c.text_width(r));
    for (const std::string& col : h.columns) {
      column_label_w = std::max(column_label_w, c.text_width(col));
    }
    c.set_font(font::kTick);
    double tick_w = 0.0;
    for (const BarTick& t : bar_ticks(symmetric_limit(h), h.format)) {
      tick_w = std::max(tick_w, c.text_width(t.label));
    }
    block_w = 24.0 + 18.0 + 6.0 + tick_w + (h.scale_title.empty() ? 0.0 : 10.0 + axis_title_h);
    c.set_font(font::kNote);
    for (const std::string* l : {&h.positive_label, &h.negative_label}) {
      block_w = std::max(block_w, 24.0 + std::min(c.text_width(*l), 190.0));
    }
  }
  cairo_destroy(cr);
  cairo_surface_destroy(surface);

  const double cols = static_cast<double>(h.columns.size());
  const double rows = static_cast<double>(h.rows.size());
  const double left = kMargin + (h.row_title.empty() ? 0.0 : axis_title_h + 8.0);
  // Room for every label whole: rows and upright columns are never shortened at this size.
  const double width = left + row_label_w + 10.0 + 100.0 * cols + block_w + kMargin;
  const double column_labels = column_label_w <= 94.0 ? 26.0 : column_label_w + 10.0;
  double notes = h.note.empty() ? 0.0 : 17.0;
  if (any_missing(h)) notes += 17.0;
  const double header = 70.0 + (h.subtitle.empty() ? 0.0 : 18.0);
  const double height = header + 48.0 * rows + column_labels +
                        (h.column_title.empty() ? 0.0 : axis_title_h + 6.0) + notes + kMargin + 8.0;
  return {static_cast<int>(std::clamp(width, 640.0, 2400.0)),
          static_cast<int>(std::clamp(height, 360.0, 2400.0))};
}

}  // namespace dyno::chart::detail
