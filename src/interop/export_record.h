// `dyno export`: a finished record read back for another tool's format (docs/interop.md
// "Export"). Only a record that verifies is exported: a tampered or half-written one is
// refused, never converted.
#pragma once

#include <boost/json/object.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "error/error.h"
#include "metrics/trace.h"
#include "record/manifest.h"

namespace dyno::interop {

/// A record that cannot be exported (still running, fails verification, lacks what the
/// format needs): exit 2, the message naming the run and why.
class ExportError : public Error {
 public:
  explicit ExportError(const std::string& message) : Error(ErrorKind::input, message) {}
};

/// A record as the exporters read it.
struct ExportRecord {
  std::filesystem::path dir;
  std::string run_id;
  boost::json::object manifest_json;   ///< manifest.json as written
  record::Manifest manifest;           ///< the same, typed
  boost::json::object summary;         ///< summary.json as written
  bool has_requests = false;           ///< requests.jsonl exists (not a summary-only import)
  std::vector<metrics::Trace> traces;  ///< requests.jsonl, in its (index) order
};

/// Reads the record at `dir`. Throws ExportError when it is still running (manifest status
/// `running`, or a dyno is writing it) or fails `dyno runs verify` (the first problem named),
/// RecordReadError when it cannot be read.
ExportRecord read_export_record(const std::filesystem::path& dir);

}  // namespace dyno::interop
