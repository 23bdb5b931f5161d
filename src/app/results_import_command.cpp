#include "app/results_import_command.h"

#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <filesystem>
#include <memory>
#include <random>
#include <sstream>

#include "app/console.h"
#include "app/exit_codes.h"
#include "app/signals.h"
#include "error/error.h"
#include "error/registry.h"
#include "json/json_text.h"
#include "record/run_writer.h"
#include "session/host_identity.h"
#include "session/run_cell.h"
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
}

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

/// The staging directory of one import: hidden under the runs root (a name that starts with
/// '.' is no run directory: listing, indexing and verifying pass it by), on the same
/// filesystem, so each record moves into place with one rename.
fs::path make_stage(const fs::path& runs_root) {
  std::random_device rd;
  for (int attempt = 0; attempt < 16; ++attempt) {
    char name[64];
    std::snprintf(name, sizeof name, ".import-%d-%08x.tmp", static_cast<int>(::getpid()), rd());
    const fs::path stage = runs_root / name;
    std::error_code ec;
    if (fs::create_directory(stage, ec)) return stage;
    if (ec) throw record::RecordError("cannot create " + stage.string() + ": " + ec.message());
  }
  throw record::RecordError("cannot create a staging directory under " + runs_root.string());
}

/// fsync (or syncfs) of a directory: what was written or renamed there is on the disk.
void sync_dir(const fs::path& dir, bool whole_filesystem) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw record::RecordError("cannot open " + dir.string() + " to sync it");
  const int rc = whole_filesystem ? ::syncfs(fd) : ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw record::RecordError("cannot sync " + dir.string() + " to disk");
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
  // An interrupt stops the import between two records: nothing of it is left in the store.
  const std::atomic<bool>& stop = install_stop_signals();
  struct Read {
    std::string name;
    std::string bytes;
    std::vector<interop::ImportedResult> results;
  };
  std::vector<Read> reads;
  if (o.files.empty()) throw UsageError("dyno import: give at least one FILE");
  const auto interrupted = [&](const std::string& when) {
    err << "dyno: interrupted " << when << "; nothing was imported\n";
    return kExitInterrupted;
  };
  for (const std::string& path : o.files) {
    if (stop) return interrupted("while reading the files");
    std::string bytes = interop::read_import_file(path);
    const std::string name = interop::safe_evidence_name(fs::path(path).filename().string());
    std::vector<interop::ImportedResult> results =
        interop::read_import(o.format, bytes, path, o.read);
    // Every record's endpoint known before any is written: nothing half-imported.
    for (const interop::ImportedResult& r : results) (void)interop::import_api(r, o.api, path);
    reads.push_back({name, std::move(bytes), std::move(results)});
  }
  if (stop) return interrupted("while reading the files");
  interop::ImportWriteOptions wo;
  wo.runs_root = o.runs_root;
  wo.label = o.label;
  wo.model = o.model;
  wo.engine = o.engine;
  wo.api = o.api;
  wo.harness = session::harness_identity();

  // Every record is written into a staging directory, synced once, then moved into the runs
  // root: an interrupt (or a failure) before the moves leaves nothing, a crash leaves only the
  // hidden staging directory.
  const fs::path root = o.runs_root;
  std::error_code ec;
  const bool root_existed = fs::exists(root, ec);
  fs::create_directories(root, ec);
  if (ec)
    throw record::RecordError("cannot create runs root " + root.string() + ": " + ec.message());
  wo.stage_root = make_stage(root);
  record::set_discard_at_once(wo.stage_root);
  const auto discard = [&] {
    std::error_code e;
    fs::remove_all(wo.stage_root, e);
    if (!root_existed && fs::is_empty(root, e)) fs::remove(root, e);
    record::set_discard_at_once({});
  };
  std::vector<ImportedRun> runs;
  try {
    record::DeferredSync deferred;  // one syncfs below instead of an fsync per file
    for (const Read& r : reads) {
      const interop::ImportEvidence evidence = interop::import_evidence(r.name, r.bytes);
      fs::path shared;  // the one copy of this file's evidence, linked into each record
      for (const interop::ImportedResult& result : r.results) {
        if (stop) {
          discard();
          return interrupted("while writing the records");
        }
        runs.push_back(
            {interop::write_imported_record(result, evidence, wo, shared), std::nullopt});
      }
    }
    sync_dir(wo.stage_root, true);
  } catch (...) {
    discard();
    throw;
  }
  if (stop) {
    discard();
    return interrupted("while writing the records");
  }
  // The index, opened before the records arrive (a new runs root's index is made empty, not
  // "rebuilt" from the records being imported).
  const std::string index_url = store::index_url_from_env();
  std::unique_ptr<store::RunIndex> index;
  const auto index_warning = [&](const std::exception& e) {
    err << "dyno: warning: the run index was not updated ("
        << store::redact_secret_of(index_url, e.what())
        << "); the records are complete; `dyno runs reindex` rebuilds the index\n";
  };
  try {
    index = std::make_unique<store::RunIndex>(o.runs_root, err, index_url);
  } catch (const std::exception& e) {
    index_warning(e);
  }
  // The moves: one rename each, no interrupt checked between them (they take milliseconds).
  std::size_t moved = 0;
  try {
    for (ImportedRun& run : runs) {
      const fs::path to = root / run.outcome.run_id;
      if (fs::exists(to)) throw record::RecordError(to.string() + " exists already");
      fs::rename(run.outcome.dir, to);
      run.outcome.dir = to;
      ++moved;
    }
    sync_dir(root, false);
  } catch (const std::exception& e) {
    // Nothing half-imported: the records already moved go back out of the store.
    for (std::size_t i = 0; i < moved; ++i) fs::remove_all(runs[i].outcome.dir, ec);
    discard();
    throw record::RecordError(std::string("could not move the imported records into ") +
                              root.string() + ": " + e.what() + "; nothing was imported");
  }
  fs::remove_all(wo.stage_root, ec);
  record::set_discard_at_once({});

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
