#include "chart/palette.h"

#include <algorithm>
#include <cmath>

namespace dyno::chart {

namespace {

constexpr Rgb hex(unsigned v) {
  return {static_cast<double>((v >> 16) & 0xFFu) / 255.0,
          static_cast<double>((v >> 8) & 0xFFu) / 255.0, static_cast<double>(v & 0xFFu) / 255.0};
}

struct Entry {
  Rgb line;
  Rgb text;
};

// Okabe–Ito, ordered so that two arms get blue and orange (the most distinct pair) and the
// pale yellow comes last. Text variants darken the colours too light for small text on white.
constexpr std::array<Entry, 8> kColours = {{
    {hex(0x0072B2), hex(0x0072B2)},  // blue
    {hex(0xE69F00), hex(0x9E6B00)},  // orange
    {hex(0x009E73), hex(0x00795A)},  // bluish green
    {hex(0xCC79A7), hex(0xA0507C)},  // reddish purple
    {hex(0x56B4E9), hex(0x2B79A8)},  // sky blue
    {hex(0xD55E00), hex(0xB34F00)},  // vermillion
    {hex(0x000000), hex(0x000000)},  // black
    {hex(0xF0E442), hex(0x857C00)},  // yellow
}};

constexpr std::array<Marker, 8> kMarkers = {
    Marker::kCircle,       Marker::kSquare, Marker::kTriangleUp, Marker::kDiamond,
    Marker::kTriangleDown, Marker::kPlus,   Marker::kCross,      Marker::kStar};

const std::array<std::vector<double>, 8>& dash_patterns() {
  static const std::array<std::vector<double>, 8> kDashes = {{
      {},
      {7.0, 4.0},
      {2.0, 3.0},
      {9.0, 3.0, 2.0, 3.0},
      {14.0, 4.0},
      {4.0, 4.0},
      {9.0, 3.0, 2.0, 3.0, 2.0, 3.0},
      {1.0, 5.0},
  }};
  return kDashes;
}

// Blue side from ColorBrewer RdBu, orange side from PuOr; both have matching lightness steps.
const std::array<std::pair<double, Rgb>, 7> kStops = {{
    {-1.0, hex(0x2166AC)},
    {-0.6, hex(0x67A9CF)},
    {-0.25, hex(0xD1E5F0)},
    {0.0, hex(0xF7F7F7)},
    {0.25, hex(0xFEE0B6)},
    {0.6, hex(0xF1A340)},
    {1.0, hex(0xB35806)},
}};

}  // namespace

SeriesStyle series_style(std::size_t index) {
  const std::size_t colour = index % 8;
  const std::size_t round = index / 8;
  SeriesStyle s;
  s.line = kColours[colour].line;
  s.text = kColours[colour].text;
  s.marker = kMarkers[(colour + round) % 8];
  s.dashes = dash_patterns()[(colour + 3 * round) % 8];
  s.hollow = index % 2 == 1;
  return s;
}

Rgb diverging(double t) {
  if (std::isnan(t)) return hex(0xBBBBBB);
  t = std::clamp(t, -1.0, 1.0);
  for (std::size_t i = 1; i < kStops.size(); ++i) {
    if (t <= kStops[i].first) {
      const auto& [t0, c0] = kStops[i - 1];
      const auto& [t1, c1] = kStops[i];
      const double f = (t - t0) / (t1 - t0);
      return {c0.r + (c1.r - c0.r) * f, c0.g + (c1.g - c0.g) * f, c0.b + (c1.b - c0.b) * f};
    }
  }
  return kStops.back().second;
}

const std::array<std::pair<double, Rgb>, 7>& diverging_stops() { return kStops; }

double luminance(Rgb c) {
  const auto lin = [](double v) {
    return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
  };
  return 0.2126 * lin(c.r) + 0.7152 * lin(c.g) + 0.0722 * lin(c.b);
}

}  // namespace dyno::chart
