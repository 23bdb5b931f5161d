// Internal: the two drawing routines behind render(), and the layout constants they share.
#pragma once

#include <string>
#include <vector>

#include "chart/canvas.h"
#include "chart/chart.h"

namespace dyno::chart::detail {

/// What differs between the four x/y chart kinds; everything else is one drawing code.
enum class XyKind { kLine, kTradeOff, kTimeline, kCdf, kFrontier };

/// How one series of a frontier is drawn (kNormal: as its kind draws every series).
enum class SeriesRole {
  kNormal,
  kPoints,        ///< markers only, not joined
  kFadedPoints,   ///< markers only, faded (dominated points)
  kFrontierLine,  ///< a neutral line without markers
};

/// An x/y chart in one form: CDFs arrive here already turned into step lines.
struct XyFigure {
  XyKind kind = XyKind::kLine;
  std::string title;
  std::string subtitle;
  std::vector<std::string> notes;
  Axis x;
  Axis y;
  std::vector<Panel> panels;
  Grid grid;
  std::string description;     ///< LineChart::description
  bool legend_always = false;  ///< LineChart::legend_always
  /// roles[panel][series]; empty: every series kNormal.
  std::vector<std::vector<SeriesRole>> roles;
};

XyFigure to_figure(const LineChart& chart);
XyFigure to_figure(const Frontier& chart);
XyFigure to_figure(const TradeOff& chart);
XyFigure to_figure(const Timeline& chart);
XyFigure to_figure(const Cdf& chart);

/// Columns and rows of the panel grid for `panels` panels (at least one cell).
std::pair<std::size_t, std::size_t> grid_shape(std::size_t panels, const Grid& grid);

void draw_xy(Canvas& canvas, const XyFigure& figure, double width, double height);
void draw_heatmap(Canvas& canvas, const Heatmap& heatmap, double width, double height);

/// A heatmap's default size, from its measured labels and its number of rows and columns.
Size heatmap_default_size(const Heatmap& heatmap);

/// Throws std::invalid_argument when values is not rows × columns.
void check_heatmap(const Heatmap& heatmap);

inline constexpr double kMargin = 16.0;

/// Draws the title and subtitle from the top margin; returns the y below them.
double draw_header(Canvas& canvas, const std::string& title, const std::string& subtitle,
                   double width);
/// Draws note lines upwards from the bottom margin; returns the y above them.
double draw_notes(Canvas& canvas, const std::vector<std::string>& notes, double width,
                  double height);

}  // namespace dyno::chart::detail
