#include "chart/chart.h"

#include <cairo.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "chart/palette.h"
#include "chart/scale.h"
#include "gallery.h"

namespace dyno::chart {
namespace {

constexpr std::string_view kPngSignature = "\x89PNG\r\n\x1a\n";

std::uint32_t be32(const std::string& s, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

// The PNG signature, then the IHDR chunk (length 13) with width and height.
void expect_png(const std::string& png, int width, int height, const std::string& what) {
  ASSERT_GT(png.size(), 33u) << what;
  EXPECT_EQ(png.substr(0, 8), kPngSignature) << what;
  EXPECT_EQ(be32(png, 8), 13u) << what;
  EXPECT_EQ(png.substr(12, 4), "IHDR") << what;
  EXPECT_EQ(be32(png, 16), static_cast<std::uint32_t>(width)) << what;
  EXPECT_EQ(be32(png, 20), static_cast<std::uint32_t>(height)) << what;
  EXPECT_EQ(png.substr(png.size() - 8, 4), "IEND") << what;
}

// Start tags and end tags pair up (a stack), ignoring declarations and comments; the root is
// <svg>. Returns an empty string when balanced, else what is wrong.
std::string balance_error(const std::string& xml) {
  std::vector<std::string> stack;
  bool root_seen = false;
  std::size_t i = 0;
  while ((i = xml.find('<', i)) != std::string::npos) {
    if (xml.compare(i, 4, "<!--") == 0) {
      i = xml.find("-->", i);
      if (i == std::string::npos) return "unterminated comment";
      continue;
    }
    const std::size_t end = xml.find('>', i);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(i);
    const std::string tag = xml.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '?' || tag[0] == '!') continue;
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (stack.empty() || stack.back() != name) return "unexpected </" + name + ">";
      stack.pop_back();
      continue;
    }
    const std::string name = tag.substr(0, tag.find_first_of(" \t\n/"));
    if (stack.empty()) {
      if (root_seen) return "second root element <" + name + ">";
      if (name != "svg") return "root element is <" + name + ">";
      root_seen = true;
    }
    if (tag.back() != '/') stack.push_back(name);
  }
  if (!root_seen) return "no root element";
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  return "";
}

std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&') {
      out += "&amp;";
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '"') {
      out += "&quot;";
    } else {
      out += c;
    }
  }
  return out;
}

std::string chart_title(const Chart& chart) {
  return std::visit([](const auto& c) { return c.title; }, chart);
}

// Axis titles (with units) as the SVG's <desc> names them; none for heatmaps.
std::vector<std::string> axis_texts(const Chart& chart) {
  return std::visit(
      [](const auto& c) -> std::vector<std::string> {
        using T = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<T, Heatmap>) {
          return {};
        } else if constexpr (std::is_same_v<T, Cdf>) {
          return {"x axis: " + axis_label(c.x), "y axis: " + c.y_title + " (%)"};
        } else {
          return {"x axis: " + axis_label(c.x), "y axis: " + axis_label(c.y)};
        }
      },
      chart);
}

void expect_svg(const std::string& svg, const Chart& chart, const std::string& what) {
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u) << what;
  const std::string inlined = inline_svg(svg, "t");
  EXPECT_EQ(inlined.rfind("<svg", 0), 0u) << what;
  EXPECT_EQ(balance_error(inlined), "") << what;
  EXPECT_NE(svg.find("<title>" + escaped(chart_title(chart)) + "</title>"), std::string::npos)
      << what;
  for (const std::string& text : axis_texts(chart)) {
    EXPECT_NE(svg.find(escaped(text)), std::string::npos) << what << ": " << text;
  }
}

// Decoded pixels of a PNG (cairo reads it back), for colour checks.
struct Pixels {
  int width = 0;
  int height = 0;
  std::vector<std::uint32_t> rgb;  // 0xRRGGBB

