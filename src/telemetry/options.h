// What the user asked of telemetry (flags --telemetry, --telemetry-period-ms, --idle-baseline,
// --nvml-library, --sysfs-root, --proc-root).
#pragma once

#include <string>

namespace dyno::telemetry {

struct TelemetryOptions {
  std::string mode = "auto";      ///< auto: every available source; off: none
  double period_ms = 100.0;       ///< sampler period
  double idle_baseline_s = 10.0;  ///< idle window before the first cell (power sources only)
  std::string nvml_library;       ///< "" = libnvidia-ml.so.1 (or $DYNO_NVML_LIBRARY)
  std::string sysfs_root = "/sys";
  std::string proc_root = "/proc";

  bool off() const { return mode == "off"; }
};

}  // namespace dyno::telemetry
