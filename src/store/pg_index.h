// The run index in PostgreSQL (docs/store.md "A shared index"): one database may hold the rows
// of several runs roots, each row keyed by (root, run_id). dyno creates and migrates its
// tables: dyno_meta(key, value) holds schema_version (kPgIndexSchemaVersion); dyno_runs holds
// the rows, with the same columns as index.sqlite plus `root`. Internal to the record module.
#pragma once

#include <filesystem>
#include <memory>
#include <ostream>
#include <string>

#include "store/index_backend.h"
#include "store/index_reader.h"

namespace dyno::store {

/// The version of dyno's PostgreSQL tables. An older schema (or none) is recreated and every
/// runs root re-indexed from its directories (the index is a cache); a newer one is refused,
/// so dyno versions sharing a database do not drop each other's tables.
/// 1: the columns of kIndexSchemaVersion 4 plus `root`; 2: `record_sha256` (a schema of
/// version 1 gains it in place, its rows null).
inline constexpr int kPgIndexSchemaVersion = 2;
static_assert(kIndexSchemaVersion == 5, "a new index layout needs a new kPgIndexSchemaVersion");

/// Connects to the database `url` names (libpq: the URL, PG* variables, ~/.pgpass) and makes
/// sure dyno's tables are there at kPgIndexSchemaVersion. Throws IndexError naming the URL
/// (password replaced by ***) when the server cannot be reached or refuses, or the schema is
/// newer than this dyno's.
std::unique_ptr<IndexBackend> open_pg_index(const std::filesystem::path& runs_root,
                                            const std::string& url, std::ostream& warnings);

/// The pattern of a GLOB filter (`*`, `?`, `[...]`, `[^...]`, as SQLite's GLOB reads it) as an
/// anchored POSIX regular expression for PostgreSQL's `~`; nullopt for a pattern SQLite's
/// GLOB matches nothing with (an unclosed `[`).
std::optional<std::string> glob_to_regex(const std::string& glob);

}  // namespace dyno::store
