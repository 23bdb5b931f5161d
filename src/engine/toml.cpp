// The TOML reader on toml++ (Debian's libtomlplusplus, a compiled library). Only this file
// includes its headers: the rest of dyno sees Boost.JSON values and line numbers (toml.h).
#include "engine/toml.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

// Debian builds libtomlplusplus with exceptions (its parser is toml::v3::ex::parse); the header
// must say the same or parse() does not link. Parse errors arrive as toml::parse_error.
#define TOML_EXCEPTIONS 1
#include <toml++/toml.h>

#include "json/utf8.h"

namespace dyno::engine {

namespace json = boost::json;

int TomlDocument::line_of(const std::string& path) const {
  std::string p = path;
  while (true) {
    if (auto it = lines.find(p); it != lines.end()) return it->second;
    const auto dot = p.rfind('.');
    if (dot == std::string::npos) return 0;
    p.resize(dot);
  }
}

namespace {

// How deep tables, dotted keys, arrays and inline tables may nest together. toml++ bounds the
// nesting of values (256) but not the tables that table headers and dotted keys open, and it
// builds, walks and frees its tree recursively: a key of 40 000 parts overflows an 8 MiB stack.
constexpr int kMaxDepth = 256;

// Measures, before toml++ sees the text, an upper bound of the depth of every key and value:
// the parts of the current [table] header, plus the parts of each dotted key, plus one per
// enclosing array or inline table. A lexical scan (strings and comments skipped); it never
// rejects a shallow document, whatever its syntax: syntax is toml++'s business.
class DepthScan {
 public:
  explicit DepthScan(std::string_view s) : s_(s) {}

  /// The line where the depth first passes kMaxDepth; 0 when it never does.
  int run() {
    while (i_ < s_.size() && deep_line_ == 0) {
      const char c = s_[i_];
      if (c == '\n') {
        ++line_;
        if (open_.empty()) mode_ = Mode::statement;
      } else if (c == '#') {
        while (i_ + 1 < s_.size() && s_[i_ + 1] != '\n') ++i_;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        // nothing
      } else if (mode_ == Mode::statement && c == '[') {
        header();
        continue;
      } else {
        if (mode_ == Mode::statement) start_key(header_);
        if (c == '"' || c == '\'') {
          skip_string();
          continue;
        }
        other(c);
      }
      ++i_;
    }
    return deep_line_;
  }

 private:
  enum class Mode { statement, key, value };

  void set_depth(int d) {
    depth_ = d;
    if (d > kMaxDepth && deep_line_ == 0) deep_line_ = line_;
  }
  void start_key(int base) {
    mode_ = Mode::key;
    set_depth(base + 1);
  }

  // A [table] or [[array of tables]] header: one level per part. Stops before a newline.
  void header() {
    header_ = 1;
    ++i_;
    while (i_ < s_.size() && s_[i_] != '\n' && s_[i_] != ']' && deep_line_ == 0) {
      if (s_[i_] == '"' || s_[i_] == '\'') {
        skip_string();
        continue;
      }
      if (s_[i_] == '.' && ++header_ > kMaxDepth) deep_line_ = line_;
      ++i_;
    }
    mode_ = Mode::value;  // the rest of the line: nothing opens a level there
  }

  void other(char c) {
    if (mode_ == Mode::key) {
      if (c == '.') set_depth(depth_ + 1);
      if (c == '=') mode_ = Mode::value;
    } else if (c == '[' || c == '{') {
      // A value after '=' sits at its key's depth; an element of an array one below the array.
      const int d = !open_.empty() && open_.back().first == '[' ? open_.back().second + 1 : depth_;
      open_.emplace_back(c, d);
      set_depth(d);
      if (c == '{') start_key(d);
      return;
    }
    if (c == ']' || c == '}') {
      if (!open_.empty()) open_.pop_back();
      mode_ = Mode::value;
    } else if (c == ',' && !open_.empty() && open_.back().first == '{') {
      start_key(open_.back().second);
    }
  }

  // At a quote: moves past the string (basic or literal, one line or multi-line: a closing run
  // of 3 to 5 quotes ends it, TOML's quotes right before the closing delimiter included).
  void skip_string() {
    const char q = s_[i_];
    const bool multi = s_.substr(i_, 3) == std::string(3, q);
    i_ += multi ? 3 : 1;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '\\' && q == '"') {
        if (i_ + 1 < s_.size() && s_[i_ + 1] == '\n') ++line_;
        i_ += 2;
        continue;
      }
      if (c == '\n') {
        if (!multi) return;  // unterminated: toml++ says so
        ++line_;
      }
      if (c == q) {
        std::size_t run = 0;
        while (i_ + run < s_.size() && s_[i_ + run] == q && run < 5) ++run;
        if (!multi) {
          ++i_;
          return;
        }
        i_ += run;
        if (run >= 3) return;
        continue;
      }
      ++i_;
    }
  }

  std::string_view s_;
  std::size_t i_ = 0;
  int line_ = 1;
  Mode mode_ = Mode::statement;
  int header_ = 0;                          ///< parts of the current table header
  int depth_ = 0;                           ///< depth of the key part or value being read
  std::vector<std::pair<char, int>> open_;  ///< open arrays and inline tables, with their depth
  int deep_line_ = 0;                       ///< where the depth first passed kMaxDepth
};

