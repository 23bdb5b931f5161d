// The run index (index.sqlite, a cache of the run directories): reading a record into a row,
// the table's columns listed once, opening and recovering the database under a lock, syncing
// with the directories, and queries. Just over 700 lines because these are one cache's code;
// SQLite's statement wrappers are already apart (sqlite_statement.h).
#include "record/run_index.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <system_error>
#include <thread>

#include "json/json_text.h"
#include "record/run_writer.h"
#include "record/sqlite_statement.h"

namespace dyno::record {

namespace fs = std::filesystem;
namespace json = boost::json;

using sqlite::exec;
using sqlite::Statement;
using sqlite::Transaction;

namespace {

// ---- reading a record ------------------------------------------------------------------------

const json::value* at_path(const json::object& o, std::initializer_list<std::string_view> keys) {
  const json::object* cur = &o;
  const json::value* v = nullptr;
  for (std::string_view k : keys) {
    if (cur == nullptr) return nullptr;
    v = cur->if_contains(k);
    if (v == nullptr) return nullptr;
    cur = v->if_object();
  }
  return v;
}

std::optional<std::string> opt_str(const json::object& o,
                                   std::initializer_list<std::string_view> keys) {
  const json::value* v = at_path(o, keys);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return std::string(v->get_string());
}

std::optional<double> opt_num(const json::object& o, std::initializer_list<std::string_view> keys) {
  const json::value* v = at_path(o, keys);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->to_number<double>();
}

std::optional<std::int64_t> opt_int(const json::object& o,
                                    std::initializer_list<std::string_view> keys) {
  const json::value* v = at_path(o, keys);
  if (v == nullptr) return std::nullopt;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64()) return static_cast<std::int64_t>(v->get_uint64());
  return std::nullopt;
}

json::value value_or_null(const json::object& o, std::initializer_list<std::string_view> keys) {
  const json::value* v = at_path(o, keys);
  return v == nullptr ? json::value(nullptr) : *v;
}

/// A copy with every object's keys sorted (canonical form for hashing).
json::value canonical(const json::value& v) {
  if (const auto* a = v.if_array()) {
    json::array out;
    for (const auto& e : *a) out.push_back(canonical(e));
    return out;
  }
  if (const auto* o = v.if_object()) {
    std::vector<std::string_view> keys;
    for (const auto& kv : *o) keys.push_back(kv.key());
    std::sort(keys.begin(), keys.end());
    json::object out;
    for (std::string_view k : keys) out[k] = canonical(o->at(k));
    return out;
  }
  return v;
}

json::object parse_object(const fs::path& path) {
  const std::string text = read_file(path);
  std::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) throw RecordError(path.filename().string() + " is not valid JSON: " + ec.message());
  if (!v.is_object()) throw RecordError(path.filename().string() + " is not a JSON object");
  return std::move(v.as_object());
}

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

const char* sql_type(const std::string&) { return "TEXT NOT NULL"; }
const char* sql_type(const std::optional<std::string>&) { return "TEXT"; }
const char* sql_type(const std::optional<std::int64_t>&) { return "INTEGER"; }
const char* sql_type(const std::optional<double>&) { return "REAL"; }

