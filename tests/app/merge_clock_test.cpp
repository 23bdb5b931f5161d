// The shards' clocks on one time base (app/merge_clock.h): synthetic hosts whose wall clocks
// disagree, with and without offsets measured against a reference.
#include "app/merge_clock.h"

#include <gtest/gtest.h>

#include "error/error.h"

namespace dyno::app {
namespace {

constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kTrueT0 = 1'780'000'000'000'000'000;  // the reference's clock at t0

record::ClockMeasurement measured(std::int64_t offset, std::int64_t uncertainty) {
  return record::ClockMeasurement{offset, uncertainty, 2 * uncertainty,
                                  16,     16,          kTrueT0 - 5'000 * kMs};
}

/// Shard k on its own host (boot `boot`), whose wall clock runs `skew` ahead of the
/// reference's; t0 at true time kTrueT0 + `late`, its steady clock reading `steady_t0` then.
ShardClock shard(std::uint64_t k, const std::string& boot, std::int64_t skew, std::int64_t late,
                 std::int64_t steady_t0) {
  ShardClock s;
  s.run_id = "r" + std::to_string(k);
  s.k = k;
  s.clock.t0_steady_ns = steady_t0;
  s.clock.measured_start_ns = 1 * kMs;
  s.clock.t0_unix_ns = kTrueT0 + late + skew;
  s.clock.t0_unix_uncertainty_ns = 100;
  s.clock.boot_id = boot;
  return s;
}

void measure(ShardClock& s, std::int64_t offset, std::int64_t uncertainty,
             std::string id = "00000000000000aa") {
  record::ClockReference r;
  r.address = "ref:7123";
  r.id = std::move(id);
  r.before = measured(offset, uncertainty);
  r.after = measured(offset, uncertainty);
  s.clock.reference = r;
}

TEST(MergeClock, UnmeasuredWallClocksCarryTheirSkewIntoTheOffsets) {
  // Host 0's clock is 250 ms ahead; both started at the same true instant.
  const std::vector<ShardClock> shards = {shard(0, "a", 250 * kMs, 0, 10),
                                          shard(1, "b", 0, 0, 99'000)};
  const record::MergedFrom m = align_shard_clocks(shards);
  EXPECT_EQ(m.clock_method, "wall_clock");
  ASSERT_TRUE(m.unmeasured_reason);
  EXPECT_NE(m.unmeasured_reason->find("--clock-ref"), std::string::npos);
  EXPECT_EQ(m.shards[0].offset_ns, 250 * kMs);  // wrong by the skew: dyno cannot tell
  EXPECT_EQ(m.shards[1].offset_ns, 0);
  EXPECT_EQ(m.start_spread_ns, 250 * kMs);
  EXPECT_EQ(m.uncertainty_ns, 200);
  EXPECT_FALSE(m.clock_reference_id);
}

TEST(MergeClock, MeasuredOffsetsCorrectA250msSkew) {
  std::vector<ShardClock> shards = {shard(0, "a", 250 * kMs, 0, 10),
                                    shard(1, "b", 0, 3 * kMs, 99'000)};  // shard 1 3 ms late
  measure(shards[0], 250 * kMs + 40'000, 60'000);  // measured 40 µs off the truth
  measure(shards[1], -20'000, 80'000);
  shards[1].clock.reference->after->offset_ns = -20'000 + 5'000;  // drifted 5 µs
  const record::MergedFrom m = align_shard_clocks(shards);
  EXPECT_EQ(m.clock_method, "measured_offset");
  EXPECT_EQ(m.clock_reference_id, "00000000000000aa");
  EXPECT_FALSE(m.unmeasured_reason);
  // True offsets: shard 0 at 0, shard 1 at 3 ms; the estimates are off by the measurement
  // errors (40 µs and -20 µs), within the stated uncertainties.
  EXPECT_EQ(m.shards[0].offset_ns, 0);
  EXPECT_EQ(m.shards[1].offset_ns, 3 * kMs + 20'000 + 40'000);
  EXPECT_EQ(m.start_spread_ns, m.shards[1].offset_ns);
  EXPECT_EQ(m.shards[0].clock_offset_ns, 250 * kMs + 40'000);
  EXPECT_EQ(m.shards[1].clock_uncertainty_ns, 80'000);
  EXPECT_EQ(m.shards[1].clock_drift_ns, 5'000);
  EXPECT_EQ(m.shards[0].clock_drift_ns, 0);
  // (80 µs + 5 µs drift + 100 ns anchor) + (60 µs + 100 ns)
  EXPECT_EQ(m.uncertainty_ns, 85'100 + 60'100);
  EXPECT_LE(std::llabs(m.shards[1].offset_ns - 3 * kMs), m.uncertainty_ns);
  EXPECT_EQ(clock_bound_excess(m, 1 * kMs), "");
  const std::string excess = clock_bound_excess(m, 70'000);
  EXPECT_NE(excess.find("shard 1 (run r1): uncertainty 0.08 ms"), std::string::npos) << excess;
  EXPECT_EQ(excess.find("shard 0"), std::string::npos) << excess;
}

TEST(MergeClock, DriftBeyondTheBoundIsNamed) {
  std::vector<ShardClock> shards = {shard(0, "a", 0, 0, 1), shard(1, "b", 7 * kMs, 0, 2)};
  measure(shards[0], 0, 10'000);
  measure(shards[1], 7 * kMs, 10'000);
  shards[1].clock.reference->after->offset_ns = 9 * kMs;  // 2 ms drift over the run
  const record::MergedFrom m = align_shard_clocks(shards);
  EXPECT_EQ(m.shards[1].offset_ns, 0);
  EXPECT_EQ(clock_bound_excess(m, 1 * kMs), "shard 1 (run r1): drift 2 ms (bound 1 ms)");
}

TEST(MergeClock, OneBootStaysExactWhateverWasMeasured) {
  std::vector<ShardClock> shards = {shard(0, "same", 0, 0, 5'000), shard(1, "same", 0, 0, 7'000)};
  measure(shards[0], 0, 900 * kMs);  // hopeless measurements do not matter on one host
  measure(shards[1], 0, 900 * kMs);
  const record::MergedFrom m = align_shard_clocks(shards);
  EXPECT_EQ(m.clock_method, "steady_clock");
  EXPECT_EQ(m.shards[1].offset_ns, 2'000);
  EXPECT_EQ(m.uncertainty_ns, 0);
  EXPECT_EQ(clock_bound_excess(m, 1 * kMs), "");
}

TEST(MergeClock, AMethodCanBeForced) {
  // One host, two shards 2 µs apart on the steady clock, measured against a reference 250 ms
  // behind: measured_offset recovers the steady clock's 2 µs from the wall clocks.
  std::vector<ShardClock> shards = {shard(0, "same", 0, 0, 5'000),
                                    shard(1, "same", 0, 2'000, 7'000)};
  measure(shards[0], 250 * kMs, 10'000);
  measure(shards[1], 250 * kMs, 10'000);
  for (ShardClock& s : shards) *s.clock.t0_unix_ns += 250 * kMs;  // the host's clock
  const record::MergedFrom m = align_shard_clocks(shards, "measured_offset");
  EXPECT_EQ(m.clock_method, "measured_offset");
  EXPECT_EQ(m.shards[1].offset_ns, 2'000);
  const record::MergedFrom w = align_shard_clocks(shards, "wall_clock");
  EXPECT_EQ(w.clock_method, "wall_clock");
  EXPECT_EQ(w.unmeasured_reason, "--clock-method wall_clock left the measured offsets unused");
  shards[1].clock.reference.reset();
  EXPECT_THROW(align_shard_clocks(shards, "measured_offset"), UsageError);
  EXPECT_THROW(align_shard_clocks(shards, "ntp"), UsageError);
}

TEST(MergeClock, MixedOrDifferentReferencesFallBackToWallClockAndSayWhy) {
  std::vector<ShardClock> shards = {shard(0, "a", 0, 0, 1), shard(1, "b", 0, 0, 2),
                                    shard(2, "c", 0, 0, 3)};
  measure(shards[0], 0, 1'000);
  measure(shards[2], 0, 1'000);
  record::MergedFrom m = align_shard_clocks(shards);
  EXPECT_EQ(m.clock_method, "wall_clock");
  EXPECT_EQ(m.unmeasured_reason, "shards 1 did not measure their clocks (dyno run --clock-ref)");
  measure(shards[1], 0, 1'000, "00000000000000bb");
  m = align_shard_clocks(shards);
  EXPECT_EQ(m.clock_method, "wall_clock");
  EXPECT_NE(m.unmeasured_reason->find("different clock references (ids 00000000000000aa, "
                                      "00000000000000bb)"),
            std::string::npos);
}

}  // namespace
}  // namespace dyno::app
