#include "transport/clock_probe.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <sstream>

#include "error/error.h"

namespace dyno::transport {

namespace {

constexpr unsigned char kProbeMagic[8] = {'D', 'Y', 'N', 'O', 'C', 'L', 'K', 'Q'};
constexpr unsigned char kReplyMagic[8] = {'D', 'Y', 'N', 'O', 'C', 'L', 'K', 'R'};

void put_u64(unsigned char* at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) at[i] = static_cast<unsigned char>(v >> (8 * i));
}

std::uint64_t get_u64(const unsigned char* at) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | at[i];
  return v;
}

std::int64_t wall_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::uint64_t random_u64() {
  static thread_local std::mt19937_64 gen{
      (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}()};
  return gen();
}

/// A socket that closes itself.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

struct HostPort {
  std::string host;
  std::string port;
};

/// HOST:PORT or [V6]:PORT; nullopt when malformed.
std::optional<HostPort> split_host_port(const std::string& text) {
  HostPort hp;
  std::size_t colon = 0;
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return std::nullopt;
    }
    hp.host = text.substr(1, close - 1);
    colon = close + 1;
  } else {
    colon = text.rfind(':');
    if (colon == std::string::npos) return std::nullopt;
    hp.host = text.substr(0, colon);
    if (hp.host.find(':') != std::string::npos) return std::nullopt;  // v6 needs brackets
  }
  hp.port = text.substr(colon + 1);
  if (hp.host.empty() || hp.port.empty() || hp.port.size() > 5 ||
      hp.port.find_first_not_of("0123456789") != std::string::npos || std::stoi(hp.port) > 65535) {
    return std::nullopt;
  }
  return hp;
}

/// The UDP addresses of `text`; throws Error(kind) naming `flag` when it cannot be used.
addrinfo* resolve(const std::string& text, const std::string& flag, bool passive, ErrorKind kind) {
  const auto hp = split_host_port(text);
  if (!hp) {
    throw Error(kind, flag + " " + text +
                          ": give HOST:PORT (a port 0 to 65535; [ADDR]:PORT for "
                          "IPv6), e.g. 127.0.0.1:7123");
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(hp->host.c_str(), hp->port.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    throw Error(
        kind, flag + " " + text + ": cannot resolve " + hp->host + " (" + ::gai_strerror(rc) + ")");
  }
  return found;
}

/// What a burst saw, for the error that names why it failed.
struct BurstTally {
  std::uint32_t valid = 0;
  std::uint32_t foreign = 0;     ///< datagrams that are not replies to this burst
  std::uint32_t impossible = 0;  ///< replies whose times cannot be
  bool refused = false;          ///< ECONNREFUSED: nothing listens there
};

/// Waits for the reply to the probe `nonce` sent at `sent_steady` until `deadline`. Returns
/// the reply and its receive time on the steady clock, or nullopt when none came.
std::optional<std::pair<ClockReply, std::int64_t>> await_reply(int fd, std::uint64_t nonce,
                                                               std::int64_t deadline,
                                                               BurstTally& tally) {
  unsigned char buf[512];
  for (;;) {
    const std::int64_t left_ms = (deadline - steady_ns() + 999'999) / 1'000'000;
    if (left_ms <= 0) return std::nullopt;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left_ms));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return std::nullopt;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    const std::int64_t received = steady_ns();
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == ECONNREFUSED) tally.refused = true;  // nothing listens: no reply will come
      return std::nullopt;
    }
    const auto reply = parse_clock_reply(buf, static_cast<std::size_t>(n));
    if (!reply || reply->nonce != nonce) {
      ++tally.foreign;  // garbage, or a late reply to an earlier probe
      continue;
    }
    return std::pair(*reply, received);
  }
}

