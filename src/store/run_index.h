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

#include "store/index_error.h"

namespace dyno::store {

class IndexBackend;

/// Version of the index's own table layout (PRAGMA user_version). An index of another version
/// is dropped and rebuilt: it is only a cache.
/// 3: the duplicate key holds the protocol cell; 4: the `source` column (imported records)
inline constexpr int kIndexSchemaVersion = 4;
inline constexpr const char* kIndexFileName = "index.sqlite";
/// Serialises opening, recovering and rebuilding the index between processes (flock).
inline constexpr const char* kIndexLockName = "index.lock";

/// One run as the index knows it: identity from manifest.json, headline figures from
/// summary.json. Absent or null values are nullopt.
struct RunRow {
  std::string run_id;  ///< the directory's name
  std::string started_at;
  std::optional<std::string> ended_at;
  std::string status;  ///< the manifest's status, or "unreadable" (see `problem`)
  std::optional<std::string> label;
  std::optional<std::string> campaign;
  std::optional<std::string> protocol;  ///< workload.protocol.name
  std::optional<std::string> cell;      ///< workload.protocol.cell
  std::optional<std::string> source;    ///< an imported record's source.format (dyno import)
  std::optional<std::string> engine_name;
  std::optional<std::string> engine_version;
  std::string engine_args;  ///< compact JSON of engine.engine_args
  std::optional<std::string> model_id;
  std::optional<std::string> model_revision;
  std::optional<std::string> model_fingerprint;
  std::optional<std::string> host;
  std::string gpus;  ///< GPU names, ", "-separated ("" without GPUs)
  std::optional<std::string> stream_sha256;
  std::optional<std::int64_t> stream_count;
  std::optional<std::string> load_mode;  ///< closed | open
  std::optional<std::int64_t> concurrency;
  std::optional<double> rate_per_s;
  // Headline figures (summary.json; definitions in docs/metrics.md).
  std::optional<std::int64_t> requests_ok;
  std::optional<std::int64_t> requests_failed;
  std::optional<double> error_rate;
  std::optional<double> output_tokens_per_s;
  std::optional<double> requests_per_s;
  std::optional<double> ttft_p50_ms;
  std::optional<double> tpot_p50_ms;
  std::optional<double> e2e_p50_ms;
  std::optional<double> accuracy;
  /// sha256 of the duplicate key (duplicate_key()); "" for a run that is not finished or not
  /// readable, which never counts as a duplicate.
  std::string identity_key;
  /// The earliest run (by started_at, then id) with the same identity key, when not this one.
  std::optional<std::string> duplicate_of;
  /// Why the record could not be read fully (null when it could).
  std::optional<std::string> problem;
  /// What the row was read from: size, mtime, ctime and inode of manifest.json and
  /// summary.json (files_stamp()). sync() reads a run again when they changed; not in
  /// row_to_json (bookkeeping of the cache, not a fact about the run).
  std::string files_stamp;
};

/// The stamp of a run directory's manifest.json and summary.json as they are now (a file
/// rewritten, replaced, truncated or removed changes it).
std::string files_stamp(const std::filesystem::path& run_dir);

/// The JSON form of a row (keys as the struct's members; used by `runs list --json`).
boost::json::object row_to_json(const RunRow& row);

/// Reads one run directory into a row (no database involved). Never throws for a bad record:
/// status "unreadable" and `problem` say what was wrong.
RunRow read_run_row(const std::filesystem::path& run_dir);

/// The canonical text of what makes two runs "the same run": engine identity (name, version,
/// engine_args, sim_profile), model (id, revision, fingerprint), the request stream's sha256,
/// sampling and the load configuration (the manifest's `load` object); for a derived record
/// (`derived_from`), also how it was derived (kind, scorer, the deriving dyno's executable
/// SHA-256), so it is never a duplicate of a measured run; for an imported record (`source`),
/// only the source's format and file sha256. Keys sorted, compact.
std::string duplicate_key(const boost::json::object& manifest);

/// The run directories under a runs root: sub-directories holding a manifest.json, except
/// `campaigns` and names starting with '.'. Sorted by name. Empty when the root is missing.
std::vector<std::string> run_directory_names(const std::filesystem::path& runs_root);

/// Filters of `runs list`. Text filters are GLOB patterns as SQLite's GLOB reads them (`*`, `?`,
/// `[...]`; exact when they hold none). Dates compare with started_at at the precision given, both
/// ends inclusive ("2026-11" .. "2026-11-29T12").
struct RunFilter {
  std::optional<std::string> campaign;
  std::optional<std::string> engine;  ///< engine name
  std::optional<std::string> model;   ///< model id
  std::optional<std::string> protocol;
  std::optional<std::string> status;
  std::optional<std::string> label;
  std::optional<std::string> since;
  std::optional<std::string> until;
  std::string sort = "started";  ///< one of sort_keys()
  bool descending = false;
  std::optional<std::size_t> limit;
};

/// The names `RunFilter::sort` accepts: started, id, status, tok_s, req_s, ttft, tpot, e2e,
/// error_rate, accuracy.
const std::vector<std::string>& sort_keys();

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
  /// changed since they were read (files_stamp), so no figure is shown from a stale cache.
  SyncStats sync();
  /// Drops every row and indexes every directory again; returns the number of runs.
  std::size_t rebuild();
  /// Indexes (inserts or replaces) one run directory under the root and updates the
  /// duplicate marks.
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

}  // namespace dyno::store
