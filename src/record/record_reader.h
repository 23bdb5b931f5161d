// Reading records back. Every reader of manifest.json, summary.json, requests.jsonl,
// telemetry.jsonl or a campaign file goes through check_schema_version (directly, or through
// the functions below), so a record written by a newer dyno fails with one clear message
// instead of being half understood (docs/record.md, "Schema").
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "error/error.h"
#include "metrics/trace.h"

namespace dyno::record {

/// A record that cannot be read: missing, not JSON, of an unknown schema version, malformed.
/// The message names the file (and the line, for JSONL).
class RecordReadError : public Error {
 public:
  explicit RecordReadError(const std::string& message) : Error(ErrorKind::input, message) {}
};

/// Throws RecordReadError unless `doc` is an object whose `schema_version` is an integer from
/// 1 to kSchemaVersion (the version this dyno writes). `where` names the file in the message,
/// e.g. "<path>: schema_version 2 is newer than this dyno reads (1); upgrade dyno".
void check_schema_version(const boost::json::value& doc, const std::string& where);

/// Reads a JSON record file (manifest.json, summary.json, a campaign file): parses it and
/// checks its schema_version. Throws RecordReadError naming the path.
boost::json::object read_record_json(const std::filesystem::path& path);

/// The version check of a run directory: its manifest.json's schema_version (request and
/// telemetry lines carry none; the manifest's covers the directory). Throws RecordReadError.
void check_run_dir_version(const std::filesystem::path& run_dir);

/// Reads <run_dir>/requests.jsonl back (after check_run_dir_version), one trace per line.
/// Throws RecordReadError naming "requests.jsonl:<line>" and the key on a malformed line.
std::vector<metrics::Trace> read_requests(const std::filesystem::path& run_dir);

}  // namespace dyno::record
