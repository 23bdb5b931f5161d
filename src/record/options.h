// Where runs are recorded and indexed, what their records keep and who signs them (flags
// --runs-root, --index, --label, --keep-outputs, --no-chunk-times, --sign-key).
#pragma once

#include <memory>
#include <optional>
#include <string>

namespace dyno::digest {
class SigningKey;
}

namespace dyno::record {

struct RecordOptions {
  std::string runs_root = "runs";
  /// --index: a PostgreSQL run index for the finished runs (docs/store.md "A shared index");
  /// unset: DYNO_INDEX_URL, else <runs_root>/index.sqlite.
  std::optional<std::string> index;
  std::string label;
  bool keep_outputs = false;    ///< answers' text in requests.jsonl
  bool no_chunk_times = false;  ///< no per-event times in requests.jsonl
  /// --sign-key: a PEM Ed25519 private key; each record (and a protocol's campaign file) is
  /// signed with it (record/signature.h). "" = unsigned.
  std::string sign_key;
  /// The key --sign-key names, read once before anything runs (load_sign_key; null: unsigned).
  std::shared_ptr<const digest::SigningKey> signing_key;
};

}  // namespace dyno::record
