// Receive floor: what the kernel alone costs per token event on this machine.
//
// A client that only receives — connects, sends the same requests `dyno run` sends in the
// client_ceiling firehose cell (2 per stream, keep-alive, ~2 M token events in all), and reads
// each response's bytes with recvmsg and kernel receive timestamps, parsing nothing and
// recording nothing — against `dyno sim --profile firehose`. Its CPU (user + system of this
// one-threaded process, the reading only) is a floor under any client's, dyno's included:
// a whole-process target above it cannot be met on this machine.
//
// Two ways to receive: `epoll` (one edge-triggered epoll set, recvmsg until a short read: what
// dyno's ReadReactor does) and `uring` (io_uring multishot recvmsg into a provided-buffer ring,
// IORING_SETUP_DEFER_TASKRUN: no readiness syscalls, each completion one read with its own
// timestamp).
//
// Beside each floor cell, `dyno run` receives the same load from a fresh sim of its own (the
// same requests, the whole process's CPU from the kernel's rusage: start-up, the load, the
// record), alternating floor and dyno over the rounds so that a drift of the machine's speed
// touches both; the summary gives the medians and dyno's share of the epoll floor (the way
// dyno receives).
//
// Usage: receive_floor [DYNO_BINARY] [CELL...]
//   CELL: STREAMS (2 requests per stream, 2,000,000 / (2·STREAMS) tokens each) or
//   STREAMS:REQUESTS:TOKENS against the sim, or STREAMS:REQUESTS:TOKENS:burst against a server
//   in this process that writes as fast as the socket takes (many events per segment; e.g.
//   32:128:20000:burst).
//   Default cells: 64 1024 4096 10000. DYNO_FLOOR_ROUNDS (default 3): rounds per cell.
// Prints Markdown tables (docs/performance.md holds the figures and this command).
#include <arpa/inet.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "integration/process.h"

using dyno::testing::Child;

