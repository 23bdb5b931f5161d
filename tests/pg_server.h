// A throw-away PostgreSQL server for tests of the run index in PostgreSQL (docs/store.md "A
// shared index"): Debian's initdb into a private temporary directory, pg_ctl start on a free
// loopback port with its socket in that directory, stopped and removed at exit. PostgreSQL
// refuses to run as root (CI runs as root): there the server runs as `nobody` (runuser), which
// owns the directory. Connections over the socket need no password (for the fixture's own
// CREATE DATABASE); over TCP they need the password (scram-sha-256), so tests can check how a
// password travels. If the test process is killed, a watchdog shell stops the server and
// removes the directory. One server per test process: register a binary that uses it as one ctest
// test, not one per TEST (each would start its own server).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdlib.h>  // mkdtemp
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>

#include "free_port.h"
#include "temp_dir.h"

namespace dyno::testing {

/// The directory of PostgreSQL's server binaries (Debian: /usr/lib/postgresql/<v>/bin), the
/// newest version present; "" when there is none.
inline std::filesystem::path pg_bin_dir() {
  std::filesystem::path best;
  int best_version = -1;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string name = e.path().filename().string();
    const int v = std::atoi(name.c_str());
    if (v > best_version && std::filesystem::exists(e.path() / "bin" / "initdb", ec) &&
        std::filesystem::exists(e.path() / "bin" / "pg_ctl", ec)) {
      best_version = v;
      best = e.path() / "bin";
    }
  }
  return best;
}

class PgServer {
 public:
  static constexpr const char* kUser = "dyno";
  static constexpr const char* kPassword = "s3cret-Pg-pw";

  /// Starts the server; throws std::runtime_error (with the log's path) when it cannot.
  explicit PgServer(const std::filesystem::path& bin) : bin_(bin), dir_(make_private_dir()) {
    const bool root = ::geteuid() == 0;
    std::string as;
    if (root) {
      const passwd* pw = ::getpwnam("nobody");
      if (pw == nullptr) throw std::runtime_error("running as root and there is no user nobody");
      as = "runuser -u nobody -- ";
      if (::chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
        throw std::runtime_error("chown " + dir_.string() + " failed");
      }
    }
    { std::ofstream(dir_ / "pw") << kPassword << "\n"; }
    if (root) {
      const passwd* pw = ::getpwnam("nobody");
      if (::chown((dir_ / "pw").c_str(), pw->pw_uid, pw->pw_gid) != 0) {
        throw std::runtime_error("chown pw failed");
      }
    }
    const std::string d = dir_.string();
    sh(as + (bin_ / "initdb").string() + " -D " + d + "/data -U " + kUser + " --pwfile=" + d +
           "/pw --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C --no-sync > " + d +
           "/initdb.log 2>&1",
       "initdb (see " + d + "/initdb.log)");
    for (int attempt = 0;; ++attempt) {
      port_ = free_loopback_port();
      const int rc =
          std::system((as + (bin_ / "pg_ctl").string() + " -D " + d + "/data -l " + d +
                       "/server.log -w -t 60 -o \"-p " + std::to_string(port_) + " -k " + d +
                       " -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off"
                       " -c full_page_writes=off -c max_connections=40\" start > " +
                       d + "/pg_ctl.log 2>&1")
                          .c_str());
      if (rc == 0) break;
      if (attempt == 2) {
        throw std::runtime_error("pg_ctl start failed (see " + d + "/server.log)");
      }
    }
    as_ = as;
    started_ = true;
    // A test process that is killed (a ctest timeout, SIGPIPE, a crash) runs no destructor: a
    // watchdog stops the server and removes its directory once this process is gone.
    (void)std::system(("sh -c 'while kill -0 " + std::to_string(::getpid()) +
                       " 2>/dev/null; do sleep 1; done; " + as + (bin_ / "pg_ctl").string() +
                       " -D " + d + "/data -m immediate stop; rm -rf " + d + "' > /dev/null 2>&1 &")
                          .c_str());
  }
  ~PgServer() {
    if (started_) {
      (void)std::system((as_ + (bin_ / "pg_ctl").string() + " -D " + dir_.string() +
                         "/data -m immediate stop > /dev/null 2>&1")
                            .c_str());
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  int port() const { return port_; }

  /// A new, empty database; returns its name.
  std::string create_database() {
    static std::atomic<int> n{0};
    const std::string name = "t" + std::to_string(++n);
    exec("postgres", "CREATE DATABASE " + name);
    return name;
  }

  /// A URL of `db` over TCP: with the password in it, or without (then PGPASSWORD or a
  /// ~/.pgpass must give it).
  std::string url(const std::string& db, bool with_password = true) const {
    return std::string("postgresql://") + kUser +
           (with_password ? std::string(":") + kPassword : "") +
           "@127.0.0.1:" + std::to_string(port_) + "/" + db;
  }

  /// Runs SQL in `db` over the socket; returns the first column of the first row ("" when
  /// none). Throws std::runtime_error with the server's message.
  std::string exec(const std::string& db, const std::string& sql) const {
    const std::string conninfo = "host=" + dir_.string() + " port=" + std::to_string(port_) +
                                 " user=" + kUser + " dbname=" + db;
    PGconn* c = PQconnectdb(conninfo.c_str());
    if (PQstatus(c) != CONNECTION_OK) {
      const std::string why = PQerrorMessage(c);
      PQfinish(c);
      throw std::runtime_error("connect: " + why);
    }
    PGresult* r = PQexec(c, sql.c_str());
    const ExecStatusType st = PQresultStatus(r);
    std::string out;
    if (st == PGRES_TUPLES_OK && PQntuples(r) > 0) out = PQgetvalue(r, 0, 0);
    const std::string why = PQerrorMessage(c);
    PQclear(r);
    PQfinish(c);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) throw std::runtime_error(sql + ": " + why);
    return out;
  }

 private:
  /// A private directory under /tmp, whatever TMPDIR says: the server's socket path must fit
  /// in 107 bytes, and `nobody` must be able to reach the directory.
  static std::filesystem::path make_private_dir() {
    std::string templ = "/tmp/dyno-pg-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) {
      throw std::runtime_error("mkdtemp " + templ + ": " + std::strerror(errno));
    }
    return templ;
  }
  static void sh(const std::string& cmd, const std::string& what) {
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error(what + " failed");
  }
  std::filesystem::path bin_;
  std::filesystem::path dir_;
  std::string as_;
  int port_ = 0;
  bool started_ = false;
};

/// The process's server, started on first use; nullptr with `why` set when the PostgreSQL
/// binaries are absent (the caller skips). A server that fails to start fails the test.
inline PgServer* shared_pg_server(std::string& why) {
  static const std::filesystem::path bin = pg_bin_dir();
  if (bin.empty()) {
    why =
        "PostgreSQL server binaries are absent (/usr/lib/postgresql/*/bin/initdb; "
        "scripts/deps installs the postgresql package)";
    return nullptr;
  }
  static std::unique_ptr<PgServer> server = std::make_unique<PgServer>(bin);
  return server.get();
}

}  // namespace dyno::testing

/// In a TEST: `DYNO_PG_OR_SKIP(pg);` declares `PgServer* pg`, or skips the test saying why
/// when the PostgreSQL binaries are absent.
#define DYNO_PG_OR_SKIP(var)                                                 \
  std::string var##_why;                                                     \
  dyno::testing::PgServer* var = dyno::testing::shared_pg_server(var##_why); \
  if (var == nullptr) GTEST_SKIP() << var##_why
