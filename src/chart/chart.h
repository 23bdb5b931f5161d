// Charts drawn once with cairo and written as SVG or PNG (docs/charts.md).
//
// The types here know nothing about runs or records: a caller (the board) turns its figures
// into series of points, distributions or a grid of values and picks a chart kind. Every
// chart has a title, axis titles with units, a legend when it shows more than one series, and
// 1-2-5 ticks; missing values (NaN, ±inf, nullopt) are skipped, never drawn as zero.
//
// Rendering is deterministic: the same chart and size give byte-identical SVG and PNG on the
// same build and machine (fonts come from fontconfig, so another font version may differ).
// Functions here are thread-safe: each call draws on its own cairo surface.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace dyno::chart {

enum class Format { kSvg, kPng };

/// How an axis maps values. Log scales skip values <= 0 (and say so in the chart's note).
/// kOrdinal places each distinct data value at its own evenly spaced slot, in ascending order,
/// with a tick labelled by the exact value at every one (a ladder's depths 0, 8000, 16000,
/// 32000 four slots apart, 0 included): for levels whose spacing is a choice, not a quantity.
/// Values between two slots (a window's ends) are placed by linear interpolation.
enum class Scale { kLinear, kLog2, kLog10, kOrdinal };

struct Axis {
  std::string title{};  ///< e.g. "Concurrency"; drawn as "title (unit)"
  std::string unit{};   ///< e.g. "tok/s", "ms", "W", "requests in flight"
  Scale scale = Scale::kLinear;
  /// Ticks at the distinct finite data values (a concurrency ladder 1, 2, 4, …, 1024) instead
  /// of 1-2-5 or power ticks; labels that would overlap are left out.
  bool ticks_at_data = false;
  bool include_zero = false;  ///< linear axes: the range reaches 0 (throughput from zero)
  /// Fixed range ends (linear and log axes; an ordinal axis spans its values); data outside
  /// is clipped.
  std::optional<double> min{};
  std::optional<double> max{};
};

/// One data point. `label` is drawn next to the point when not empty (e.g. "c=16").
/// `low`/`high`, when given, draw an error bar through the point from low to high (a
/// confidence interval), capped at each end given; without one end the bar runs from y. The
/// y range reaches both ends; an end a log axis cannot show is left out.
struct Point {
  double x = 0.0;
  double y = 0.0;
  std::string label{};
  std::optional<double> low{};
  std::optional<double> high{};
};

/// A named sequence of points. A non-finite x or y breaks the line there.
/// `style` picks the palette entry (colour, marker, dash); without it the series gets the
/// position of its name among the chart's distinct names, in order of first appearance. Pass
/// the same `style` for the same arm in every chart to keep its colour where arms are absent.
/// `joined` false draws the points as markers only, in any kind, without a line between them
/// (a scatter: e.g. probes of a search, one series per verdict); the legend shows the marker.
struct Series {
  std::string name{};
  std::vector<Point> points{};
  std::optional<std::size_t> style{};
  bool joined = true;
};

/// A shaded x interval, e.g. the measured service window of a run, or the spread of a value
/// found on x. Windows are drawn under the data and do not widen the x range.
struct Window {
  double start = 0.0;
  double end = 0.0;
  std::string label{};  ///< drawn at the top of the band
};

/// A value marked across a plot as a straight line: horizontal at a y value (a limit, e.g. an
/// SLO's 500 ms) or vertical at an x value (a value found, e.g. a capacity), solid or dashed,
/// with its label beside it (placed clear of the other marks' labels and of the markers). The
/// axis range always reaches it, so a limit far from the data is still shown.
struct Rule {
  double at = 0.0;
  std::string label{};
  bool dashed = false;
};

/// One plot of a grid (small multiples): e.g. one model, or one cell.
struct Panel {
  std::string title{};
  std::vector<Series> series{};
  std::vector<Window> windows{};  ///< shaded x intervals, e.g. a timeline's service window
  std::vector<Rule> y_rules{};    ///< horizontal lines at y values (limits)
  std::vector<Rule> x_rules{};    ///< vertical lines at x values (values found on x)
};

/// How panels are laid out: `columns` 0 picks 1-3 columns from the panel count.
/// Shared scales make panels comparable at a glance; per-panel scales show each one's shape.
struct Grid {
  std::size_t columns = 0;
  bool shared_x = true;
  bool shared_y = true;
};

/// Lines with markers over x (points sorted by x), one panel per model: throughput or prefill
/// vs concurrency. Point labels are drawn when given.
struct LineChart {
  std::string title{};
  std::string subtitle{};
  std::string note{};  ///< a footnote under the chart
  Axis x{};
  Axis y{};
  std::vector<Panel> panels{};
  Grid grid{};
  /// Words for the SVG's <desc> only (never drawn), after what the chart says of itself:
  /// e.g. every point's value and verdict, for a reader without the picture.
  std::string description{};
  /// A legend even for a single series, whose name then says what its markers mean.
  bool legend_always = false;
};

/// Serving trade-off: each series' points joined in the given order (e.g. rising concurrency)
/// and each point labelled (e.g. "c=16"), labels placed so they avoid each other.
struct TradeOff {
  std::string title{};
  std::string subtitle{};
  std::string note{};
  Axis x{};
  Axis y{};
  std::vector<Panel> panels{};
  Grid grid{};
};

/// One operating point of a frontier chart: on the frontier (a full marker, joined by the
/// frontier line) or dominated (a faded marker). `detail` goes into the SVG's description
/// only (e.g. its cost), `label` is drawn next to the point when it fits.
struct FrontierPoint {
  double x = 0.0;
  double y = 0.0;
  std::string label{};
  bool on_frontier = false;
  std::string detail{};
};

