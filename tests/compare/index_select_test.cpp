// Selecting runs through a run index (compare/index_select.h) gives what selecting over the
// manifests gives, with index.sqlite and with PostgreSQL (a server this test process starts:
// tests/pg_server.h): every query key, stored in the index or not, numbers written two ways,
// null, unreadable manifests, ids, prefixes and campaigns; then what several runs roots in one
// PostgreSQL index add: the union of both roots, --runs-root scoping, ids in two roots, stale
// rows (a directory gone, a manifest changed).
#include "compare/index_select.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "pg_server.h"
#include "record/record_json.h"
#include "record/record_reader.h"
#include "record/run_writer.h"
#include "store/index_url.h"
#include "store/run_index.h"
#include "temp_dir.h"
#include "test_records.h"

namespace dyno::compare {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using testing::fixture_root;

/// Selectors over the fixture runs (root A) and the hand-made ones (root B).
const std::vector<std::string> kSelectors = {"label=fast",
                                             "label=slow,cell=c4",
                                             "profile=slow,concurrency=4",
                                             "concurrency=4.0",
                                             "engine=dyno-sim,protocol=sweep",
                                             "engine.sim_profile.name=fast",
                                             "status=ok",
                                             "api=chat",
                                             "label=null",
                                             "label=4",
                                             "label=0x4",
                                             "mode=closed",
                                             "rate=2.5",
                                             "rate=2.50",
                                             "host=bench-b",
                                             "model.revision=r2",
                                             "engine_version=9",
                                             "campaign=20261130T004322Z-edfa07-sweep",
                                             "run_id=20261201T000001Z-b00001",
                                             "label=nothing",
                                             "source.format=vllm-bench",
                                             "status=partial,engine=sglang",
                                             "workload.request_stream.count=20"};

/// Root B: runs whose values exercise text against numbers, null and unreadable manifests.
void write_root_b(const fs::path& root) {
  const auto base = [](const std::string& id) {
    json::object m =
        record::read_record_json(fixture_root() / "20261130T004322Z-4c1237-fast" / "manifest.json");
    m["run_id"] = id;
    m["campaign"] = nullptr;
    return m;
  };
  const auto put = [&root](const json::object& m) {
    const fs::path dir = root / std::string(m.at("run_id").as_string());
    fs::create_directories(dir);
    record::write_file_atomic(dir / "manifest.json", record::pretty_json(m));
  };
  json::object m1 = base("20261201T000001Z-b00001");
  m1["label"] = "4.0";  // matches label=4 as a number
  m1["hardware"].as_object()["host"] = "bench-b";
  put(m1);
  json::object m2 = base("20261201T000002Z-b00002");
  m2["label"] = nullptr;
  m2["status"] = "partial";
  m2["engine"].as_object()["name"] = "sglang";
  m2["engine"].as_object()["version"] = "9.0";
  m2["model"].as_object()["revision"] = "r2";
  m2["load"] = json::object{{"mode", "open"}, {"concurrency", nullptr}, {"rate_per_s", 2.5}};
  put(m2);
  json::object m3 = base("20261201T000003Z-b00003");
  m3["label"] = "0x4";
  m3["source"] = json::object{{"format", "vllm-bench"}};
  put(m3);
  const fs::path bad = root / "20261201T000004Z-b00004";
  fs::create_directories(bad);
  std::ofstream(bad / "manifest.json") << "{not json";
}

std::vector<std::string> canonical(const std::vector<fs::path>& dirs) {
  std::vector<std::string> out;
  for (const auto& d : dirs) out.push_back(fs::weakly_canonical(d).string());
  std::sort(out.begin(), out.end());
  return out;
}

/// What resolve_selector over the manifests of `roots` gives ("error" when it throws).
std::vector<std::string> over_manifests(const std::vector<fs::path>& roots, const std::string& s) {
  std::vector<fs::path> all;
  bool any = false;
  for (const auto& root : roots) {
    std::vector<std::string> skipped;
    const auto manifests = scan_manifests(root, &skipped);
    try {
      const auto dirs = resolve_selector(s, root, manifests);
      all.insert(all.end(), dirs.begin(), dirs.end());
      any = true;
    } catch (const CompareError&) {
    }
  }
  if (!any) return {"error"};
  return canonical(all);
}

std::vector<std::string> over_index(IndexSelection& sel, const std::string& s) {
  try {
    return canonical(sel.resolve(s));
  } catch (const CompareError& e) {
    return {"error"};
  }
}

std::string error_of(IndexSelection& sel, const std::string& s) {
  try {
    sel.resolve(s);
  } catch (const CompareError& e) {
    return e.what();
  }
  return "(no error)";
}

class IndexSelect : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = tmp_.path() / "a";
    b_ = tmp_.path() / "b";
    fs::copy(fixture_root(), a_, fs::copy_options::recursive);
    fs::create_directories(b_);
    write_root_b(b_);
  }
  dyno::testing::TempDir tmp_{"dyno-index-select"};
  fs::path a_, b_;
  std::ostringstream warnings_;
};

