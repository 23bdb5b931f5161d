// The run index on both backends: the same rows, filters, sort keys, duplicate marks, sync and
// concurrent writers with index.sqlite and with PostgreSQL (a server this test process starts:
// tests/pg_server.h), then what only PostgreSQL has: its schema version and migration, several
// runs roots in one database, and a password that never reaches a message.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>
#include <tuple>

#include "pg_server.h"
#include "record/record_fixture.h"
#include "store/index_url.h"
#include "store/pg_index.h"
#include "store/run_index.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::store::RunFilter;
using dyno::store::RunIndex;
using dyno::store::RunRow;
using dyno::testing::PgServer;
using dyno::testing::sample_manifest;
using dyno::testing::sample_summary;
using dyno::testing::TempDir;
using dyno::testing::write_run;

namespace {

/// The marks every committed state must have: each run with a key that an earlier run (by
/// started_at, then id) has is the duplicate of the earliest such run. "" when they hold.
std::string wrong_marks(const std::vector<RunRow>& rows) {
  for (const auto& r : rows) {
    std::optional<std::string> first;
    const RunRow* best = nullptr;
    for (const auto& o : rows) {
      if (o.identity_key.empty() || o.identity_key != r.identity_key) continue;
      if (std::tie(o.started_at, o.run_id) >= std::tie(r.started_at, r.run_id)) continue;
      if (best == nullptr ||
          std::tie(o.started_at, o.run_id) < std::tie(best->started_at, best->run_id)) {
        best = &o;
      }
    }
    if (best != nullptr) first = best->run_id;
    if (r.duplicate_of != first) {
      return r.run_id + " is marked " + r.duplicate_of.value_or("null") + ", should be " +
             first.value_or("null");
    }
  }
  return "";
}

std::vector<std::string> ids_of(const std::vector<RunRow>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r.run_id);
  return out;
}

const std::string kA = "20261101T100000Z-aaaaaa", kB = "20261115T100000Z-bbbbbb-fr",
                  kC = "20261130T100000Z-cccccc";

/// Three runs that differ in what the filters look at.
void write_three(const fs::path& root) {
  json::object a = sample_manifest(kA, "2026-11-01T10:00:00.000Z");
  a["label"] = "base+1 (x)";  // regular-expression characters are plain text to a GLOB
  json::object b = sample_manifest(kB, "2026-11-15T10:00:00.000Z");
  b["label"] = "fr";
  b["campaign"] = "20261115T095959Z-cccccc-sweep";
  b["engine"].as_object()["name"] = "sglang";
  b["workload"].as_object()["protocol"] = json::object{{"name", "sweep"}, {"cell", "c8"}};
  b["load"].as_object()["concurrency"] = 8;
  json::object c = sample_manifest(kC, "2026-11-30T10:00:00.000Z");
  c["status"] = "partial";
  c["model"].as_object()["id"] = "Qwen/Qwen2.5-7B-Instruct";
  c["load"].as_object()["concurrency"] = 16;
  write_run(root, a, sample_summary(kA, 100.0, 50.0));
  write_run(root, b, sample_summary(kB, 300.0, 20.0));
  json::object cs = sample_summary(kC, 200.0, 80.0);
  cs["status"] = "partial";
  write_run(root, c, cs);
}

/// Parameter: "sqlite" (index.sqlite) or "postgresql" (a fresh database on the test server).
class IndexBackends : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() != "postgresql") return;
    std::string why;
    pg_ = dyno::testing::shared_pg_server(why);
    if (pg_ == nullptr) GTEST_SKIP() << why;
    db_ = pg_->create_database();
    url_ = pg_->url(db_);
  }
  std::unique_ptr<RunIndex> open(const fs::path& root, std::ostream& warn) const {
    return std::make_unique<RunIndex>(root, warn, url_);
  }

  PgServer* pg_ = nullptr;
  std::string db_;
  std::string url_;  ///< "" for SQLite
};

