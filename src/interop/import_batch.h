// `dyno import`'s files as one batch (docs/interop.md): every file read and checked before any
// record is written, every record written into a staging directory under the runs root and moved
// into it only when all are written. An interrupt or a failure leaves nothing in the store; a
// crash leaves only the hidden staging directory. The command (app/results_import_command.cpp)
// reads the files, hands them here, then indexes what arrived.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "interop/import_formats.h"
#include "interop/result_import.h"

namespace dyno::interop {

/// One file given to `dyno import`, read: the name its evidence copy takes, its bytes and its
/// results.
struct ImportFile {
  std::string name;  ///< safe_evidence_name of the file's own name
  std::string bytes;
  std::vector<ImportedResult> results;
};

/// Reads the file at `path` in `format` and checks that each result's endpoint is known
/// (import_api with `api_flag`), so nothing is half-imported. Throws ImportFileError naming the
/// file.
ImportFile read_import_path(const std::string& path, const std::string& format,
                            const ImportReadOptions& read,
                            const std::optional<std::string>& api_flag);

/// Writes a record of every result of `files` and moves them into options.runs_root (created
/// when absent, and removed again when the import leaves it empty); options.stage_root is set
/// here. `stop` is looked at between two records: once it is set, nothing is left and the
/// result is nullopt. `before_moves` runs once every record is written, before the first moves
/// in (the command opens the run index there, so a new runs root's index starts empty rather
/// than rebuilt from the records arriving). Throws RecordError (nothing imported) when a write
/// or a move fails.
std::optional<std::vector<ImportOutcome>> import_into_runs_root(
    const std::vector<ImportFile>& files, ImportWriteOptions options, const std::atomic<bool>& stop,
    const std::function<void()>& before_moves = {});

}  // namespace dyno::interop
