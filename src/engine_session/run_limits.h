// What a run needs of the host before it sends anything: file descriptors for its connections.
#pragma once

#include <cstdint>
#include <string>

#include "engine_session/options.h"
#include "error/error.h"

namespace dyno::engine_session {

/// Descriptors a run holds besides its connections: standard streams, the record's files, the
/// event loop, telemetry readers, the run index, /metrics scrapes, a launched engine's log,
/// the embedded engine's listener and loop, with room to spare. (A `dyno run` against the
/// embedded engine holds about 20; docs/architecture.md.)
inline constexpr std::uint64_t kDescriptorMargin = 64;

/// Descriptors `connections` requests in flight need: one socket each, two with the embedded
/// simulated engine (it holds the server's end in the same process), none with --plugin.
std::uint64_t descriptors_needed(std::uint64_t connections, const TargetOptions& target);

/// The soft RLIMIT_NOFILE (main raised it to the hard limit); UINT64_MAX when unlimited.
std::uint64_t descriptor_limit();

/// Refuses a closed-loop run whose `connections` (as `flag` gave them, e.g. "-c 200") need more
/// descriptors than `ulimit -n` allows: a UsageError naming ulimit -n and both numbers.
void check_descriptors(std::uint64_t connections, const std::string& flag,
                       const TargetOptions& target);

/// Open loop: requests in flight are rate x latency, unknown before sending. Prints a warning
/// (stderr) when requests as slow as --timeout (60 s without it) at `rate` would need more
/// descriptors than the limit allows.
void warn_open_loop_descriptors(double rate, const TargetOptions& target);

}  // namespace dyno::engine_session
