#include "interop/export_csv.h"

#include <algorithm>
#include <boost/json.hpp>
#include <map>
#include <set>
#include <string_view>

#include "json/json_text.h"
#include "workload/csv.h"

namespace dyno::interop {

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

workload::CsvCell csv_cell(const json::value& v) {
  using workload::CsvCell;
  if (v.is_null()) return CsvCell();
  if (v.is_bool()) return CsvCell::text(v.get_bool() ? "true" : "false");
  if (v.is_int64()) return CsvCell::integer(v.get_int64());
  if (v.is_uint64()) return CsvCell::integer(v.get_uint64());
  if (v.is_double()) return CsvCell::number(v.get_double());
  return CsvCell::text(v.is_string() ? std::string(v.get_string()) : json_text::compact(v));
}

std::string csv_field(const json::value& v) { return csv_cell(v).field(); }

std::string export_csv(const std::vector<ExportRecord>& records) {
  std::vector<std::string> columns;
  std::set<std::string> known;
  std::vector<std::map<std::string, json::value>> figures;
  for (const ExportRecord& r : records) {
    std::vector<std::string> keys;
    std::map<std::string, json::value> row;
    for (auto& [k, v] : flatten_summary(r.summary_json)) {
      keys.push_back(k);
      row.emplace(k, std::move(v));
    }
    merge_columns(columns, known, keys);
    figures.push_back(std::move(row));
  }
  std::string out;
  std::vector<workload::CsvCell> header;
  for (const auto& [name, path] : kCsvIdentityColumns)
    header.push_back(csv_cell(json::value(name)));
  for (const std::string& c : columns) header.push_back(csv_cell(json::value(c)));
  out += workload::csv_row(header);
  for (std::size_t i = 0; i < records.size(); ++i) {
    std::vector<workload::CsvCell> fields;
    for (const auto& [name, path] : kCsvIdentityColumns) {
      const json::value* v = at_path(records[i].manifest_json, path);
      fields.push_back(v == nullptr ? workload::CsvCell() : csv_cell(*v));
    }
    for (const std::string& c : columns) {
      const auto it = figures[i].find(c);
      fields.push_back(it == figures[i].end() ? workload::CsvCell() : csv_cell(it->second));
    }
    out += workload::csv_row(fields);
  }
  return out;
}

}  // namespace dyno::interop
