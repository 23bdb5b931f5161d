// A thin layer over one cairo context: fonts, aligned text, markers, lines. Internal to
// dyno_chart; every chart kind draws through it, so SVG and PNG share one drawing code.
#pragma once

#include <cairo.h>

#include <string>
#include <string_view>
#include <vector>

#include "chart/palette.h"

namespace dyno::chart {

struct Rect {
  double x = 0.0;
  double y = 0.0;
  double w = 0.0;
  double h = 0.0;
  double right() const { return x + w; }
  double bottom() const { return y + h; }
  bool intersects(const Rect& o) const {
    return x < o.right() && o.x < right() && y < o.bottom() && o.y < bottom();
  }
  bool contains(const Rect& o) const {
    return o.x >= x && o.y >= y && o.right() <= right() && o.bottom() <= bottom();
  }
};

enum class HAlign { kLeft, kCenter, kRight };
enum class VAlign { kTop, kMiddle, kBaseline, kBottom };

/// Text sizes in px at the default canvas; every chart uses these so charts look alike. Few
/// distinct sizes on purpose: the SVG carries each size's glyph outlines once.
namespace font {
inline constexpr double kTitle = 20.0;  // bold
inline constexpr double kLarge = 14.0;  // axis titles, legend, subtitle; bold: panel titles
inline constexpr double kSmall = 12.5;  // ticks, point labels, notes
inline constexpr double kSubtitle = kLarge;
inline constexpr double kAxisTitle = kLarge;
inline constexpr double kPanelTitle = kLarge;
inline constexpr double kLegend = kLarge;
inline constexpr double kTick = kSmall;
inline constexpr double kPointLabel = kSmall;
inline constexpr double kNote = kSmall;
}  // namespace font

namespace colour {
inline constexpr Rgb kText{0.13, 0.13, 0.13};
inline constexpr Rgb kMuted{0.38, 0.38, 0.38};
inline constexpr Rgb kAxis{0.35, 0.35, 0.35};
inline constexpr Rgb kGrid{0.89, 0.89, 0.89};
inline constexpr Rgb kWhite{1.0, 1.0, 1.0};
}  // namespace colour

class Canvas {
 public:
  explicit Canvas(cairo_t* cr);

  cairo_t* cr() const { return cr_; }

  void set_font(double size_px, bool bold = false);
  /// Advance width of `text` in the current font.
  double text_width(std::string_view text);
  /// Height of a line of text in the current font (ascent + descent).
  double line_height() const;

  /// Draws one line at (x, y) aligned as asked; returns its box. `halo` strokes a white
  /// outline under the glyphs so text over lines stays legible.
  Rect text(std::string_view text, double x, double y, HAlign h, VAlign v, Rgb colour,
            bool halo = false);
  /// Box `text` would take when drawn at (x, y) with this alignment.
  Rect text_box(std::string_view text, double x, double y, HAlign h, VAlign v);
  /// Text turned 90° counter-clockwise (reading upwards), centred on (x, y).
  void text_vertical(std::string_view text, double x, double y, Rgb colour);
  /// Upwards text whose end (right edge before turning) sits at (x, y), vertically centred
  /// on x: for column labels hanging under a heatmap.
  void text_vertical_end(std::string_view text, double x, double y, Rgb colour);

  /// `text` shortened with "…" to fit max_width in the current font (UTF-8 safe).
  std::string ellipsize(std::string_view text, double max_width);
  /// The texts ellipsize() had to shorten on this canvas, in drawing order: a label a reader
  /// cannot read whole (tests hold every board chart to none).
  const std::vector<std::string>& shortened() const { return shortened_; }

  void set_colour(Rgb c, double alpha = 1.0);
  void fill_rect(const Rect& r, Rgb c, double alpha = 1.0);
  void stroke_rect(const Rect& r, Rgb c, double width);
  void line(double x0, double y0, double x1, double y1, Rgb c, double width,
            const std::vector<double>& dashes = {});
  /// A filled marker with a thin white edge, or (hollow) an outline in `colour` through
  /// which whatever lies below stays visible.
  void marker(Marker m, double x, double y, double radius, Rgb colour, bool hollow = false);

 private:
  cairo_t* cr_;
  std::vector<std::string> shortened_;
  double size_ = 12.0;
};

}  // namespace dyno::chart
