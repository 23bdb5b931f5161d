#include "interop/import_table.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <set>
#include <utility>

#include "interop/import_json.h"
#include "interop/import_table_map.h"
#include "workload/csv.h"

namespace dyno::interop {

namespace json = boost::json;
using table::Kind;
using table::MapEntry;
using table::Mapping;
using table::RowValues;

namespace {

/// One row of the file: a CSV record (its fields under the header's names) or a JSON object.
struct Row {
  std::string where;  ///< errors start with it: "FILE:LINE" (CSV, JSONL) or "FILE"
  std::string path;   ///< JSON rows: the object's path ("$[2]", "$.results[2]", "$" in JSONL)
  std::string part;   ///< source.part: "row 3" (CSV: its line), "$[2]", "line 3" (JSONL)
  std::vector<std::pair<std::string, std::string>> cells;  ///< CSV: column → text
  const json::object* object = nullptr;                    ///< JSON rows
};

struct Rows {
  bool csv = false;
  std::vector<std::string> header;  ///< CSV
  json::value doc;                  ///< JSON: the file's value(s), which the rows point into
  std::vector<json::value> lines;   ///< JSONL: one value a line
  std::vector<Row> rows;
};

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out.empty() ? "(none)" : out;
}

std::string_view strip_bom(std::string_view text) {
  if (text.substr(0, 3) == "\xef\xbb\xbf") text.remove_prefix(3);
  return text;
}

void read_csv(Rows& out, std::string_view text, const std::string& file) {
  std::vector<workload::CsvRecord> records =
      workload::parse_csv(text, [&](std::size_t line, const std::string& what) {
        throw ImportFileError(file + ":" + std::to_string(line) + ": " + what);
      });
  if (records.empty()) throw ImportFileError(file + ": empty file; expected a header row");
  out.csv = true;
  out.header = std::move(records[0].second);
  std::set<std::string> seen;
  for (const std::string& h : out.header) {
    if (!seen.insert(h).second) {
      throw ImportFileError(file + ":" + std::to_string(records[0].first) + ": the header names '" +
                            h + "' twice");
    }
  }
  for (std::size_t i = 1; i < records.size(); ++i) {
    auto& [line, fields] = records[i];
    const std::string where = file + ":" + std::to_string(line);
    if (fields.size() != out.header.size()) {
      throw ImportFileError(where + ": " + std::to_string(fields.size()) +
                            " fields, but the header has " + std::to_string(out.header.size()));
    }
    const bool blank = std::all_of(fields.begin(), fields.end(), [](const std::string& f) {
      return f.find_first_not_of(" \t") == std::string::npos;
    });
    if (blank) continue;
    Row row{where, "", "row " + std::to_string(line), {}, nullptr};
    for (std::size_t c = 0; c < fields.size(); ++c) {
      row.cells.emplace_back(out.header[c], std::move(fields[c]));
    }
    out.rows.push_back(std::move(row));
  }
}

/// A step of a JSON path: a key, or an array index.
struct Step {
  std::string key;
  std::optional<std::size_t> index;
};

/// "$.a.b[0]", "a.b[0]", "$[1].c" as steps; nullopt when it is not such a path.
std::optional<std::vector<Step>> parse_path(const std::string& path) {
  std::vector<Step> steps;
  std::size_t i = 0;
  const bool dollar = !path.empty() && path[0] == '$';
  if (dollar) i = 1;
  while (i < path.size()) {
    if (path[i] == '[') {
      const std::size_t close = path.find(']', i);
      if (close == std::string::npos || close == i + 1 || close - i > 10) return std::nullopt;
      std::size_t n = 0;
      for (std::size_t k = i + 1; k < close; ++k) {
        if (path[k] < '0' || path[k] > '9') return std::nullopt;
        n = n * 10 + static_cast<std::size_t>(path[k] - '0');
      }
      steps.push_back({"", n});
      i = close + 1;
      continue;
    }
    if (path[i] == '.') {
      ++i;
    } else if (dollar || !steps.empty()) {
      return std::nullopt;
    }
    const std::size_t end = path.find_first_of(".[", i);
    const std::size_t stop = end == std::string::npos ? path.size() : end;
    if (stop == i) return std::nullopt;
    steps.push_back({path.substr(i, stop - i), std::nullopt});
    i = stop;
  }
  if (steps.empty()) return std::nullopt;
  return steps;
}

const json::value* follow(const json::value* v, const std::vector<Step>& steps, std::size_t from) {
  for (std::size_t k = from; k < steps.size() && v != nullptr; ++k) {
    if (steps[k].index) {
      v = v->is_array() && *steps[k].index < v->get_array().size()
              ? &v->get_array()[*steps[k].index]
              : nullptr;
    } else {
      v = v->is_object() ? v->get_object().if_contains(steps[k].key) : nullptr;
    }
  }
  return v;
}

/// The value at `path` in the file's JSON value; nullptr when a step is missing.
const json::value* at_path(const json::value& root, const std::string& path) {
  const auto steps = parse_path(path);
  return steps ? follow(&root, *steps, 0) : nullptr;
}

/// A row object's value for SOURCE: a key of the row as written ("ttft.p50" may be a key),
/// else a path in it; nullptr when the row has neither.
const json::value* lookup(const json::object& row, const std::string& source) {
  if (const json::value* v = row.if_contains(source)) return v;
  const auto steps = parse_path(source);
  if (!steps || steps->front().index) return nullptr;
  return follow(row.if_contains(steps->front().key), *steps, 1);
}

void add_object_rows(Rows& out, const json::array& rows, const std::string& file,
                     const std::string& path) {
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string p = path + "[" + std::to_string(i) + "]";
    if (!rows[i].is_object()) throw ImportFileError(file + ": " + p + ": expected a row object");
    if (rows[i].get_object().empty()) continue;  // a blank row
    out.rows.push_back(Row{file, p, p, {}, &rows[i].get_object()});
  }
}