  explicit Pixels(const std::string& png) {
    struct Reader {
      const std::string* data;
      std::size_t at;
    } reader{&png, 0};
    const auto read = [](void* closure, unsigned char* out, unsigned int length) {
      auto* r = static_cast<Reader*>(closure);
      if (r->at + length > r->data->size()) return CAIRO_STATUS_READ_ERROR;
      std::memcpy(out, r->data->data() + r->at, length);
      r->at += length;
      return CAIRO_STATUS_SUCCESS;
    };
    cairo_surface_t* s = cairo_image_surface_create_from_png_stream(read, &reader);
    if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
      cairo_surface_destroy(s);
      throw std::runtime_error("PNG does not decode");
    }
    width = cairo_image_surface_get_width(s);
    height = cairo_image_surface_get_height(s);
    const int stride = cairo_image_surface_get_stride(s);
    const unsigned char* data = cairo_image_surface_get_data(s);
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) {
        std::uint32_t px = 0;
        std::memcpy(&px, data + y * stride + x * 4, 4);
        rgb.push_back(px & 0xFFFFFFu);
      }
    }
    cairo_surface_destroy(s);
  }

  // Grey pixels (r = g = b) in [lo, hi].
  std::size_t count_grey(std::uint32_t lo, std::uint32_t hi) const {
    std::size_t n = 0;
    for (std::uint32_t p : rgb) {
      const std::uint32_t r = p >> 16;
      const std::uint32_t g = (p >> 8) & 0xFFu;
      const std::uint32_t b = p & 0xFFu;
      n += (r == g && g == b && r >= lo && r <= hi) ? 1 : 0;
    }
    return n;
  }

  // Centres of the runs of columns holding colour `c` (runs more than 3 px apart), left to
  // right: where markers of one colour sit along x.
  std::vector<double> column_centres(Rgb c) const {
    const std::uint32_t want = packed(c);
    std::vector<int> columns;
    for (int x = 0; x < width; ++x) {
      for (int y = 0; y < height; ++y) {
        if (rgb[static_cast<std::size_t>(y) * static_cast<std::size_t>(width) +
                static_cast<std::size_t>(x)] == want) {
          columns.push_back(x);
          break;
        }
      }
    }
    std::vector<double> centres;
    std::size_t start = 0;
    for (std::size_t i = 1; i <= columns.size(); ++i) {
      if (i == columns.size() || columns[i] - columns[i - 1] > 3) {
        centres.push_back((columns[start] + columns[i - 1]) / 2.0);
        start = i;
      }
    }
    return centres;
  }

  static std::uint32_t packed(Rgb c) {
    const auto to8 = [](double v) { return static_cast<std::uint32_t>(v * 255.0 + 0.5); };
    return (to8(c.r) << 16) | (to8(c.g) << 8) | to8(c.b);
  }

  /// Pixels within one 8-bit step of `c` in every channel: cairo rounds a colour that falls
  /// between two steps its own way (a blended colour such as a faded marker's).
  std::size_t count_near(Rgb c) const {
    const auto to8 = [](double v) { return static_cast<int>(v * 255.0 + 0.5); };
    const int want[3] = {to8(c.r), to8(c.g), to8(c.b)};
    std::size_t n = 0;
    for (std::uint32_t p : rgb) {
      const int got[3] = {static_cast<int>(p >> 16), static_cast<int>((p >> 8) & 0xff),
                          static_cast<int>(p & 0xff)};
      bool near = true;
      for (int k = 0; k < 3; ++k) near = near && std::abs(got[k] - want[k]) <= 1;
      n += near ? 1 : 0;
    }
    return n;
  }

  std::size_t count(Rgb c) const {
    const auto to8 = [](double v) { return static_cast<std::uint32_t>(v * 255.0 + 0.5); };
    const std::uint32_t want = (to8(c.r) << 16) | (to8(c.g) << 8) | to8(c.b);
    std::size_t n = 0;
    for (std::uint32_t p : rgb) n += p == want ? 1 : 0;
    return n;
  }
};

TEST(Render, EveryGalleryChartAtItsDefaultSize) {
  auto charts = gallery::realistic();
  for (auto& c : gallery::degenerate()) charts.push_back(std::move(c));
  for (const auto& [name, chart] : charts) {
    const Size size = default_size(chart);
    EXPECT_GE(size.width, 640) << name;
    EXPECT_GE(size.height, 360) << name;
    expect_png(render(chart, Format::kPng), size.width, size.height, name);
    expect_svg(render(chart, Format::kSvg), chart, name);
  }
}

