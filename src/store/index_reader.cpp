// Index readers (index_reader.h): the text columns a query may compare, and a reader over one
// runs root's RunIndex. The PostgreSQL reader is in pg_index.cpp.
#include "store/index_reader.h"

#include <algorithm>
#include <system_error>

#include "store/index_backend.h"
#include "store/index_url.h"
#include "store/pg_index.h"

namespace dyno::store {

namespace fs = std::filesystem;

const std::vector<std::string>& indexed_text_columns() {
  static const std::vector<std::string> columns{"run_id",   "status",         "label",
                                                "campaign", "protocol",       "cell",
                                                "source",   "engine_name",    "engine_version",
                                                "model_id", "model_revision", "model_fingerprint",
                                                "host",     "stream_sha256",  "load_mode"};
  return columns;
}

namespace {

/// The value of a text column of `row` (nullopt when null); throws for another column.
std::optional<std::string> text_column(const RunRow& row, const std::string& column) {
  std::optional<std::string> out;
  bool found = false;
  for_each_field(row, [&](const char* name, const auto& v) {
    if (column != name) return;
    using T = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<T, std::string>) {
      out = v;
      found = true;
    } else if constexpr (std::is_same_v<T, std::optional<std::string>>) {
      out = v;
      found = true;
    }
  });
  if (!found) throw IndexError("'" + column + "' is not a text column of the run index");
  return out;
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
      if (q.id_prefix && row.run_id.rfind(*q.id_prefix, 0) != 0) continue;
      const bool keep =
          row.status == "unreadable" ||
          std::all_of(q.equals.begin(), q.equals.end(), [&row](const ColumnEquals& e) {
            return text_column(row, e.column) == e.value;
          });
      if (keep) out.push_back({root_, std::move(row)});
    }
    return out;
  }

 private:
  const RunIndex& index_;
  fs::path root_;
};

}  // namespace

std::unique_ptr<IndexReader> open_index_reader(const std::string& url) {
  check_index_url(url);
  return open_pg_index_reader(url);
}

std::unique_ptr<IndexReader> index_reader_of(const RunIndex& index, const fs::path& runs_root) {
  return std::make_unique<RunIndexReader>(index, runs_root);
}

}  // namespace dyno::store
