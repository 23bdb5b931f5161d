// `dyno compare` and `dyno report` selecting runs through a shared PostgreSQL index (--index,
// DYNO_INDEX_URL; docs/compare.md "Selecting runs through an index"), through the binary,
// against a server this test process starts (tests/pg_server.h): the comparison fixture's runs
// split over two runs roots registered in one index, selected by query, id, prefix and
// campaign from both; the same board as without an index; a stale row; ambiguous ids across
// roots; a password that never reaches the terminal or a file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "integration/process.h"
#include "pg_server.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using dyno::testing::Child;
using dyno::testing::PgServer;

namespace {

const std::string kFast1 = "20261130T004322Z-4c1237-fast", kFast2 = "20261130T004322Z-dd1bd8-fast",
                  kSlow1 = "20261130T004324Z-af9b8c-slow", kSlow2 = "20261130T004325Z-824546-slow",
                  kFastCampaign = "20261130T004322Z-edfa07-sweep",
                  kSlowCampaign = "20261130T004324Z-7c4b7c-sweep";

struct Result {
  int code = -1;
  std::string out;
  std::string err;
};

fs::path fixture() { return fs::path(DYNO_SOURCE_DIR) / "tests/compare/data/runs"; }

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

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class PgCompare : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    pg_ = dyno::testing::shared_pg_server(why);
    if (pg_ == nullptr) GTEST_SKIP() << why;
    url_ = pg_->url(pg_->create_database());
    dir_ = dyno::testing::make_temp_dir("dyno-pgcompare");
    // Team A's runs root holds the fast arm, team B's the slow one; one index holds both.
    a_ = dir_ / "team-a" / "runs";
    b_ = dir_ / "team-b" / "runs";
    place(a_, {kFast1, kFast2}, kFastCampaign);
    place(b_, {kSlow1, kSlow2}, kSlowCampaign);
    for (const auto& root : {a_, b_}) reindex(root);
  }
  void TearDown() override {
    if (pg_ == nullptr) return;
    EXPECT_EQ(terminal_.find(PgServer::kPassword), std::string::npos) << terminal_;
    EXPECT_EQ(all_files(dir_).find(PgServer::kPassword), std::string::npos);
    if (!dir_.empty() && !HasFailure()) fs::remove_all(dir_);
  }

  static void place(const fs::path& root, const std::vector<std::string>& runs,
                    const std::string& campaign) {
    fs::create_directories(root / "campaigns");
    for (const auto& id : runs) fs::copy(fixture() / id, root / id, fs::copy_options::recursive);
    fs::copy_file(fixture() / "campaigns" / (campaign + ".json"),
                  root / "campaigns" / (campaign + ".json"));
  }
  void reindex(const fs::path& root) {
    const Result r = dyno({"runs", "reindex", "--runs-root", root.string(), "--index", url_});
    ASSERT_EQ(r.code, 0) << r.err;
  }

  /// dyno with `args`; DYNO_INDEX_URL is unset unless `env` sets it.
  Result dyno(const std::vector<std::string>& args, std::map<std::string, std::string> env = {}) {
    std::vector<std::string> argv = {DYNO_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    env.emplace("DYNO_INDEX_URL", "");
    const std::string n = std::to_string(calls_++);
    Child c(argv, (dir_ / ("out" + n)).string(), (dir_ / ("err" + n)).string(), env);
    Result r;
    r.code = c.wait();
    r.out = c.out();
    r.err = c.err();
    terminal_ += r.out + r.err;
    fs::remove(dir_ / ("out" + n));
    fs::remove(dir_ / ("err" + n));
    return r;
  }
  /// `dyno compare --json` with arms and extra flags.
  Result compare(const std::vector<std::string>& arms, std::vector<std::string> extra = {},
                 const std::map<std::string, std::string>& env = {}) {
    std::vector<std::string> args = {"compare", "--json"};
    for (const auto& a : arms) args.insert(args.end(), {"--arm", a});
    args.insert(args.end(), extra.begin(), extra.end());
    return dyno(args, env);
  }
  /// The board of the whole fixture root, without an index: what every index board must equal.
  std::string expected_board(const std::vector<std::string>& arms) {
    const Result r = compare(arms, {"--runs-root", fixture().string()});
    EXPECT_EQ(r.code, 0) << r.err;
    return r.out;
  }

  PgServer* pg_ = nullptr;
  std::string url_;
  fs::path dir_, a_, b_;
  int calls_ = 0;
  std::string terminal_;  ///< everything dyno printed
};

}  // namespace

