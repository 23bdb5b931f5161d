#include "report/document.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <stdexcept>

#include "chart/chart.h"
#include "report/format.h"

namespace dyno::report {

namespace {

/// An SVG document without its XML prolog, doctype and comments before the root element.
std::string strip_prolog(const std::string& svg) {
  std::size_t start = 0;
  while (true) {
    const auto open = svg.find('<', start);
    if (open == std::string::npos) return svg;
    if (svg.compare(open, 2, "<?") == 0 || svg.compare(open, 2, "<!") == 0) {
      const auto close = svg.find('>', open);
      if (close == std::string::npos) return svg;
      start = close + 1;
      continue;
    }
    return svg.substr(open);
  }
}

}  // namespace

void validate_figures(const std::vector<Figure>& figures) {
  static const std::set<std::string> reserved = {"README", "readme",     "board",
                                                 "report", "SHA256SUMS", "sha256sums"};
  std::set<std::string> stems;
  for (const auto& f : figures) {
    const bool ok_chars = !f.stem.empty() && std::all_of(f.stem.begin(), f.stem.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    });
    if (!ok_chars) throw std::invalid_argument("figure stem '" + f.stem + "' is not [a-z0-9-]+");
    if (reserved.count(f.stem) != 0) {
      throw std::invalid_argument("figure stem '" + f.stem + "' is reserved");
    }
    if (!stems.insert(f.stem).second) {
      throw std::invalid_argument("figure stem '" + f.stem + "' is used twice");
    }
    if (f.svg.empty() || f.png.empty()) {
      throw std::invalid_argument("figure '" + f.stem + "' lacks its SVG or PNG bytes");
    }
    if (!strip_prolog(f.svg).starts_with("<svg")) {
      throw std::invalid_argument("figure '" + f.stem +
                                  "': its SVG does not start with an <svg> element");
    }
    std::string lower = f.svg;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (const char* bad : {"<script", "javascript:", "<foreignobject", "<iframe"}) {
      if (lower.find(bad) != std::string::npos) {
        throw std::invalid_argument("figure '" + f.stem + "': its SVG holds '" + std::string(bad) +
                                    "', which report.html does not inline");
      }
    }
  }
}

