// A shard's clock measured against a clock reference (`dyno run --clock-ref HOST:PORT`,
// `dyno clock serve`; docs/scale.md "Clock offsets"): a burst of probes before the load and
// another after it, written to the manifest's clock.reference.
#pragma once

#include <cstdint>
#include <string>

#include "record/manifest.h"

namespace dyno::engine_session {

/// The largest offset from the reference that a run accepts: one day. Clocks that NTP keeps
/// agree within milliseconds; a larger offset is a clock set wrong (a dead RTC battery: 1970),
/// and shards merged across it would be nonsense.
inline constexpr std::int64_t kMaxClockOffsetNs = 86'400'000'000'000;

/// The burst before the load: a ClockReference with address, id and `before`. Throws
/// dyno::Error (kind input, exit 2) naming --clock-ref when the reference cannot be measured
/// (unreachable, not a dyno clock reference, too few valid replies), or when this host's clock
/// is more than kMaxClockOffsetNs off it (naming the reference and the offset).
record::ClockReference clock_reference_before(const std::string& address);

/// The burst after the load into `r.after`; when it fails (or another reference answers),
/// `r.after_error` says why instead. Never throws: the run's record is worth keeping.
void clock_reference_after(record::ClockReference& r);

}  // namespace dyno::engine_session
