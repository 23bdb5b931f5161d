// Telemetry in the record: the idle baseline, the energy section of summary.json, the
// telemetry part of the manifest, telemetry.jsonl (docs/metrics.md "Energy and power").
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "metrics/summary.h"
#include "telemetry/monitor.h"

namespace dyno::telemetry {

/// Idle power per device (source, device) measured before the first cell.
struct IdleBaseline {
  std::int64_t begin_ns = 0;
  std::int64_t end_ns = 0;
  std::vector<std::pair<std::pair<std::size_t, std::size_t>, double>> power_w;
  std::optional<double> power_w_for(std::size_t source, std::size_t device) const;
};

/// True when some available source reports power or energy (an idle baseline is meaningful).
bool has_power_source(const Monitor& monitor);

/// Measures the idle baseline: waits `seconds` while the monitor samples, then averages.
IdleBaseline measure_idle(const Monitor& monitor, double seconds);

/// summary.json's `energy` section over [begin, end] (steady ns); adds typed warnings.
boost::json::object energy_section(const Monitor& monitor, const IdleBaseline* idle,
                                   std::int64_t begin_ns, std::int64_t end_ns,
                                   std::int64_t output_tokens,
                                   std::optional<std::int64_t> vram_after_load_bytes,
                                   std::vector<metrics::Warning>& warnings);

/// manifest.json's `telemetry` object: sources, their reasons, capabilities, the requested and
/// achieved sample period over [begin, end], read errors, the idle baseline.
boost::json::object telemetry_manifest(const Monitor* monitor, const std::string& mode,
                                       double requested_period_ms, const IdleBaseline* idle,
                                       std::int64_t begin_ns, std::int64_t end_ns);

/// manifest.json's hardware.gpus from the GPU sources' probes.
boost::json::array gpu_identities(const Monitor& monitor);

/// telemetry.jsonl: one line per device reading in [begin, end], times from `t0_ns`.
std::string telemetry_jsonl(const Monitor& monitor, std::int64_t begin_ns, std::int64_t end_ns,
                            std::int64_t t0_ns);

/// The VRAM in use per GPU right now (the latest sample), summed; nullopt without a GPU source.
std::optional<std::int64_t> vram_used_now(const Monitor& monitor);

/// `dyno doctor`: what telemetry this host offers and why a source is unavailable.
std::string doctor_text(const Monitor& monitor);

}  // namespace dyno::telemetry
