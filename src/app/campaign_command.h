// `dyno plan check` and `dyno campaign submit|status|resume|cancel`: campaigns of a plan's
// cells on Slurm or here (docs/scale.md "Campaigns on Slurm"); the work is in src/cluster/.
#pragma once

#include <atomic>
#include <ostream>
#include <string>

namespace CLI {
class App;
}

namespace dyno::app {

struct CampaignOptions {
  std::string plan;
  std::string id;
  std::string scheduler = "local";
  std::string runs_root;  ///< "" = the plan's runs_root, else "runs"
  bool dry_run = false;
  bool json = false;
};

/// Adds `check` to `plan`, the `dyno plan` subcommand, and runs it.
class PlanCli {
 public:
  explicit PlanCli(CLI::App& plan);
  PlanCli(const PlanCli&) = delete;
  PlanCli& operator=(const PlanCli&) = delete;

  /// Checks the plan and prints its cells; returns the exit code.
  int execute(std::ostream& out) const;

 private:
  CampaignOptions o_;
  CLI::App* check_ = nullptr;
};

/// Adds `submit`, `status`, `resume` and `cancel` to `campaign`, the `dyno campaign`
/// subcommand, and runs the one chosen.
class CampaignCli {
 public:
  explicit CampaignCli(CLI::App& campaign);
  CampaignCli(const CampaignCli&) = delete;
  CampaignCli& operator=(const CampaignCli&) = delete;

  /// Runs the chosen subcommand; returns the exit code. `stop`: set by SIGINT/SIGTERM (a local
  /// campaign starts no further cell once it is set).
  int execute(std::ostream& out, std::ostream& err, const std::atomic<bool>& stop);
  /// True for the subcommands that run cells here (they answer SIGINT/SIGTERM).
  bool runs_cells() const;

 private:
  CampaignOptions o_;
  CLI::App* submit_ = nullptr;
  CLI::App* status_ = nullptr;
  CLI::App* resume_ = nullptr;
  CLI::App* cancel_ = nullptr;
};

}  // namespace dyno::app
