// A run directory as the index sees it (store/run_row.h): its row read from manifest.json
// and summary.json, the stamp that says when to read it again, the duplicate key, which
// directories of a runs root are runs, and the row's columns and sort keys.
#include "store/run_row.h"

#include <sys/stat.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <map>
#include <system_error>

#include "digest/digest.h"
#include "json/json_text.h"
#include "record/run_writer.h"
#include "record/summary_file.h"

namespace dyno::store {

using digest::sha256_hex;
using record::read_file;
using record::RecordError;

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

json::value to_json(const std::string& v) { return json::value(v); }
json::value to_json(const std::optional<std::string>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}
json::value to_json(const std::optional<std::int64_t>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}
json::value to_json(const std::optional<double>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

const json::value* at_path(const json::object& o, std::initializer_list<std::string_view> keys) {
  const json::object* cur = &o;
  const json::value* v = nullptr;
  for (std::string_view k : keys) {
    if (cur == nullptr) return nullptr;
    v = cur->if_contains(k);
    if (v == nullptr) return nullptr;
    cur = v->if_object();
  }
  return v;
}

std::optional<std::string> opt_str(const json::object& o,
                                   std::initializer_list<std::string_view> keys) {
  const json::value* v = at_path(o, keys);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return std::string(v->get_string());
}

std::optional<double> opt_num(const json::object& o, std::initializer_list<std::string_view> keys) {
  const json::value* v = at_path(o, keys);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->to_number<double>();
}

std::optional<std::int64_t> opt_int(const json::object& o,
                                    std::initializer_list<std::string_view> keys) {
  const json::value* v = at_path(o, keys);
  if (v == nullptr) return std::nullopt;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64()) return static_cast<std::int64_t>(v->get_uint64());
  return std::nullopt;
}

json::value value_or_null(const json::object& o, std::initializer_list<std::string_view> keys) {
  const json::value* v = at_path(o, keys);
  return v == nullptr ? json::value(nullptr) : *v;
}

/// A copy with every object's keys sorted (canonical form for hashing).
json::value canonical(const json::value& v) {
  if (const auto* a = v.if_array()) {
    json::array out;
    for (const auto& e : *a) out.push_back(canonical(e));
    return out;
  }
  if (const auto* o = v.if_object()) {
    std::vector<std::string_view> keys;
    for (const auto& kv : *o) keys.push_back(kv.key());
    std::sort(keys.begin(), keys.end());
    json::object out;
    for (std::string_view k : keys) out[k] = canonical(o->at(k));
    return out;
  }
  return v;
}

json::object parse_object(const fs::path& path) {
  const std::string text = read_file(path);
  std::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) throw RecordError(path.filename().string() + " is not valid JSON: " + ec.message());
  if (!v.is_object()) throw RecordError(path.filename().string() + " is not a JSON object");
  return std::move(v.as_object());
}

}  // namespace

std::string files_stamp(const fs::path& run_dir) {
  std::string out;
  for (const char* name : {"manifest.json", "summary.json"}) {
    struct stat st {};
    out += out.empty() ? "" : ";";
    if (::stat((run_dir / name).c_str(), &st) != 0) {
      out += "-";
      continue;
    }
    out += std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec) + ":" + std::to_string(st.st_ctim.tv_sec) + "." +
           std::to_string(st.st_ctim.tv_nsec) + ":" + std::to_string(st.st_ino);
  }
  return out;
}