std::string burst_failure(const std::string& flag, const std::string& address,
                          const ClockProbeOptions& o, const BurstTally& t) {
  std::ostringstream s;
  s << flag << " " << address << ": ";
  if (t.valid == 0 && t.refused && t.foreign == 0) {
    s << "nothing listens on that UDP port (connection refused); start `dyno clock serve "
         "--listen "
      << address << "` there";
  } else if (t.valid == 0 && t.foreign == 0 && t.impossible == 0) {
    s << "no reply to " << o.probes << " probes (" << o.reply_timeout.count()
      << " ms each); is `dyno clock serve` running there and UDP let through?";
  } else {
    s << "only " << t.valid << " of " << o.probes << " probes got a valid reply (" << t.foreign
      << " datagrams were not replies to them, " << t.impossible
      << " replies had impossible times): not a dyno clock reference, or a path that loses "
         "packets";
  }
  return s.str();
}

}  // namespace

std::array<unsigned char, kClockProbeSize> clock_probe(std::uint64_t nonce) {
  std::array<unsigned char, kClockProbeSize> out{};
  std::memcpy(out.data(), kProbeMagic, 8);
  put_u64(out.data() + 8, nonce);
  return out;
}

std::optional<std::uint64_t> parse_clock_probe(const unsigned char* data, std::size_t size) {
  if (size != kClockProbeSize || std::memcmp(data, kProbeMagic, 8) != 0) return std::nullopt;
  for (std::size_t i = 16; i < size; ++i) {
    if (data[i] != 0) return std::nullopt;
  }
  return get_u64(data + 8);
}

std::array<unsigned char, kClockReplySize> clock_reply(const ClockReply& reply) {
  std::array<unsigned char, kClockReplySize> out{};
  std::memcpy(out.data(), kReplyMagic, 8);
  put_u64(out.data() + 8, reply.nonce);
  put_u64(out.data() + 16, std::stoull(reply.reference_id, nullptr, 16));
  put_u64(out.data() + 24, static_cast<std::uint64_t>(reply.receive_ns));
  put_u64(out.data() + 32, static_cast<std::uint64_t>(reply.transmit_ns));
  return out;
}

std::optional<ClockReply> parse_clock_reply(const unsigned char* data, std::size_t size) {
  if (size != kClockReplySize || std::memcmp(data, kReplyMagic, 8) != 0 ||
      get_u64(data + 40) != 0) {
    return std::nullopt;
  }
  ClockReply r;
  r.nonce = get_u64(data + 8);
  char id[17];
  std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(get_u64(data + 16)));
  r.reference_id = id;
  r.receive_ns = static_cast<std::int64_t>(get_u64(data + 24));
  r.transmit_ns = static_cast<std::int64_t>(get_u64(data + 32));
  return r;
}

std::optional<ClockSample> clock_sample(std::int64_t sent_wall_ns, std::int64_t rtt_ns,
                                        std::int64_t receive_ns, std::int64_t transmit_ns) {
  const std::int64_t hold = transmit_ns - receive_ns;
  if (rtt_ns < 0 || hold < 0 || hold > rtt_ns || receive_ns <= 0) return std::nullopt;
  // NTP's offset: this host's midpoint of the exchange minus the reference's.
  const std::int64_t here = sent_wall_ns + rtt_ns / 2;
  const std::int64_t there = receive_ns + hold / 2;
  return ClockSample{here - there, (rtt_ns + 1) / 2, rtt_ns};
}