// The smallest and largest boards: 1 model × 1 cell and 10 models × 8 cells, every kind, at
// sizes from tiny to large; the PNG is exactly the size asked for.
TEST(Render, OneByOneToTenByEightAtRequestedSizes) {
  const std::vector<std::pair<std::string, Chart>> charts = {
      {"line 1x1", gallery::throughput(1, 1)},
      {"line 10x8", gallery::throughput(10, 8)},
      {"prefill 10x8", gallery::prefill(10, 8)},
      {"tradeoff 1x1", gallery::trade_off(1, 1)},
      {"tradeoff 10x8", gallery::trade_off(10, 8)},
      {"heatmap 1x1", gallery::delta_heatmap(1, 1)},
      {"heatmap 10x8", gallery::delta_heatmap(10, 8)},
      {"cdf 1 cell", gallery::latency_cdf(1, 50)},
      {"cdf 8 cells", gallery::latency_cdf(8, 200)},
      {"power 1 cell", gallery::power_timeline(1)},
      {"power 8 cells", gallery::power_timeline(8)},
  };
  const std::vector<Size> sizes = {{64, 64}, {320, 200}, {960, 600}, {1700, 1300}, {3000, 400}};
  for (const auto& [name, chart] : charts) {
    for (const Size& s : sizes) {
      const std::string what =
          name + " at " + std::to_string(s.width) + "x" + std::to_string(s.height);
      expect_png(render(chart, Format::kPng, s.width, s.height), s.width, s.height, what);
      const std::string svg = render(chart, Format::kSvg, s.width, s.height);
      EXPECT_NE(svg.find("width=\"" + std::to_string(s.width) + "px\""), std::string::npos) << what;
      EXPECT_EQ(balance_error(inline_svg(svg, "p")), "") << what;
    }
  }
}

TEST(Render, SmallMultiplesGrowTheCanvas) {
  const Size one = default_size(gallery::throughput(1, 9));
  const Size ten = default_size(gallery::throughput(10, 8));
  EXPECT_EQ(one.width, 960);
  EXPECT_EQ(one.height, 600);
  EXPECT_GT(ten.width, one.width);
  EXPECT_GT(ten.height, one.height);
  const Size rows10 = default_size(gallery::delta_heatmap(10, 8));
  const Size rows40 = default_size(gallery::delta_heatmap(40, 8));
  EXPECT_GT(rows40.height, rows10.height);
}

TEST(Render, SvgNamesTitleAxesAndSeries) {
  const std::string svg = render(gallery::throughput(2, 9), Format::kSvg);
  EXPECT_NE(svg.find("<title>Output throughput vs concurrency</title>"), std::string::npos);
  EXPECT_NE(svg.find("x axis: Concurrency (requests in flight)"), std::string::npos);
  EXPECT_NE(svg.find("y axis: Aggregate output (tok/s)"), std::string::npos);
  EXPECT_NE(svg.find("Series: A, B."), std::string::npos);
  EXPECT_NE(svg.find("Panels: Llama-3.1-8B-Instruct, Qwen2.5-7B-Instruct."), std::string::npos);
  const std::string heat = render(gallery::delta_heatmap(2, 3), Format::kSvg);
  EXPECT_NE(heat.find("Colour: Δ output tok/s (%)."), std::string::npos);
  EXPECT_NE(heat.find("Columns (Cell (concurrency)): c=1, c=2, c=4."), std::string::npos);
  Heatmap special;
  special.title = "a < b & \"c\"";
  EXPECT_NE(render(special, Format::kSvg).find("<title>a &lt; b &amp; &quot;c&quot;</title>"),
            std::string::npos);
}

TEST(Render, LogAxisSaysWhatItLeftOut) {
  const auto charts = gallery::degenerate();
  for (const auto& [name, chart] : charts) {
    if (name != "degenerate_cdf") continue;
    const std::string svg = render(chart, Format::kSvg);
    EXPECT_NE(svg.find("2 values at or below 0 not shown on the log axis."), std::string::npos);
  }
}

TEST(Render, IsDeterministic) {
  const auto charts = gallery::realistic();
  std::vector<std::string> first;
  for (const auto& [name, chart] : charts) {
    first.push_back(render(chart, Format::kSvg));
    first.push_back(render(chart, Format::kPng));
  }
  // Again, in reverse order, so no state carried from one render to the next can hide.
  for (std::size_t i = charts.size(); i-- > 0;) {
    EXPECT_EQ(render(charts[i].second, Format::kPng), first[2 * i + 1]) << charts[i].first;
    EXPECT_EQ(render(charts[i].second, Format::kSvg), first[2 * i]) << charts[i].first;
  }
}

