// summary.json's `energy` section read typed (docs/record.md, docs/telemetry.md): what the
// telemetry measured over the run's service window — energy, power, temperatures, memory —
// in total and per device. The telemetry writes the section (telemetry/energy_report.cpp);
// every reader of a record's energy — boards (compare/figures.cpp), the protocols' cell
// figures and session roll-ups (protocol/campaign.cpp, campaign_summary.cpp) — reads it here.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dyno::record {

/// One device of the section (`energy.devices[]`): a GPU, a CPU package or the host.
struct EnergyDevice {
  std::string source;  ///< nvml | amdgpu | rapl | host
  std::optional<std::int64_t> device;
  std::string kind;  ///< gpu | cpu-package | host
  std::string name;
  std::optional<double> energy_j;
  std::optional<double> power_mean_w, power_p95_w, power_peak_w, idle_power_w;
  std::optional<double> temperature_p95_c, temperature_max_c, temperature_junction_max_c,
      temperature_memory_max_c;
  std::optional<double> clock_sm_median_mhz, clock_memory_median_mhz;
  std::optional<double> utilization_mean_pct;
  std::optional<double> memory_used_peak_bytes;
  /// Where energy_j came from: counter | power_instant | power_average (nullopt: no energy).
  std::optional<std::string> energy_source;
  std::optional<std::int64_t> samples;  ///< readings of the device in the window
  std::vector<std::string> flags;  ///< counter_reset, energy_sources_disagree, window_too_short
};

/// The section. `window` is set when the telemetry measured a window (a power source was
/// there); otherwise `energy_j` is null and `reason` says why.
struct EnergySection {
  std::optional<std::string> window;  ///< "service" when measured
  std::optional<std::string> reason;  ///< why there is no energy figure
  std::optional<double> window_s;
  std::optional<std::string> scope;  ///< gpu | cpu: whose energy energy_j is
  std::optional<double> energy_j;
  std::optional<double> output_tokens_per_j, joules_per_output_token,
      idle_subtracted_joules_per_output_token;
  std::optional<double> power_peak_w;  ///< one instant's sum over the devices in scope
  std::optional<double> output_tokens;
  std::optional<double> vram_peak_bytes;  ///< summed over the GPUs
  std::vector<EnergyDevice> devices;

  bool measured() const { return window.has_value(); }
  /// Whether a device is in the section's scope: GPUs when the scope is gpu, else CPU packages.
  bool in_scope(const EnergyDevice& d) const;
  /// The mean power, the energy counter over the window (metrics::mean_power_w).
  std::optional<double> mean_power_w() const;
  /// The peak power of the power samples: `power_peak_w` (their sum at one instant), else
  /// (a record without it) the sum of the in-scope devices' peaks, an upper bound of it.
  std::optional<double> peak_power_w() const;
  /// Whether mean_power_w() exceeds peak_power_w(): the energy counter and the power samples
  /// disagree (metrics::power_sources_disagree).
  bool power_sources_disagree() const;
};

/// Reads the section; `file` names the file in errors ("summary.json: energy.devices[].kind
/// is not a string"), a std::runtime_error.
EnergySection energy_section_from_json(const boost::json::object& energy,
                                       const std::string& file = "summary.json");

/// A figure of the section by its metric-registry path ("energy.energy_j",
/// "energy.joules_per_output_token", …: metrics/registry.cpp); nullopt when the section does not
/// hold it, it is not finite, or `path` names no number of the section itself.
std::optional<double> energy_figure(const EnergySection& energy, std::string_view path);

}  // namespace dyno::record
