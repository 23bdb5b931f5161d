// dyno_chart_gallery DIR: writes every gallery chart (tests/chart/gallery.h) as DIR/<name>.svg
// and DIR/<name>.png at its default size, and DIR/index.html with all SVGs inlined into one
// page (inline_svg), so a person can look at the charts and check that ids do not collide.
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "chart/chart.h"
#include "gallery.h"

namespace {

void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: dyno_chart_gallery DIR\n";
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    auto charts = dyno::chart::gallery::realistic();
    for (auto& entry : dyno::chart::gallery::degenerate()) charts.push_back(std::move(entry));
    std::string html =
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>dyno chart gallery</title>"
        "<style>body{font-family:sans-serif;max-width:1300px;margin:2em auto}"
        "svg{max-width:100%;height:auto;border:1px solid #ddd}</style></head><body>\n";
    for (const auto& [name, chart] : charts) {
      const dyno::chart::Size size = dyno::chart::default_size(chart);
      const std::string svg = dyno::chart::render(chart, dyno::chart::Format::kSvg);
      write_file(dir / (name + ".svg"), svg);
      write_file(dir / (name + ".png"), dyno::chart::render(chart, dyno::chart::Format::kPng));
      html += "<h2>" + name + "</h2>\n" + dyno::chart::inline_svg(svg, "c-" + name) + "\n";
      std::cout << name << " " << size.width << "x" << size.height << "\n";
    }
    html += "</body></html>\n";
    write_file(dir / "index.html", html);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
