// One tabular model of a board's human-readable report, rendered three ways: Markdown
// (README.md), HTML (report.html) and plain text (the console of `dyno compare`). Text in a
// Document is raw; each renderer escapes it for its format.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report/figure.h"

namespace dyno::report {

struct Span {
  std::string text;
  bool bold = false;
  bool code = false;  ///< hashes, ids, flags
};
using Inline = std::vector<Span>;

struct TableCell {
  Inline content;
  std::optional<double> sort_key;  ///< numeric sort in report.html (else by text)
};

struct Table {
  std::vector<std::string> header;
  std::vector<bool> numeric;  ///< right-aligned columns
  std::vector<std::vector<TableCell>> rows;
};

struct Block {
  enum class Kind { kParagraph, kStatus, kBullets, kNumbered, kTable, kFigure };
  Kind kind = Kind::kParagraph;
  Inline text;                ///< kParagraph, kStatus
  std::vector<Inline> items;  ///< kBullets, kNumbered
  Table table;                ///< kTable
  std::size_t figure = 0;     ///< kFigure: index into the figures
};

struct Section {
  std::string title;
  int level = 2;  ///< 2 = "##", 3 = "###"
  std::vector<Block> blocks;
};

struct Document {
  std::string title;
  std::vector<Block> intro;
  std::vector<Section> sections;
};

/// README.md. Figures are referenced as <stem>.png next to it.
std::string to_markdown(const Document& doc, const std::vector<Figure>& figures);
/// report.html: one self-contained file (inline CSS, a small script that sorts tables, SVG
/// figures inline, no network). Every text is escaped.
std::string to_html(const Document& doc, const std::vector<Figure>& figures);
/// Plain text for a terminal: tables with aligned columns, figures omitted.
std::string to_text(const Document& doc);

}  // namespace dyno::report
