#include "app/report_command.h"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "app/console.h"
#include "app/flag_values.h"
#include "app/index_flag.h"
#include "app/run_command.h"
#include "compare/board.h"
#include "compare/frontier.h"
#include "compare/index_select.h"
#include "compare/inputs.h"
#include "digest/digest.h"
#include "dyno/build_info.h"
#include "record/digest_cache.h"
#include "record/run_writer.h"
#include "report/board_charts.h"
#include "report/board_document.h"
#include "report/board_files.h"
#include "store/index_reader.h"

namespace dyno::app {

namespace fs = std::filesystem;

namespace {

void add_flags(CLI::App& cmd, ReportOptions& o) {
  cmd.add_option("--arm", o.arms,
                 "an arm: NAME=SELECTOR, where SELECTOR is a run id (or unique prefix), a run "
                 "directory, a campaign id or a query key=value[,key=value] (repeat --arm for "
                 "each arm; the same NAME twice unites selectors)")
      ->allow_extra_args(false);
  cmd.add_option("--spec", o.spec,
                 "board spec file (JSON): arms, explicit cells, model aliases, policy "
                 "(docs/compare.md)");
  cmd.add_option("--baseline", o.baseline,
                 "the arm every other arm is compared with "
                 "(default: the last arm)");
  cmd.add_option("--runs-root", o.runs_root,
                 "directory that holds the run records; with --index, the one runs root whose "
                 "rows are searched (when not given: every runs root the index holds)")
      ->capture_default_str();
  add_index_flag(cmd, o.index, "select runs through this run index in PostgreSQL",
                 "the manifests under --runs-root");
  cmd.add_option("--title", o.title, "the board's title (default: '<arms> vs <baseline>')");
  cmd.add_option("--model-alias", o.model_aliases,
                 "ID=NAME: pair runs of model ID under NAME (repeatable)")
      ->allow_extra_args(false);
  cmd.add_option("--require", o.require, "checks that must pass, e.g. gpu_uuid,dirty_sources");
  cmd.add_option("--report-only", o.report_only,
                 "checks that are shown but do not stop a comparison, e.g. driver");
  cmd.add_option("--ignore", o.ignore, "checks that are not made");
  cmd.add_flag("--allow-unresolved", o.allow_unresolved,
               "render although a required identity is missing from some record (the board "
               "says so at the top)");
  cmd.add_option("--expect-spec-sha256", o.expect_spec_sha256,
                 "refuse to render unless the --spec file's SHA-256 is HEX (64 hex digits)");
  cmd.add_option("--expect-policy", o.expect_policy,
                 "when the runs do not match the spec's expectations: refuse (exit 2) or report "
                 "(status expectations_failed, one finding per mismatch); default: the spec's, "
                 "else refuse");
  cmd.add_option("--resamples", o.resamples, "bootstrap resamples per interval")
      ->transform(flags::integer(100, 1'000'000))
      ->capture_default_str();
  cmd.add_option("--confidence", o.confidence, "interval confidence, e.g. 0.95")
      ->transform(flags::number(0.5, 1, true, true))
      ->capture_default_str();
  cmd.add_option("--seed", o.seed, "bootstrap seed")
      ->transform(flags::integer(0, flags::kMaxU64))
      ->capture_default_str();
  cmd.add_option("--quality-accuracy-pp", o.accuracy_pp,
                 "quality warning at this accuracy gap in points (default 2)")
      ->transform(flags::number(0, 100));
  cmd.add_option("--quality-output-gap-pct", o.output_gap_pct,
                 "quality warning at this mean output length gap in % (default 10)")
      ->transform(flags::number(0, 10000));
  cmd.add_option("--gpu-hour-cost", o.gpu_hour_cost,
                 "USD one GPU costs an hour: every load cell gets $/Mtok output and total "
                 "(price × GPUs over tok/s); an arm's own gpu_hour_cost in the --spec file wins")
      ->transform(flags::number(0, 1e6));
}

// A board spec or record that cannot be read is a compare::CompareError (kind input: exit 2).
compare::Board build(const ReportOptions& o) {
  compare::BoardSpec spec;
  if (o.spec) spec = compare::read_board_spec(*o.spec);
  if (!o.expect_spec_sha256.empty()) {
    if (!o.spec) throw UsageError("--expect-spec-sha256 pins the --spec file's hash: give --spec");
    spec.expect.spec_sha256 = compare::parse_sha256(o.expect_spec_sha256, "--expect-spec-sha256");
  }
  if (!o.expect_policy.empty()) {
    spec.expect.policy = compare::parse_expect_policy(o.expect_policy, "--expect-policy");
  }
  std::vector<compare::ArmSpec> arms;
  for (const auto& a : o.arms) arms.push_back(compare::parse_arm(a));
  if (!arms.empty() && !spec.arms.empty()) {
    throw UsageError("--arm and --spec both declare arms; declare them in one place");
  }
  if (arms.empty()) arms = spec.arms;
  arms = compare::merge_arms(arms);
  if (arms.size() < 2) {
    throw UsageError(
        "a board needs at least two arms: --arm NAME=SELECTOR twice (e.g. --arm fast=label=fast "
        "--arm slow=label=slow), or a --spec file");
  }
  // With an index, selectors are resolved through its rows (docs/compare.md "Selecting runs
  // through an index"); without one, over the manifests under --runs-root, as always.
  const std::string index_url = resolve_index_url(o.index);
  std::unique_ptr<store::IndexReader> reader;
  std::optional<compare::IndexSelection> selection;
  if (!index_url.empty()) {
    reader = store::open_index_reader(index_url);
    selection.emplace(*reader,
                      o.runs_root_given ? std::optional<fs::path>(o.runs_root) : std::nullopt);
  }
  compare::BoardInput input =
      compare::load_board_input(o.runs_root, arms, spec.cells, selection ? &*selection : nullptr);
  for (const auto& skipped : input.skipped) {
    std::cerr << "dyno: warning: left out of the query, its manifest cannot be read: "
              << terminal_text(skipped, true) << " (dyno runs verify names every problem)\n";
  }
  compare::default_gpu_hour_cost(input.arms, o.gpu_hour_cost);
  input.title = o.title.empty() ? spec.title : o.title;
  input.baseline = o.baseline.empty() ? spec.baseline : o.baseline;
  input.model_aliases = spec.model_aliases;
  for (const auto& a : o.model_aliases) {
    const auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == a.size()) {
      throw UsageError("--model-alias '" + a + "': write ID=NAME");
    }
    input.model_aliases[a.substr(0, eq)] = a.substr(eq + 1);
  }
  compare::BoardOptions bo;
  for (const auto& n : spec.required) bo.policy.set(n, compare::CheckLevel::kRequired);
  for (const auto& n : spec.reported) bo.policy.set(n, compare::CheckLevel::kReported);
  for (const auto& n : spec.ignored) bo.policy.set(n, compare::CheckLevel::kIgnored);
  bo.policy.set_list(o.require, compare::CheckLevel::kRequired, "--require");
  bo.policy.set_list(o.report_only, compare::CheckLevel::kReported, "--report-only");
  bo.policy.set_list(o.ignore, compare::CheckLevel::kIgnored, "--ignore");
  if (spec.accuracy_pp) bo.quality.accuracy_pp = *spec.accuracy_pp;
  if (spec.output_gap_pct) bo.quality.output_gap_pct = *spec.output_gap_pct;
  if (o.accuracy_pp) bo.quality.accuracy_pp = *o.accuracy_pp;
  if (o.output_gap_pct) bo.quality.output_gap_pct = *o.output_gap_pct;
  if (!(bo.quality.accuracy_pp >= 0) || !(bo.quality.output_gap_pct >= 0)) {
    throw UsageError(
        "quality thresholds must be >= 0 (--quality-accuracy-pp, "
        "--quality-output-gap-pct)");
  }
  bo.bootstrap.resamples = o.resamples;
  bo.bootstrap.confidence = o.confidence;
  bo.bootstrap.seed = o.seed;
  bo.allow_unresolved = o.allow_unresolved || spec.allow_unresolved.value_or(false);
  bo.generator = {"dyno", build_info::kVersion, build_info::kGitCommit, ""};
  bo.spec_file_sha256 = spec.sha256;
  bo.expect = spec.expect;
  bo.accuracy_marks = spec.accuracy_marks;
  return compare::build_board(input, bo);
}

}  // namespace

