#include <stdexcept>
#include <string>

#include "chart/chart.h"

namespace dyno::chart {

namespace {

bool valid_prefix(std::string_view p) {
  if (p.empty()) return false;
  const auto alpha = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); };
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (!alpha(p.front())) return false;
  for (char c : p) {
    if (!alpha(c) && !digit(c) && c != '-' && c != '_') return false;
  }
  return true;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

// One pass over the text: at each position, an id attribute (after whitespace, so "data-id"
// is left alone), a fragment reference in an href, or a url(#…) gets the prefix inserted.
std::string inline_svg(std::string_view svg, std::string_view id_prefix) {
  if (!valid_prefix(id_prefix)) {
    throw std::invalid_argument("inline_svg: id prefix \"" + std::string(id_prefix) +
                                "\" must match [A-Za-z][A-Za-z0-9_-]*");
  }
  std::size_t start = 0;
  while (start < svg.size() && is_space(svg[start])) ++start;
  if (svg.substr(start, 5) == "<?xml") {
    const std::size_t end = svg.find("?>", start);
    if (end == std::string_view::npos) {
      throw std::invalid_argument("inline_svg: unterminated XML declaration");
    }
    start = end + 2;
    while (start < svg.size() && is_space(svg[start])) ++start;
  }
  svg.remove_prefix(start);
  if (svg.substr(0, 4) != "<svg") {
    throw std::invalid_argument("inline_svg: input does not start with an <svg> element");
  }

  const std::string insert = std::string(id_prefix) + "-";
  static constexpr std::string_view kPatterns[] = {
      "id=\"", "id='", "href=\"#", "href='#", "url(#", "url('#", "url(\"#",
  };
  std::string out;
  out.reserve(svg.size() + svg.size() / 8);
  std::size_t i = 0;
  while (i < svg.size()) {
    bool matched = false;
    for (std::string_view pat : kPatterns) {
      if (svg.compare(i, pat.size(), pat) != 0) continue;
      if (pat.front() == 'i' && (i == 0 || !is_space(svg[i - 1]))) continue;
      out.append(pat);
      out.append(insert);
      i += pat.size();
      matched = true;
      break;
    }
    if (!matched) out.push_back(svg[i++]);
  }
  return out;
}

}  // namespace dyno::chart
