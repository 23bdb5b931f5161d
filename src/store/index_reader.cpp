// Index readers (index_reader.h): the text columns a query may compare and which rows it
// selects. The readers are with their indexes: run_index.cpp (one runs root's), pg_index.cpp.
#include "store/index_reader.h"

#include <algorithm>
#include <system_error>

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

}  // namespace

bool selects(const IndexQuery& q, const RunRow& row) {
  if (q.id_prefix && row.run_id.rfind(*q.id_prefix, 0) != 0) return false;
  return row.status == "unreadable" ||
         std::all_of(q.equals.begin(), q.equals.end(), [&row](const ColumnEquals& e) {
           return text_column(row, e.column) == e.value;
         });
}

}  // namespace dyno::store
