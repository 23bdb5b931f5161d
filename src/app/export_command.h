// `dyno export FORMAT RUN… -o OUT`: finished records in another tool's format
// (docs/interop.md "Export"): `vllm-bench` (one vLLM result object per run) or `csv` (one row
// per run). Every run is read and converted before anything is written.
#pragma once

#include <filesystem>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "interop/export_record.h"

namespace CLI {
class App;
}

namespace dyno::app {

struct ExportCommandOptions {
  std::string format;             ///< one of export_formats(): vllm-bench | csv
  std::vector<std::string> runs;  ///< run ids, unique prefixes or run directories
  std::string output;             ///< -o: a file; vllm-bench with several runs: a directory
  std::string runs_root = "runs";
};

/// A file an export writes: where, its bytes, and the runs it holds in words ("run ID",
/// "3 runs") for the line `dyno export` prints.
struct ExportFile {
  std::filesystem::path path;
  std::string bytes;
  std::string runs;
};

/// An entry of the export registry (error/registry.h): a format `dyno export` writes.
struct ExportFormat {
  std::string_view name;      ///< as `dyno export` takes it: "vllm-bench"
  std::string_view describe;  ///< one line for --help: what is written
  /// The files for `records` given `-o target`, converted before anything is written. Throws
  /// UsageError for an -o the format cannot write (a directory for one file, a missing parent).
  std::vector<ExportFile> (*files)(const std::vector<interop::ExportRecord>& records,
                                   const std::filesystem::path& target);
};

/// The formats `dyno export` writes, in the order --help lists them.
std::span<const ExportFormat> export_formats();

/// Adds `dyno export`'s arguments and options to `cmd`.
void add_export_options(CLI::App& cmd, ExportCommandOptions& options);

/// Exports the runs and prints each file written on `out`. Throws UsageError (exit 2) for an
/// unknown or repeated run, or an -o that cannot be what the format writes (a directory for
/// csv, a file for several vllm-bench runs, a missing parent directory); interop::ExportError
/// (exit 2) for a record that is running, fails verification or lacks what the format needs;
/// dyno::Error of kind io (exit 1) when the file cannot be written.
int export_command(const ExportCommandOptions& options, std::ostream& out);

}  // namespace dyno::app