json::value to_json(const std::string& v) { return json::value(v); }
json::value to_json(const std::optional<std::string>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}
json::value to_json(const std::optional<std::int64_t>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}
json::value to_json(const std::optional<double>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

std::string column_list() {
  std::string out;
  RunRow probe;
  for_each_field(probe, [&out](const char* name, const auto&) {
    if (!out.empty()) out += ", ";
    out += name;
  });
  return out;
}

std::size_t column_count() {
  std::size_t n = 0;
  RunRow probe;
  for_each_field(probe, [&n](const char*, const auto&) { ++n; });
  return n;
}

// ---- SQLite ----------------------------------------------------------------------------------

/// An exclusive flock on <root>/index.lock while opening, recovering or rebuilding the index,
/// so two processes never both move a bad index aside or rebuild at once.
class IndexLock {
 public:
  explicit IndexLock(const fs::path& root) {
    const fs::path path = root / kIndexLockName;
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      throw IndexError("cannot open " + path.string() + ": " + std::strerror(errno));
    }
    // Another process holds it only while opening or rebuilding the index: wait, with a
    // deadline so a stuck process is reported rather than waited on for ever.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) {
        const std::string cause = std::strerror(errno);
        ::close(fd_);
        throw IndexError("cannot lock " + path.string() + ": " + cause);
      }
      if (std::chrono::steady_clock::now() > deadline) {
        ::close(fd_);
        throw IndexError(path.string() + " has been locked by another dyno process for 120 s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ~IndexLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  IndexLock(const IndexLock&) = delete;
  IndexLock& operator=(const IndexLock&) = delete;

 private:
  int fd_ = -1;
};

/// Why an opened database is not a usable index ("" when it is).
std::string unusable_reason(sqlite3* db) {
  std::string result;
  char* err = nullptr;
  const int rc = sqlite3_exec(
      db, "PRAGMA quick_check",
      [](void* out, int, char** values, char**) {
        auto* s = static_cast<std::string*>(out);
        if (values[0] != nullptr && std::strcmp(values[0], "ok") != 0) {
          if (!s->empty()) *s += "; ";
          *s += values[0];
        }
        return 0;
      },
      &result, &err);
  if (rc != SQLITE_OK) {
    std::string message = err != nullptr ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    return message;
  }
  if (!result.empty()) return "corrupt: " + result;
  int version = -1;
  sqlite3_exec(
      db, "PRAGMA user_version",
      [](void* out, int, char** values, char**) {
        *static_cast<int*>(out) = values[0] != nullptr ? std::atoi(values[0]) : -1;
        return 0;
      },
      &version, nullptr);
  if (version != kIndexSchemaVersion) {
    return "index layout version " + std::to_string(version) + ", this dyno uses " +
           std::to_string(kIndexSchemaVersion);
  }
  int columns = 0;
  sqlite3_exec(
      db, "SELECT count(*) FROM pragma_table_info('runs')",
      [](void* out, int, char** values, char**) {
        *static_cast<int*>(out) = values[0] != nullptr ? std::atoi(values[0]) : 0;
        return 0;
      },
      &columns, nullptr);
  if (static_cast<std::size_t>(columns) != column_count()) {
    return "the runs table has " + std::to_string(columns) + " columns, expected " +
           std::to_string(column_count());
  }
  return {};
}

const std::map<std::string, std::string>& sort_columns() {
  static const std::map<std::string, std::string> m{
      {"started", "started_at"},    {"id", "run_id"},
      {"status", "status"},         {"tok_s", "output_tokens_per_s"},
      {"req_s", "requests_per_s"},  {"ttft", "ttft_p50_ms"},
      {"tpot", "tpot_p50_ms"},      {"e2e", "e2e_p50_ms"},
      {"error_rate", "error_rate"}, {"accuracy", "accuracy"}};
  return m;
}

void remove_quietly(const fs::path& p) {
  std::error_code ec;
  fs::remove(p, ec);
}

}  // namespace

// ---- free functions ----------------------------------------------------------------------------

json::object row_to_json(const RunRow& row) {
  json::object o;
  for_each_field(row, [&o](const char* name, const auto& v) {
    if (std::string_view(name) != "files_stamp") o[name] = to_json(v);
  });
  return o;
}

std::string files_stamp(const fs::path& run_dir) {
  std::string out;
  for (const char* name : {"manifest.json", "summary.json"}) {
    struct stat st {};
    out += out.empty() ? "" : ";";
    if (::stat((run_dir / name).c_str(), &st) != 0) {
      out += "-";
      continue;
    }
    out += std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec) + ":" + std::to_string(st.st_ctim.tv_sec) + "." +
           std::to_string(st.st_ctim.tv_nsec) + ":" + std::to_string(st.st_ino);
  }
  return out;
}