int compare_command(const ReportOptions& o) {
  const compare::Board board = build(o);
  if (o.json) {
    std::cout << report::board_json(board, {});
  } else {
    // Names, versions and labels come from records: no control character reaches the terminal.
    std::cout << terminal_text(
        report::to_text(report::board_document(board, {}, report::DocumentKind::kConsole)));
  }
  return kExitOk;
}

int report_command(const ReportOptions& o) {
  if (o.out.empty()) throw UsageError("report needs --out DIR (the board directory to write)");
  compare::Board board = build(o);
  // The binary that makes the board, by hash (board.json, so SHA256SUMS covers it).
  try {
    board.generator.executable_sha256 =
        record::cached_sha256_hex_file("/proc/self/exe", record::default_cache_dir());
  } catch (const digest::FileError&) {
    // unreadable: board.json says null
  }
  // The charts, drawn from the board before anything is written (docs/compare.md "Charts").
  // (A malformed telemetry.jsonl is a compare::CompareError.)
  const std::vector<report::Figure> figures = report::board_figures(board);
  const auto files = report::write_board(o.out, board, figures);
  std::cout << "board " << o.out << " · " << board.status << " · " << board.cells.size()
            << " cells · " << files.size() << " files (README.md, report.html, board.json, "
            << "board.csv, " << figures.size() << " charts as SVG and PNG, SHA256SUMS)\n";
  return kExitOk;
}

BoardCli::BoardCli(CLI::App& cmd, Output output) : cmd_(&cmd), output_(output) {
  add_flags(cmd, options_);
  if (output == Output::kConsole) {
    cmd.add_flag("--json", options_.json, "print the board ledger (board.json)");
  } else {
    cmd.add_option("--out", options_.out, "the board directory to write")->required();
  }
}

int BoardCli::run() const {
  ReportOptions o = options_;
  o.runs_root_given = cmd_->get_option("--runs-root")->count() > 0;
  return output_ == Output::kConsole ? compare_command(o) : report_command(o);
}

}  // namespace dyno::app
