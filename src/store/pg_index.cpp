// The run index in PostgreSQL (pg_index.h): a libpq connection whose errors are IndexError with
// the URL redacted, the schema created or migrated under an advisory lock, writes of one runs
// root serialised by a second advisory lock, and the queries of `runs list` as SQLite runs
// them (GLOB filters become anchored regular expressions; text compares byte by byte, COLLATE
// "C", as SQLite's BINARY collation does).
#include "store/pg_index.h"

#include <libpq-fe.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <system_error>

#include "store/index_reader.h"
#include "store/index_url.h"

namespace dyno::store {

namespace fs = std::filesystem;

namespace {

using Params = std::vector<std::optional<std::string>>;

const char* pg_type(const std::string&) { return "TEXT COLLATE \"C\" NOT NULL"; }
const char* pg_type(const std::optional<std::string>&) { return "TEXT COLLATE \"C\""; }
const char* pg_type(const std::optional<std::int64_t>&) { return "BIGINT"; }
const char* pg_type(const std::optional<double>&) { return "DOUBLE PRECISION"; }

std::optional<std::string> param(const std::string& v) { return v; }
std::optional<std::string> param(const std::optional<std::string>& v) { return v; }
std::optional<std::string> param(const std::optional<std::int64_t>& v) {
  if (!v) return std::nullopt;
  return std::to_string(*v);
}
std::optional<std::string> param(const std::optional<double>& v) {
  if (!v || std::isnan(*v)) return std::nullopt;  // as SQLite stores a NaN: NULL
  if (std::isinf(*v)) return *v > 0 ? "Infinity" : "-Infinity";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, *v);  // shortest round trip
  return std::string(buf, res.ptr);
}

void read(const char* text, bool null, std::string& out) { out = null ? "" : text; }
void read(const char* text, bool null, std::optional<std::string>& out) {
  if (null) {
    out.reset();
  } else {
    out = text;
  }
}
void read(const char* text, bool null, std::optional<std::int64_t>& out) {
  out.reset();
  if (null) return;
  std::int64_t v = 0;
  const std::string_view s(text);
  if (std::from_chars(s.data(), s.data() + s.size(), v).ec == std::errc()) out = v;
}
void read(const char* text, bool null, std::optional<double>& out) {
  out.reset();
  if (!null) out = std::strtod(text, nullptr);
}

/// libpq's message on one line, without the password.
std::string one_line(const std::string& url, std::string message) {
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  std::string flat;
  for (const char c : message) {
    const char s = c == '\n' || c == '\t' ? ' ' : c;
    if (s != ' ' || (!flat.empty() && flat.back() != ' ')) flat += s;
  }
  return redact_secret_of(url, flat);
}

class Result {
 public:
  explicit Result(PGresult* r) : r_(r) {}
  ~Result() { PQclear(r_); }
  Result(Result&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;
  PGresult* raw() const { return r_; }
  int rows() const { return PQntuples(r_); }
  bool null(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }
  const char* text(int row, int col) const { return PQgetvalue(r_, row, col); }

 private:
  PGresult* r_;
};

/// One connection; every failure an IndexError naming the index by its redacted URL.
class Connection {
 public:
  explicit Connection(const std::string& url) : url_(url), name_(redact_index_url(url)) {
    // Keywords before dbname are defaults the URL may override (connect_timeout=…).
    const char* keys[] = {"connect_timeout", "fallback_application_name", "dbname", nullptr};
    const char* values[] = {"10", "dyno", url.c_str(), nullptr};
    conn_ = PQconnectdbParams(keys, values, 1);
    if (conn_ == nullptr) throw IndexError("cannot connect to the run index " + name_);
    if (PQstatus(conn_) != CONNECTION_OK) {
      const std::string why = one_line(url_, PQerrorMessage(conn_));
      PQfinish(conn_);
      throw IndexError("cannot connect to the run index " + name_ + ": " + why);
    }
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);  // notices say nothing new
  }
  ~Connection() { PQfinish(conn_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const std::string& name() const { return name_; }

  Result exec(const std::string& sql, const Params& params = {}) {
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    Result r(PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr,
                          values.data(), nullptr, nullptr, 0));
    const ExecStatusType st = PQresultStatus(r.raw());
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      throw IndexError("run index " + name_ + ": " + one_line(url_, PQerrorMessage(conn_)));
    }
    return r;
  }

