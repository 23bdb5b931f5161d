// One run as the index knows it (the run store's index, run_index.h): its row — identity from
// manifest.json, headline figures from summary.json —, read from a run directory, with the
// row's columns listed once for every backend, the filters and sort keys of `runs list`, the
// duplicate key, and which directories of a runs root are runs.
#pragma once

#include <boost/json/object.hpp>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "store/index_error.h"

namespace dyno::store {

/// Version of the index's own table layout (PRAGMA user_version). An index of another version
/// is dropped and rebuilt: it is only a cache.
/// 3: the duplicate key holds the protocol cell; 4: the `source` column (imported records);
/// 5: the `record_sha256` column (an index of version 4 gains it in place, its rows null)
inline constexpr int kIndexSchemaVersion = 5;
inline constexpr const char* kIndexFileName = "index.sqlite";
/// Serialises opening, recovering and rebuilding the index between processes (flock).
inline constexpr const char* kIndexLockName = "index.lock";

/// One run as the index knows it: identity from manifest.json, headline figures from
/// summary.json. Absent or null values are nullopt.
struct RunRow {
  std::string run_id;  ///< the directory's name
  std::string started_at;
  std::optional<std::string> ended_at;
  std::string status;  ///< the manifest's status, or "unreadable" (see `problem`)
  std::optional<std::string> label;
  std::optional<std::string> campaign;
  std::optional<std::string> protocol;  ///< workload.protocol.name
  std::optional<std::string> cell;      ///< workload.protocol.cell
  std::optional<std::string> source;    ///< an imported record's source.format (dyno import)
  std::optional<std::string> engine_name;
  std::optional<std::string> engine_version;
  std::string engine_args;  ///< compact JSON of engine.engine_args
  std::optional<std::string> model_id;
  std::optional<std::string> model_revision;
  std::optional<std::string> model_fingerprint;
  std::optional<std::string> host;
  std::string gpus;  ///< GPU names, ", "-separated ("" without GPUs)
  std::optional<std::string> stream_sha256;
  std::optional<std::int64_t> stream_count;
  std::optional<std::string> load_mode;  ///< closed | open
  std::optional<std::int64_t> concurrency;
  std::optional<double> rate_per_s;
  // Headline figures (summary.json; definitions in docs/metrics.md).
  std::optional<std::int64_t> requests_ok;
  std::optional<std::int64_t> requests_failed;
  std::optional<double> error_rate;
  std::optional<double> output_tokens_per_s;
  std::optional<double> requests_per_s;
  std::optional<double> ttft_p50_ms;
  std::optional<double> tpot_p50_ms;
  std::optional<double> e2e_p50_ms;
  std::optional<double> accuracy;
  /// sha256 of the duplicate key (duplicate_key()); "" for a run that is not finished or not
  /// readable, which never counts as a duplicate.
  std::string identity_key;
  /// The earliest run (by started_at, then id) with the same identity key, when not this one.
  std::optional<std::string> duplicate_of;
  /// Why the record could not be read fully (null when it could).
  std::optional<std::string> problem;
  /// What the row was read from: size, mtime, ctime and inode of manifest.json and
  /// summary.json (files_stamp()). sync() reads a run again when they changed; not in
  /// row_to_json (bookkeeping of the cache, not a fact about the run).
  std::string files_stamp;
  /// The sha256 of the record's SHA256SUMS (what a campaign file pins) as the index first saw
  /// it: read_run_row gives the digest now; RunIndex keeps a digest it remembers when it reads
  /// the run again (sync, rebuild) and replaces it only in upsert (dyno wrote the record). null
  /// without SHA256SUMS, and in rows indexed before dyno remembered digests.
  std::optional<std::string> record_sha256;
};

/// The stamp of a run directory's manifest.json and summary.json as they are now (a file
/// rewritten, replaced, truncated or removed changes it).
std::string files_stamp(const std::filesystem::path& run_dir);

/// The JSON form of a row (keys as the struct's members; used by `runs list --json`).
boost::json::object row_to_json(const RunRow& row);

/// Reads one run directory into a row (no database involved). Never throws for a bad record:
/// status "unreadable" and `problem` say what was wrong.
RunRow read_run_row(const std::filesystem::path& run_dir);

/// The canonical text of what makes two runs "the same run": engine identity (name, version,
/// engine_args, sim_profile), model (id, revision, fingerprint), the request stream's sha256,
/// sampling and the load configuration (the manifest's `load` object); for a derived record
/// (`derived_from`), also how it was derived (kind, scorer, the deriving dyno's executable
/// SHA-256), so it is never a duplicate of a measured run; for an imported record (`source`),
/// only the source's format and file sha256. Keys sorted, compact.
std::string duplicate_key(const boost::json::object& manifest);

/// The run directories under a runs root: sub-directories holding a manifest.json, except
/// `campaigns` and names starting with '.'. Sorted by name. Empty when the root is missing.
std::vector<std::string> run_directory_names(const std::filesystem::path& runs_root);

/// Filters of `runs list`. Text filters are GLOB patterns as SQLite's GLOB reads them (`*`, `?`,
/// `[...]`; exact when they hold none). Dates compare with started_at at the precision given, both
/// ends inclusive ("2026-11" .. "2026-11-29T12").
struct RunFilter {
  std::optional<std::string> campaign;
  std::optional<std::string> engine;  ///< engine name
  std::optional<std::string> model;   ///< model id
  std::optional<std::string> protocol;
  std::optional<std::string> status;
  std::optional<std::string> label;
  std::optional<std::string> since;
  std::optional<std::string> until;
  std::string sort = "started";  ///< one of sort_keys()
  bool descending = false;
  std::optional<std::size_t> limit;
};

/// The names `RunFilter::sort` accepts: started, id, status, tok_s, req_s, ttft, tpot, e2e,
/// error_rate, accuracy.
const std::vector<std::string>& sort_keys();

// ---- the row's fields, listed once ------------------------------------------------------------

/// Calls f(name, member) for every column, in table order.
template <typename Row, typename F>
void for_each_field(Row& r, F&& f) {
  f("run_id", r.run_id);
  f("started_at", r.started_at);
  f("ended_at", r.ended_at);
  f("status", r.status);
  f("label", r.label);
  f("campaign", r.campaign);
  f("protocol", r.protocol);
  f("cell", r.cell);
  f("source", r.source);
  f("engine_name", r.engine_name);
  f("engine_version", r.engine_version);
  f("engine_args", r.engine_args);
  f("model_id", r.model_id);
  f("model_revision", r.model_revision);
  f("model_fingerprint", r.model_fingerprint);
  f("host", r.host);
  f("gpus", r.gpus);
  f("stream_sha256", r.stream_sha256);
  f("stream_count", r.stream_count);
  f("load_mode", r.load_mode);
  f("concurrency", r.concurrency);
  f("rate_per_s", r.rate_per_s);
  f("requests_ok", r.requests_ok);
  f("requests_failed", r.requests_failed);
  f("error_rate", r.error_rate);
  f("output_tokens_per_s", r.output_tokens_per_s);
  f("requests_per_s", r.requests_per_s);
  f("ttft_p50_ms", r.ttft_p50_ms);
  f("tpot_p50_ms", r.tpot_p50_ms);
  f("e2e_p50_ms", r.e2e_p50_ms);
  f("accuracy", r.accuracy);
  f("identity_key", r.identity_key);
  f("duplicate_of", r.duplicate_of);
  f("problem", r.problem);
  f("files_stamp", r.files_stamp);
  f("record_sha256", r.record_sha256);  // last: an index of version 4 gains it in place
}

/// "run_id, started_at, …" in table order.
std::string column_list();
std::size_t column_count();
/// The column a sort key (sort_keys()) orders by; throws IndexError for an unknown key.
const std::string& sort_column(const std::string& key);

}  // namespace dyno::store
