// Small builders of Document pieces (spans, paragraphs, lists, tables), shared by the board's
// document (board_document.cpp) and its methodology section (board_methodology.cpp). Internal
// to dyno_report.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "report/document.h"

namespace dyno::report::blocks {

inline Span t(std::string s) { return {std::move(s), false, false}; }
inline Span b(std::string s) { return {std::move(s), true, false}; }
inline Span c(std::string s) { return {std::move(s), false, true}; }

inline TableCell cell_text(std::string s, std::optional<double> sort = std::nullopt) {
  return {{t(std::move(s))}, sort};
}

inline Block paragraph(Inline text) {
  Block bl;
  bl.kind = Block::Kind::kParagraph;
  bl.text = std::move(text);
  return bl;
}

inline Block bullets(std::vector<Inline> items, bool numbered = false) {
  Block bl;
  bl.kind = numbered ? Block::Kind::kNumbered : Block::Kind::kBullets;
  bl.items = std::move(items);
  return bl;
}

inline Block table_block(Table tb) {
  Block bl;
  bl.kind = Block::Kind::kTable;
  bl.table = std::move(tb);
  return bl;
}

inline std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

}  // namespace dyno::report::blocks
