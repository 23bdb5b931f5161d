// A campaign of a plan's cells on a scheduler: the batch script of each cell (the ordinary
// dyno command, run on the node that measures), submission (Slurm's sbatch, or here one cell
// after another), each cell's status from the scheduler and from the run store, resubmission
// of the cells not done, cancellation. A cell is done only when the records it was to write
// exist and verify (record/run_verify.h, record/campaign_file.h) with status ok.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cluster/plan.h"
#include "cluster/state.h"

namespace dyno::cluster {

/// The dyno command lines a cell runs (one per record for `run` with repetitions).
std::vector<std::vector<std::string>> cell_commands(const PlanFile& plan, const Cell& cell,
                                                    const CampaignState& state,
                                                    const std::string& label,
                                                    const std::string& dyno);

/// Throws PlanError (exit 2) naming `what` and the value (escaped) when `value` holds a control
/// character (C0 or DEL): a value that goes into a batch script must not split its line.
void refuse_control_characters(const std::string& what, const std::string& value);

/// Every value the plan's scripts would hold — the plan file's path, the runs root (absolute),
/// the dyno binary, each cell's command line — checked with refuse_control_characters.
void check_script_values(const PlanFile& plan, const std::filesystem::path& runs_root,
                         const std::string& dyno);

/// The cell's batch script: #SBATCH lines from its resources, then its commands; every value
/// shell-quoted (sbatch reads #SBATCH values with the same quotes). Throws PlanError when a
/// value holds a control character.
std::string batch_script(const PlanFile& plan, const Cell& cell, const CampaignState& state,
                         const CellState& cs, const std::string& dyno);

/// Makes <runs-root>/cluster/<id>/ with plan.toml, one script per cell and state.json (no
/// attempt yet). `dyno`: the binary the scripts run (the plan's `dyno`, else this one).
CampaignState prepare_campaign(const PlanFile& plan, const std::filesystem::path& runs_root,
                               const std::string& scheduler, const std::string& dyno);

/// Submits one cell with `sbatch --parsable`; records the attempt and saves the state.
void submit_slurm(CampaignState& state, CellState& cell);

/// Runs one cell's script here (bash), its output in logs/; records the attempt before and its
/// exit code after, saving the state each time. Returns the exit code.
int run_local(CampaignState& state, CellState& cell);

/// What the scheduler says of a job; nullopt when it no longer knows it.
struct JobInfo {
  std::string state;      ///< Slurm's: PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, ...
  std::string reason;     ///< a pending job's reason, or Slurm's reason for its end
  std::string exit_code;  ///< "code:signal" when Slurm gives it
  std::string source;     ///< squeue | scontrol | sacct
};
std::optional<JobInfo> query_slurm_job(const std::string& job_id);

/// `scancel` of these jobs; throws SchedulerError when scancel fails.
void cancel_slurm(const std::vector<std::string>& job_ids);

struct CellStatus {
  std::string state;   ///< done | pending | running | failed | cancelled | missing
  std::string reason;  ///< why (empty for done)
  std::optional<std::string> job_id;
  std::optional<std::filesystem::path> log;
  std::vector<std::string> log_tail;  ///< last lines of a failed job's log
  std::vector<std::string> records;   ///< run ids (or the protocol's campaign file) found
};

/// The cell's status: done when its records verify; otherwise from its last attempt (the
/// scheduler's view of the job, and the record it left, if any).
CellStatus cell_status(const CampaignState& state, const CellState& cell);

/// The state a cell needs to be (re)submitted in: failed, cancelled or missing.
bool needs_submit(const CellStatus& status);

}  // namespace dyno::cluster
