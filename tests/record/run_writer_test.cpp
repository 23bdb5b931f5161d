// RunWriter against whatever it is handed: bytes that are not UTF-8, the API key echoed by a
// server, a disk that fills before the manifest is written, and the in-progress lock that
// `dyno runs rm` respects.
#include "record/run_writer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "json/utf8.h"
#include "record/record_schema.h"
#include "record/run_verify.h"
#include "scrub/redact.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::metrics::Trace;
using dyno::record::RunWriter;

namespace {

const fs::path kRunFixture = fs::path(DYNO_SOURCE_DIR) / "tests/record/data/run_v1";
constexpr const char* kId = "20261130T003554Z-7157eb-fixture";  // the fixture's run id

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json::object fixture(const char* file) {
  json::object o = json::parse(slurp(kRunFixture / file)).as_object();
  if (o.contains("evidence")) o["evidence"] = json::array();  // no evidence files here
  return o;
}

Trace trace(std::uint64_t index, const std::string& output, const std::string& error = "") {
  Trace t;
  t.index = index;
  t.request_id = "r" + std::to_string(index);
  t.phase = "measured";
  t.scheduled_ns = 0;
  t.sent_ns = 10;
  t.first_byte_ns = 20;
  t.done_ns = 100;
  t.http_status = error.empty() ? 200 : 500;
  if (error.empty()) {
    t.status = dyno::metrics::RequestStatus::kOk;
    t.first_token_ns = 30;
    t.first_content_ns = 30;
    t.last_token_ns = 90;
    t.event_times_ns = {30, 90};
    t.output_tokens = 2;
    t.input_tokens = 5;
    t.token_count_source = dyno::metrics::TokenCountSource::kUsage;
    t.finish_reason = "length";
    t.output_text = output;
  } else {
    t.status = dyno::metrics::RequestStatus::kError;
    t.error_category = "http_status";
    t.error_message = error;
  }
  return t;
}

std::vector<json::object> lines_of(const fs::path& file) {
  std::vector<json::object> out;
  std::istringstream in(slurp(file));
  std::string line;
  while (std::getline(in, line)) out.push_back(json::parse(line).as_object());
  return out;
}

const json::object* warning(const json::object& doc, const std::string& code) {
  for (const auto& w : doc.at("warnings").as_array()) {
    if (w.as_object().at("code").as_string() == code) return &w.as_object();
  }
  return nullptr;
}

TEST(RunWriterUtf8, InvalidBytesEverywhereStillMakeARecordThatVerifies) {
  const dyno::testing::TempDir tmp("dyno-writer-utf8");
  std::vector<Trace> traces = {
      trace(0, "a smile cut short \xF0\x9F\x98"),                     // 3 bytes
      trace(1, "", "HTTP 500: <html>\xE9t\xE9 indisponible</html>"),  // 2 bytes (Latin-1)
      trace(2, "fine \xC3\xA9t\xC3\xA9"),                             // none
  };
  traces[2].server_timings_json = R"({"prompt_n":5})";
  json::object manifest = fixture("manifest.json");
  manifest["model"].as_object()["id"] = json::string(std::string("model-\xFF\xFE"));   // 2
  manifest["engine"].as_object()["version"] = json::string(std::string("b4748\xC0"));  // 1
  json::object summary = fixture("summary.json");
  fs::path dir;
  {
    RunWriter w(tmp.path(), kId, true);
    dir = w.dir();
    for (const auto& t : traces) w.append_request(t);
    w.write_json("summary.json", summary);
    w.write_json("manifest.json", manifest);
    w.finalize(traces);
    EXPECT_EQ(w.invalid_utf8_bytes(), 3u + 2u + 2u + 1u);
    const auto warn = w.invalid_utf8_warning();
    ASSERT_TRUE(warn.has_value());
    EXPECT_EQ(warn->code, dyno::metrics::WarningCode::kInvalidUtf8Replaced);
    EXPECT_NE(warn->message.find("8 bytes"), std::string::npos) << warn->message;
    EXPECT_NE(warn->message.find("requests.jsonl 5 in 2 requests"), std::string::npos)
        << warn->message;
    EXPECT_NE(warn->message.find("manifest.json 3"), std::string::npos) << warn->message;
  }
  // The record verifies, schema included, and every file is UTF-8.
  const auto report = dyno::record::verify_run_dir(dir);
  for (const auto& p : report.problems) ADD_FAILURE() << p.path << ": " << p.message;
  EXPECT_TRUE(dyno::record::validate_run_dir(dir).empty());
  for (const char* f : {"manifest.json", "summary.json", "requests.jsonl"}) {
    EXPECT_TRUE(dyno::utf8::is_valid(slurp(dir / f))) << f;
  }
  // Each request line counts its own.
  const auto lines = lines_of(dir / "requests.jsonl");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].at("invalid_utf8_bytes").as_int64(), 3);
  EXPECT_EQ(lines[0].at("output_text").as_string(), "a smile cut short \xEF\xBF\xBD");
  EXPECT_EQ(lines[1].at("invalid_utf8_bytes").as_int64(), 2);
  EXPECT_FALSE(lines[2].contains("invalid_utf8_bytes"));
  EXPECT_EQ(lines[2].at("output_text").as_string(), "fine \xC3\xA9t\xC3\xA9");
  // The summary (written before the manifest) counts the requests; the manifest adds its own.
  const json::object s = json::parse(slurp(dir / "summary.json")).as_object();
  const json::object m = json::parse(slurp(dir / "manifest.json")).as_object();
  ASSERT_NE(warning(s, "invalid_utf8_replaced"), nullptr);
  ASSERT_NE(warning(m, "invalid_utf8_replaced"), nullptr);
  EXPECT_NE(
      std::string(warning(s, "invalid_utf8_replaced")->at("message").as_string()).find("5 bytes"),
      std::string::npos);
  EXPECT_NE(
      std::string(warning(m, "invalid_utf8_replaced")->at("message").as_string()).find("8 bytes"),
      std::string::npos);
  EXPECT_EQ(m.at("model").at("id").as_string(), "model-\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(RunWriterUtf8, ACleanRecordHasNoWarningAndNoCounter) {
  const dyno::testing::TempDir tmp("dyno-writer-clean");
  RunWriter w(tmp.path(), kId, false);
  const std::vector<Trace> traces = {trace(0, "caf\xC3\xA9")};
  w.append_request(traces[0]);
  w.write_json("summary.json", fixture("summary.json"));
  w.write_json("manifest.json", fixture("manifest.json"));
  w.finalize(traces);
  EXPECT_EQ(w.invalid_utf8_bytes(), 0u);
  EXPECT_FALSE(w.invalid_utf8_warning());
  EXPECT_EQ(slurp(w.dir() / "requests.jsonl").find("invalid_utf8"), std::string::npos);
  EXPECT_EQ(slurp(w.dir() / "manifest.json").find("invalid_utf8"), std::string::npos);
}