 private:
  std::string url_;
  std::string name_;
  PGconn* conn_ = nullptr;
};

/// BEGIN … COMMIT; rolls back when left by an exception.
class Transaction {
 public:
  explicit Transaction(Connection& c) : c_(c) { c_.exec("BEGIN"); }
  ~Transaction() {
    if (committed_) return;
    try {
      c_.exec("ROLLBACK");
    } catch (...) {  // the connection is gone: the server rolls back
    }
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit() {
    c_.exec("COMMIT");
    committed_ = true;
  }

 private:
  Connection& c_;
  bool committed_ = false;
};

std::string schema_version_text() { return std::to_string(kPgIndexSchemaVersion); }

/// Why the schema in the database is not this dyno's ("" when it is); throws IndexError when
/// it is newer.
std::string schema_outdated_reason(Connection& conn) {
  const Result v = conn.exec("SELECT value FROM dyno_meta WHERE key = 'schema_version'");
  int version = -1;
  if (v.rows() == 1 && !v.null(0, 0)) {
    const std::string_view t(v.text(0, 0));
    if (std::from_chars(t.data(), t.data() + t.size(), version).ec != std::errc()) version = -1;
  }
  if (version > kPgIndexSchemaVersion) {
    throw IndexError("the run index " + conn.name() + " has schema version " +
                     std::to_string(version) + ", newer than this dyno's (" +
                     schema_version_text() +
                     "); use that dyno's version, or another database for this one");
  }
  if (version != kPgIndexSchemaVersion) {
    return "has schema version " + std::to_string(version) + ", this dyno uses " +
           schema_version_text();
  }
  const Result cols = conn.exec(
      "SELECT count(*) FROM information_schema.columns WHERE table_name = 'dyno_runs' AND "
      "table_schema = current_schema()");
  const std::string expected = std::to_string(column_count() + 1);
  if (std::string(cols.text(0, 0)) != expected) {
    return std::string("has a dyno_runs table of ") + cols.text(0, 0) + " columns, expected " +
           expected;
  }
  return {};
}

class PgIndex final : public IndexBackend {
 public:
  PgIndex(const fs::path& runs_root, const std::string& url, std::ostream& warnings)
      : root_(fs::canonical(runs_root).string()), conn_(url) {
    ensure_schema(warnings);
  }

  IndexOpened opened() const override { return opened_; }
  std::string name() const override { return conn_.name(); }
  std::vector<KnownRun> known() override;
  void write_rows(const std::vector<RunRow>& rows, const std::vector<std::string>& drop,
                  bool drop_all) override;
  std::vector<RunRow> list(const RunFilter& filter) override;
  std::optional<RunRow> find(const std::string& run_id) override;
  std::vector<std::string> ids() override;
  std::string integrity() override;

 private:
  void ensure_schema(std::ostream& warnings);
  std::string outdated_reason() { return schema_outdated_reason(conn_); }
  void create_schema();
  void migrate_from_1();
  std::vector<RunRow> rows_of(const Result& r) const;

