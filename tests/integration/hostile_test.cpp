// dyno against a hostile server (tests/hostile/hostile_server.cpp): for every misbehaviour, the
// exit code, the error category of every request, a record that verifies, nothing hangs, and
// the API key nowhere — on disk, on stdout or on stderr (docs/reliability.md).
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "free_port.h"
#include "integration/process.h"
#include "integration/record_check.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::testing::Child;

constexpr const char* kKey = "sk-hostile-0123456789-secret";

std::string slurp(const fs::path& p) { return Child::slurp(p.string()); }

struct Case {
  const char* mode;
  int exit_code;             ///< dyno's exit code
  const char* category;      ///< of every measured request ("" for ok)
  const char* message_part;  ///< in every error message ("" for none)
  std::vector<std::string> extra_args;
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.mode; }

class Hostile : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { dir_ = dyno::testing::make_temp_dir("dyno-hostile"); }
  void TearDown() override {
    server_.reset();
    std::error_code ec;
    if (!HasFailure()) fs::remove_all(dir_, ec);
  }

  std::string start_server(const std::string& mode) {
    server_ =
        std::make_unique<Child>(std::vector<std::string>{HOSTILE_SERVER, "--mode", mode},
                                (dir_ / "server.out").string(), (dir_ / "server.err").string());
    const std::string out = server_->wait_for_output("/v1");
    std::smatch m;
    const std::regex re("listening on (http://[0-9.]+:[0-9]+/v1)");
    if (!std::regex_search(out, m, re)) throw std::runtime_error("no address in: " + out);
    return m[1];
  }

  /// Every file under dir_ (records, index, outputs) as one string.
  std::string everything_written() {
    std::string all;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) {
      if (e.is_regular_file() && e.path().filename() != "server.out") all += slurp(e.path());
    }
    return all;
  }

  fs::path dir_;
  std::unique_ptr<Child> server_;
};

TEST_P(Hostile, EndsWithTheRightCategoryAndAVerifiedRecord) {
  const Case& c = GetParam();
  const std::string url = start_server(c.mode);
  std::vector<std::string> argv = {DYNO_BINARY,
                                   "run",
                                   "--url",
                                   url,
                                   "--model",
                                   "m",
                                   "-c",
                                   "2",
                                   "-n",
                                   "4",
                                   "--json",
                                   "-q",
                                   "--telemetry",
                                   "off",
                                   "--keep-outputs",
                                   "--runs-root",
                                   (dir_ / "runs").string()};
  argv.insert(argv.end(), c.extra_args.begin(), c.extra_args.end());
  const auto started = std::chrono::steady_clock::now();
  Child run(argv, (dir_ / "run.out").string(), (dir_ / "run.err").string(),
            {{"DYNO_API_KEY", kKey}});
  const int code = run.wait(std::chrono::seconds(60));
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_NE(code, -1) << c.mode << ": dyno did not end within 60 s";
  EXPECT_LT(took, 20.0) << c.mode;
  EXPECT_EQ(code, c.exit_code) << run.err();

  const json::object summary = json::parse(run.out()).as_object();
  const fs::path record(std::string(summary.at("record_dir").as_string()));
  std::ifstream lines(record / "requests.jsonl");
  std::string line;
  int measured = 0;
  while (std::getline(lines, line)) {
    const json::object r = json::parse(line).as_object();
    if (r.at("phase").as_string() == "warmup") continue;
    ++measured;
    if (std::string(c.category).empty()) {
      EXPECT_EQ(r.at("status").as_string(), "ok") << line;
    } else {
      ASSERT_EQ(r.at("status").as_string(), "error") << line;
      const json::object& error = r.at("error").as_object();
      EXPECT_EQ(error.at("category").as_string(), c.category) << line;
      EXPECT_NE(std::string(error.at("message").as_string()).find(c.message_part),
                std::string::npos)
          << line;
    }
  }
  EXPECT_EQ(measured, 4);

  Child verify({DYNO_BINARY, "runs", "verify", record.filename().string(), "--runs-root",
                (dir_ / "runs").string()},
               (dir_ / "verify.out").string(), (dir_ / "verify.err").string());
  EXPECT_EQ(verify.wait(std::chrono::seconds(60)), 0) << verify.out() << verify.err();
  dyno::testing::expect_records_conform(dir_ / "runs");

  const std::string all = everything_written() + run.out() + run.err();
  EXPECT_EQ(all.find(kKey), std::string::npos) << c.mode << ": the API key reached a file";
  // Not even a piece of it (a key cut at an excerpt's end, before it could be redacted).
  EXPECT_EQ(all.find(std::string(kKey).substr(0, 5)), std::string::npos)
      << c.mode << ": the start of the API key reached a file";
}