/// One arm's points (not joined: they are operating points, not a curve).
struct FrontierSeries {
  std::string name{};
  std::vector<FrontierPoint> points{};
  std::optional<std::size_t> style{};
};

struct FrontierPanel {
  std::string title{};
  std::vector<FrontierSeries> series{};
};

/// A Pareto frontier: every series' points as markers, the points marked on_frontier joined
/// across series in x order by one neutral line (`line_name` in the legend), the dominated
/// points faded. The chart draws the flags it is given; it computes no frontier. The SVG's
/// description lists every point with its coordinates, its flag and its detail.
struct Frontier {
  std::string title{};
  std::string subtitle{};
  std::string note{};
  Axis x{};
  Axis y{};
  std::vector<FrontierPanel> panels{};
  Grid grid{};
  std::string line_name = "Pareto frontier";
};

/// Lines without markers over time (power W over seconds), with shaded windows per panel.
struct Timeline {
  std::string title{};
  std::string subtitle{};
  std::string note{};
  Axis x{};
  Axis y{};
  std::vector<Panel> panels{};
  Grid grid{};
};

/// A sample of one distribution (e.g. TTFT of every request of one arm in one cell).
struct Sample {
  std::string name{};
  std::vector<double> values{};  ///< any order; non-finite values are dropped
  std::optional<std::size_t> style{};
};

struct CdfPanel {
  std::string title{};
  std::vector<Sample> samples{};
};

/// Empirical CDFs: y is the share of values at or below x, in %. Large samples are drawn
/// through 1001 quantiles (0, 0.1, …, 100 %) so the output size does not grow with n.
struct Cdf {
  std::string title{};
  std::string subtitle{};
  std::string note{};
  Axis x{};  ///< e.g. {"TTFT", "ms"}, optionally kLog10
  std::string y_title = "Requests at or below x";
  std::vector<CdfPanel> panels{};
  Grid grid{};
};

/// How heatmap cells and colour-bar ticks are written: "+12.3%" is {1, true, "%"}.
struct ValueFormat {
  int decimals = 1;
  bool sign = false;     ///< "+" before positive values
  std::string suffix{};  ///< appended without a space, e.g. "%"
};

/// A grid of values on a diverging blue–white–orange scale centred on 0 with a symmetric
/// range (±limit, or ±max |value|), every cell annotated with its value; missing cells are
/// hatched and marked "n/a". Values beyond the range take the end colours.
struct Heatmap {
  std::string title{};
  std::string subtitle{};
  std::string note{};
  std::string row_title{};     ///< e.g. "Model"
  std::string column_title{};  ///< e.g. "Cell (concurrency)"
  std::vector<std::string> rows{};
  std::vector<std::string> columns{};
  /// values[row][column]; must be rows.size() × columns.size().
  std::vector<std::vector<std::optional<double>>> values{};
  /// Optional second, smaller line under each cell's value (e.g. the verdict "tie", or why a
  /// cell is n/a); empty, or rows.size() × columns.size() ("" for none in a cell). When a cell
  /// is too small for two lines the label follows the value on one line, else it is left out
  /// (and a footnote says so).
  std::vector<std::vector<std::string>> cell_labels{};
  ValueFormat format{};
  std::string scale_title{};     ///< colour-bar title with unit, e.g. "Δ output tok/s, B vs A (%)"
  std::string positive_label{};  ///< at the top of the colour bar, e.g. "B higher"
  std::string negative_label{};  ///< at the bottom, e.g. "B lower"
  std::optional<double> limit{};  ///< fixed symmetric range (shared between heatmaps); > 0
  /// Without `limit`, the range is ±max(|value|, min_limit): e.g. 5 for percentages, so that
  /// noise-level deltas stay pale instead of taking the scale's darkest colours.
  double min_limit = 0.0;
};

using Chart = std::variant<LineChart, TradeOff, Timeline, Cdf, Heatmap, Frontier>;

struct Size {
  int width = 0;
  int height = 0;
};

/// Largest width or height render() accepts, in pixels.
inline constexpr int kMaxSide = 16384;

/// The size a chart reads well at: 960×600 for one panel; small multiples grow the canvas
/// with the number of rows and columns; heatmaps grow with the number of rows.
Size default_size(const Chart& chart);

/// Draws the chart and returns the file's bytes: an SVG document (sizes in px, a <title> and
/// <desc> naming the chart, its axes and series) or a PNG of exactly width × height pixels.
/// Throws std::invalid_argument for a size outside [64, kMaxSide] or a malformed heatmap,
/// std::runtime_error when cairo fails.
std::string render(const Chart& chart, Format format, int width, int height);
std::string render(const Chart& chart, Format format);  ///< at default_size(chart)

/// The texts (titles, labels, legend names) the chart at width × height cannot show whole
/// and draws shortened with "…"; empty when every text fits. Same checks as render().
std::vector<std::string> shortened_texts(const Chart& chart, int width, int height);

/// Makes an SVG document from render() fit for inlining into HTML next to other charts:
/// drops the XML declaration and prefixes every id and every reference to one (`id="`,
/// `href="#`, `url(#`) with `id_prefix` + "-". The prefix must match [A-Za-z][A-Za-z0-9_-]*
/// (std::invalid_argument otherwise, or when the input does not hold an <svg> element).
std::string inline_svg(std::string_view svg, std::string_view id_prefix);

/// Text made safe inside XML or HTML markup, attribute values included: & < > " ' become
/// entities. The one escaper of SVG titles and of the report's HTML.
std::string markup_escape(std::string_view text);

}  // namespace dyno::chart
