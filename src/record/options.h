// Where runs are recorded and what their records keep (flags --runs-root, --label,
// --keep-outputs, --no-chunk-times).
#pragma once

#include <string>

namespace dyno::record {

struct RecordOptions {
  std::string runs_root = "runs";
  std::string label;
  bool keep_outputs = false;    ///< answers' text in requests.jsonl
  bool no_chunk_times = false;  ///< no per-event times in requests.jsonl
};

}  // namespace dyno::record
