#include "compare/select.h"

#include <algorithm>
#include <boost/json/parse.hpp>
#include <cmath>
#include <fstream>
#include <sstream>

#include "json/json_text.h"
#include "record/record_reader.h"

namespace dyno::compare {

namespace json = boost::json;
namespace fs = std::filesystem;

const std::vector<std::pair<std::string, std::string>>& query_keys() {
  static const std::vector<std::pair<std::string, std::string>> keys = {
      {"run_id", "run_id"},
      {"campaign", "campaign"},
      {"label", "label"},
      {"status", "status"},
      {"engine", "engine.name"},
      {"engine_version", "engine.version"},
      {"profile", "engine.sim_profile.name"},
      {"model", "model.id"},
      {"revision", "model.revision"},
      {"protocol", "workload.protocol.name"},
      {"cell", "workload.protocol.cell"},
      {"api", "workload.api"},
      {"mode", "load.mode"},
      {"concurrency", "load.concurrency"},
      {"rate", "load.rate_per_s"},
      {"host", "hardware.host"}};
  return keys;
}

std::vector<QueryTerm> parse_query(const std::string& text) {
  std::vector<QueryTerm> terms;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw CompareError("query '" + text + "': term '" + item +
                         "' is not key=value (e.g. label=fast,protocol=sweep)");
    }
    QueryTerm t;
    t.key = item.substr(0, eq);
    t.value = item.substr(eq + 1);
    if (t.key.find('.') != std::string::npos) {
      t.path = t.key;
    } else {
      for (const auto& [k, p] : query_keys()) {
        if (k == t.key) t.path = p;
      }
      if (t.path.empty()) {
        std::string known;
        for (const auto& kv : query_keys()) known += (known.empty() ? "" : ", ") + kv.first;
        throw CompareError("query '" + text + "': unknown key '" + t.key + "'; use one of " +
                           known + ", or a dotted manifest path such as engine.sim_profile.name");
      }
    }
    terms.push_back(std::move(t));
  }
  if (terms.empty()) throw CompareError("query '" + text + "' has no key=value term");
  return terms;
}

std::string scalar_text(const json::value& v) {
  if (v.is_string()) return std::string(v.get_string());
  if (v.is_bool()) return v.get_bool() ? "true" : "false";
  if (v.is_null()) return "null";
  if (v.is_int64()) return std::to_string(v.get_int64());
  if (v.is_uint64()) return std::to_string(v.get_uint64());
  if (v.is_double()) {
    const double d = v.get_double();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e15) {
      return std::to_string(static_cast<long long>(d));
    }
    return json_text::compact(v);
  }
  return json_text::compact(v);
}

namespace {

std::optional<double> as_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  std::size_t pos = 0;
  try {
    const double d = std::stod(s, &pos);
    if (pos == s.size() && std::isfinite(d)) return d;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace

bool scalar_matches(const json::value& v, const std::string& want) {
  if (v.is_object() || v.is_array()) return false;
  const std::string have = scalar_text(v);
  if (have == want) return true;
  const auto a = as_number(have);
  const auto b = as_number(want);
  return a && b && *a == *b;
}

bool query_matches(const json::object& manifest, const std::vector<QueryTerm>& terms) {
  for (const auto& t : terms) {
    const json::value* v = find_path(manifest, t.path);
    if (v == nullptr || !scalar_matches(*v, t.value)) return false;
  }
  return true;
}

std::optional<json::object> read_campaign(const fs::path& runs_root,
                                          const std::string& campaign_id) {
  if (campaign_id.empty() || campaign_id.find('/') != std::string::npos) return std::nullopt;
  const fs::path file = runs_root / "campaigns" / (campaign_id + ".json");
  if (!fs::exists(file)) return std::nullopt;
  // schema_version checked: a newer one is refused (RecordReadError, naming the file)
  return record::read_record_json(file);
}

std::vector<fs::path> resolve_selector(const std::string& selector, const fs::path& runs_root,
                                       const std::vector<ManifestEntry>& manifests) {
  if (selector.empty()) throw CompareError("an empty run selector");
  std::vector<fs::path> out;
  if (selector.find('=') != std::string::npos) {
    const auto terms = parse_query(selector);
    for (const auto& m : manifests) {
      if (query_matches(m.manifest, terms)) out.push_back(m.dir);
    }
    if (out.empty()) {
      throw CompareError("query '" + selector + "' matches no run under " + runs_root.string() +
                         " (check the values against the runs' manifest.json)");
    }
    return out;
  }
  const fs::path as_path(selector);
  if (fs::is_directory(as_path) && fs::exists(as_path / "manifest.json")) return {as_path};
  if (const auto campaign = read_campaign(runs_root, selector)) {
    const json::value* cells = campaign->if_contains("cells");
    if (cells != nullptr && cells->is_array()) {
      for (const auto& c : cells->get_array()) {
        if (!c.is_object()) continue;
        const json::value* runs = c.get_object().if_contains("runs");
        if (runs == nullptr || !runs->is_array()) continue;
        for (const auto& r : runs->get_array()) {
          if (!r.is_object()) continue;
          const auto id = string_at(r.get_object(), "run_id");
          if (!id) continue;
          const fs::path dir = runs_root / *id;
          if (!fs::exists(dir / "manifest.json")) {
            throw CompareError("campaign " + selector + " lists run " + *id +
                               ", which is not under " + runs_root.string());
          }
          out.push_back(dir);
        }
      }
    }
    if (out.empty()) throw CompareError("campaign " + selector + " lists no run");
    std::sort(out.begin(), out.end());
    return out;
  }
  std::vector<fs::path> candidates;
  for (const auto& m : manifests) {
    const std::string name = m.dir.filename().string();
    if (name == selector) return {m.dir};
    if (name.rfind(selector, 0) == 0) candidates.push_back(m.dir);
  }
  if (candidates.size() == 1) return candidates;
  if (candidates.empty()) {
    throw CompareError("'" + selector + "' is not a run id, a run directory, a campaign id or a " +
                       "query (key=value) under " + runs_root.string());
  }
  std::string list;
  for (std::size_t i = 0; i < candidates.size() && i < 5; ++i) {
    list += (i == 0 ? "" : ", ") + candidates[i].filename().string();
  }
  if (candidates.size() > 5) list += ", …";
  throw CompareError("run id prefix '" + selector + "' matches " +
                     std::to_string(candidates.size()) + " runs (" + list +
                     "); give more of the id");
}

}  // namespace dyno::compare
