#include "record/run_record.h"

#include <algorithm>
#include <boost/json/parse.hpp>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "digest/digest.h"
#include "record/record_reader.h"
#include "record/run_verify.h"
#include "record/run_writer.h"

namespace dyno::record {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

/// The record's SHA256SUMS check (verify_run_sums, the one `dyno runs verify` makes of the
/// files), each problem as "<file>: <what>", and the SHA-256 of SHA256SUMS itself.
std::vector<std::string> check_integrity(const fs::path& dir, std::string& sums_sha256) {
  std::vector<std::string> problems;
  for (const VerifyProblem& p : verify_run_sums(dir).problems) {
    problems.push_back(p.path.empty() ? p.message : p.path + ": " + p.message);
  }
  std::error_code ec;
  if (fs::is_regular_file(dir / "SHA256SUMS", ec)) {
    try {
      sums_sha256 = digest::sha256_hex_file(dir / "SHA256SUMS");
    } catch (const digest::FileError& e) {  // a problem of the record, reported, not thrown
      problems.push_back(std::string("SHA256SUMS: ") + e.what());
    }
  }
  std::sort(problems.begin(), problems.end());
  return problems;
}

/// A typed reading of one file's object; a malformed one names the file's path.
template <class Parse>
auto typed(const fs::path& path, const json::object& object, Parse parse) {
  try {
    return parse(object);
  } catch (const std::runtime_error& e) {
    throw RecordReadError(path.string() + ": " + e.what());
  }
}

std::optional<double> number(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->to_number<double>();
}

}  // namespace

std::string RunRecord::import_origin() const {
  if (!manifest.source) return "";
  const ImportSource& s = *manifest.source;
  return "imported from " + (s.tool.empty() ? std::string("another tool") : s.tool) + " (" +
         (s.file.empty() ? std::string("?") : s.file) + (s.part ? " " + *s.part : "") + ")";
}

RunRecord read_run(const fs::path& dir, ReadParts parts) {
  RunRecord r;
  r.dir = dir;
  const fs::path manifest = dir / "manifest.json";
  if (!fs::exists(manifest)) {
    throw RecordReadError(dir.string() + ": not a run record (no manifest.json)");
  }
  r.manifest_json = read_record_json(manifest);
  r.manifest = typed(manifest, r.manifest_json, manifest_from_json);
  r.run_id = r.manifest.run_id;
  const fs::path summary = dir / "summary.json";
  if (fs::exists(summary)) {
    r.summary_json = read_record_json(summary);
    r.summary = typed(summary, r.summary_json, summary_file_from_json);
  }
  r.has_requests = fs::exists(dir / "requests.jsonl");
  if (r.has_requests && parts.requests) r.traces = read_requests(dir);
  r.has_telemetry = fs::exists(dir / "telemetry.jsonl");
  if (parts.integrity) r.integrity_problems = check_integrity(dir, r.sums_sha256);
  return r;
}

bool still_running(const fs::path& dir) {
  if (run_in_progress(dir)) return true;
  const json::object manifest = read_record_json(dir / "manifest.json");
  const json::value* status = manifest.if_contains("status");
  return status != nullptr && status->is_string() && status->get_string() == "running";
}

std::vector<ManifestEntry> scan_manifests(const fs::path& runs_root,
                                          std::vector<std::string>* skipped) {
  if (!fs::is_directory(runs_root)) {
    throw RecordReadError("--runs-root: " + runs_root.string() +
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
      out.push_back({d, read_record_json(d / "manifest.json")});
    } catch (const RecordReadError& e) {
      if (skipped == nullptr) throw;
      skipped->push_back(e.what());  // the message names the file
    }
  }
  return out;
}

std::vector<TelemetryReading> read_telemetry(const fs::path& run_dir) {
  std::vector<TelemetryReading> out;
  const fs::path path = run_dir / "telemetry.jsonl";
  if (!fs::exists(path)) return out;
  // Telemetry lines carry no schema_version: the manifest's covers the directory.
  check_run_dir_version(run_dir);
  std::ifstream in(path);
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    boost::system::error_code ec;
    json::value v = json::parse(line, ec);
    if (ec || !v.is_object()) {
      throw RecordReadError(path.string() + ":" + std::to_string(n) + ": not a JSON object");
    }
    const json::object& o = v.as_object();
    const auto t = number(o, "t_ns");
    const json::value* source = o.if_contains("source");
    if (!t || source == nullptr || !source->is_string()) {
      throw RecordReadError(path.string() + ":" + std::to_string(n) +
                            ": keys `t_ns` and `source` are required");
    }
    TelemetryReading reading;
    reading.t_s = *t * 1e-9;
    reading.source = std::string(source->as_string());
    reading.device = static_cast<std::int64_t>(number(o, "device").value_or(0));
    reading.power_instant_w = number(o, "power_instant_w");
    reading.power_average_w = number(o, "power_average_w");
    reading.energy_j = number(o, "energy_j");
    reading.temperature_c = number(o, "temperature_c");
    reading.memory_used_bytes = number(o, "memory_used_bytes");
    out.push_back(std::move(reading));
  }
  return out;
}

}  // namespace dyno::record
