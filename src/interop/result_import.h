// `dyno import FORMAT FILE…`: another tool's saved result as a run record of the store
// (docs/interop.md, docs/record.md "Imported records"). A format's reader (import_vllm.h …)
// turns the file's bytes into an ImportedResult; write_imported_run() writes the record: a
// new run id, manifest `source`, the file's bytes as evidence, requests.jsonl when the file
// has per-request data (the figures then computed by dyno's own summary code), SHA256SUMS.
#pragma once

#include <boost/json/object.hpp>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "error/error.h"
#include "metrics/summary.h"
#include "metrics/trace.h"
#include "record/manifest.h"

namespace dyno::digest {
class SigningKey;
}

namespace dyno::interop {

/// A file that cannot be imported: the message names the file, the JSON path or line, and
/// what was expected (exit 2).
class ImportFileError : public Error {
 public:
  explicit ImportFileError(const std::string& message) : Error(ErrorKind::input, message) {}
};

/// Why a field the imported file does not give is null (the `unknown` objects).
inline constexpr const char* kNotInFile = "not in the imported file";

/// What a format's reader makes of one file.
struct ImportedResult {
  /// tool, tool_version, format, timing and file_fields; file, sha256 and imported_at are
  /// filled by write_imported_run.
  record::ImportSource source;
  std::optional<std::string> label;  ///< the file's own label, when it has one
  std::optional<std::string> model_id;
  std::optional<std::string> engine_name;
  /// chat | completions, from the file's endpoint type; in_process for a benchmark that runs
  /// the engine inside its own process (llama-bench): no HTTP API at all. nullopt when the
  /// file does not say (then `dyno import --api` must).
  std::optional<std::string> api;
  /// What a board pairs the record with (workload.protocol.pairs_as and .cell): nullopt, a
  /// plain run at the file's load (cell c<C> or r<rate>); set when the file names a protocol
  /// and its cell (a ledger's columns).
  std::optional<std::string> pairs_as;
  std::optional<std::string> cell;
  /// Requests the tool sent (measured); 0: the file does not say (a ledger without a count):
  /// workload.request_stream.count is written null.
  std::uint64_t requests = 0;
  record::LoadSection load;   ///< imported = true
  std::string status = "ok";  ///< ok | partial | failed
  /// Per-request data as traces (timing: "shared_clock" or "per_request"); empty when the
  /// file has none ("summary_only").
  std::vector<metrics::Trace> traces;
  /// summary_only: the figures whose definitions match dyno's (docs/interop.md); the rest
  /// absent. Otherwise unused: the figures are computed from `traces`.
  metrics::Summary summary;

