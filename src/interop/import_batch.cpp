#include "interop/import_batch.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <random>

#include "record/close_at_once.h"
#include "record/run_writer.h"

namespace dyno::interop {

namespace fs = std::filesystem;

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

ImportFile read_import_path(const std::string& path, const std::string& format,
                            const ImportReadOptions& read,
                            const std::optional<std::string>& api_flag) {
  ImportFile f;
  f.bytes = read_import_file(path);
  f.name = safe_evidence_name(fs::path(path).filename().string());
  f.results = read_import(format, f.bytes, path, read);
  // Every record's endpoint known before any is written: nothing half-imported.
  for (const ImportedResult& r : f.results) (void)import_api(r, api_flag, path);
  return f;
}

std::optional<std::vector<ImportOutcome>> import_into_runs_root(
    const std::vector<ImportFile>& files, ImportWriteOptions options, const std::atomic<bool>& stop,
    const std::function<void()>& before_moves) {
  const fs::path root = options.runs_root;
  std::error_code ec;
  const bool root_existed = fs::exists(root, ec);
  fs::create_directories(root, ec);
  if (ec) {
    throw record::RecordError("cannot create runs root " + root.string() + ": " + ec.message());
  }
  options.stage_root = make_stage(root);
  record::set_discard_at_once(options.stage_root);
  const auto discard = [&] {
    std::error_code e;
    fs::remove_all(options.stage_root, e);
    if (!root_existed && fs::is_empty(root, e)) fs::remove(root, e);
    record::set_discard_at_once({});
  };
  std::vector<ImportOutcome> runs;
  try {
    record::DeferredSync deferred;  // one syncfs below instead of an fsync per file
    for (const ImportFile& f : files) {
      const ImportEvidence evidence = import_evidence(f.name, f.bytes);
      fs::path shared;  // the one copy of this file's evidence, linked into each record
      for (const ImportedResult& result : f.results) {
        if (stop) {
          discard();
          return std::nullopt;
        }
        runs.push_back(write_imported_record(result, evidence, options, shared));
      }
    }
    sync_dir(options.stage_root, true);
  } catch (...) {
    discard();
    throw;
  }
  if (stop) {
    discard();
    return std::nullopt;
  }
  if (before_moves) before_moves();
  // The moves: one rename each, no interrupt looked at between them (they take milliseconds).
  std::size_t moved = 0;
  try {
    for (ImportOutcome& run : runs) {
      const fs::path to = root / run.run_id;
      if (fs::exists(to)) throw record::RecordError(to.string() + " exists already");
      fs::rename(run.dir, to);
      run.dir = to;
      ++moved;
    }
    sync_dir(root, false);
  } catch (const std::exception& e) {
    // Nothing half-imported: the records already moved go back out of the store.
    for (std::size_t i = 0; i < moved; ++i) fs::remove_all(runs[i].dir, ec);
    discard();
    throw record::RecordError(std::string("could not move the imported records into ") +
                              root.string() + ": " + e.what() + "; nothing was imported");
  }
  fs::remove_all(options.stage_root, ec);
  record::set_discard_at_once({});
  return runs;
}

}  // namespace dyno::interop
