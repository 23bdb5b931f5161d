// The Sampler seam: one source of hardware telemetry (NVML, amdgpu sysfs, RAPL powercap, the
// host). A missing capability means the figure is absent, never 0 (docs/telemetry.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dyno::telemetry {

/// What a device can report.
enum class Capability {
  kEnergyCounter,  ///< a cumulative hardware energy counter
  kPowerInstant,   ///< instantaneous power
  kPowerAverage,   ///< power averaged by the device (e.g. over 1 s)
  kMemoryUsed,     ///< device memory in use
  kProcessMemory,  ///< memory of the engine's processes on the device (or their RSS: host)
  kTempGpu,        ///< GPU core / edge temperature
  kTempJunction,   ///< hotspot / junction temperature
  kTempMemory,     ///< HBM / VRAM temperature
  kClockSm,        ///< SM / shader clock
  kClockMemory,    ///< memory clock
  kUtilization,    ///< busy percentage (GPU) or CPU utilisation (host)
  kThrottle,       ///< throttle / clock-event reasons
};
const char* to_string(Capability capability);

/// Identity of one device; every field that is not known stays empty / nullopt.
struct DeviceIdentity {
  std::string vendor;  ///< "nvidia", "amd", "intel", "cpu" (RAPL of unknown vendor), "host"
  std::string kind;    ///< "gpu", "cpu-package", "host"
  int index = 0;       ///< the source's own index
  std::string name;
  std::string uuid;
  std::string pci_bus_id;
  std::string driver;
  std::optional<std::int64_t> memory_total_bytes;
  std::optional<double> power_limit_w;
  std::set<Capability> capabilities;
  std::map<std::string, std::string> details;  ///< anything else worth recording (zone path…)
};

/// What probe() found. `available` false ⇒ `reason` says why, in words a user can act on
/// (e.g. "libnvidia-ml.so.1 not found", "permission denied reading …: run as root").
struct Probe {
  std::string source;  ///< "nvml", "amdgpu", "rapl", "host"
  bool available = false;
  std::string reason;
  std::vector<DeviceIdentity> devices;
  std::map<std::string, std::string> details;  ///< library path, versions…
};

/// One device at one instant. Each field is nullopt when not supported or when the read failed.
struct Reading {
  std::size_t device = 0;  ///< index into Probe::devices
  /// Cumulative energy counter in joules. RAPL's wrap-around is corrected by the sampler; a
  /// GPU counter reset (driver reload) shows as a decrease, which the window arithmetic
  /// (energy.h) flags as `counter_reset` and never counts as negative energy.
  std::optional<double> energy_j;
  std::optional<double> power_instant_w;
  std::optional<double> power_average_w;
  std::optional<std::int64_t> memory_used_bytes;
  std::optional<std::int64_t> process_memory_bytes;
  std::optional<double> temp_gpu_c;
  std::optional<double> temp_junction_c;
  std::optional<double> temp_memory_c;
  std::optional<double> clock_sm_mhz;
  std::optional<double> clock_memory_mhz;
  std::optional<double> utilization_pct;
  std::optional<std::uint64_t> throttle_reasons;  ///< bitmask in the source's own encoding
};

/// Contract: probe() once, then sample() from the one sampler thread, never concurrently.
/// sample() must never throw and must not block for long: a failed read leaves the field
/// nullopt and counts one error. A device lost mid-run keeps returning readings with every
/// field nullopt (and errors).
class Sampler {
 public:
  virtual ~Sampler() = default;
  virtual std::string name() const = 0;
  virtual Probe probe() = 0;
  /// Appends one Reading per device to `out`; adds the number of failed reads to `errors`.
  virtual void sample(std::vector<Reading>& out, std::uint32_t& errors) = 0;
  /// PIDs of the engine's processes (for per-process memory); may be called before sampling.
  virtual void set_process_ids(const std::vector<int>& pids) { (void)pids; }
  /// Running counters a source keeps beyond its readings, for the run manifest (e.g. RAPL
  /// "wraps.package-0": wrap-arounds corrected so far). Same thread as sample(); default none.
  virtual std::map<std::string, std::uint64_t> counters() const { return {}; }
};

/// NVIDIA through NVML loaded at run time. `library` overrides the default soname
/// "libnvidia-ml.so.1" (tests load a fake library through it; env DYNO_NVML_LIBRARY too).
/// A probe of `source`: `fill` adds what it finds; if it throws, the probe says unavailable
/// with "<label> probe failed: <what>", no devices, and `reset` drops the sampler's partial
/// state. The sampler probes of the file-based sources share it.
Probe guarded_probe(const std::string& source, const std::string& label,
                    const std::function<void(Probe&)>& fill,
                    const std::function<void()>& reset = {});

std::unique_ptr<Sampler> make_nvml_sampler(const std::string& library = "");
/// AMD GPUs through amdgpu sysfs/hwmon under `sysfs_root` (default "/sys").
std::unique_ptr<Sampler> make_amdgpu_sampler(const std::filesystem::path& sysfs_root = "/sys");
/// CPU package energy through RAPL powercap under `sysfs_root` (default "/sys").
std::unique_ptr<Sampler> make_rapl_sampler(const std::filesystem::path& sysfs_root = "/sys");
/// Host CPU utilisation and the engine processes' RSS from `proc_root` (default "/proc").
std::unique_ptr<Sampler> make_host_sampler(const std::filesystem::path& proc_root = "/proc");

}  // namespace dyno::telemetry
