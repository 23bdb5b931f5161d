// The board's machine-readable files and the board directory (docs/compare.md "Outputs").
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "compare/board.h"
#include "report/figure.h"

namespace dyno::report {

/// board.json: the ledger (schema version, status, provenance, definitions, every cell with
/// each arm's figures and repetitions, checks with both values, deltas with intervals, the
/// quality audit, unpaired runs, findings). Pretty JSON, keys in a fixed order.
std::string board_json(const compare::Board& board, const std::vector<Figure>& figures);

/// board.csv (RFC 4180): one row per comparison, cell and figure.
std::string board_csv(const compare::Board& board);

/// Writes README.md, report.html, board.json, board.csv, each figure's <stem>.svg and
/// <stem>.png, then SHA256SUMS over all of them, into `dir` (created; files it holds from an
/// earlier board are replaced, other files are left alone and not listed). Every file is
/// written atomically. Returns the names written, SHA256SUMS last. Throws
/// record::RecordError on I/O failure, std::invalid_argument for bad figures.
std::vector<std::string> write_board(const std::filesystem::path& dir, const compare::Board& board,
                                     const std::vector<Figure>& figures);

}  // namespace dyno::report
