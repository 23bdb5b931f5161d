// The run index in SQLite (sqlite_index.h): opening and recovering index.sqlite under a lock,
// the table created from the row's columns, writes in one transaction, and the queries of
// `runs list`. SQLite's statement wrappers are sqlite_statement.h.
#include "store/sqlite_index.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>
#include <thread>

#include "store/sqlite_statement.h"

namespace dyno::store {

namespace fs = std::filesystem;

using sqlite::exec;
using sqlite::Statement;
using sqlite::Transaction;

namespace {

const char* sql_type(const std::string&) { return "TEXT NOT NULL"; }
const char* sql_type(const std::optional<std::string>&) { return "TEXT"; }
const char* sql_type(const std::optional<std::int64_t>&) { return "INTEGER"; }
const char* sql_type(const std::optional<double>&) { return "REAL"; }

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

/// The database's PRAGMA user_version (-1 when it cannot be read).
int user_version(sqlite3* db) {
  int version = -1;
  sqlite3_exec(
      db, "PRAGMA user_version",
      [](void* out, int, char** values, char**) {
        *static_cast<int*>(out) = values[0] != nullptr ? std::atoi(values[0]) : -1;
        return 0;
      },
      &version, nullptr);
  return version;
}

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
  const int version = user_version(db);
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

void remove_quietly(const fs::path& p) {
  std::error_code ec;
  fs::remove(p, ec);
}

class SqliteIndex final : public IndexBackend {
 public:
  /// <root>/index.sqlite, opened under the lock.
  SqliteIndex(const fs::path& root, std::ostream& warnings)
      : root_(root), file_(root / kIndexFileName), lock_(std::make_unique<IndexLock>(root)) {
    open_checked(warnings);
  }
  /// In memory.
  explicit SqliteIndex(const fs::path& root)
      : root_(root), file_(root / (std::string(kIndexFileName) + " (in memory)")) {
    if (sqlite3_open_v2(":memory:", &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
        SQLITE_OK) {
      sqlite3_close(db_);
      throw IndexError("cannot open an index in memory");
    }
    opened_ = IndexOpened::created;
    create_schema();
  }
  ~SqliteIndex() override { sqlite3_close(db_); }

  IndexOpened opened() const override { return opened_; }
  void open_done() override { lock_.reset(); }
  std::string name() const override { return file_.string(); }
  std::vector<KnownRun> known() override;
  void write_rows(const std::vector<RunRow>& rows, const std::vector<std::string>& drop,
                  bool drop_all) override;
  std::vector<RunRow> list(const RunFilter& filter) override;
  std::optional<RunRow> find(const std::string& run_id) override;
  std::vector<std::string> ids() override;
  std::string integrity() override;

 private:
  void open_checked(std::ostream& warnings);
  void create_schema();
  void migrate_from_4();

  fs::path root_;
  fs::path file_;
  std::unique_ptr<IndexLock> lock_;
  sqlite3* db_ = nullptr;
  IndexOpened opened_ = IndexOpened::existing;
};

void SqliteIndex::open_checked(std::ostream& warnings) {
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
    migrate_from_4();
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
      opened_ = IndexOpened::recovered;
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
    if (opened_ == IndexOpened::existing) opened_ = IndexOpened::created;
  }
  exec(db_, "PRAGMA journal_mode=WAL", file_);
  exec(db_, "PRAGMA synchronous=NORMAL", file_);
  if (opened_ != IndexOpened::existing) create_schema();
}

/// An index of layout version 4 gains the `record_sha256` column in place (its rows null: what
/// they remember cannot be made up), so the digests remembered later are not dropped with it.
/// Anything else unusable is left to unusable_reason.
void SqliteIndex::migrate_from_4() {
  const int version = user_version(db_);
  if (version != 4) return;
  try {
    Transaction txn(db_, file_);
    exec(db_, "ALTER TABLE runs ADD COLUMN record_sha256 TEXT", file_);
    exec(db_, "PRAGMA user_version = " + std::to_string(kIndexSchemaVersion), file_);
    txn.commit();
  } catch (const IndexError&) {  // not the table of version 4: unusable_reason says why
  }
}

void SqliteIndex::create_schema() {
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

std::vector<KnownRun> SqliteIndex::known() {
  Statement q(db_,
              "SELECT run_id, status IN ('running', 'unreadable') OR problem IS NOT NULL, "
              "files_stamp FROM runs",
              file_);
  std::vector<KnownRun> out;
  while (q.step()) {
    KnownRun k;
    std::optional<std::int64_t> again;
    q.read(0, k.run_id);
    q.read(1, again);
    q.read(2, k.files_stamp);
    k.read_again = again.value_or(0) != 0;
    out.push_back(std::move(k));
  }
  return out;
}

void SqliteIndex::write_rows(const std::vector<RunRow>& rows, const std::vector<std::string>& drop,
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

std::vector<RunRow> SqliteIndex::list(const RunFilter& f) {
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
  const std::string& col = sort_column(f.sort);
  const char* dir = f.descending ? " DESC" : " ASC";
  sql += " ORDER BY " + col + dir + " NULLS LAST, run_id" + dir;
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

std::optional<RunRow> SqliteIndex::find(const std::string& run_id) {
  Statement q(db_, "SELECT " + column_list() + " FROM runs WHERE run_id = ?1", file_);
  q.bind(1, run_id);
  if (!q.step()) return std::nullopt;
  RunRow r;
  int i = 0;
  for_each_field(r, [&q, &i](const char*, auto& v) { q.read(i++, v); });
  return r;
}

std::vector<std::string> SqliteIndex::ids() {
  Statement q(db_, "SELECT run_id FROM runs ORDER BY run_id", file_);
  std::vector<std::string> out;
  while (q.step()) {
    out.emplace_back();
    q.read(0, out.back());
  }
  return out;
}

std::string SqliteIndex::integrity() {
  Statement q(db_, "PRAGMA integrity_check", file_);
  std::string out;
  while (q.step()) {
    std::string line;
    q.read(0, line);
    out += (out.empty() ? "" : "; ") + line;
  }
  return out;
}

}  // namespace

std::unique_ptr<IndexBackend> open_sqlite_index(const fs::path& runs_root, std::ostream& warnings) {
  return std::make_unique<SqliteIndex>(runs_root, warnings);
}

std::unique_ptr<IndexBackend> memory_sqlite_index(const fs::path& runs_root) {
  return std::make_unique<SqliteIndex>(runs_root);
}

}  // namespace dyno::store