/// An in-stream error ends the request as the server's failure: the tokens before it stay in
/// the record, the request is no `ok` and enters no ok-only figure, and the summary and the
/// console count it by the server's message.
TEST_F(Hostile, InStreamErrorIsTheServersFailureCountedByMessage) {
  const std::string url = start_server("error_field");
  Child run({DYNO_BINARY, "run", "--url", url, "--model", "m", "-c", "2", "-n", "6", "-q",
             "--telemetry", "off", "--runs-root", (dir_ / "runs").string()},
            (dir_ / "run.out").string(), (dir_ / "run.err").string());
  ASSERT_EQ(run.wait(std::chrono::seconds(60)), 3) << run.err();
  // The console: the category, and the message counted.
  EXPECT_NE(run.out().find("server_error=6"), std::string::npos) << run.out();
  EXPECT_NE(run.out().find("6\u00d7 server_error: Input prompt is too big compared to KV size."),
            std::string::npos)
      << run.out();
  EXPECT_EQ(run.out().find("server_error: server_error"), std::string::npos) << run.out();
  const fs::path runs = dir_ / "runs";
  fs::path record;
  for (const auto& e : fs::directory_iterator(runs)) {
    if (e.is_directory()) record = e.path();
  }
  const json::object summary = json::parse(slurp(record / "summary.json")).as_object();
  const json::object& requests = summary.at("requests").as_object();
  EXPECT_EQ(requests.at("ok").as_int64(), 0);
  EXPECT_EQ(requests.at("failed").as_int64(), 6);
  const json::array& by_message = requests.at("errors_by_message").as_array();
  ASSERT_EQ(by_message.size(), 1u) << json::serialize(requests);
  EXPECT_EQ(by_message[0].at("category").as_string(), "server_error");
  EXPECT_EQ(by_message[0].at("message").as_string(),
            "server_error: Input prompt is too big compared to KV size.");
  EXPECT_EQ(by_message[0].at("count").as_int64(), 6);
  // No ok-only figure took them in.
  EXPECT_TRUE(summary.at("latency_ms").at("tpot").at("p50").is_null()) << json::serialize(summary);
  EXPECT_TRUE(summary.at("throughput").at("output_tokens_per_s").is_null());
  std::ifstream lines(record / "requests.jsonl");
  std::string line;
  while (std::getline(lines, line)) {
    const json::object r = json::parse(line).as_object();
    EXPECT_EQ(r.at("token_events").as_int64(), 2) << "the tokens before the error are kept";
  }
}

/// A server that reports no cached-token count but its computed prompt (llama.cpp's
/// `timings.prompt_n`): the cached tokens are the rest of the prompt, named by their source, in
/// each request, in the prefix-cache figures and on the console.
TEST_F(Hostile, CachedTokensFromTheServersComputedPrompt) {
  const std::string url = start_server("timings_prompt_n");
  Child run({DYNO_BINARY, "run", "--url", url, "--model", "m", "-c", "1", "-n", "3", "--telemetry",
             "off", "--runs-root", (dir_ / "runs").string()},
            (dir_ / "run.out").string(), (dir_ / "run.err").string());
  ASSERT_EQ(run.wait(std::chrono::seconds(60)), 0) << run.err();
  EXPECT_NE(run.out().find("prefix cache 84 of 120 prompt tokens cached"), std::string::npos)
      << run.out();
  EXPECT_NE(run.out().find("from timings_prompt_n"), std::string::npos) << run.out();
  fs::path record;
  for (const auto& e : fs::directory_iterator(dir_ / "runs")) {
    if (e.is_directory()) record = e.path();
  }
  const json::object summary = json::parse(slurp(record / "summary.json")).as_object();
  const json::object& cache = summary.at("prefix_cache").as_object();
  EXPECT_EQ(cache.at("source").as_string(), "timings_prompt_n");
  EXPECT_EQ(cache.at("cached_tokens").as_int64(), 84);
  EXPECT_EQ(cache.at("prompt_tokens").as_int64(), 120);
  std::ifstream lines(record / "requests.jsonl");
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    const json::object r = json::parse(line).as_object();
    EXPECT_EQ(r.at("cached_input_tokens").as_int64(), 28) << line;
    EXPECT_EQ(r.at("cached_source").as_string(), "timings_prompt_n") << line;
    ++n;
  }
  EXPECT_EQ(n, 3);
  dyno::testing::expect_records_conform(dir_ / "runs");
}

