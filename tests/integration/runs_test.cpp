// `dyno runs …` through the binary: the index, list/show/diff/verify/rm/reindex/publish,
// two dyno processes writing to one runs root at once, and secrets never written.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "integration/json_files.h"
#include "integration/process.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::testing::Child;
using dyno::testing::read_json;

namespace {

struct Result {
  int code = -1;
  std::string out;
  std::string err;
};

std::string sqlite_text(const fs::path& db, const std::string& sql) {
  sqlite3* h = nullptr;
  sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_busy_timeout(h, 10000);
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

std::vector<std::string> ids(const json::array& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows) out.emplace_back(r.at("run_id").as_string());
  return out;
}

class Runs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = dyno::testing::make_temp_dir("dyno-runs");
    root_ = dir_ / "runs";
  }
  void TearDown() override {
    for (auto& s : sims_) {
      s->signal(SIGTERM);
      s->wait(std::chrono::seconds(10));
    }
    if (!HasFailure()) fs::remove_all(dir_);
  }

  /// Runs `dyno ARGS…`; every output is kept for the secrets check.
  Result dyno(const std::vector<std::string>& args,
              const std::map<std::string, std::string>& env = {}) {
    std::vector<std::string> argv = {DYNO_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    const std::string n = std::to_string(calls_++);
    Child c(argv, (dir_ / ("out" + n)).string(), (dir_ / ("err" + n)).string(), env);
    Result r;
    r.code = c.wait();
    r.out = c.out();
    r.err = c.err();
    return r;
  }

  /// One short `dyno run` on the embedded engine; returns its run id.
  std::string run(std::vector<std::string> extra = {}, const std::string& concurrency = "2") {
    std::vector<std::string> args = {"run",         "--json",          "-q", "--telemetry", "off",
                                     "--runs-root", root_.string(),    "-n", "8",           "-c",
                                     concurrency,   "--output-tokens", "8"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Result r = dyno(args);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err.find("run index was not updated"), std::string::npos) << r.err;
    return std::string(json::parse(r.out).at("run_id").as_string());
  }

  json::array list_json(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"runs", "list", "--json", "--runs-root", root_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    const Result r = dyno(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return json::parse(r.out).as_array();
  }

  std::string start_sim() {
    sims_.push_back(std::make_unique<Child>(
        std::vector<std::string>{DYNO_BINARY, "sim", "--port", "0", "--profile", "small-gpu"},
        (dir_ / "sim.out").string(), (dir_ / "sim.err").string()));
    const std::string out = sims_.back()->wait_for_output("/v1");
    std::smatch m;
    const std::regex re("listening on (http://[0-9.]+:[0-9]+/v1)");
    if (!std::regex_search(out, m, re)) throw std::runtime_error("no address in: " + out);
    return m[1];
  }

  // The steps of ListShowDiffVerifyRemoveReindex, over runs a, b (a duplicate of a) and c.

  /// list: the duplicate, every filter and sort, and the usage errors.
  void check_list(const std::string& a, const std::string& b, const std::string& c) {
    json::array rows = list_json();
    ASSERT_EQ(ids(rows), (std::vector<std::string>{a, b, c}));
    EXPECT_TRUE(rows[0].at("duplicate_of").is_null());
    EXPECT_EQ(rows[1].at("duplicate_of"), json::value(a));
    EXPECT_TRUE(rows[2].at("duplicate_of").is_null());
    EXPECT_EQ(rows[2].at("concurrency"), json::value(4));
    EXPECT_EQ(ids(list_json({"--label", "wide"})), std::vector<std::string>{c});
    EXPECT_EQ(
        ids(list_json({"--engine", "dyno-sim", "--protocol", "run", "--status", "ok"})).size(), 3u);
    EXPECT_EQ(ids(list_json({"--sort", "started", "--desc", "--limit", "1"})),
              std::vector<std::string>{c});
    const std::vector<std::string> by_id = ids(list_json({"--sort", "id"}));
    EXPECT_EQ(by_id.size(), 3u);
    EXPECT_TRUE(std::is_sorted(by_id.begin(), by_id.end()));
    EXPECT_EQ(ids(list_json({"--since", "2999-01-01"})).size(), 0u);

    Result r = dyno({"runs", "list", "--runs-root", root_.string()});
    EXPECT_EQ(r.code, 0);
    EXPECT_NE(r.out.find("DUPLICATE OF"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("3 runs"), std::string::npos);
    r = dyno({"runs", "list", "--runs-root", root_.string(), "--sort", "speed"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("--sort"), std::string::npos);
    r = dyno({"runs", "list", "--runs-root", root_.string(), "--since", "yesterday"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("--since"), std::string::npos);
    r = dyno({"runs", "list", "--runs-root", (dir_ / "nowhere").string()});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("does not exist"), std::string::npos);
  }

  /// show: by a unique prefix (the label makes c's id unique from its end, so use the path too)
  void check_show(const std::string& a, const std::string& b, const std::string& c) {
    Result r = dyno({"runs", "show", "--runs-root", root_.string(), b});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("duplicate of  " + a), std::string::npos) << r.out;
    r = dyno({"runs", "show", "--json", (root_ / c).string()});
    EXPECT_EQ(r.code, 0) << r.err;
    const json::object shown = json::parse(r.out).as_object();
    EXPECT_EQ(shown.at("manifest").at("run_id"), json::value(c));
    EXPECT_EQ(shown.at("headline").at("label"), json::value("wide"));
    r = dyno({"runs", "show", "--runs-root", root_.string(), "2"});  // every id starts with 2
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("matches 3 runs"), std::string::npos) << r.err;
    r = dyno({"runs", "show", "--runs-root", root_.string(), "nope"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("no run 'nope'"), std::string::npos) << r.err;
  }

  /// diff: a against c differs in its load and model revision, not in the engine.
  void check_diff(const std::string& a, const std::string& b, const std::string& c) {
    Result r = dyno({"runs", "diff", "--runs-root", root_.string(), a, c});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("load.concurrency"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("model.revision"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("engine: same"), std::string::npos) << r.out;
    r = dyno({"runs", "diff", "--json", "--runs-root", root_.string(), a, c});
    EXPECT_EQ(r.code, 0) << r.err;
    bool found = false;
    const json::value diff = json::parse(r.out);
    for (const auto& s : diff.at("sections").as_array()) {
      for (const auto& f : s.at("differ").as_array()) {
        if (f.at("field") == json::value("load.concurrency")) {
          found = true;
          EXPECT_EQ(f.at("a"), json::value(2));
          EXPECT_EQ(f.at("b"), json::value(4));
        }
      }
    }
    EXPECT_TRUE(found) << r.out;
    r = dyno({"runs", "diff", "--runs-root", root_.string(), a, b});
    EXPECT_NE(r.out.find("0 fields differ"), std::string::npos) << r.out;
  }

  /// verify: all good, then a tampered file is found.
  void check_verify(const std::string& a) {
    Result r = dyno({"runs", "verify", "--all", "--runs-root", root_.string()});
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("3 of 3 runs verify"), std::string::npos) << r.out;
    {
      std::ofstream tamper(root_ / a / "summary.json", std::ios::app);
      tamper << "\n";
    }
    r = dyno({"runs", "verify", "--runs-root", root_.string(), a});
    EXPECT_EQ(r.code, 3);
    EXPECT_NE(r.out.find("summary.json: content differs from its SHA256SUMS digest"),
              std::string::npos)
        << r.out;
    r = dyno({"runs", "verify", "--json", "--all", "--runs-root", root_.string()});
    EXPECT_EQ(r.code, 3);
    EXPECT_EQ(json::parse(r.out).as_array().size(), 3u);
  }

  /// rm, then reindex.
  void check_remove_and_reindex(const std::string& a, const std::string& b, const std::string& c) {
    Result r = dyno({"runs", "rm", "--runs-root", root_.string(), a});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_FALSE(fs::exists(root_ / a));
    const json::array rows = list_json();
    EXPECT_EQ(ids(rows), (std::vector<std::string>{b, c}));
    EXPECT_TRUE(rows[0].at("duplicate_of").is_null());  // b is now the first of its kind
    r = dyno({"runs", "reindex", "--runs-root", root_.string()});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("indexed 2 runs"), std::string::npos) << r.out;
  }

  /// The index is a cache: deleted or overwritten, it comes back from the directories.
  void check_index_rebuilds() {
    fs::remove(root_ / "index.sqlite");
    fs::remove(root_ / "index.sqlite-wal");
    fs::remove(root_ / "index.sqlite-shm");
    Result r = dyno({"runs", "list", "--json", "--runs-root", root_.string()});
    EXPECT_EQ(json::parse(r.out).as_array().size(), 2u);
    EXPECT_NE(r.err.find("was missing; rebuilt"), std::string::npos) << r.err;
    {
      std::ofstream garbage(root_ / "index.sqlite", std::ios::trunc | std::ios::binary);
      garbage << std::string(8192, 'x');
    }
    fs::remove(root_ / "index.sqlite-wal");
    fs::remove(root_ / "index.sqlite-shm");
    r = dyno({"runs", "list", "--json", "--runs-root", root_.string()});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out).as_array().size(), 2u);
    EXPECT_NE(r.err.find("is not a usable run index"), std::string::npos) << r.err;
    const std::string d = run();  // indexing on finish works on the rebuilt index
    EXPECT_EQ(sqlite_text(root_ / "index.sqlite", "SELECT count(*) FROM runs"), "3");
    EXPECT_EQ(ids(list_json({"--sort", "started"})).back(), d);
  }

  fs::path dir_;
  fs::path root_;
  int calls_ = 0;
  std::vector<std::unique_ptr<Child>> sims_;
};

}  // namespace

