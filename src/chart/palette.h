// Colours, markers and dash patterns, chosen to stay apart for colour-blind readers
// (Okabe & Ito, "Color Universal Design", 2008) and in greyscale (markers and dashes differ).
#pragma once

#include <array>
#include <cstddef>
#include <vector>

namespace dyno::chart {

struct Rgb {
  double r = 0.0;  ///< 0..1
  double g = 0.0;
  double b = 0.0;
};

enum class Marker { kCircle, kSquare, kTriangleUp, kDiamond, kTriangleDown, kPlus, kCross, kStar };

/// What tells one series from another: a colour for lines and markers, a darker variant for
/// text on white (contrast >= 3:1), a marker shape (filled or hollow) and a dash pattern
/// (empty = solid).
struct SeriesStyle {
  Rgb line;
  Rgb text;
  Marker marker = Marker::kCircle;
  std::vector<double> dashes;  ///< on/off lengths in px
  bool hollow = false;         ///< outline markers, so a marker hidden below stays visible
};

/// Style number `index`: the eight Okabe–Ito colours in a fixed order (blue, orange, bluish
/// green, reddish purple, sky blue, vermillion, black, yellow); after eight the colours repeat
/// with another marker and dash, so no two of the first 64 styles look the same. Odd styles
/// have hollow markers: when two arms land on the same point, both stay visible.
SeriesStyle series_style(std::size_t index);

/// The diverging scale: t in [-1, 1] → blue (−1), near-white (0), orange (+1). Colour-blind
/// safe (blue–orange is the axis every common colour vision deficiency keeps). NaN → grey.
Rgb diverging(double t);

/// The diverging scale's stops (t, colour), for a colour bar drawn as a gradient.
const std::array<std::pair<double, Rgb>, 7>& diverging_stops();

/// Relative luminance (WCAG 2.x) of a colour, to pick black or white text on it.
double luminance(Rgb c);

}  // namespace dyno::chart
