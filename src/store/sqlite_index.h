// The run index in SQLite: <runs-root>/index.sqlite in WAL mode, or a database in memory for a
// runs root that cannot be written (run_index.h says what the index is). Internal to the record
// module.
#pragma once

#include <filesystem>
#include <memory>
#include <ostream>

#include "store/index_backend.h"

namespace dyno::store {

/// Opens <runs_root>/index.sqlite, creating it when missing; an index that is not an SQLite
/// database, is corrupt or has another layout version is moved aside to index.sqlite.bad (a
/// warning on `warnings`) and recreated empty. Until open_done(), holds the flock on
/// <runs_root>/index.lock that serialises opening and rebuilding between processes.
std::unique_ptr<IndexBackend> open_sqlite_index(const std::filesystem::path& runs_root,
                                                std::ostream& warnings);
/// An empty index in memory (opened() == created).
std::unique_ptr<IndexBackend> memory_sqlite_index(const std::filesystem::path& runs_root);

}  // namespace dyno::store
