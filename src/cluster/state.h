// A submitted campaign on disk: <runs-root>/cluster/<campaign_id>/ holds a copy of the plan,
// one batch script per cell (cells/<cell>.sbatch), the jobs' logs (logs/) and state.json:
// which scheduler, and each cell's attempts with their job ids. state.json is rewritten
// atomically after every change (a reader never sees half of it).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cluster/plan.h"

namespace dyno::cluster {

struct Attempt {
  std::string job_id;            ///< Slurm's job id, or "local-<n>"
  std::string submitted_at;      ///< ISO 8601 UTC
  std::filesystem::path log;     ///< the job's stdout and stderr
  std::optional<int> exit_code;  ///< local: the script's exit code once it ended
};

struct CellState {
  std::string id;     ///< "c01"
  std::string name;   ///< "<arm>/<model>/<protocol>"
  std::string kind;   ///< the dyno command: run, sweep, ...
  std::string label;  ///< the --label its records carry (unique to this campaign and cell)
  std::uint32_t records_needed = 1;  ///< run: one record per repetition; protocols: one file
  std::filesystem::path script;
  std::vector<Attempt> attempts;
};

struct CampaignState {
  std::string campaign_id;
  std::string plan_name;
  std::filesystem::path plan_file;  ///< the plan as given (a copy is plan.toml in dir)
  std::string plan_sha256;
  std::string scheduler;  ///< slurm | local
  std::filesystem::path runs_root;
  std::filesystem::path dir;  ///< <runs-root>/cluster/<campaign_id>
  std::string created_at;
  std::vector<CellState> cells;
};

/// <runs-root>/cluster.
std::filesystem::path cluster_dir(const std::filesystem::path& runs_root);

/// Writes dir/state.json atomically.
void save_state(const CampaignState& state);

/// Reads a campaign's state: `id` is a campaign id under <runs-root>/cluster or the path of a
/// campaign directory. Throws PlanError (exit 2) naming what is missing or malformed.
CampaignState load_state(const std::filesystem::path& runs_root, const std::string& id);

}  // namespace dyno::cluster