const std::vector<std::string> kStallLimits = {"--first-token-timeout", "1", "--idle-timeout", "1"};

INSTANTIATE_TEST_SUITE_P(
    Behaviours, Hostile,
    ::testing::Values(
        Case{"ok", 0, "", "", {}}, Case{"nagle", 0, "", "", {}},
        Case{"reset_mid", 3, "stream_truncated", "closed before the response was complete", {}},
        Case{"stall_before", 3, "timeout", "first-token timeout", kStallLimits},
        Case{"stall_after", 3, "timeout", "idle timeout", kStallLimits},
        Case{"slow_headers", 0, "", "", {}}, Case{"status_429", 3, "http_status", "429", {}},
        Case{"status_500_bad_utf8", 3, "http_status", "500 engine failed", {}},
        Case{"garbage_sse", 0, "", "", {}},
        Case{"invalid_json", 3, "parse", "invalid SSE data payload", {}},
        Case{"huge_line", 3, "too_large", "longer than 1024 KiB", {}},
        Case{"nul_bytes", 3, "parse", "invalid SSE data payload", {}},
        Case{"bad_utf8", 0, "", "", {}},
        Case{"truncated", 3, "stream_truncated", "closed before the response was complete", {}},
        Case{"no_done", 0, "", "", {}},
        Case{"redirect", 3, "http_status", "307 redirect to http://127.0.0.1:1/", {}},
        Case{"gzip", 3, "bad_response", "gzip-encoded", {}},
        Case{"empty_200", 3, "no_tokens", "without any token", {}},
        Case{"html_200", 3, "bad_response", "Content-Type text/html", {}},
        Case{"http10", 0, "", "", {}}, Case{"close_each", 0, "", "", {}},
        Case{"huge_headers", 3, "too_large", "header is larger than 64 KiB", {}},
        Case{"endless", 3, "too_large", "token events", {}},
        Case{"echo_key", 3, "http_status", "401", {}}, Case{"echo_key_stream", 0, "", "", {}},
        // The server's own word (issue 32): an in-stream error in each engine's form.
        Case{"error_field",
             3,
             "server_error",
             "server_error: Input prompt is too big compared to KV size.",
             {}},
        Case{"error_event", 3, "server_error", "server_error: engine overloaded", {}},
        Case{"error_data", 3, "server_error", "InternalServerError: CUDA out of memory", {}},
        Case{"error_tgi",
             3,
             "server_error",
             "generation: Request failed during generation: Server error: OOM",
             {}},
        Case{"error_bare", 3, "server_error", "model runner has unexpectedly stopped", {}},
        Case{"error_first", 3, "server_error", "Input prompt is too big", {}},
        Case{"error_echo_key", 3, "server_error", "bad header", {}},
        Case{"finish_abort", 3, "server_error", "finish_reason \"abort\"", {}},
        Case{"unfinished_done", 3, "unfinished", "with [DONE] but without a finish reason", {}},
        Case{"unfinished_eof", 3, "unfinished", "with the end of the body but without", {}},
        Case{"said_no_tokens", 3, "no_tokens", "model is loading", {}},
        Case{"usage_overflow", 3, "implausible_usage", "9223372036854775807", {}},
        Case{"status_401_straddle", 3, "http_status", "401", {}},
        Case{"metrics_echo_key", 0, "", "", {}}),
    [](const ::testing::TestParamInfo<Case>& p) { return std::string(p.param.mode); });

