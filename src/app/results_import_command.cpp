#include "app/results_import_command.h"

#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <memory>
#include <sstream>

#include "app/console.h"
#include "app/exit_codes.h"
#include "app/sign_key_flag.h"
#include "app/signals.h"
#include "engine_session/host_identity.h"
#include "error/error.h"
#include "error/registry.h"
#include "interop/import_batch.h"
#include "json/json_text.h"
#include "record/signature.h"
#include "store/index_url.h"
#include "store/run_index.h"

namespace dyno::app {

void add_results_import_options(CLI::App& cmd, ResultsImportOptions& o) {
  std::string formats;
  for (const auto& f : interop::import_formats()) {
    formats += "\n  " + std::string(f.name) + ": " + std::string(f.describe);
  }
  cmd.add_option("format", o.format, "the files' format (docs/interop.md):" + formats)
      ->required()
      ->check(CLI::IsMember(registry::names(interop::import_formats())));
  cmd.add_option("files", o.files, "saved result files, one record per result they hold")
      ->required();
  cmd.add_option("--map", o.read.map,
                 "table: SOURCE=TARGET[:UNIT], repeated: SOURCE a column, or a key or path "
                 "$.a.b[0] of JSON rows; TARGET a figure of summary.json "
                 "(latency_ms.ttft.p50:s) or an identity (model, engine, concurrency…); "
                 "PATH=rows: where JSON rows are (docs/interop.md)");
  cmd.add_option("--runs-root", o.runs_root, "directory of run records (the new ones go here)")
      ->capture_default_str();
  cmd.add_option("--label", o.label, "the records' label (default: the file's label, or FORMAT)");
  cmd.add_option("--model", o.model, "the model id, when the file names none or names it wrong");
  cmd.add_option("--engine", o.engine, "the engine's name (the files rarely say it)");
  cmd.add_option("--api", o.api,
                 "chat or completions: the endpoint measured, for files that do not say it "
                 "(an AIPerf per-record export, a ledger without an api column)")
      ->check(CLI::IsMember({"chat", "completions"}));
  cmd.add_flag("--json", o.json, "print what was imported as JSON on stdout");
  add_sign_key_flag(cmd, o.sign_key, "each imported record");
}

namespace json = boost::json;

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
  // An interrupt stops the import between two records: nothing of it is left in the store.
  const std::atomic<bool>& stop = install_stop_signals();
  if (o.files.empty()) throw UsageError("dyno import: give at least one FILE");
  const auto interrupted = [&](const std::string& when) {
    err << "dyno: interrupted " << when << "; nothing was imported\n";
    return kExitInterrupted;
  };
  std::vector<interop::ImportFile> files;
  for (const std::string& path : o.files) {
    if (stop) return interrupted("while reading the files");
    files.push_back(interop::read_import_path(path, o.format, o.read, o.api));
  }
  if (stop) return interrupted("while reading the files");
  interop::ImportWriteOptions wo;
  wo.runs_root = o.runs_root;
  wo.label = o.label;
  wo.model = o.model;
  wo.engine = o.engine;
  wo.api = o.api;
  wo.harness = engine_session::harness_identity();
  wo.signing_key = record::load_sign_key(o.sign_key);
  // The index, opened before the records arrive (a new runs root's index is made empty, not
  // "rebuilt" from the records being imported).
  const std::string index_url = store::index_url_from_env();
  std::unique_ptr<store::RunIndex> index;
  const auto index_warning = [&](const std::exception& e) {
    err << "dyno: warning: the run index was not updated ("
        << store::redact_secret_of(index_url, e.what())
        << "); the records are complete; `dyno runs reindex` rebuilds the index\n";
  };
  const auto open_index = [&] {
    try {
      index = std::make_unique<store::RunIndex>(o.runs_root, err, index_url);
    } catch (const std::exception& e) {
      index_warning(e);
    }
  };
  std::optional<std::vector<interop::ImportOutcome>> written =
      interop::import_into_runs_root(files, wo, stop, open_index);
  if (!written) return interrupted("while writing the records");
  std::vector<ImportedRun> runs;
  for (interop::ImportOutcome& outcome : *written)
    runs.push_back({std::move(outcome), std::nullopt});

  // Every record indexed in one pass, and one look for earlier imports of the same bytes.
  try {
    if (index) {
      index->sync();
      for (ImportedRun& run : runs) {
        if (const auto row = index->find(run.outcome.run_id)) run.duplicate_of = row->duplicate_of;
      }
    }
  } catch (const std::exception& e) {
    index_warning(e);
  }
  if (o.json) {
    out << json_text::pretty(imports_to_json(runs, o.format));
  } else {
    out << render_imports(runs, o.format);
  }
  return kExitOk;
}

}  // namespace dyno::app