std::string duplicate_key(const json::object& m) {
  json::object key;
  // An imported record (dyno import) is the result in its file: the same bytes read in the
  // same format are the same result, whatever --label, --model or --engine said; never equal
  // to a measured record's key.
  if (const json::value* src = m.if_contains("source"); src != nullptr && !src->is_null()) {
    key["source"] = json::object{{"format", value_or_null(m, {"source", "format"})},
                                 {"sha256", value_or_null(m, {"source", "sha256"})}};
    return json_text::compact(canonical(key));
  }
  key["engine"] = json::object{{"name", value_or_null(m, {"engine", "name"})},
                               {"version", value_or_null(m, {"engine", "version"})},
                               {"engine_args", value_or_null(m, {"engine", "engine_args"})},
                               {"sim_profile", value_or_null(m, {"engine", "sim_profile"})}};
  key["model"] = json::object{{"id", value_or_null(m, {"model", "id"})},
                              {"revision", value_or_null(m, {"model", "revision"})},
                              {"fingerprint", value_or_null(m, {"model", "fingerprint"})}};
  key["request_stream_sha256"] = value_or_null(m, {"workload", "request_stream", "sha256"});
  key["sampling"] = value_or_null(m, {"workload", "sampling"});
  key["load"] = value_or_null(m, {"load"});
  // Its place in a protocol: a repetition of a cell, or a pass that measures an earlier pass's
  // prompts again on purpose (speed's fr2 after fr), is planned, not a duplicate.
  key["protocol"] =
      json::object{{"name", value_or_null(m, {"workload", "protocol", "name"})},
                   {"cell", value_or_null(m, {"workload", "protocol", "cell"})},
                   {"repetition", value_or_null(m, {"workload", "protocol", "repetition"})}};
  // A derived record (dyno rescore) measured nothing: it is the same as another derived record
  // when both derive the same way (kind, scorer, the deriving dyno) from the same measurement,
  // never the same as a measured record, its source included.
  if (const json::value* d = m.if_contains("derived_from"); d != nullptr && !d->is_null()) {
    key["derived"] =
        json::object{{"kind", value_or_null(m, {"derived_from", "kind"})},
                     {"scorer", value_or_null(m, {"derived_from", "scorer"})},
                     {"harness_executable_sha256",
                      value_or_null(m, {"derived_from", "harness", "executable_sha256"})}};
  }
  return json_text::compact(canonical(key));
}

RunRow read_run_row(const fs::path& run_dir) {
  RunRow r;
  r.run_id = run_dir.filename().string();
  r.status = "unreadable";
  r.engine_args = "{}";
  r.files_stamp = files_stamp(run_dir);  // before reading: a change meanwhile shows next time
  json::object m;
  try {
    m = parse_object(run_dir / "manifest.json");
  } catch (const RecordError& e) {
    r.problem = e.what();
    return r;
  }
  const std::optional<std::string> status = opt_str(m, {"status"});
  if (!status) {
    r.problem = "manifest.json has no status";
    return r;
  }
  r.status = *status;
  r.started_at = opt_str(m, {"started_at"}).value_or("");
  r.ended_at = opt_str(m, {"ended_at"});
  r.label = opt_str(m, {"label"});
  r.campaign = opt_str(m, {"campaign"});
  r.protocol = opt_str(m, {"workload", "protocol", "name"});
  r.cell = opt_str(m, {"workload", "protocol", "cell"});
  r.engine_name = opt_str(m, {"engine", "name"});
  r.engine_version = opt_str(m, {"engine", "version"});
  if (const json::value* args = at_path(m, {"engine", "engine_args"})) {
    r.engine_args = json_text::compact(*args);
  }
  r.model_id = opt_str(m, {"model", "id"});
  r.model_revision = opt_str(m, {"model", "revision"});
  r.model_fingerprint = opt_str(m, {"model", "fingerprint"});
  r.host = opt_str(m, {"hardware", "host"});
  if (const json::value* gpus = at_path(m, {"hardware", "gpus"}); gpus && gpus->is_array()) {
    for (const auto& g : gpus->get_array()) {
      if (!g.is_object()) continue;
      const auto name = opt_str(g.get_object(), {"name"});
      if (!r.gpus.empty()) r.gpus += ", ";
      r.gpus += name.value_or("?");
    }
  }
  r.stream_sha256 = opt_str(m, {"workload", "request_stream", "sha256"});
  r.stream_count = opt_int(m, {"workload", "request_stream", "count"});
  r.load_mode = opt_str(m, {"load", "mode"});
  r.concurrency = opt_int(m, {"load", "concurrency"});
  r.rate_per_s = opt_num(m, {"load", "rate_per_s"});
  std::vector<std::string> problems;
  if (const auto id = opt_str(m, {"run_id"}); id != r.run_id) {
    problems.push_back("manifest run_id '" + id.value_or("") + "' differs from the directory name");
  }
  const fs::path summary_path = run_dir / "summary.json";
  std::error_code ec;
  if (fs::exists(summary_path, ec)) {
    try {
      const json::object s = parse_object(summary_path);
      r.requests_ok = opt_int(s, {"requests", "ok"});
      r.requests_failed = opt_int(s, {"requests", "failed"});
      r.error_rate = opt_num(s, {"requests", "error_rate"});
      r.output_tokens_per_s = opt_num(s, {"throughput", "output_tokens_per_s"});
      r.requests_per_s = opt_num(s, {"throughput", "requests_per_s"});
      r.ttft_p50_ms = opt_num(s, {"latency_ms", "ttft", "p50"});
      r.tpot_p50_ms = opt_num(s, {"latency_ms", "tpot", "p50"});
      r.e2e_p50_ms = opt_num(s, {"latency_ms", "e2e", "p50"});
      r.accuracy = opt_num(s, {"quality", "accuracy"});
    } catch (const RecordError& e) {
      problems.push_back(e.what());
    }
  } else if (r.status != "running") {
    problems.push_back("summary.json is missing");
  }
  if (!problems.empty()) {
    std::string text;
    for (const auto& p : problems) text += (text.empty() ? "" : "; ") + p;
    r.problem = text;
  }
  if (r.status != "running") r.identity_key = sha256_hex(duplicate_key(m));
  return r;
}