/// A server with Nagle's algorithm on (llama-server's) holds each small write until the
/// previous one is acknowledged: a client that delays its ACKs on a reused keep-alive
/// connection sees the first token ~40 ms late, and each next token as late again. dyno
/// acknowledges at once (it leaves delayed-ACK mode once per request; the kernel then
/// acknowledges each pushed segment in the read that drains it).
TEST_F(Hostile, NagleServerTimeToFirstTokenIsNotHeldByDelayedAcks) {
  const std::string url = start_server("nagle");
  Child run({DYNO_BINARY, "run", "--url", url, "--model", "m", "-c", "1", "-n", "30", "--json",
             "-q", "--telemetry", "off", "--runs-root", (dir_ / "runs").string()},
            (dir_ / "run.out").string(), (dir_ / "run.err").string());
  ASSERT_EQ(run.wait(std::chrono::seconds(60)), 0) << run.err();
  const json::object summary = json::parse(run.out()).as_object();
  const json::object& ttft = summary.at("latency_ms").at("ttft").as_object();
  // The server sends the first token 5 ms after the headers; a delayed ACK makes it ~44 ms.
  EXPECT_LT(ttft.at("p50").to_number<double>(), 25.0) << json::serialize(ttft);
  // Then a token every 2 ms: a delayed ACK would hold each for up to 40 ms.
  const json::object& gap = summary.at("latency_ms").at("event_gap").as_object();
  EXPECT_LT(gap.at("p90").to_number<double>(), 20.0) << json::serialize(gap);
}

/// A server with a fixed pool of HTTP threads (llama-server has n_parallel + 2): dyno's own
/// connections besides the load (the /metrics snapshots and gauges) must not hold threads idle,
/// or the load's connection queues behind them until the server's keep-alive timeout (5 s).
TEST_F(Hostile, FewServerThreadsAreNotHeldByIdleConnections) {
  const std::string url = start_server("two_threads");
  const auto started = std::chrono::steady_clock::now();
  Child run({DYNO_BINARY, "run", "--url", url, "--model", "m", "-c", "1", "-n", "6", "--json", "-q",
             "--idle-baseline", "0", "--runs-root", (dir_ / "runs").string()},
            (dir_ / "run.out").string(), (dir_ / "run.err").string());
  ASSERT_EQ(run.wait(std::chrono::seconds(60)), 0) << run.err();
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const json::object summary = json::parse(run.out()).as_object();
  EXPECT_LT(summary.at("latency_ms").at("ttft").at("max").to_number<double>(), 1000.0) << run.out();
  EXPECT_LT(took, 4.5) << "a request waited for a server thread";
  dyno::testing::expect_records_conform(dir_ / "runs");
}

/// A total timeout fires on time while a server floods the loop with bytes (the event loop
/// reads a bounded amount per turn, so its timers are not starved).
TEST_F(Hostile, TimeoutFiresOnTimeWhileAServerFloods) {
  const std::string url = start_server("endless_padded");
  Child run(
      {DYNO_BINARY, "run", "--url", url, "--model", "m", "-c", "8", "-n", "16", "--json", "-q",
       "--telemetry", "off", "--timeout", "0.3", "--runs-root", (dir_ / "runs").string()},
      (dir_ / "run.out").string(), (dir_ / "run.err").string());
  ASSERT_EQ(run.wait(std::chrono::seconds(60)), 3) << run.err();
  const json::object summary = json::parse(run.out()).as_object();
  const fs::path record(std::string(summary.at("record_dir").as_string()));
  std::ifstream lines(record / "requests.jsonl");
  std::string line;
  while (std::getline(lines, line)) {
    const json::object r = json::parse(line).as_object();
    ASSERT_EQ(r.at("error").at("category").as_string(), "timeout") << line;
    const double took =
        static_cast<double>(r.at("done_ns").as_int64() - r.at("sent_ns").as_int64()) / 1e9;
    // Before reads were bounded per turn, these fired 0.15-0.26 s late here (4-8 s late
    // against a faster flood); now within ~10 ms.
    EXPECT_GE(took, 0.3);
    EXPECT_LT(took, 0.42) << "the timeout fired late";
  }
  dyno::testing::expect_records_conform(dir_ / "runs");
}

