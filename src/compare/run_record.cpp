#include "compare/run_record.h"

#include <algorithm>
#include <boost/json/parse.hpp>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "digest/digest.h"
#include "record/record_json.h"
#include "record/record_reader.h"
#include "record/run_writer.h"

namespace dyno::compare {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CompareError(path.string() + ": cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A record's JSON file through record_reader.h (parsed, schema_version checked): a record of
/// a newer version fails with its one message, naming the file.
json::object read_object(const fs::path& path) {
  try {
    return record::read_record_json(path);
  } catch (const record::RecordReadError& e) {
    throw CompareError(e.what());
  }
}

/// Checks SHA256SUMS ("<hex>  <path>" lines) against the files of the directory.
std::vector<std::string> check_integrity(const fs::path& dir, std::string& sums_sha256) {
  std::vector<std::string> problems;
  const fs::path sums = dir / "SHA256SUMS";
  if (!fs::exists(sums)) {
    problems.push_back("no SHA256SUMS (the run did not finish writing its record)");
    return problems;
  }
  const std::string text = slurp(sums);
  sums_sha256 = digest::sha256_hex(text);
  std::set<std::string> listed;
  std::istringstream in(text);
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    const auto sep = line.find("  ");
    if (sep != 64) {
      problems.push_back("SHA256SUMS:" + std::to_string(n) + ": not '<sha256>  <path>'");
      continue;
    }
    const std::string want = line.substr(0, 64);
    const std::string rel = line.substr(66);
    listed.insert(rel);
    const fs::path file = dir / rel;
    if (!fs::exists(file)) {
      problems.push_back(rel + " is listed in SHA256SUMS but missing");
      continue;
    }
    try {
      if (digest::sha256_hex_file(file) != want) {
        problems.push_back(rel + " differs from its SHA256SUMS hash");
      }
    } catch (const digest::FileError& e) {
      problems.push_back(rel + ": " + e.what());
    }
  }
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const std::string rel = fs::relative(entry.path(), dir).generic_string();
    if (rel == "SHA256SUMS" || listed.count(rel) != 0) continue;
    problems.push_back(rel + " is not listed in SHA256SUMS");
  }
  std::sort(problems.begin(), problems.end());
  return problems;
}

}  // namespace

RunRecord load_run(const fs::path& dir) {
  RunRecord r;
  r.dir = dir;
  const fs::path manifest = dir / "manifest.json";
  if (!fs::exists(manifest)) {
    throw CompareError(dir.string() + ": not a run record (no manifest.json)");
  }
  r.manifest = read_object(manifest);
  const auto id = string_at(r.manifest, "run_id");
  if (!id) throw CompareError(manifest.string() + ": key `run_id` is missing");
  r.run_id = *id;
  const fs::path summary = dir / "summary.json";
  if (fs::exists(summary)) {
    r.summary = read_object(summary);
    r.has_summary = true;
  }
  if (fs::exists(dir / "requests.jsonl")) {
    try {
      r.traces = record::read_requests(dir);
    } catch (const record::RecordReadError& e) {
      throw CompareError(e.what());
    }
  }
  r.has_telemetry = fs::exists(dir / "telemetry.jsonl");
  r.integrity_problems = check_integrity(dir, r.sums_sha256);
  return r;
}

std::vector<ManifestEntry> scan_manifests(const fs::path& runs_root,
                                          std::vector<std::string>* skipped) {
  if (!fs::is_directory(runs_root)) {
    throw CompareError("--runs-root: " + runs_root.string() +
                       " is not a directory (give the directory that holds the run records)");
  }
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(runs_root)) {
    if (!entry.is_directory() || entry.path().filename() == "campaigns") continue;
    if (fs::exists(entry.path() / "manifest.json")) dirs.push_back(entry.path());
  }
  std::sort(dirs.begin(), dirs.end());
  std::vector<ManifestEntry> out;
  out.reserve(dirs.size());
  for (const auto& d : dirs) {
    try {
      out.push_back({d, read_object(d / "manifest.json")});
    } catch (const CompareError& e) {
      if (skipped == nullptr) throw;
      skipped->push_back(e.what());  // the message names the file
    }
  }
  return out;
}

const json::value* find_path(const json::object& root, const std::string& path) {
  const json::object* obj = &root;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? dot : dot - start);
    const json::value* v = obj->if_contains(key);
    if (v == nullptr) return nullptr;
    if (dot == std::string::npos) return v;
    if (!v->is_object()) return nullptr;
    obj = &v->get_object();
    start = dot + 1;
  }
}

std::optional<double> number_at(const json::object& root, const std::string& path) {
  const json::value* v = find_path(root, path);
  if (v == nullptr) return std::nullopt;
  if (v->is_double()) return v->get_double();
  if (v->is_int64()) return static_cast<double>(v->get_int64());
  if (v->is_uint64()) return static_cast<double>(v->get_uint64());
  return std::nullopt;
}

std::optional<std::string> string_at(const json::object& root, const std::string& path) {
  const json::value* v = find_path(root, path);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return std::string(v->get_string());
}

std::vector<TelemetryReading> read_telemetry(const fs::path& run_dir) {
  std::vector<TelemetryReading> out;
  const fs::path path = run_dir / "telemetry.jsonl";
  if (!fs::exists(path)) return out;
  // Telemetry lines carry no schema_version: the manifest's covers the directory.
  try {
    record::check_run_dir_version(run_dir);
  } catch (const record::RecordReadError& e) {
    throw CompareError(e.what());
  }
  std::ifstream in(path);
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    boost::system::error_code ec;
    json::value v = json::parse(line, ec);
    if (ec || !v.is_object()) {
      throw CompareError(path.string() + ":" + std::to_string(n) + ": not a JSON object");
    }
    const json::object& o = v.as_object();
    const auto t = number_at(o, "t_ns");
    const auto source = string_at(o, "source");
    if (!t || !source) {
      throw CompareError(path.string() + ":" + std::to_string(n) +
                         ": keys `t_ns` and `source` are required");
    }
    TelemetryReading r;
    r.t_s = *t * 1e-9;
    r.source = *source;
    r.device = static_cast<std::int64_t>(number_at(o, "device").value_or(0));
    r.power_instant_w = number_at(o, "power_instant_w");
    r.power_average_w = number_at(o, "power_average_w");
    r.energy_j = number_at(o, "energy_j");
    r.temperature_c = number_at(o, "temperature_c");
    r.memory_used_bytes = number_at(o, "memory_used_bytes");
    out.push_back(std::move(r));
  }
  return out;
}

bool is_imported(const RunRecord& r) {
  const json::value* source = find_path(r.manifest, "source");
  return source != nullptr && source->is_object();
}

bool is_summary_only(const RunRecord& r) {
  const json::value* flag = find_path(r.summary, "import.summary_only");
  return is_imported(r) && flag != nullptr && flag->is_bool() && flag->get_bool();
}

std::string import_origin(const RunRecord& r) {
  if (!is_imported(r)) return "";
  const std::string tool = string_at(r.manifest, "source.tool").value_or("another tool");
  const std::string file = string_at(r.manifest, "source.file").value_or("?");
  const auto part = string_at(r.manifest, "source.part");
  return "imported from " + tool + " (" + file + (part ? " " + *part : "") + ")";
}

}  // namespace dyno::compare