namespace {

struct Stream {
  int fd = -1;
  std::string tail;  // the last bytes seen, to find the chunked body's end across reads
  int left = 0;      // responses still to read
};

struct Cell {
  std::string mode;
  int streams = 0;
  long events = 0;
  long reads = 0;
  long waits = 0;
  double cpu_s = 0;
};

double thread_cpu_s() {
  rusage ru{};
  ::getrusage(RUSAGE_THREAD, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

class Floor {
 public:
  Floor(int port, int streams, int per_stream, int tokens) : tokens_(tokens), streams_(streams) {
    const std::string body = R"({"model":"dyno-sim","prompt":"hello there","max_tokens":)" +
                             std::to_string(tokens) + R"(,"stream":true})";
    request_ =
        "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
        "application/json\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    start_ = thread_cpu_s();
    for (int i = 0; i < streams; ++i) {
      Stream s;
      s.fd = ::socket(AF_INET, SOCK_STREAM, 0);
      const int on = 1;
      ::setsockopt(s.fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
      ::setsockopt(s.fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
      if (::connect(s.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
        throw std::runtime_error("connect failed");
      s.left = per_stream;
      stream_.push_back(std::move(s));
    }
    for (int i = 0; i < streams; ++i) send(i);
  }
  ~Floor() {
    for (const Stream& s : stream_) ::close(s.fd);
  }

  Cell epoll() {
    const int ep = ::epoll_create1(0);
    for (int i = 0; i < streams_; ++i) {
      epoll_event e{};
      e.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
      e.data.u32 = static_cast<std::uint32_t>(i);
      ::epoll_ctl(ep, EPOLL_CTL_ADD, stream_[static_cast<std::size_t>(i)].fd, &e);
    }
    std::vector<char> buffer(256 * 1024);
    std::array<epoll_event, 128> events{};
    Cell cell{"epoll", streams_};
    while (open_ > 0) {
      const int n = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), 10'000);
      if (n <= 0) throw std::runtime_error("no input for 10 s");
      ++cell.waits;
      for (int k = 0; k < n; ++k) {
        const int i = static_cast<int>(events[static_cast<std::size_t>(k)].data.u32);
        for (;;) {
          iovec iov{buffer.data(), buffer.size()};
          alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(timespec))> control{};
          msghdr m{};
          m.msg_iov = &iov;
          m.msg_iovlen = 1;
          m.msg_control = control.data();
          m.msg_controllen = control.size();
          const ssize_t r = ::recvmsg(stream_[static_cast<std::size_t>(i)].fd, &m, MSG_DONTWAIT);
          ++cell.reads;
          if (r <= 0) break;
          consume(i, buffer.data(), static_cast<std::size_t>(r));
          if (static_cast<std::size_t>(r) < buffer.size()) break;
        }
      }
    }
    ::close(ep);
    return finish(cell);
  }

  Cell uring() {
    io_uring ring{};
    io_uring_params p{};
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQSIZE;
    p.cq_entries = 16384;
    if (io_uring_queue_init_params(1024, &ring, &p) != 0)
      throw std::runtime_error("io_uring_queue_init_params failed");
    constexpr unsigned kBuffers = 1024;
    constexpr unsigned kBufferSize = 16 * 1024;
    void* ring_memory = nullptr;
    if (::posix_memalign(&ring_memory, 4096, kBuffers * sizeof(io_uring_buf)) != 0)
      throw std::runtime_error("posix_memalign failed");
    auto* buffers = static_cast<io_uring_buf_ring*>(ring_memory);
    io_uring_buf_ring_init(buffers);
    io_uring_buf_reg reg{};
    reg.ring_addr = reinterpret_cast<std::uintptr_t>(buffers);
    reg.ring_entries = kBuffers;
    reg.bgid = 1;
    if (io_uring_register_buf_ring(&ring, &reg, 0) != 0)
      throw std::runtime_error("io_uring_register_buf_ring failed");
    std::vector<char> memory(std::size_t{kBuffers} * kBufferSize);
    const int mask = io_uring_buf_ring_mask(kBuffers);
    for (unsigned b = 0; b < kBuffers; ++b)
      io_uring_buf_ring_add(buffers, memory.data() + std::size_t{b} * kBufferSize, kBufferSize,
                            static_cast<unsigned short>(b), mask, static_cast<int>(b));
    io_uring_buf_ring_advance(buffers, kBuffers);
    msghdr shape{};
    shape.msg_controllen = CMSG_SPACE(sizeof(timespec));
    const auto arm = [&](int i) {
      io_uring_sqe* sqe = io_uring_get_sqe(&ring);
      if (sqe == nullptr) {
        io_uring_submit(&ring);
        sqe = io_uring_get_sqe(&ring);
      }
      io_uring_prep_recvmsg_multishot(sqe, stream_[static_cast<std::size_t>(i)].fd, &shape, 0);
      sqe->flags |= IOSQE_BUFFER_SELECT;
      sqe->buf_group = 1;
      io_uring_sqe_set_data64(sqe, static_cast<std::uint64_t>(i));
    };
    for (int i = 0; i < streams_; ++i) arm(i);
    Cell cell{"uring", streams_};
    while (open_ > 0) {
      __kernel_timespec limit{10, 0};
      io_uring_cqe* first = nullptr;
      if (io_uring_submit_and_wait_timeout(&ring, &first, 1, &limit, nullptr) < 0)
        throw std::runtime_error("no input for 10 s");
      ++cell.waits;
      io_uring_cqe* cqe = nullptr;
      unsigned head = 0;
      unsigned seen = 0;
      int returned = 0;
      io_uring_for_each_cqe(&ring, head, cqe) {
        ++seen;
        const int i = static_cast<int>(cqe->user_data);
        if ((cqe->flags & IORING_CQE_F_BUFFER) != 0) {
          const unsigned b = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
          char* data = memory.data() + std::size_t{b} * kBufferSize;
          ++cell.reads;
          io_uring_recvmsg_out* out = io_uring_recvmsg_validate(data, cqe->res, &shape);
          if (out != nullptr)
            consume(i, static_cast<char*>(io_uring_recvmsg_payload(out, &shape)),
                    io_uring_recvmsg_payload_length(out, cqe->res, &shape));
          io_uring_buf_ring_add(buffers, data, kBufferSize, static_cast<unsigned short>(b), mask,
                                returned++);
        }
        // A multishot receive ends on an error, end of input or no free buffer: re-arm it.
        if ((cqe->flags & IORING_CQE_F_MORE) == 0 && cqe->res != 0 &&
            stream_[static_cast<std::size_t>(i)].left > 0)
          arm(i);
      }
      io_uring_buf_ring_advance(buffers, returned);
      io_uring_cq_advance(&ring, seen);
    }
    io_uring_queue_exit(&ring);
    std::free(ring_memory);
    return finish(cell);
  }

 private:
  void send(int i) {
    const Stream& s = stream_[static_cast<std::size_t>(i)];
    if (::write(s.fd, request_.data(), request_.size()) != static_cast<ssize_t>(request_.size()))
      throw std::runtime_error("short request write");
    const int on = 1;  // as dyno: leave delayed-ACK mode once per request
    ::setsockopt(s.fd, IPPROTO_TCP, TCP_QUICKACK, &on, sizeof on);
    ++open_;
  }

  void consume(int i, const char* data, std::size_t n) {
    static const std::string kEnd = "\r\n0\r\n\r\n";  // the last chunk of a chunked body
    Stream& s = stream_[static_cast<std::size_t>(i)];
    s.tail.append(data + (n > kEnd.size() ? n - kEnd.size() : 0), std::min(n, kEnd.size()));
    if (s.tail.size() > kEnd.size()) s.tail.erase(0, s.tail.size() - kEnd.size());
    if (s.tail != kEnd) return;
    s.tail.clear();
    --open_;
    events_ += tokens_;
    if (--s.left > 0) send(i);
  }

  Cell finish(Cell cell) const {
    cell.cpu_s = thread_cpu_s() - start_;
    cell.events = events_;
    return cell;
  }

  std::string request_;
  int tokens_;
  int streams_;
  std::vector<Stream> stream_;
  int open_ = 0;
  long events_ = 0;
  double start_ = 0;
};

struct Spec {
  int streams = 0;
  int requests = 0;
  int tokens = 0;
  bool burst = false;  ///< served by BurstServer, not `dyno sim`
};

Spec parse_spec(const std::string& text) {
  Spec spec;
  char server[8] = "";
  const int fields = std::sscanf(text.c_str(), "%d:%d:%d:%7s", &spec.streams, &spec.requests,
                                 &spec.tokens, server);
  if (fields >= 3) {
    if (spec.streams <= 0 || spec.requests % spec.streams != 0 || spec.tokens <= 0)
      throw std::runtime_error("cell " + text + ": REQUESTS must be a multiple of STREAMS");
    if (fields == 4 && std::string(server) != "burst")
      throw std::runtime_error("cell " + text + ": the fourth field can only be `burst`");
    spec.burst = fields == 4;
    return spec;
  }
  spec.streams = std::stoi(text);
  spec.requests = 2 * spec.streams;
  spec.tokens = 2'000'000 / spec.requests;
  return spec;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

class Sim {
 public:
  Sim(const std::string& dyno, const std::string& dir) {
    std::filesystem::create_directories(dir);
    child_ = std::make_unique<Child>(
        std::vector<std::string>{dyno, "sim", "--port", "0", "--profile", "firehose"},
        dir + "/sim.out", dir + "/sim.err");
    std::smatch m;
    const std::string out = child_->wait_for_output("/v1");
    if (!std::regex_search(out, m, std::regex(":([0-9]+)/v1")))
      throw std::runtime_error("the sim printed no address");
    port_ = std::stoi(m[1]);
  }
  ~Sim() {
    child_->signal(SIGTERM);
    child_->wait(std::chrono::seconds(30));
  }
  int port() const { return port_; }

 private:
  std::unique_ptr<Child> child_;
  int port_ = 0;
};

// A server that writes as fast as the socket takes, many events to a segment: each answer is
// rendered once (TOKENS chat chunks whose content differs, a finish chunk with usage, [DONE]) and
// sent as one chunk of a chunked body with blocking writes of up to 256 KiB, one thread per
// connection; any other request gets a 404. What `dyno sim`'s firehose is not: the sim writes at
// most 16 events at a time.
class BurstServer {
 public:
  explicit BurstServer(int tokens) {
    std::string body;
    for (int i = 0; i < tokens; ++i) {
      body += R"(data: {"id":"chatcmpl-burst","object":"chat.completion.chunk","created":)"
              R"(1795987651,"model":"dyno-sim","choices":[{"index":0,"delta":{"content":" w)" +
              std::to_string(i % 1000) + R"("},"logprobs":null,"finish_reason":null}]})" + "\n\n";
    }
    body += R"(data: {"id":"chatcmpl-burst","object":"chat.completion.chunk","created":)"
            R"(1795987651,"model":"dyno-sim","choices":[{"index":0,"delta":{},"logprobs":null,)"
            R"("finish_reason":"length"}],"usage":{"prompt_tokens":16,"completion_tokens":)" +
            std::to_string(tokens) + "}}\n\ndata: [DONE]\n\n";
    char size[32];
    std::snprintf(size, sizeof size, "%zx", body.size());
    answer_ =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
        std::string(size) + "\r\n" + body + "\r\n0\r\n\r\n";
    listen_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof a;
    if (::bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(listen_, 4096) != 0 ||
        ::getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &length) != 0)
      throw std::runtime_error("the burst server cannot listen");
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] {
      for (;;) {
        const int fd = ::accept(listen_, nullptr, nullptr);
        if (fd < 0) return;
        std::lock_guard lock(mu_);
        workers_.emplace_back([this, fd] { serve(fd); });
      }
    });
  }
  ~BurstServer() {
    ::shutdown(listen_, SHUT_RDWR);
    ::close(listen_);
    acceptor_.join();
    std::lock_guard lock(mu_);
    for (std::thread& t : workers_) t.join();  // each ends when its client closes
  }
  int port() const { return port_; }

 private:
  void serve(int fd) {
    static const std::string kNotFound = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
    std::string in;
    std::array<char, 65536> buffer{};
    for (;;) {
      std::size_t head_end = 0;
      std::size_t need = 0;
      for (;;) {
        head_end = in.find("\r\n\r\n");
        if (head_end != std::string::npos) {
          const std::size_t at = in.find("Content-Length:");
          need = head_end + 4 +
                 (at != std::string::npos && at < head_end ? std::stoul(in.substr(at + 15)) : 0);
          if (in.size() >= need) break;
        }
        const ssize_t n = ::read(fd, buffer.data(), buffer.size());
        if (n <= 0) {
          ::close(fd);
          return;
        }
        in.append(buffer.data(), static_cast<std::size_t>(n));
      }
      const bool answer = in.rfind("POST ", 0) == 0 && in.find("completions") < head_end;
      in.erase(0, need);
      const std::string& reply = answer ? answer_ : kNotFound;
      for (std::size_t sent = 0; sent < reply.size();) {
        const ssize_t n =
            ::send(fd, reply.data() + sent, std::min<std::size_t>(reply.size() - sent, 256 << 10),
                   MSG_NOSIGNAL);
        if (n <= 0) {
          ::close(fd);
          return;
        }
        sent += static_cast<std::size_t>(n);
      }
    }
  }

  std::string answer_;
  int listen_ = -1;
  int port_ = 0;
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> workers_;
};

