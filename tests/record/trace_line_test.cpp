// trace_line (the requests.jsonl line, event times formatted straight into the text) against
// the JSON-value path it replaces, and the executable-hash cache (record/digest_cache.h).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "digest/digest.h"
#include "json/json_text.h"
#include "record/digest_cache.h"
#include "record/record_json.h"
#include "record/run_writer.h"
#include "scrub/redact.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::metrics::Trace;
namespace digest = dyno::digest;
namespace record = dyno::record;
namespace scrub = dyno::scrub;

namespace {

/// The line as the JSON-value path writes it: trace_to_json, redacted, compact, and
/// invalid_utf8_bytes appended when any byte was replaced.
std::string reference_line(const Trace& t, bool keep, const std::vector<std::string>& secrets) {
  json::value v = record::trace_to_json(t, keep);
  scrub::redact_literals(v, secrets);
  dyno::json_text::WriteStats stats;
  std::string line = dyno::json_text::compact(v, &stats);
  if (stats.invalid_utf8_bytes > 0) {
    v.as_object()["invalid_utf8_bytes"] = stats.invalid_utf8_bytes;
    line = dyno::json_text::compact(v);
  }
  return line;
}

Trace base_trace() {
  Trace t;
  t.index = 7;
  t.request_id = "run-7";
  t.phase = "measure";
  t.status = dyno::metrics::RequestStatus::kOk;
  t.sent_ns = 1000;
  t.first_token_ns = 5000;
  t.last_token_ns = 9000;
  t.done_ns = 9100;
  t.input_tokens = 16;
  t.output_tokens = 4;
  t.event_times_ns = {5000, 6000, 7000, 9000};
  return t;
}

}  // namespace

TEST(TraceLine, EqualsTheJsonValuePathByteForByte) {
  const std::vector<std::string> secrets = scrub::normalize_secrets({"sk-SECRET", "k"});
  std::vector<Trace> cases;
  cases.push_back(base_trace());
  Trace text = base_trace();
  text.output_text = "quote \" backslash \\ newline \n tab \t control \x01 key sk-SECRET end";
  cases.push_back(text);
  Trace bad_utf8 = base_trace();
  bad_utf8.output_text = std::string("bad \xff\xfe bytes \xc3");
  bad_utf8.error_category = "parse";
  bad_utf8.error_message = "server said sk-SECRET \xff";
  cases.push_back(bad_utf8);
  Trace no_events = base_trace();
  no_events.event_times_ns.clear();
  no_events.status = dyno::metrics::RequestStatus::kError;
  cases.push_back(no_events);
  Trace scored = base_trace();
  scored.correct = true;  // a scored ok request keeps its (empty) output text
  scored.scorer = "exact";
  cases.push_back(scored);
  Trace extremes = base_trace();
  extremes.event_times_ns = {std::numeric_limits<std::int64_t>::max(), 0, -5,
                             std::numeric_limits<std::int64_t>::min() / 2};
  cases.push_back(extremes);
  for (const bool keep : {true, false}) {
    for (const Trace& t : cases) {
      std::size_t replaced = 99;
      const std::string line = record::trace_line(t, keep, secrets, &replaced);
      EXPECT_EQ(line, reference_line(t, keep, secrets)) << t.output_text;
      EXPECT_EQ(line.find("sk-SECRET"), std::string::npos);
      EXPECT_EQ(replaced > 0, line.find("\"invalid_utf8_bytes\":") != std::string::npos);
      EXPECT_NO_THROW(json::parse(line));
    }
  }
}

TEST(TraceLine, EventTimesAreDeltaEncoded) {
  const std::string line = record::trace_line(base_trace(), true, {});
  EXPECT_NE(line.find("\"chunk_times_ns\":[5000,1000,1000,2000]"), std::string::npos) << line;
}

TEST(DigestCache, RemembersAHashUntilTheFileChanges) {
  dyno::testing::TempDir dir;
  const fs::path file = dir.path() / "binary";
  const fs::path cache = dir.path() / "cache";
  std::ofstream(file) << "first contents";
  const std::string first = digest::sha256_hex_file(file);
  EXPECT_EQ(record::cached_sha256_hex_file(file, cache), first);
  ASSERT_TRUE(fs::exists(cache / "file-sha256"));
  // A remembered hash is served from the cache: the proof is a forged entry being returned.
  std::string text;
  {
    std::ifstream in(cache / "file-sha256");
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string forged(64, 'a');
  const auto at = text.find(first);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, first.size(), forged);
  std::ofstream(cache / "file-sha256", std::ios::trunc) << text;
  EXPECT_EQ(record::cached_sha256_hex_file(file, cache), forged);
  // Any write changes the file's status-change time: hashed again, whatever the cache says.
  std::ofstream(file, std::ios::trunc) << "second contents";
  EXPECT_EQ(record::cached_sha256_hex_file(file, cache), digest::sha256_hex_file(file));
  EXPECT_NE(digest::sha256_hex_file(file), first);
}

TEST(DigestCache, AGarbledOrUnwritableCacheIsIgnored) {
  dyno::testing::TempDir dir;
  const fs::path file = dir.path() / "binary";
  std::ofstream(file) << "contents";
  const std::string truth = digest::sha256_hex_file(file);
  const fs::path cache = dir.path() / "cache";
  fs::create_directories(cache);
  for (const std::string& garbage :
       {std::string("dyno-file-sha256-v1\nno tab here\n"), std::string("not a cache\n"),
        std::string("dyno-file-sha256-v1\nkey\tnot-hex\n"), std::string("\0\xff\n", 3)}) {
    std::ofstream(cache / "file-sha256", std::ios::trunc) << garbage;
    EXPECT_EQ(record::cached_sha256_hex_file(file, cache), truth);
  }
  // A cache directory that is a file: nothing written, the hash still computed.
  std::ofstream(dir.path() / "blocked") << "x";
  EXPECT_EQ(record::cached_sha256_hex_file(file, dir.path() / "blocked"), truth);
  EXPECT_EQ(record::cached_sha256_hex_file(file, fs::path()), truth);
  EXPECT_THROW(record::cached_sha256_hex_file(dir.path() / "missing", cache), digest::FileError);
}
