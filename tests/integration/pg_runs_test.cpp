// `dyno run` and `dyno runs …` with the run index in PostgreSQL (--index, DYNO_INDEX_URL;
// docs/store.md "A shared index"), through the binary, against a server this test process
// starts (tests/pg_server.h): finished runs indexed there, list/filter/sort/duplicates, show,
// rm, reindex, four dyno processes writing at once, and a password that never reaches the
// terminal or a record.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "integration/process.h"
#include "pg_server.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::testing::Child;
using dyno::testing::PgServer;

namespace {

struct Result {
  int code = -1;
  std::string out;
  std::string err;
};

std::vector<std::string> ids(const json::array& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows) out.emplace_back(r.at("run_id").as_string());
  return out;
}

/// Every file under `dir`, concatenated (to look for a secret).
std::string all_files(const fs::path& dir) {
  std::string out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    out.append(std::istreambuf_iterator<char>(in), {});
  }
  return out;
}

class PgRuns : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    pg_ = dyno::testing::shared_pg_server(why);
    if (pg_ == nullptr) GTEST_SKIP() << why;
    db_ = pg_->create_database();
    url_ = pg_->url(db_);
    dir_ = dyno::testing::make_temp_dir("dyno-pgruns");
    root_ = dir_ / "runs";
  }
  void TearDown() override {
    if (!dir_.empty() && !HasFailure()) fs::remove_all(dir_);
  }

  Child start(const std::vector<std::string>& args, const std::map<std::string, std::string>& env) {
    std::vector<std::string> argv = {DYNO_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    const std::string n = std::to_string(calls_++);
    return Child(argv, (dir_ / ("out" + n)).string(), (dir_ / ("err" + n)).string(), env);
  }
  Result dyno(const std::vector<std::string>& args,
              const std::map<std::string, std::string>& env = {}) {
    Child c = start(args, env);
    Result r;
    r.code = c.wait();
    r.out = c.out();
    r.err = c.err();
    terminal_ += r.out + r.err;
    return r;
  }
  std::vector<std::string> run_args(const std::string& concurrency,
                                    const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> args = {"run",         "--json",          "-q", "--telemetry", "off",
                                     "--runs-root", root_.string(),    "-n", "6",           "-c",
                                     concurrency,   "--output-tokens", "8"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  /// One short `dyno run` on the embedded engine, indexed through DYNO_INDEX_URL.
  std::string run(const std::string& concurrency, const std::vector<std::string>& extra = {}) {
    const Result r = dyno(run_args(concurrency, extra), {{"DYNO_INDEX_URL", url_}});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err.find("run index was not updated"), std::string::npos) << r.err;
    return std::string(json::parse(r.out).at("run_id").as_string());
  }
  json::array list_json(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"runs",         "list",    "--json", "--runs-root",
                                     root_.string(), "--index", url_};
    args.insert(args.end(), extra.begin(), extra.end());
    const Result r = dyno(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return json::parse(r.out).as_array();
  }
  std::string rows_in_db() const {
    return pg_->exec(
        db_, "SELECT count(*) FROM dyno_runs WHERE root = '" + fs::canonical(root_).string() + "'");
  }

  PgServer* pg_ = nullptr;
  std::string db_, url_;
  fs::path dir_, root_;
  int calls_ = 0;
  std::string terminal_;  ///< everything dyno printed
};

}  // namespace