std::vector<std::string> run_directory_names(const fs::path& runs_root) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(runs_root, ec);
  if (ec) return names;
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.front() == '.' || name == "campaigns") continue;
    std::error_code e2;
    if (!entry.is_directory(e2)) continue;
    if (!fs::is_regular_file(entry.path() / "manifest.json", e2)) continue;
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

const std::vector<std::string>& sort_keys() {
  static const std::vector<std::string> keys{"started", "id",   "status", "tok_s",      "req_s",
                                             "ttft",    "tpot", "e2e",    "error_rate", "accuracy"};
  return keys;
}

// ---- RunIndex --------------------------------------------------------------------------------

RunIndex::RunIndex(const fs::path& runs_root, std::ostream& warnings,
                   const std::string& indexing_run)
    : root_(runs_root), file_(runs_root / kIndexFileName) {
  std::error_code ec;
  if (!fs::is_directory(root_, ec)) {
    throw IndexError("runs root " + root_.string() + " does not exist");
  }
  IndexLock lock(root_);
  const bool existed = fs::exists(file_, ec);
  open_checked(warnings);
  if (!rebuilt_) return;
  const std::size_t n = rebuild();
  const bool self =
      !indexing_run.empty() && fs::is_regular_file(root_ / indexing_run / "manifest.json", ec);
  const std::size_t others = self && n > 0 ? n - 1 : n;
  if (!existed && others > 0) {
    warnings << "dyno: warning: " << file_.string() << " was missing; rebuilt from " << n
             << (n == 1 ? " run directory\n" : " run directories\n");
  }
}

