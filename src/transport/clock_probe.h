// A clock reference and the measurement of this host's wall clock against it (docs/scale.md,
// "Clock offsets"): `dyno clock serve` answers each UDP probe with its wall-clock receive and
// transmit times, NTP-style; `dyno run --clock-ref HOST:PORT` sends a burst of probes and
// keeps the one with the shortest round trip.
//
// The wire form (every integer little-endian; a probe as long as a reply, so that a reference
// never sends more bytes than it receives):
//   probe  (48 bytes): "DYNOCLKQ" · nonce u64 · 32 zero bytes
//   reply  (48 bytes): "DYNOCLKR" · nonce u64 · reference id (8 bytes) · receive ns i64 ·
//                      transmit ns i64 · reserved u64 (0)
// Times are the reference's CLOCK_REALTIME (plus --skew-ms), ns since the Unix epoch.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

namespace dyno::transport {

inline constexpr std::size_t kClockProbeSize = 48;
inline constexpr std::size_t kClockReplySize = 48;

/// One probe's reply, decoded.
struct ClockReply {
  std::uint64_t nonce = 0;
  std::string reference_id;  ///< 16 hex digits
  std::int64_t receive_ns = 0;
  std::int64_t transmit_ns = 0;
};

/// Encodes a probe carrying `nonce`.
std::array<unsigned char, kClockProbeSize> clock_probe(std::uint64_t nonce);
/// The nonce of a probe, or nullopt when `data` is not one (size, magic, padding).
std::optional<std::uint64_t> parse_clock_probe(const unsigned char* data, std::size_t size);
/// Encodes a reply.
std::array<unsigned char, kClockReplySize> clock_reply(const ClockReply& reply);
/// The reply in `data`, or nullopt when it is not one (size, magic, reserved bytes).
std::optional<ClockReply> parse_clock_reply(const unsigned char* data, std::size_t size);

/// One probe's figures: what the measurement keeps of its best sample.
struct ClockSample {
  std::int64_t offset_ns = 0;       ///< this host's wall clock minus the reference's
  std::int64_t uncertainty_ns = 0;  ///< half the round trip (the reference's hold included)
  std::int64_t rtt_ns = 0;          ///< send to receive, on this host's steady clock
};

/// The sample of one exchange: `sent_wall_ns` this host's wall clock at the send, `rtt_ns`
/// the round trip on the steady clock, the reply's receive and transmit times. nullopt when
/// the reply is impossible: a negative hold time, or one longer than the round trip.
std::optional<ClockSample> clock_sample(std::int64_t sent_wall_ns, std::int64_t rtt_ns,
                                        std::int64_t receive_ns, std::int64_t transmit_ns);

/// A burst's result.
struct ClockMeasurement {
  std::string reference_id;
  ClockSample best;             ///< the sample with the shortest round trip
  std::uint32_t samples = 0;    ///< valid replies
  std::uint32_t probes = 0;     ///< probes sent
  std::int64_t at_unix_ns = 0;  ///< this host's wall clock at the best probe's send
};

struct ClockProbeOptions {
  std::uint32_t probes = 16;
  std::chrono::milliseconds reply_timeout{250};  ///< the wait for each probe's reply
};

/// Measures this host's wall clock against the reference at `address` (HOST:PORT, [v6]:PORT).
/// Bounded in time (probes × reply_timeout). Throws dyno::Error (kind input, naming
/// `flag` and the address) when the address does not resolve, when nothing answers, when the
/// answers are not a dyno clock reference's, or when fewer than half the probes got a valid
/// reply, or replies name two references.
ClockMeasurement measure_clock(const std::string& address, const std::string& flag,
                               const ClockProbeOptions& options = {});

/// A reference's id: 16 hex digits, random, made once per `dyno clock serve`.
std::string new_reference_id();

struct ClockServeOptions {
  std::string listen = "127.0.0.1:0";  ///< HOST:PORT; port 0: any free one
  std::int64_t skew_ns = 0;            ///< added to every time served (a rehearsal)
};

/// Serves probes on UDP until `stop` is set (checked every 100 ms). Once bound, writes one line
/// to `announce`: "dyno clock serve listening on udp HOST:PORT, reference id ID[, skew …]".
/// Throws dyno::Error (kind usage) when `listen` is malformed or cannot be bound.
void serve_clock(const ClockServeOptions& options, std::ostream& announce,
                 const std::atomic<bool>& stop);

}  // namespace dyno::transport
