// Format `table`: a ledger — a hand-kept sheet, or another harness's published per-cell
// figures — as CSV, a JSON array of row objects (or rows at a JSON path of one object), or
// JSONL. Each row becomes a summary-only record; `--map SOURCE=TARGET` says which column (or
// JSON key or path) is which figure of summary.json or which identity of the manifest: the
// user's assertion that the column has dyno's definition (docs/metrics.md). Every form, target,
// unit and error: docs/interop.md "table".
#pragma once

#include <string>
#include <vector>

#include "interop/result_import.h"

namespace dyno::interop {

/// The summary.json paths a figure may be mapped to ("latency_ms.ttft.p50"), in summary.json's
/// order.
std::vector<std::string> table_figure_targets();

/// The identity targets ("model", "engine", "concurrency", "protocol", "cell"…).
const std::vector<std::string>& table_identity_targets();

/// Reads a ledger whose columns `map` names (each "SOURCE=TARGET" or "SOURCE=TARGET:UNIT";
/// "PATH=rows" says where a JSON object keeps its rows). One result per row that is not blank,
/// each summary-only, `source.part` naming the row. Throws ImportFileError (exit 2) naming the
/// file, the line or JSON path and the column: no --map, a SOURCE not in the file, an unknown
/// TARGET or unit, a TARGET mapped twice, a cell that is not a number where a figure needs one,
/// a negative or non-finite number, a count that is not a whole number, counts that disagree
/// (ok + failed ≠ total), a ragged CSV row, an empty file or one without rows.
std::vector<ImportedResult> read_table(const std::string& bytes, const std::string& file_name,
                                       const std::vector<std::string>& map);

}  // namespace dyno::interop
