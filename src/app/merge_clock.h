// `dyno runs merge`: the shards' clocks put on one time base (docs/scale.md, "Clock offsets").
// Pure: records' clock sections in, offsets out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "record/manifest.h"

namespace dyno::app {

/// One shard's clock, as its record says (clock.t0_steady_ns, measured_start_ns and t0_unix_ns
/// present: read_shard checked them).
struct ShardClock {
  std::string run_id;
  std::uint64_t k = 0;
  record::ClockSection clock;
};

/// Each shard's offset onto the merged t0 (the earliest shard's), in the order given:
/// - every shard from one boot of one host: the steady clocks' difference, exact
///   (`steady_clock`);
/// - every shard measured against the same clock reference (clock.reference, one id): each
///   wall-clock anchor moved onto the reference's clock by the shard's measured offset
///   (`measured_offset`; the shards' offsets, uncertainties and drifts recorded);
/// - else the wall-clock anchors as they are (`wall_clock`, with unmeasured_reason).
/// Also the spread of the shards' measured starts on the merged t0. `method` "auto" picks as
/// above; "measured_offset" or "wall_clock" forces that method even on one host (to check a
/// measurement against the exact steady clock, or to rehearse); UsageError when
/// measured_offset is asked for and the shards were not measured against one reference.
record::MergedFrom align_shard_clocks(const std::vector<ShardClock>& shards,
                                      const std::string& method = "auto");

/// With measured offsets: a sentence naming every shard whose measured uncertainty (before or
/// after the load) or |drift| exceeds `bound_ns`, with its figures in ms; "" when none does
/// (or the offsets are not measured).
std::string clock_bound_excess(const record::MergedFrom& merged, std::int64_t bound_ns);

}  // namespace dyno::app
