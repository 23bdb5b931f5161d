// Numeric flag values: one checked parser for every numeric flag of every subcommand, and the
// limits dyno accepts (README "Flag limits"). CLI11's own conversion wraps a negative value
// into an unsigned option ("-1" becomes 2^64 - 1), reads "010" as octal and takes "nan"; these
// transforms check the text first and hand CLI11 only a plain decimal it cannot misread. Every
// number a command line gives — flags, lists (--rates, --depths), --slo and --time-window —
// is read by parse_integer or parse_number: plain decimal, no hexadecimal, no leading zero
// ("010" is refused, not read as 8 or 10).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace CLI {
class Validator;
}

namespace dyno::app::flags {

/// Limits: past them a value is a usage error before anything is sent or written.
inline constexpr std::uint64_t kMaxRequests = 10'000'000;  ///< -n, --warmup, --min-requests …
inline constexpr std::int64_t kMaxTokens = 10'000'000;     ///< prompt / output tokens, depths
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
inline constexpr std::uint32_t kMaxRepeat = 1000;
inline constexpr std::uint64_t kMaxU64 = UINT64_MAX;

/// A value outside its flag's range; the message says what was given and what is expected,
/// without the flag's name (the caller prefixes it).
class FlagValueError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
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

/// The same checks as CLI11 transforms: the option's text is checked and rewritten in plain
/// decimal before CLI11 converts it; a bad value fails the parse as "<--flag>: <message>".
CLI::Validator integer(std::uint64_t lo, std::uint64_t hi);
CLI::Validator number(double lo, double hi, bool lo_open = false, bool hi_open = false);
/// A duration in seconds from kMinSeconds to kMaxSeconds (or exactly 0 with `zero_ok`).
CLI::Validator seconds(bool zero_ok = false);
/// The same check as a function: `text` in seconds (unit already removed). Throws
/// FlagValueError, e.g. "1e-300 is below 1 ms (expected 0 (off) or a duration from 0.001 to
/// 2592000 s)".
double parse_seconds(const std::string& text, bool zero_ok = false);

/// A number as the messages print it: integers without exponent, others in shortest form.
std::string number_text(double v);

/// A number followed by a unit: the number's text and the unit (the trailing letters, "ms", "s",
/// "m", "h" …; "" when none). The number is then read by parse_number: plain decimal.
std::pair<std::string, std::string> split_unit(const std::string& text);

/// Checks `--slo` text ("ttft=500ms,tpot=0.05s"): known objectives, each a plain decimal
/// duration from 1 ms to 30 days (parse_number's rules), before load::parse_slo reads it into the
/// cell. Throws UsageError naming --slo.
void check_slo(const std::string& text);

}  // namespace dyno::app::flags