RunIndex::RunIndex(const fs::path& runs_root)
    : root_(runs_root), file_(runs_root / (std::string(kIndexFileName) + " (in memory)")) {
  if (sqlite3_open_v2(":memory:", &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    sqlite3_close(db_);
    throw IndexError("cannot open an index in memory");
  }
  rebuilt_ = true;
  create_schema();
  rebuild();
}

std::unique_ptr<RunIndex> RunIndex::in_memory(const fs::path& runs_root) {
  std::error_code ec;
  if (!fs::is_directory(runs_root, ec)) {
    throw IndexError("runs root " + runs_root.string() + " does not exist");
  }
  return std::unique_ptr<RunIndex>(new RunIndex(runs_root));
}

RunIndex::~RunIndex() { sqlite3_close(db_); }

void RunIndex::open_checked(std::ostream& warnings) {
  std::error_code ec;
  const bool existed = fs::exists(file_, ec);
  if (existed) {
    if (sqlite3_open_v2(file_.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
      const std::string reason = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      db_ = nullptr;
      throw IndexError("cannot open " + file_.string() + ": " + reason);
    }
    sqlite3_busy_timeout(db_, 30000);
    const std::string reason = unusable_reason(db_);
    if (!reason.empty()) {
      sqlite3_close(db_);
      db_ = nullptr;
      const fs::path aside = root_ / (std::string(kIndexFileName) + ".bad");
      fs::rename(file_, aside, ec);
      if (ec) fs::remove(file_, ec);
      remove_quietly(root_ / (std::string(kIndexFileName) + "-wal"));
      remove_quietly(root_ / (std::string(kIndexFileName) + "-shm"));
      warnings << "dyno: warning: " << file_.string() << " is not a usable run index (" << reason
               << "); moved aside to " << aside.filename().string()
               << " and rebuilt from the run directories\n";
    }
  }
  if (db_ == nullptr) {
    if (sqlite3_open_v2(file_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
        SQLITE_OK) {
      const std::string reason = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      db_ = nullptr;
      throw IndexError("cannot create " + file_.string() + ": " + reason);
    }
    sqlite3_busy_timeout(db_, 30000);
    rebuilt_ = true;
  }
  exec(db_, "PRAGMA journal_mode=WAL", file_);
  exec(db_, "PRAGMA synchronous=NORMAL", file_);
  if (rebuilt_) create_schema();
}

void RunIndex::create_schema() {
  std::string columns;
  RunRow probe;
  for_each_field(probe, [&columns](const char* name, const auto& v) {
    if (!columns.empty()) columns += ", ";
    columns += std::string(name) + " " + sql_type(v);
    if (std::string_view(name) == "run_id") columns += " PRIMARY KEY";
  });
  Transaction txn(db_, file_);
  exec(db_, "DROP TABLE IF EXISTS runs", file_);
  exec(db_, "CREATE TABLE runs (" + columns + ")", file_);
  exec(db_, "CREATE INDEX runs_identity ON runs (identity_key, started_at, run_id)", file_);
  exec(db_, "CREATE INDEX runs_started ON runs (started_at)", file_);
  exec(db_, "PRAGMA user_version = " + std::to_string(kIndexSchemaVersion), file_);
  txn.commit();
}

void RunIndex::write_rows(const std::vector<RunRow>& rows, const std::vector<std::string>& drop,
                          bool drop_all) {
  Transaction txn(db_, file_);
  if (drop_all) exec(db_, "DELETE FROM runs", file_);
  if (!rows.empty()) {
    std::string params;
    for (std::size_t i = 1; i <= column_count(); ++i) {
      params += (i == 1 ? "?" : ", ?") + std::to_string(i);
    }
    Statement insert(
        db_, "INSERT OR REPLACE INTO runs (" + column_list() + ") VALUES (" + params + ")", file_);
    for (const RunRow& row : rows) {
      insert.reset();
      int i = 0;
      for_each_field(row, [&insert, &i](const char*, const auto& v) { insert.bind(++i, v); });
      insert.step();
    }
  }
  if (!drop.empty()) {
    Statement del(db_, "DELETE FROM runs WHERE run_id = ?1", file_);
    for (const auto& id : drop) {
      del.reset();
      del.bind(1, id);
      del.step();
    }
  }
  // Duplicate marks depend on every run with the same key, so they are recomputed as a whole.
  exec(db_,
       "UPDATE runs SET duplicate_of = CASE WHEN identity_key = '' THEN NULL ELSE ("
       " SELECT r2.run_id FROM runs AS r2 WHERE r2.identity_key = runs.identity_key"
       " AND (r2.started_at < runs.started_at OR"
       " (r2.started_at = runs.started_at AND r2.run_id < runs.run_id))"
       " ORDER BY r2.started_at, r2.run_id LIMIT 1) END",
       file_);
  txn.commit();
}

SyncStats RunIndex::sync() {
  std::map<std::string, bool> known;  // id -> read it again (unfinished, a problem, changed)
  {
    Statement q(db_,
                "SELECT run_id, status IN ('running', 'unreadable') OR problem IS NOT NULL, "
                "files_stamp FROM runs",
                file_);
    while (q.step()) {
      std::string id;
      std::optional<std::int64_t> again;
      std::string stamp;
      q.read(0, id);
      q.read(1, again);
      q.read(2, stamp);
      const bool changed = stamp != files_stamp(root_ / id);
      known.emplace(std::move(id), again.value_or(0) != 0 || changed);
    }
  }
  const std::vector<std::string> names = run_directory_names(root_);
  const std::set<std::string> on_disk(names.begin(), names.end());
  SyncStats stats;
  std::vector<RunRow> rows;
  for (const auto& name : names) {
    const auto it = known.find(name);
    if (it == known.end()) {
      ++stats.added;
    } else if (it->second) {
      ++stats.refreshed;
    } else {
      continue;
    }
    rows.push_back(read_run_row(root_ / name));
  }
  std::vector<std::string> drop;
  for (const auto& [id, again] : known) {
    if (on_disk.count(id) == 0) drop.push_back(id);
  }
  stats.dropped = drop.size();
  if (!rows.empty() || !drop.empty()) write_rows(rows, drop, false);
  return stats;
}

std::size_t RunIndex::rebuild() {
  std::vector<RunRow> rows;
  for (const auto& name : run_directory_names(root_)) rows.push_back(read_run_row(root_ / name));
  write_rows(rows, {}, true);
  return rows.size();
}

void RunIndex::upsert(const fs::path& run_dir) {
  std::error_code ec;
  if (!fs::equivalent(run_dir.parent_path(), root_, ec)) {
    throw IndexError(run_dir.string() + " is not a run directory under " + root_.string());
  }
  write_rows({read_run_row(run_dir)}, {}, false);
}

void RunIndex::remove(const std::string& run_id) { write_rows({}, {run_id}, false); }

std::vector<RunRow> RunIndex::list(const RunFilter& f) const {
  std::string sql = "SELECT " + column_list() + " FROM runs WHERE 1 = 1";
  std::vector<std::string> binds;
  const auto glob = [&](const char* column, const std::optional<std::string>& pattern) {
    if (!pattern) return;
    binds.push_back(*pattern);
    sql += std::string(" AND ") + column + " GLOB ?" + std::to_string(binds.size());
  };
  glob("campaign", f.campaign);
  glob("engine_name", f.engine);
  glob("model_id", f.model);
  glob("protocol", f.protocol);
  glob("status", f.status);
  glob("label", f.label);
  if (f.since) {
    binds.push_back(*f.since);
    const std::string n = std::to_string(binds.size());
    sql += " AND substr(started_at, 1, length(?" + n + ")) >= ?" + n;
  }
  if (f.until) {
    binds.push_back(*f.until);
    const std::string n = std::to_string(binds.size());
    sql += " AND substr(started_at, 1, length(?" + n + ")) <= ?" + n;
  }
  const auto col = sort_columns().find(f.sort);
  if (col == sort_columns().end()) throw IndexError("unknown sort key '" + f.sort + "'");
  const char* dir = f.descending ? " DESC" : " ASC";
  sql += " ORDER BY " + col->second + dir + " NULLS LAST, run_id" + dir;
  if (f.limit) sql += " LIMIT " + std::to_string(*f.limit);
  Statement q(db_, sql, file_);
  for (std::size_t i = 0; i < binds.size(); ++i) q.bind(static_cast<int>(i + 1), binds[i]);
  std::vector<RunRow> out;
  while (q.step()) {
    RunRow r;
    int i = 0;
    for_each_field(r, [&q, &i](const char*, auto& v) { q.read(i++, v); });
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<RunRow> RunIndex::find(const std::string& run_id) const {
  Statement q(db_, "SELECT " + column_list() + " FROM runs WHERE run_id = ?1", file_);
  q.bind(1, run_id);
  if (!q.step()) return std::nullopt;
  RunRow r;
  int i = 0;
  for_each_field(r, [&q, &i](const char*, auto& v) { q.read(i++, v); });
  return r;
}

std::vector<std::string> RunIndex::ids() const {
  Statement q(db_, "SELECT run_id FROM runs ORDER BY run_id", file_);
  std::vector<std::string> out;
  while (q.step()) {
    out.emplace_back();
    q.read(0, out.back());
  }
  return out;
}

std::string RunIndex::integrity() const {
  Statement q(db_, "PRAGMA integrity_check", file_);
  std::string out;
  while (q.step()) {
    std::string line;
    q.read(0, line);
    out += (out.empty() ? "" : "; ") + line;
  }
  return out;
}

void index_finished_run(const fs::path& runs_root, const fs::path& run_dir,
                        std::ostream& warnings) noexcept {
  try {
    RunIndex index(runs_root, warnings, run_dir.filename().string());
    if (!index.rebuilt()) index.upsert(run_dir);  // a rebuild has just read it
  } catch (const std::exception& e) {
    try {
      warnings << "dyno: warning: the run index was not updated (" << e.what()
               << "); the record is complete; `dyno runs reindex` rebuilds the index\n";
    } catch (...) {  // nothing more can be done about a failing stderr
    }
  }
}

}  // namespace dyno::record
