#include "cluster/campaign.h"

#include <chrono>
#include <fstream>
#include <sstream>

#include "cluster/command.h"
#include "digest/digest.h"
#include "record/run_id.h"
#include "record/run_writer.h"
#include "scrub/terminal_text.h"

namespace dyno::cluster {

namespace fs = std::filesystem;

namespace {

std::string now_text() { return record::iso8601_utc(std::chrono::system_clock::now()); }

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// One value of `scontrol show job -o`'s line: KEY=value up to the next space.
std::string field(const std::string& line, const std::string& key) {
  const std::string needle = key + "=";
  std::size_t pos = 0;
  while ((pos = line.find(needle, pos)) != std::string::npos) {
    if (pos == 0 || line[pos - 1] == ' ') {
      const std::size_t start = pos + needle.size();
      const std::size_t end = line.find_first_of(" \n", start);
      return line.substr(start, end == std::string::npos ? std::string::npos : end - start);
    }
    pos += needle.size();
  }
  return "";
}

std::string first_line(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

/// A directory for a Slurm filename pattern: a '%' of the path itself is written "%%".
std::string slurm_literal(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == '%') out += '%';
    out += c;
  }
  return out;
}

}  // namespace

void refuse_control_characters(const std::string& what, const std::string& value) {
  for (const unsigned char c : value) {
    if (c < 0x20 || c == 0x7f) {
      throw PlanError(what + " '" + scrub::terminal_text(value, true) +
                      "' holds a control character: it would go into a batch script, where a "
                      "line break starts a line of its own; rename it");
    }
  }
}

void check_script_values(const PlanFile& plan, const fs::path& runs_root, const std::string& dyno) {
  refuse_control_characters("the plan file's path", plan.file.string());
  refuse_control_characters("the runs root", runs_root.string());
  refuse_control_characters("the dyno binary", dyno);
  CampaignState preview;
  preview.runs_root = runs_root;
  for (const Cell& cell : plan.cells()) {
    for (const auto& argv : cell_commands(plan, cell, preview, "label", dyno)) {
      for (std::size_t i = 1; i < argv.size(); ++i) {
        const bool value = argv[i - 1].rfind("--", 0) == 0 && argv[i].rfind("--", 0) != 0;
        refuse_control_characters(
            "cell " + cell.id + "'s " + (value ? argv[i - 1] + " value" : "argument"), argv[i]);
      }
    }
  }
}

std::vector<std::vector<std::string>> cell_commands(const PlanFile& plan, const Cell& cell,
                                                    const CampaignState& state,
                                                    const std::string& label,
                                                    const std::string& dyno) {
  std::vector<std::string> argv = {dyno,          cell.protocol->kind,
                                   "--engine",    cell.arm->engine.string(),
                                   "--model",     cell.model->model,
                                   "--runs-root", state.runs_root.string(),
                                   "--label",     label,
                                   "--quiet"};
  if (cell.model->model_file) {
    argv.insert(argv.end(), {"--model-file", *cell.model->model_file});
  }
  if (cell.model->model_revision) {
    argv.insert(argv.end(), {"--model-revision", *cell.model->model_revision});
  }
  const bool run = cell.protocol->kind == "run";
  if (!run && plan.repetitions) {
    // A capacity search repeats its boundary cells; a protocol repeats every cell.
    argv.insert(argv.end(), {cell.protocol->kind == "capacity" ? "--repeat-boundary" : "--repeat",
                             std::to_string(*plan.repetitions)});
  }
  // A capacity search resubmitted (`dyno campaign resume`) takes up the search its cell left.
  if (cell.protocol->kind == "capacity") argv.insert(argv.end(), {"--resume", "auto"});
  for (const auto& [flag, value] : cell.protocol->flags) {
    argv.push_back(flag);
    if (value) argv.push_back(*value);
  }
  const std::uint32_t times = run ? plan.repetitions.value_or(1) : 1;
  return std::vector<std::vector<std::string>>(times, argv);
}

