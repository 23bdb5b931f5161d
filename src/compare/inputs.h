// From what the user typed to a BoardInput: `--arm NAME=SELECTOR` flags and the board spec
// file (JSON, docs/compare.md "Board spec file"), resolved against a runs root and loaded.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compare/board.h"
#include "compare/index_select.h"

namespace dyno::compare {

struct ArmSpec {
  std::string name;
  std::vector<std::string> selectors;
  /// The arm's own price in the spec file (`gpu_hour_cost`, USD per GPU-hour): it wins over
  /// --gpu-hour-cost.
  std::optional<double> gpu_hour_cost{};
};

struct CellSpec {
  std::string name;
  std::string model;
  std::map<std::string, std::vector<std::string>> selectors;  ///< by arm
  /// `"accuracy_comparable": false` with its `"reason"` ("" = comparable).
  std::string accuracy_not_comparable;
};

/// The board spec file. Every key is optional; unknown keys are errors.
struct BoardSpec {
  std::string title;
  std::string baseline;
  std::vector<ArmSpec> arms;
  std::vector<CellSpec> cells;
  std::map<std::string, std::string> model_aliases;
  std::vector<std::string> required, reported, ignored;  ///< policy changes, in this order
  std::optional<double> accuracy_pp, output_gap_pct;
  std::optional<bool> allow_unresolved;
  Expectations expect;  ///< `expect` (the spec's own SHA-256 is pinned by the caller)
  /// `accuracy_not_comparable` entries and the cells marked `"accuracy_comparable": false`.
  std::vector<AccuracyMark> accuracy_marks;
  std::string sha256;  ///< of the file's bytes
};

/// Reads a board spec file. Throws CompareError naming the file and the key.
BoardSpec read_board_spec(const std::filesystem::path& path);

/// Parses an expectation policy, "refuse" or "report"; throws CompareError naming `key`.
ExpectPolicy parse_expect_policy(const std::string& text, const std::string& key);

/// Checks a pinned SHA-256 (64 hex digits, --expect-spec-sha256) and returns it in lower case;
/// throws CompareError naming `key`.
std::string parse_sha256(const std::string& text, const std::string& key);

/// Parses `NAME=SELECTOR` (the selector may itself contain '='). Names are
/// [A-Za-z0-9._-]+. Throws CompareError naming --arm.
ArmSpec parse_arm(const std::string& text);

/// Merges repeated --arm flags of the same name (their selectors are united), keeping the
/// order in which names first appeared.
std::vector<ArmSpec> merge_arms(const std::vector<ArmSpec>& arms);

/// Resolves every selector under `runs_root` (or through `index` when given: index_select.h,
/// the campaign files then read from each run's own runs root), loads each run once (a run
/// selected by two arms is shared), reads the campaign files the runs name. A record whose
/// manifest cannot be read is left out of the query and named in `skipped`. Throws
/// CompareError.
BoardInput load_board_input(const std::filesystem::path& runs_root,
                            const std::vector<ArmSpec>& arms, const std::vector<CellSpec>& cells,
                            IndexSelection* index = nullptr);

}  // namespace dyno::compare
