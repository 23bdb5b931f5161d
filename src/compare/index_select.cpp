#include "compare/index_select.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <system_error>

#include "record/record_reader.h"

namespace dyno::compare {

namespace fs = std::filesystem;
namespace json = boost::json;

const std::vector<IndexedKey>& indexed_keys() {
  static const std::vector<IndexedKey> keys{
      {"campaign", "campaign", true},
      {"label", "label", true},
      {"status", "status", true},
      {"engine.name", "engine_name", true},
      {"engine.version", "engine_version", true},
      {"model.id", "model_id", true},
      {"model.revision", "model_revision", true},
      {"model.fingerprint", "model_fingerprint", true},
      {"workload.protocol.name", "protocol", true},
      {"workload.protocol.cell", "cell", true},
      {"workload.request_stream.sha256", "stream_sha256", true},
      {"load.mode", "load_mode", true},
      {"hardware.host", "host", true},
      {"source.format", "source", true},
      {"load.concurrency", "concurrency", false},
      {"load.rate_per_s", "rate_per_s", false},
      {"workload.request_stream.count", "stream_count", false}};
  return keys;
}

namespace {

const IndexedKey* indexed_key(const QueryTerm& t) {
  if (t.value == "null") return nullptr;  // the index cannot tell null from absent
  for (const auto& k : indexed_keys()) {
    if (k.path == t.path) return &k;
  }
  return nullptr;
}

/// As select.cpp reads a query value as a number (std::stod, the whole text, finite): a value
/// that does not read as one matches only the same text.
bool looks_numeric(const std::string& s) {
  if (s.empty()) return false;
  try {
    std::size_t pos = 0;
    const double d = std::stod(s, &pos);
    return pos == s.size() && std::isfinite(d);
  } catch (const std::exception&) {
    return false;
  }
}

std::string join_runs(const std::vector<store::IndexedRun>& runs) {
  std::string list;
  for (std::size_t i = 0; i < runs.size() && i < 5; ++i) {
    list += (i == 0 ? "" : ", ") + runs[i].row.run_id + " (" + runs[i].root.string() + ")";
  }
  if (runs.size() > 5) list += ", …";
  return list;
}

}  // namespace

bool row_matches(const json::object& row, const IndexedKey& key, const std::string& value) {
  const json::value* v = row.if_contains(key.column);
  return v != nullptr && !v->is_null() && scalar_matches(*v, value);
}

IndexSelection::IndexSelection(store::IndexReader& reader, const std::optional<fs::path>& root)
    : reader_(reader) {
  if (root) {
    std::error_code ec;
    if (!fs::is_directory(*root, ec)) {
      throw CompareError("--runs-root: " + root->string() +
                         " is not a directory (give the directory that holds the run records)");
    }
    root_ = fs::canonical(*root);
  }
}

std::string IndexSelection::scope() {
  if (!roots_) {
    roots_ = root_ ? std::vector<fs::path>{*root_} : reader_.roots();
    if (root_) {
      const auto all = reader_.roots();
      if (std::find(all.begin(), all.end(), *root_) == all.end()) {
        throw CompareError("the run index " + reader_.name() + " holds no run of runs root " +
                           root_->string() + "; `dyno runs reindex --runs-root " + root_->string() +
                           "` with this index indexes it");
      }
    }
  }
  if (root_) return "runs root " + root_->string();
  return std::to_string(roots_->size()) + (roots_->size() == 1 ? " runs root" : " runs roots");
}

void IndexSelection::stale(const store::IndexedRun& run, const std::string& why) const {
  throw CompareError("run " + run.row.run_id + " (" + (run.root / run.row.run_id).string() + ") " +
                     why + "; the run index " + reader_.name() +
                     " is out of date: `dyno runs reindex --runs-root " + run.root.string() +
                     "` with this index brings it in line with the directories");
}

fs::path IndexSelection::existing_dir(const store::IndexedRun& run) const {
  const fs::path dir = run.root / run.row.run_id;
  std::error_code ec;
  if (!fs::is_regular_file(dir / "manifest.json", ec)) {
    stale(run, "is in the index, but its directory is gone (or holds no manifest.json)");
  }
  return dir;
}

std::vector<fs::path> IndexSelection::resolve(const std::string& selector) {
  if (selector.empty()) throw CompareError("an empty run selector");
  if (selector.find('=') != std::string::npos) return by_query(selector);
  const fs::path as_path(selector);
  std::error_code ec;
  if (fs::is_directory(as_path, ec) && fs::exists(as_path / "manifest.json", ec)) return {as_path};
  if (auto campaign = by_campaign(selector)) return std::move(*campaign);
  return by_id(selector);
}

std::vector<fs::path> IndexSelection::by_query(const std::string& selector) {
  const std::vector<QueryTerm> terms = parse_query(selector);
  const std::string where = scope();
  std::vector<std::pair<const IndexedKey*, const QueryTerm*>> stored;
  std::vector<QueryTerm> stored_terms, other_terms;
  store::IndexQuery q;
  q.root = root_;
  for (const auto& t : terms) {
    const IndexedKey* k = indexed_key(t);
    (k != nullptr ? stored_terms : other_terms).push_back(t);
    if (k == nullptr) continue;
    stored.emplace_back(k, &t);
    // Text equality in the database; a value that reads as a number also matches the same
    // number written otherwise ("4" and "4.0"), which only the row check below sees.
    if (k->text && !looks_numeric(t.value)) q.equals.push_back({k->column, t.value});
  }
  std::vector<store::IndexedRun> chosen;
  for (auto& run : reader_.rows(q)) {
    const bool unreadable = run.row.status == "unreadable";
    const json::object row = store::row_to_json(run.row);
    if (!unreadable && !std::all_of(stored.begin(), stored.end(), [&row](const auto& s) {
          return row_matches(row, *s.first, s.second->value);
        })) {
      continue;
    }
    const fs::path dir = existing_dir(run);
    json::object manifest;
    try {
      manifest = record::read_record_json(dir / "manifest.json");
    } catch (const record::RecordReadError& e) {
      if (!unreadable) stale(run, std::string("no longer verifies: ") + e.what());
      // As a scan of the manifests leaves it out (named once, however many queries meet it).
      if (std::find(skipped_.begin(), skipped_.end(), e.what()) == skipped_.end()) {
        skipped_.push_back(e.what());
      }
      continue;
    }
    if (!unreadable && !query_matches(manifest, stored_terms)) {
      stale(run, "no longer verifies: its manifest.json does not say what the index holds (" +
                     selector + ")");
    }
    if (query_matches(manifest, unreadable ? terms : other_terms)) chosen.push_back(run);
  }
  for (std::size_t i = 1; i < chosen.size(); ++i) {
    if (chosen[i].row.run_id == chosen[i - 1].row.run_id) {
      throw CompareError("query '" + selector + "' selects run " + chosen[i].row.run_id +
                         " in two runs roots of the run index " + reader_.name() + " (" +
                         chosen[i - 1].root.string() + ", " + chosen[i].root.string() +
                         "); give --runs-root to choose one");
    }
  }
  if (chosen.empty()) {
    throw CompareError("query '" + selector + "' matches no run in the run index " +
                       reader_.name() + " (" + where +
                       "; check the values against the runs' manifest.json)");
  }
  std::vector<fs::path> out;
  for (const auto& run : chosen) out.push_back(run.root / run.row.run_id);
  return out;
}

std::optional<std::vector<fs::path>> IndexSelection::by_campaign(const std::string& selector) {
  scope();  // reads the roots once
  std::vector<fs::path> holders;
  for (const auto& root : *roots_) {
    if (read_campaign(root, selector)) holders.push_back(root);
  }
  if (holders.empty()) return std::nullopt;
  if (holders.size() > 1) {
    throw CompareError("campaign " + selector + " is in " + std::to_string(holders.size()) +
                       " runs roots of the run index " + reader_.name() + " (" +
                       holders[0].string() + ", " + holders[1].string() +
                       "); give --runs-root to choose one");
  }
  return resolve_selector(selector, holders[0], {});
}

std::vector<fs::path> IndexSelection::by_id(const std::string& selector) {
  const std::string where = scope();
  store::IndexQuery q;
  q.root = root_;
  q.id_prefix = selector;
  const std::vector<store::IndexedRun> found = reader_.rows(q);
  std::vector<store::IndexedRun> exact;
  std::copy_if(found.begin(), found.end(), std::back_inserter(exact),
               [&selector](const store::IndexedRun& r) { return r.row.run_id == selector; });
  if (exact.size() > 1) {
    throw CompareError("run " + selector + " is in " + std::to_string(exact.size()) +
                       " runs roots of the run index " + reader_.name() + ": " + join_runs(exact) +
                       "; give --runs-root to choose one");
  }
  if (exact.size() == 1) return {existing_dir(exact[0])};
  if (found.size() == 1) return {existing_dir(found[0])};
  if (found.empty()) {
    throw CompareError("'" + selector +
                       "' is not a run id, a run directory, a campaign id or a query "
                       "(key=value) in the run index " +
                       reader_.name() + " (" + where + ")");
  }
  throw CompareError("run id prefix '" + selector + "' matches " + std::to_string(found.size()) +
                     " runs in the run index " + reader_.name() + ": " + join_runs(found) +
                     "; give more of the id");
}

std::optional<json::object> IndexSelection::campaign_of(const fs::path& run_dir,
                                                        const std::string& id) const {
  return read_campaign(run_dir.parent_path(), id);
}

}  // namespace dyno::compare
