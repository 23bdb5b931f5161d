// Fairness checks of a pair of runs (docs/compare.md "Fairness checks"): each check records
// both arms' values and passes, fails, or is unresolved (a value missing in either record).
// A policy says which checks are required (a failure means the cell is not compared; an
// unresolved one blocks the board unless unresolved identities are allowed), which are only
// reported, and which are ignored.
#pragma once

#include <boost/json/value.hpp>
#include <map>
#include <string>
#include <vector>

#include "compare/run_record.h"

namespace dyno::compare {

enum class CheckLevel { kRequired, kReported, kIgnored };
enum class CheckOutcome { kPass, kFail, kUnresolved };

const char* to_string(CheckLevel level);
const char* to_string(CheckOutcome outcome);

struct CheckDef {
  std::string name;   ///< e.g. "request_stream"
  std::string label;  ///< e.g. "request stream"
  std::string what;   ///< what is compared (docs, methodology)
  CheckLevel default_level = CheckLevel::kRequired;
};

/// Every check, in the order boards show them.
const std::vector<CheckDef>& check_catalog();
/// The check of that name in check_catalog() (its first check for a name it does not hold).
const CheckDef& check_def(const std::string& name);

/// Which checks are required, reported or ignored.
class Policy {
 public:
  /// The defaults of check_catalog(): everything required but gpu_uuid, dirty_sources and
  /// engine_dirty_sources, which are reported, and engine_commit, which is ignored.
  Policy();
  CheckLevel level(const std::string& check) const;
  /// Throws CompareError for an unknown check name (listing the known ones).
  void set(const std::string& check, CheckLevel level);
  /// Applies a comma-separated list of names to one level (e.g. from --require).
  void set_list(const std::string& names, CheckLevel level, const std::string& flag);

 private:
  std::map<std::string, CheckLevel> levels_;
};

struct Check {
  std::string name;
  CheckLevel level = CheckLevel::kRequired;
  CheckOutcome outcome = CheckOutcome::kPass;
  boost::json::value arm_value;       ///< the value in the arm's record (null when missing)
  boost::json::value baseline_value;  ///< the value in the baseline's record
  std::string note;                   ///< why it is unresolved (from the records), else ""
};

/// Runs every check of the catalog (ignored ones included, marked kIgnored) on a pair. Each
/// side is one run or the repetitions of one cell: a side's value is the value its runs share,
/// or, when repetitions differ by design (a ladder sends new prompts each time), the list of
/// their values in repetition order; a value missing from any repetition leaves it unresolved.
std::vector<Check> run_checks(const std::vector<const RunRecord*>& arm,
                              const std::vector<const RunRecord*>& baseline, const Policy& policy);

/// A JSON value in canonical compact form (object keys sorted, recursively), for comparing
/// values whatever the key order of the file they came from.
std::string canonical_text(const boost::json::value& v);

}  // namespace dyno::compare
