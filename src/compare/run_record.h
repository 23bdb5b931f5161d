// What the comparison reads: run records, through record/run_record.h (compare/ reads records
// and nothing else; it never re-runs anything), and the error it reports for input it cannot
// use (a selector, a spec file).
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "error/error.h"
#include "record/run_record.h"

namespace dyno::compare {

/// Input the comparison cannot use: a missing or malformed record, selector or spec file. The
/// message names the file (and line) or the selector and says what to do.
class CompareError : public Error {
 public:
  explicit CompareError(const std::string& message) : Error(ErrorKind::input, message) {}
};

/// A run record as read back by record/ (the one reader of a run directory).
using record::ManifestEntry;
using record::read_run;
using record::read_telemetry;
using record::RunRecord;
using record::scan_manifests;
using record::TelemetryReading;

/// A JSON path `a.b.c` into an object; nullptr when a step is missing or not an object.
const boost::json::value* find_path(const boost::json::object& root, const std::string& path);

/// A number at `path` (int or double); nullopt when absent, null or not a number.
std::optional<double> number_at(const boost::json::object& root, const std::string& path);

/// A string at `path`; nullopt when absent, null or not a string.
std::optional<std::string> string_at(const boost::json::object& root, const std::string& path);

}  // namespace dyno::compare
