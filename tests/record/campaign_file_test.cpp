// Campaign files in the store (record/campaign_file.h): the digest, listing, and what
// verification says of a file it cannot trust. End-to-end verification of a real campaign:
// tests/integration/campaign_test.cpp.
#include "record/campaign_file.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <fstream>

#include "record/record_json.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace dyno;

namespace {

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

class CampaignFile : public ::testing::Test {
 protected:
  void SetUp() override { root_ = dyno::testing::make_temp_dir("dyno-campaign"); }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

}  // namespace

TEST(CampaignDigest, SignsTheFileBytesAndFindsAnyChange) {
  json::object doc{{"schema_version", 1}, {"campaign_id", "x"}, {"cells", json::array{}}};
  doc["figure"] = 0.1 + 0.2;  // a double a parser might round: the digest is over bytes
  doc["undefined"] = std::nan("");
  doc["sha256"] = "stale";  // replaced
  const std::string text = record::signed_campaign_text(doc);
  const auto d = record::campaign_digests(text);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->recorded, d->computed);
  EXPECT_EQ(d->recorded.size(), 64u);
  const json::object back = json::parse(text).as_object();
  EXPECT_EQ(back.at("sha256").as_string(), d->recorded);
  EXPECT_EQ(std::prev(back.end())->key(), "sha256");  // the last member
  // The same document signs the same way; one changed byte is found.
  EXPECT_EQ(record::signed_campaign_text(doc), text);
  std::string changed = text;
  changed[changed.find("\"x\"") + 1] = 'y';
  const auto c = record::campaign_digests(changed);
  ASSERT_TRUE(c);
  EXPECT_NE(c->recorded, c->computed);
  // Re-formatted (the digest no longer last as written), or never signed: no digests.
  EXPECT_FALSE(record::campaign_digests(json::serialize(back)));
  EXPECT_FALSE(record::campaign_digests(record::pretty_json(json::object{{"a", 1}})));
  EXPECT_FALSE(record::campaign_digests(""));
}

TEST_F(CampaignFile, ListsCampaignFilesAndNamesAnUnreadableOne) {
  write(root_ / "campaigns" / "b.json", R"({"schema_version": 1, "started_at": "2026-12-02",
    "status": "ok", "protocol": {"name": "ladder"}, "engine": {"name": "dyno-sim"},
    "model": "m", "cells": [{"runs": [{}, {}]}, {"runs": [{}]}]})");
  write(root_ / "campaigns" / "a.json", "{not json");
  write(root_ / "campaigns" / "notes.txt", "not a campaign");
  EXPECT_EQ(record::campaign_ids(root_), (std::vector<std::string>{"a", "b"}));
  const auto b = record::read_campaign_row(root_ / "campaigns" / "b.json");
  EXPECT_EQ(b.protocol, "ladder");
  EXPECT_EQ(b.engine, "dyno-sim");
  EXPECT_EQ(b.cells, 2u);
  EXPECT_EQ(b.runs, 3u);
  EXPECT_FALSE(b.problem);
  const auto a = record::read_campaign_row(root_ / "campaigns" / "a.json");
  EXPECT_EQ(a.status, "unreadable");
  ASSERT_TRUE(a.problem);
  EXPECT_NE(a.problem->find("a.json"), std::string::npos) << *a.problem;
  EXPECT_TRUE(record::campaign_ids(root_ / "nowhere").empty());
}

TEST_F(CampaignFile, VerificationNamesEveryProblem) {
  // A listed run that is not there, a run id that is a path, a run listed twice, no digest.
  write(root_ / "campaigns" / "c.json",
        R"({"schema_version": 1, "cells": [{"cell": "c1", "runs": [
             {"run_id": "20261202T000000Z-abcdef"}, {"run_id": "../etc"},
             {"run_id": "20261202T000000Z-abcdef"}]}]})");
  const record::VerifyReport rep =
      record::verify_campaign_file(root_ / "campaigns" / "c.json", /*schema=*/false);
  EXPECT_FALSE(rep.ok());
  std::string all;
  for (const auto& p : rep.problems) all += p.check + ": " + p.path + ": " + p.message + "\n";
  EXPECT_NE(all.find("the record is not in"), std::string::npos) << all;
  EXPECT_NE(all.find("'../etc', which is not a run id"), std::string::npos) << all;
  EXPECT_NE(all.find("listed twice"), std::string::npos) << all;
  ASSERT_EQ(rep.notes.size(), 1u);  // no sha256: a note, not a failure
  EXPECT_NE(rep.notes[0].find("no sha256"), std::string::npos);

  write(root_ / "campaigns" / "d.json", R"({"schema_version": 99})");
  const auto newer = record::verify_campaign_file(root_ / "campaigns" / "d.json");
  ASSERT_EQ(newer.problems.size(), 1u);
  EXPECT_NE(newer.problems[0].message.find("newer"), std::string::npos)
      << newer.problems[0].message;
}
