#include "telemetry/sampler.h"

namespace dyno::telemetry {

Probe guarded_probe(const std::string& source, const std::string& label,
                    const std::function<void(Probe&)>& fill, const std::function<void()>& reset) {
  Probe result;
  result.source = source;
  try {
    fill(result);
  } catch (const std::exception& e) {
    if (reset) reset();
    result.devices.clear();
    result.available = false;
    result.reason = label + " probe failed: " + e.what();
  }
  return result;
}

const char* to_string(Capability c) {
  switch (c) {
    case Capability::kEnergyCounter:
      return "energy_counter";
    case Capability::kPowerInstant:
      return "power_instant";
    case Capability::kPowerAverage:
      return "power_average";
    case Capability::kMemoryUsed:
      return "memory_used";
    case Capability::kProcessMemory:
      return "process_memory";
    case Capability::kTempGpu:
      return "temp_gpu";
    case Capability::kTempJunction:
      return "temp_junction";
    case Capability::kTempMemory:
      return "temp_memory";
    case Capability::kClockSm:
      return "clock_sm";
    case Capability::kClockMemory:
      return "clock_memory";
    case Capability::kUtilization:
      return "utilization";
    case Capability::kThrottle:
      return "throttle";
  }
  return "unknown";
}

}  // namespace dyno::telemetry