  std::string root_;  ///< the runs root's canonical path: the rows' `root`
  Connection conn_;
  IndexOpened opened_ = IndexOpened::existing;
};

void PgIndex::ensure_schema(std::ostream& warnings) {
  Transaction txn(conn_);
  // One dyno at a time creates or migrates the tables.
  conn_.exec("SELECT pg_advisory_xact_lock(hashtextextended('dyno run index schema', 0))");
  const bool present =
      std::string(conn_.exec("SELECT to_regclass('dyno_meta') IS NOT NULL").text(0, 0)) == "t";
  if (present) migrate_from_1();
  if (!present) {
    create_schema();
    opened_ = IndexOpened::new_root;
  } else if (const std::string reason = outdated_reason(); !reason.empty()) {
    warnings << "dyno: warning: the run index " << conn_.name() << " " << reason
             << "; its tables were recreated and runs roots are indexed again from their "
                "directories\n";
    create_schema();
    opened_ = IndexOpened::recovered;
  } else if (conn_.exec("SELECT 1 FROM dyno_runs WHERE root = $1 LIMIT 1", {root_}).rows() == 0) {
    opened_ = IndexOpened::new_root;  // first use of this runs root here: index all its runs
  }
  txn.commit();
}

/// A schema of version 1 gains the `record_sha256` column in place (its rows null), so the
/// digests other dyno processes remembered are kept. Called in ensure_schema's transaction.
void PgIndex::migrate_from_1() {
  const Result v = conn_.exec("SELECT value FROM dyno_meta WHERE key = 'schema_version'");
  if (v.rows() != 1 || v.null(0, 0) || std::string_view(v.text(0, 0)) != "1") return;
  conn_.exec("ALTER TABLE dyno_runs ADD COLUMN IF NOT EXISTS record_sha256 TEXT COLLATE \"C\"");
  conn_.exec("UPDATE dyno_meta SET value = $1 WHERE key = 'schema_version'",
             {schema_version_text()});
}

void PgIndex::create_schema() {
  std::string columns = "root TEXT COLLATE \"C\" NOT NULL";
  RunRow probe;
  for_each_field(probe, [&columns](const char* name, const auto& v) {
    columns += std::string(", ") + name + " " + pg_type(v);
  });
  conn_.exec("DROP TABLE IF EXISTS dyno_runs");
  conn_.exec("CREATE TABLE IF NOT EXISTS dyno_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
  conn_.exec("CREATE TABLE dyno_runs (" + columns + ", PRIMARY KEY (root, run_id))");
  conn_.exec(
      "CREATE INDEX dyno_runs_identity ON dyno_runs (root, identity_key, started_at, run_id)");
  conn_.exec("CREATE INDEX dyno_runs_started ON dyno_runs (root, started_at)");
  conn_.exec(
      "INSERT INTO dyno_meta (key, value) VALUES ('schema_version', $1) "
      "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
      {schema_version_text()});
}

std::vector<KnownRun> PgIndex::known() {
  const Result r = conn_.exec(
      "SELECT run_id, status IN ('running', 'unreadable') OR problem IS NOT NULL, files_stamp "
      "FROM dyno_runs WHERE root = $1",
      {root_});
  std::vector<KnownRun> out;
  for (int i = 0; i < r.rows(); ++i) {
    out.push_back({r.text(i, 0), std::string(r.text(i, 1)) == "t", r.text(i, 2)});
  }
  return out;
}

void PgIndex::write_rows(const std::vector<RunRow>& rows, const std::vector<std::string>& drop,
                         bool drop_all) {
  Transaction txn(conn_);
  // Writers of one runs root take turns, as SQLite's BEGIN IMMEDIATE makes them: duplicate
  // marks are computed over the root's committed rows.
  conn_.exec("SELECT pg_advisory_xact_lock(hashtextextended('dyno run index ' || $1, 0))", {root_});
  if (drop_all) conn_.exec("DELETE FROM dyno_runs WHERE root = $1", {root_});
  if (!rows.empty()) {
    std::string params = "$1", updates;
    RunRow probe;
    int n = 1;
    for_each_field(probe, [&](const char* name, const auto&) {
      params += ", $" + std::to_string(++n);
      if (std::string_view(name) == "run_id") return;
      updates += std::string(updates.empty() ? "" : ", ") + name + " = EXCLUDED." + name;
    });
    const std::string sql = "INSERT INTO dyno_runs (root, " + column_list() + ") VALUES (" +
                            params + ") ON CONFLICT (root, run_id) DO UPDATE SET " + updates;
    for (const RunRow& row : rows) {
      Params values{root_};
      for_each_field(row, [&values](const char*, const auto& v) { values.push_back(param(v)); });
      conn_.exec(sql, values);
    }
  }
  for (const auto& id : drop) {
    conn_.exec("DELETE FROM dyno_runs WHERE root = $1 AND run_id = $2", {root_, id});
  }
  // Duplicate marks depend on every run with the same key: recomputed for the whole root
  // (rows whose mark does not change are not rewritten).
  conn_.exec(
      "UPDATE dyno_runs AS r SET duplicate_of = d.dup FROM (SELECT r1.run_id, CASE WHEN "
      "r1.identity_key = '' THEN NULL ELSE (SELECT r2.run_id FROM dyno_runs AS r2 WHERE "
      "r2.root = r1.root AND r2.identity_key = r1.identity_key AND (r2.started_at < "
      "r1.started_at OR (r2.started_at = r1.started_at AND r2.run_id < r1.run_id)) ORDER BY "
      "r2.started_at, r2.run_id LIMIT 1) END AS dup FROM dyno_runs AS r1 WHERE r1.root = $1) "
      "AS d WHERE r.root = $1 AND r.run_id = d.run_id AND r.duplicate_of IS DISTINCT FROM d.dup",
      {root_});
  txn.commit();
}

std::vector<RunRow> PgIndex::rows_of(const Result& r) const {
  std::vector<RunRow> out;
  for (int i = 0; i < r.rows(); ++i) {
    RunRow row;
    int c = 0;
    for_each_field(row, [&r, i, &c](const char*, auto& v) {
      read(r.text(i, c), r.null(i, c), v);
      ++c;
    });
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<RunRow> PgIndex::list(const RunFilter& f) {
  std::string sql = "SELECT " + column_list() + " FROM dyno_runs WHERE root = $1";
  Params binds{root_};
  bool nothing = false;
  const auto glob = [&](const char* column, const std::optional<std::string>& pattern) {
    if (!pattern) return;
    const std::optional<std::string> re = glob_to_regex(*pattern);
    if (!re) {
      nothing = true;
      return;
    }
    binds.push_back(*re);
    sql += std::string(" AND ") + column + " ~ $" + std::to_string(binds.size());
  };
  glob("campaign", f.campaign);
  glob("engine_name", f.engine);
  glob("model_id", f.model);
  glob("protocol", f.protocol);
  glob("status", f.status);
  glob("label", f.label);
  if (nothing) sql += " AND FALSE";
  for (const auto& [bound, op] : {std::pair{&f.since, " >= "}, std::pair{&f.until, " <= "}}) {
    if (!*bound) continue;
    binds.push_back(**bound);
    const std::string n = "$" + std::to_string(binds.size()) + "::text";
    sql += " AND substr(started_at, 1, length(" + n + "))" + op + n;
  }
  const std::string& col = sort_column(f.sort);
  const char* dir = f.descending ? " DESC" : " ASC";
  sql += " ORDER BY " + col + dir + " NULLS LAST, run_id" + dir;
  if (f.limit) sql += " LIMIT " + std::to_string(*f.limit);
  return rows_of(conn_.exec(sql, binds));
}

std::optional<RunRow> PgIndex::find(const std::string& run_id) {
  std::vector<RunRow> rows = rows_of(
      conn_.exec("SELECT " + column_list() + " FROM dyno_runs WHERE root = $1 AND run_id = $2",
                 {root_, run_id}));
  if (rows.empty()) return std::nullopt;
  return std::move(rows.front());
}

std::vector<std::string> PgIndex::ids() {
  const Result r =
      conn_.exec("SELECT run_id FROM dyno_runs WHERE root = $1 ORDER BY run_id", {root_});
  std::vector<std::string> out;
  for (int i = 0; i < r.rows(); ++i) out.emplace_back(r.text(i, 0));
  return out;
}

std::string PgIndex::integrity() {
  if (const std::string reason = outdated_reason(); !reason.empty()) return reason;
  const Result r = conn_.exec(
      "SELECT run_id, count(*) FROM dyno_runs WHERE root = $1 GROUP BY run_id HAVING count(*) > "
      "1 ORDER BY run_id",
      {root_});
  std::string out;
  for (int i = 0; i < r.rows(); ++i) {
    out += std::string(out.empty() ? "" : "; ") + "run " + r.text(i, 0) + " is held " +
           r.text(i, 1) + " times";
  }
  return out.empty() ? "ok" : out;
}

/// Reads the rows of every runs root (index_reader.h); creates and migrates nothing.
class PgIndexReader final : public IndexReader {
 public:
  explicit PgIndexReader(const std::string& url) : conn_(url) {
    const std::string hint =
        "; `dyno runs reindex --runs-root DIR --index URL` indexes a runs "
        "root there (creating or migrating dyno's tables)";
    if (std::string(conn_.exec("SELECT to_regclass('dyno_meta') IS NOT NULL").text(0, 0)) != "t") {
      throw IndexError("the run index " + conn_.name() + " holds no dyno tables" + hint);
    }
    if (const std::string reason = schema_outdated_reason(conn_); !reason.empty()) {
      throw IndexError("the run index " + conn_.name() + " " + reason + hint);
    }
  }
  std::string name() const override { return conn_.name(); }
  std::vector<fs::path> roots() override {
    const Result r = conn_.exec("SELECT DISTINCT root FROM dyno_runs ORDER BY root");
    std::vector<fs::path> out;
    for (int i = 0; i < r.rows(); ++i) out.emplace_back(r.text(i, 0));
    return out;
  }
  std::vector<IndexedRun> rows(const IndexQuery& q) override {
    const std::vector<std::string>& text = indexed_text_columns();
    std::string sql = "SELECT " + column_list() + ", root FROM dyno_runs WHERE TRUE";
    Params binds;
    const auto bind = [&binds](const std::string& v) {
      binds.push_back(v);
      return "$" + std::to_string(binds.size());
    };
    if (q.root) sql += " AND root = " + bind(q.root->string());
    if (q.id_prefix) {
      const std::string n = bind(*q.id_prefix) + "::text";
      sql += " AND substr(run_id, 1, length(" + n + ")) = " + n;
    }
    std::string terms;
    for (const ColumnEquals& e : q.equals) {
      if (std::find(text.begin(), text.end(), e.column) == text.end()) {
        throw IndexError("'" + e.column + "' is not a text column of the run index");
      }
      terms += " AND " + e.column + " = " + bind(e.value);
    }
    if (!terms.empty()) sql += " AND (status = 'unreadable' OR (TRUE" + terms + "))";
    sql += " ORDER BY run_id, root";
    const Result r = conn_.exec(sql, binds);
    std::vector<IndexedRun> out;
    const int root_col = static_cast<int>(column_count());
    for (int i = 0; i < r.rows(); ++i) {
      IndexedRun run;
      run.root = r.text(i, root_col);
      int c = 0;
      for_each_field(run.row, [&r, i, &c](const char*, auto& v) {
        read(r.text(i, c), r.null(i, c), v);
        ++c;
      });
      out.push_back(std::move(run));
    }
    return out;
  }

 private:
  Connection conn_;
};
}  // namespace

std::unique_ptr<IndexBackend> open_pg_index(const fs::path& runs_root, const std::string& url,
                                            std::ostream& warnings) {
  return std::make_unique<PgIndex>(runs_root, url, warnings);
}

std::unique_ptr<IndexReader> open_index_reader(const std::string& url) {
  check_index_url(url);
  return std::make_unique<PgIndexReader>(url);
}

std::optional<std::string> glob_to_regex(const std::string& glob) {
  std::string re = "^";
  for (std::size_t i = 0; i < glob.size(); ++i) {
    const char c = glob[i];
    if (c == '*') {
      re += ".*";
    } else if (c == '?') {
      re += '.';
    } else if (c == '[') {
      std::size_t j = i + 1;
      std::string cls = "[";
      if (j < glob.size() && glob[j] == '^') {
        cls += '^';
        ++j;
      }
      bool first = true;
      for (; j < glob.size() && (first || glob[j] != ']'); ++j, first = false) {
        const char k = glob[j];
        if (k == ']' || k == '[' || k == '\\' || k == '^') cls += '\\';
        cls += k;
      }
      if (j >= glob.size()) return std::nullopt;  // unclosed: SQLite's GLOB matches nothing
      re += cls + "]";
      i = j;
    } else {
      if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) re += '\\';
      re += c;
    }
  }
  return re + "$";
}

}  // namespace dyno::store
