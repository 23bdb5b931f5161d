// Numeric flag values: CLI11 transforms of the checked readers in load/flag_numbers.h, one set of
// rules for every numeric flag of every subcommand (README "Flag limits"). CLI11's own
// conversion wraps a negative value into an unsigned option ("-1" becomes 2^64 - 1), reads "010"
// as octal and takes "nan"; these transforms check the text first and hand CLI11 only a plain
// decimal it cannot misread. Every number a command line gives — flags, lists (--rates,
// --depths), --slo and --time-window — is read by parse_integer or parse_number: plain decimal,
// no hexadecimal, no leading zero ("010" is refused, not read as 8 or 10).
#pragma once

#include <cstdint>
#include <string>

#include "load/flag_numbers.h"

namespace CLI {
class Validator;
}

namespace dyno::app::flags {

// The load's limits and the readers (load/flag_numbers.h), under the names every command uses.
using load::FlagValueError;
using load::kMaxConcurrency;
using load::kMaxOpenLoopArrivals;
using load::kMaxRate;
using load::kMaxRequests;
using load::kMaxSeconds;
using load::kMinBurstiness;
using load::kMinRate;
using load::kMinSeconds;
using load::number_text;
using load::parse_integer;
using load::parse_number;
using load::parse_seconds;
using load::split_unit;

inline constexpr std::int64_t kMaxTokens = 10'000'000;  ///< prompt / output tokens, depths
inline constexpr std::uint32_t kMaxRepeat = 1000;
inline constexpr std::uint64_t kMaxU64 = UINT64_MAX;

/// The same checks as CLI11 transforms: the option's text is checked and rewritten in plain
/// decimal before CLI11 converts it; a bad value fails the parse as "<--flag>: <message>".
CLI::Validator integer(std::uint64_t lo, std::uint64_t hi);
CLI::Validator number(double lo, double hi, bool lo_open = false, bool hi_open = false);
/// A duration in seconds from kMinSeconds to kMaxSeconds (or exactly 0 with `zero_ok`).
CLI::Validator seconds(bool zero_ok = false);
/// Checks `--slo` text ("ttft=500ms,tpot=0.05s"): known objectives, each a plain decimal
/// duration from 1 ms to 30 days (parse_number's rules), as load::parse_slo reads it into every
/// cell. Throws UsageError naming --slo.
void check_slo(const std::string& text);

}  // namespace dyno::app::flags
