#include "chart/canvas.h"

#include <cmath>
#include <iterator>
#include <numbers>
#include <string>
#include <utility>

namespace dyno::chart {

Canvas::Canvas(cairo_t* cr) : cr_(cr) {
  // Unhinted outlines and metrics: glyph positions then depend only on the font file, not on
  // the surface type or the host's rendering settings, so SVG and PNG lay out alike.
  cairo_font_options_t* options = cairo_font_options_create();
  cairo_font_options_set_hint_style(options, CAIRO_HINT_STYLE_NONE);
  cairo_font_options_set_hint_metrics(options, CAIRO_HINT_METRICS_OFF);
  cairo_font_options_set_antialias(options, CAIRO_ANTIALIAS_GRAY);
  cairo_set_font_options(cr_, options);
  cairo_font_options_destroy(options);
  set_font(font::kTick);
}

void Canvas::set_font(double size_px, bool bold) {
  cairo_select_font_face(cr_, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
                         bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr_, size_px);
  size_ = size_px;
}

double Canvas::text_width(std::string_view text) {
  const std::string s(text);
  cairo_text_extents_t e;
  cairo_text_extents(cr_, s.c_str(), &e);
  return e.x_advance;
}

// DejaVu Sans: ascent 0.928 em, descent 0.236 em. Fixed fractions (rather than the font's
// reported extents) keep layout identical whatever fallback font fontconfig picks.
double Canvas::line_height() const { return size_ * 1.17; }

Rect Canvas::text_box(std::string_view text, double x, double y, HAlign h, VAlign v) {
  const double w = text_width(text);
  const double ascent = size_ * 0.93;
  const double descent = size_ * 0.24;
  double left = x;
  if (h == HAlign::kCenter) left = x - w / 2.0;
  if (h == HAlign::kRight) left = x - w;
  double baseline = y;
  switch (v) {
    case VAlign::kTop:
      baseline = y + ascent;
      break;
    case VAlign::kMiddle:
      baseline = y + size_ * 0.36;  // half the cap height: digits and capitals look centred
      break;
    case VAlign::kBaseline:
      break;
    case VAlign::kBottom:
      baseline = y - descent;
      break;
  }
  return {left, baseline - ascent, w, ascent + descent};
}

Rect Canvas::text(std::string_view text, double x, double y, HAlign h, VAlign v, Rgb colour,
                  bool halo) {
  const Rect box = text_box(text, x, y, h, v);
  const double baseline = box.y + size_ * 0.93;
  const std::string s(text);
  cairo_move_to(cr_, box.x, baseline);
  if (halo) {
    // A white outline from four offset copies: the copies reuse the same glyphs in the SVG
    // (a stroked text path would write every glyph's outline again).
    set_colour(colour::kWhite);
    for (const auto& [dx, dy] : {std::pair{-1.2, 0.0}, {1.2, 0.0}, {0.0, -1.2}, {0.0, 1.2}}) {
      cairo_move_to(cr_, box.x + dx, baseline + dy);
      cairo_show_text(cr_, s.c_str());
    }
    cairo_move_to(cr_, box.x, baseline);
  }
  set_colour(colour);
  cairo_show_text(cr_, s.c_str());
  cairo_new_path(cr_);
  return box;
}

void Canvas::text_vertical(std::string_view text, double x, double y, Rgb colour) {
  cairo_save(cr_);
  cairo_translate(cr_, x, y);
  cairo_rotate(cr_, -std::numbers::pi / 2.0);
  this->text(text, 0.0, 0.0, HAlign::kCenter, VAlign::kMiddle, colour);
  cairo_restore(cr_);
}

void Canvas::text_vertical_end(std::string_view text, double x, double y, Rgb colour) {
  cairo_save(cr_);
  cairo_translate(cr_, x, y);
  cairo_rotate(cr_, -std::numbers::pi / 2.0);
  this->text(text, 0.0, 0.0, HAlign::kRight, VAlign::kMiddle, colour);
  cairo_restore(cr_);
}

std::string Canvas::ellipsize(std::string_view text, double max_width) {
  if (text_width(text) <= max_width) return std::string(text);
  shortened_.emplace_back(text);
  static constexpr std::string_view kEllipsis = "\xE2\x80\xA6";
  // Cut at UTF-8 character boundaries (never inside a multi-byte sequence).
  std::string_view s = text;
  while (!s.empty()) {
    std::size_t cut = s.size() - 1;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0u) == 0x80u) --cut;
    s = s.substr(0, cut);
    std::string candidate(s);
    while (!candidate.empty() && candidate.back() == ' ') candidate.pop_back();
    candidate += kEllipsis;
    if (text_width(candidate) <= max_width) return candidate;
  }
  return std::string(kEllipsis);
}