void read_json_rows(Rows& out, std::string_view text, const std::string& file,
                    const std::optional<std::string>& rows_path) {
  out.doc = parse_one_json(std::string(text), file,
                           rows_path ? "one JSON value holding the rows at " + *rows_path
                                     : "a JSON array of row objects");
  const json::value* rows = &out.doc;
  std::string path = "$";
  if (rows_path) {
    rows = at_path(out.doc, *rows_path);
    path = (*rows_path)[0] == '$' ? *rows_path : "$." + *rows_path;
    if (rows == nullptr) throw ImportFileError(file + ": " + path + ": missing (--map gives it)");
  }
  if (!rows->is_array()) throw ImportFileError(file + ": " + path + ": expected an array of rows");
  add_object_rows(out, rows->get_array(), file, path == "$" ? "$" : path);
}

void read_jsonl(Rows& out, std::string_view text, const std::string& file) {
  std::vector<std::size_t> numbers;  // the line of each value
  std::size_t start = 0;
  std::size_t line = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view l = text.substr(start, end - start);
    start = end + 1;
    ++line;
    if (l.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    json::value v = parse_one_json(std::string(l), file, "one row object a line (JSONL)", line);
    if (!v.is_object()) {
      throw ImportFileError(file + ":" + std::to_string(line) + ": $: expected a row object");
    }
    out.lines.push_back(std::move(v));
    numbers.push_back(line);
  }
  // The rows point into `lines`, now that it no longer grows.
  for (std::size_t k = 0; k < out.lines.size(); ++k) {
    const json::object& o = out.lines[k].get_object();
    if (o.empty()) continue;  // a blank row
    const std::string n = std::to_string(numbers[k]);
    out.rows.push_back(Row{file + ":" + n, "$", "line " + n, {}, &o});
  }
}

