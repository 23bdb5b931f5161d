// Where runs are recorded and indexed and what their records keep (flags --runs-root, --index,
// --label, --keep-outputs, --no-chunk-times).
#pragma once

#include <optional>
#include <string>

namespace dyno::record {

struct RecordOptions {
  std::string runs_root = "runs";
  /// --index: a PostgreSQL run index for the finished runs (docs/store.md "A shared index");
  /// unset: DYNO_INDEX_URL, else <runs_root>/index.sqlite.
  std::optional<std::string> index;
  std::string label;
  bool keep_outputs = false;    ///< answers' text in requests.jsonl
  bool no_chunk_times = false;  ///< no per-event times in requests.jsonl
};

}  // namespace dyno::record
