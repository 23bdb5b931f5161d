// dyno against a server that echoes what it was sent and answers with hostile text: the API
// key in a 401 body, in streamed text (split across two token events) and in an identity
// answer; bytes that are not UTF-8 in an error body; terminal escape sequences in its version
// and model name. The key reaches no file under the runs root (index and a published copy
// included) and no output; the record verifies; the listing shows the escapes, not sends them.
// The server is this test's own: plain POSIX sockets on loopback, one connection at a time.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/json.hpp>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "integration/process.h"
#include "integration/record_check.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::testing::Child;

namespace {

constexpr const char* kKey = "sk-echo-Zq81xT-secret";

/// The server: each connection carries one request and gets one answer, then is closed.
class EchoServer {
 public:
  EchoServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;  // a free port, chosen by the kernel
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 16) != 0) {
      throw std::runtime_error("cannot listen on loopback");
    }
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~EchoServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  int completions() const { return completions_; }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      timeval tv{5, 0};
      ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      std::string request;
      if (read_request(c, request)) send_all(c, answer(request));
      ::close(c);
    }
  }

  static bool read_request(int c, std::string& request) {
    char buf[4096];
    std::size_t body_at = std::string::npos;
    std::size_t length = 0;
    for (;;) {
      if (body_at != std::string::npos && request.size() >= body_at + length) return true;
      const ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) return false;
      request.append(buf, static_cast<std::size_t>(n));
      if (body_at == std::string::npos) {
        const auto end = request.find("\r\n\r\n");
        if (end == std::string::npos) continue;
        body_at = end + 4;
        std::string head = request.substr(0, end);
        for (auto& ch : head) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        const auto cl = head.find("content-length:");
        if (cl != std::string::npos) length = std::stoul(head.substr(cl + 15));
      }
    }
  }

  static void send_all(int c, const std::string& bytes) {
    std::size_t off = 0;
    while (off < bytes.size()) {
      const ssize_t n = ::send(c, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return;
      off += static_cast<std::size_t>(n);
    }
  }

  static std::string response(int status, const std::string& type, const std::string& body) {
    return "HTTP/1.1 " + std::to_string(status) + (status == 200 ? " OK" : " Error") +
           "\r\nContent-Type: " + type + "\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\nConnection: close\r\n\r\n" + body;
  }

  static std::string chunk(const std::string& content) {
    return "data: " +
           json::serialize(json::object{
               {"id", "c1"},
               {"object", "chat.completion.chunk"},
               {"choices", json::array{json::object{{"index", 0},
                                                    {"delta", json::object{{"content", content}}},
                                                    {"finish_reason", nullptr}}}}}) +
           "\n\n";
  }

  std::string answer(const std::string& request) {
    const std::string line = request.substr(0, request.find("\r\n"));
    std::string auth;  // the Authorization header's value, echoed back
    if (const auto at = request.find("Authorization: "); at != std::string::npos) {
      auth = request.substr(at + 15, request.find("\r\n", at) - at - 15);
    }
    if (line.starts_with("GET /version ")) {
      return response(200, "application/json",
                      R"({"version":"6.6.6\u001b]0;owned\u0007\u001b[2J","engine":"echo"})");
    }
    if (line.starts_with("GET /props ")) {  // an identity answer that repeats the header
      return response(200, "application/json", json::serialize(json::object{{"seen", auth}}));
    }
    if (line.starts_with("GET /v1/models ")) {
      return response(200, "application/json",
                      R"({"data":[{"id":"echo-model\u001b[31m","owned_by":"echo"}]})");
    }
    if (!line.starts_with("POST /v1/chat/completions ")) return response(404, "text/plain", "no");
    const int n = completions_++;
    if (n == 0) {
      return response(401, "application/json",
                      json::serialize(json::object{
                          {"error", json::object{{"message", "Incorrect API key provided: " + auth},
                                                 {"type", "invalid_request_error"}}}}));
    }
    if (n == 1) {  // an error page in Latin-1, with the key in it
      return response(500, "text/plain", "erreur interne \xE9t\xE9 \xFF key=" + auth);
    }
    // The key split across two token events: only the joined text holds it whole.
    const std::string key = kKey;
    std::string body =
        chunk("you sent ") + chunk(key.substr(0, 9)) + chunk(key.substr(9)) + chunk(" ok") +
        "data: " +
        json::serialize(json::object{
            {"id", "c1"},
            {"object", "chat.completion.chunk"},
            {"choices", json::array{json::object{
                            {"index", 0}, {"delta", json::object{}}, {"finish_reason", "stop"}}}},
            {"usage",
             json::object{{"prompt_tokens", 5}, {"completion_tokens", 4}, {"total_tokens", 9}}}}) +
        "\n\ndata: [DONE]\n\n";
    return response(200, "text/event-stream", body);
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> completions_{0};
  std::thread thread_;
};

struct Result {
  int code = -1;
  std::string out;
  std::string err;
};

class EchoServerTest : public ::testing::Test {
 protected:
  Result dyno(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {DYNO_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    const std::string n = std::to_string(results_.size());
    Child c(argv, (tmp_ / ("out" + n)).string(), (tmp_ / ("err" + n)).string(),
            {{"DYNO_API_KEY", kKey}});
    Result r;
    r.code = c.wait(std::chrono::seconds(120));
    r.out = c.out();
    r.err = c.err();
    results_.push_back(r);
    return r;
  }

  dyno::testing::TempDir tmp_{"dyno-echo"};
  std::vector<Result> results_;
};

TEST_F(EchoServerTest, TheEchoedKeyReachesNoFileAndNoOutputAndTheRecordVerifies) {
  EchoServer server;
  const fs::path root = tmp_ / "runs";
  const Result run = dyno({"run", "-q", "--telemetry", "off", "--runs-root", root.string(), "--url",
                           server.url(), "--model", "echo\xFF\xFEmodel", "-n", "4", "-c", "1",
                           "--keep-outputs", "--error-budget", "1", "--json"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(server.completions(), 4);
  const std::string id(json::parse(run.out).at("run_id").as_string());
  const fs::path dir = root / id;

  // Every request line, and the warning that some text was not UTF-8.
  std::vector<json::object> lines;
  {
    std::istringstream in(Child::slurp((dir / "requests.jsonl").string()));
    std::string line;
    while (std::getline(in, line)) lines.push_back(json::parse(line).as_object());
  }
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].at("http_status").as_int64(), 401);
  EXPECT_NE(json::serialize(lines[0]).find("<scrubbed:secret>"), std::string::npos)
      << json::serialize(lines[0]);
  EXPECT_EQ(lines[1].at("http_status").as_int64(), 500);
  EXPECT_EQ(lines[1].at("invalid_utf8_bytes").as_int64(), 3) << json::serialize(lines[1]);
  EXPECT_EQ(lines[2].at("output_text").as_string(), "you sent <scrubbed:secret> ok");
  const json::object manifest =
      json::parse(Child::slurp((dir / "manifest.json").string())).as_object();
  bool warned = false;
  for (const auto& w : manifest.at("warnings").as_array()) {
    warned = warned || w.at("code").as_string() == "invalid_utf8_replaced";
  }
  EXPECT_TRUE(warned) << json::serialize(manifest.at("warnings"));
  EXPECT_NE(run.err.find("invalid_utf8_replaced"), std::string::npos) << run.err;

  const Result verify = dyno({"runs", "verify", "--runs-root", root.string(), id});
  EXPECT_EQ(verify.code, 0) << verify.out << verify.err;
  dyno::testing::expect_records_conform(root);
  const Result list = dyno({"runs", "list", "--runs-root", root.string()});
  EXPECT_EQ(list.code, 0) << list.err;
  EXPECT_EQ(list.out.find('\x1b'), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("6.6.6\\x1b]0;owned\\x07\\x1b[2J"), std::string::npos) << list.out;
  const Result show = dyno({"runs", "show", "--runs-root", root.string(), id});
  EXPECT_EQ(show.out.find('\x1b'), std::string::npos) << show.out;
  const Result publish =
      dyno({"runs", "publish", "--runs-root", root.string(), id, "--out", (tmp_ / "pub").string()});
  EXPECT_EQ(publish.code, 0) << publish.err;

  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(tmp_.path())) {
    if (!e.is_regular_file()) continue;
    ++files;
    EXPECT_EQ(Child::slurp(e.path().string()).find(kKey), std::string::npos) << e.path();
  }
  EXPECT_GE(files, 10);  // the record, the index, the published copy, the outputs
  for (const auto& r : results_) {
    EXPECT_EQ(r.out.find(kKey), std::string::npos);
    EXPECT_EQ(r.err.find(kKey), std::string::npos);
  }
}

}  // namespace
