#include <cairo-svg.h>
#include <cairo.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include "chart/chart.h"
#include "chart/draw.h"
#include "chart/scale.h"

namespace dyno::chart {

namespace {

struct SurfaceDeleter {
  void operator()(cairo_surface_t* s) const { cairo_surface_destroy(s); }
};
struct ContextDeleter {
  void operator()(cairo_t* cr) const { cairo_destroy(cr); }
};
using SurfacePtr = std::unique_ptr<cairo_surface_t, SurfaceDeleter>;
using ContextPtr = std::unique_ptr<cairo_t, ContextDeleter>;

cairo_status_t append(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

void check(cairo_status_t status, const char* what) {
  if (status != CAIRO_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("chart: ") + what + ": " + cairo_status_to_string(status));
  }
}

template <typename... F>
struct Overloaded : F... {
  using F::operator()...;
};

/// Draws the chart; returns the texts that had to be shortened to fit.
std::vector<std::string> draw(cairo_t* cr, const Chart& chart, int width, int height) {
  Canvas canvas(cr);
  const double w = width;
  const double h = height;
  std::visit(Overloaded{
                 [&](const Heatmap& c) { detail::draw_heatmap(canvas, c, w, h); },
                 [&](const auto& c) { detail::draw_xy(canvas, detail::to_figure(c), w, h); },
             },
             chart);
  return canvas.shortened();
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) {
    if (s.empty()) continue;
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out;
}

// The words of an x/y chart: subtitle, axes, series, panels, notes.
std::pair<std::string, std::string> describe_xy(const detail::XyFigure& f) {
  std::string d = f.subtitle.empty() ? "" : f.subtitle + ". ";
  d += "x axis: " + axis_label(f.x) + ". y axis: " + axis_label(f.y) + ".";
  std::vector<std::string> names;
  std::vector<std::string> panels;
  for (const Panel& p : f.panels) {
    panels.push_back(p.title);
    for (const Series& s : p.series) {
      if (std::find(names.begin(), names.end(), s.name) == names.end()) {
        names.push_back(s.name);
      }
    }
  }
  if (!names.empty()) d += " Series: " + join(names) + ".";
  if (f.panels.size() > 1) d += " Panels: " + join(panels) + ".";
  // The rules' labels: what the lines across the plot mark.
  std::vector<std::string> marked;
  for (const Panel& p : f.panels) {
    for (const auto* rules : {&p.y_rules, &p.x_rules}) {
      for (const Rule& r : *rules) {
        if (std::find(marked.begin(), marked.end(), r.label) == marked.end()) {
          marked.push_back(r.label);
        }
      }
    }
  }
  if (!join(marked).empty()) d += " Marked: " + join(marked) + ".";
  for (const std::string& n : f.notes) d += " " + n;
  if (!f.description.empty()) d += " " + f.description;
  return std::pair{f.title, d};
}

/// A coordinate in the description: plain ASCII, one decimal.
std::string plain_number(double v) {
  if (!std::isfinite(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// The words a screen reader (and a text search) finds in the SVG: cairo writes glyphs as
// outlines, so the chart's text is otherwise only pictures.
std::pair<std::string, std::string> describe(const Chart& chart) {
  return std::visit(
      Overloaded{
          [](const Heatmap& h) {
            std::string d = h.subtitle.empty() ? "" : h.subtitle + ". ";
            d += "Heatmap. Rows" + (h.row_title.empty() ? "" : " (" + h.row_title + ")") + ": " +
                 join(h.rows) + ". Columns" +
                 (h.column_title.empty() ? "" : " (" + h.column_title + ")") + ": " +
                 join(h.columns) + ".";
            if (!h.scale_title.empty()) d += " Colour: " + h.scale_title + ".";
            // Every cell's value and label, so a reader without the picture
            // (and a test) has what the colours say.
            std::vector<std::string> cells;
            for (std::size_t r = 0; r < h.values.size(); ++r) {
              for (std::size_t k = 0; k < h.values[r].size(); ++k) {
                const std::optional<double>& v = h.values[r][k];
                std::string cell =
                    h.rows[r] + " × " + h.columns[k] + ": " +
                    (v && std::isfinite(*v) ? format_value(*v, h.format) : std::string("n/a"));
                if (!h.cell_labels.empty() && !h.cell_labels[r][k].empty()) {
                  cell += " " + h.cell_labels[r][k];
                }
                cells.push_back(std::move(cell));
              }
            }
            if (!cells.empty()) {
              std::string list;
              for (const std::string& c : cells) list += (list.empty() ? "" : "; ") + c;
              d += " Cells: " + list + ".";
            }
            if (!h.note.empty()) d += " " + h.note;
            return std::pair{h.title, d};
          },
          [](const Frontier& c) {
            // What the markers say, point by point: a reader without the picture (and a
            // test) has every point's figures and whether it is on the frontier.
            auto [title, d] = describe_xy(detail::to_figure(c));
            std::vector<std::string> points;
            for (const FrontierPanel& p : c.panels) {
              for (const FrontierSeries& s : p.series) {
                for (const FrontierPoint& pt : s.points) {
                  std::string where = p.title.empty() ? s.name : p.title + " · " + s.name;
                  if (!pt.label.empty()) where += " · " + pt.label;
                  std::string item = where + ": x " + plain_number(pt.x) + ", y " +
                                     plain_number(pt.y) + ", " +
                                     (pt.on_frontier ? "on the frontier" : "dominated");
                  if (!pt.detail.empty()) item += ", " + pt.detail;
                  points.push_back(std::move(item));
                }
              }
            }
            if (!points.empty()) {
              std::string list;
              for (const std::string& x : points) list += (list.empty() ? "" : "; ") + x;
              d += " Points: " + list + ".";
            }
            return std::pair{title, d};
          },
          [](const auto& c) { return describe_xy(detail::to_figure(c)); },
      },
      chart);
}

// cairo names some SVG elements after process-wide counters (`surface66` for the root group
// of the 66th surface created), so the same chart would differ between renders. Such ids are
// renumbered 1, 2, … in order of first appearance, in ids and references alike.
std::string canonical_ids(const std::string& svg) {
  std::string out;
  out.reserve(svg.size());
  std::vector<std::pair<std::string, std::string>> seen;  // old name, new name
  std::size_t counter = 0;
  std::size_t i = 0;
  while (i < svg.size()) {
    bool replaced = false;
    if (i > 0 && (svg[i - 1] == '"' || svg[i - 1] == '#')) {
      for (std::string_view kind : {std::string_view("surface"), std::string_view("image")}) {
        if (svg.compare(i, kind.size(), kind) != 0) continue;
        std::size_t end = i + kind.size();
        while (end < svg.size() && svg[end] >= '0' && svg[end] <= '9') ++end;
        if (end == i + kind.size() || end >= svg.size() || (svg[end] != '"' && svg[end] != ')')) {
          continue;
        }
        const std::string name = svg.substr(i, end - i);
        auto it = std::find_if(seen.begin(), seen.end(),
                               [&name](const auto& e) { return e.first == name; });
        if (it == seen.end()) {
          seen.emplace_back(name, std::string(kind) + std::to_string(++counter));
          it = seen.end() - 1;
        }
        out += it->second;
        i = end;
        replaced = true;
        break;
      }
    }
    if (!replaced) out.push_back(svg[i++]);
  }
  return out;
}

// cairo writes coordinates with six decimals; two (1/100 px) look the same and make the SVG
// about a third smaller. Only numbers with three or more decimals are touched.
std::string shorten_numbers(const std::string& svg) {
  std::string out;
  out.reserve(svg.size());
  std::size_t i = 0;
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < svg.size()) {
    const bool starts =
        digit(svg[i]) && (i == 0 || (!digit(svg[i - 1]) && svg[i - 1] != '.' &&
                                     !std::isalpha(static_cast<unsigned char>(svg[i - 1]))));
    if (!starts) {
      out.push_back(svg[i++]);
      continue;
    }
    std::size_t end = i;
    while (end < svg.size() && digit(svg[end])) ++end;
    std::size_t decimals = 0;
    if (end < svg.size() && svg[end] == '.') {
      std::size_t d = end + 1;
      while (d < svg.size() && digit(svg[d])) ++d;
      decimals = d - end - 1;
      end = d;
    }
    if (decimals < 3) {
      out.append(svg, i, end - i);
      i = end;
      continue;
    }
    const bool negative = !out.empty() && out.back() == '-';
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.2f", std::strtod(svg.substr(i, end - i).c_str(), nullptr));
    std::string n(buf);
    while (n.back() == '0') n.pop_back();
    if (n.back() == '.') n.pop_back();
    if (n == "0" && negative) out.pop_back();  // "-0.001" becomes "0", not "-0"
    out += n;
    i = end;
  }
  return out;
}

// Puts <title> and <desc> first inside the root <svg> element.
void add_description(std::string& svg, const Chart& chart) {
  const std::size_t open = svg.find("<svg");
  if (open == std::string::npos) return;
  const std::size_t end = svg.find('>', open);
  if (end == std::string::npos) return;
  const auto [title, desc] = describe(chart);
  svg.insert(end + 1, "\n<title>" + markup_escape(title) + "</title>\n<desc>" +
                          markup_escape(desc) + "</desc>");
}

std::string render_svg(const Chart& chart, int width, int height) {
  std::string out;
  SurfacePtr surface(cairo_svg_surface_create_for_stream(append, &out, static_cast<double>(width),
                                                         static_cast<double>(height)));
  check(cairo_surface_status(surface.get()), "creating the SVG surface");
  cairo_svg_surface_restrict_to_version(surface.get(), CAIRO_SVG_VERSION_1_1);
  cairo_svg_surface_set_document_unit(surface.get(), CAIRO_SVG_UNIT_PX);
  {
    ContextPtr cr(cairo_create(surface.get()));
    draw(cr.get(), chart, width, height);
    check(cairo_status(cr.get()), "drawing the SVG");
  }
  cairo_surface_finish(surface.get());
  check(cairo_surface_status(surface.get()), "writing the SVG");
  out = shorten_numbers(canonical_ids(out));
  add_description(out, chart);
  return out;
}

std::string render_png(const Chart& chart, int width, int height) {
  SurfacePtr surface(cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height));
  check(cairo_surface_status(surface.get()), "creating the image surface");
  {
    ContextPtr cr(cairo_create(surface.get()));
    draw(cr.get(), chart, width, height);
    check(cairo_status(cr.get()), "drawing the PNG");
  }
  cairo_surface_flush(surface.get());
  std::string out;
  check(cairo_surface_write_to_png_stream(surface.get(), append, &out), "writing the PNG");
  return out;
}

std::size_t panel_count(const Chart& chart) {
  return std::visit(Overloaded{
                        [](const Heatmap&) { return std::size_t{1}; },
                        [](const auto& c) { return c.panels.size(); },
                    },
                    chart);
}

}  // namespace

std::string markup_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

Size default_size(const Chart& chart) {
  if (const auto* h = std::get_if<Heatmap>(&chart)) return detail::heatmap_default_size(*h);
  Grid grid;
  std::visit(Overloaded{
                 [](const Heatmap&) {},
                 [&grid](const auto& c) { grid = c.grid; },
             },
             chart);
  const std::size_t n = panel_count(chart);
  if (n <= 1) return {960, 600};
  const auto [cols, rows] = detail::grid_shape(n, grid);
  const int width = std::max(960, 60 + static_cast<int>(cols) * 400);
  const int height = std::max(520, 150 + static_cast<int>(rows) * 320);
  return {width, height};
}

/// What render() and shortened_texts() refuse: a size out of range, a malformed heatmap.
static void check_drawable(const Chart& chart, int width, int height) {
  if (width < 64 || height < 64 || width > kMaxSide || height > kMaxSide) {
    throw std::invalid_argument("chart size " + std::to_string(width) + "x" +
                                std::to_string(height) + " is outside 64.." +
                                std::to_string(kMaxSide) + " px per side");
  }
  if (const auto* h = std::get_if<Heatmap>(&chart)) detail::check_heatmap(*h);
}

std::string render(const Chart& chart, Format format, int width, int height) {
  check_drawable(chart, width, height);
  return format == Format::kSvg ? render_svg(chart, width, height)
                                : render_png(chart, width, height);
}

std::vector<std::string> shortened_texts(const Chart& chart, int width, int height) {
  check_drawable(chart, width, height);
  SurfacePtr surface(cairo_recording_surface_create(CAIRO_CONTENT_COLOR, nullptr));
  check(cairo_surface_status(surface.get()), "creating the recording surface");
  ContextPtr cr(cairo_create(surface.get()));
  return draw(cr.get(), chart, width, height);
}

std::string render(const Chart& chart, Format format) {
  const Size size = default_size(chart);
  return render(chart, format, size.width, size.height);
}

}  // namespace dyno::chart
