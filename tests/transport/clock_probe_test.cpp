// The clock reference and its probes (transport/clock_probe.h): the wire form, NTP's
// arithmetic, a burst against a real `serve_clock` on loopback, and references that are not
// one (silent, refusing, answering garbage or impossible times), each failing in bounded time.
#include "transport/clock_probe.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sstream>
#include <thread>

#include "error/error.h"
#include "free_port.h"

namespace dyno::transport {
namespace {

using std::chrono::milliseconds;

TEST(ClockProbe, WireFormRoundTripsAndRejectsOtherBytes) {
  const auto probe = clock_probe(0x0102030405060708ULL);
  EXPECT_EQ(parse_clock_probe(probe.data(), probe.size()), 0x0102030405060708ULL);
  EXPECT_FALSE(parse_clock_probe(probe.data(), probe.size() - 1));
  EXPECT_EQ(probe.size(), kClockReplySize);  // no reply is larger than its probe
  auto bad = probe;
  bad[0] = 'X';
  EXPECT_FALSE(parse_clock_probe(bad.data(), bad.size()));
  bad = probe;
  bad[47] = 1;  // padding that is not zero
  EXPECT_FALSE(parse_clock_probe(bad.data(), bad.size()));

  const ClockReply r{42, "00000000deadbeef", 1'700'000'000'000'000'000, 1'700'000'000'000'001'000};
  const auto wire = clock_reply(r);
  const auto back = parse_clock_reply(wire.data(), wire.size());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->nonce, 42U);
  EXPECT_EQ(back->reference_id, "00000000deadbeef");
  EXPECT_EQ(back->receive_ns, r.receive_ns);
  EXPECT_EQ(back->transmit_ns, r.transmit_ns);
  EXPECT_FALSE(parse_clock_reply(probe.data(), probe.size()));  // a probe is not a reply
  EXPECT_FALSE(parse_clock_probe(wire.data(), wire.size()));    // nor a reply a probe
  auto reserved = wire;
  reserved[47] = 1;
  EXPECT_FALSE(parse_clock_reply(reserved.data(), reserved.size()));
}

TEST(ClockProbe, SampleIsNtpsOffsetWithHalfTheRoundTripAsUncertainty) {
  // This host is 250 ms ahead; the probe took 100 µs each way and the reference held it 10 µs.
  const std::int64_t sent_here = 2'000'000'000'000'000'000;
  const std::int64_t there_received = sent_here - 250'000'000 + 100'000;
  const auto s = clock_sample(sent_here, 210'000, there_received, there_received + 10'000);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->offset_ns, 250'000'000);
  EXPECT_EQ(s->rtt_ns, 210'000);
  EXPECT_EQ(s->uncertainty_ns, 105'000);
  // Asymmetric paths move the estimate, never beyond the uncertainty.
  const auto skewed = clock_sample(sent_here, 210'000, there_received + 90'000,
                                   there_received + 100'000);  // 190 µs out, 10 µs back
  ASSERT_TRUE(skewed);
  EXPECT_LE(std::llabs(skewed->offset_ns - 250'000'000), skewed->uncertainty_ns);
  EXPECT_FALSE(clock_sample(sent_here, 210'000, there_received, there_received - 1));  // hold < 0
  EXPECT_FALSE(clock_sample(sent_here, 210'000, there_received, there_received + 300'000));
  EXPECT_FALSE(clock_sample(sent_here, 210'000, 0, 0));
}

/// `serve_clock` on a free loopback port, on its own thread, stopped at the end.
class Reference {
 public:
  explicit Reference(std::int64_t skew_ns = 0) {
    std::thread([this, skew_ns] {
      ClockServeOptions o;
      o.skew_ns = skew_ns;
      serve_clock(o, line_, stop_);
    }).swap(thread_);
    for (int i = 0; i < 200 && line_.str().empty(); ++i)
      std::this_thread::sleep_for(milliseconds(5));
  }
  ~Reference() {
    stop_ = true;
    thread_.join();
  }
  /// 127.0.0.1:PORT from "dyno clock serve listening on udp 127.0.0.1:PORT, reference id ID".
  std::string address() const {
    const std::string l = line_.str();
    const auto at = l.find("udp ") + 4;
    return l.substr(at, l.find(',') - at);
  }
  std::string id() const {
    const std::string l = line_.str();
    return l.substr(l.find("reference id ") + 13, 16);
  }

 private:
  std::ostringstream line_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(ClockProbe, LoopbackReferenceMeasuresZeroOffsetWellUnderAMillisecond) {
  const Reference ref;
  const ClockMeasurement m = measure_clock(ref.address(), "--clock-ref");
  EXPECT_EQ(m.reference_id, ref.id());
  EXPECT_EQ(m.probes, 16U);
  EXPECT_GE(m.samples, 8U);
  EXPECT_LT(m.best.uncertainty_ns, 1'000'000);
  EXPECT_LE(std::llabs(m.best.offset_ns), m.best.uncertainty_ns + 1'000);
}

TEST(ClockProbe, ASkewedReferenceIsMeasuredAsSkewed) {
  const Reference ref(-250'000'000);  // the reference 250 ms behind: this host 250 ms ahead
  const ClockMeasurement m = measure_clock(ref.address(), "--clock-ref");
  EXPECT_LE(std::llabs(m.best.offset_ns - 250'000'000), m.best.uncertainty_ns + 1'000);
}

/// A UDP socket on a free loopback port that answers each datagram with `answer(bytes)`
/// (nothing when it returns an empty vector), until destroyed.
class FakeReference {
 public:
  using Answer = std::function<std::vector<unsigned char>(const unsigned char*, std::size_t)>;
  explicit FakeReference(Answer answer) : answer_(std::move(answer)) {
    fd_ = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { loop(); });
  }
  ~FakeReference() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  void loop() {
    unsigned char buf[256];
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      sockaddr_in from{};
      socklen_t len = sizeof from;
      const ssize_t n =
          ::recvfrom(fd_, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (n < 0) continue;
      const std::vector<unsigned char> out = answer_(buf, static_cast<std::size_t>(n));
      if (!out.empty()) {
        ::sendto(fd_, out.data(), out.size(), 0, reinterpret_cast<sockaddr*>(&from), len);
      }
    }
  }
  Answer answer_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/// measure_clock's error against `address`, and that it came within `limit`.
std::string failure(const std::string& address, milliseconds limit) {
  const auto start = std::chrono::steady_clock::now();
  std::string message;
  try {
    measure_clock(address, "--clock-ref", ClockProbeOptions{16, milliseconds(50)});
    ADD_FAILURE() << "measured against " << address;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    message = e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, limit);
  return message;
}

TEST(ClockProbe, SilentGarbageAndImpossibleReferencesFailClearlyInBoundedTime) {
  {
    const FakeReference silent(
        [](const unsigned char*, std::size_t) { return std::vector<unsigned char>{}; });
    EXPECT_NE(failure(silent.address(), std::chrono::seconds(3)).find("no reply to 16 probes"),
              std::string::npos);
  }
  {
    const FakeReference garbage(
        [](const unsigned char*, std::size_t) { return std::vector<unsigned char>(48, 'x'); });
    EXPECT_NE(failure(garbage.address(), std::chrono::seconds(3)).find("were not replies"),
              std::string::npos);
  }
  {
    // Right form, times that cannot be: transmitted before received.
    const FakeReference liar([](const unsigned char* data, std::size_t size) {
      const auto nonce = parse_clock_probe(data, size);
      const ClockReply r{nonce.value_or(0), "0000000000000001", 2'000'000'000'000'000'000,
                         1'000'000'000'000'000'000};
      const auto wire = clock_reply(r);
      return std::vector<unsigned char>(wire.begin(), wire.end());
    });
    EXPECT_NE(failure(liar.address(), std::chrono::seconds(3)).find("16 replies had impossible"),
              std::string::npos);
  }
  {
    // Short garbage after each probe does not extend the wait beyond the probes' timeouts.
    const FakeReference shorts(
        [](const unsigned char*, std::size_t) { return std::vector<unsigned char>(1, 'y'); });
    failure(shorts.address(), std::chrono::seconds(3));
  }
}

TEST(ClockProbe, MalformedAndClosedAddressesAreNamed) {
  for (const char* bad : {"localhost", "127.0.0.1:", ":7123", "127.0.0.1:99999", "::1:7123",
                          "[::1]7123", "127.0.0.1:x"}) {
    try {
      measure_clock(bad, "--clock-ref");
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("give HOST:PORT"), std::string::npos) << e.what();
    }
  }
  // A port nothing listens on: refused (loopback reports it), quickly.
  const std::string closed =
      "127.0.0.1:" + std::to_string(dyno::testing::free_loopback_port(SOCK_DGRAM));
  EXPECT_NE(failure(closed, std::chrono::seconds(3)).find("nothing listens"), std::string::npos);
  // serve_clock refuses what it cannot bind.
  std::atomic<bool> stop{true};
  std::ostringstream out;
  EXPECT_THROW(serve_clock(ClockServeOptions{"192.0.2.1:1", 0}, out, stop), Error);
}

}  // namespace
}  // namespace dyno::transport