TEST(RunWriterSecrets, TheKeyIsRedactedFromEveryFileAndLineBeforeWriting) {
  const dyno::testing::TempDir tmp("dyno-writer-secrets");
  const std::string key = "sk-echo-Q7zX9";
  std::vector<Trace> traces = {
      // Streamed text that repeats the key, split across two token events: the line holds
      // the joined text, where it is whole.
      trace(0, std::string("your key is sk-echo-") + "Q7zX9, and again sk-echo-Q7zX9!"),
      trace(1, "", "HTTP 401: invalid api key 'Bearer sk-echo-Q7zX9' for this server"),
  };
  json::object manifest = fixture("manifest.json");
  manifest["engine"].as_object()["version"] = "echo " + key;
  fs::path dir;
  {
    RunWriter w(tmp.path(), kId, true);
    w.set_secrets({key});
    dir = w.dir();
    w.append_request(traces[0]);  // appended while the run goes on...
    w.flush_requests();
    EXPECT_EQ(slurp(dir / "requests.jsonl").find(key), std::string::npos);
    w.append_request(traces[1]);
    w.write_text("evidence/engine.log", "got Authorization: Bearer " + key + "\n");
    w.write_text("evidence/metrics_before.txt", "# key " + key + "\n");
    w.write_json("summary.json", fixture("summary.json"));
    w.write_json("manifest.json", manifest);
    w.finalize(traces);  // ...and rewritten at the end
  }
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    EXPECT_EQ(slurp(e.path()).find("Q7zX9"), std::string::npos) << e.path();
  }
  const auto lines = lines_of(dir / "requests.jsonl");
  EXPECT_EQ(lines[0].at("output_text").as_string(),
            "your key is <scrubbed:secret>, and again <scrubbed:secret>!");
  EXPECT_EQ(lines[1].at("error").at("message").as_string(),
            "HTTP 401: invalid api key 'Bearer <scrubbed:secret>' for this server");
  EXPECT_EQ(slurp(dir / "evidence/engine.log"), "got Authorization: Bearer <scrubbed:secret>\n");
  EXPECT_TRUE(dyno::record::verify_run_dir(dir).ok());
}

