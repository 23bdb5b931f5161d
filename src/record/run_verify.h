// `dyno runs verify`: is a run directory intact and readable?
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace dyno::record {

/// One thing wrong with a record.
struct VerifyProblem {
  std::string check;  ///< "sha256sums", "files", "manifest", "summary", "requests", "evidence"
  std::string path;   ///< the file concerned, relative to the run directory ("" for the whole)
  std::string message;
};

struct VerifyReport {
  std::filesystem::path dir;
  std::size_t files_checked = 0;  ///< files whose digest was compared
  std::vector<VerifyProblem> problems;
  /// What could not be checked without failing the record (e.g. a campaign file written before
  /// campaign files were signed).
  std::vector<std::string> notes;
  /// The fingerprint of the key whose signature of the record (its SIGNATURE) or campaign file
  /// (its .sig sidecar) verifies; "" when unsigned or the signature fails (record/signature.h).
  std::string signed_by;
  bool ok() const { return problems.empty(); }
};

/// Checks a run directory: SHA256SUMS exists, every line names a file of the directory whose
/// digest matches, and no file besides SHA256SUMS and SIGNATURE is unlisted; a SIGNATURE, when
/// there is one, verifies (record/signature.h; check "signature"); manifest.json and summary.json
/// parse as JSON objects with a known schema_version and agree with the directory's name and
/// each other; every requests.jsonl line parses; every evidence file the manifest lists exists
/// with its digest. Never throws for a bad record (that is what the report is for).
/// `schema`: also hold manifest, summary, request and telemetry lines to docs/schema/ (check
/// "schema"); without it only integrity and readability are checked (what scrubbing requires
/// before it re-signs a record). `required_signer` (a key fingerprint, `runs verify
/// --verify-key`): the record must carry a valid signature by that key.
VerifyReport verify_run_dir(const std::filesystem::path& dir, bool schema = true,
                            const std::string& required_signer = "");

/// Whether a schema problem at `at` ("<file>#<JSON pointer>") is a value scrubbing replaced:
/// `at` is in `scrubbed_fields`, or holds one of them (an object or array: anyOf reports there).
/// Such a value ("<scrubbed:port>") is not held to its schema.
bool excused_by_scrubbing(const std::vector<std::string>& scrubbed_fields, const std::string& at);

/// The SHA256SUMS part of verify_run_dir alone (checks "sha256sums" and "files"): every listed
/// file's digest, nothing unlisted (SIGNATURE aside). What a board reads of a record's integrity
/// (read_run).
VerifyReport verify_run_sums(const std::filesystem::path& dir);

}  // namespace dyno::record