namespace {

// ---- Markdown --------------------------------------------------------------------------

std::string md_inline(const Inline& in) {
  std::string out;
  for (const auto& s : in) {
    std::string t;
    if (s.code) {
      std::string raw = s.text;
      std::erase(raw, '`');
      for (char& c : raw) {
        if (c == '\n' || c == '\r') c = ' ';
      }
      t = "`" + raw + "`";
    } else {
      t = markdown_escape(s.text);
    }
    if (!s.bold || t.empty()) {
      out += t;
      continue;
    }
    // Emphasis must not start or end with a space ("** x**" is not bold in Markdown).
    const auto first = t.find_first_not_of(' ');
    if (first == std::string::npos) {
      out += t;
      continue;
    }
    const auto last = t.find_last_not_of(' ');
    out +=
        t.substr(0, first) + "**" + t.substr(first, last - first + 1) + "**" + t.substr(last + 1);
  }
  return out;
}

void md_table(std::string& out, const Table& t) {
  out += "|";
  for (const auto& h : t.header) out += " " + markdown_escape(h) + " |";
  out += "\n|";
  for (std::size_t i = 0; i < t.header.size(); ++i) {
    out += i < t.numeric.size() && t.numeric[i] ? "---:|" : "---|";
  }
  out += "\n";
  for (const auto& row : t.rows) {
    out += "|";
    for (const auto& cell : row) out += " " + md_inline(cell.content) + " |";
    out += "\n";
  }
}

void md_block(std::string& out, const Block& b, const std::vector<Figure>& figures) {
  switch (b.kind) {
    case Block::Kind::kParagraph:
      out += md_inline(b.text) + "\n";
      break;
    case Block::Kind::kStatus:
      out += "> " + md_inline(b.text) + "\n";
      break;
    case Block::Kind::kBullets:
      for (const auto& item : b.items) out += "- " + md_inline(item) + "\n";
      break;
    case Block::Kind::kNumbered:
      for (std::size_t i = 0; i < b.items.size(); ++i) {
        out += std::to_string(i + 1) + ". " + md_inline(b.items[i]) + "\n";
      }
      break;
    case Block::Kind::kTable:
      md_table(out, b.table);
      break;
    case Block::Kind::kFigure: {
      const Figure& f = figures.at(b.figure);
      out += "![" + markdown_escape(f.title) + "](" + f.stem + ".png)\n";
      if (!f.caption.empty()) out += "\n" + markdown_escape(f.caption) + "\n";
      break;
    }
  }
}

// ---- HTML ------------------------------------------------------------------------------

std::string html_inline(const Inline& in) {
  std::string out;
  for (const auto& s : in) {
    std::string t = chart::markup_escape(s.text);
    if (s.code) t = "<code>" + t + "</code>";
    if (s.bold) t = "<strong>" + t + "</strong>";
    out += t;
  }
  return out;
}

std::string plain(const Inline& in) {
  std::string out;
  for (const auto& s : in) out += s.text;
  return out;
}

/// A figure's SVG to sit inside report.html next to the other charts: without its prolog,
/// every id and reference to one prefixed with "svg-<stem>-" (cairo names ids alike in every
/// file, glyph0-1, clip1, …: unprefixed, the charts of one page would take each other's glyphs).
std::string inline_svg(const Figure& f) {
  return chart::inline_svg(strip_prolog(f.svg), "svg-" + f.stem);
}

std::string anchor(const std::string& title) {
  std::string a;
  for (char c : title) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      a += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!a.empty() && a.back() != '-') {
      a += '-';
    }
  }
  while (!a.empty() && a.back() == '-') a.pop_back();
  return a.empty() ? "section" : a;
}

void html_block(std::string& out, const Block& b, const std::vector<Figure>& figures) {
  switch (b.kind) {
    case Block::Kind::kParagraph:
      out += "<p>" + html_inline(b.text) + "</p>\n";
      break;
    case Block::Kind::kStatus:
      out += "<p class=\"status\">" + html_inline(b.text) + "</p>\n";
      break;
    case Block::Kind::kBullets:
    case Block::Kind::kNumbered: {
      const char* tag = b.kind == Block::Kind::kBullets ? "ul" : "ol";
      out += std::string("<") + tag + ">\n";
      for (const auto& item : b.items) out += "<li>" + html_inline(item) + "</li>\n";
      out += std::string("</") + tag + ">\n";
      break;
    }
    case Block::Kind::kTable: {
      const Table& t = b.table;
      out += "<div class=\"scroll\"><table class=\"sortable\">\n<thead><tr>";
      for (std::size_t i = 0; i < t.header.size(); ++i) {
        const bool num = i < t.numeric.size() && t.numeric[i];
        out += std::string("<th") + (num ? " class=\"num\"" : "") + " title=\"click to sort\">" +
               chart::markup_escape(t.header[i]) + "</th>";
      }
      out += "</tr></thead>\n<tbody>\n";
      for (const auto& row : t.rows) {
        out += "<tr>";
        for (std::size_t i = 0; i < row.size(); ++i) {
          const bool num = i < t.numeric.size() && t.numeric[i];
          out += "<td";
          if (num) out += " class=\"num\"";
          if (row[i].sort_key) {
            char buf[64];
            std::snprintf(buf, sizeof buf, "%.17g", *row[i].sort_key);
            out += std::string(" data-sort=\"") + buf + "\"";
          }
          out += ">" + html_inline(row[i].content) + "</td>";
        }
        out += "</tr>\n";
      }
      out += "</tbody>\n</table></div>\n";
      break;
    }
    case Block::Kind::kFigure: {
      const Figure& f = figures.at(b.figure);
      out += "<figure id=\"fig-" + f.stem + "\">\n<div class=\"chart\">" + inline_svg(f) +
             "</div>\n<figcaption>" + chart::markup_escape(f.title);
      if (!f.caption.empty()) out += " — " + chart::markup_escape(f.caption);
      out += "</figcaption>\n</figure>\n";
      break;
    }
  }
}