/// The file's rows: JSON rows at PATH when --map gives PATH=rows; a JSON array when the file
/// starts with '['; JSONL when it starts with '{'; CSV otherwise.
Rows read_rows(const std::string& bytes, const std::string& file, const Mapping& m) {
  const std::string_view text = strip_bom(bytes);
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) {
    throw ImportFileError(file +
                          ": empty file; expected CSV with a header row, a JSON array of "
                          "row objects or JSONL");
  }
  Rows out;
  if (m.rows) {
    read_json_rows(out, text, file, m.rows);
  } else if (text[first] == '[') {
    read_json_rows(out, text, file, std::nullopt);
  } else if (text[first] == '{') {
    read_jsonl(out, text, file);
  } else {
    read_csv(out, text, file);
  }
  if (out.rows.empty()) throw ImportFileError(file + ": holds no rows (every row is blank)");
  return out;
}

/// Every mapped SOURCE must be in the file: a CSV column, or for JSON rows a key or path some
/// row has.
void check_sources(const Rows& rows, const Mapping& m, const std::string& file) {
  for (const MapEntry& e : m.entries) {
    if (rows.csv) {
      if (std::find(rows.header.begin(), rows.header.end(), e.source) == rows.header.end()) {
        throw ImportFileError(file + ": column '" + e.source + "' (--map '" + e.given +
                              "') is not in the file; its columns: " + joined(rows.header));
      }
      continue;
    }
    const bool found = std::any_of(rows.rows.begin(), rows.rows.end(), [&](const Row& r) {
      return lookup(*r.object, e.source) != nullptr;
    });
    if (!found) {
      std::vector<std::string> keys;
      for (const auto& kv : *rows.rows.front().object) keys.emplace_back(kv.key());
      throw ImportFileError(file + ": '" + e.source + "' (--map '" + e.given +
                            "') is in no row; the first row's keys: " + joined(keys));
    }
  }
}

/// One mapped cell of a row: where it is (for errors) and what it holds.
struct Cell {
  std::string at;                     ///< "FILE:LINE: column 'X'", "FILE: $[2].a.b"
  std::optional<std::string> text;    ///< CSV text, a JSON string
  const json::value* json = nullptr;  ///< a JSON value that is not a string (null: absent)
};