std::string duplicate_key(const json::object& m) {
  json::object key;
  // An imported record (dyno import) is the result in its file: the same bytes read in the
  // same format are the same result, whatever --label, --model or --engine said; never equal
  // to a measured record's key.
  if (const json::value* src = m.if_contains("source"); src != nullptr && !src->is_null()) {
    key["source"] = json::object{{"format", value_or_null(m, {"source", "format"})},
                                 {"sha256", value_or_null(m, {"source", "sha256"})},
                                 {"part", value_or_null(m, {"source", "part"})}};
    return json_text::compact(canonical(key));
  }
  key["engine"] = json::object{{"name", value_or_null(m, {"engine", "name"})},
                               {"version", value_or_null(m, {"engine", "version"})},
                               {"engine_args", value_or_null(m, {"engine", "engine_args"})},
                               {"sim_profile", value_or_null(m, {"engine", "sim_profile"})}};
  key["model"] = json::object{{"id", value_or_null(m, {"model", "id"})},
                              {"revision", value_or_null(m, {"model", "revision"})},
                              {"fingerprint", value_or_null(m, {"model", "fingerprint"})}};
  key["request_stream_sha256"] = value_or_null(m, {"workload", "request_stream", "sha256"});
  key["sampling"] = value_or_null(m, {"workload", "sampling"});
  key["load"] = value_or_null(m, {"load"});
  // Its place in a protocol: a repetition of a cell, or a pass that measures an earlier pass's
  // prompts again on purpose (speed's fr2 after fr), is planned, not a duplicate.
  key["protocol"] =
      json::object{{"name", value_or_null(m, {"workload", "protocol", "name"})},
                   {"cell", value_or_null(m, {"workload", "protocol", "cell"})},
                   {"repetition", value_or_null(m, {"workload", "protocol", "repetition"})}};
  // A derived record (dyno rescore) measured nothing: it is the same as another derived record
  // when both derive the same way (kind, scorer, the deriving dyno) from the same measurement,
  // never the same as a measured record, its source included.
  if (const json::value* d = m.if_contains("derived_from"); d != nullptr && !d->is_null()) {
    key["derived"] =
        json::object{{"kind", value_or_null(m, {"derived_from", "kind"})},
                     {"scorer", value_or_null(m, {"derived_from", "scorer"})},
                     {"harness_executable_sha256",
                      value_or_null(m, {"derived_from", "harness", "executable_sha256"})}};
  }
  return json_text::compact(canonical(key));
}

RunRow read_run_row(const fs::path& run_dir) {
  RunRow r;
  r.run_id = run_dir.filename().string();
  r.status = "unreadable";
  r.engine_args = "{}";
  r.files_stamp = files_stamp(run_dir);  // before reading: a change meanwhile shows next time
  try {
    std::error_code ec;
    if (fs::is_regular_file(run_dir / "SHA256SUMS", ec)) {
      r.record_sha256 = digest::sha256_hex_file(run_dir / "SHA256SUMS");
    }
  } catch (const digest::FileError&) {  // unreadable: no digest to remember
  }
  json::object m;
  try {
    m = parse_object(run_dir / "manifest.json");
  } catch (const RecordError& e) {
    r.problem = e.what();
    return r;
  }
  const std::optional<std::string> status = opt_str(m, {"status"});
  if (!status) {
    r.problem = "manifest.json has no status";
    return r;
  }
  r.status = *status;
  r.started_at = opt_str(m, {"started_at"}).value_or("");
  r.ended_at = opt_str(m, {"ended_at"});
  r.label = opt_str(m, {"label"});
  r.campaign = opt_str(m, {"campaign"});
  r.protocol = opt_str(m, {"workload", "protocol", "name"});
  r.cell = opt_str(m, {"workload", "protocol", "cell"});
  r.source = opt_str(m, {"source", "format"});
  r.engine_name = opt_str(m, {"engine", "name"});
  r.engine_version = opt_str(m, {"engine", "version"});
  if (const json::value* args = at_path(m, {"engine", "engine_args"})) {
    r.engine_args = json_text::compact(*args);
  }
  r.model_id = opt_str(m, {"model", "id"});
  r.model_revision = opt_str(m, {"model", "revision"});
  r.model_fingerprint = opt_str(m, {"model", "fingerprint"});
  r.host = opt_str(m, {"hardware", "host"});
  if (const json::value* gpus = at_path(m, {"hardware", "gpus"}); gpus && gpus->is_array()) {
    for (const auto& g : gpus->get_array()) {
      if (!g.is_object()) continue;
      const auto name = opt_str(g.get_object(), {"name"});
      if (!r.gpus.empty()) r.gpus += ", ";
      r.gpus += name.value_or("?");
    }
  }
  r.stream_sha256 = opt_str(m, {"workload", "request_stream", "sha256"});
  r.stream_count = opt_int(m, {"workload", "request_stream", "count"});
  r.load_mode = opt_str(m, {"load", "mode"});
  r.concurrency = opt_int(m, {"load", "concurrency"});
  r.rate_per_s = opt_num(m, {"load", "rate_per_s"});
  std::vector<std::string> problems;
  if (const auto id = opt_str(m, {"run_id"}); id != r.run_id) {
    problems.push_back("manifest run_id '" + id.value_or("") + "' differs from the directory name");
  }
  const fs::path summary_path = run_dir / "summary.json";
  std::error_code ec;
  if (fs::exists(summary_path, ec)) {
    try {
      // Typed, through the record's one summary reader; a count the record states as
      // unknown (a summary-only import) stays unknown in the row.
      const record::SummaryFile file = record::summary_file_from_json(parse_object(summary_path));
      const metrics::Summary& f = file.figures;
      const auto count = [&file](const char* path, std::uint64_t n) {
        return file.knows(path) ? std::optional(static_cast<std::int64_t>(n)) : std::nullopt;
      };
      r.requests_ok = count("requests.ok", f.requests_ok);
      r.requests_failed = count("requests.failed", f.requests_failed);
      r.error_rate = f.error_rate;
      r.output_tokens_per_s = f.output_tokens_per_s;
      r.requests_per_s = f.requests_per_s;
      r.ttft_p50_ms = f.ttft_ms.p50;
      r.tpot_p50_ms = f.tpot_ms.p50;
      r.e2e_p50_ms = f.e2e_ms.p50;
      r.accuracy = f.accuracy;
    } catch (const std::runtime_error& e) {  // RecordError, or the typed reader's (file, key)
      problems.push_back(e.what());
    }
  } else if (r.status != "running") {
    problems.push_back("summary.json is missing");
  }
  if (!problems.empty()) {
    std::string text;
    for (const auto& p : problems) text += (text.empty() ? "" : "; ") + p;
    r.problem = text;
  }
  if (r.status != "running") r.identity_key = sha256_hex(duplicate_key(m));
  return r;
}