std::string batch_script(const PlanFile& plan, const Cell& cell, const CampaignState& state,
                         const CellState& cs, const std::string& dyno) {
  const Resources& r = cell.resources;
  const auto commands = cell_commands(plan, cell, state, cs.label, dyno);
  // Every value below is one line of the script or part of one: none may break it.
  refuse_control_characters("the plan file's path", plan.file.string());
  refuse_control_characters("the campaign directory", state.dir.string());
  for (const auto& argv : commands) {
    for (const auto& a : argv) refuse_control_characters("cell " + cell.id + "'s argument", a);
  }
  std::ostringstream s;
  s << "#!/bin/bash\n";
  s << "#SBATCH --job-name=dyno-" << state.campaign_id.substr(17, 6) << "-" << cell.id << "\n";
  // sbatch reads an #SBATCH value with the shell's quotes; '%' is its filename pattern.
  s << "#SBATCH --output="
    << shell_quote(slurm_literal((state.dir / "logs").string()) + "/" + cell.id + "-%j.out")
    << "\n";
  s << "#SBATCH --nodes=1\n#SBATCH --ntasks=1\n";
  if (r.partition) s << "#SBATCH --partition=" << *r.partition << "\n";
  if (r.gpus && *r.gpus > 0) {
    s << "#SBATCH --gres=gpu:" << (r.gpu_type ? *r.gpu_type + ":" : "") << *r.gpus << "\n";
  }
  if (r.constraint) s << "#SBATCH --constraint=" << *r.constraint << "\n";
  if (r.time_limit) s << "#SBATCH --time=" << *r.time_limit << "\n";
  if (r.cpus) s << "#SBATCH --cpus-per-task=" << *r.cpus << "\n";
  if (r.mem) s << "#SBATCH --mem=" << *r.mem << "\n";
  if (r.account) s << "#SBATCH --account=" << *r.account << "\n";
  if (r.qos) s << "#SBATCH --qos=" << *r.qos << "\n";
  s << "# dyno campaign " << state.campaign_id << ", cell " << cell.id << " (" << cell.name
    << "), plan " << shell_quote(plan.file.string()) << "\n";
  s << "# The records are written by the command below on the node that runs it: its host and\n"
       "# GPU identity are that node's. A cell is done when its records verify.\n";
  s << "set -u\n";
  s << "echo \"dyno campaign " << state.campaign_id << " cell " << cell.id << " (" << cell.name
    << "): host $(hostname) job ${SLURM_JOB_ID:-local} at $(date -u +%FT%TZ)\"\n";
  s << "cd " << shell_quote(plan.file.parent_path().string()) << " || exit 1\n";
  if (commands.size() == 1) {
    // exec: Slurm's SIGTERM (scancel, time limit) reaches dyno itself, which closes its record
    // as interrupted before the SIGKILL that follows KillWait seconds later.
    s << "exec " << shell_line(commands.front()) << "\n";
  } else {
    for (const auto& argv : commands) s << shell_line(argv) << " || exit $?\n";
  }
  return s.str();
}

CampaignState prepare_campaign(const PlanFile& plan, const fs::path& runs_root,
                               const std::string& scheduler, const std::string& dyno) {
  // Before anything is written: a value with a control character would break a script.
  check_script_values(plan, fs::absolute(runs_root).lexically_normal(), dyno);
  CampaignState state;
  state.campaign_id = record::make_run_id(std::chrono::system_clock::now(), plan.name);
  state.plan_name = plan.name;
  state.plan_file = plan.file;
  const std::string plan_text = read_all(plan.file);
  state.plan_sha256 = digest::sha256_hex(plan_text);
  state.scheduler = scheduler;
  state.runs_root = fs::absolute(runs_root).lexically_normal();
  state.dir = cluster_dir(state.runs_root) / state.campaign_id;
  state.created_at = now_text();
  fs::create_directories(state.dir / "cells");
  fs::create_directories(state.dir / "logs");
  record::write_file_atomic(state.dir / "plan.toml", plan_text);
  const std::string rnd = state.campaign_id.substr(17, 6);
  for (const Cell& cell : plan.cells()) {
    CellState cs;
    cs.id = cell.id;
    cs.name = cell.name;
    cs.kind = cell.protocol->kind;
    cs.label = record::sanitize_label(rnd + "-" + cell.id + "-" + cell.arm->name + "-" +
                                      cell.model->name + "-" + cell.protocol->name);
    cs.records_needed = cs.kind == "run" ? plan.repetitions.value_or(1) : 1;
    cs.script = state.dir / "cells" / (cell.id + ".sbatch");
    record::write_file_atomic(cs.script, batch_script(plan, cell, state, cs, dyno));
    fs::permissions(cs.script, fs::perms::owner_exec | fs::perms::group_exec,
                    fs::perm_options::add);
    state.cells.push_back(std::move(cs));
  }
  save_state(state);
  return state;
}

