// The run index (index.sqlite) and the record verifier, on hand-made run directories. What
// both index backends must do alike is index_backends_test.cpp.
#include "store/run_index.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <boost/json.hpp>
#include <fstream>
#include <sstream>

#include "digest/digest.h"
#include "record/record_fixture.h"
#include "record/run_verify.h"
#include "record/run_writer.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::store::RunFilter;
using dyno::store::RunIndex;
using dyno::store::RunRow;
using dyno::testing::sample_manifest;
using dyno::testing::sample_summary;
using dyno::testing::TempDir;
using dyno::testing::write_run;

namespace {

std::vector<std::string> ids_of(const std::vector<RunRow>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r.run_id);
  return out;
}

/// Three runs that differ in what the filters look at.
void write_three(const fs::path& root) {
  json::object a = sample_manifest("20261101T100000Z-aaaaaa", "2026-11-01T10:00:00.000Z");
  json::object b = sample_manifest("20261115T100000Z-bbbbbb-fr", "2026-11-15T10:00:00.000Z");
  b["label"] = "fr";
  b["campaign"] = "20261115T095959Z-cccccc-sweep";
  b["engine"].as_object()["name"] = "sglang";
  b["workload"].as_object()["protocol"] = json::object{{"name", "sweep"}, {"cell", "c8"}};
  b["load"].as_object()["concurrency"] = 8;
  json::object c = sample_manifest("20261130T100000Z-cccccc", "2026-11-30T10:00:00.000Z");
  c["status"] = "partial";
  c["model"].as_object()["id"] = "Qwen/Qwen2.5-7B-Instruct";
  c["load"].as_object()["concurrency"] = 16;
  write_run(root, a, sample_summary("20261101T100000Z-aaaaaa", 100.0, 50.0));
  write_run(root, b, sample_summary("20261115T100000Z-bbbbbb-fr", 300.0, 20.0));
  json::object cs = sample_summary("20261130T100000Z-cccccc", 200.0, 80.0);
  cs["status"] = "partial";
  write_run(root, c, cs);
}

std::string query_text(const fs::path& db, const std::string& sql) {
  sqlite3* h = nullptr;
  sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr);
  std::string out;
  sqlite3_exec(
      h, sql.c_str(),
      [](void* o, int, char** v, char**) {
        *static_cast<std::string*>(o) += v[0] != nullptr ? v[0] : "NULL";
        return 0;
      },
      &out, nullptr);
  sqlite3_close(h);
  return out;
}

}  // namespace