TEST(Redact, LiteralsAreReplacedInOnePassLongestFirstInStringsAndKeys) {
  const auto secrets = dyno::scrub::normalize_secrets({"ab", "", "abcd", "ab"});
  ASSERT_EQ(secrets, (std::vector<std::string>{"abcd", "ab"}));
  std::string text = "abcd ab xabcdx";
  EXPECT_EQ(dyno::scrub::redact_literals(text, secrets), 3u);
  EXPECT_EQ(text, "<scrubbed:secret> <scrubbed:secret> x<scrubbed:secret>x");
  // A secret that occurs in the marker itself does not eat the marker.
  std::string t2 = "key=secret";
  dyno::scrub::redact_literals(t2, dyno::scrub::normalize_secrets({"secret", "e"}));
  EXPECT_EQ(t2, "k<scrubbed:secret>y=<scrubbed:secret>");
  // A key of one character is still redacted (docs/store.md): the key never reaches the disk.
  std::string t3 = "x1x";
  EXPECT_EQ(dyno::scrub::redact_literals(t3, {"1"}), 1u);
  EXPECT_EQ(t3, "x<scrubbed:secret>x");
  json::value doc = json::object{{"k-ab", json::array{"ab", 1, json::object{{"q", "zab"}}}}};
  EXPECT_EQ(dyno::scrub::redact_literals(doc, secrets), 3u);
  EXPECT_EQ(json::serialize(doc),
            R"({"k-<scrubbed:secret>":["<scrubbed:secret>",1,{"q":"z<scrubbed:secret>"}]})");
}

/// Runs `body` in a child process whose files may not grow past `limit` bytes (RLIMIT_FSIZE:
/// a write past it fails with EFBIG, like a full disk), and returns its exit status.
int with_file_size_limit(rlim_t limit, const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of the signal
    rlimit rl{limit, limit};
    if (::setrlimit(RLIMIT_FSIZE, &rl) != 0) ::_exit(90);
    ::_exit(body());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(RunWriterCleanup, AWriteThatFailsBeforeTheManifestExistsLeavesNoDirectory) {
  const dyno::testing::TempDir tmp("dyno-writer-full");
  const fs::path root = tmp / "new" / "runs";  // created by the writer, removed with it
  const int code = with_file_size_limit(256, [&root]() {
    try {
      RunWriter w(root, kId, false);
      w.write_json("manifest.json", fixture("manifest.json"));  // several KiB: EFBIG
      return 1;
    } catch (const dyno::record::RecordError& e) {
      const std::string what = e.what();
      if (what.find("File too large") == std::string::npos) return 2;
      if (what.find("--runs-root") == std::string::npos) return 3;  // says what to do
      if (what.find("was removed") == std::string::npos) return 4;
      return 0;
    }
  });
  EXPECT_EQ(code, 0);
  EXPECT_FALSE(fs::exists(tmp / "new")) << "the writer left what it created";
  EXPECT_TRUE(fs::is_empty(tmp.path()));
}

TEST(RunWriterCleanup, AFailureAfterTheManifestKeepsTheRecordAndAnExistingRootIsKept) {
  const dyno::testing::TempDir tmp("dyno-writer-full2");
  const int code = with_file_size_limit(64 * 1024, [&tmp]() {
    try {
      RunWriter w(tmp.path(), kId, false);
      w.write_json("manifest.json", fixture("manifest.json"));
      w.write_text("evidence/big.txt", std::string(128 * 1024, 'x'));
      return 1;
    } catch (const dyno::record::RecordError& e) {
      return std::string(e.what()).find("was removed") == std::string::npos ? 0 : 2;
    }
  });
  EXPECT_EQ(code, 0);
  EXPECT_TRUE(fs::exists(tmp / kId / "manifest.json"));  // the run's record stays (running)
  EXPECT_FALSE(fs::exists(tmp / kId / "evidence" / "big.txt.tmp"));  // no half file
  // A run directory that already exists is never removed by a writer that failed to make it.
  EXPECT_THROW(RunWriter(tmp.path(), kId, false), dyno::record::RecordError);
  EXPECT_TRUE(fs::exists(tmp / kId / "manifest.json"));
}

TEST(RunWriterLock, ARunIsInProgressExactlyWhileItsWriterLives) {
  const dyno::testing::TempDir tmp("dyno-writer-lock");
  fs::path dir;
  {
    RunWriter w(tmp.path(), kId, false);
    dir = w.dir();
    EXPECT_TRUE(dyno::record::run_in_progress(dir));
    EXPECT_TRUE(dyno::record::run_in_progress(dir));  // asking does not take it
  }
  EXPECT_FALSE(dyno::record::run_in_progress(dir));
  EXPECT_FALSE(dyno::record::run_in_progress(tmp / "no-such-run"));
}

}  // namespace
