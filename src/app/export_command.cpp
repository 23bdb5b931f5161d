#include "app/export_command.h"

#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <filesystem>
#include <set>
#include <utility>

#include "app/console.h"
#include "app/exit_codes.h"
#include "app/runs_command.h"
#include "error/error.h"
#include "error/registry.h"
#include "interop/export_csv.h"
#include "interop/export_record.h"
#include "interop/export_vllm.h"
#include "json/json_text.h"
#include "record/run_writer.h"

namespace dyno::app {

namespace fs = std::filesystem;

namespace {

/// An -o file's directory must exist (dyno creates no tree of directories for a file).
void check_parent(const fs::path& file) {
  const fs::path parent = fs::absolute(file).parent_path();
  std::error_code ec;
  if (!fs::is_directory(parent, ec)) {
    throw UsageError("-o " + file.string() + ": the directory " + parent.string() +
                     " does not exist");
  }
}

/// Where each run's vLLM object goes: -o itself for one run (or <-o>/<run_id>.json when -o is
/// a directory); for several runs -o is a directory (made when absent) holding <run_id>.json.
std::vector<fs::path> vllm_targets(const fs::path& o,
                                   const std::vector<interop::ExportRecord>& rs) {
  std::error_code ec;
  const bool is_dir = fs::is_directory(o, ec);
  std::vector<fs::path> targets;
  if (rs.size() == 1 && !is_dir) {
    check_parent(o);
    return {o};
  }
  if (!is_dir) {
    if (fs::exists(o, ec)) {
      throw UsageError("-o " + o.string() +
                       " is a file: with several runs, vllm-bench writes one file per run "
                       "(<run_id>.json) into the directory -o names");
    }
    check_parent(o);
  }
  for (const auto& r : rs) targets.push_back(o / (r.run_id + ".json"));
  return targets;
}

void write_out(const fs::path& path, const std::string& bytes) {
  std::error_code ec;
  if (!path.parent_path().empty() && !fs::is_directory(path.parent_path(), ec)) {
    fs::create_directory(path.parent_path(), ec);
    if (ec) {
      throw Error(ErrorKind::io,
                  "cannot make the directory " + path.parent_path().string() + ": " + ec.message());
    }
  }
  try {
    record::write_file_atomic(path, bytes);
  } catch (const record::RecordError& e) {
    throw Error(ErrorKind::io, "cannot write -o " + path.string() + ": " + e.what());
  }
}

/// vllm-bench: one vLLM result object per run.
std::vector<ExportFile> vllm_bench_files(const std::vector<interop::ExportRecord>& records,
                                         const fs::path& target) {
  std::vector<std::string> texts;
  for (const auto& r : records) texts.push_back(json_text::pretty(interop::export_vllm_bench(r)));
  const std::vector<fs::path> targets = vllm_targets(target, records);
  std::vector<ExportFile> files;
  for (std::size_t i = 0; i < records.size(); ++i) {
    files.push_back({targets[i], texts[i], "run " + records[i].run_id});
  }
  return files;
}

/// csv: one table, a row per run.
std::vector<ExportFile> csv_files(const std::vector<interop::ExportRecord>& records,
                                  const fs::path& target) {
  std::error_code ec;
  if (fs::is_directory(target, ec)) {
    throw UsageError("-o " + target.string() + " is a directory: csv writes one file");
  }
  check_parent(target);
  return {{target, interop::export_csv(records),
           std::to_string(records.size()) + " run" + (records.size() == 1 ? "" : "s")}};
}

}  // namespace

std::span<const ExportFormat> export_formats() {
  static constexpr ExportFormat kFormats[] = {
      {.name = "vllm-bench",
       .describe =
           "the JSON object `vllm bench serve --save-result --save-detailed` writes, one per run",
       .files = vllm_bench_files},
      {.name = "csv",
       .describe = "one row per run, every summary figure a column",
       .files = csv_files},
  };
  return kFormats;
}

void add_export_options(CLI::App& cmd, ExportCommandOptions& o) {
  std::string formats;
  for (const ExportFormat& f : export_formats()) {
    formats += (formats.empty() ? "" : "; ") + std::string(f.name) + ": " + std::string(f.describe);
  }
  cmd.add_option("format", o.format, formats + " (docs/interop.md \"Export\")")
      ->required()
      ->check(CLI::IsMember(registry::names(export_formats())));
  cmd.add_option("runs", o.runs, "run ids, unique prefixes or run directories")->required();
  cmd.add_option("-o,--output", o.output,
                 "the file to write; vllm-bench with several runs: a directory (made when "
                 "absent) that receives <run_id>.json for each")
      ->required();
  cmd.add_option("--runs-root", o.runs_root, "directory of run records")->capture_default_str();
}

int export_command(const ExportCommandOptions& o, std::ostream& out) {
  if (o.output.empty()) throw UsageError("-o: name the file to write");
  const ExportFormat& format = registry::lookup(export_formats(), o.format, "export format");
  std::vector<interop::ExportRecord> records;
  std::set<std::string> seen;
  for (const std::string& arg : o.runs) {
    const fs::path dir = resolve_run(o.runs_root, arg);
    if (!seen.insert(fs::weakly_canonical(dir).string()).second) {
      throw UsageError("run " + arg + " is named twice");
    }
    records.push_back(interop::read_export_record(dir));
  }
  const std::vector<ExportFile> files = format.files(records, fs::path(o.output));
  for (const ExportFile& f : files) write_out(f.path, f.bytes);
  for (const ExportFile& f : files) {
    out << "wrote " << terminal_text(f.path.string()) << " (" << format.name << ", " << f.runs
        << ")\n";
  }
  return kExitOk;
}

}  // namespace dyno::app
