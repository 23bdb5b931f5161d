#include "record/energy_section.h"

#include <cmath>

#include "metrics/registry.h"
#include "record/object_reader.h"

namespace dyno::record {

bool EnergySection::in_scope(const EnergyDevice& d) const {
  if (!scope) return false;
  return *scope == "gpu" ? d.kind == "gpu" : d.kind == "cpu-package";
}

std::optional<double> EnergySection::mean_power_w() const {
  return metrics::mean_power_w(energy_j, window_s.value_or(0));
}

std::optional<double> EnergySection::peak_power_w() const {
  if (power_peak_w) return power_peak_w;
  std::optional<double> sum;
  for (const EnergyDevice& d : devices) {
    if (in_scope(d) && d.power_peak_w) sum = sum.value_or(0) + *d.power_peak_w;
  }
  return sum;
}

bool EnergySection::power_sources_disagree() const {
  return metrics::power_sources_disagree(mean_power_w(), peak_power_w());
}

EnergySection energy_section_from_json(const boost::json::object& energy, const std::string& file) {
  const ObjectReader r(energy, "energy", file);
  EnergySection e;
  e.window = r.opt_string("window");
  e.reason = r.opt_string("reason");
  e.window_s = r.opt_number("window_s");
  e.scope = r.opt_string("scope");
  e.energy_j = r.opt_number("energy_j");
  e.output_tokens_per_j = r.opt_number("output_tokens_per_j");
  e.joules_per_output_token = r.opt_number("joules_per_output_token");
  e.idle_subtracted_joules_per_output_token =
      r.opt_number("idle_subtracted_joules_per_output_token");
  e.power_peak_w = r.opt_number("power_peak_w");
  e.output_tokens = r.opt_number("output_tokens");
  e.vram_peak_bytes = r.opt_number("vram_peak_bytes");
  if (!r.has("devices")) return e;
  for (const boost::json::value& v : r.array("devices")) {
    const ObjectReader d = r.element(v, "devices");
    EnergyDevice x;
    x.source = d.string("source");
    x.device = d.opt_int("device");
    x.kind = d.string("kind");
    x.name = d.opt_string("name").value_or("");
    x.energy_j = d.opt_number("energy_j");
    x.power_mean_w = d.opt_number("power_mean_w");
    x.power_p95_w = d.opt_number("power_p95_w");
    x.power_peak_w = d.opt_number("power_peak_w");
    x.idle_power_w = d.opt_number("idle_power_w");
    x.temperature_p95_c = d.opt_number("temperature_p95_c");
    x.temperature_max_c = d.opt_number("temperature_max_c");
    x.temperature_junction_max_c = d.opt_number("temperature_junction_max_c");
    x.temperature_memory_max_c = d.opt_number("temperature_memory_max_c");
    x.clock_sm_median_mhz = d.opt_number("clock_sm_median_mhz");
    x.clock_memory_median_mhz = d.opt_number("clock_memory_median_mhz");
    x.utilization_mean_pct = d.opt_number("utilization_mean_pct");
    x.memory_used_peak_bytes = d.opt_number("memory_used_peak_bytes");
    x.energy_source = d.opt_string("energy_source");
    x.samples = d.opt_int("samples");
    if (d.has("flags")) x.flags = d.strings("flags");
    e.devices.push_back(std::move(x));
  }
  return e;
}

std::optional<double> energy_figure(const EnergySection& energy, std::string_view path) {
  constexpr std::string_view kSection = "energy.";
  if (!path.starts_with(kSection)) return std::nullopt;
  const std::string_view key = path.substr(kSection.size());
  std::optional<double> v;
  if (key == "window_s") v = energy.window_s;
  if (key == "energy_j") v = energy.energy_j;
  if (key == "output_tokens_per_j") v = energy.output_tokens_per_j;
  if (key == "joules_per_output_token") v = energy.joules_per_output_token;
  if (key == "idle_subtracted_joules_per_output_token") {
    v = energy.idle_subtracted_joules_per_output_token;
  }
  if (key == "power_peak_w") v = energy.power_peak_w;
  if (key == "output_tokens") v = energy.output_tokens;
  if (key == "vram_peak_bytes") v = energy.vram_peak_bytes;
  return v && std::isfinite(*v) ? v : std::nullopt;
}

}  // namespace dyno::record
