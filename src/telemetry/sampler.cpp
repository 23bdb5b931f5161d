#include "telemetry/sampler.h"

namespace dyno::telemetry {

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
