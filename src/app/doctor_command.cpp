// `dyno doctor`: what telemetry this host offers, and why a source is missing.
#include <iostream>

#include "app/run_command.h"
#include "telemetry/energy_report.h"
#include "telemetry/monitor.h"

namespace dyno::app {

int doctor_command(const telemetry::TelemetryOptions& t) {
  telemetry::Monitor monitor(telemetry::default_samplers(t.nvml_library, t.sysfs_root, t.proc_root),
                             static_cast<std::int64_t>(t.period_ms * 1e6));
  std::cout << telemetry::doctor_text(monitor);
  return kExitOk;
}

}  // namespace dyno::app
