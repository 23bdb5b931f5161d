// `dyno runs merge RUN…`: the records of the shards of one run (`dyno run --shard K/N`, one
// per client host) made into one run record: every trace on one time base, every figure
// recomputed by the code a run uses (docs/scale.md, "Load from several client hosts").
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace dyno::app {

struct MergeOptions {
  std::vector<std::string> runs;  ///< run ids, unique prefixes or run directories
  std::string runs_root = "runs";
  std::optional<std::string> label;  ///< default: the shards' label + "-merged", or "merged"
  double max_clock_offset_ms = 5.0;  ///< refuse shards whose measured starts spread wider
  /// With measured offsets: refuse shards whose uncertainty or drift exceeds this…
  double max_clock_uncertainty_ms = 1.0;
  bool accept_clock_uncertainty = false;  ///< …unless told to, marking the merged record
  std::string clock_method = "auto";      ///< auto | measured_offset | wall_clock
  std::optional<std::string> index;
  bool json = false;
  std::string sign_key;  ///< --sign-key: the merged record signed (docs/record.md "Signatures")
};

/// Merges the shard records into a new record under the runs root and indexes it; prints the
/// new run id (or, with json, {run_id, dir, merged_from}). Throws UsageError (exit 2) naming
/// the problem: a run that is not finished or fails verification, a record without `shard`,
/// shards of different runs (a parameter other than the shard differs), a shard missing or
/// given twice, a clock anchor missing, measured starts further apart than
/// max_clock_offset_ms, or (unless accept_clock_uncertainty) a measured clock offset less
/// certain, or drifting more, than max_clock_uncertainty_ms.
int merge_command(const MergeOptions& options, std::ostream& out, std::ostream& err);

/// Adds `merge` to `runs`, the `dyno runs` subcommand (beside RunsCli's).
class RunsMergeCli {
 public:
  explicit RunsMergeCli(CLI::App& runs);
  bool parsed() const;
  int execute(std::ostream& out, std::ostream& err) const { return merge_command(o_, out, err); }

 private:
  MergeOptions o_;
  CLI::App* merge_ = nullptr;
};

}  // namespace dyno::app
