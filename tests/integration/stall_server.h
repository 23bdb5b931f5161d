// A tiny OpenAI-compatible server for tests of what dyno does when finishing a run hangs:
// chat completions stream a few tokens and end; GET /metrics answers until stall_metrics() is
// called, then holds every later /metrics request open until the server stops. Plain POSIX
// sockets, one thread per connection; loopback only.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace dyno::testing {

class StallServer {
 public:
  StallServer() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(listen_fd_, 64) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw std::runtime_error("StallServer: cannot listen");
    }
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~StallServer() {
    stop_.store(true);
    acceptor_.join();
    std::lock_guard lock(mu_);
    for (auto& t : workers_) t.join();
    ::close(listen_fd_);
  }
  StallServer(const StallServer&) = delete;
  StallServer& operator=(const StallServer&) = delete;

  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  void stall_metrics() { stall_.store(true); }
  int stalled_metrics_requests() const { return stalled_.load(); }

 private:
  bool wait_readable(int fd) const {
    while (!stop_.load()) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) > 0) return true;
    }
    return false;
  }

  void accept_loop() {
    while (wait_readable(listen_fd_)) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      std::lock_guard lock(mu_);
      workers_.emplace_back([this, fd] {
        serve(fd);
        ::close(fd);
      });
    }
  }

  static bool send_all(int fd, const std::string& s) {
    std::size_t off = 0;
    while (off < s.size()) {
      const ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<std::size_t>(n);
    }
    return true;
  }

  static std::string chunk(const std::string& data) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    return size + data + "\r\n";
  }

  void serve(int fd) {
    std::string in;
    char buf[8192];
    for (;;) {  // keep-alive: one request after another
      std::size_t end = 0;
      while ((end = in.find("\r\n\r\n")) == std::string::npos) {
        if (!wait_readable(fd)) return;
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) return;
        in.append(buf, static_cast<std::size_t>(n));
      }
      const std::string head = in.substr(0, end);
      std::size_t body = 0;
      const auto cl = head.find("Content-Length:");
      if (cl != std::string::npos) body = std::stoul(head.substr(cl + 15));
      while (in.size() < end + 4 + body) {
        if (!wait_readable(fd)) return;
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) return;
        in.append(buf, static_cast<std::size_t>(n));
      }
      in.erase(0, end + 4 + body);
      if (head.rfind("POST /v1/chat/completions", 0) == 0) {
        if (!stream_tokens(fd)) return;
      } else if (head.rfind("GET /metrics", 0) == 0) {
        if (stall_.load()) {
          ++stalled_;
          while (!stop_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
          return;
        }
        const std::string text = "# TYPE stall_requests counter\nstall_requests 1\n";
        if (!send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
                              std::to_string(text.size()) + "\r\n\r\n" + text)) {
          return;
        }
      } else if (!send_all(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")) {
        return;
      }
    }
  }

  bool stream_tokens(int fd) {
    if (!send_all(fd,
                  "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                  "Transfer-Encoding: chunked\r\n\r\n")) {
      return false;
    }
    const std::string head = R"(data: {"id":"s","object":"chat.completion.chunk","model":"m",)";
    for (int i = 0; i < 4; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
      if (stop_.load() ||
          !send_all(fd, chunk(head + R"("choices":[{"index":0,"delta":{"content":"tok "},)" +
                              R"("finish_reason":null}]})" + "\n\n"))) {
        return false;
      }
    }
    return send_all(fd, chunk(head + R"("choices":[{"index":0,"delta":{},)" +
                              R"("finish_reason":"length"}]})" + "\n\n")) &&
           send_all(fd, chunk(head + R"("choices":[],"usage":{"prompt_tokens":3,)" +
                              R"("completion_tokens":4,"total_tokens":7}})" + "\n\n")) &&
           send_all(fd, chunk("data: [DONE]\n\n")) && send_all(fd, "0\r\n\r\n");
  }

  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> stall_{false};
  std::atomic<int> stalled_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> workers_;
};

}  // namespace dyno::testing
