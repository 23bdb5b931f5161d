// Where the run index keeps its rows (run_index.h): the interface RunIndex works through, with
// an SQLite implementation (sqlite_index.h, <runs-root>/index.sqlite) and a PostgreSQL one
// (pg_index.h, a shared database), and the row's columns listed once for both. Internal to the
// record module.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "store/run_index.h"

namespace dyno::store {

/// A run the index holds, as sync() needs to see it.
struct KnownRun {
  std::string run_id;
  bool read_again = false;  ///< running, unreadable or with a problem
  std::string files_stamp;
};

/// How a backend found its store when it opened it.
enum class IndexOpened {
  existing,   ///< a usable index: nothing to do
  created,    ///< there was none: every run must be indexed (rebuild)
  new_root,   ///< a shared index that holds no row of this runs root yet: rebuild, silently
  recovered,  ///< an unusable one was replaced (the backend has warned): rebuild
};

/// The storage of one runs root's rows. Writes are atomic (one transaction each) and
/// serialised against other writers of the same runs root; reads see committed rows.
class IndexBackend {
 public:
  virtual ~IndexBackend() = default;
  IndexBackend() = default;
  IndexBackend(const IndexBackend&) = delete;
  IndexBackend& operator=(const IndexBackend&) = delete;

  virtual IndexOpened opened() const = 0;
  /// Called once RunIndex has rebuilt what opened() asked for: releases what the opening held.
  virtual void open_done() {}
  /// What the index is, for messages: a file path, or a URL with its password replaced.
  virtual std::string name() const = 0;

  virtual std::vector<KnownRun> known() = 0;
  /// In one transaction: drops every row when drop_all, upserts `rows`, deletes `drop`, and
  /// recomputes every row's duplicate_of.
  virtual void write_rows(const std::vector<RunRow>& rows, const std::vector<std::string>& drop,
                          bool drop_all) = 0;
  virtual std::vector<RunRow> list(const RunFilter& filter) = 0;
  virtual std::optional<RunRow> find(const std::string& run_id) = 0;
  virtual std::vector<std::string> ids() = 0;
  virtual std::string integrity() = 0;
};

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
}

/// "run_id, started_at, …" in table order.
std::string column_list();
std::size_t column_count();
/// The column a sort key (sort_keys()) orders by; throws IndexError for an unknown key.
const std::string& sort_column(const std::string& key);

}  // namespace dyno::store
