// A shard's clock measured against a clock reference (`dyno run --clock-ref HOST:PORT`,
// `dyno clock serve`; docs/scale.md "Clock offsets"): a burst of probes before the load and
// another after it, written to the manifest's clock.reference.
#pragma once

#include <string>

#include "record/manifest.h"

namespace dyno::session {

/// The burst before the load: a ClockReference with address, id and `before`. Throws
/// dyno::Error (kind input, exit 2) naming --clock-ref when the reference cannot be measured
/// (unreachable, not a dyno clock reference, too few valid replies).
record::ClockReference clock_reference_before(const std::string& address);

/// The burst after the load into `r.after`; when it fails (or another reference answers),
/// `r.after_error` says why instead. Never throws: the run's record is worth keeping.
void clock_reference_after(record::ClockReference& r);

}  // namespace dyno::session
