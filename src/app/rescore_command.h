// `dyno rescore RUN`: a finished record's kept outputs judged again into a new derived record
// (docs/record.md "Derived records", docs/metrics.md "Re-scoring").
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "record/rescore.h"

namespace CLI {
class App;
}

namespace dyno::app {

struct RescoreCommandOptions {
  std::string run;                    ///< a run id, a unique prefix of one, or a run directory
  std::optional<std::string> scorer;  ///< a name or a scorer object (JSON); none: the requests'
  std::string runs_root = "runs";
  std::optional<std::string> label;
  bool json = false;
  std::string sign_key;  ///< --sign-key: the derived record signed (docs/record.md "Signatures")
};

/// Adds `dyno rescore`'s argument and options to `cmd`.
void add_rescore_options(CLI::App& cmd, RescoreCommandOptions& options);

/// The before/after a person reads: scored, correct and accuracy of the source and of the
/// derived record, how many verdicts changed, the new run id and its directory.
std::string render_rescore(const record::RescoreOutcome& outcome);

/// The same as JSON (`--json`): run_id, record_dir, source_run_id, derived_from, before,
/// after, scored, changed.
boost::json::object rescore_to_json(const record::RescoreOutcome& outcome);

/// Re-scores the run, indexes the derived record (a warning on `err` when that fails) and
/// prints the before/after on `out`. Throws dyno::Error (exit 2 for an unknown scorer or a
/// record that cannot be re-scored).
int rescore_command(const RescoreCommandOptions& options, std::ostream& out, std::ostream& err);

}  // namespace dyno::app