INSTANTIATE_TEST_SUITE_P(Backends, IndexBackends, ::testing::Values("sqlite", "postgresql"),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace

TEST_P(IndexBackends, ListsEveryRunWithItsFields) {
  TempDir tmp;
  write_three(tmp.path());
  std::ostringstream warn;
  auto index = open(tmp.path(), warn);
  EXPECT_TRUE(index->rebuilt());
  const auto rows = index->list({});
  ASSERT_EQ(ids_of(rows), (std::vector<std::string>{kA, kB, kC}));
  const RunRow& b = rows[1];
  EXPECT_EQ(b.status, "ok");
  EXPECT_EQ(b.label, "fr");
  EXPECT_EQ(b.protocol, "sweep");
  EXPECT_EQ(b.cell, "c8");
  EXPECT_EQ(b.engine_name, "sglang");
  EXPECT_EQ(b.engine_args, "{}");
  EXPECT_EQ(b.gpus, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(b.stream_count, 20);
  EXPECT_EQ(b.concurrency, 8);
  EXPECT_FALSE(b.rate_per_s.has_value());
  EXPECT_EQ(b.requests_ok, 20);
  EXPECT_DOUBLE_EQ(*b.output_tokens_per_s, 300.0);
  EXPECT_DOUBLE_EQ(*b.tpot_p50_ms, 12.5);
  EXPECT_FALSE(b.accuracy.has_value());
  EXPECT_EQ(b.identity_key.size(), 64u);
  EXPECT_FALSE(b.problem.has_value());
  // The same row as read from the directory, field for field (JSON: every column).
  EXPECT_EQ(dyno::store::row_to_json(b),
            dyno::store::row_to_json(dyno::store::read_run_row(tmp.path() / kB)));
  if (url_.empty()) {  // index.sqlite was missing although runs were there: said
    EXPECT_NE(warn.str().find("was missing"), std::string::npos) << warn.str();
  } else {  // a database new to this runs root is filled on first use, silently
    EXPECT_EQ(warn.str(), "");
  }
  EXPECT_EQ(index->integrity(), "ok");
}

TEST_P(IndexBackends, EveryFilterAndSortKeySelectsAndOrdersTheSameRuns) {
  TempDir tmp;
  write_three(tmp.path());
  std::ostringstream warn;
  auto index = open(tmp.path(), warn);
  const auto ids = [&index](RunFilter f) { return ids_of(index->list(f)); };
  using V = std::vector<std::string>;
  RunFilter f;
  f.campaign = "*sweep";
  EXPECT_EQ(ids(f), V{kB});
  f = {};
  f.engine = "vllm";
  EXPECT_EQ(ids(f), (V{kA, kC}));
  f = {};
  f.model = "Qwen/*";
  EXPECT_EQ(ids(f), V{kC});
  f.model = "Qwen/Qwen2.5-?B-*";  // '.' is itself, '?' one character
  EXPECT_EQ(ids(f), V{kC});
  f.model = "Qwen/Qwen2x5*";
  EXPECT_EQ(ids(f), V{});
  f.model = "[mQ]*";  // meta-llama/… and Qwen/…
  EXPECT_EQ(ids(f), (V{kA, kB, kC}));
  f.model = "[^m]*";
  EXPECT_EQ(ids(f), V{kC});
  f.model = "[A-Z]*";  // case-sensitive
  EXPECT_EQ(ids(f), V{kC});
  f.model = "[]Q]wen*";  // ']' first in a class is itself
  EXPECT_EQ(ids(f), V{kC});
  f.model = "[Q";  // unclosed: matches nothing, as SQLite's GLOB
  EXPECT_EQ(ids(f), V{});
  f = {};
  f.label = "base+1 (x)";
  EXPECT_EQ(ids(f), V{kA});
  f.label = "base+1*";
  EXPECT_EQ(ids(f), V{kA});
  f.label = "base1*";
  EXPECT_EQ(ids(f), V{});
  f = {};
  f.protocol = "run";
  EXPECT_EQ(ids(f), (V{kA, kC}));
  f = {};
  f.status = "partial";
  EXPECT_EQ(ids(f), V{kC});
  f = {};
  f.since = "2026-11-15";
  EXPECT_EQ(ids(f), (V{kB, kC}));
  f = {};
  f.until = "2026-11-15";  // inclusive at the precision given
  EXPECT_EQ(ids(f), (V{kA, kB}));
  f = {};
  f.since = "2026-11-02";
  f.until = "2026-11-29";
  EXPECT_EQ(ids(f), V{kB});
  f = {};
  f.sort = "tok_s";
  f.descending = true;
  EXPECT_EQ(ids(f), (V{kB, kC, kA}));
  f.limit = 2;
  EXPECT_EQ(ids(f), (V{kB, kC}));
  f = {};
  f.sort = "ttft";
  EXPECT_EQ(ids(f), (V{kB, kA, kC}));
  f.sort = "accuracy";  // all missing: last, then by id
  EXPECT_EQ(ids(f), (V{kA, kB, kC}));
  f.descending = true;
  EXPECT_EQ(ids(f), (V{kC, kB, kA}));
  f = {};
  f.sort = "status";  // byte order: "ok" < "partial"
  EXPECT_EQ(ids(f), (V{kA, kB, kC}));
  f = {};
  f.engine = "vllm";
  f.status = "ok";
  EXPECT_EQ(ids(f), V{kA});
  f = {};
  f.sort = "nonsense";
  EXPECT_THROW(index->list(f), dyno::store::IndexError);
}

TEST_P(IndexBackends, SyncAddsNewDirectoriesDropsGoneOnesAndRereadsChangedRuns) {
  TempDir tmp;
  write_three(tmp.path());
  std::ostringstream warn;
  auto index = open(tmp.path(), warn);
  json::object d = sample_manifest("20261201T000000Z-dddddd", "2026-12-01T00:00:00.000Z");
  d["status"] = "running";
  write_run(tmp.path(), d, sample_summary("20261201T000000Z-dddddd", 1.0, 1.0));
  fs::remove_all(tmp.path() / kA);
  fs::create_directories(tmp.path() / "campaigns");  // never a run
  auto stats = index->sync();
  EXPECT_EQ(stats.added, 1u);
  EXPECT_EQ(stats.dropped, 1u);
  EXPECT_EQ(index->ids(), (std::vector<std::string>{kB, kC, "20261201T000000Z-dddddd"}));
  EXPECT_EQ(index->find("20261201T000000Z-dddddd")->status, "running");
  d["status"] = "ok";
  write_run(tmp.path(), d, sample_summary("20261201T000000Z-dddddd", 1.0, 1.0));
  stats = index->sync();
  EXPECT_EQ(stats.refreshed, 1u);
  EXPECT_EQ(index->find("20261201T000000Z-dddddd")->status, "ok");
  // A summary corrupted in place after it was indexed: read again, its figures gone.
  std::ofstream(tmp.path() / kC / "summary.json", std::ios::trunc) << "{ \"truncated";
  stats = index->sync();
  EXPECT_EQ(stats.refreshed, 1u);
  const auto row = index->find(kC);
  EXPECT_FALSE(row->output_tokens_per_s.has_value());
  ASSERT_TRUE(row->problem.has_value());
  EXPECT_NE(row->problem->find("summary.json is not valid JSON"), std::string::npos);
  // An unreadable manifest: listed with its problem, never a duplicate.
  fs::create_directories(tmp.path() / "20261120T000000Z-badbad");
  std::ofstream(tmp.path() / "20261120T000000Z-badbad" / "manifest.json") << "{ not json";
  index->sync();
  const auto bad = index->find("20261120T000000Z-badbad");
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->status, "unreadable");
  EXPECT_EQ(bad->identity_key, "");
  // Reopened: nothing to do; a rebuild finds the same runs.
  std::ostringstream warn2;
  auto again = open(tmp.path(), warn2);
  EXPECT_FALSE(again->rebuilt());
  EXPECT_EQ(warn2.str(), "");
  EXPECT_EQ(again->rebuild(), 4u);
  EXPECT_EQ(again->ids(), index->ids());
}

TEST_P(IndexBackends, MarksDuplicatesAndRemovingTheOriginalPromotesTheNext) {
  TempDir tmp;
  std::ostringstream warn;
  const auto make = [&](const std::string& id, const std::string& at, int concurrency) {
    json::object m = sample_manifest(id, at);
    m["load"].as_object()["concurrency"] = concurrency;
    m["hardware"].as_object()["host"] = "host-" + id;  // not part of the key
    return write_run(tmp.path(), m, sample_summary(id, 1.0, 1.0));
  };
  const fs::path second = make("20261102T000000Z-bbbbbb", "2026-11-02T00:00:00.000Z", 4);
  auto index = open(tmp.path(), warn);
  const fs::path first = make("20261101T000000Z-aaaaaa", "2026-11-01T00:00:00.000Z", 4);
  const fs::path third = make("20261103T000000Z-cccccc", "2026-11-03T00:00:00.000Z", 4);
  const fs::path other = make("20261104T000000Z-dddddd", "2026-11-04T00:00:00.000Z", 8);
  index->upsert(third);
  index->upsert(first);
  index->upsert(other);
  EXPECT_FALSE(index->find("20261101T000000Z-aaaaaa")->duplicate_of.has_value());
  EXPECT_EQ(index->find("20261102T000000Z-bbbbbb")->duplicate_of, "20261101T000000Z-aaaaaa");
  EXPECT_EQ(index->find("20261103T000000Z-cccccc")->duplicate_of, "20261101T000000Z-aaaaaa");
  EXPECT_FALSE(index->find("20261104T000000Z-dddddd")->duplicate_of.has_value());
  fs::remove_all(first);
  index->sync();
  EXPECT_FALSE(index->find("20261102T000000Z-bbbbbb")->duplicate_of.has_value());
  EXPECT_EQ(index->find("20261103T000000Z-cccccc")->duplicate_of, "20261102T000000Z-bbbbbb");
  index->remove("20261102T000000Z-bbbbbb");
  EXPECT_FALSE(index->find("20261103T000000Z-cccccc")->duplicate_of.has_value());
}

TEST_P(IndexBackends, FourWritersAtOnceLoseNothingAndMarkDuplicatesRight) {
  TempDir tmp;
  constexpr int kWriters = 4, kPerWriter = 12;
  std::ostringstream w0;
  { auto create = open(tmp.path(), w0); }
  // Every run has the same configuration: one original (the earliest), the rest duplicates.
  const auto writer = [this, &tmp](int w) {
    std::ostringstream warn;
    auto index = open(tmp.path(), warn);
    for (int i = 0; i < kPerWriter; ++i) {
      const std::string sec = std::to_string(10 + i);
      const std::string id = "20261101T0000" + sec + "Z-" + std::to_string(w) + "00000";
      json::object m =
          sample_manifest(id, "2026-11-01T00:00:" + sec + "." + std::to_string(w) + "00Z");
      index->upsert(write_run(tmp.path(), m, sample_summary(id, 1.0, 1.0)));
      index->upsert(tmp.path() / id);  // the same run again: replaced, not added
      // Every committed state has its marks right, not only the last one.
      EXPECT_EQ(wrong_marks(index->list({})), "");
    }
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) threads.emplace_back(writer, w);
  for (auto& t : threads) t.join();
  std::ostringstream warn;
  auto index = open(tmp.path(), warn);
  const auto rows = index->list({});
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(kWriters * kPerWriter));
  EXPECT_EQ(index->integrity(), "ok");
  EXPECT_EQ(index->sync().added, 0u);
  const std::string original = "20261101T000010Z-000000";
  for (const auto& r : rows) {
    if (r.run_id == original) {
      EXPECT_FALSE(r.duplicate_of.has_value());
    } else {
      EXPECT_EQ(r.duplicate_of, original) << r.run_id;
    }
  }
}