TEST_F(Runs, ListShowDiffVerifyRemoveReindex) {
  const std::string a = run();
  const std::string b = run();  // the same run again: a duplicate of a
  const std::string c = run({"--label", "wide", "--model-revision", "r2"}, "4");
  // Every finished run was indexed when it ended (no listing has run yet).
  EXPECT_EQ(sqlite_text(root_ / "index.sqlite", "SELECT count(*) FROM runs"), "3");

  ASSERT_NO_FATAL_FAILURE(check_list(a, b, c));
  check_show(a, b, c);
  check_diff(a, b, c);
  check_verify(a);
  check_remove_and_reindex(a, b, c);
  check_index_rebuilds();
}

TEST_F(Runs, PublishWritesAScrubbedCopy) {
  const std::string id = run({"--label", "pub"});
  const json::object before = read_json(root_ / id / "manifest.json");
  const std::string host(before.at("hardware").at("host").as_string());
  const fs::path out = dir_ / "public";
  Result r = dyno({"runs", "publish", "--runs-root", root_.string(), id, "--out", out.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("manifest.json#/hardware/host"), std::string::npos) << r.out;
  const json::object m = read_json(out / id / "manifest.json");
  EXPECT_EQ(m.at("hardware").at("host"), json::value("<scrubbed:host>"));
  bool lists_host = false;
  for (const auto& f : m.at("scrubbed_fields").as_array()) {
    lists_host = lists_host || f == json::value("manifest.json#/hardware/host");
  }
  EXPECT_TRUE(lists_host);
  for (const auto& e : fs::recursive_directory_iterator(out / id)) {
    if (e.is_regular_file()) {
      EXPECT_EQ(Child::slurp(e.path().string()).find(host), std::string::npos) << e.path();
    }
  }
  // The copy verifies; the original is untouched.
  r = dyno({"runs", "verify", (out / id).string()});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read_json(root_ / id / "manifest.json"), before);
  // Again to the same place: refused.
  r = dyno({"runs", "publish", "--runs-root", root_.string(), id, "--out", out.string()});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;
  // In place, with hashed UUIDs and a dry run first.
  r = dyno({"runs", "publish", "--runs-root", root_.string(), id, "--in-place", "--dry-run"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("would scrub"), std::string::npos);
  EXPECT_EQ(read_json(root_ / id / "manifest.json"), before);
  r = dyno({"runs", "publish", "--json", "--runs-root", root_.string(), id, "--in-place",
            "--hash-gpu-uuids", "--keep", "paths"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).at(0).at("policy").at("gpu_uuids"), json::value("hash"));
  EXPECT_EQ(read_json(root_ / id / "manifest.json").at("hardware").at("host"),
            json::value("<scrubbed:host>"));
  EXPECT_EQ(dyno({"runs", "verify", "--runs-root", root_.string(), id}).code, 0);
  EXPECT_EQ(list_json().at(0).at("host"), json::value("<scrubbed:host>"));  // index follows
  // Bad policies are usage errors naming the flag.
  r = dyno({"runs", "publish", "--runs-root", root_.string(), id, "--in-place", "--keep",
            "hosts,colours"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--keep: unknown category 'colours'"), std::string::npos) << r.err;
  std::ofstream(dir_ / "policy.json") << R"({"keep": ["hosts"], "verbose": true})";
  r = dyno({"runs", "publish", "--runs-root", root_.string(), id, "--in-place", "--policy",
            (dir_ / "policy.json").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--policy"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'verbose' is unknown"), std::string::npos) << r.err;
  r = dyno({"runs", "publish", "--runs-root", root_.string(), id});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--out DIR"), std::string::npos) << r.err;
}

TEST_F(Runs, TwoProcessesWritingToOneRootLoseNothing) {
  const auto start = [&](const std::string& tag) {
    return std::make_unique<Child>(
        std::vector<std::string>{DYNO_BINARY, "sweep", "-q", "--telemetry", "off", "--runs-root",
                                 root_.string(), "--concurrencies", "1,2,3", "--min-requests", "6",
                                 "--output-tokens", "8", "--label", tag},
        (dir_ / (tag + ".out")).string(), (dir_ / (tag + ".err")).string());
  };
  auto p = start("writer-p");
  auto q = start("writer-q");
  const int pc = p->wait(std::chrono::seconds(240));
  const int qc = q->wait(std::chrono::seconds(240));
  ASSERT_EQ(pc, 0) << p->err();
  ASSERT_EQ(qc, 0) << q->err();
  EXPECT_EQ(p->err().find("run index was not updated"), std::string::npos) << p->err();
  EXPECT_EQ(q->err().find("run index was not updated"), std::string::npos) << q->err();
  // Both indexed all their runs as they finished, into one consistent database.
  const fs::path db = root_ / "index.sqlite";
  EXPECT_EQ(sqlite_text(db, "SELECT count(*) FROM runs"), "6");
  EXPECT_EQ(sqlite_text(db, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(sqlite_text(db, "SELECT count(*) FROM runs WHERE status = 'ok'"), "6");
  const json::array rows = list_json();
  ASSERT_EQ(rows.size(), 6u);
  std::map<std::string, int> per_label;
  for (const auto& r : rows) {
    ++per_label[std::string(r.at("label").as_string())];
    EXPECT_TRUE(fs::is_directory(root_ / std::string(r.at("run_id").as_string())));
  }
  EXPECT_EQ(per_label["writer-p"], 3);
  EXPECT_EQ(per_label["writer-q"], 3);
  EXPECT_EQ(std::distance(fs::directory_iterator(root_ / "campaigns"), fs::directory_iterator()),
            2);
  const Result r = dyno({"runs", "verify", "--all", "--runs-root", root_.string()});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("6 of 6 runs verify"), std::string::npos) << r.out;
}

TEST_F(Runs, SecretsAreNeverWritten) {
  const std::string canary1 = "sk-canary-dyno-8c1f5e2a";
  const std::string canary2 = "sk-canary-openai-47b09d3c";
  const std::string canary3 = "canary-userinfo-51d2";
  const std::string canary4 = "canary-query-token-9e7a";
  const std::map<std::string, std::string> env = {{"DYNO_API_KEY", canary1},
                                                  {"OPENAI_API_KEY", canary2}};
  const std::string url = start_sim();
  std::vector<Result> results;
  results.push_back(
      dyno({"run", "-q", "--telemetry", "off", "--runs-root", root_.string(), "--url", url,
            "--model", "dyno-sim", "-n", "6", "-c", "2", "--output-tokens", "4", "--keep-outputs"},
           env));
  EXPECT_EQ(results.back().code, 0) << results.back().err;
  results.push_back(dyno({"sweep", "-q", "--telemetry", "off", "--runs-root", root_.string(),
                          "--url", url, "--model", "dyno-sim", "--concurrencies", "1,2",
                          "--min-requests", "4", "--output-tokens", "4", "--json"},
                         env));
  EXPECT_EQ(results.back().code, 0) << results.back().err;
  // Credentials or a token in --url are refused, and the refusal does not echo them.
  const std::string authority = url.substr(7);  // after "http://"
  results.push_back(
      dyno({"run", "-q", "--telemetry", "off", "--runs-root", root_.string(), "--url",
            "http://user:" + canary3 + "@" + authority, "--model", "dyno-sim", "-n", "2"},
           env));
  EXPECT_EQ(results.back().code, 2);
  EXPECT_NE(results.back().err.find("credentials"), std::string::npos) << results.back().err;
  results.push_back(dyno({"run", "-q", "--telemetry", "off", "--runs-root", root_.string(), "--url",
                          url + "?token=" + canary4, "--model", "dyno-sim", "-n", "2"},
                         env));
  EXPECT_EQ(results.back().code, 2);
  EXPECT_NE(results.back().err.find("query string"), std::string::npos) << results.back().err;
  // The store's commands print nothing secret either.
  results.push_back(dyno({"runs", "list", "--json", "--runs-root", root_.string()}, env));
  const json::array rows = json::parse(results.back().out).as_array();
  ASSERT_EQ(rows.size(), 3u);
  const std::string id(rows.at(0).at("run_id").as_string());
  results.push_back(dyno({"runs", "show", "--json", "--runs-root", root_.string(), id}, env));
  EXPECT_TRUE(
      json::parse(results.back().out).at("manifest").at("engine").at("api_key_used").as_bool());
  results.push_back(dyno(
      {"runs", "publish", "--runs-root", root_.string(), id, "--out", (root_ / "pub").string()},
      env));
  EXPECT_EQ(results.back().code, 0) << results.back().err;

  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(root_)) {
    if (!e.is_regular_file()) continue;
    ++files;
    const std::string text = Child::slurp(e.path().string());
    for (const auto& c : {canary1, canary2, canary3, canary4}) {
      EXPECT_EQ(text.find(c), std::string::npos) << c << " in " << e.path();
    }
  }
  EXPECT_GE(files, 12);  // three records, a campaign, the index, a published copy
  for (const auto& r : results) {
    for (const auto& c : {canary1, canary2, canary3, canary4}) {
      EXPECT_EQ(r.out.find(c), std::string::npos) << c;
      EXPECT_EQ(r.err.find(c), std::string::npos) << c;
    }
  }
}
