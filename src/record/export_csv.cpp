#include "record/export_csv.h"

#include <algorithm>
#include <boost/json.hpp>
#include <map>
#include <set>
#include <string_view>

#include "json/json_text.h"

namespace dyno::record {

namespace json = boost::json;

namespace {

void flatten(const json::object& o, const std::string& prefix,
             std::vector<std::pair<std::string, json::value>>& out) {
  for (const auto& kv : o) {
    const std::string path = prefix + std::string(kv.key());
    if (kv.value().is_object()) {
      flatten(kv.value().get_object(), path + ".", out);
    } else if (!kv.value().is_array()) {
      out.emplace_back(path, kv.value());
    }
  }
}

/// The value at a dotted path of `o` (nullptr when absent).
const json::value* at_path(const json::object& o, const std::string& path) {
  const json::object* cur = &o;
  std::size_t from = 0;
  while (true) {
    const std::size_t dot = path.find('.', from);
    const json::value* v = cur->if_contains(path.substr(from, dot - from));
    if (v == nullptr || dot == std::string::npos) return v;
    if (!v->is_object()) return nullptr;
    cur = &v->get_object();
    from = dot + 1;
  }
}

std::string csv_quoted(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

/// Adds `keys` to `columns` (the union so far): a new key goes right after the key before it
/// in `keys`, so that a figure only some runs have stays beside its siblings.
void merge_columns(std::vector<std::string>& columns, std::set<std::string>& known,
                   const std::vector<std::string>& keys) {
  std::size_t next = 0;  // where a new key goes: after the last known key of this run
  for (const std::string& k : keys) {
    if (known.insert(k).second) {
      columns.insert(columns.begin() + static_cast<std::ptrdiff_t>(next), k);
      ++next;
    } else {
      next =
          static_cast<std::size_t>(std::find(columns.begin(), columns.end(), k) - columns.begin()) +
          1;
    }
  }
}

}  // namespace

std::vector<std::pair<std::string, json::value>> flatten_summary(const json::object& summary) {
  std::vector<std::pair<std::string, json::value>> all;
  flatten(summary, "", all);
  std::vector<std::pair<std::string, json::value>> out;
  for (auto& [k, v] : all) {
    if (k == "schema_version" || k == "run_id" || k == "status") continue;
    out.emplace_back(std::move(k), std::move(v));
  }
  return out;
}

std::string csv_field(const json::value& v) {
  if (v.is_null()) return "";
  if (v.is_bool()) return v.get_bool() ? "true" : "false";
  if (v.is_number()) return json_text::compact(v);
  std::string text = v.is_string() ? std::string(v.get_string()) : json_text::compact(v);
  if (!text.empty() && std::string_view("=+-@\t\r").find(text.front()) != std::string::npos) {
    text.insert(text.begin(), '\'');
  }
  return csv_quoted(text);
}

std::string export_csv(const std::vector<ExportRecord>& records) {
  std::vector<std::string> columns;
  std::set<std::string> known;
  std::vector<std::map<std::string, json::value>> figures;
  for (const ExportRecord& r : records) {
    std::vector<std::string> keys;
    std::map<std::string, json::value> row;
    for (auto& [k, v] : flatten_summary(r.summary)) {
      keys.push_back(k);
      row.emplace(k, std::move(v));
    }
    merge_columns(columns, known, keys);
    figures.push_back(std::move(row));
  }
  std::string out;
  const auto line = [&](const std::vector<std::string>& fields) {
    for (std::size_t i = 0; i < fields.size(); ++i) out += (i == 0 ? "" : ",") + fields[i];
    out += "\r\n";
  };
  std::vector<std::string> header;
  for (const auto& [name, path] : kCsvIdentityColumns)
    header.push_back(csv_field(json::value(name)));
  for (const std::string& c : columns) header.push_back(csv_field(json::value(c)));
  line(header);
  for (std::size_t i = 0; i < records.size(); ++i) {
    std::vector<std::string> fields;
    for (const auto& [name, path] : kCsvIdentityColumns) {
      const json::value* v = at_path(records[i].manifest_json, path);
      fields.push_back(v == nullptr ? "" : csv_field(*v));
    }
    for (const std::string& c : columns) {
      const auto it = figures[i].find(c);
      fields.push_back(it == figures[i].end() ? "" : csv_field(it->second));
    }
    line(fields);
  }
  return out;
}

}  // namespace dyno::record