TEST_P(IndexBackends, IndexingAFinishedRunNeverThrowsAndIndexesIt) {
  TempDir tmp;
  std::ostringstream warn;
  dyno::store::index_finished_run(tmp.path() / "missing-root", tmp.path() / "missing-root" / "x",
                                  warn, url_);
  EXPECT_NE(warn.str().find("the run index was not updated"), std::string::npos) << warn.str();
  const std::string id = "20261101T000000Z-aaaaaa";
  const fs::path dir = write_run(tmp.path(), sample_manifest(id, "2026-11-01T00:00:00.000Z"),
                                 sample_summary(id, 1, 1));
  std::ostringstream warn2;
  dyno::store::index_finished_run(tmp.path(), dir, warn2, url_);
  EXPECT_EQ(warn2.str(), "");
  auto index = open(tmp.path(), warn2);
  EXPECT_EQ(index->ids(), std::vector<std::string>{id});
}

// ---- PostgreSQL only ----------------------------------------------------------------------------

TEST(PgIndex, RecordsItsSchemaVersionAndRebuildsAnOlderSchema) {
  DYNO_PG_OR_SKIP(pg);
  const std::string db = pg->create_database();
  TempDir tmp;
  write_three(tmp.path());
  std::ostringstream warn;
  { RunIndex index(tmp.path(), warn, pg->url(db)); }
  EXPECT_EQ(pg->exec(db, "SELECT value FROM dyno_meta WHERE key = 'schema_version'"),
            std::to_string(dyno::store::kPgIndexSchemaVersion));
  EXPECT_EQ(pg->exec(db, "SELECT count(*) FROM dyno_runs"), "3");
  EXPECT_EQ(pg->exec(db, "SELECT DISTINCT root FROM dyno_runs"),
            fs::canonical(tmp.path()).string());
  EXPECT_FALSE(fs::exists(tmp.path() / "index.sqlite"));
  // An older schema: tables of another layout. Recreated, the runs indexed again.
  pg->exec(db, "UPDATE dyno_meta SET value = '0' WHERE key = 'schema_version'");
  pg->exec(db, "ALTER TABLE dyno_runs DROP COLUMN accuracy");
  std::ostringstream warn2;
  RunIndex index(tmp.path(), warn2, pg->url(db));
  EXPECT_TRUE(index.rebuilt());
  EXPECT_NE(warn2.str().find("schema version 0, this dyno uses 2"), std::string::npos)
      << warn2.str();
  EXPECT_EQ(index.ids().size(), 3u);
  EXPECT_EQ(index.integrity(), "ok");
  // A newer schema belongs to a newer dyno: refused, not dropped.
  pg->exec(db, "UPDATE dyno_meta SET value = '99' WHERE key = 'schema_version'");
  std::ostringstream warn3;
  try {
    RunIndex newer(tmp.path(), warn3, pg->url(db));
    ADD_FAILURE() << "a newer schema was accepted";
  } catch (const dyno::store::IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("newer than this dyno's"), std::string::npos) << e.what();
  }
  EXPECT_EQ(pg->exec(db, "SELECT count(*) FROM dyno_runs"), "3");
}