TEST_F(PgRuns, FinishedRunsAreIndexedAndListedShownRemovedAndReindexed) {
  const std::string a = run("2");
  const std::string b = run("2");  // the same configuration: a duplicate of a
  const std::string c = run("4", {"--label", "wide"});
  // Indexed in PostgreSQL as each run finished, before any listing; no index.sqlite made.
  EXPECT_EQ(rows_in_db(), "3");
  EXPECT_FALSE(fs::exists(root_ / "index.sqlite"));
  json::array rows = list_json();
  ASSERT_EQ(ids(rows), (std::vector<std::string>{a, b, c}));
  EXPECT_TRUE(rows[0].at("duplicate_of").is_null());
  EXPECT_EQ(rows[1].at("duplicate_of"), json::value(a));
  EXPECT_TRUE(rows[2].at("duplicate_of").is_null());
  EXPECT_EQ(ids(list_json({"--label", "wide"})), std::vector<std::string>{c});
  EXPECT_EQ(ids(list_json({"--engine", "dyno-s?m", "--protocol", "run", "--status", "o*"})).size(),
            3u);
  EXPECT_EQ(ids(list_json({"--sort", "started", "--desc", "--limit", "1"})),
            std::vector<std::string>{c});
  EXPECT_EQ(ids(list_json({"--since", "2999-01-01"})).size(), 0u);
  // The environment names the index when --index does not; the SQLite index gives the same rows.
  Result r =
      dyno({"runs", "list", "--json", "--runs-root", root_.string()}, {{"DYNO_INDEX_URL", url_}});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).as_array(), rows);
  EXPECT_FALSE(fs::exists(root_ / "index.sqlite"));
  r = dyno({"runs", "list", "--json", "--runs-root", root_.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).as_array(), rows);
  r = dyno({"runs", "show", "--runs-root", root_.string(), "--index", url_, b});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("duplicate of  " + a), std::string::npos) << r.out;
  // rm drops the row: b becomes the original.
  r = dyno({"runs", "rm", "--runs-root", root_.string(), "--index", url_, a});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(rows_in_db(), "2");
  EXPECT_EQ(pg_->exec(db_, "SELECT count(*) FROM dyno_runs WHERE duplicate_of IS NOT NULL"), "0");
  // reindex rebuilds the rows from the directories; it names the index without the password.
  pg_->exec(db_, "DELETE FROM dyno_runs");
  r = dyno({"runs", "reindex", "--runs-root", root_.string(), "--index", url_});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("indexed 2 runs in postgresql://dyno:***@127.0.0.1:"), std::string::npos)
      << r.out;
  EXPECT_EQ(rows_in_db(), "2");
  EXPECT_EQ(terminal_.find(PgServer::kPassword), std::string::npos) << terminal_;
  EXPECT_EQ(all_files(root_).find(PgServer::kPassword), std::string::npos);
}

TEST_F(PgRuns, FourDynoProcessesIndexingAtOnceListEveryRunOnce) {
  std::vector<std::unique_ptr<Child>> children;
  for (int i = 0; i < 4; ++i) {
    std::vector<std::string> argv = {DYNO_BINARY};
    for (const auto& s : run_args(std::to_string(i + 1))) argv.push_back(s);
    children.push_back(
        std::make_unique<Child>(argv, (dir_ / ("p" + std::to_string(i))).string(),
                                (dir_ / ("e" + std::to_string(i))).string(),
                                std::map<std::string, std::string>{{"DYNO_INDEX_URL", url_}}));
  }
  std::vector<std::string> made;
  for (auto& c : children) {
    ASSERT_EQ(c->wait(), 0) << c->err();
    EXPECT_EQ(c->err().find("run index was not updated"), std::string::npos) << c->err();
    made.emplace_back(json::parse(c->out()).at("run_id").as_string());
  }
  EXPECT_EQ(rows_in_db(), "4");
  const std::vector<std::string> listed = ids(list_json({"--sort", "id"}));
  std::sort(made.begin(), made.end());
  EXPECT_EQ(listed, made);
}

