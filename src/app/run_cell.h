// The run of one cell into one run record (`dyno run` is one cell; protocols are many):
// run_cell.cpp makes the target, opens the record, measures, closes the record and prints.
#pragma once

#include <atomic>
#include <boost/json/object.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "app/run_command.h"
#include "app/session.h"
#include "load/runner.h"
#include "metrics/summary.h"
#include "metrics/trace.h"
#include "workload/request.h"

namespace dyno::app {

/// What varies between cells.
struct CellSpec {
  std::vector<workload::Request> requests;  ///< walked cyclically by the load
  std::string stream_source;
  /// The canonical hash of `requests` as the stream gave them, before flags filled defaults
  /// (manifest workload.request_stream.sha256); empty: the hash of `requests`.
  std::string stream_sha256;
  /// The load may send `requests` again from the start (manifest request_stream.cycle).
  bool stream_cycles = false;
  load::LoadConfig load;
  metrics::Slo slo;
  std::string slo_text;
  std::string load_text;         ///< for the console
  boost::json::object protocol;  ///< manifest workload.protocol (name, version, params, cell…)
  std::optional<std::string> campaign;
  std::string label;
  boost::json::object sampling;  ///< manifest workload.sampling
  bool print_summary = true;     ///< print the per-run table (or JSON) on stdout
};

struct CellOutcome {
  std::string run_id;
  std::filesystem::path dir;
  metrics::Summary summary;
  std::vector<metrics::Trace> traces;
  std::string status;  ///< ok | partial | interrupted | failed | engine_crashed
  bool interrupted = false;
  bool engine_crashed = false;  ///< the launched engine's process ended during the cell
  boost::json::object summary_json;
  int exit_code = kExitOk;
};

/// Runs one cell against `engine` and writes its record under options.runs_root. Scores
/// requests that carry an expected answer. Never throws for failed requests (they are data).
CellOutcome run_cell(EngineSession& engine, const CellSpec& cell, const RunOptions& options,
                     const std::atomic<bool>& stop);

}  // namespace dyno::app