/// A `dyno sim` on a port of the test's choosing (so that a second one can take its place).
std::unique_ptr<Child> start_sim(const fs::path& dir, int port, const std::string& name) {
  auto sim = std::make_unique<Child>(
      std::vector<std::string>{DYNO_BINARY, "sim", "--port", std::to_string(port), "--profile",
                               "small-gpu"},
      (dir / (name + ".out")).string(), (dir / (name + ".err")).string());
  sim->wait_for_output("listening on");
  return sim;
}

/// `dyno sim` can produce each case of the server's word: its in-stream errors and unfinished
/// answers are counted by category and message, whatever else the run does.
TEST_F(Hostile, SimFaultsAreCountedAsTheServersWord) {
  const int port = dyno::testing::free_loopback_port();
  Child sim({DYNO_BINARY, "sim", "--port", std::to_string(port), "--profile", "small-gpu",
             "--fault-error", "3", "--fault-error-form", "field", "--fault-unfinished", "5",
             "--fault-unfinished-end", "eof"},
            (dir_ / "sim.out").string(), (dir_ / "sim.err").string());
  sim.wait_for_output("listening on");
  Child run({DYNO_BINARY,
             "run",
             "--url",
             "http://127.0.0.1:" + std::to_string(port) + "/v1",
             "--model",
             "dyno-sim",
             "-c",
             "4",
             "-n",
             "30",
             "--output-tokens",
             "16",
             "--json",
             "-q",
             "--telemetry",
             "off",
             "--error-budget",
             "1",
             "--runs-root",
             (dir_ / "runs").string()},
            (dir_ / "run.out").string(), (dir_ / "run.err").string());
  ASSERT_EQ(run.wait(std::chrono::seconds(60)), 0) << run.err();
  const json::object summary = json::parse(run.out()).as_object();
  const json::object& requests = summary.at("requests").as_object();
  // Arrivals 3, 6, …, 30 (10) end in the error; 5, 10, 20, 25 (4) without a finish reason.
  EXPECT_EQ(requests.at("errors_by_category").at("server_error").as_int64(), 10);
  EXPECT_EQ(requests.at("errors_by_category").at("unfinished").as_int64(), 4);
  EXPECT_EQ(requests.at("ok").as_int64(), 16);
  EXPECT_EQ(requests.at("errors_by_message").at(0).at("message").as_string(),
            "server_error: injected fault: out of KV cache");
}