TEST(PgIndex, SeveralRunsRootsShareOneDatabaseWithoutSeeingEachOther) {
  DYNO_PG_OR_SKIP(pg);
  const std::string db = pg->create_database();
  TempDir one, two;
  write_three(one.path());
  const std::string id = "20261201T000000Z-eeeeee";
  write_run(two.path(), sample_manifest(id, "2026-12-01T00:00:00.000Z"), sample_summary(id, 1, 1));
  std::ostringstream warn;
  RunIndex a(one.path(), warn, pg->url(db));
  RunIndex b(two.path(), warn, pg->url(db));
  EXPECT_TRUE(b.rebuilt());  // a runs root new to the database gets all its runs indexed
  EXPECT_EQ(a.ids().size(), 3u);
  EXPECT_EQ(b.ids(), std::vector<std::string>{id});
  EXPECT_EQ(pg->exec(db, "SELECT count(*) FROM dyno_runs"), "4");
  b.rebuild();
  EXPECT_EQ(a.ids().size(), 3u);
  // The same runs root under another spelling is the same root (its canonical path).
  fs::create_directory_symlink(one.path(), two.path() / "link-to-one");
  RunIndex a2(two.path() / "link-to-one" / ".", warn, pg->url(db));
  EXPECT_FALSE(a2.rebuilt());
  EXPECT_EQ(a2.ids().size(), 3u);
}

