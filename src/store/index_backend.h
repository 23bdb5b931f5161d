// Where the run index keeps its rows (run_index.h): the interface RunIndex works through, with
// an SQLite implementation (sqlite_index.h, <runs-root>/index.sqlite) and a PostgreSQL one
// (pg_index.h, a shared database). The row and its columns are run_row.h. Internal to the store
// module.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "store/run_row.h"

namespace dyno::store {

/// A run the index holds, as sync() needs to see it.
struct KnownRun {
  std::string run_id;
  bool read_again = false;  ///< running, unreadable or with a problem
  std::string files_stamp;
};

/// How a backend found its store when it opened it.
enum class IndexOpened {
  existing,   ///< a usable index: nothing to do
  created,    ///< there was none: every run must be indexed (rebuild)
  new_root,   ///< a shared index that holds no row of this runs root yet: rebuild, silently
  recovered,  ///< an unusable one was replaced (the backend has warned): rebuild
};

/// The storage of one runs root's rows. Writes are atomic (one transaction each) and
/// serialised against other writers of the same runs root; reads see committed rows.
class IndexBackend {
 public:
  virtual ~IndexBackend() = default;
  IndexBackend() = default;
  IndexBackend(const IndexBackend&) = delete;
  IndexBackend& operator=(const IndexBackend&) = delete;

  virtual IndexOpened opened() const = 0;
  /// Called once RunIndex has rebuilt what opened() asked for: releases what the opening held.
  virtual void open_done() {}
  /// What the index is, for messages: a file path, or a URL with its password replaced.
  virtual std::string name() const = 0;

  virtual std::vector<KnownRun> known() = 0;
  /// In one transaction: drops every row when drop_all, upserts `rows`, deletes `drop`, and
  /// recomputes every row's duplicate_of.
  virtual void write_rows(const std::vector<RunRow>& rows, const std::vector<std::string>& drop,
                          bool drop_all) = 0;
  virtual std::vector<RunRow> list(const RunFilter& filter) = 0;
  virtual std::optional<RunRow> find(const std::string& run_id) = 0;
  virtual std::vector<std::string> ids() = 0;
  virtual std::string integrity() = 0;
};

}  // namespace dyno::store