// Each render owns its surface; cairo's process-wide counters must not leak into the bytes.
TEST(Render, ConcurrentRendersMatchSerialOnes) {
  const std::vector<Chart> charts = {gallery::throughput(3, 9), gallery::delta_heatmap(4, 4),
                                     gallery::latency_cdf(2, 300), gallery::power_timeline(1)};
  std::vector<std::string> serial;
  for (const Chart& c : charts) {
    serial.push_back(render(c, Format::kSvg, 800, 500));
    serial.push_back(render(c, Format::kPng, 800, 500));
  }
  std::vector<std::string> parallel(serial.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < charts.size(); ++i) {
    threads.emplace_back([&, i] {
      for (int round = 0; round < 3; ++round) {
        parallel[2 * i] = render(charts[i], Format::kSvg, 800, 500);
        parallel[2 * i + 1] = render(charts[i], Format::kPng, 800, 500);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (std::size_t i = 0; i < serial.size(); ++i) EXPECT_EQ(parallel[i], serial[i]) << i;
}

TEST(Render, LargeSamplesDoNotGrowTheSvg) {
  const std::string small = render(gallery::latency_cdf(1, 3000), Format::kSvg);
  const std::string large = render(gallery::latency_cdf(1, 100000), Format::kSvg);
  EXPECT_LT(large.size(), small.size() * 3 / 2);
}

TEST(Render, RejectsBadSizesAndMalformedHeatmaps) {
  const Chart line = gallery::throughput(1, 3);
  EXPECT_THROW(render(line, Format::kPng, 63, 600), std::invalid_argument);
  EXPECT_THROW(render(line, Format::kSvg, 960, 0), std::invalid_argument);
  EXPECT_THROW(render(line, Format::kPng, kMaxSide + 1, 600), std::invalid_argument);
  Heatmap h = gallery::delta_heatmap(3, 4);
  h.values[1].pop_back();
  try {
    render(h, Format::kPng);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("row 1 has 3 values for 4 column labels"),
              std::string::npos)
        << e.what();
  }
  h = gallery::delta_heatmap(3, 4);
  h.rows.pop_back();
  EXPECT_THROW(render(h, Format::kSvg), std::invalid_argument);
  h = gallery::delta_heatmap(3, 4);
  h.format.decimals = -1;
  EXPECT_THROW(render(h, Format::kSvg), std::invalid_argument);
  h = gallery::delta_heatmap(3, 4);
  h.cell_labels[2].push_back("tie");
  try {
    render(h, Format::kSvg);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("row 2 has 5 cell labels for 4 column labels"),
              std::string::npos)
        << e.what();
  }
  h = gallery::delta_heatmap(3, 4);
  h.cell_labels.pop_back();
  EXPECT_THROW(render(h, Format::kSvg), std::invalid_argument);
}

TEST(Render, HeatmapCellLabelsAreDrawnAtAnySize) {
  Heatmap h = gallery::delta_heatmap(3, 4);
  const Size size = default_size(h);
  const std::string with = render(h, Format::kPng);
  Heatmap without = h;
  without.cell_labels.clear();
  EXPECT_NE(with, render(without, Format::kPng));
  // Too small for two lines (one line or the value alone), and cramped: no failure.
  EXPECT_NO_THROW(render(h, Format::kPng, size.width, 200));
  EXPECT_NO_THROW(render(h, Format::kSvg, 200, 120));
  // No labels at all is the same as empty ones.
  Heatmap blank = h;
  for (auto& row : blank.cell_labels) {
    for (auto& l : row) l.clear();
  }
  EXPECT_EQ(render(blank, Format::kPng), render(without, Format::kPng));
}

LineChart single_series(const std::string& name, std::optional<std::size_t> style) {
  LineChart c;
  c.title = "t";
  c.x = Axis{.title = "x", .unit = "s"};
  c.y = Axis{.title = "y", .unit = "W"};
  c.panels.push_back({"", {{name, {{0, 0, {}}, {1, 1, {}}, {2, 4, {}}}, style}}, {}});
  return c;
}

// Four ladder depths, 0 included, each an isolated blue marker (one series per point, one
// legend entry: nothing else on the chart is blue).
LineChart depths_chart(Scale scale) {
  LineChart c;
  c.title = "Decode rate vs context depth";
  c.x = Axis{.title = "Context depth", .unit = "tokens", .scale = scale};
  c.y = Axis{.title = "Per-user decode, p50", .unit = "tok/s", .include_zero = true};
  Panel p;
  for (double depth : {0.0, 8000.0, 16000.0, 32000.0}) {
    p.series.push_back({"A", {{depth, 100.0 - depth / 1000.0, {}}}, 0});
  }
  c.panels.push_back(std::move(p));
  return c;
}

TEST(Render, OrdinalAxisSpacesLevelsEvenlyAndShowsZero) {
  const Rgb blue = series_style(0).line;
  const std::vector<double> ordinal =
      Pixels(render(depths_chart(Scale::kOrdinal), Format::kPng, 960, 600)).column_centres(blue);
  ASSERT_EQ(ordinal.size(), 4u);  // depth 0 drawn
  const double slot = ordinal[1] - ordinal[0];
  EXPECT_GT(slot, 150.0);
  for (std::size_t i = 1; i < ordinal.size(); ++i) {
    EXPECT_NEAR(ordinal[i] - ordinal[i - 1], slot, 1.5) << i;
  }
  // The same points on a linear axis: 16000 → 32000 twice as wide as 0 → 8000.
  const std::vector<double> linear =
      Pixels(render(depths_chart(Scale::kLinear), Format::kPng, 960, 600)).column_centres(blue);
  ASSERT_EQ(linear.size(), 4u);
  EXPECT_NEAR((linear[3] - linear[2]) / (linear[1] - linear[0]), 2.0, 0.05);
  // A log axis cannot: depth 0 is left out, and the note says so.
  const LineChart log = depths_chart(Scale::kLog2);
  EXPECT_EQ(Pixels(render(log, Format::kPng, 960, 600)).column_centres(blue).size(), 3u);
  EXPECT_NE(render(log, Format::kSvg).find("1 value at or below 0 not shown on the log axis."),
            std::string::npos);
  EXPECT_EQ(render(depths_chart(Scale::kOrdinal), Format::kSvg).find("not shown"),
            std::string::npos);
  // Shared across panels: a panel without one depth keeps the others in their slots.
  LineChart two = depths_chart(Scale::kOrdinal);
  two.panels.push_back(two.panels.front());
  two.panels[1].series.erase(two.panels[1].series.begin() + 1);  // no 8000
  const std::vector<double> both =
      Pixels(render(two, Format::kPng, 1600, 600)).column_centres(blue);
  ASSERT_EQ(both.size(), 7u);
  const double half = both[3] - both[2];            // first panel: slots 2, 3
  EXPECT_NEAR(both[6] - both[5], half, 1.5);        // second panel: 16000 → 32000
  EXPECT_NEAR(both[5] - both[4], 2.0 * half, 1.5);  // 0 → 16000: two slots, 8000's left empty
}

// Rows (or columns) holding at least `min` pixels of colour `c`: where a rule runs across.
std::size_t lines_of(const Pixels& px, Rgb c, bool horizontal, std::size_t min) {
  const auto to8 = [](double v) { return static_cast<std::uint32_t>(v * 255.0 + 0.5); };
  const std::uint32_t want = (to8(c.r) << 16) | (to8(c.g) << 8) | to8(c.b);
  const auto w = static_cast<std::size_t>(px.width);
  const auto h = static_cast<std::size_t>(px.height);
  std::size_t lines = 0;
  for (std::size_t i = 0; i < (horizontal ? h : w); ++i) {
    std::size_t n = 0;
    for (std::size_t j = 0; j < (horizontal ? w : h); ++j) {
      n += px.rgb[horizontal ? i * w + j : j * w + i] == want ? 1 : 0;
    }
    lines += n >= min ? 1 : 0;
  }
  return lines;
}

constexpr Rgb kRule{0.2, 0.2, 0.2};  // xy.cpp's rule colour

// Pixels of colour `c` laid over white with at least half its strength (antialiased edges of
// lines and markers included, grey and other colours not).
std::size_t count_blend(const Pixels& px, Rgb c) {
  const double want[3] = {c.r * 255.0, c.g * 255.0, c.b * 255.0};
  std::size_t strongest = 0;
  for (std::size_t k = 1; k < 3; ++k) {
    if (255.0 - want[k] > 255.0 - want[strongest]) strongest = k;
  }
  std::size_t n = 0;
  for (std::uint32_t p : px.rgb) {
    const double got[3] = {static_cast<double>(p >> 16), static_cast<double>((p >> 8) & 0xFFu),
                           static_cast<double>(p & 0xFFu)};
    const double alpha = (255.0 - got[strongest]) / (255.0 - want[strongest]);
    if (alpha < 0.5 || alpha > 1.05) continue;
    bool blend = true;
    for (std::size_t k = 0; k < 3; ++k) {
      blend = blend && std::abs(got[k] - (255.0 - alpha * (255.0 - want[k]))) <= 14.0;
    }
    n += blend ? 1 : 0;
  }
  return n;
}

// A series drawn as markers only has no line; error bars are drawn in its colour.
TEST(Render, UnjoinedSeriesAndErrorBars) {
  const Rgb green = series_style(2).line;
  const LineChart probes = gallery::limit_probes();
  const std::size_t scatter = count_blend(Pixels(render(probes, Format::kPng, 960, 600)), green);
  LineChart joined = probes;
  joined.panels[0].series[0].joined = true;
  EXPECT_GT(count_blend(Pixels(render(joined, Format::kPng, 960, 600)), green), scatter + 150);
  LineChart bare = probes;
  for (Point& pt : bare.panels[0].series[0].points) {
    pt.low.reset();
    pt.high.reset();
  }
  const std::size_t without_bars = count_blend(Pixels(render(bare, Format::kPng, 960, 600)), green);
  EXPECT_GT(scatter, without_bars + 40);  // short bars: 10 % around small values
  EXPECT_GT(without_bars, 100u);          // the markers are still there
  // A marker-only series has a marker, not a line, in the legend; legend_always shows one
  // entry: without it a single series gets no legend.
  LineChart one = bare;
  one.panels[0].series.resize(1);
  LineChart no_legend = one;
  no_legend.legend_always = false;
  EXPECT_GT(count_blend(Pixels(render(one, Format::kPng, 960, 600)), green),
            count_blend(Pixels(render(no_legend, Format::kPng, 960, 600)), green) + 20);
}

// A bar reaching far above its point widens the y range; its end a log axis cannot show is
// left out and counted in the note.
TEST(Render, ErrorBarsWidenTheRange) {
  const Rgb green = series_style(2).line;
  LineChart c;
  c.title = "t";
  c.x = Axis{.title = "x"};
  c.y = Axis{.title = "y", .unit = "ms"};
  c.panels.push_back({"", {{"A", {{1, 10}, {2, 11}, {3, 12}}, 2, false}}, {}});
  const std::size_t short_bars = count_blend(Pixels(render(c, Format::kPng, 960, 600)), green);
  c.panels[0].series[0].points[1].high = 1000.0;
  c.panels[0].series[0].points[1].low = 5.0;
  const Pixels tall(render(c, Format::kPng, 960, 600));
  EXPECT_GT(count_blend(tall, green), short_bars + 300);  // a bar over most of the plot's height
  c.y.scale = Scale::kLog10;
  c.panels[0].series[0].points[1].low = -1.0;
  EXPECT_NE(render(c, Format::kSvg).find("1 value at or below 0 not shown on the log axis."),
            std::string::npos);
}

// Rules: lines across the plot at a y and an x value the axes reach even far from the data,
// dashed or solid, their labels in the SVG's <desc>, and the chart's description after it.
TEST(Render, RulesAreDrawnWhereverTheyAre) {
  LineChart c;
  c.title = "t";
  c.x = Axis{.title = "Load", .unit = "users"};
  c.y = Axis{.title = "TTFT p90", .unit = "ms"};
  c.description = "Probes: 1 user: 10 ms, holds.";
  Panel p{"", {{"A", {{1, 10}, {2, 11}, {4, 12}}, 2, false}}, {}};
  const Pixels none(render(LineChart{c}, Format::kPng, 960, 600));
  EXPECT_EQ(lines_of(none, kRule, true, 400), 0u);
  p.y_rules.push_back({1000.0, "SLO 1000 ms", false});      // far above the data
  p.x_rules.push_back({40.0, "capacity 40 users", false});  // far right of it
  p.x_rules.push_back({30.0, "predicted 30 users", true});
  c.panels.push_back(p);
  const Pixels ruled(render(c, Format::kPng, 960, 600));
  EXPECT_GE(lines_of(ruled, kRule, true, 400), 1u);  // the limit, across the plot
  // The capacity solid from top to bottom; the prediction dashed, covering less.
  EXPECT_EQ(lines_of(ruled, kRule, false, 300), 1u);
  EXPECT_EQ(lines_of(ruled, kRule, false, 100), 2u);
  const std::string svg = render(c, Format::kSvg);
  EXPECT_NE(svg.find("Marked: SLO 1000 ms, capacity 40 users, predicted 30 users. "
                     "Probes: 1 user: 10 ms, holds.</desc>"),
            std::string::npos);
  EXPECT_EQ(shortened_texts(c, 960, 600), std::vector<std::string>{});
  // A rule outside a fixed range is not drawn; a tiny plot shortens a label, never fails.
  c.y.max = 100.0;
  EXPECT_EQ(lines_of(Pixels(render(c, Format::kPng, 960, 600)), kRule, true, 400), 0u);
  EXPECT_NO_THROW(render(c, Format::kPng, 64, 64));
  EXPECT_FALSE(shortened_texts(c, 120, 100).empty());
  // Without data the rules are drawn all the same.
  c.y.max.reset();
  c.panels[0].series.clear();
  EXPECT_GE(lines_of(Pixels(render(c, Format::kPng, 960, 600)), kRule, true, 400), 1u);
}

TEST(Palette, SeriesKeepTheirStyleAcrossCharts) {
  const Rgb blue = series_style(0).line;
  const Rgb orange = series_style(1).line;
  // Without a style, the first name of a chart is blue.
  const Pixels automatic(render(single_series("B", std::nullopt), Format::kPng, 400, 300));
  EXPECT_GT(automatic.count(blue), 50u);
  EXPECT_EQ(automatic.count(orange), 0u);
  // With style 1, arm B stays orange even alone.
  const Pixels fixed(render(single_series("B", 1), Format::kPng, 400, 300));
  EXPECT_GT(fixed.count(orange), 50u);
  EXPECT_EQ(fixed.count(blue), 0u);
}

TEST(Render, FrontierFadesDominatedPointsJoinsTheFrontierAndDescribesEveryPoint) {
  Frontier f;
  f.title = "Frontier";
  f.x = Axis{.title = "Per user", .unit = "tok/s"};
  f.y = Axis{.title = "Per GPU", .unit = "tok/s"};
  f.panels.push_back({"m",
                      {{"A",
                        {{10, 100, "c=1", true, "$1.00/Mtok"},
                         {20, 50, "c=4", true, ""},
                         {8, 40, "c=8", false, "$9.00/Mtok"}},
                        0}}});
  const Rgb blue = series_style(0).line;
  const Rgb faded{blue.r + (1 - blue.r) * 0.6, blue.g + (1 - blue.g) * 0.6,
                  blue.b + (1 - blue.b) * 0.6};
  const Rgb line{0.25, 0.25, 0.25};
  const Pixels px(render(f, Format::kPng, 960, 600));
  EXPECT_GT(px.count(blue), 30u);   // the points on the frontier
  EXPECT_GT(px.count_near(faded), 10u);  // the dominated one, faded
  EXPECT_GT(px.count(line), 100u);  // the frontier line between the two
  const std::string svg = render(f, Format::kSvg, 960, 600);
  EXPECT_NE(svg.find("m · A · c=1: x 10.0, y 100.0, on the frontier, $1.00/Mtok"),
            std::string::npos);
  EXPECT_NE(svg.find("m · A · c=4: x 20.0, y 50.0, on the frontier;"), std::string::npos);
  EXPECT_NE(svg.find("m · A · c=8: x 8.0, y 40.0, dominated, $9.00/Mtok"), std::string::npos);
  EXPECT_NE(svg.find("Pareto frontier"), std::string::npos);  // the line's legend name
  // Nothing dominated: nothing faded.
  f.panels[0].series[0].points[2].on_frontier = true;
  EXPECT_EQ(Pixels(render(f, Format::kPng, 960, 600)).count(faded), 0u);
}

TEST(Palette, HeatmapUsesBothEndsOfTheDivergingScale) {
  Heatmap h;
  h.title = "t";
  h.rows = {"m"};
  h.columns = {"lower", "higher", "missing", "zero"};
  h.values = {{-10.0, 10.0, std::nullopt, 0.0}};
  const Pixels px(render(h, Format::kPng, 960, 600));
  EXPECT_GT(px.count(diverging(-1.0)), 500u);
  EXPECT_GT(px.count(diverging(1.0)), 500u);
  EXPECT_GT(px.count(diverging(0.0)), 500u);
  // The missing cell is hatched grey: compare with the same grid where it has a value.
  h.values[0][2] = 0.0;
  const Pixels complete(render(h, Format::kPng, 960, 600));
  EXPECT_GT(px.count_grey(170, 240), complete.count_grey(170, 240) + 3000);
}

TEST(InlineSvg, PrefixesIdsAndReferences) {
  const std::string svg =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10px\">\n"
      "<defs><g><symbol id=\"glyph0-1\"><path d=\"M 0 0\"/></symbol></g>"
      "<clipPath id='clip1'><rect/></clipPath></defs>"
      "<use xlink:href=\"#glyph0-1\" x=\"1\"/><use href=\"#glyph0-1\"/>"
      "<g clip-path=\"url(#clip1)\" data-id=\"keep\" fill=\"url('#clip1')\"><rect/></g>"
      "<a href=\"https://example.org/#x\">link</a></svg>\n";
  const std::string out = inline_svg(svg, "chart3");
  EXPECT_EQ(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10px\">\n"
            "<defs><g><symbol id=\"chart3-glyph0-1\"><path d=\"M 0 0\"/></symbol></g>"
            "<clipPath id='chart3-clip1'><rect/></clipPath></defs>"
            "<use xlink:href=\"#chart3-glyph0-1\" x=\"1\"/><use href=\"#chart3-glyph0-1\"/>"
            "<g clip-path=\"url(#chart3-clip1)\" data-id=\"keep\" fill=\"url('#chart3-clip1')\">"
            "<rect/></g><a href=\"https://example.org/#x\">link</a></svg>\n");
}

std::set<std::string> ids_of(const std::string& svg) {
  std::set<std::string> ids;
  const std::regex id_re("\\sid=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), id_re); it != std::sregex_iterator();
       ++it) {
    ids.insert((*it)[1].str());
  }
  return ids;
}

TEST(InlineSvg, ChartsOnOnePageShareNoIds) {
  const std::string a = inline_svg(render(gallery::throughput(2, 9), Format::kSvg), "a");
  const std::string b = inline_svg(render(gallery::delta_heatmap(3, 4), Format::kSvg), "b");
  const std::set<std::string> ids_a = ids_of(a);
  const std::set<std::string> ids_b = ids_of(b);
  ASSERT_FALSE(ids_a.empty());
  ASSERT_FALSE(ids_b.empty());
  for (const std::string& id : ids_a) {
    EXPECT_EQ(id.rfind("a-", 0), 0u) << id;
    EXPECT_EQ(ids_b.count(id), 0u) << id;
  }
  // Every reference points at an id of the same chart.
  const std::regex ref_re("(?:href=\"#|url\\(#)([^\")]*)");
  std::size_t refs = 0;
  for (const std::string* s : {&a, &b}) {
    const std::set<std::string>& ids = s == &a ? ids_a : ids_b;
    for (auto it = std::sregex_iterator(s->begin(), s->end(), ref_re); it != std::sregex_iterator();
         ++it) {
      ++refs;
      EXPECT_EQ(ids.count((*it)[1].str()), 1u) << (*it)[1].str();
    }
  }
  EXPECT_GT(refs, 10u);
  EXPECT_EQ(a.find("<?xml"), std::string::npos);
}

TEST(InlineSvg, RejectsBadPrefixesAndInputs) {
  const std::string svg = render(gallery::throughput(1, 2), Format::kSvg);
  EXPECT_THROW(inline_svg(svg, ""), std::invalid_argument);
  EXPECT_THROW(inline_svg(svg, "1chart"), std::invalid_argument);
  EXPECT_THROW(inline_svg(svg, "a b"), std::invalid_argument);
  EXPECT_THROW(inline_svg(svg, "a\"b"), std::invalid_argument);
  EXPECT_NO_THROW(inline_svg(svg, "Chart_1-x"));
  EXPECT_THROW(inline_svg("<html></html>", "a"), std::invalid_argument);
  EXPECT_THROW(inline_svg("<?xml version=\"1.0\"", "a"), std::invalid_argument);
  EXPECT_EQ(inline_svg("  <svg/>", "a"), "<svg/>");
}

}  // namespace
}  // namespace dyno::chart