std::vector<std::string> run_directory_names(const fs::path& runs_root) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(runs_root, ec);
  if (ec) return names;
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.front() == '.' || name == "campaigns") continue;
    std::error_code e2;
    if (!entry.is_directory(e2)) continue;
    if (!fs::is_regular_file(entry.path() / "manifest.json", e2)) continue;
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// ---- the columns -------------------------------------------------------------------------------

std::string column_list() {
  std::string out;
  RunRow probe;
  for_each_field(probe, [&out](const char* name, const auto&) {
    if (!out.empty()) out += ", ";
    out += name;
  });
  return out;
}

std::size_t column_count() {
  std::size_t n = 0;
  RunRow probe;
  for_each_field(probe, [&n](const char*, const auto&) { ++n; });
  return n;
}

const std::string& sort_column(const std::string& key) {
  static const std::map<std::string, std::string> m{
      {"started", "started_at"},    {"id", "run_id"},
      {"status", "status"},         {"tok_s", "output_tokens_per_s"},
      {"req_s", "requests_per_s"},  {"ttft", "ttft_p50_ms"},
      {"tpot", "tpot_p50_ms"},      {"e2e", "e2e_p50_ms"},
      {"error_rate", "error_rate"}, {"accuracy", "accuracy"}};
  const auto it = m.find(key);
  if (it == m.end()) throw IndexError("unknown sort key '" + key + "'");
  return it->second;
}

json::object row_to_json(const RunRow& row) {
  json::object o;
  for_each_field(row, [&o](const char* name, const auto& v) {
    if (std::string_view(name) != "files_stamp") o[name] = to_json(v);
  });
  return o;
}

const std::vector<std::string>& sort_keys() {
  static const std::vector<std::string> keys{"started", "id",   "status", "tok_s",      "req_s",
                                             "ttft",    "tpot", "e2e",    "error_rate", "accuracy"};
  return keys;
}

}  // namespace dyno::store
