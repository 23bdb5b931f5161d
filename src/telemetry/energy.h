// Energy windows: samples of one device → energy, power, temperature and memory figures over a
// time window (docs/metrics.md "Energy and power"). Pure functions: no clock, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "telemetry/sampler.h"

namespace dyno::telemetry {

/// One device's reading at steady time t_ns.
struct TimedReading {
  std::int64_t t_ns = 0;
  Reading reading;
};

/// Counter and integral disagreeing by more than this (|a − b| / max(a, b)) raise
/// `energy_sources_disagree`; the counter's figure is kept.
inline constexpr double kDisagreementThreshold = 0.15;
/// A window shorter than this many counter update periods is flagged `window_too_short`.
inline constexpr double kMinCounterPeriods = 10.0;

struct WindowFigures {
  double duration_s = 0;
  std::optional<double> energy_j;           ///< by the source below
  std::string energy_source;                ///< "counter" | "power_instant" | "power_average" | ""
  std::optional<double> energy_counter_j;   ///< counter, interpolated to the window edges
  std::optional<double> energy_integral_j;  ///< trapezoid of instantaneous (else averaged) power
  std::string integral_source;              ///< "power_instant" | "power_average" | ""
  std::optional<double> disagreement;       ///< |counter − integral| / max
  std::optional<double> counter_period_s;   ///< median interval between counter changes
  std::optional<double> power_mean_w;       ///< energy_j / duration
  std::optional<double> power_p95_w;        ///< of the power samples in the window
  std::optional<double> power_peak_w;
  std::optional<double> temp_p95_c;  ///< GPU/edge temperature
  std::optional<double> temp_max_c;
  std::optional<double> temp_memory_max_c;
  std::optional<double> temp_junction_max_c;
  std::optional<double> clock_sm_median_mhz;
  std::optional<double> clock_memory_median_mhz;
  std::optional<double> utilization_mean_pct;
  std::optional<std::int64_t> memory_used_peak_bytes;
  std::optional<std::int64_t> process_memory_peak_bytes;
  std::optional<std::uint64_t> throttle_reasons_seen;  ///< OR of every bitmask
  std::size_t samples = 0;
  std::vector<std::string> flags;  ///< energy_sources_disagree, counter_reset, window_too_short…
};

/// Figures of one device over [begin_ns, end_ns]. `series` is in time order. Counter and power
/// values are interpolated linearly to the window's edges from the samples around them.
WindowFigures window_figures(const std::vector<TimedReading>& series, std::int64_t begin_ns,
                             std::int64_t end_ns);

/// The peak of the summed power of several devices over [begin_ns, end_ns] (`series`: one per
/// device, each in time order): at every sample time in the window, the sum of each device's
/// latest reading in the window (instantaneous power, else averaged); a time before some
/// device's first reading in the window is left out. Not the sum of each device's own peak,
/// which need not happen at once. nullopt when no time has a reading of every device.
std::optional<double> summed_power_peak(const std::vector<std::vector<TimedReading>>& series,
                                        std::int64_t begin_ns, std::int64_t end_ns);

/// Trapezoid integral (J) of a piecewise-linear power signal (t_ns, W) over [begin, end];
/// nullopt when the samples do not cover the window.
std::optional<double> integrate_power(const std::vector<std::pair<std::int64_t, double>>& points,
                                      std::int64_t begin_ns, std::int64_t end_ns);

/// Energy (J) a cumulative counter grew by over [begin, end], values interpolated at the edges.
/// A decrease (reset) is not counted as negative energy: growth is summed segment by segment
/// and `reset` is set. nullopt when the samples do not cover the window.
std::optional<double> counter_energy(const std::vector<std::pair<std::int64_t, double>>& points,
                                     std::int64_t begin_ns, std::int64_t end_ns, bool* reset);

/// Idle-subtracted joules per output token: (energy − idle_power × duration) / tokens.
std::optional<double> net_joules_per_token(std::optional<double> energy_j,
                                           std::optional<double> idle_power_w, double duration_s,
                                           std::int64_t output_tokens);

}  // namespace dyno::telemetry