// toml++'s tree → Boost.JSON, in the order of the file, with the line of every key.
class Converter {
 public:
  Converter(const std::string& source, int last_line, TomlDocument& doc)
      : source_(source), last_line_(last_line), doc_(doc) {}

  json::object table(const toml::table& t, const std::string& path) {
    // toml++ keeps a table's keys sorted; the file's order matters (engine_args become flags in
    // that order), so keys go back to where each was first written.
    std::vector<std::pair<const toml::key*, const toml::node*>> entries;
    for (const auto& [k, v] : t) entries.emplace_back(&k, &v);
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
      const toml::source_position& pa = a.first->source().begin;
      const toml::source_position& pb = b.first->source().begin;
      return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
    });
    json::object out;
    for (const auto& [k, v] : entries) {
      const std::string p =
          path.empty() ? std::string(k->str()) : path + "." + std::string(k->str());
      doc_.lines.emplace(p, line(k->source().begin.line));
      out.emplace(k->str(), value(*v, p));
    }
    return out;
  }

  int line(toml::source_index l) const {
    // toml++ counts lines as the text does ('\n'); this only keeps an error at the end of the
    // input, or a node without a position, on a line of the text.
    return std::clamp(static_cast<int>(std::min<toml::source_index>(l, 1u << 30)), 1, last_line_);
  }

 private:
  [[noreturn]] void fail(const toml::node& where, const std::string& message) const {
    throw TomlError(source_ + ":" + std::to_string(line(where.source().begin.line)) + ": " +
                    message);
  }

  json::value value(const toml::node& n, const std::string& path) {
    switch (n.type()) {
      case toml::node_type::table:
        return table(*n.as_table(), path);
      case toml::node_type::array:
        return array(*n.as_array(), path);
      case toml::node_type::string:
        return json::value(std::string_view(n.as_string()->get()));
      case toml::node_type::integer:
        return json::value(static_cast<std::int64_t>(n.as_integer()->get()));
      case toml::node_type::floating_point:
        return json::value(n.as_floating_point()->get());
      case toml::node_type::boolean:
        return json::value(n.as_boolean()->get());
      case toml::node_type::date:
      case toml::node_type::time:
      case toml::node_type::date_time:
        fail(n, "'" + path +
                    "': dates and times are not supported in engine specs (no spec key takes "
                    "one); write it as a string");
      case toml::node_type::none:
        break;
    }
    fail(n, "'" + path + "': a value of no known type");
  }

  json::array array(const toml::array& a, const std::string& path) {
    json::array out;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const toml::node& e = a[i];
      // An inline table in an array is `{ ... }`; a table that is not inline came from [[path]].
      if (e.is_table() && !e.as_table()->is_inline()) {
        fail(e, "[[" + path +
                    "]]: arrays of tables are not supported in engine specs (no spec key takes "
                    "one); use an inline array of tables, " +
                    path + " = [{ ... }, { ... }], or separate keys");
      }
      out.push_back(value(e, path + "[" + std::to_string(i) + "]"));
    }
    return out;
  }

  const std::string& source_;
  int last_line_;
  TomlDocument& doc_;
};

// toml++ describes an error as "Error while parsing <what>: <problem>"; dyno leads with the
// problem, and says what an unquoted string needs.
std::string describe(std::string_view description) {
  constexpr std::string_view kPrefix = "Error while parsing ";
  std::string out(description);
  const std::size_t colon = description.find(": ");
  if (description.substr(0, kPrefix.size()) == kPrefix && colon != std::string_view::npos) {
    out = std::string(description.substr(colon + 2)) + " (while parsing " +
          std::string(description.substr(kPrefix.size(), colon - kPrefix.size())) + ")";
  }
  if (out.find("could not determine value type") != std::string::npos) {
    out += "; strings need quotes, e.g. preset = \"vllm\"";
  }
  return out;
}

// An error naming the line of the first ill-formed UTF-8 sequence and its first byte; empty
// when the text is well-formed. toml++ rejects such text too, but names the character before.
std::string utf8_error(std::string_view text, const std::string& source) {
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t n = utf8::sequence_length(text.substr(i));
    if (n == 0) break;
    i += n;
  }
  if (i == text.size()) return "";
  constexpr std::string_view kHex = "0123456789abcdef";
  const auto byte = static_cast<unsigned char>(text[i]);
  const auto line =
      1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(i), '\n');
  return source + ":" + std::to_string(line) + ": not UTF-8 text (byte 0x" + kHex[byte >> 4] +
         kHex[byte & 15] + "); TOML is UTF-8";
}

}  // namespace

TomlDocument parse_toml(std::string_view text, const std::string& source) {
  const int last_line = 1 + static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  if (std::string error = utf8_error(text, source); !error.empty()) throw TomlError(error);
  if (const int at = DepthScan(text).run(); at > 0) {
    throw TomlError(source + ":" + std::to_string(at) + ": keys and values nest deeper than " +
                    std::to_string(kMaxDepth) +
                    " levels (table header parts, dotted key parts, arrays and inline tables "
                    "together)");
  }
  TomlDocument doc;
  Converter convert(source, last_line, doc);
  toml::table root;
  try {
    root = toml::parse(text, std::string_view(source));
  } catch (const toml::parse_error& e) {
    throw TomlError(source + ":" + std::to_string(convert.line(e.source().begin.line)) + ": " +
                    describe(e.description()));
  }
  doc.root = convert.table(root, "");
  return doc;
}

}  // namespace dyno::engine