TEST_F(IndexSelect, SqliteGivesWhatTheManifestsGive) {
  for (const auto& root : {a_, b_}) {
    store::RunIndex index(root, warnings_);
    const auto reader = store::index_reader_of(index, root);
    IndexSelection sel(*reader, root);
    for (const auto& s : kSelectors) {
      EXPECT_EQ(over_index(sel, s), over_manifests({root}, s)) << root << " " << s;
    }
    if (root == b_) {
      ASSERT_EQ(sel.skipped().size(), 1u);  // named once, however many queries met it
      EXPECT_NE(sel.skipped()[0].find("20261201T000004Z-b00004/manifest.json"), std::string::npos);
    }
  }
  store::RunIndex index(a_, warnings_);
  const auto reader = store::index_reader_of(index, a_);
  IndexSelection sel(*reader, a_);
  const std::string fast = "20261130T004322Z-4c1237-fast";
  EXPECT_EQ(over_index(sel, fast), over_manifests({a_}, fast));
  EXPECT_EQ(over_index(sel, fast.substr(0, 22)), over_manifests({a_}, fast.substr(0, 22)));
  EXPECT_EQ(over_index(sel, "20261130T004322Z-edfa07-sweep").size(), 2u);
  EXPECT_EQ(over_index(sel, (a_ / fast).string()), over_manifests({a_}, fast));
  EXPECT_NE(error_of(sel, "2026").find("matches 4 runs in the run index"), std::string::npos);
  EXPECT_NE(error_of(sel, "zzz").find("is not a run id"), std::string::npos);
}

class PgIndexSelect : public IndexSelect {
 protected:
  void SetUp() override {
    std::string why;
    pg_ = dyno::testing::shared_pg_server(why);
    if (pg_ == nullptr) GTEST_SKIP() << why;
    IndexSelect::SetUp();
    url_ = pg_->url(pg_->create_database());
    for (const auto& root : {a_, b_}) store::RunIndex(root, warnings_, url_);
    reader_ = store::open_index_reader(url_);
  }
  dyno::testing::PgServer* pg_ = nullptr;
  std::string url_;
  std::unique_ptr<store::IndexReader> reader_;
};

TEST_F(PgIndexSelect, OneRootOrEveryRootGivesWhatTheManifestsGive) {
  EXPECT_EQ(reader_->roots(), (std::vector<fs::path>{fs::canonical(a_), fs::canonical(b_)}));
  for (const auto& root : {a_, b_}) {
    IndexSelection sel(*reader_, root);
    for (const auto& s : kSelectors) {
      EXPECT_EQ(over_index(sel, s), over_manifests({root}, s)) << root << " " << s;
    }
  }
  IndexSelection all(*reader_, std::nullopt);
  for (const auto& s : kSelectors) {
    EXPECT_EQ(over_index(all, s), over_manifests({a_, b_}, s)) << s;
  }
  EXPECT_EQ(over_index(all, "20261201T000002").size(), 1u);  // a prefix from root B
  EXPECT_EQ(over_index(all, "20261130T004322Z-edfa07-sweep").size(), 2u);
  const std::string msg = error_of(all, "2026");
  EXPECT_NE(msg.find("matches 8 runs in the run index postgresql://dyno:***@"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("(" + fs::canonical(b_).string() + ")"), std::string::npos) << msg;
  EXPECT_EQ(msg.find(dyno::testing::PgServer::kPassword), std::string::npos);
  // A root the index does not hold.
  const fs::path c = tmp_.path() / "c";
  fs::create_directories(c);
  IndexSelection none(*reader_, c);
  EXPECT_NE(error_of(none, "label=fast").find("holds no run of runs root"), std::string::npos);
}

TEST_F(PgIndexSelect, AReaderRefusesASchemaOfAnotherVersionAndChangesNothing) {
  const std::string db = url_.substr(url_.rfind('/') + 1);
  pg_->exec(db, "UPDATE dyno_meta SET value = '99' WHERE key = 'schema_version'");
  try {
    store::open_index_reader(url_);
    FAIL();
  } catch (const store::IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("has schema version 99, newer than this dyno's"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find(dyno::testing::PgServer::kPassword), std::string::npos);
  }
  pg_->exec(db, "UPDATE dyno_meta SET value = '0' WHERE key = 'schema_version'");
  try {
    store::open_index_reader(url_);
    FAIL();
  } catch (const store::IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("`dyno runs reindex"), std::string::npos) << e.what();
  }
  EXPECT_EQ(pg_->exec(db, "SELECT value FROM dyno_meta WHERE key = 'schema_version'"), "0");
  EXPECT_EQ(pg_->exec(db, "SELECT count(*) FROM dyno_runs"), "8");
}

TEST_F(PgIndexSelect, StaleRowsAndIdsInTwoRootsAreErrors) {
  const std::string fast = "20261130T004322Z-4c1237-fast";
  fs::copy(a_ / fast, b_ / fast, fs::copy_options::recursive);
  store::RunIndex(b_, warnings_, url_).sync();
  IndexSelection all(*reader_, std::nullopt);
  EXPECT_NE(error_of(all, fast).find("is in 2 runs roots"), std::string::npos);
  EXPECT_NE(error_of(all, "label=fast").find("in two runs roots"), std::string::npos);
  IndexSelection only_b(*reader_, b_);
  EXPECT_EQ(over_index(only_b, fast),
            std::vector<std::string>{(fs::canonical(b_) / fast).string()});
  fs::remove_all(b_ / fast);
  EXPECT_NE(error_of(only_b, fast).find("its directory is gone"), std::string::npos);
  EXPECT_NE(
      error_of(only_b, "label=fast").find("runs reindex --runs-root " + fs::canonical(b_).string()),
      std::string::npos);
  // A manifest rewritten since it was indexed: its stored value no longer verifies.
  const fs::path m = b_ / "20261201T000001Z-b00001" / "manifest.json";
  json::object manifest = record::read_record_json(m);
  manifest["hardware"].as_object()["host"] = "elsewhere";
  record::write_file_atomic(m, record::pretty_json(manifest));
  IndexSelection only_b2(*reader_, b_);
  EXPECT_NE(error_of(only_b2, "host=bench-b").find("no longer verifies"), std::string::npos);
}

}  // namespace
}  // namespace dyno::compare
