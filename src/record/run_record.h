// A run record read back (docs/record.md): the one way any code reads a run directory —
// manifest.json (typed, and as written), summary.json (typed, and as written), requests.jsonl,
// the SHA256SUMS check, and telemetry.jsonl on demand. Boards, exports, `runs merge`,
// `sim fit`, rescoring and the index read records through here; every read checks the
// record's schema_version first and every error names the file.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "metrics/trace.h"
#include "record/manifest.h"
#include "record/record_reader.h"
#include "record/summary_file.h"

namespace dyno::record {

/// What read_run reads beyond the manifest and the summary.
struct ReadParts {
  bool requests = true;   ///< requests.jsonl (traces)
  bool integrity = true;  ///< the SHA256SUMS check
};

/// One run record, loaded.
struct RunRecord {
  std::filesystem::path dir;
  std::string run_id;
  Manifest manifest;                   ///< manifest.json, typed
  boost::json::object manifest_json;   ///< the same, as written
  std::optional<SummaryFile> summary;  ///< summary.json, typed; nullopt when the record has none
  boost::json::object summary_json;    ///< the same, as written (empty without one)
  bool has_requests = false;           ///< requests.jsonl exists (not a summary-only import)
  std::vector<metrics::Trace> traces;  ///< requests.jsonl, in file order (when read)
  bool has_telemetry = false;          ///< telemetry.jsonl exists
  /// SHA-256 of the record's SHA256SUMS file ("" when it has none or it was not checked): one
  /// hash that pins every file of the record.
  std::string sums_sha256;
  /// What the SHA256SUMS check found wrong: a listed file missing or with another hash, a file
  /// of the record not listed, or no SHA256SUMS at all. Empty when intact (or not checked).
  std::vector<std::string> integrity_problems;

  bool has_summary() const { return summary.has_value(); }
  /// Imported from another tool's file (`dyno import`: manifest `source`).
  bool imported() const { return manifest.source.has_value(); }
  /// An import without per-request data: its figures are the other tool's, with no requests
  /// behind them to compute an interval from.
  bool summary_only() const {
    return imported() && summary && summary->import && summary->import->timing == "summary_only";
  }
  /// "imported from <tool> (<file>[ <part>])" for an imported record; "" otherwise.
  std::string import_origin() const;
};

/// Reads a run directory. Throws RecordReadError naming the file (and line for
/// requests.jsonl) when manifest.json is missing or malformed, or summary.json /
/// requests.jsonl is malformed or of a newer schema. A missing summary.json or requests.jsonl
/// is not an error (has_summary() false / has_requests false): a board lists such a run as
/// unusable with the reason.
RunRecord read_run(const std::filesystem::path& dir, ReadParts parts = {});

/// Whether the record at `dir` is still being written: its manifest says `running`, or a dyno
/// holds it open (run_in_progress). Such a record is not exported, merged or fitted.
bool still_running(const std::filesystem::path& dir);

/// A manifest found under a runs root (for selecting runs without loading them).
struct ManifestEntry {
  std::filesystem::path dir;
  boost::json::object manifest;
};

/// Every <runs_root>/<dir>/manifest.json (the `campaigns` directory excluded), sorted by
/// directory name (run ids sort by time). Throws RecordReadError when runs_root is not a
/// directory. A manifest that cannot be read (not JSON, not an object, a newer schema_version)
/// throws RecordReadError too, unless `skipped` is given: then it is left out and
/// "<path>: <why>" added to `*skipped`, so one broken record does not stop every query.
std::vector<ManifestEntry> scan_manifests(const std::filesystem::path& runs_root,
                                          std::vector<std::string>* skipped = nullptr);

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

/// Reads <run dir>/telemetry.jsonl (empty when the run has none). Throws RecordReadError
/// naming file:line on a malformed line.
std::vector<TelemetryReading> read_telemetry(const std::filesystem::path& run_dir);

}  // namespace dyno::record