  // What an in-process benchmark's file says of the engine and the machine (llama-bench);
  // nullopt: not in the file (null with its reason in the record).
  std::optional<std::string> engine_version;  ///< engine.version
  std::optional<std::string> engine_commit;   ///< engine.source.commit (the build's commit)
  std::optional<std::string> model_revision;  ///< model.revision (a ledger's column)
  /// workload.request_stream.sha256: the stream's canonical hash as the file states it.
  std::optional<std::string> request_stream_sha256;
  std::optional<std::string> cpu_model;  ///< hardware.cpu_model
  /// hardware.gpus (device_identity entries); nullopt: unknown, `gpus_unknown` says why.
  std::optional<boost::json::array> gpus;
  std::string gpus_unknown;
  /// summary.json server.timings: the engine's own timing of an in-process benchmark (its
  /// prefill and decode rates per repetition), or the engine-timed figures a ledger states
  /// (source "stated by the imported file"); nullopt: none (server is null).
  std::optional<boost::json::object> engine_timings;
  /// summary_only: paths of summary.json counts the file does not give ("requests.ok",
  /// "tokens.input_total", "latency_ms.ttft.count"): written null, not the Summary's 0 (a
  /// ledger, `table`).
  std::vector<std::string> absent_counts;
};

struct ImportWriteOptions {
  std::filesystem::path runs_root;
  /// Where the record is written: a staging directory the caller moves it out of into
  /// runs_root (`dyno import`: nothing partial in the store when it is interrupted). Empty:
  /// straight into runs_root. A run id is never one that runs_root already holds.
  std::filesystem::path stage_root;
  std::optional<std::string> label;   ///< --label (default: the file's label, else the format)
  std::optional<std::string> model;   ///< --model: when the file names none, or to correct it
  std::optional<std::string> engine;  ///< --engine: the engine's name (the file rarely says)
  std::optional<std::string> api;     ///< --api: the endpoint, when the file does not say
  record::HarnessIdentity harness;    ///< the dyno that imports (manifest `harness`)
  std::chrono::system_clock::time_point now = std::chrono::system_clock::now();
  /// --sign-key: each record signed once written (record/signature.h); null: unsigned.
  std::shared_ptr<const digest::SigningKey> signing_key;
};

struct ImportOutcome {
  std::string run_id;
  std::filesystem::path dir;
  std::string file;                 ///< the file's name
  std::string sha256;               ///< of its bytes
  std::string timing;               ///< source.timing
  std::optional<std::string> part;  ///< source.part: which result of the file
};

/// A summary-only record's request counts: ok and failed (the tool's failures, category
/// `imported`), their total and the error rate.
void set_request_counts(metrics::Summary& summary, std::uint64_t ok, std::uint64_t failed);

/// The figures that need one time axis for every request (the service window and every
/// "/ W" rate, achieved concurrency, decode_tokens_per_s, goodput) made absent: for records
/// whose requests each have their own time origin (timing "per_request").
void drop_window_figures(metrics::Summary& summary);

/// The endpoint of `result`: the file's, else `flag` (--api). Throws ImportFileError naming the
/// file when neither says, or when they disagree.
std::string import_api(const ImportedResult& result, const std::optional<std::string>& flag,
                       const std::string& file_name);

/// The largest file `dyno import` reads (1 GiB): a report of thousands of benchmarks is tens of
/// MB; past this bound it is not a result file, and its JSON would not fit in memory.
inline constexpr std::uint64_t kMaxImportFileBytes = std::uint64_t{1} << 30;

/// The bytes of the file at `path` to import: a regular file only (a FIFO, a device such as
/// /dev/zero, a directory or a socket is refused before it is read, so dyno never waits on a
/// writer or reads without end), at most `max_bytes`. Throws ImportFileError naming the path
/// and what it is.
std::string read_import_file(const std::string& path,
                             std::uint64_t max_bytes = kMaxImportFileBytes);

/// The name a file's bytes are kept under in a record (evidence/<name>): its own name, with
/// what a record cannot hold made safe — control characters (a newline would split its
/// SHA256SUMS line), a backslash and bytes that are not UTF-8 (the manifest's JSON could not
/// name it) become '_', a name ending in ".tmp" (a writer's temporary file, which SHA256SUMS
/// leaves out) gets a '_' appended, and "", "." or ".." become "imported-file".
std::string safe_evidence_name(const std::string& file_name);

/// A file's bytes as its records keep them, made once per file and shared by every record of
/// it: secrets redacted (scrub_imported_text) and both digests.
struct ImportEvidence {
  std::string file;         ///< the name it is kept under (source.file, evidence/<file>)
  std::string sha256;       ///< of the file's bytes as they were (source.sha256)
  std::string kept;         ///< the bytes kept: secrets redacted
  std::string kept_sha256;  ///< of `kept` (the manifest's evidence digest)
  bool redacted = false;    ///< kept != the file's bytes
};
ImportEvidence import_evidence(const std::string& file_name, const std::string& bytes);

/// What an imported file may hold that never reaches a record: the secrets scrub_text finds by
/// their shape (Authorization headers, bearer tokens, NAME=VALUE pairs, bare sk-…/hf_… keys)
/// and the user information (a password) of every URL.
void scrub_imported_text(std::string& text);

/// Writes the record of `result` (read from the file `evidence` keeps) under
/// options.stage_root (else options.runs_root): `evidence.kept` becomes evidence/<file> (its
/// digest in the manifest's evidence list; `source.sha256` the original's). `shared`: the
/// evidence copy an earlier record of the same file wrote, hard-linked into this record (one
/// copy on disk for all of them; a filesystem without hard links gets a copy); empty: this
/// record writes it and sets `shared`. Nothing stays behind when a write fails (the run
/// directory is removed). Throws RecordError. Does not index the record.
ImportOutcome write_imported_record(const ImportedResult& result, const ImportEvidence& evidence,
                                    const ImportWriteOptions& options,
                                    std::filesystem::path& shared);

/// write_imported_record of one result of the file named `file_name` (kept under that name as
/// it is) whose bytes are `bytes`.
ImportOutcome write_imported_run(const ImportedResult& result, const std::string& file_name,
                                 const std::string& bytes, const ImportWriteOptions& options);

}  // namespace dyno::interop
