// Telemetry in the record: the idle baseline, the energy section of summary.json, the
// telemetry part of the manifest, telemetry.jsonl (docs/metrics.md "Energy and power").
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "metrics/summary.h"
#include "record/manifest_sections.h"
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

/// One GPU's memory in the snapshot taken once the engine is ready, in two kinds: `used`, what
/// the device has in use by every process (NVML's memory used = reserved + allocated; amdgpu
/// mem_info_vram_used), and `engine_process`, what the engine's own processes hold on it
/// (NVML's compute process list: the pool an engine reserves, e.g. a KV cache sized by
/// gpu_memory_utilization). Either is absent when the source does not report it.
struct VramDevice {
  std::string source;
  int device = 0;
  std::string name;
  std::optional<std::int64_t> used_bytes;
  std::optional<std::int64_t> engine_process_bytes;
};

/// The VRAM of every GPU after load (summary.json energy.vram_after_load).
struct VramSnapshot {
  std::vector<VramDevice> devices;
  /// Σ used_bytes over the GPUs that report it; nullopt when none does.
  std::optional<std::int64_t> used_total() const;
};

/// The snapshot from each GPU's latest sample; no devices without a GPU source.
VramSnapshot vram_snapshot(const Monitor& monitor);

/// Its JSON form: {snapshot: "after_load", kinds, devices: [{source, device, name, used_bytes,
/// engine_process_bytes}], used_bytes_total, engine_process_bytes_total}; null without GPUs.
boost::json::value vram_snapshot_json(const VramSnapshot& snapshot);

/// summary.json's `energy` section over [begin, end] (steady ns); adds typed warnings.
boost::json::object energy_section(const Monitor& monitor, const IdleBaseline* idle,
                                   std::int64_t begin_ns, std::int64_t end_ns,
                                   std::int64_t output_tokens, const VramSnapshot& vram_after_load,
                                   std::vector<metrics::Warning>& warnings);

/// manifest.json's `telemetry` object: sources, their reasons, capabilities, the requested and
/// achieved sample period over [begin, end], read errors, the idle baseline.
boost::json::object telemetry_manifest(const Monitor* monitor, const std::string& mode,
                                       double requested_period_ms, const IdleBaseline* idle,
                                       std::int64_t begin_ns, std::int64_t end_ns);

/// manifest.json's hardware.gpus from the GPU sources' probes.
std::vector<record::DeviceEntry> gpu_identities(const Monitor& monitor);

/// telemetry.jsonl: one line per device reading in [begin, end], times from `t0_ns`.
std::string telemetry_jsonl(const Monitor& monitor, std::int64_t begin_ns, std::int64_t end_ns,
                            std::int64_t t0_ns);

/// `dyno doctor`: what telemetry this host offers and why a source is unavailable.
std::string doctor_text(const Monitor& monitor);

}  // namespace dyno::telemetry