constexpr const char* kCss =
    R"(body{font:15px/1.45 -apple-system,"Segoe UI","DejaVu Sans",sans-serif;color:#1f2933;margin:0;background:#fff}
main{max-width:1280px;margin:0 auto;padding:24px 32px 64px}
h1{font-size:26px;margin:8px 0 16px}h2{font-size:20px;margin:32px 0 8px;border-bottom:1px solid #d7dde2;padding-bottom:4px}h3{font-size:16px;margin:20px 0 6px}
nav{font-size:13px;margin:0 0 16px}nav a{margin-right:12px;color:#007c83;text-decoration:none}
p.status{background:#f3f6f8;border-left:4px solid #007c83;padding:8px 12px}
.scroll{overflow-x:auto;margin:8px 0 16px}
table{border-collapse:collapse;font-size:13px;white-space:nowrap}
th,td{border:1px solid #d7dde2;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f3f6f8;cursor:pointer;user-select:none}th.asc::after{content:" \25B2"}th.desc::after{content:" \25BC"}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tbody tr:nth-child(even){background:#fafbfc}
code{font:12px/1.3 "DejaVu Sans Mono",monospace;background:#f3f6f8;padding:0 3px}
figure{margin:12px 0 20px}.chart svg{max-width:100%;height:auto}figcaption{font-size:13px;color:#52606d})";

// Sorts a table by the clicked column: numerically by data-sort when every cell has one,
// else by text. No network, no libraries.
constexpr const char* kScript = R"((function(){
document.querySelectorAll("table.sortable").forEach(function(t){
  var hs=t.tHead.rows[0].cells;
  Array.prototype.forEach.call(hs,function(h,i){
    h.addEventListener("click",function(){
      var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows);
      var asc=!h.classList.contains("asc");
      Array.prototype.forEach.call(hs,function(x){x.classList.remove("asc","desc");});
      h.classList.add(asc?"asc":"desc");
      var num=rows.every(function(r){return r.cells[i]&&r.cells[i].hasAttribute("data-sort");});
      rows.sort(function(x,y){
        var a,c;
        if(num){a=parseFloat(x.cells[i].getAttribute("data-sort"));c=parseFloat(y.cells[i].getAttribute("data-sort"));}
        else{a=x.cells[i]?x.cells[i].textContent:"";c=y.cells[i]?y.cells[i].textContent:"";}
        var r=a<c?-1:a>c?1:0;return asc?r:-r;});
      rows.forEach(function(r){b.appendChild(r);});
    });
  });
});
})();)";

// ---- Text ------------------------------------------------------------------------------

/// Display width of UTF-8 text: code points (continuation bytes not counted).
std::size_t width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

std::string pad(const std::string& s, std::size_t w, bool right) {
  const std::size_t have = width(s);
  const std::string fill(w > have ? w - have : 0, ' ');
  return right ? fill + s : s + fill;
}

std::string one_line(const std::string& s) {
  std::string out = s;
  for (char& c : out) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return out;
}

void text_block(std::string& out, const Block& b) {
  switch (b.kind) {
    case Block::Kind::kParagraph:
    case Block::Kind::kStatus:
      out += one_line(plain(b.text)) + "\n";
      break;
    case Block::Kind::kBullets:
      for (const auto& item : b.items) out += "  - " + one_line(plain(item)) + "\n";
      break;
    case Block::Kind::kNumbered:
      for (std::size_t i = 0; i < b.items.size(); ++i) {
        out += "  " + std::to_string(i + 1) + ". " + one_line(plain(b.items[i])) + "\n";
      }
      break;
    case Block::Kind::kTable: {
      const Table& t = b.table;
      std::vector<std::size_t> w(t.header.size(), 0);
      for (std::size_t i = 0; i < t.header.size(); ++i) w[i] = width(t.header[i]);
      for (const auto& row : t.rows) {
        for (std::size_t i = 0; i < row.size() && i < w.size(); ++i) {
          w[i] = std::max(w[i], width(one_line(plain(row[i].content))));
        }
      }
      const auto line = [&](const std::vector<std::string>& cells) {
        std::string l = " ";
        for (std::size_t i = 0; i < cells.size() && i < w.size(); ++i) {
          const bool num = i < t.numeric.size() && t.numeric[i];
          l += " " + pad(cells[i], w[i], num);
        }
        while (!l.empty() && l.back() == ' ') l.pop_back();
        return l + "\n";
      };
      out += line(t.header);
      for (const auto& row : t.rows) {
        std::vector<std::string> cells;
        for (const auto& c : row) cells.push_back(one_line(plain(c.content)));
        out += line(cells);
      }
      break;
    }
    case Block::Kind::kFigure:
      break;
  }
}

}  // namespace

std::string to_markdown(const Document& doc, const std::vector<Figure>& figures) {
  std::string out = "# " + markdown_escape(doc.title) + "\n";
  for (const auto& b : doc.intro) {
    out += "\n";
    md_block(out, b, figures);
  }
  for (const auto& s : doc.sections) {
    out += "\n" + std::string(static_cast<std::size_t>(s.level), '#') + " " +
           markdown_escape(s.title) + "\n";
    for (const auto& b : s.blocks) {
      out += "\n";
      md_block(out, b, figures);
    }
  }
  return out;
}

std::string to_html(const Document& doc, const std::vector<Figure>& figures) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
      chart::markup_escape(doc.title) + "</title>\n<style>\n" + kCss +
      "\n</style>\n</head>\n<body>\n<main>\n";
  // Unique ids: a subsection title (e.g. "fast vs slow") repeats under several sections.
  std::vector<std::string> ids;
  std::set<std::string> used;
  for (const auto& s : doc.sections) {
    std::string id = anchor(s.title);
    for (int n = 2; used.count(id) != 0; ++n) id = anchor(s.title) + "-" + std::to_string(n);
    used.insert(id);
    ids.push_back(id);
  }
  out += "<h1>" + chart::markup_escape(doc.title) + "</h1>\n<nav>";
  for (std::size_t i = 0; i < doc.sections.size(); ++i) {
    const auto& s = doc.sections[i];
    if (s.level == 2)
      out += "<a href=\"#" + ids[i] + "\">" + chart::markup_escape(s.title) + "</a>";
  }
  out += "</nav>\n";
  for (const auto& b : doc.intro) html_block(out, b, figures);
  for (std::size_t i = 0; i < doc.sections.size(); ++i) {
    const auto& s = doc.sections[i];
    const std::string tag = "h" + std::to_string(s.level);
    out +=
        "<" + tag + " id=\"" + ids[i] + "\">" + chart::markup_escape(s.title) + "</" + tag + ">\n";
    for (const auto& b : s.blocks) html_block(out, b, figures);
  }
  out += "</main>\n<script>\n" + std::string(kScript) + "\n</script>\n</body>\n</html>\n";
  return out;
}

std::string to_text(const Document& doc) {
  std::string out = one_line(doc.title) + "\n";
  for (const auto& b : doc.intro) text_block(out, b);
  for (const auto& s : doc.sections) {
    out += "\n" + one_line(s.title) + "\n";
    for (const auto& b : s.blocks) text_block(out, b);
  }
  return out;
}

}  // namespace dyno::report
