// `dyno export FORMAT RUN… -o OUT`: finished records in another tool's format
// (docs/interop.md "Export"): `vllm-bench` (one vLLM result object per run) or `csv` (one row
// per run). Every run is read and converted before anything is written.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace dyno::app {

struct ExportCommandOptions {
  std::string format;             ///< vllm-bench | csv
  std::vector<std::string> runs;  ///< run ids, unique prefixes or run directories
  std::string output;             ///< -o: a file; vllm-bench with several runs: a directory
  std::string runs_root = "runs";
};

/// The formats `dyno export` writes.
const std::vector<std::string>& export_format_names();

/// Exports the runs and prints each file written on `out`. Throws UsageError (exit 2) for an
/// unknown or repeated run, or an -o that cannot be what the format writes (a directory for
/// csv, a file for several vllm-bench runs, a missing parent directory); interop::ExportError
/// (exit 2) for a record that is running, fails verification or lacks what the format needs;
/// dyno::Error of kind io (exit 1) when the file cannot be written.
int export_command(const ExportCommandOptions& options, std::ostream& out);

}  // namespace dyno::app
