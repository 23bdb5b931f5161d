// `dyno export`: a finished record read back for another tool's format (docs/interop.md
// "Export"). Only a record that verifies is exported: a tampered or half-written one is
// refused, never converted.
#pragma once

#include <filesystem>
#include <string>

#include "error/error.h"
#include "record/run_record.h"

namespace dyno::interop {

/// A record that cannot be exported (still running, fails verification, lacks what the
/// format needs): exit 2, the message naming the run and why.
class ExportError : public Error {
 public:
  explicit ExportError(const std::string& message) : Error(ErrorKind::input, message) {}
};

/// A record as the exporters read it: the run record (record/run_record.h), finished and
/// verified.
using ExportRecord = record::RunRecord;

/// Reads the record at `dir`. Throws ExportError when it is still running (manifest status
/// `running`, or a dyno is writing it) or fails `dyno runs verify` (the first problem named),
/// RecordReadError when it cannot be read.
ExportRecord read_export_record(const std::filesystem::path& dir);

}  // namespace dyno::interop