TEST_F(PgCompare, SelectsFromEveryRunsRootByQueryIdPrefixAndCampaign) {
  const std::vector<std::string> by_label = {"fast=label=fast", "slow=label=slow"};
  const std::string board = expected_board(by_label);
  ASSERT_FALSE(board.empty());
  Result r = compare(by_label, {"--index", url_});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, board);
  EXPECT_EQ(r.err, "");
  // DYNO_INDEX_URL does what --index does.
  r = compare(by_label, {}, {{"DYNO_INDEX_URL", url_}});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, board);
  // By run id, a unique prefix and a campaign id: the same runs, the same board.
  const std::vector<std::string> by_id = {"fast=" + kFast1, "fast=" + kFast2.substr(0, 24),
                                          "slow=" + kSlowCampaign};
  const std::string id_board = expected_board(by_id);
  r = compare(by_id, {"--index", url_});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, id_board);
  // A key the index does not store (the simulated engine's profile) is read from manifests.
  const std::vector<std::string> unstored = {"fast=label=fast,profile=fast",
                                             "slow=api=chat,label=slow"};
  r = compare(unstored, {"--index", url_});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, expected_board(unstored));
  // --runs-root with --index: that root's rows only.
  r = compare(by_label, {"--index", url_, "--runs-root", a_.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("query 'label=slow' matches no run in the run index postgresql://dyno:***@"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("runs root " + fs::canonical(a_).string()), std::string::npos) << r.err;
  // A report from the index: the board directory of the same board.
  const fs::path with = dir_ / "boards" / "with-index", without = dir_ / "boards" / "without";
  r = dyno({"report", "--index", url_, "--arm", by_label[0], "--arm", by_label[1], "--out",
            with.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  r = dyno({"report", "--runs-root", fixture().string(), "--arm", by_label[0], "--arm", by_label[1],
            "--out", without.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(slurp(with / "board.json"), slurp(without / "board.json"));
  EXPECT_EQ(slurp(with / "SHA256SUMS"), slurp(without / "SHA256SUMS"));
}

TEST_F(PgCompare, WithoutAnIndexNothingChanges) {
  // Team A's root alone has no slow run: an error over its manifests, as before.
  Result r = compare({"fast=label=fast", "slow=label=slow"}, {"--runs-root", a_.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("query 'label=slow' matches no run under " + a_.string()), std::string::npos)
      << r.err;
  // No index.sqlite is made or read by compare.
  EXPECT_FALSE(fs::exists(a_ / "index.sqlite"));
}

TEST_F(PgCompare, AStaleRowIsAnErrorUntilReindexed) {
  fs::remove_all(b_ / kSlow2);
  const std::string dir = (fs::canonical(b_) / kSlow2).string();
  for (const std::string& slow : {std::string("label=slow"), kSlow2}) {
    const Result r = compare({"fast=label=fast", "slow=" + slow}, {"--index", url_});
    EXPECT_EQ(r.code, 2) << slow;
    EXPECT_NE(
        r.err.find("run " + kSlow2 + " (" + dir + ") is in the index, but its directory is gone"),
        std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("`dyno runs reindex --runs-root " + fs::canonical(b_).string() + "`"),
              std::string::npos)
        << r.err;
  }
  // A manifest changed since it was indexed no longer verifies against its row.
  const fs::path m = b_ / kSlow1 / "manifest.json";
  std::string text = slurp(m);
  text.replace(text.find("\"label\": \"slow\""), 15, "\"label\": \"SLOW\"");
  std::ofstream(m, std::ios::binary | std::ios::trunc) << text;
  Result r = compare({"fast=label=fast", "slow=label=slow"}, {"--index", url_});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("run " + kSlow1 + " (" + (fs::canonical(b_) / kSlow1).string() +
                       ") no longer verifies"),
            std::string::npos)
      << r.err;
  reindex(b_);
  r = compare({"fast=label=fast", "slow=label=SLOW"}, {"--index", url_});
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST_F(PgCompare, AnIdInTwoRootsIsAmbiguousAndAPrefixListsItsRoots) {
  const fs::path c = dir_ / "team-c" / "runs";
  place(c, {kFast1}, kFastCampaign);
  reindex(c);
  Result r = compare({"fast=" + kFast1, "slow=label=slow"}, {"--index", url_});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("run " + kFast1 + " is in 2 runs roots of the run index"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(kFast1 + " (" + fs::canonical(c).string() + ")"), std::string::npos)
      << r.err;
  r = compare({"fast=label=fast", "slow=label=slow"}, {"--index", url_});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("in two runs roots"), std::string::npos) << r.err;
  r = compare({"fast=" + kFastCampaign, "slow=label=slow"}, {"--index", url_});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("campaign " + kFastCampaign + " is in 2 runs roots"), std::string::npos)
      << r.err;
  r = compare({"fast=20261130T00432", "slow=label=slow"}, {"--index", url_});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("run id prefix '20261130T00432' matches 5 runs"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(kSlow1 + " (" + fs::canonical(b_).string() + ")"), std::string::npos)
      << r.err;
  // --runs-root picks the root.
  r = compare({"fast=" + kFast1, "slow=" + kFast2}, {"--index", url_, "--runs-root", a_.string()});
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST_F(PgCompare, BadAndUnreachableIndexesAreClearErrorsWithoutThePassword) {
  Result r = compare({"fast=label=fast", "slow=label=slow"},
                     {"--index", "mysql://dyno:" + std::string(PgServer::kPassword) + "@h/db"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--index: 'mysql://dyno:***@h/db' is not a PostgreSQL index URL"),
            std::string::npos)
      << r.err;
  r = dyno(
      {"report", "--out", (dir_ / "x").string(), "--arm", "a=label=fast", "--arm", "b=label=slow"},
      {{"DYNO_INDEX_URL",
        "postgresql://dyno:" + std::string(PgServer::kPassword) + "@127.0.0.1:1/db"}});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("cannot connect to the run index postgresql://dyno:***@127.0.0.1:1/db"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "x"));
  // A database no runs root was indexed in.
  const std::string empty = pg_->url(pg_->create_database());
  r = compare({"fast=label=fast", "slow=label=slow"}, {"--index", empty});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("holds no dyno tables"), std::string::npos) << r.err;
  // compare reads the index and never writes it: still no tables there.
  const std::string db = empty.substr(empty.rfind('/') + 1);
  EXPECT_EQ(pg_->exec(db, "SELECT to_regclass('dyno_meta') IS NULL"), "t");
}
