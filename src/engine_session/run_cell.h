// The run of one cell into one run record (`dyno run` is one cell; protocols are many):
// run_cell.cpp makes the target, opens the record, measures and closes the record. What is
// shown of it, and the exit code, are the command's (app/cell_report.h).
#pragma once

#include <atomic>
#include <boost/json/object.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/process.h"
#include "engine/server_timings.h"
#include "engine_session/engine_session.h"
#include "load/runner.h"
#include "metrics/summary.h"
#include "metrics/trace.h"
#include "record/manifest.h"
#include "record/owner_sections.h"
#include "record/summary_file.h"
#include "workload/request.h"

namespace dyno::digest {
class SigningKey;
}

namespace dyno::engine_session {

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
  record::ProtocolRef protocol;  ///< manifest workload.protocol (name, version, params, cell…)
  std::optional<std::string> campaign;
  std::string label;
  boost::json::object sampling;  ///< manifest workload.sampling
  std::uint64_t seed = 0;        ///< manifest load.seed (--seed)
  double error_budget = 0.05;    ///< the cell fails when more requests fail (--error-budget)
  /// --extra-body: the fields merged into every request (already in `requests`; recorded as
  /// manifest workload.extra_body), and whether they may replace dyno's own
  /// (--extra-body-override: checked per request before the record opens).
  boost::json::object extra_body;
  bool extra_body_override = false;
  /// The prompt length the flags asked of synthetic prompts made without a tokenizer
  /// (--input-tokens, a ladder's approximate size): the summary warns input_length_off when
  /// the engine's count differs by more than 5 %. Unset: exact or given prompts.
  std::optional<std::int64_t> requested_input_tokens;
  /// --clock-ref: the clock measured against a reference before the load; run_cell measures
  /// again after it and writes both to the manifest's clock.reference.
  std::optional<record::ClockReference> clock_reference;
  /// --sign-key: the record is signed once closed (record/signature.h); null: unsigned.
  std::shared_ptr<const digest::SigningKey> signing_key;
};

struct CellOutcome {
  std::string run_id;
  std::filesystem::path dir;
  metrics::Summary summary;
  std::vector<metrics::Trace> traces;
  std::string
      status;  ///< ok | partial | interrupted | failed | engine_crashed | target_unreachable
  bool interrupted = false;
  bool engine_crashed = false;              ///< the launched engine's process ended during the cell
  std::optional<engine::ExitStatus> crash;  ///< how it ended
  /// The target was gone: every request failed to connect for --unreachable-after.
  std::optional<load::Unreachable> unreachable;
  bool over_error_budget = false;  ///< error_rate > the cell's error budget
  /// summary.json as written, read back typed (record/summary_file.h: one reader).
  record::SummaryFile summary_file;
  /// manifest.json's `telemetry` as written (the sampling period asked for and achieved),
  /// read typed; nullopt when the record has none.
  std::optional<record::TelemetrySection> telemetry;
  bool streamed = true;                        ///< the requests asked for streamed answers
  engine::ServerTimingFigures server_timings;  ///< from the responses' `timings`
  /// sha256 of the record's SHA256SUMS once it is closed: pins every file of the record (a
  /// campaign file lists it beside the run id).
  std::string record_sha256;
  int exit_code = 0;  ///< set by the command that shows the cell (app/cell_report.h)
};

/// What the command sees while the load runs (both may be empty).
struct CellHooks {
  /// The load's progress; `measured_s`: seconds since the first measured request (0 before).
  std::function<void(const load::Progress&, double measured_s)> on_progress;
  std::function<void()> on_load_done;  ///< the load ended (before the record is closed)
};

/// Runs one cell against `engine`, writes its record under `runs_root` and indexes it in the
/// index `index_url` names ("" = <runs_root>/index.sqlite; a failure is a warning). Scores
/// requests that carry an expected answer. Never throws for failed requests (they are data).
CellOutcome run_cell(EngineSession& engine, const CellSpec& cell,
                     const std::filesystem::path& runs_root, const std::string& index_url,
                     const std::atomic<bool>& stop, const CellHooks& hooks = {});

}  // namespace dyno::engine_session
