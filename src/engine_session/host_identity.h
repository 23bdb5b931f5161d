// What a record says of the machine and of the harness that measured: dyno's own build
// identity, the host's hardware (GPUs from telemetry), and the client process's CPU time and
// peak memory — read from the kernel and /proc, apart from the cell's steps (run_cell.cpp).
#pragma once

#include "record/manifest_sections.h"

namespace dyno::telemetry {
class Monitor;
}

namespace dyno::engine_session {

/// The dyno that runs now, as a manifest's `harness` says it (name, version, git commit and
/// dirty flag, build type, the executable's SHA-256, `unknown` reasons); computed once.
const record::HarnessIdentity& harness_identity();

/// The host's identity (manifest `hardware`): host name, CPU model and cores, RAM, and `gpus`
/// from `monitor`'s telemetry (empty without it); every field left null, and an empty `gpus`,
/// has its reason in `unknown`; `label` a short line naming it all.
record::HardwareIdentity hardware_identity(const telemetry::Monitor* monitor);

/// The whole process's CPU time (user + system), in seconds.
double cpu_seconds_self();
/// The calling thread's CPU time, in seconds.
double cpu_seconds_this_thread();
/// The whole process's peak resident memory, in bytes.
double peak_rss_bytes();

}  // namespace dyno::engine_session
