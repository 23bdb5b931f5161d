#include "app/export_command.h"

#include <boost/json.hpp>
#include <filesystem>
#include <set>
#include <utility>

#include "app/console.h"
#include "app/exit_codes.h"
#include "app/runs_command.h"
#include "error/error.h"
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

}  // namespace

const std::vector<std::string>& export_format_names() {
  static const std::vector<std::string> names{"vllm-bench", "csv"};
  return names;
}

int export_command(const ExportCommandOptions& o, std::ostream& out) {
  if (o.output.empty()) throw UsageError("-o: name the file to write");
  std::vector<interop::ExportRecord> records;
  std::set<std::string> seen;
  for (const std::string& arg : o.runs) {
    const fs::path dir = resolve_run(o.runs_root, arg);
    if (!seen.insert(fs::weakly_canonical(dir).string()).second) {
      throw UsageError("run " + arg + " is named twice");
    }
    records.push_back(interop::read_export_record(dir));
  }
  const fs::path target(o.output);
  std::vector<std::pair<fs::path, std::string>> files;
  if (o.format == "csv") {
    std::error_code ec;
    if (fs::is_directory(target, ec)) {
      throw UsageError("-o " + o.output + " is a directory: csv writes one file");
    }
    check_parent(target);
    files.emplace_back(target, interop::export_csv(records));
  } else if (o.format == "vllm-bench") {
    std::vector<std::string> texts;
    for (const auto& r : records) texts.push_back(json_text::pretty(interop::export_vllm_bench(r)));
    const std::vector<fs::path> targets = vllm_targets(target, records);
    for (std::size_t i = 0; i < records.size(); ++i) files.emplace_back(targets[i], texts[i]);
  } else {
    throw UsageError("unknown export format '" + o.format + "' (vllm-bench or csv)");
  }
  for (const auto& [path, bytes] : files) write_out(path, bytes);
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::string runs = o.format == "csv" ? std::to_string(records.size()) + " run" +
                                                     (records.size() == 1 ? "" : "s")
                                               : "run " + records[i].run_id;
    out << "wrote " << terminal_text(files[i].first.string()) << " (" << o.format << ", " << runs
        << ")\n";
  }
  return kExitOk;
}

}  // namespace dyno::app
