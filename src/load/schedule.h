// Open-loop arrival schedules: precomputed, seeded send times (P3).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "error/error.h"

namespace dyno::load {

enum class Arrival { kPoisson, kConstant, kGamma };
const char* to_string(Arrival arrival);
/// Parses "poisson" | "constant" | "gamma"; throws std::invalid_argument otherwise.
Arrival parse_arrival(const std::string& name);  // throws UsageError

/// Upper bound on the arrivals of one schedule (count, or rate × duration), against typos
/// that would exhaust memory.
inline constexpr std::uint64_t kMaxScheduleArrivals = 100'000'000;

struct ScheduleSpec {
  Arrival arrival = Arrival::kPoisson;
  double rate_per_s = 1.0;  ///< mean arrival rate, > 0
  double burstiness = 1.0;  ///< gamma shape k (> 0); 1 = Poisson; < 1 burstier; ignored otherwise
  std::uint64_t seed = 0;
};

/// Send offsets in ns from the start of the measured phase, non-decreasing; the first arrival
/// is at offset 0 for constant, and one inter-arrival draw for the random processes.
/// Inter-arrival gaps: constant 1/rate; Poisson Exp(rate); gamma Gamma(k, 1/(rate·k)) so the
/// mean stays 1/rate and the coefficient of variation is 1/sqrt(k) (vLLM's --burstiness).
/// Generates `count` arrivals, or, when count is nullopt, every arrival before `duration_s`;
/// when both are given, whichever limit comes first ends the schedule. count 0 → empty.
/// Deterministic in (spec, count, duration_s): the variates are derived from std::mt19937_64
/// (seeded with spec.seed) by our own transforms, not std:: distributions, so the schedule is
/// the same with any standard library.
/// Throws std::invalid_argument, naming the parameter, for a bad spec (rate or burstiness not
/// finite and > 0, duration not finite and >= 0), when neither limit is given, when more than
/// kMaxScheduleArrivals arrivals would be generated, or when an offset overflows int64 ns.
std::vector<std::int64_t> make_schedule(const ScheduleSpec& spec,
                                        std::optional<std::uint64_t> count,
                                        std::optional<double> duration_s);

}  // namespace dyno::load
