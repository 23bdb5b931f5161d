// The numbers of the command line: one checked reader for every numeric flag of every
// subcommand (plain decimal, no hexadecimal, no leading zero: "010" is refused, not read as 8 or
// 10), and the limits of the load (README "Flag limits"). Load planning (load/plan.h) reads
// --slo and --time-window with them; app/flag_values.h makes CLI11 transforms of them, so a
// flag's value and a value inside a flag (--slo, --time-window, --rates) follow one set of rules.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "error/error.h"

namespace dyno::load {

/// Limits: past them a value is a usage error before anything is sent or written.
inline constexpr std::uint64_t kMaxRequests = 10'000'000;  ///< -n, --warmup, --min-requests …
inline constexpr std::uint32_t kMaxConcurrency = 100'000;  ///< -c, --burst, sweep levels
inline constexpr double kMaxRate = 1'000'000.0;            ///< req/s
/// The slowest open loop: one request per 1000 s on average (a slower rate's schedule would
/// reach past any run's end, and its offsets past the steady clock's range).
inline constexpr double kMinRate = 0.001;
/// The most arrivals one open-loop schedule (rate x duration, or -n with --rate) may plan: each
/// request's trace is held in memory until the record is written (about 1 KB each), and the
/// schedule is made before the first request.
inline constexpr std::uint64_t kMaxOpenLoopArrivals = 1'000'000;
/// The smallest gamma shape (--burstiness): a coefficient of variation of 10.
inline constexpr double kMinBurstiness = 0.01;
/// 30 days: every duration and timeout. Its nanoseconds fit a steady-clock int64 and a double
/// holds them exactly (schedule offsets).
inline constexpr double kMaxSeconds = 30.0 * 24 * 3600;
/// The shortest duration or timeout that is not 0 (0 is "off" where a flag allows it): 1 ms. A
/// smaller one is a typo (`1e-300`), and would act as off or fire at once.
inline constexpr double kMinSeconds = 0.001;

/// A value outside its flag's range; the message says what was given and what is expected,
/// without the flag's name (the caller prefixes it).
class FlagValueError : public UsageError {
 public:
  using UsageError::UsageError;
};

/// A whole number in [lo, hi], written in decimal ("+7", "7" — not "0x7", "07", "7.0", "1e3",
/// "-0"): a leading zero is refused, since other tools read "010" as octal.
/// Throws FlagValueError, e.g. "-1 is not an integer between 0 and 1000000".
std::uint64_t parse_integer(const std::string& text, std::uint64_t lo, std::uint64_t hi);

/// A finite number in [lo, hi] (lo excluded when `lo_open`: "greater than 0"; hi excluded when
/// `hi_open`). Accepts decimal forms only ("1.5", "2e3", ".5", "0.25"), not nan, inf,
/// hexadecimal or a leading zero before another digit ("010", "00.5"). Throws FlagValueError.
double parse_number(const std::string& text, double lo, double hi, bool lo_open = false,
                    bool hi_open = false);

/// `text` in seconds (unit already removed): 0 with `zero_ok`, else from kMinSeconds to
/// kMaxSeconds. Throws FlagValueError, e.g. "1e-300 is below 1 ms (expected 0 (off) or a
/// duration from 0.001 to 2592000 s)".
double parse_seconds(const std::string& text, bool zero_ok = false);

/// A number as the messages print it: integers without exponent, others in shortest form.
std::string number_text(double v);

/// A number followed by a unit: the number's text and the unit (the trailing letters, "ms", "s",
/// "m", "h" …; "" when none). The number is then read by parse_number: plain decimal.
std::pair<std::string, std::string> split_unit(const std::string& text);

}  // namespace dyno::load
