// A second interrupt exits at once (app/signals.h); the run record it leaves is still closed as
// `interrupted` and verifies (`dyno runs verify`). Closing happens on a thread of its own, not
// in the signal handler: the handler only wakes it (write() to a pipe, async-signal-safe).
#pragma once

#include <filesystem>
#include <ostream>
#include <string>

namespace dyno::record {

/// What a record closed at once says of telemetry: the command's flags (its samples are lost).
struct CloseContext {
  std::string telemetry_mode = "auto";
  double telemetry_period_ms = 100.0;
};

/// A staging directory (`dyno import`) whose records close_open_records_at_once() does not
/// close but removes with it: an import interrupted at once leaves nothing. Empty: none.
void set_discard_at_once(const std::filesystem::path& dir);

/// Closes the record in `dir` from what is on disk, for a process that exits right after:
/// - a record with SHA256SUMS is finished: left as it is;
/// - a record whose manifest already left `running` (the run was writing its last files): its
///   requests.jsonl is put in index order and SHA256SUMS written;
/// - otherwise requests.jsonl keeps its complete lines, in index order; summary.json is
///   computed from them (no client cost, energy or /metrics figures: each says why), and the
///   manifest says `interrupted` with an `exited_at_once` warning, ended_at now and clock t0
///   null (the load's t0 is not known outside the run); SHA256SUMS last.
/// Call with record_write_lock() held, so that no other thread writes the record.
/// Throws (RecordError, std::exception) when it cannot.
void close_record_at_once(const std::filesystem::path& dir, const CloseContext& context);

/// Takes record_write_lock() (waiting at most 1 s for a write in progress) and never
/// releases it, then closes every record this process has open (open_run_dirs()) but those
/// under the directory of set_discard_at_once(), which it removes.
/// Says on `err` what it closed or why it could not. Never throws.
void close_open_records_at_once(const CloseContext& context, std::ostream& err);

}  // namespace dyno::record
