// Pinned expectations of a board (docs/compare.md "Expectations"): what the board spec says
// its runs must be — the engine commits of each arm, the measured requests per cell, how many
// cells each arm and each engine commit contributes, the spec file's own SHA-256 — checked
// against the built board. A mismatch refuses the board (ExpectationError) or, by policy, is
// rendered as the board's status and one finding per mismatch.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compare/run_record.h"

namespace dyno::compare {

struct Board;

enum class ExpectPolicy { kRefuse, kReport };
const char* to_string(ExpectPolicy p);

/// What the spec pins. Commits are hex, full or abbreviated (at least 7 digits): a recorded
/// commit matches when it starts with one of them.
struct Expectations {
  ExpectPolicy policy = ExpectPolicy::kRefuse;
  std::map<std::string, std::vector<std::string>> engine_commits;  ///< arm -> accepted commits
  std::optional<std::uint64_t> requests;                           ///< every run of every cell
  std::map<std::string, std::uint64_t> cell_requests;              ///< cell id -> requests
  std::map<std::string, std::uint64_t> cells_per_arm;              ///< arm -> cells
  /// arm -> pinned commit -> cells of that arm with a run built from it
  std::map<std::string, std::map<std::string, std::uint64_t>> cells_per_engine_commit;
  std::string spec_sha256;  ///< pinned by the caller (--expect-spec-sha256), "" = not pinned

  /// Whether anything is pinned.
  bool any() const;
};

/// One expectation checked: what was expected and what the board holds.
struct ExpectationResult {
  std::string kind;    ///< engine_commit, requests, cells_per_arm, cells_per_engine_commit,
                       ///< spec_sha256
  std::string arm;     ///< "" when not about one arm
  std::string cell;    ///< "" when not about one cell
  std::string run_id;  ///< "" when not about one run
  boost::json::value expected;
  boost::json::value found;
  bool pass = true;
  std::string text;     ///< what was expected and found, e.g. "... expected 12, found 24"
  std::string message;  ///< the same, after the arm, cell and run it is about
};

/// The board refuses to render: its runs do not match the spec's expectations.
class ExpectationError : public CompareError {
 public:
  using CompareError::CompareError;
};

/// Checks every pinned expectation against the built board (its cells, their runs). A pinned
/// arm the board does not declare is a CompareError naming the spec key.
std::vector<ExpectationResult> check_expectations(const Board& board, const Expectations& expect);

/// The refusal's message: every mismatch on its own line, then what to do.
std::string expectation_refusal(const std::vector<ExpectationResult>& results);

/// Whether `commit` (as recorded) matches `pinned` (full or abbreviated, case-insensitive).
bool commit_matches(const std::string& commit, const std::string& pinned);

}  // namespace dyno::compare
