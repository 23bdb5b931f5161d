// `dyno compare` (a comparison board on the console, or its ledger with --json) and
// `dyno report --out DIR` (the board directory: README.md, report.html, board.json,
// board.csv, the charts as SVG and PNG, SHA256SUMS). docs/compare.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace dyno::app {

struct ReportOptions {
  std::vector<std::string> arms;    ///< NAME=SELECTOR, repeatable
  std::optional<std::string> spec;  ///< board spec file (JSON)
  std::string baseline;             ///< "" = the last arm
  std::string runs_root = "runs";
  bool runs_root_given = false;      ///< --runs-root on the command line (scopes --index)
  std::optional<std::string> index;  ///< --index URL; else DYNO_INDEX_URL; else the manifests
  std::string title;
  std::vector<std::string> model_aliases;    ///< ID=NAME
  std::string require, report_only, ignore;  ///< check lists
  bool allow_unresolved = false;
  std::string expect_spec_sha256;  ///< pins the spec file's SHA-256 ("" = not pinned)
  std::string expect_policy;       ///< refuse | report; "" = the spec's (default refuse)
  std::uint32_t resamples = 2000;
  double confidence = 0.95;
  std::uint64_t seed = 0;
  std::optional<double> accuracy_pp;
  std::optional<double> output_gap_pct;
  /// USD per GPU-hour of every arm without its own `gpu_hour_cost` in the spec; nullopt: no
  /// cost on the board.
  std::optional<double> gpu_hour_cost;
  bool json = false;  ///< compare: print board.json instead of the text
  std::string out;    ///< report: the board directory
};

/// Prints the board on stdout (text, or board.json with --json); returns the exit code.
/// Throws UsageError for bad flags, selectors, spec files, records, and for unresolved
/// identities without --allow-unresolved.
int compare_command(const ReportOptions& options);

/// Writes the board directory; prints where and the status. As compare_command for errors.
int report_command(const ReportOptions& options);

/// The flags of `dyno compare` or `dyno report` (in one place) on `cmd`, the subcommand the
/// command table made; after parsing, run() executes it.
class BoardCli {
 public:
  enum class Output {
    kConsole,    ///< compare: the board on the console (--json: board.json)
    kDirectory,  ///< report: the board directory (--out)
  };
  BoardCli(CLI::App& cmd, Output output);
  int run() const;

 private:
  ReportOptions options_;
  CLI::App* cmd_ = nullptr;
  Output output_;
};

}  // namespace dyno::app
