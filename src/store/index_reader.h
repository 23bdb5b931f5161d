// Reading a run index to find runs (docs/compare.md "Selecting runs through an index"): the
// rows of one runs root, or of every runs root a shared PostgreSQL index holds, each with the
// root it belongs to. Read only: nothing is created, migrated or synced, so `compare` and
// `report` never write to an index. The directories remain the truth: callers read the
// records from <root>/<run_id> and check them against the rows.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/run_row.h"

namespace dyno::store {

/// A row and the runs root it indexes (the canonical path the index stores).
struct IndexedRun {
  std::filesystem::path root;
  RunRow row;
};

/// A text column (run_index.h's RunRow member names) that must equal a value.
struct ColumnEquals {
  std::string column;
  std::string value;
};

/// What to read. Rows marked "unreadable" are returned whatever `equals` says (their columns
/// say nothing): callers read their manifests.
struct IndexQuery {
  std::optional<std::filesystem::path> root;  ///< nullopt: every runs root the index holds
  std::vector<ColumnEquals> equals;           ///< text columns only (indexed_text_columns())
  std::optional<std::string> id_prefix;       ///< run ids starting with this
};

/// The text columns an IndexQuery may compare.
const std::vector<std::string>& indexed_text_columns();

class IndexReader {
 public:
  virtual ~IndexReader() = default;
  IndexReader() = default;
  IndexReader(const IndexReader&) = delete;
  IndexReader& operator=(const IndexReader&) = delete;

  /// What the index is, for messages: a file, or a URL with its password replaced by ***.
  virtual std::string name() const = 0;
  /// The runs roots the index holds rows of, sorted.
  virtual std::vector<std::filesystem::path> roots() = 0;
  /// The rows the query selects, sorted by run id, then root. A backend may return more rows
  /// than `equals` asks for (callers check every row); never fewer.
  virtual std::vector<IndexedRun> rows(const IndexQuery& query) = 0;
};

/// A reader of the PostgreSQL index `url` names (defined with it, pg_index.cpp): the rows of
/// every runs root in the database; nothing is created or migrated. Throws IndexUrlError for a
/// malformed URL; IndexError (URL redacted) when the server cannot be reached, or holds no
/// dyno tables, or tables of another schema version (`runs reindex` creates or migrates them).
std::unique_ptr<IndexReader> open_index_reader(const std::string& url);

/// Whether `row` is one `query` selects, save its root: its id has the prefix, and it is
/// unreadable or every `equals` holds (throws IndexError for a column that is not a text one).
bool selects(const IndexQuery& query, const RunRow& row);

}  // namespace dyno::store
