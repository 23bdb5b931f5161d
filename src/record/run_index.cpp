// The run index (index.sqlite, a cache of the run directories): the table's columns listed
// once, opening and recovering the database under a lock, syncing with the directories, and
// queries. Reading a record into a row is run_row.cpp; SQLite's statement wrappers are
// sqlite_statement.h.
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