ClockMeasurement measure_clock(const std::string& address, const std::string& flag,
                               const ClockProbeOptions& o) {
  addrinfo* found = resolve(address, flag, false, ErrorKind::input);
  const Fd fd(::socket(found->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  const bool connected =
      fd.get() >= 0 && ::connect(fd.get(), found->ai_addr, found->ai_addrlen) == 0;
  ::freeaddrinfo(found);
  if (!connected) {
    throw Error(ErrorKind::input,
                flag + " " + address + ": cannot open a UDP socket to it: " + std::strerror(errno));
  }
  ClockMeasurement m;
  m.probes = o.probes;
  BurstTally tally;
  std::optional<ClockSample> best;
  const std::int64_t timeout_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(o.reply_timeout).count();
  for (std::uint32_t i = 0; i < o.probes; ++i) {
    const std::uint64_t nonce = random_u64();
    const auto probe = clock_probe(nonce);
    const std::int64_t sent_wall = wall_now_ns();
    const std::int64_t sent = steady_ns();
    if (::send(fd.get(), probe.data(), probe.size(), 0) < 0) {
      if (errno == ECONNREFUSED) tally.refused = true;
      continue;
    }
    const auto reply = await_reply(fd.get(), nonce, sent + timeout_ns, tally);
    if (!reply) continue;
    const auto sample = clock_sample(sent_wall, reply->second - sent, reply->first.receive_ns,
                                     reply->first.transmit_ns);
    if (!sample) {
      ++tally.impossible;
      continue;
    }
    if (m.reference_id.empty()) m.reference_id = reply->first.reference_id;
    if (reply->first.reference_id != m.reference_id) {
      throw Error(ErrorKind::input, flag + " " + address +
                                        ": replies came from two references (ids " +
                                        m.reference_id + " and " + reply->first.reference_id +
                                        "): was it restarted, or do two serve that address?");
    }
    ++tally.valid;
    if (!best || sample->rtt_ns < best->rtt_ns) {
      best = sample;
      m.at_unix_ns = sent_wall;
    }
  }
  if (!best || tally.valid * 2 < o.probes) {
    throw Error(ErrorKind::input, burst_failure(flag, address, o, tally));
  }
  m.best = *best;
  m.samples = tally.valid;
  return m;
}

std::string new_reference_id() {
  std::uint64_t id = 0;
  while (id == 0) id = random_u64();
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(id));
  return text;
}

void serve_clock(const ClockServeOptions& o, std::ostream& announce,
                 const std::atomic<bool>& stop) {
  addrinfo* found = resolve(o.listen, "--listen", true, ErrorKind::usage);
  const Fd fd(::socket(found->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  const bool bound = fd.get() >= 0 && ::bind(fd.get(), found->ai_addr, found->ai_addrlen) == 0;
  ::freeaddrinfo(found);
  if (!bound) {
    throw Error(ErrorKind::usage, "--listen " + o.listen +
                                      ": cannot bind a UDP socket there: " + std::strerror(errno));
  }
  sockaddr_storage local{};
  socklen_t local_len = sizeof local;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &local_len);
  char host[NI_MAXHOST];
  char port[NI_MAXSERV];
  ::getnameinfo(reinterpret_cast<sockaddr*>(&local), local_len, host, sizeof host, port,
                sizeof port, NI_NUMERICHOST | NI_NUMERICSERV);
  const std::string id = new_reference_id();
  const bool v6 = local.ss_family == AF_INET6;
  announce << "dyno clock serve listening on udp " << (v6 ? "[" : "") << host << (v6 ? "]" : "")
           << ":" << port << ", reference id " << id;
  if (o.skew_ns != 0) announce << ", skew " << static_cast<double>(o.skew_ns) / 1e6 << " ms";
  announce << std::endl;

  ClockReply reply;
  reply.reference_id = id;
  unsigned char buf[512];
  while (!stop.load()) {
    pollfd p{fd.get(), POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    sockaddr_storage from{};
    socklen_t from_len = sizeof from;
    const ssize_t n =
        ::recvfrom(fd.get(), buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &from_len);
    reply.receive_ns = wall_now_ns() + o.skew_ns;
    if (n < 0) continue;
    const auto nonce = parse_clock_probe(buf, static_cast<std::size_t>(n));
    if (!nonce) continue;  // not a probe: no answer (nothing to amplify)
    reply.nonce = *nonce;
    reply.transmit_ns = wall_now_ns() + o.skew_ns;
    const auto out = clock_reply(reply);
    ::sendto(fd.get(), out.data(), out.size(), 0, reinterpret_cast<sockaddr*>(&from), from_len);
  }
}

}  // namespace dyno::transport