void submit_slurm(CampaignState& state, CellState& cell) {
  const CommandResult r = run_captured({"sbatch", "--parsable", cell.script.string()});
  const std::string out = first_line(r.out);
  const std::string job_id = out.substr(0, out.find(';'));  // "<id>[;<cluster>]"
  if (r.exit_code != 0 || job_id.empty() ||
      job_id.find_first_not_of("0123456789_") != std::string::npos) {
    throw SchedulerError("sbatch " + cell.script.string() + " (cell " + cell.id + "): " +
                         (r.exit_code == 127 ? "sbatch not found on PATH" : first_line(r.err)) +
                         " (exit " + std::to_string(r.exit_code) + ")");
  }
  Attempt a;
  a.job_id = job_id;
  a.submitted_at = now_text();
  a.log = state.dir / "logs" / (cell.id + "-" + job_id + ".out");
  cell.attempts.push_back(std::move(a));
  save_state(state);
}

int run_local(CampaignState& state, CellState& cell) {
  std::size_t n = 1;
  for (const CellState& c : state.cells) n += c.attempts.size();
  Attempt a;
  a.job_id = "local-" + std::to_string(n);
  a.submitted_at = now_text();
  a.log = state.dir / "logs" / (cell.id + "-" + a.job_id + ".out");
  cell.attempts.push_back(a);
  save_state(state);
  const int code = run_logged({"bash", cell.script.string()}, a.log);
  cell.attempts.back().exit_code = code;
  save_state(state);
  return code;
}

std::optional<JobInfo> query_slurm_job(const std::string& job_id) {
  // squeue knows pending and running jobs; scontrol also finished ones for MinJobAge
  // (300 s by default); sacct, when the cluster keeps accounting, knows them for good.
  const CommandResult q = run_captured({"squeue", "-h", "-j", job_id, "-o", "%T|%r"});
  if (q.exit_code == 127) {
    throw SchedulerError(
        "squeue is not on PATH: ask for a Slurm campaign's status where "
        "Slurm's commands are (a login node)");
  }
  if (q.exit_code == 0 && !first_line(q.out).empty()) {
    const std::string line = first_line(q.out);
    const std::size_t bar = line.find('|');
    return JobInfo{line.substr(0, bar), bar == std::string::npos ? "" : line.substr(bar + 1), "",
                   "squeue"};
  }
  const CommandResult s = run_captured({"scontrol", "show", "job", "-o", job_id});
  if (s.exit_code == 0 && !field(s.out, "JobState").empty()) {
    return JobInfo{field(s.out, "JobState"), field(s.out, "Reason"), field(s.out, "ExitCode"),
                   "scontrol"};
  }
  const CommandResult a =
      run_captured({"sacct", "-n", "-P", "-X", "-j", job_id, "-o", "State,ExitCode,Reason"});
  const std::string line = first_line(a.out);
  if (a.exit_code == 0 && !line.empty()) {
    std::vector<std::string> parts;
    std::stringstream ss(line);
    for (std::string p; std::getline(ss, p, '|');) parts.push_back(p);
    parts.resize(3);
    // "CANCELLED by 0" → CANCELLED
    return JobInfo{parts[0].substr(0, parts[0].find(' ')), parts[2], parts[1], "sacct"};
  }
  return std::nullopt;
}

void cancel_slurm(const std::vector<std::string>& job_ids) {
  if (job_ids.empty()) return;
  std::vector<std::string> argv = {"scancel"};
  argv.insert(argv.end(), job_ids.begin(), job_ids.end());
  const CommandResult r = run_captured(argv);
  if (r.exit_code != 0) {
    throw SchedulerError("scancel: " + first_line(r.err) + " (exit " + std::to_string(r.exit_code) +
                         ")");
  }
}

}  // namespace dyno::cluster
