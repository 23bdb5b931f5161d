#include "app/results_import_command.h"

#include <boost/json.hpp>
#include <filesystem>
#include <sstream>

#include "app/console.h"
#include "app/exit_codes.h"
#include "error/error.h"
#include "json/json_text.h"
#include "record/index_url.h"
#include "record/run_index.h"
#include "record/run_writer.h"
#include "session/run_cell.h"

namespace dyno::app {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

/// The name the file's bytes are kept under (evidence/<name>): its own name, unless that
/// could not name a file inside the record.
std::string evidence_name(const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  if (name.empty() || name == "." || name == "..") return "imported-file";
  return name;
}

}  // namespace

std::string render_imports(const std::vector<ImportedRun>& runs, const std::string& format) {
  std::ostringstream out;
  for (const ImportedRun& r : runs) {
    out << "imported " << terminal_text(r.outcome.file)
        << (r.outcome.part ? " " + terminal_text(*r.outcome.part) : std::string()) << " (" << format
        << ", timing " << r.outcome.timing << ") as run " << r.outcome.run_id << " in "
        << terminal_text(r.outcome.dir.string()) << "\n";
    if (r.duplicate_of) {
      out << "  duplicate of " << *r.duplicate_of
          << " (the same file, imported before; `dyno runs rm` removes one)\n";
    }
  }
  return out.str();
}

json::array imports_to_json(const std::vector<ImportedRun>& runs, const std::string& format) {
  json::array a;
  for (const ImportedRun& r : runs) {
    a.push_back(json::object{
        {"file", r.outcome.file},
        {"sha256", r.outcome.sha256},
        {"part", r.outcome.part ? json::value(*r.outcome.part) : json::value(nullptr)},
        {"format", format},
        {"timing", r.outcome.timing},
        {"run_id", r.outcome.run_id},
        {"record_dir", r.outcome.dir.string()},
        {"duplicate_of", r.duplicate_of ? json::value(*r.duplicate_of) : json::value(nullptr)}});
  }
  return a;
}

int results_import_command(const ResultsImportOptions& o, std::ostream& out, std::ostream& err) {
  struct Read {
    std::string name;
    std::string bytes;
    std::vector<record::ImportedResult> results;
  };
  std::vector<Read> reads;
  if (o.files.empty()) throw UsageError("dyno import: give at least one FILE");
  for (const std::string& path : o.files) {
    std::string bytes;
    try {
      bytes = record::read_file(path);
    } catch (const record::RecordError& e) {
      throw record::ImportFileError(std::string(e.what()) + " (dyno import reads it)");
    }
    const std::string name = evidence_name(path);
    std::vector<record::ImportedResult> results =
        record::read_import(o.format, bytes, path, o.read);
    // Every record's endpoint known before any is written: nothing half-imported.
    for (const record::ImportedResult& r : results) (void)record::import_api(r, o.api, path);
    reads.push_back({name, std::move(bytes), std::move(results)});
  }
  record::ImportWriteOptions wo;
  wo.runs_root = o.runs_root;
  wo.label = o.label;
  wo.model = o.model;
  wo.engine = o.engine;
  wo.api = o.api;
  wo.harness = session::harness_identity();
  const std::string index_url = record::index_url_from_env();
  std::vector<ImportedRun> runs;
  for (const Read& r : reads) {
    for (const record::ImportedResult& result : r.results) {
      ImportedRun run{record::write_imported_run(result, r.name, r.bytes, wo), std::nullopt};
      record::index_finished_run(o.runs_root, run.outcome.dir, err, index_url);
      runs.push_back(std::move(run));
    }
  }
  // Which records repeat an earlier import: one look at the index for all of them.
  try {
    record::RunIndex index(o.runs_root, err, index_url);
    for (ImportedRun& run : runs) {
      if (const auto row = index.find(run.outcome.run_id)) run.duplicate_of = row->duplicate_of;
    }
  } catch (const std::exception&) {  // index_finished_run has said why the index is unusable
  }
  if (o.json) {
    out << json_text::pretty(imports_to_json(runs, o.format));
  } else {
    out << render_imports(runs, o.format);
  }
  return kExitOk;
}

}  // namespace dyno::app