TEST(RunIndex, CreatesTheIndexInWalModeAndListsEveryRun) {
  TempDir tmp;
  write_three(tmp.path());
  std::ostringstream warn;
  RunIndex index(tmp.path(), warn);
  EXPECT_TRUE(index.rebuilt());
  EXPECT_TRUE(fs::exists(tmp.path() / "index.sqlite"));
  EXPECT_EQ(query_text(tmp.path() / "index.sqlite", "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(query_text(tmp.path() / "index.sqlite", "PRAGMA user_version"),
            std::to_string(dyno::store::kIndexSchemaVersion));
  const auto rows = index.list({});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(ids_of(rows),
            (std::vector<std::string>{"20261101T100000Z-aaaaaa", "20261115T100000Z-bbbbbb-fr",
                                      "20261130T100000Z-cccccc"}));
  const RunRow& b = rows[1];
  EXPECT_EQ(b.status, "ok");
  EXPECT_EQ(b.label, "fr");
  EXPECT_EQ(b.protocol, "sweep");
  EXPECT_EQ(b.cell, "c8");
  EXPECT_EQ(b.engine_name, "sglang");
  EXPECT_EQ(b.engine_version, "0.6.3");
  EXPECT_EQ(b.engine_args, "{}");
  EXPECT_EQ(b.model_id, "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(b.model_revision, "0e9e39f");
  EXPECT_EQ(b.model_fingerprint, std::string(64, 'f'));
  EXPECT_EQ(b.host, "bench-01");
  EXPECT_EQ(b.gpus, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(b.stream_sha256, std::string(64, 'a'));
  EXPECT_EQ(b.stream_count, 20);
  EXPECT_EQ(b.load_mode, "closed");
  EXPECT_EQ(b.concurrency, 8);
  EXPECT_FALSE(b.rate_per_s.has_value());
  EXPECT_EQ(b.requests_ok, 20);
  EXPECT_EQ(b.requests_failed, 0);
  EXPECT_DOUBLE_EQ(*b.output_tokens_per_s, 300.0);
  EXPECT_DOUBLE_EQ(*b.ttft_p50_ms, 20.0);
  EXPECT_DOUBLE_EQ(*b.tpot_p50_ms, 12.5);
  EXPECT_DOUBLE_EQ(*b.e2e_p50_ms, 900.0);
  EXPECT_FALSE(b.accuracy.has_value());
  EXPECT_EQ(b.identity_key.size(), 64u);
  EXPECT_FALSE(b.problem.has_value());
  // A new runs root gets its index without a warning... unless runs were there already.
  EXPECT_NE(warn.str().find("was missing"), std::string::npos) << warn.str();
}

TEST(RunIndex, RebuildsAfterTheIndexIsDeleted) {
  TempDir tmp;
  write_three(tmp.path());
  std::ostringstream warn;
  { RunIndex index(tmp.path(), warn); }
  for (const char* f : {"index.sqlite", "index.sqlite-wal", "index.sqlite-shm"}) {
    fs::remove(tmp.path() / f);
  }
  std::ostringstream warn2;
  RunIndex index(tmp.path(), warn2);
  EXPECT_TRUE(index.rebuilt());
  EXPECT_EQ(index.ids().size(), 3u);
  EXPECT_NE(warn2.str().find("index.sqlite was missing; rebuilt from 3 run directories"),
            std::string::npos)
      << warn2.str();
}

TEST(RunIndex, RebuildsWithAWarningAfterGarbageIsWrittenOverIt) {
  TempDir tmp;
  write_three(tmp.path());
  std::ostringstream warn;
  { RunIndex index(tmp.path(), warn); }
  for (const char* f : {"index.sqlite-wal", "index.sqlite-shm"}) fs::remove(tmp.path() / f);
  {
    std::ofstream garbage(tmp.path() / "index.sqlite", std::ios::binary | std::ios::trunc);
    for (int i = 0; i < 4096; ++i) garbage.put(static_cast<char>((i * 7919) % 251));
  }
  std::ostringstream warn2;
  RunIndex index(tmp.path(), warn2);
  EXPECT_TRUE(index.rebuilt());
  EXPECT_EQ(index.ids().size(), 3u);
  EXPECT_EQ(index.integrity(), "ok");
  EXPECT_NE(warn2.str().find("is not a usable run index"), std::string::npos) << warn2.str();
  EXPECT_NE(warn2.str().find("rebuilt from the run directories"), std::string::npos);
  EXPECT_TRUE(fs::exists(tmp.path() / "index.sqlite.bad"));
}

TEST(RunIndex, RebuildsAnIndexWithAnotherLayout) {
  TempDir tmp;
  write_three(tmp.path());
  {
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open((tmp.path() / "index.sqlite").c_str(), &h), SQLITE_OK);
    sqlite3_exec(h, "CREATE TABLE runs (run_id TEXT); PRAGMA user_version = 99", nullptr, nullptr,
                 nullptr);
    sqlite3_close(h);
  }
  std::ostringstream warn;
  RunIndex index(tmp.path(), warn);
  EXPECT_TRUE(index.rebuilt());
  EXPECT_EQ(index.ids().size(), 3u);
  EXPECT_NE(warn.str().find("layout version 99"), std::string::npos) << warn.str();
}

TEST(RunIndex, RemembersEachRecordsDigestAcrossSyncAndRebuild) {
  TempDir tmp;
  write_three(tmp.path());
  const std::string id = "20261101T100000Z-aaaaaa";
  const fs::path sums = tmp.path() / id / "SHA256SUMS";
  std::ostringstream warn;
  RunIndex index(tmp.path(), warn);
  const std::string first = dyno::digest::sha256_hex_file(sums);
  ASSERT_EQ(index.find(id)->record_sha256, first);
  // The record changed (its summary rewritten, SHA256SUMS made to match again): a listing
  // reads the row again, and the index still remembers the digest it first saw.
  json::object summary = sample_summary(id, 999.0, 50.0);
  write_run(tmp.path(), sample_manifest(id, "2026-11-01T10:00:00.000Z"), summary);
  ASSERT_NE(dyno::digest::sha256_hex_file(sums), first);
  EXPECT_EQ(index.sync().refreshed, 1u);
  EXPECT_EQ(index.find(id)->output_tokens_per_s, 999.0);  // the figures are the record's now
  EXPECT_EQ(index.find(id)->record_sha256, first);
  index.rebuild();
  EXPECT_EQ(index.find(id)->record_sha256, first);
  // upsert is dyno writing the record: the digest is the record's as it is now.
  index.upsert(tmp.path() / id);
  EXPECT_EQ(index.find(id)->record_sha256, dyno::digest::sha256_hex_file(sums));
}

TEST(RunIndex, AnIndexOfLayoutFourGainsTheDigestColumnInPlace) {
  TempDir tmp;
  write_three(tmp.path());
  {
    std::ostringstream warn;
    RunIndex index(tmp.path(), warn);
  }
  {
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open((tmp.path() / "index.sqlite").c_str(), &h), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(h, "ALTER TABLE runs DROP COLUMN record_sha256; PRAGMA user_version = 4",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(h);
  }
  std::ostringstream warn;
  RunIndex index(tmp.path(), warn);
  EXPECT_FALSE(index.rebuilt());
  EXPECT_EQ(warn.str(), "");
  EXPECT_EQ(index.ids().size(), 3u);
  EXPECT_EQ(query_text(tmp.path() / "index.sqlite", "PRAGMA user_version"), "5");
  // Its rows remember no digest: what the index never saw cannot be made up.
  EXPECT_FALSE(index.find("20261101T100000Z-aaaaaa")->record_sha256.has_value());
}

TEST(RunIndex, OpeningAHealthyIndexNeitherRebuildsNorWarns) {
  TempDir tmp;
  write_three(tmp.path());
  std::ostringstream warn;
  { RunIndex index(tmp.path(), warn); }
  std::ostringstream warn2;
  RunIndex index(tmp.path(), warn2);
  EXPECT_FALSE(index.rebuilt());
  EXPECT_EQ(warn2.str(), "");
  EXPECT_EQ(index.ids().size(), 3u);
}

TEST(RunIndex, MarksTheLaterOfTwoIdenticalRunsAsADuplicate) {
  TempDir tmp;
  std::ostringstream warn;
  fs::create_directories(tmp.path());
  const auto make = [&](const std::string& id, const std::string& at, int concurrency) {
    json::object m = sample_manifest(id, at);
    m["load"].as_object()["concurrency"] = concurrency;
    m["hardware"].as_object()["host"] = "host-" + id;  // not part of the key
    return write_run(tmp.path(), m, sample_summary(id, 1.0, 1.0));
  };
  // Indexed out of order: the later run first.
  const fs::path second = make("20261102T000000Z-bbbbbb", "2026-11-02T00:00:00.000Z", 4);
  RunIndex index(tmp.path(), warn);
  const fs::path first = make("20261101T000000Z-aaaaaa", "2026-11-01T00:00:00.000Z", 4);
  const fs::path third = make("20261103T000000Z-cccccc", "2026-11-03T00:00:00.000Z", 4);
  const fs::path other = make("20261104T000000Z-dddddd", "2026-11-04T00:00:00.000Z", 8);
  index.upsert(third);
  index.upsert(first);
  index.upsert(other);
  EXPECT_FALSE(index.find("20261101T000000Z-aaaaaa")->duplicate_of.has_value());
  EXPECT_EQ(index.find("20261102T000000Z-bbbbbb")->duplicate_of, "20261101T000000Z-aaaaaa");
  EXPECT_EQ(index.find("20261103T000000Z-cccccc")->duplicate_of, "20261101T000000Z-aaaaaa");
  EXPECT_FALSE(index.find("20261104T000000Z-dddddd")->duplicate_of.has_value());
  // Each part of the key counts: engine identity, model, stream, sampling, load.
  json::object base = sample_manifest("x", "t");
  const std::string key = dyno::store::duplicate_key(base);
  for (const auto& [section, field] :
       std::vector<std::pair<std::string, std::string>>{{"engine", "name"},
                                                        {"engine", "version"},
                                                        {"model", "id"},
                                                        {"model", "revision"},
                                                        {"model", "fingerprint"},
                                                        {"load", "seed"},
                                                        {"load", "requests"}}) {
    json::object m = base;
    m[section].as_object()[field] = "changed";
    EXPECT_NE(dyno::store::duplicate_key(m), key) << section << "." << field;
  }
  json::object m = base;
  m["engine"].as_object()["engine_args"] = json::object{{"tp", 2}};
  EXPECT_NE(dyno::store::duplicate_key(m), key);
  m = base;
  m["workload"].as_object()["request_stream"].as_object()["sha256"] = std::string(64, 'b');
  EXPECT_NE(dyno::store::duplicate_key(m), key);
  m = base;
  m["workload"].as_object()["sampling"].as_object()["temperature"] = 0.7;
  EXPECT_NE(dyno::store::duplicate_key(m), key);
  // Its place in a protocol: a cell's repetition, a drift pass (another cell, the same prompts).
  m = base;
  m["workload"].as_object()["protocol"] =
      json::object{{"name", "speed"}, {"cell", "fr/solo"}, {"repetition", 1}};
  const std::string fr = dyno::store::duplicate_key(m);
  EXPECT_NE(fr, key);
  m["workload"].as_object()["protocol"].as_object()["cell"] = "fr2/solo";
  EXPECT_NE(dyno::store::duplicate_key(m), fr);
  m["workload"].as_object()["protocol"].as_object()["cell"] = "fr/solo";
  m["workload"].as_object()["protocol"].as_object()["repetition"] = 2;
  EXPECT_NE(dyno::store::duplicate_key(m), fr);
  m["workload"].as_object()["protocol"].as_object()["repetition"] = 1;
  m["campaign"] = "another-campaign";  // the same cell of the same campaign run again
  EXPECT_EQ(dyno::store::duplicate_key(m), fr);
  m = base;  // not part of it: when, where, label
  m["run_id"] = "y";
  m["started_at"] = "u";
  m["label"] = "l";
  m["hardware"].as_object()["host"] = "elsewhere";
  EXPECT_EQ(dyno::store::duplicate_key(m), key);
  // Removing the original makes the next one the original.
  fs::remove_all(first);
  index.sync();
  EXPECT_FALSE(index.find("20261102T000000Z-bbbbbb")->duplicate_of.has_value());
  EXPECT_EQ(index.find("20261103T000000Z-cccccc")->duplicate_of, "20261102T000000Z-bbbbbb");
}

// ---- verify ----------------------------------------------------------------------------------

TEST(RunVerify, AnIntactRecordVerifies) {
  TempDir tmp;
  write_three(tmp.path());
  const auto rep =
      dyno::record::verify_run_dir(tmp.path() / "20261101T100000Z-aaaaaa", /*schema=*/false);
  EXPECT_TRUE(rep.ok()) << rep.problems.front().message;
  EXPECT_EQ(rep.files_checked, 3u);
}

namespace {

std::vector<std::string> problems_of(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& p : dyno::record::verify_run_dir(dir, /*schema=*/false).problems) {
    out.push_back(p.check + ":" + p.path + ":" + p.message);
  }
  return out;
}

bool mentions(const std::vector<std::string>& problems, const std::string& needle) {
  for (const auto& p : problems) {
    if (p.find(needle) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST(RunVerify, FindsEachKindOfDamage) {
  TempDir tmp;
  write_three(tmp.path());
  const fs::path dir = tmp.path() / "20261101T100000Z-aaaaaa";
  {  // a modified file
    std::ofstream(dir / "requests.jsonl", std::ios::app) << "{\"index\":1}\n";
    const auto p = problems_of(dir);
    EXPECT_TRUE(mentions(p, "sha256sums:requests.jsonl:content differs")) << p.size();
  }
  dyno::record::write_sha256sums(dir);
  EXPECT_TRUE(problems_of(dir).empty());
  {  // a file added afterwards
    std::ofstream(dir / "notes.txt") << "x";
    EXPECT_TRUE(mentions(problems_of(dir), "files:notes.txt:not listed in SHA256SUMS"));
    fs::remove(dir / "notes.txt");
  }
  {  // a listed file removed
    const std::string keep = dyno::record::read_file(dir / "requests.jsonl");
    fs::remove(dir / "requests.jsonl");
    EXPECT_TRUE(mentions(problems_of(dir), "requests.jsonl:listed in SHA256SUMS but missing"));
    dyno::record::write_file_atomic(dir / "requests.jsonl", keep);
  }
  {  // a line that escapes the directory, and a malformed one
    const std::string sums = dyno::record::read_file(dir / "SHA256SUMS");
    dyno::record::write_file_atomic(dir / "SHA256SUMS",
                                    sums + std::string(64, '0') + "  ../outside\nnot a line\n");
    const auto p = problems_of(dir);
    EXPECT_TRUE(mentions(p, "names a path outside the run directory"));
    EXPECT_TRUE(mentions(p, "is not \"<sha256>  <path>\""));
    dyno::record::write_file_atomic(dir / "SHA256SUMS", sums);
  }
  {  // an unknown schema version and a wrong run id (re-signed, so only these remain)
    json::object m = sample_manifest("20261101T100000Z-other", "2026-11-01T10:00:00.000Z");
    m["schema_version"] = 99;
    dyno::record::write_file_atomic(dir / "manifest.json", dyno::record::pretty_json(m));
    dyno::record::write_sha256sums(dir);
    const auto p = problems_of(dir);
    EXPECT_TRUE(mentions(p, "manifest:manifest.json:schema_version 99 is not one this dyno reads"));
    EXPECT_TRUE(mentions(p, "differs from the directory name"));
    EXPECT_TRUE(mentions(p, "summary:summary.json:run_id differs from the manifest's"));
  }
  fs::remove(dir / "SHA256SUMS");
  EXPECT_TRUE(mentions(problems_of(dir), "SHA256SUMS:missing"));
}

TEST(RunVerify, ChecksEvidenceDigestsAndRequestLines) {
  TempDir tmp;
  const std::string id = "20261101T100000Z-aaaaaa";
  json::object m = sample_manifest(id, "2026-11-01T10:00:00.000Z");
  m["evidence"] = json::array{
      json::object{{"path", "evidence/metrics_after.txt"}, {"sha256", std::string(64, '0')}}};
  const fs::path dir = tmp.path() / id;
  fs::create_directories(dir / "evidence");
  std::ofstream(dir / "evidence" / "metrics_after.txt") << "vllm:num_requests_running 0\n";
  write_run(tmp.path(), m, sample_summary(id, 1, 1), "{\"index\":0}\nnot json\n");
  const auto p = problems_of(dir);
  EXPECT_TRUE(mentions(p, "evidence:evidence/metrics_after.txt:content differs"));
  EXPECT_TRUE(
      mentions(p, "requests:requests.jsonl:1 line(s) are not JSON objects (first: line 2)"));
}

TEST(RunDirectories, CreationIsExclusiveBetweenWriters) {
  // Two processes can never share a run directory: creating it is one mkdir, and a second
  // writer with the same id fails instead of writing into the first one's directory.
  TempDir tmp;
  dyno::record::RunWriter first(tmp.path(), "20261129T214815Z-3fa9c1", false);
  EXPECT_THROW(dyno::record::RunWriter(tmp.path(), "20261129T214815Z-3fa9c1", false),
               dyno::record::RecordError);
}

TEST(RunIndex, AnIndexInMemoryListsAReadOnlyRootWithoutWritingToIt) {
  TempDir tmp;
  write_three(tmp.path());
  const auto index = RunIndex::in_memory(tmp.path());
  EXPECT_EQ(index->ids().size(), 3u);
  EXPECT_EQ(index->find("20261115T100000Z-bbbbbb-fr")->engine_name, "sglang");
  EXPECT_FALSE(fs::exists(tmp.path() / "index.sqlite"));
  EXPECT_FALSE(fs::exists(tmp.path() / "index.lock"));
  EXPECT_THROW(RunIndex::in_memory(tmp.path() / "missing"), dyno::store::IndexError);
}

TEST(RunVerify, ARealRecordMeetsItsSchemaAndADriftedOneDoesNot) {
  TempDir tmp;
  const fs::path dir = tmp.path() / "20261130T003554Z-7157eb-fixture";  // its run_id
  fs::copy(fs::path(DYNO_SOURCE_DIR) / "tests/record/data/run_v1", dir,
           fs::copy_options::recursive);
  dyno::record::write_sha256sums(dir);
  const auto good = dyno::record::verify_run_dir(dir);
  EXPECT_TRUE(good.ok()) << (good.ok() ? "" : good.problems.front().message);
  // A key the schema does not know, correctly signed: integrity holds, the schema does not.
  std::string summary;
  {
    std::ifstream in(dir / "summary.json");
    std::stringstream ss;
    ss << in.rdbuf();
    summary = ss.str();
  }
  summary.insert(summary.find('{') + 1, "\"made_up\": 1,");
  std::ofstream(dir / "summary.json", std::ios::trunc) << summary;
  dyno::record::write_sha256sums(dir);
  EXPECT_TRUE(dyno::record::verify_run_dir(dir, /*schema=*/false).ok());
  const auto bad = dyno::record::verify_run_dir(dir);
  ASSERT_EQ(bad.problems.size(), 1u);
  EXPECT_EQ(bad.problems.front().check, "schema");
  EXPECT_NE(bad.problems.front().message.find("/made_up"), std::string::npos)
      << bad.problems.front().message;
}