// The cell's server: a fresh `dyno sim --profile firehose`, or a BurstServer.
class Server {
 public:
  Server(const std::string& dyno, const std::string& dir, const Spec& spec) {
    std::filesystem::create_directories(dir);
    if (spec.burst) {
      burst_ = std::make_unique<BurstServer>(spec.tokens);
    } else {
      sim_ = std::make_unique<Sim>(dyno, dir);
    }
  }
  int port() const { return burst_ ? burst_->port() : sim_->port(); }

 private:
  std::unique_ptr<Sim> sim_;
  std::unique_ptr<BurstServer> burst_;
};

// `dyno run` of the cell: token events and the whole process's CPU seconds.
std::pair<long, double> dyno_cell(const std::string& dyno, const std::string& dir,
                                  const Spec& spec) {
  Server sim(dyno, dir, spec);
  std::filesystem::remove_all(dir + "/runs");
  Child run({dyno,
             "run",
             "--json",
             "-q",
             "--runs-root",
             dir + "/runs",
             "--error-budget",
             "1",
             "--url",
             "http://127.0.0.1:" + std::to_string(sim.port()) + "/v1",
             "--model",
             "dyno-sim",
             "-c",
             std::to_string(spec.streams),
             "-n",
             std::to_string(spec.requests),
             "--output-tokens",
             std::to_string(spec.tokens),
             "--input-tokens",
             "16"},
            dir + "/run.out", dir + "/run.err");
  const int rc = run.wait(std::chrono::seconds(600));
  if (rc != 0 && rc != 3)  // 3: a warning's exit (the firehose saturates the client on purpose)
    throw std::runtime_error("dyno run exited " + std::to_string(rc) + ": " + run.err());
  // Token events as the run counted them (output tokens over tokens per event, as
  // client_ceiling); a request that failed would show as fewer.
  const boost::json::object summary = boost::json::parse(run.out()).as_object();
  const double out_tokens = summary.at("tokens").at("output_total").to_number<double>();
  const double per_event = summary.at("tokens").at("tokens_per_event").to_number<double>();
  return {std::lround(out_tokens / per_event), run.cpu_seconds()};
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dyno = argc > 1 ? argv[1] : "build/src/app/dyno";
  std::vector<Spec> cells;
  for (int i = 2; i < argc; ++i) cells.push_back(parse_spec(argv[i]));
  if (cells.empty())
    for (const char* c : {"64", "1024", "4096", "10000"}) cells.push_back(parse_spec(c));
  const char* rounds_env = std::getenv("DYNO_FLOOR_ROUNDS");
  const int rounds = rounds_env != nullptr ? std::max(1, std::atoi(rounds_env)) : 3;
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &files);
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("dyno-receive-floor-" + std::to_string(::getpid())))
                              .string();
  std::printf(
      "| streams | requests × tokens | round | receiver | token events | reads | events / read "
      "| CPU s | events / CPU-s |\n|---:|---|---:|---|---:|---:|---:|---:|---:|\n");
  struct Rates {
    std::vector<double> epoll, uring, dyno;
  };
  std::vector<Rates> rates(cells.size());
  for (std::size_t k = 0; k < cells.size(); ++k) {
    const Spec& spec = cells[k];
    for (int round = 1; round <= rounds; ++round) {
      // Alternate the order each round: floor first, then dyno first.
      std::vector<std::string> order = {"epoll", "dyno", "uring"};
      if (round % 2 == 0) order = {"dyno", "uring", "epoll"};
      for (const std::string& who : order) {
        long events = 0;
        double cpu_s = 0;
        long reads = 0;
        if (who == "dyno") {
          std::tie(events, cpu_s) = dyno_cell(dyno, dir, spec);
          rates[k].dyno.push_back(static_cast<double>(events) / cpu_s);
        } else {
          Server sim(dyno, dir, spec);
          Cell cell;
          {
            Floor floor(sim.port(), spec.streams, spec.requests / spec.streams, spec.tokens);
            cell = who == "epoll" ? floor.epoll() : floor.uring();
          }
          events = cell.events;
          cpu_s = cell.cpu_s;
          reads = cell.reads;
          (who == "epoll" ? rates[k].epoll : rates[k].uring)
              .push_back(static_cast<double>(events) / cpu_s);
        }
        char per_read[32] = "";
        if (reads > 0)
          std::snprintf(per_read, sizeof per_read, "%.1f",
                        static_cast<double>(events) / static_cast<double>(reads));
        std::printf("| %d | %d × %d | %d | %s | %ld | %s | %s | %.3f | %.2f M |\n", spec.streams,
                    spec.requests, spec.tokens, round,
                    who == "dyno" ? "dyno, whole process" : who.c_str(), events,
                    reads > 0 ? std::to_string(reads).c_str() : "", per_read, cpu_s,
                    static_cast<double>(events) / cpu_s / 1e6);
        std::fflush(stdout);
      }
    }
  }
  std::printf(
      "\nMedians over %d rounds (events per CPU-second; dyno: the whole process)\n\n"
      "| streams | requests × tokens | floor, epoll | floor, io_uring | dyno | dyno / epoll "
      "floor | dyno / io_uring floor |\n|---:|---|---:|---:|---:|---:|---:|\n",
      rounds);
  for (std::size_t k = 0; k < cells.size(); ++k) {
    const double e = median(rates[k].epoll);
    const double u = median(rates[k].uring);
    const double d = median(rates[k].dyno);
    std::printf("| %d | %d × %d | %.2f M | %.2f M | %.2f M | %.0f %% | %.0f %% |\n",
                cells[k].streams, cells[k].requests, cells[k].tokens, e / 1e6, u / 1e6, d / 1e6,
                100 * d / e, 100 * d / u);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
