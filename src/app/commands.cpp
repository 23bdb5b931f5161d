#include "app/commands.h"

#include <CLI/CLI.hpp>
#include <atomic>

#include "app/campaign_command.h"
#include "app/clock_command.h"
#include "app/export_command.h"
#include "app/measure_flags.h"
#include "app/protocol_commands.h"
#include "app/quick_command.h"
#include "app/report_command.h"
#include "app/rescore_command.h"
#include "app/results_import_command.h"
#include "app/run_command.h"
#include "app/runs_command.h"
#include "app/runs_merge.h"
#include "app/signals.h"
#include "app/sim_command.h"
#include "app/sim_tools.h"
#include "app/stream_command.h"
#include "app/stream_import_command.h"

namespace dyno::app {

namespace {

// ---- How each command runs, given its options ------------------------------------------

int run_run(const RunOptions& o, CommandIo) { return run_command(start_measuring(o)); }

int run_doctor(const telemetry::TelemetryOptions& o, CommandIo) { return doctor_command(o); }

int run_stream_make(const StreamMakeOptions& o, CommandIo io) {
  return stream_make_command(o, io.out);
}

int run_stream_import(const StreamImportOptions& o, CommandIo) { return stream_import_command(o); }

int run_rescore(const RescoreCommandOptions& o, CommandIo io) {
  return rescore_command(o, io.out, io.err);
}

int run_results_import(const ResultsImportOptions& o, CommandIo io) {
  return results_import_command(o, io.out, io.err);
}

int run_quick(const QuickOptions& o, CommandIo io) { return quick_command(o, io.out, io.err); }

int run_export(const ExportCommandOptions& o, CommandIo io) { return export_command(o, io.out); }

// ---- Commands whose subcommands share their options -------------------------------------

/// `dyno sim` serves; `dyno sim fit|predict` calibrate (sim_tools.h).
CommandRun add_sim(CLI::App& cmd) {
  auto serve = std::make_shared<SimOptions>();
  add_sim_options(cmd, *serve);
  auto tools = std::make_shared<SimTools>(cmd);
  return [serve, tools](CommandIo io) {
    return tools->parsed() ? tools->execute(io.out) : sim_command(*serve);
  };
}

/// `dyno stream make|import`: a table of its own.
std::span<const Command> stream_commands() {
  static constexpr Command kStream[] = {
      {.name = "make",
       .describe = "write a stream whose prompts have exact token lengths (measured by the "
                   "target's /tokenize)",
       .add = with_options<StreamMakeOptions, add_stream_make_options, run_stream_make>},
      {.name = "import",
       .describe = "turn a data set (ShareGPT, a CSV/JSONL table, image questions, agent "
                   "trajectories) or a trace (Mooncake, Azure, BurstGPT) into a stream",
       .add = with_options<StreamImportOptions, add_stream_import_options, run_stream_import>},
  };
  return kStream;
}

CommandRun add_stream(CLI::App& cmd) {
  cmd.require_subcommand(1);
  auto added = std::make_shared<std::vector<AddedCommand>>(add_commands(cmd, stream_commands()));
  return [added](CommandIo io) { return run_chosen(*added, io).value_or(kExitUsage); };
}

/// `dyno runs list|show|diff|verify|rm|reindex|publish` (runs_command.h) and `runs merge`
/// (runs_merge.h).
CommandRun add_runs(CLI::App& cmd) {
  auto runs = std::make_shared<RunsCli>(cmd);
  auto merge = std::make_shared<RunsMergeCli>(cmd);
  return [runs, merge](CommandIo io) {
    return merge->parsed() ? merge->execute(io.out, io.err) : runs->execute(io.out, io.err);
  };
}

CommandRun add_compare(CLI::App& cmd) {
  auto board = std::make_shared<BoardCli>(cmd, BoardCli::Output::kConsole);
  return [board](CommandIo) { return board->run(); };
}

CommandRun add_report(CLI::App& cmd) {
  auto board = std::make_shared<BoardCli>(cmd, BoardCli::Output::kDirectory);
  return [board](CommandIo) { return board->run(); };
}

CommandRun add_plan(CLI::App& cmd) {
  auto plan = std::make_shared<PlanCli>(cmd);
  return [plan](CommandIo io) { return plan->execute(io.out); };
}

CommandRun add_campaign(CLI::App& cmd) {
  auto campaign = std::make_shared<CampaignCli>(cmd);
  return [campaign](CommandIo io) {
    // A local campaign runs cells here: an interrupt lets the running cell close its record
    // and starts no further cell.
    static const std::atomic<bool> never{false};
    const std::atomic<bool>& stop = campaign->runs_cells() ? install_stop_signals() : never;
    return campaign->execute(io.out, io.err, stop);
  };
}

CommandRun add_clock(CLI::App& cmd) {
  auto clock = std::make_shared<ClockCli>(cmd);
  return [clock](CommandIo io) { return clock->execute(io.out); };
}

/// The table itself: `run`, the protocols (protocol_commands.h), then the rest.
std::vector<Command> make_table() {
  std::vector<Command> table{
      {.name = "run",
       .describe = "benchmark an OpenAI-compatible engine (default: the embedded simulated "
                   "engine) and write a run record",
       .add = with_options<RunOptions, add_run_options, run_run>},
  };
  for (const Command& p : protocols()) table.push_back(p);
  const Command rest[] = {
      {.name = "quick",
       .describe = "find a server on this machine (or --url), measure one user and a short "
                   "capacity search in about a minute, and answer in plain words",
       .add = with_options<QuickOptions, add_quick_options, run_quick>},
      {.name = "doctor",
       .describe = "show what telemetry this host offers, and why a source is missing",
       .add = with_options<telemetry::TelemetryOptions, add_telemetry_flags, run_doctor>},
      {.name = "sim", .describe = "serve the simulated OpenAI-compatible engine", .add = add_sim},
      {.name = "stream", .describe = "request stream tools", .add = add_stream},
      {.name = "rescore",
       .describe = "judge a finished run's kept outputs again (a scorer given, or the requests' "
                   "own) into a new derived record; the run itself is not changed",
       .add = with_options<RescoreCommandOptions, add_rescore_options, run_rescore>},
      {.name = "import",
       .describe = "bring other tools' saved results (vLLM, SGLang, AIPerf, llama-bench, "
                   "GuideLLM, ledgers) into the run store as records, labelled with their "
                   "source; not `dyno stream import`, which makes request streams",
       .add = with_options<ResultsImportOptions, add_results_import_options, run_results_import>},
      {.name = "export",
       .describe = "write finished runs in another tool's format: vllm-bench (vLLM's result "
                   "JSON, so vLLM's tooling plots them) or csv (one row per run); the records "
                   "are not changed",
       .add = with_options<ExportCommandOptions, add_export_options, run_export>},
      {.name = "runs",
       .describe = "the run store: list, show, diff, verify, rm, reindex, publish, merge",
       .add = add_runs},
      {.name = "compare",
       .describe = "compare run records arm against arm: paired cells, fairness checks, deltas "
                   "with intervals (console, or --json)",
       .add = add_compare},
      {.name = "report",
       .describe = "write a comparison board directory: README.md, report.html, board.json, "
                   "board.csv, charts (SVG and PNG), SHA256SUMS",
       .add = add_report},
      {.name = "plan", .describe = "campaign plan files (docs/scale.md)", .add = add_plan},
      {.name = "campaign",
       .describe = "a plan's cells (arms x models x protocols) as jobs on Slurm or here",
       .add = add_campaign},
      {.name = "clock",
       .describe = "clock tools for runs on several client hosts",
       .add = add_clock},
  };
  table.insert(table.end(), std::begin(rest), std::end(rest));
  return table;
}

}  // namespace

std::span<const Command> commands() {
  static const std::vector<Command> table = make_table();
  return table;
}

std::vector<AddedCommand> add_commands(CLI::App& app, std::span<const Command> table) {
  std::vector<AddedCommand> added;
  added.reserve(table.size());
  for (const Command& c : table) {
    CLI::App* cmd = app.add_subcommand(std::string(c.name), std::string(c.describe));
    added.push_back({&c, cmd, c.add(*cmd)});
  }
  return added;
}

std::optional<int> run_chosen(const std::vector<AddedCommand>& added, CommandIo io) {
  for (const AddedCommand& a : added) {
    if (a.cmd->parsed()) return a.run(io);
  }
  return std::nullopt;
}

}  // namespace dyno::app
