// Selecting runs through a run index (docs/compare.md "Selecting runs through an index"):
// `compare --index URL` and `report --index URL` resolve run ids, prefixes, queries and
// campaign ids against the rows of a (shared) index — of every runs root it holds, or of the
// one --runs-root names — then read and check the records in the run directories, which
// remain the truth.
#pragma once

#include <boost/json/object.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "compare/select.h"
#include "store/index_reader.h"

namespace dyno::compare {

/// A query key the index stores: the manifest path and the row's column.
struct IndexedKey {
  std::string path;    ///< e.g. "engine.name"
  std::string column;  ///< e.g. "engine_name"
  bool text = true;    ///< a text column (else a number)
};

/// The manifest paths whose values the index keeps in a column. A query term on any other
/// path (and a term `key=null`) is answered from the manifests of the rows the other terms
/// leave.
const std::vector<IndexedKey>& indexed_keys();

/// True when the row's value for `key` (`row` as store::row_to_json gives it) matches `value`
/// as query_matches() matches the manifest's value; a null column matches nothing.
bool row_matches(const boost::json::object& row, const IndexedKey& key, const std::string& value);

class IndexSelection {
 public:
  /// `root`: only that runs root's rows (an existing directory; CompareError otherwise);
  /// nullopt: the rows of every runs root the index holds. The reader must outlive this.
  IndexSelection(store::IndexReader& reader, const std::optional<std::filesystem::path>& root);

  /// Resolves one selector to run directories, in run-id order, as resolve_selector() does
  /// over manifests: a query, a run directory's path, a campaign id (the campaign file in the
  /// runs root that holds it), a run id or a unique prefix. Throws CompareError when nothing
  /// matches, a prefix or id is ambiguous (the candidates with their roots), or a row's
  /// directory is gone or no longer verifies (naming the run, the directory and `runs
  /// reindex`). Unreadable manifests a query meets are left out and named in skipped().
  std::vector<std::filesystem::path> resolve(const std::string& selector);

  /// The campaign file `id` in the runs root that holds `run_dir`.
  std::optional<boost::json::object> campaign_of(const std::filesystem::path& run_dir,
                                                 const std::string& id) const;

  const std::vector<std::string>& skipped() const { return skipped_; }

 private:
  std::vector<std::filesystem::path> by_query(const std::string& selector);
  std::optional<std::vector<std::filesystem::path>> by_campaign(const std::string& selector);
  std::vector<std::filesystem::path> by_id(const std::string& selector);
  /// <root>/<run_id> when it holds a manifest.json; else the stale-row error.
  std::filesystem::path existing_dir(const store::IndexedRun& run) const;
  [[noreturn]] void stale(const store::IndexedRun& run, const std::string& why) const;
  /// "runs root R" or "N runs roots"; checks once that an explicit root has rows.
  std::string scope();

  store::IndexReader& reader_;
  std::optional<std::filesystem::path> root_;
  std::optional<std::vector<std::filesystem::path>> roots_;  ///< read once
  std::vector<std::string> skipped_;
};

}  // namespace dyno::compare