/// A server at --url that is gone: dyno stops sending after --unreachable-after of connect
/// failures with no answer, ends the run `target_unreachable` (exit 3) with one line on stderr,
/// and keeps what it measured; it neither hammers the port nor walks the rest of -n.
TEST_F(Hostile, AServerThatIsGoneEndsTheRunTargetUnreachable) {
  const int port = dyno::testing::free_loopback_port();
  auto sim = start_sim(dir_, port, "sim");
  Child run({DYNO_BINARY,
             "run",
             "--url",
             "http://127.0.0.1:" + std::to_string(port) + "/v1",
             "--model",
             "dyno-sim",
             "-c",
             "4",
             "-n",
             "2000",
             "--output-tokens",
             "16",
             "--json",
             "-q",
             "--telemetry",
             "off",
             "--unreachable-after",
             "1",
             "--runs-root",
             (dir_ / "runs").string()},
            (dir_ / "run.out").string(), (dir_ / "run.err").string());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  sim->signal(SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  const int code = run.wait(std::chrono::seconds(60));
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  ASSERT_EQ(code, 3) << run.err();
  EXPECT_LT(took, 8.0) << "the run went on long after the server was gone";
  EXPECT_NE(run.err().find("dyno: target unreachable:"), std::string::npos) << run.err();
  const json::object summary = json::parse(run.out()).as_object();
  EXPECT_EQ(summary.at("status").as_string(), "target_unreachable");
  const fs::path record(std::string(summary.at("record_dir").as_string()));
  std::ifstream lines(record / "requests.jsonl");
  std::string line;
  int ok = 0, connect = 0, lines_n = 0;
  while (std::getline(lines, line)) {
    ++lines_n;
    const json::object r = json::parse(line).as_object();
    if (r.at("status").as_string() == "ok") ++ok;
    if (r.at("status").as_string() == "cancelled") {
      EXPECT_NE(std::string(r.at("error").at("message").as_string()).find("not sent"),
                std::string::npos)
          << line;
      EXPECT_TRUE(r.at("sent_ns").is_null()) << line;
    }
    if (!r.at("error").is_null() && r.at("error").at("category").as_string() == "connect") {
      ++connect;
    }
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(connect, 0);
  // Refused connects pause their slot (20 ms doubling to 1 s): a few dozen at most in 1 s.
  EXPECT_LT(connect, 200) << "the closed port was hammered";
  EXPECT_LT(lines_n, 2000);
  Child verify({DYNO_BINARY, "runs", "verify", record.filename().string(), "--runs-root",
                (dir_ / "runs").string()},
               (dir_ / "verify.out").string(), (dir_ / "verify.err").string());
  EXPECT_EQ(verify.wait(std::chrono::seconds(60)), 0) << verify.out() << verify.err();
}

/// A server that comes back within --unreachable-after is not cut off: the run goes on to its
/// end, the requests of the gap counted as the failures they were.
TEST_F(Hostile, AServerThatComesBackWithinTheWindowIsNotCutOff) {
  const int port = dyno::testing::free_loopback_port();
  auto sim = start_sim(dir_, port, "sim1");
  Child run({DYNO_BINARY,
             "run",
             "--url",
             "http://127.0.0.1:" + std::to_string(port) + "/v1",
             "--model",
             "dyno-sim",
             "-c",
             "2",
             "--duration",
             "5",
             "--output-tokens",
             "16",
             "--json",
             "-q",
             "--telemetry",
             "off",
             "--unreachable-after",
             "4",
             "--error-budget",
             "1",
             "--runs-root",
             (dir_ / "runs").string()},
            (dir_ / "run.out").string(), (dir_ / "run.err").string());
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  sim->signal(SIGKILL);
  sim->wait(std::chrono::seconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  auto back = start_sim(dir_, port, "sim2");
  ASSERT_EQ(run.wait(std::chrono::seconds(60)), 0) << run.err();
  const json::object summary = json::parse(run.out()).as_object();
  EXPECT_EQ(summary.at("status").as_string(), "partial") << run.out();
  EXPECT_EQ(run.err().find("target unreachable"), std::string::npos) << run.err();
  const json::object& requests = summary.at("requests").as_object();
  EXPECT_GT(requests.at("failed").as_int64(), 0);
  EXPECT_GT(requests.at("ok").as_int64(), 0);
  // Answers came after the server was back: the last request to end is ok.
  const fs::path record(std::string(summary.at("record_dir").as_string()));
  std::ifstream lines(record / "requests.jsonl");
  std::string line, last_ok;
  std::int64_t latest_ok_done = 0, latest_fail_done = 0;
  while (std::getline(lines, line)) {
    const json::object r = json::parse(line).as_object();
    if (r.at("done_ns").is_null()) continue;
    const std::int64_t done = r.at("done_ns").as_int64();
    if (r.at("status").as_string() == "ok") latest_ok_done = std::max(latest_ok_done, done);
    if (r.at("status").as_string() == "error") latest_fail_done = std::max(latest_fail_done, done);
  }
  EXPECT_GT(latest_ok_done, latest_fail_done);
}

/// SIGTERM is answered within a fraction of a second even while a server floods the loop.
TEST_F(Hostile, SignalIsAnsweredWhileAServerFloods) {
  const std::string url = start_server("endless");
  Child run({DYNO_BINARY, "run", "--url", url, "--model", "m", "-c", "4", "--duration", "60",
             "--json", "-q", "--telemetry", "off", "--runs-root", (dir_ / "runs").string()},
            (dir_ / "run.out").string(), (dir_ / "run.err").string());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const auto sent = std::chrono::steady_clock::now();
  run.signal(SIGTERM);
  const int code = run.wait(std::chrono::seconds(30));
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  EXPECT_EQ(code, 130) << run.err();
  // Answered within 0.2 s by the loop; the rest is writing the record (a busy 2-core machine).
  EXPECT_LT(took, 3.0);
  dyno::testing::expect_records_conform(dir_ / "runs");
}

}  // namespace