TEST(PgIndex, APasswordNeverReachesAMessage) {
  DYNO_PG_OR_SKIP(pg);
  const std::string db = pg->create_database();
  TempDir tmp;
  write_three(tmp.path());
  std::ostringstream warn;
  const std::string wrong =
      "postgresql://dyno:Wr0ng-pw-7@127.0.0.1:" + std::to_string(pg->port()) + "/" + db;
  try {
    RunIndex index(tmp.path(), warn, wrong);
    ADD_FAILURE() << "a wrong password was accepted";
  } catch (const dyno::store::IndexError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find("Wr0ng-pw-7"), std::string::npos) << m;
    EXPECT_NE(m.find("postgresql://dyno:***@127.0.0.1:"), std::string::npos) << m;
    EXPECT_NE(m.find("password authentication failed"), std::string::npos) << m;
    EXPECT_EQ(e.kind(), dyno::ErrorKind::io);
  }
  // Unreachable (nothing listens on port 1): the same.
  try {
    RunIndex index(tmp.path(), warn, "postgresql://dyno:Wr0ng-pw-7@127.0.0.1:1/" + db);
    ADD_FAILURE() << "port 1 answered";
  } catch (const dyno::store::IndexError& e) {
    EXPECT_EQ(std::string(e.what()).find("Wr0ng-pw-7"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot connect to the run index"), std::string::npos);
  }
  // index_finished_run's warning neither.
  std::ostringstream w2;
  dyno::store::index_finished_run(tmp.path(), tmp.path() / kA, w2, wrong);
  EXPECT_NE(w2.str().find("the run index was not updated"), std::string::npos) << w2.str();
  EXPECT_EQ(w2.str().find("Wr0ng-pw-7"), std::string::npos) << w2.str();
  // The password from PGPASSWORD, as libpq reads it; the URL holds none.
  ::setenv("PGPASSWORD", PgServer::kPassword, 1);
  RunIndex index(tmp.path(), warn, pg->url(db, /*with_password=*/false));
  ::unsetenv("PGPASSWORD");
  EXPECT_EQ(index.ids().size(), 3u);
  EXPECT_EQ(index.name().find(PgServer::kPassword), std::string::npos);
}

TEST(IndexUrl, MalformedUrlsAreUsageErrorsThatHideThePassword) {
  using dyno::store::check_index_url;
  using dyno::store::IndexUrlError;
  EXPECT_NO_THROW(check_index_url("postgresql://u:p@h:5432/db?sslmode=disable"));
  EXPECT_NO_THROW(check_index_url("postgres:///db"));
  for (const std::string bad :
       {"mysql://u:hunter2@h/db", "index.sqlite", "postgresql://u:hunter2@h:notaport/db",
        "postgresql://u:hunter2@h/db?nosuchparam=1",
        "postgresql://u@h/db?password=hunter2&x=%zz"}) {
    try {
      check_index_url(bad);
      ADD_FAILURE() << "accepted";
    } catch (const IndexUrlError& e) {
      EXPECT_EQ(e.kind(), dyno::ErrorKind::usage);
      EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
    }
  }
  using dyno::store::redact_index_url;
  EXPECT_EQ(redact_index_url("postgresql://u:p%40ss@h:1/db"), "postgresql://u:***@h:1/db");
  EXPECT_EQ(redact_index_url("postgresql://u@h/db?password=x&sslmode=require"),
            "postgresql://u@h/db?password=***&sslmode=require");
  EXPECT_EQ(redact_index_url("postgres://h/db"), "postgres://h/db");
  EXPECT_EQ(
      dyno::store::redact_secret_of("postgresql://u:p%40ss@h/db",
                                    "failed for p@ss and p%40ss at postgresql://u:p%40ss@h/db"),
      "failed for *** and *** at postgresql://u:***@h/db");
}

TEST(IndexUrl, EveryFormOfAPasswordIsRedacted) {
  using dyno::store::redact_index_url;
  using dyno::store::redact_secret_of;
  // libpq's '@': a '?' may be in the password, and a query after it still redacted.
  EXPECT_EQ(redact_index_url("postgresql://u:pa?ss@h/db"), "postgresql://u:***@h/db");
  EXPECT_EQ(redact_index_url("postgresql://u:pa?ss@h/db?password=x&a=b"),
            "postgresql://u:***@h/db?password=***&a=b");
  EXPECT_EQ(redact_index_url("postgresql://u:a/b@h/db"), "postgresql://u:***@h/db");
  EXPECT_EQ(redact_index_url("postgresql://u:a/b?c@h/db"), "postgresql://u:***@h/db");
  EXPECT_EQ(redact_index_url("postgresql://h:5432/db"), "postgresql://h:5432/db");
  EXPECT_EQ(redact_index_url("postgresql://h/db?application_name=a@b"),
            "postgresql://h/db?application_name=a@b");
  // Mistyped schemes.
  EXPECT_EQ(redact_index_url("postgresql:/u:pw@h/db"), "postgresql:/u:***@h/db");
  EXPECT_EQ(redact_index_url("postgres//u:p?w@h/db"), "postgres//u:***@h/db");
  EXPECT_EQ(redact_index_url("postgresql:u:pw@h/db"), "postgresql:u:***@h/db");
  EXPECT_EQ(redact_index_url("u:pw@h/db"), "u:***@h/db");
  EXPECT_EQ(redact_index_url("postgres//u:pw@h/db"), "postgres//u:***@h/db");
  EXPECT_EQ(redact_index_url("postgresq://u:pw@h/db"), "postgresq://u:***@h/db");
  // libpq keyword/value strings, plain and quoted.
  EXPECT_EQ(redact_index_url("host=h password=pw dbname=d"), "host=h password=*** dbname=d");
  EXPECT_EQ(redact_index_url("host=h password = 'p w\\'x' dbname=d"),
            "host=h password = *** dbname=d");
  EXPECT_EQ(
      redact_secret_of("host=h password=hunter2", "failed: host=h password=hunter2 (hunter2)"),
      "failed: host=h password=*** (***)");
  for (const std::string bad : {"host=h password=hunter2", "postgresql:/u:hunter2@h/db",
                                "postgres//u:hunter2@h/db", "pgsql:u:hunter2@h"}) {
    try {
      dyno::store::check_index_url(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const dyno::store::IndexUrlError& e) {
      EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
    }
  }
}

TEST(IndexUrl, GlobsBecomeAnchoredRegularExpressions) {
  using dyno::store::glob_to_regex;
  EXPECT_EQ(glob_to_regex("vllm"), "^vllm$");
  EXPECT_EQ(glob_to_regex("a*b?c"), "^a.*b.c$");
  EXPECT_EQ(glob_to_regex("Qwen2.5+(x)"), "^Qwen2\\.5\\+\\(x\\)$");
  EXPECT_EQ(glob_to_regex("[^a-c]x"), "^[^a-c]x$");
  EXPECT_EQ(glob_to_regex("[]]"), "^[\\]]$");
  EXPECT_EQ(glob_to_regex("[ab"), std::nullopt);
}
