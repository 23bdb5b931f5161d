// The run store's index, a cache of the run directories: <runs-root>/index.sqlite (SQLite, WAL
// mode; the default), or a PostgreSQL database named by a URL (--index, DYNO_INDEX_URL;
// index_url.h), which several runs roots and machines may share. The directories are the
// truth: a missing, foreign or corrupt index is rebuilt from them (with a warning), and every
// listing first brings the index in line with them. Where the rows live is an IndexBackend
// (index_backend.h): sqlite_index.cpp, pg_index.cpp.
#pragma once

#include <boost/json/object.hpp>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "store/index_reader.h"
#include "store/run_row.h"

namespace dyno::store {

class IndexBackend;

/// What sync() changed.
struct SyncStats {
  std::size_t added = 0;      ///< directories the index did not know
  std::size_t refreshed = 0;  ///< rows of unfinished, unreadable or changed runs read again
  std::size_t dropped = 0;    ///< rows whose directory is gone
};

/// A connection to a runs root's index: <runs_root>/index.sqlite, or the rows of runs_root in
/// a PostgreSQL database. Several processes may hold one at once (one transaction per change,
/// writers of one runs root serialised). Not thread-safe: one thread per object.
class RunIndex {
 public:
  /// Opens the index, creating it when missing: <runs_root>/index.sqlite when `index_url` is
  /// "", else the PostgreSQL database it names (pg_index.h). An index that is not an SQLite
  /// database, is corrupt, or has another layout version is moved aside to index.sqlite.bad
  /// (a warning on `warnings` says so) and rebuilt from the directories; so is a missing one
  /// (with a warning when it finds runs other than `indexing_run`, the run being indexed: a
  /// new runs root gets its index silently); a PostgreSQL schema of an older version is
  /// recreated. Throws IndexError when runs_root does not exist or the index cannot be made
  /// or reached, IndexUrlError when index_url is malformed.
  RunIndex(const std::filesystem::path& runs_root, std::ostream& warnings,
           const std::string& index_url = "", const std::string& indexing_run = "");
  /// An index in memory only, built from the directories: for a runs root where
  /// index.sqlite cannot be written (a read-only copy of published records).
  static std::unique_ptr<RunIndex> in_memory(const std::filesystem::path& runs_root);
  ~RunIndex();
  RunIndex(const RunIndex&) = delete;
  RunIndex& operator=(const RunIndex&) = delete;

  /// True when the constructor rebuilt the index (it was missing, corrupt or outdated).
  bool rebuilt() const { return rebuilt_; }
  /// What the index is, for messages: its file, or its URL with any password replaced by ***.
  std::string name() const;

  /// Brings the index in line with the directories, comparing names: adds directories it does
  /// not know, drops rows whose directory is gone, and reads again the runs it holds as
  /// running or unreadable or with a problem, and those whose manifest.json or summary.json
  /// changed since they were read (files_stamp), so no figure is shown from a stale cache; a
  /// run read again keeps the record digest the index remembers.
  SyncStats sync();
  /// Drops every row and indexes every directory again, keeping the record digests the index
  /// remembers; returns the number of runs.
  std::size_t rebuild();
  /// Indexes (inserts or replaces) one run directory under the root and updates the
  /// duplicate marks. The row's record digest is the record's now: call it only where dyno
  /// wrote the record (sync() and rebuild() keep the digest the index remembers).
  void upsert(const std::filesystem::path& run_dir);
  /// Removes a run's row (not its directory).
  void remove(const std::string& run_id);

  std::vector<RunRow> list(const RunFilter& filter) const;
  std::optional<RunRow> find(const std::string& run_id) const;
  /// Every run id the index holds, sorted.
  std::vector<std::string> ids() const;
  /// "ok", or what is wrong: SQLite's PRAGMA integrity_check; for PostgreSQL, the schema
  /// version and that no run is held twice.
  std::string integrity() const;

 private:
  RunIndex(const std::filesystem::path& runs_root, std::unique_ptr<IndexBackend> backend);

  std::filesystem::path root_;
  std::unique_ptr<IndexBackend> backend_;
  bool rebuilt_ = false;
};

/// Indexes a run whose record is complete (call after the record's last write), in the index
/// `index_url` names ("" = index.sqlite). Never throws: the record on disk is what counts, so
/// an index failure is one warning line on `warnings` (a URL in it with its password
/// replaced).
void index_finished_run(const std::filesystem::path& runs_root,
                        const std::filesystem::path& run_dir, std::ostream& warnings,
                        const std::string& index_url = "") noexcept;

/// A reader over one runs root's index (any backend; RunIndex keeps it open): the rows of
/// RunIndex::list, all under `runs_root`.
std::unique_ptr<IndexReader> index_reader_of(const RunIndex& index,
                                             const std::filesystem::path& runs_root);

}  // namespace dyno::store