void Canvas::set_colour(Rgb c, double alpha) {
  if (alpha >= 1.0) {
    cairo_set_source_rgb(cr_, c.r, c.g, c.b);
  } else {
    cairo_set_source_rgba(cr_, c.r, c.g, c.b, alpha);
  }
}

void Canvas::fill_rect(const Rect& r, Rgb c, double alpha) {
  cairo_rectangle(cr_, r.x, r.y, r.w, r.h);
  set_colour(c, alpha);
  cairo_fill(cr_);
}

void Canvas::stroke_rect(const Rect& r, Rgb c, double width) {
  cairo_rectangle(cr_, r.x, r.y, r.w, r.h);
  set_colour(c);
  cairo_set_line_width(cr_, width);
  cairo_stroke(cr_);
}

void Canvas::line(double x0, double y0, double x1, double y1, Rgb c, double width,
                  const std::vector<double>& dashes) {
  cairo_move_to(cr_, x0, y0);
  cairo_line_to(cr_, x1, y1);
  set_colour(c);
  cairo_set_line_width(cr_, width);
  cairo_set_dash(cr_, dashes.data(), static_cast<int>(dashes.size()), 0.0);
  cairo_stroke(cr_);
  cairo_set_dash(cr_, nullptr, 0, 0.0);
}

void Canvas::marker(Marker m, double x, double y, double radius, Rgb colour, bool hollow) {
  cairo_t* cr = cr_;
  const double r = hollow ? radius + 0.5 : radius;
  const auto polygon = [cr, x, y](std::initializer_list<std::pair<double, double>> pts) {
    bool first = true;
    for (const auto& [dx, dy] : pts) {
      if (first) {
        cairo_move_to(cr, x + dx, y + dy);
        first = false;
      } else {
        cairo_line_to(cr, x + dx, y + dy);
      }
    }
    cairo_close_path(cr);
  };
  cairo_set_dash(cr, nullptr, 0, 0.0);
  switch (m) {
    case Marker::kCircle:
      cairo_new_sub_path(cr);
      cairo_arc(cr, x, y, r, 0.0, 2.0 * std::numbers::pi);
      break;
    case Marker::kSquare:
      cairo_rectangle(cr, x - r * 0.85, y - r * 0.85, r * 1.7, r * 1.7);
      break;
    case Marker::kTriangleUp:
      polygon({{0.0, -r * 1.15}, {r * 1.05, r * 0.75}, {-r * 1.05, r * 0.75}});
      break;
    case Marker::kTriangleDown:
      polygon({{0.0, r * 1.15}, {r * 1.05, -r * 0.75}, {-r * 1.05, -r * 0.75}});
      break;
    case Marker::kDiamond:
      polygon({{0.0, -r * 1.2}, {r * 1.0, 0.0}, {0.0, r * 1.2}, {-r * 1.0, 0.0}});
      break;
    case Marker::kPlus:
    case Marker::kCross: {
      // A plus of arm length a and half-thickness t; the cross is the plus turned 45°.
      const double a = r * 1.2;
      const double t = r * 0.42;
      cairo_save(cr);
      cairo_translate(cr, x, y);
      if (m == Marker::kCross) cairo_rotate(cr, std::numbers::pi / 4.0);
      const double px[] = {-t, t, t, a, a, t, t, -t, -t, -a, -a, -t};
      const double py[] = {-a, -a, -t, -t, t, t, a, a, t, t, -t, -t};
      cairo_move_to(cr, px[0], py[0]);
      for (std::size_t i = 1; i < std::size(px); ++i) cairo_line_to(cr, px[i], py[i]);
      cairo_close_path(cr);
      cairo_restore(cr);
      break;
    }
    case Marker::kStar: {
      cairo_move_to(cr, x, y - r * 1.3);
      for (int i = 1; i < 10; ++i) {
        const double angle = -std::numbers::pi / 2.0 + i * std::numbers::pi / 5.0;
        const double rr = (i % 2 == 0) ? r * 1.3 : r * 0.55;
        cairo_line_to(cr, x + rr * std::cos(angle), y + rr * std::sin(angle));
      }
      cairo_close_path(cr);
      break;
    }
  }
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_MITER);
  if (hollow) {
    set_colour(colour);
    cairo_set_line_width(cr, 1.8);
    cairo_stroke(cr);
    return;
  }
  set_colour(colour);
  cairo_fill_preserve(cr);
  set_colour(colour::kWhite);
  cairo_set_line_width(cr, 1.0);
  cairo_stroke(cr);
}

}  // namespace dyno::chart
