#include "app/campaign_command.h"

#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <map>

#include "app/console.h"
#include "app/exit_codes.h"
#include "cluster/campaign.h"
#include "cluster/command.h"
#include "json/json_text.h"

namespace dyno::app {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

/// The dyno the cells run: the plan's `dyno`, else this binary.
std::string dyno_binary(const cluster::PlanFile& plan) {
  if (plan.dyno) return *plan.dyno;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("dyno") : self.string();
}

fs::path runs_root_of(const CampaignOptions& o, const cluster::PlanFile* plan) {
  if (!o.runs_root.empty()) return o.runs_root;
  if (plan != nullptr && plan->runs_root) return *plan->runs_root;
  return "runs";
}

int plan_check(const CampaignOptions& o, std::ostream& out) {
  const cluster::PlanFile plan = cluster::load_plan_file(o.plan);
  const auto cells = plan.cells();
  cluster::CampaignState preview;
  preview.runs_root = fs::absolute(runs_root_of(o, &plan)).lexically_normal();
  const std::string dyno = dyno_binary(plan);
  cluster::check_script_values(plan, preview.runs_root, dyno);
  json::array rows;
  for (const auto& c : cells) {
    const auto commands = cluster::cell_commands(plan, c, preview, "<label>", dyno);
    rows.push_back(json::object{{"cell", c.id},
                                {"name", c.name},
                                {"protocol", c.protocol->kind},
                                {"engine", c.arm->engine.string()},
                                {"model", c.model->model},
                                {"resources", cluster::resources_text(c.resources)},
                                {"commands", commands.size()},
                                {"command", cluster::shell_line(commands.front())}});
  }
  if (o.json) {
    out << json_text::pretty(json::object{
        {"plan", plan.file.string()}, {"name", plan.name}, {"cells", std::move(rows)}});
    return kExitOk;
  }
  out << "plan " << terminal_text(plan.file.string()) << " · " << plan.name << " · "
      << plan.arms.size() << " arm(s) x " << plan.models.size() << " model(s) x "
      << plan.protocols.size() << " protocol(s) = " << cells.size() << " cell(s)";
  if (plan.repetitions) out << " · repetitions " << *plan.repetitions;
  out << "\n";
  for (const auto& rv : rows) {
    const auto& r = rv.as_object();
    out << "  " << std::string(r.at("cell").as_string()) << "  "
        << terminal_text(std::string(r.at("name").as_string())) << "  ["
        << std::string(r.at("resources").as_string()) << "]\n      "
        << terminal_text(std::string(r.at("command").as_string()));
    if (r.at("commands").to_number<std::int64_t>() > 1) {
      out << "   (x" << r.at("commands").to_number<std::int64_t>() << ")";
    }
    out << "\n";
  }
  return kExitOk;
}

json::object status_json(const cluster::CellState& c, const cluster::CellStatus& s) {
  json::array tail;
  for (const auto& l : s.log_tail) tail.push_back(json::string(l));
  json::array records;
  for (const auto& r : s.records) records.push_back(json::string(r));
  return json::object{{"cell", c.id},
                      {"name", c.name},
                      {"state", s.state},
                      {"reason", s.reason},
                      {"job_id", s.job_id ? json::value(*s.job_id) : json::value(nullptr)},
                      {"attempts", c.attempts.size()},
                      {"log", s.log ? json::value(s.log->string()) : json::value(nullptr)},
                      {"log_tail", std::move(tail)},
                      {"records", std::move(records)}};
}

/// Prints every cell's status; returns 3 when a cell failed or was cancelled, else 0.
int print_status(const cluster::CampaignState& state, bool as_json, std::ostream& out) {
  std::map<std::string, int> counts;
  json::array cells;
  std::vector<cluster::CellStatus> statuses;
  for (const auto& c : state.cells) {
    statuses.push_back(cluster::cell_status(state, c));
    ++counts[statuses.back().state];
    cells.push_back(status_json(c, statuses.back()));
  }
  const bool bad = counts.count("failed") + counts.count("cancelled") > 0;
  if (as_json) {
    json::object n;
    for (const auto& [k, v] : counts) n[k] = v;
    out << json_text::pretty(json::object{{"campaign_id", state.campaign_id},
                                          {"scheduler", state.scheduler},
                                          {"dir", state.dir.string()},
                                          {"runs_root", state.runs_root.string()},
                                          {"counts", std::move(n)},
                                          {"cells", std::move(cells)}});
    return bad ? kExitRunFailed : kExitOk;
  }
  out << "campaign " << state.campaign_id << " · " << state.scheduler << " · " << state.cells.size()
      << " cell(s):";
  for (const auto& [k, v] : counts) out << " " << v << " " << k;
  out << "\n";
  for (std::size_t i = 0; i < state.cells.size(); ++i) {
    const auto& c = state.cells[i];
    const auto& s = statuses[i];
    out << "  " << c.id << "  " << terminal_text(c.name) << "  " << s.state;
    if (s.job_id) out << "  job " << terminal_text(*s.job_id);
    if (!s.reason.empty()) out << "  " << terminal_text(s.reason, true);
    out << "\n";
    for (const auto& r : s.records) out << "      record " << terminal_text(r) << "\n";
    if (!s.log_tail.empty() && s.log) {
      out << "      log " << terminal_text(s.log->string()) << ", last lines:\n";
      for (const auto& l : s.log_tail) out << "      | " << terminal_text(l, true) << "\n";
    }
  }
  return bad ? kExitRunFailed : kExitOk;
}

/// Submits (slurm) or runs here (local) the given cells of `state`.
void launch_cells(cluster::CampaignState& state, const std::vector<std::size_t>& which,
                  std::ostream& out, std::ostream& err, const std::atomic<bool>& stop) {
  for (std::size_t i : which) {
    cluster::CellState& cell = state.cells[i];
    if (state.scheduler == "slurm") {
      cluster::submit_slurm(state, cell);
      out << "  " << cell.id << "  " << terminal_text(cell.name) << "  submitted: job "
          << cell.attempts.back().job_id << "\n";
      continue;
    }
    if (stop.load()) {
      err << "dyno campaign: interrupted; the cells not run yet stay missing (dyno campaign "
             "resume "
          << state.campaign_id << ")\n";
      return;
    }
    err << "dyno campaign: cell " << cell.id << " (" << terminal_text(cell.name)
        << ") running here\n";
    const int code = cluster::run_local(state, cell);
    out << "  " << cell.id << "  " << terminal_text(cell.name) << "  exit " << code << "  log "
        << terminal_text(cell.attempts.back().log.string()) << "\n";
  }
}

int submit(const CampaignOptions& o, std::ostream& out, std::ostream& err,
           const std::atomic<bool>& stop) {
  const cluster::PlanFile plan = cluster::load_plan_file(o.plan);
  cluster::CampaignState state =
      cluster::prepare_campaign(plan, runs_root_of(o, &plan), o.scheduler, dyno_binary(plan));
  out << "campaign " << state.campaign_id << " · " << state.cells.size() << " cell(s) · "
      << o.scheduler << " · " << terminal_text(state.dir.string()) << "\n";
  if (o.dry_run) {
    for (const auto& c : state.cells) {
      out << "  " << c.id << "  " << terminal_text(c.name) << "  would "
          << (o.scheduler == "slurm" ? "run: sbatch --parsable " : "run here: bash ")
          << terminal_text(c.script.string()) << "\n";
    }
    out << "dry run: nothing submitted; `dyno campaign resume " << state.campaign_id
        << " --runs-root " << terminal_text(state.runs_root.string()) << "` submits it\n";
    return kExitOk;
  }
  std::vector<std::size_t> all(state.cells.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  launch_cells(state, all, out, err, stop);
  if (o.scheduler == "local") return print_status(state, false, out);
  return kExitOk;
}

int resume(const CampaignOptions& o, std::ostream& out, std::ostream& err,
           const std::atomic<bool>& stop) {
  cluster::CampaignState state = cluster::load_state(runs_root_of(o, nullptr), o.id);
  std::vector<std::size_t> which;
  for (std::size_t i = 0; i < state.cells.size(); ++i) {
    const cluster::CellStatus s = cluster::cell_status(state, state.cells[i]);
    if (cluster::needs_submit(s)) which.push_back(i);
  }
  out << "campaign " << state.campaign_id << " · " << which.size() << " of " << state.cells.size()
      << " cell(s) to " << (state.scheduler == "slurm" ? "resubmit" : "run") << "\n";
  launch_cells(state, which, out, err, stop);
  if (state.scheduler == "local") return print_status(state, false, out);
  return kExitOk;
}

int cancel(const CampaignOptions& o, std::ostream& out) {
  const cluster::CampaignState state = cluster::load_state(runs_root_of(o, nullptr), o.id);
  if (state.scheduler != "slurm") {
    out << "campaign " << state.campaign_id
        << " runs here (local): nothing is queued; stop it with Ctrl-C where it runs\n";
    return kExitOk;
  }
  std::vector<std::string> jobs;
  for (const auto& c : state.cells) {
    const cluster::CellStatus s = cluster::cell_status(state, c);
    if ((s.state == "pending" || s.state == "running") && s.job_id) jobs.push_back(*s.job_id);
  }
  cluster::cancel_slurm(jobs);
  out << "campaign " << state.campaign_id << " · cancelled " << jobs.size() << " job(s)";
  for (const auto& j : jobs) out << " " << j;
  out << "\n";
  return kExitOk;
}

}  // namespace

PlanCli::PlanCli(CLI::App& plan) {
  plan.require_subcommand(1);
  check_ = plan.add_subcommand(
      "check", "read a campaign plan (TOML), check it and its engine spec files, print its cells");
  check_->add_option("plan", o_.plan, "the plan file")->required();
  check_->add_option("--runs-root", o_.runs_root, "the runs root the commands would be given");
  check_->add_flag("--json", o_.json, "print the cells as JSON");
}

int PlanCli::execute(std::ostream& out) const { return plan_check(o_, out); }

CampaignCli::CampaignCli(CLI::App& campaign) {
  campaign.require_subcommand(1);
  submit_ = campaign.add_subcommand(
      "submit", "write one batch script per cell and submit them (slurm) or run them here (local)");
  submit_->add_option("plan", o_.plan, "the plan file")->required();
  submit_
      ->add_option("--scheduler", o_.scheduler,
                   "slurm: sbatch every cell; local: run the cells here one after another")
      ->check(CLI::IsMember({"slurm", "local"}))
      ->capture_default_str();
  submit_->add_option("--runs-root", o_.runs_root,
                      "the run store every cell writes to (on Slurm: a directory every node "
                      "shares); default: the plan's runs_root, else runs");
  submit_->add_flag("--dry-run", o_.dry_run,
                    "write the scripts and print what would be submitted; submit nothing");
  const auto add_id = [this](CLI::App* cmd) {
    cmd->add_option("id", o_.id, "the campaign id (or its directory)")->required();
    cmd->add_option("--runs-root", o_.runs_root, "where it was submitted (default: runs)");
  };
  status_ = campaign.add_subcommand(
      "status", "each cell: done (its records verify), pending, running, failed, cancelled");
  add_id(status_);
  status_->add_flag("--json", o_.json, "print the statuses as JSON");
  resume_ = campaign.add_subcommand("resume",
                                    "submit again the cells that failed, were cancelled or "
                                    "were never submitted (done, pending and running stay)");
  add_id(resume_);
  cancel_ = campaign.add_subcommand("cancel", "scancel the campaign's pending and running jobs");
  add_id(cancel_);
}

bool CampaignCli::runs_cells() const { return submit_->parsed() || resume_->parsed(); }

int CampaignCli::execute(std::ostream& out, std::ostream& err, const std::atomic<bool>& stop) {
  if (submit_->parsed()) return submit(o_, out, err, stop);
  if (resume_->parsed()) return resume(o_, out, err, stop);
  if (cancel_->parsed()) return cancel(o_, out);
  const cluster::CampaignState state = cluster::load_state(runs_root_of(o_, nullptr), o_.id);
  return print_status(state, o_.json, out);
}

}  // namespace dyno::app
