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
// Usage: receive_floor [DYNO_BINARY] [streams...]   (default streams: 64 1024 4096 10000)
// Prints a Markdown table (docs/performance.md holds the figures and this command).
#include <arpa/inet.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <regex>
#include <stdexcept>
#include <string>
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
  Floor(int port, int streams, int tokens) : tokens_(tokens), streams_(streams) {
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
      s.left = 2;
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

}  // namespace

int main(int argc, char** argv) {
  const std::string dyno = argc > 1 ? argv[1] : "build/src/app/dyno";
  std::vector<int> streams;
  for (int i = 2; i < argc; ++i) streams.push_back(std::stoi(argv[i]));
  if (streams.empty()) streams = {64, 1024, 4096, 10000};
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &files);
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("dyno-receive-floor-" + std::to_string(::getpid())))
                              .string();
  std::printf(
      "| streams | receive | token events | reads | waits | CPU s | events / CPU-s | events / "
      "read |\n|---:|---|---:|---:|---:|---:|---:|---:|\n");
  for (const int c : streams) {
    for (const char* mode : {"epoll", "uring"}) {
      std::filesystem::create_directories(dir);
      Child sim({dyno, "sim", "--port", "0", "--profile", "firehose"}, dir + "/sim.out",
                dir + "/sim.err");
      std::smatch m;
      const std::string out = sim.wait_for_output("/v1");
      if (!std::regex_search(out, m, std::regex(":([0-9]+)/v1"))) return 1;
      const int tokens = 2'000'000 / (2 * c);
      Cell cell;
      {
        Floor floor(std::stoi(m[1]), c, tokens);
        cell = std::string(mode) == "epoll" ? floor.epoll() : floor.uring();
      }
      sim.signal(SIGTERM);
      sim.wait(std::chrono::seconds(30));
      std::printf("| %d | %s | %ld | %ld | %ld | %.3f | %.2f M | %.1f |\n", c, cell.mode.c_str(),
                  cell.events, cell.reads, cell.waits, cell.cpu_s,
                  static_cast<double>(cell.events) / cell.cpu_s / 1e6,
                  static_cast<double>(cell.events) / static_cast<double>(cell.reads));
      std::fflush(stdout);
    }
  }
  std::filesystem::remove_all(dir);
  return 0;
}
