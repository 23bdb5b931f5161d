// The run index (a cache of the run directories) over either backend: opening it (and
// rebuilding what the backend could not keep), syncing with the directories, and a reader over
// it. A record's row, its columns and sort keys are run_row.cpp; the SQLite backend is
// sqlite_index.cpp, the PostgreSQL one pg_index.cpp.
#include "store/run_index.h"

#include <map>
#include <set>
#include <system_error>

#include "store/index_backend.h"
#include "store/index_url.h"
#include "store/pg_index.h"
#include "store/sqlite_index.h"

namespace dyno::store {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

/// A row read again keeps the record digest the index remembers (the digest of the record
/// when dyno first indexed it): a record changed since is not taken as the truth by a listing.
void keep_remembered_digest(RunRow& row, const std::optional<RunRow>& before) {
  if (before && before->record_sha256) row.record_sha256 = before->record_sha256;
}

void require_root(const fs::path& runs_root) {
  std::error_code ec;
  if (!fs::is_directory(runs_root, ec)) {
    throw IndexError("runs root " + runs_root.string() + " does not exist");
  }
}

class RunIndexReader final : public IndexReader {
 public:
  RunIndexReader(const RunIndex& index, const fs::path& root) : index_(index) {
    std::error_code ec;
    root_ = fs::canonical(root, ec);
    if (ec) root_ = root;
  }
  std::string name() const override { return index_.name(); }
  std::vector<fs::path> roots() override { return {root_}; }
  std::vector<IndexedRun> rows(const IndexQuery& q) override {
    std::vector<IndexedRun> out;
    std::error_code ec;
    if (q.root && !fs::equivalent(*q.root, root_, ec)) return out;
    RunFilter all;
    all.sort = "id";
    for (RunRow& row : index_.list(all)) {
      if (selects(q, row)) out.push_back({root_, std::move(row)});
    }
    return out;
  }

 private:
  const RunIndex& index_;
  fs::path root_;
};

}  // namespace

// ---- RunIndex --------------------------------------------------------------------------------

RunIndex::RunIndex(const fs::path& runs_root, std::ostream& warnings, const std::string& index_url,
                   const std::string& indexing_run)
    : root_(runs_root) {
  if (!index_url.empty()) check_index_url(index_url);
  require_root(root_);
  backend_ = index_url.empty() ? open_sqlite_index(root_, warnings)
                               : open_pg_index(root_, index_url, warnings);
  const IndexOpened how = backend_->opened();
  if (how == IndexOpened::existing) {
    backend_->open_done();
    return;
  }
  rebuilt_ = true;
  const std::size_t n = rebuild();
  backend_->open_done();
  std::error_code ec;
  const bool self =
      !indexing_run.empty() && fs::is_regular_file(root_ / indexing_run / "manifest.json", ec);
  const std::size_t others = self && n > 0 ? n - 1 : n;
  if (how == IndexOpened::created && others > 0) {
    warnings << "dyno: warning: " << backend_->name() << " was missing; rebuilt from " << n
             << (n == 1 ? " run directory\n" : " run directories\n");
  }
}

RunIndex::RunIndex(const fs::path& runs_root, std::unique_ptr<IndexBackend> backend)
    : root_(runs_root), backend_(std::move(backend)), rebuilt_(true) {
  rebuild();
}

std::unique_ptr<RunIndex> RunIndex::in_memory(const fs::path& runs_root) {
  require_root(runs_root);
  return std::unique_ptr<RunIndex>(new RunIndex(runs_root, memory_sqlite_index(runs_root)));
}

RunIndex::~RunIndex() = default;

std::string RunIndex::name() const { return backend_->name(); }

SyncStats RunIndex::sync() {
  std::map<std::string, bool> known;  // id -> read it again (unfinished, a problem, changed)
  for (KnownRun& k : backend_->known()) {
    const bool changed = k.files_stamp != files_stamp(root_ / k.run_id);
    known.emplace(std::move(k.run_id), k.read_again || changed);
  }
  const std::vector<std::string> names = run_directory_names(root_);
  const std::set<std::string> on_disk(names.begin(), names.end());
  SyncStats stats;
  std::vector<RunRow> rows;
  for (const auto& name : names) {
    const auto it = known.find(name);
    if (it == known.end()) {
      ++stats.added;
    } else if (it->second) {
      ++stats.refreshed;
    } else {
      continue;
    }
    rows.push_back(read_run_row(root_ / name));
    if (it != known.end()) keep_remembered_digest(rows.back(), backend_->find(name));
  }
  std::vector<std::string> drop;
  for (const auto& [id, again] : known) {
    if (on_disk.count(id) == 0) drop.push_back(id);
  }
  stats.dropped = drop.size();
  if (!rows.empty() || !drop.empty()) backend_->write_rows(rows, drop, false);
  return stats;
}

std::size_t RunIndex::rebuild() {
  std::map<std::string, RunRow> before;  // what the index remembers (nothing when recovered)
  RunFilter all;
  all.sort = "id";
  for (RunRow& row : backend_->list(all)) before.emplace(row.run_id, std::move(row));
  std::vector<RunRow> rows;
  for (const auto& name : run_directory_names(root_)) {
    rows.push_back(read_run_row(root_ / name));
    const auto it = before.find(name);
    keep_remembered_digest(rows.back(),
                           it == before.end() ? std::nullopt : std::optional<RunRow>(it->second));
  }
  backend_->write_rows(rows, {}, true);
  return rows.size();
}

void RunIndex::upsert(const fs::path& run_dir) {
  std::error_code ec;
  if (!fs::equivalent(run_dir.parent_path(), root_, ec)) {
    throw IndexError(run_dir.string() + " is not a run directory under " + root_.string());
  }
  backend_->write_rows({read_run_row(run_dir)}, {}, false);
}

void RunIndex::remove(const std::string& run_id) { backend_->write_rows({}, {run_id}, false); }

std::vector<RunRow> RunIndex::list(const RunFilter& f) const { return backend_->list(f); }

std::optional<RunRow> RunIndex::find(const std::string& run_id) const {
  return backend_->find(run_id);
}

std::vector<std::string> RunIndex::ids() const { return backend_->ids(); }

std::string RunIndex::integrity() const { return backend_->integrity(); }

void index_finished_run(const fs::path& runs_root, const fs::path& run_dir, std::ostream& warnings,
                        const std::string& index_url) noexcept {
  try {
    RunIndex index(runs_root, warnings, index_url, run_dir.filename().string());
    index.upsert(run_dir);  // its digest as written now, even where a rebuild kept an older one
  } catch (const std::exception& e) {
    try {
      // Messages about a URL carry it redacted already; this is a second guard.
      warnings << "dyno: warning: the run index was not updated ("
               << redact_secret_of(index_url, e.what())
               << "); the record is complete; `dyno runs reindex` rebuilds the index\n";
    } catch (...) {  // nothing more can be done about a failing stderr
    }
  }
}

std::unique_ptr<IndexReader> index_reader_of(const RunIndex& index, const fs::path& runs_root) {
  return std::make_unique<RunIndexReader>(index, runs_root);
}

}  // namespace dyno::store