std::string trimmed(const std::string& s) {
  const std::size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

Cell cell_of(const Row& row, const MapEntry& e) {
  Cell c;
  if (row.object == nullptr) {
    c.at = row.where + ": column '" + e.source + "'";
    for (const auto& [name, value] : row.cells) {
      if (name == e.source) c.text = trimmed(value);
    }
    return c;
  }
  const bool key = row.object->if_contains(e.source) != nullptr;
  const std::string sub =
      key ? "." + e.source : (e.source[0] == '$' ? e.source.substr(1) : "." + e.source);
  c.at = row.where + ": " + row.path + sub;
  const json::value* v = lookup(*row.object, e.source);
  if (v == nullptr || v->is_null()) return c;
  if (v->is_string()) {
    c.text = trimmed(std::string(v->get_string()));
  } else {
    c.json = v;
  }
  return c;
}

[[noreturn]] void bad_cell(const Cell& c, const std::string& shown, const std::string& what) {
  throw ImportFileError(c.at + ": " + (shown.empty() ? "" : "'" + shown + "' ") + what);
}

/// The number a cell holds, in the target's unit; nullopt when the cell is empty (or, for a
/// load rate, "inf": no schedule).
std::optional<double> number_of(const Cell& c, const MapEntry& e) {
  double d = 0;
  std::string shown;
  if (c.json != nullptr) {
    shown = json::serialize(*c.json);
    if (!c.json->is_number()) bad_cell(c, shown, "is not a number");
    d = c.json->to_number<double>();
  } else {
    if (!c.text || c.text->empty()) return std::nullopt;
    shown = *c.text;
    if (e.kind == Kind::load_rate && shown == "inf") return std::nullopt;
    const char* end = shown.data() + shown.size();
    const auto [ptr, ec] = std::from_chars(shown.data(), end, d);
    if (ec == std::errc::result_out_of_range) bad_cell(c, shown, "is out of range");
    if (ec != std::errc() || ptr != end) bad_cell(c, shown, "is not a number");
  }
  if (!std::isfinite(d)) bad_cell(c, shown, "is not a finite number");
  if (d < 0) bad_cell(c, shown, "is negative; " + e.target + " is not");
  d = d * e.multiply / e.divide;
  switch (e.kind) {
    case Kind::count:
    case Kind::positive:
      if (d != std::floor(d) || d > 9007199254740992.0) {
        bad_cell(c, shown, "is not a whole number; " + e.target + " is a count");
      }
      if (e.kind == Kind::positive && d < 1) bad_cell(c, shown, "is not 1 or more");
      break;
    case Kind::load_rate:
      if (d <= 0) bad_cell(c, shown, "is not a rate above 0 (or inf)");
      break;
    case Kind::fraction:
      if (d > 1) bad_cell(c, shown, "is more than 1 (a fraction; ':percent' reads percentages)");
      break;
    default:
      break;
  }
  return d;
}

/// The text a cell holds; nullopt when it is empty.
std::optional<std::string> text_of(const Cell& c, const MapEntry& e) {
  std::string t;
  if (c.json != nullptr) {
    if (!c.json->is_number()) bad_cell(c, json::serialize(*c.json), "is not a string or number");
    t = json::serialize(*c.json);
  } else {
    if (!c.text || c.text->empty()) return std::nullopt;
    t = *c.text;
  }
  if (e.target == "api" && t != "chat" && t != "completions") {
    bad_cell(c, t, "is not an api dyno records; expected chat or completions");
  }
  if (e.target == "request_stream.sha256" || e.target == "harness.sha256") {
    // A SHA-256 as dyno writes one: 64 hex digits, lower case ("sha256:" prefix allowed).
    std::string h = t.starts_with("sha256:") ? t.substr(7) : t;
    std::transform(h.begin(), h.end(), h.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    const bool hex = h.size() == 64 && std::all_of(h.begin(), h.end(), [](char ch) {
                       return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
                     });
    if (!hex) bad_cell(c, t, "is not a SHA-256 (64 hex digits); " + e.target + " is one");
    t = h;
  }
  if (e.target == "protocol") {
    const bool ok = t[0] >= 'a' && t[0] <= 'z' && std::all_of(t.begin(), t.end(), [](char ch) {
                      return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-';
                    });
    if (!ok) bad_cell(c, t, "is not a protocol name (lower-case letters, digits and '-')");
  }
  return t;
}

/// source.file_fields: the mapping as given, and every column or key of the row as it is.
json::object fields_of(const Row& row, const Mapping& m) {
  json::object values;
  if (row.object != nullptr) {
    values = *row.object;
  } else {
    for (const auto& [name, value] : row.cells) values[name] = value;
  }
  return json::object{{"map", m.verbatim}, {"row", std::move(values)}};
}

}  // namespace

std::vector<std::string> table_figure_targets() { return table::figure_targets(); }

const std::vector<std::string>& table_identity_targets() { return table::identity_targets(); }

std::vector<ImportedResult> read_table(const std::string& bytes, const std::string& file_name,
                                       const std::vector<std::string>& map) {
  const Mapping m = table::parse_map(map);
  const Rows rows = read_rows(bytes, file_name, m);
  check_sources(rows, m, file_name);
  std::vector<ImportedResult> out;
  for (const Row& row : rows.rows) {
    RowValues v;
    for (const MapEntry& e : m.entries) {
      const Cell c = cell_of(row, e);
      if (e.kind == Kind::text) {
        if (auto t = text_of(c, e)) {
          v.texts[e.target] = std::move(*t);
        } else if (e.target == "model") {
          bad_cell(c, "",
                   "is empty; every row needs a model (or map no model column and name "
                   "one for every row with --model)");
        }
      } else if (const auto d = number_of(c, e)) {
        v.numbers[e.target] = *d;
      }
    }
    const std::string where =
        row.object != nullptr && row.path != "$" ? row.where + ": " + row.path : row.where;
    ImportedResult r = table::result_of(
        v, [&](const std::string& what) { throw ImportFileError(where + ": " + what); });
    r.source.part = row.part;
    r.source.file_fields = fields_of(row, m);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace dyno::interop
