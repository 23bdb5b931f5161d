// `dyno stream make` end to end against `dyno sim` in another process: exact lengths, checked
// by re-tokenizing what was written and by the run record of `dyno run --stream`.
#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "integration/json_files.h"
#include "integration/process.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
namespace asio = boost::asio;
namespace http = boost::beast::http;
using dyno::testing::Child;
using dyno::testing::read_jsonl;

class StreamMake : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = dyno::testing::make_temp_dir("dyno-sm");
    sim_ = std::make_unique<Child>(
        std::vector<std::string>{DYNO_BINARY, "sim", "--port", "0", "--profile", "firehose"},
        (dir_ / "sim.out").string(), (dir_ / "sim.err").string());
    const std::string out = sim_->wait_for_output("/v1");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(out, m, std::regex("listening on (http://[0-9.]+:([0-9]+)/v1)")))
        << out;
    url_ = m[1];
    port_ = static_cast<std::uint16_t>(std::stoi(m[2]));
  }
  void TearDown() override {
    sim_->signal(SIGTERM);
    sim_->wait(std::chrono::seconds(10));
    if (!HasFailure()) fs::remove_all(dir_);
  }

  int dyno(const std::vector<std::string>& args, std::string* out = nullptr,
           std::string* err = nullptr) {
    std::vector<std::string> argv = {DYNO_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    Child c(argv, (dir_ / "cmd.out").string(), (dir_ / "cmd.err").string());
    const int rc = c.wait();
    if (out) *out = c.out();
    if (err) *err = c.err();
    return rc;
  }

  // The sim's /tokenize count of a written request (chat via its messages).
  std::int64_t tokenize(const json::object& request) {
    json::object body{{"model", "dyno-sim"}};
    if (request.contains("messages")) {
      body["messages"] = request.at("messages");
    } else {
      body["prompt"] = request.at("prompt");
    }
    asio::io_context io;
    asio::ip::tcp::socket socket(io);
    socket.connect({asio::ip::make_address("127.0.0.1"), port_});
    http::request<http::string_body> req{http::verb::post, "/tokenize", 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::content_type, "application/json");
    req.body() = json::serialize(body);
    req.prepare_payload();
    http::write(socket, req);
    boost::beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(socket, buffer, res);
    return json::parse(res.body()).at("count").to_number<std::int64_t>();
  }

  fs::path dir_;
  std::unique_ptr<Child> sim_;
  std::string url_;
  std::uint16_t port_ = 0;
};

TEST_F(StreamMake, ExactLengthsEndToEnd) {
  struct Case {
    std::string api;
    std::int64_t target;
  };
  const std::vector<Case> cases = {
      {"completions", 1}, {"completions", 64}, {"completions", 300}, {"chat", 64}, {"chat", 300}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.api + " " + std::to_string(c.target));
    const std::string file = (dir_ / (c.api + std::to_string(c.target) + ".jsonl")).string();
    const std::vector<std::string> args = {"stream",
                                           "make",
                                           "--url",
                                           url_,
                                           "--model",
                                           "dyno-sim",
                                           "--count",
                                           "20",
                                           "--input-tokens",
                                           std::to_string(c.target),
                                           "--output-tokens",
                                           "4",
                                           "--seed",
                                           "3",
                                           "--api",
                                           c.api,
                                           "--json",
                                           "-o",
                                           file};
    std::string out;
    std::string err;
    ASSERT_EQ(dyno(args, &out, &err), 0) << out << err;
    const json::object report = json::parse(out).as_object();
    EXPECT_EQ(report.at("ok"), true);
    EXPECT_EQ(report.at("tokenizer"), "vllm");
    const json::array& rows = report.at("requests").as_array();
    ASSERT_EQ(rows.size(), 20u);
    for (const json::value& row : rows) {
      EXPECT_EQ(row.at("achieved").to_number<std::int64_t>(), c.target) << json::serialize(row);
    }
    // Re-tokenize what was written.
    const auto requests = read_jsonl(file);
    ASSERT_EQ(requests.size(), 20u);
    for (const json::object& r : requests) {
      EXPECT_EQ(tokenize(r), c.target) << json::serialize(r);
      EXPECT_EQ(r.at("min_tokens").to_number<std::int64_t>(), 4);
    }
    // Same seed twice: byte-identical files.
    const std::string again = (dir_ / "again.jsonl").string();
    std::vector<std::string> args2 = args;
    args2.back() = again;
    ASSERT_EQ(dyno(args2), 0);
    EXPECT_EQ(Child::slurp(file), Child::slurp(again));
    EXPECT_EQ(json::parse(out).at("canonical_sha256"), report.at("canonical_sha256"));

    // The run record agrees: every request's input_tokens is the target.
    std::string run_out;
    ASSERT_EQ(dyno({"run", "--url", url_, "--model", "dyno-sim", "--api", c.api, "--stream", file,
                    "-n", "20", "-c", "4", "-q", "--json", "--runs-root", (dir_ / "runs").string()},
                   &run_out, &err),
              0)
        << run_out << err;
    const json::object summary = json::parse(run_out).as_object();
    const fs::path record = std::string(summary.at("record_dir").as_string());
    const auto lines = read_jsonl(record / "requests.jsonl");
    ASSERT_EQ(lines.size(), 20u);
    for (const json::object& line : lines) {
      EXPECT_EQ(line.at("input_tokens").to_number<std::int64_t>(), c.target)
          << json::serialize(line);
    }
  }
}

TEST_F(StreamMake, ImpossibleTargetsAndBadFlagsFail) {
  // The sim's chat template alone is 19 tokens: 1 cannot be hit, and the error says which.
  std::string out;
  std::string err;
  EXPECT_NE(dyno({"stream", "make", "--url", url_, "--model", "dyno-sim", "--count", "2",
                  "--input-tokens", "1", "--output-tokens", "4", "-o", (dir_ / "x.jsonl").string()},
                 &out, &err),
            0);
  EXPECT_NE(err.find("request 0"), std::string::npos) << err;
  EXPECT_EQ(dyno({"stream", "make", "--url", url_, "--count", "2", "--input-tokens", "8",
                  "--output-tokens", "4", "-o", (dir_ / "x.jsonl").string()},
                 &out, &err),
            2);
  EXPECT_NE(err.find("--model"), std::string::npos) << err;
  EXPECT_EQ(dyno({"stream", "make", "--count", "2", "--input-tokens", "8", "--output-tokens", "4",
                  "--shared-prefix", "8", "-o", (dir_ / "x.jsonl").string()},
                 &out, &err),
            2);
  EXPECT_NE(err.find("--shared-prefix"), std::string::npos) << err;
  // Embedded sim (no --url): said so in the output.
  EXPECT_EQ(dyno({"stream", "make", "--count", "2", "--input-tokens", "40", "--output-tokens", "4",
                  "--shared-prefix", "30", "-o", (dir_ / "e.jsonl").string()},
                 &out, &err),
            0)
      << err;
  EXPECT_NE(out.find("embedded dyno sim"), std::string::npos) << out;
  EXPECT_NE(out.find("2/2 requests hit"), std::string::npos) << out;
}

}  // namespace
