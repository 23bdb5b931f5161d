// SQLite's C API in RAII form for the run index (run_index.cpp): a prepared statement whose
// errors are IndexError naming the index file, exec, and a transaction that rolls back when
// left by an exception. Internal to the record module.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "store/index_error.h"

namespace dyno::store::sqlite {

class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql, const std::filesystem::path& file)
      : db_(db), file_(file) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK) fail();
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  void bind(int i, const std::string& v) {
    check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  void bind(int i, const std::optional<std::string>& v) {
    if (v) {
      bind(i, *v);
    } else {
      check(sqlite3_bind_null(stmt_, i));
    }
  }
  void bind(int i, const std::optional<std::int64_t>& v) {
    check(v ? sqlite3_bind_int64(stmt_, i, *v) : sqlite3_bind_null(stmt_, i));
  }
  void bind(int i, const std::optional<double>& v) {
    check(v ? sqlite3_bind_double(stmt_, i, *v) : sqlite3_bind_null(stmt_, i));
  }

  /// True when a row is ready, false when done; throws IndexError on an error.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail();
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  void read(int i, std::string& out) const {
    const unsigned char* t = sqlite3_column_text(stmt_, i);
    out = t == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(t));
  }
  void read(int i, std::optional<std::string>& out) const {
    if (sqlite3_column_type(stmt_, i) == SQLITE_NULL) {
      out.reset();
    } else {
      out.emplace();
      read(i, *out);
    }
  }
  void read(int i, std::optional<std::int64_t>& out) const {
    if (sqlite3_column_type(stmt_, i) == SQLITE_NULL) {
      out.reset();
    } else {
      out = sqlite3_column_int64(stmt_, i);
    }
  }
  void read(int i, std::optional<double>& out) const {
    if (sqlite3_column_type(stmt_, i) == SQLITE_NULL) {
      out.reset();
    } else {
      out = sqlite3_column_double(stmt_, i);
    }
  }

 private:
  void check(int rc) const {
    if (rc != SQLITE_OK) fail();
  }
  [[noreturn]] void fail() const { throw IndexError(file_.string() + ": " + sqlite3_errmsg(db_)); }

  sqlite3* db_;
  const std::filesystem::path& file_;
  sqlite3_stmt* stmt_ = nullptr;
};

inline void exec(sqlite3* db, const std::string& sql, const std::filesystem::path& file) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string message = err != nullptr ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    throw IndexError(file.string() + ": " + message);
  }
}

/// BEGIN IMMEDIATE ... COMMIT; rolls back when left by an exception.
class Transaction {
 public:
  Transaction(sqlite3* db, const std::filesystem::path& file) : db_(db), file_(file) {
    exec(db_, "BEGIN IMMEDIATE", file_);
  }
  ~Transaction() {
    if (!committed_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit() {
    exec(db_, "COMMIT", file_);
    committed_ = true;
  }

 private:
  sqlite3* db_;
  const std::filesystem::path& file_;
  bool committed_ = false;
};

}  // namespace dyno::store::sqlite
