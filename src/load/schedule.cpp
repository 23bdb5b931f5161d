#include "load/schedule.h"

#include <cmath>
#include <limits>
#include <numbers>
#include <random>

namespace dyno::load {

namespace {

constexpr double kNsPerS = 1e9;

// The variates are built from raw std::mt19937_64 output (whose sequence the standard fixes)
// with our own transforms, not std::*_distribution (whose algorithms are implementation-
// defined), so a seed gives the same schedule with any standard library. Only libm's log,
// sqrt, cos and pow remain; glibc's are deterministic, and other libms may differ in the last
// ulp at most.
class Variates {
 public:
  explicit Variates(std::uint64_t seed) : engine_(seed) {}

  /// Uniform in [0, 1): the top 53 bits of one 64-bit draw.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

  /// Uniform in (0, 1): the midpoints of the 2^53 cells, so log() and pow(u, 1/k) are finite.
  double uniform_open() { return (static_cast<double>(engine_() >> 11) + 0.5) * 0x1.0p-53; }

  /// Exp(1) by inverse transform: −ln(1 − U), U in [0, 1).
  double exponential() { return -std::log1p(-uniform()); }

  /// Standard normal by Box–Muller (the cosine branch only; one normal per two uniforms).
  double normal() {
    const double r = std::sqrt(-2.0 * std::log(uniform_open()));
    return r * std::cos(2.0 * std::numbers::pi * uniform());
  }

  /// Gamma(shape k, scale 1) by Marsaglia & Tsang (2000), "A simple method for generating
  /// gamma variables"; for k < 1, Gamma(k) = Gamma(k + 1) · U^(1/k).
  double gamma(double k) {
    if (k < 1.0) {
      const double g = gamma(k + 1.0);
      return g * std::pow(uniform_open(), 1.0 / k);
    }
    const double d = k - 1.0 / 3.0;
    const double c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
      const double x = normal();
      double v = 1.0 + c * x;
      if (v <= 0.0) continue;
      v = v * v * v;
      const double u = uniform_open();
      const double x2 = x * x;
      if (u < 1.0 - 0.0331 * x2 * x2) return d * v;
      if (std::log(u) < 0.5 * x2 + d * (1.0 - v + std::log(v))) return d * v;
    }
  }

 private:
  std::mt19937_64 engine_;
};

void validate(const ScheduleSpec& spec, const std::optional<std::uint64_t>& count,
              const std::optional<double>& duration_s) {
  if (!(spec.rate_per_s > 0.0) || !std::isfinite(spec.rate_per_s)) {
    throw std::invalid_argument("schedule: rate must be a finite number > 0 (got " +
                                std::to_string(spec.rate_per_s) + ")");
  }
  if (!(spec.burstiness > 0.0) || !std::isfinite(spec.burstiness)) {
    throw std::invalid_argument("schedule: burstiness must be a finite number > 0 (got " +
                                std::to_string(spec.burstiness) + ")");
  }
  if (!count && !duration_s) {
    throw std::invalid_argument(
        "schedule: give a request count or a duration to bound the schedule");
  }
  if (duration_s && (!(*duration_s >= 0.0) || !std::isfinite(*duration_s))) {
    throw std::invalid_argument("schedule: duration must be a finite number >= 0 (got " +
                                std::to_string(*duration_s) + ")");
  }
  if (count && *count > kMaxScheduleArrivals) {
    throw std::invalid_argument("schedule: count " + std::to_string(*count) +
                                " exceeds the limit of " + std::to_string(kMaxScheduleArrivals));
  }
  if (!count && *duration_s * spec.rate_per_s > static_cast<double>(kMaxScheduleArrivals)) {
    throw std::invalid_argument("schedule: rate x duration exceeds the limit of " +
                                std::to_string(kMaxScheduleArrivals) +
                                " arrivals; lower the rate or the duration");
  }
}

}  // namespace

const char* to_string(Arrival arrival) {
  switch (arrival) {
    case Arrival::kPoisson:
      return "poisson";
    case Arrival::kConstant:
      return "constant";
    case Arrival::kGamma:
      return "gamma";
  }
  return "poisson";
}

Arrival parse_arrival(const std::string& name) {
  if (name == "poisson") return Arrival::kPoisson;
  if (name == "constant") return Arrival::kConstant;
  if (name == "gamma") return Arrival::kGamma;
  throw UsageError("'" + name + "'; use poisson, constant or gamma");
}

std::vector<std::int64_t> make_schedule(const ScheduleSpec& spec,
                                        std::optional<std::uint64_t> count,
                                        std::optional<double> duration_s) {
  validate(spec, count, duration_s);
  std::vector<std::int64_t> offsets;
  if (count) offsets.reserve(*count);
  // Offsets are kept in double seconds and rounded once each, so rounding does not accumulate
  // (a constant schedule is exactly i / rate); doubles hold ns exactly up to ~104 days.
  const double limit_ns = duration_s ? *duration_s * kNsPerS : 0.0;
  const double max_ns = static_cast<double>(std::numeric_limits<std::int64_t>::max());
  const double mean_gap_s = 1.0 / spec.rate_per_s;
  const double gamma_scale_s = 1.0 / (spec.rate_per_s * spec.burstiness);
  Variates variates(spec.seed);
  double t_s = 0.0;
  for (std::uint64_t i = 0; !count || i < *count; ++i) {
    switch (spec.arrival) {
      case Arrival::kConstant:
        t_s = static_cast<double>(i) * mean_gap_s;
        break;
      case Arrival::kPoisson:
        t_s += variates.exponential() * mean_gap_s;
        break;
      case Arrival::kGamma:
        t_s += variates.gamma(spec.burstiness) * gamma_scale_s;
        break;
    }
    const double t_ns = std::round(t_s * kNsPerS);
    if (duration_s && !(t_ns < limit_ns)) break;
    if (!(t_ns < max_ns)) {
      throw std::invalid_argument(
          "schedule: offsets exceed the int64 nanosecond range; raise "
          "the rate or lower the count");
    }
    offsets.push_back(static_cast<std::int64_t>(t_ns));
  }
  return offsets;
}

}  // namespace dyno::load