TEST_F(PgRuns, BadUrlsAndUnreachableServersAreClearErrorsWithoutThePassword) {
  fs::create_directories(root_);
  Result r = dyno({"runs", "list", "--runs-root", root_.string(), "--index",
                   "mysql://dyno:Hunter2-pw@127.0.0.1/db"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--index: 'mysql://dyno:***@127.0.0.1/db' is not a PostgreSQL index URL"),
            std::string::npos)
      << r.err;
  r = dyno({"runs", "list", "--runs-root", root_.string()},
           {{"DYNO_INDEX_URL", "postgresql://dyno:Hunter2-pw@h:notaport/db"}});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(
      r.err.find("DYNO_INDEX_URL: index URL postgresql://dyno:***@h:notaport/db is malformed"),
      std::string::npos)
      << r.err;
  const std::string refused = "postgresql://dyno:Hunter2-pw@127.0.0.1:1/" + db_;
  r = dyno({"runs", "reindex", "--runs-root", root_.string(), "--index", refused});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("cannot connect to the run index postgresql://dyno:***@127.0.0.1:1/"),
            std::string::npos)
      << r.err;
  const std::string wrong =
      "postgresql://dyno:Hunter2-pw@127.0.0.1:" + std::to_string(pg_->port()) + "/" + db_;
  r = dyno({"runs", "list", "--runs-root", root_.string(), "--index", wrong});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("password authentication failed"), std::string::npos) << r.err;
  // `dyno run --index`: checked before anything runs; the run indexed there, not in SQLite.
  r = dyno(run_args("2", {"--index", "mysql://dyno:Hunter2-pw@x/db"}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--index"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(root_ / "index.sqlite"));
  r = dyno(run_args("2", {"--index", url_}));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(rows_in_db(), "1");
  EXPECT_FALSE(fs::exists(root_ / "index.sqlite"));
  // A run whose index cannot be reached still succeeds, with one warning; the record is whole.
  r = dyno(run_args("2"), {{"DYNO_INDEX_URL", wrong}});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("the run index was not updated"), std::string::npos) << r.err;
  for (const std::string secret : {"Hunter2-pw", PgServer::kPassword}) {
    EXPECT_EQ(terminal_.find(secret), std::string::npos) << terminal_;
    EXPECT_EQ(all_files(root_).find(secret), std::string::npos) << secret;
  }
}

TEST_F(PgRuns, TheIndexRemembersEachRecordsDigestAndAnOldSchemaGainsItInPlace) {
  const std::string a = run("2");
  const fs::path dir = root_ / a;
  // The record edited and re-checksummed: its files agree, the index does not.
  {
    std::ifstream in(dir / "summary.json");
    std::stringstream text;
    text << in.rdbuf();
    std::string summary = text.str();
    const std::size_t at = summary.find("\"input_total\": ");
    ASSERT_NE(at, std::string::npos);
    summary.insert(at + 15, "9");
    std::ofstream(dir / "summary.json", std::ios::trunc) << summary;
  }
  Child resum({"/bin/sh", "-c",
               "cd '" + dir.string() +
                   "' && sha256sum $(grep -o '[^ ]*$' SHA256SUMS) > S && mv S SHA256SUMS"},
              (dir_ / "resum.out").string(), (dir_ / "resum.err").string());
  ASSERT_EQ(resum.wait(), 0) << resum.err();
  Result r = dyno({"runs", "verify", a, "--runs-root", root_.string(), "--index", url_});
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("index: SHA256SUMS: sha256 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the digest the run index ("), std::string::npos) << r.out;
  // An index of schema version 1 (no digests) gains the column in place: its rows remember
  // nothing, so the record is not failed for it, and a note says what cannot be checked.
  pg_->exec(db_, "ALTER TABLE dyno_runs DROP COLUMN record_sha256");
  pg_->exec(db_, "UPDATE dyno_meta SET value = '1' WHERE key = 'schema_version'");
  r = dyno({"runs", "verify", a, "--runs-root", root_.string(), "--index", url_});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("remembers no digest of this record"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("recreated"), std::string::npos) << r.err;
  EXPECT_EQ(pg_->exec(db_, "SELECT value FROM dyno_meta WHERE key = 'schema_version'"), "2");
  EXPECT_EQ(rows_in_db(), "1");
}
