// A run record as the comparison reads it (docs/record.md): manifest.json, summary.json,
// requests.jsonl, the SHA256SUMS check, and telemetry.jsonl on demand. compare/ reads records
// and nothing else; it never re-runs anything.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "error/error.h"
#include "metrics/trace.h"

namespace dyno::compare {

/// Input the comparison cannot use: a missing or malformed record, selector or spec file. The
/// message names the file (and line) or the selector and says what to do.
class CompareError : public Error {
 public:
  explicit CompareError(const std::string& message) : Error(ErrorKind::input, message) {}
};

/// One run record, loaded.
struct RunRecord {
  std::filesystem::path dir;
  std::string run_id;
  boost::json::object manifest;
  boost::json::object summary;         ///< empty when the record has no summary.json
  std::vector<metrics::Trace> traces;  ///< requests.jsonl, in file order
  bool has_summary = false;
  bool has_telemetry = false;  ///< telemetry.jsonl exists
  /// SHA-256 of the record's SHA256SUMS file ("" when it has none): one hash that pins every
  /// file of the record, written into the board's provenance.
  std::string sums_sha256;
  /// What the SHA256SUMS check found wrong: a listed file missing or with another hash, a file
  /// of the record not listed, or no SHA256SUMS at all. Empty when the record is intact.
  std::vector<std::string> integrity_problems;
};

/// Reads a run directory. Throws CompareError naming the file (and line for requests.jsonl)
/// when manifest.json is missing or malformed, or summary.json / requests.jsonl is malformed.
/// A missing summary.json or requests.jsonl is not an error (has_summary / empty traces): the
/// board lists such a run as unusable with the reason.
RunRecord load_run(const std::filesystem::path& dir);

/// A manifest found under a runs root (for selecting runs without loading them).
struct ManifestEntry {
  std::filesystem::path dir;
  boost::json::object manifest;
};

/// Every <runs_root>/<dir>/manifest.json (the `campaigns` directory excluded), sorted by
/// directory name (run ids sort by time). Throws CompareError when runs_root is not a
/// directory. A manifest that cannot be read (not JSON, not an object, a newer schema_version)
/// throws CompareError too, unless `skipped` is given: then it is left out and
/// "<path>: <why>" added to `*skipped`, so one broken record does not stop every query.
std::vector<ManifestEntry> scan_manifests(const std::filesystem::path& runs_root,
                                          std::vector<std::string>* skipped = nullptr);

/// Whether the record was imported from another tool's file (`dyno import`: manifest `source`).
bool is_imported(const RunRecord& r);

/// Whether the record is summary-only (an import without per-request data): its figures are
/// the other tool's, with no requests behind them to compute an interval from.
bool is_summary_only(const RunRecord& r);

/// "imported from <tool> (<file>)" for an imported record; "" otherwise.
std::string import_origin(const RunRecord& r);

/// A JSON path `a.b.c` into an object; nullptr when a step is missing or not an object.
const boost::json::value* find_path(const boost::json::object& root, const std::string& path);

/// A number at `path` (int or double); nullopt when absent, null or not a number.
std::optional<double> number_at(const boost::json::object& root, const std::string& path);

/// A string at `path`; nullopt when absent, null or not a string.
std::optional<std::string> string_at(const boost::json::object& root, const std::string& path);

/// One reading of telemetry.jsonl (docs/record.md): time from the run's t0, its source and
/// device, and the power and energy figures the reading carried (absent ones nullopt).
struct TelemetryReading {
  double t_s = 0;
  std::string source;  ///< nvml, amdgpu, rapl, host
  std::int64_t device = 0;
  std::optional<double> power_instant_w;
  std::optional<double> power_average_w;
  std::optional<double> energy_j;
  std::optional<double> temperature_c;
  std::optional<double> memory_used_bytes;
};

/// Reads <run dir>/telemetry.jsonl (empty when the run has none). Throws CompareError naming
/// file:line on a malformed line.
std::vector<TelemetryReading> read_telemetry(const std::filesystem::path& run_dir);

}  // namespace dyno::compare
