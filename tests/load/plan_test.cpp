// load::plan (load/plan.h): the shared load flags → a cell's load, the one function `dyno run`,
// every protocol cell and so every campaign cell call. Each flag is applied the same way whether
// the cell's shape comes from the flags (`run`) or from a protocol, and a bad flag fails with one
// message everywhere.
#include "load/plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "error/error.h"
#include "load/flag_numbers.h"
#include "load/shard.h"

namespace dyno::load {
namespace {

/// The UsageError `f` throws ("" when none).
template <class F>
std::string usage_error(F f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

workload::Request request(std::string id, std::optional<double> at_ms = std::nullopt) {
  workload::Request r;
  r.id = std::move(id);
  r.prompt = "hello";
  r.at_ms = at_ms;
  return r;
}

TEST(LoadPlan, RunDefaultsAClosedLoopOf8For100Requests) {
  const LoadPlan p = plan(LoadOptions{});
  EXPECT_FALSE(p.config.open_loop);
  EXPECT_EQ(p.config.concurrency, 8u);
  EXPECT_EQ(p.config.requests.value_or(0), 100u);
  EXPECT_FALSE(p.config.duration_s.has_value());
  EXPECT_EQ(p.config.client_threads, default_client_threads());
  EXPECT_FALSE(p.cycles);
  EXPECT_EQ(p.synthetic_requests, 100u);
  EXPECT_EQ(p.text, "closed loop, concurrency 8, 100 requests");
}

// The shared flags reach the load the same way whatever gives the cell its shape: `run`'s
// flags, or a protocol's cell (issue: `dyno sweep --client-threads 4` ran with one thread).
TEST(LoadPlan, SharedFlagsApplyToEveryCellAlike) {
  LoadOptions flags;
  flags.client_threads = 4;
  flags.warmup = 2;
  flags.unreachable_after_s = 3.5;
  flags.seed = 7;
  flags.error_budget = 0.25;
  flags.slo = "ttft=.5s,e2e=2s";
  CellLoad sweep_cell;
  sweep_cell.concurrency = 2;
  sweep_cell.requests = 16;
  CellLoad ladder_cell = sweep_cell;
  ladder_cell.warmup = 0;  // a protocol's own warm-up (speed's later cells)
  for (const CellLoad& cell : {CellLoad{}, sweep_cell, ladder_cell}) {
    const LoadPlan p = plan(flags, cell);
    EXPECT_EQ(p.config.client_threads, 4u);
    EXPECT_DOUBLE_EQ(p.config.unreachable_after_s, 3.5);
    EXPECT_EQ(p.seed, 7u);
    EXPECT_DOUBLE_EQ(p.error_budget, 0.25);
    ASSERT_TRUE(p.slo.has_value());
    EXPECT_DOUBLE_EQ(*p.slo->ttft_s, 0.5);
    EXPECT_DOUBLE_EQ(*p.slo->e2e_s, 2.0);
    EXPECT_EQ(p.slo_text.value_or(""), "ttft=.5s,e2e=2s");
    EXPECT_EQ(p.config.warmup, cell.warmup.value_or(2));
  }
  const LoadPlan sweep = plan(flags, sweep_cell);
  EXPECT_EQ(sweep.config.concurrency, 2u);
  EXPECT_EQ(sweep.config.requests.value_or(0), 16u);
  EXPECT_EQ(sweep.text, "closed loop, concurrency 2, 16 requests, warm-up 2");
  EXPECT_EQ(plan(flags, ladder_cell).text, "closed loop, concurrency 2, 16 requests");
}

TEST(LoadPlan, AnOpenLoopCellTakesTheArrivalFlags) {
  LoadOptions flags;
  flags.arrival = "gamma";
  flags.burstiness = 0.5;
  flags.seed = 11;
  CellLoad cell;
  cell.rate_per_s = 4;
  cell.duration_s = 30;
  const LoadPlan p = plan(flags, cell);
  ASSERT_TRUE(p.config.open_loop);
  ASSERT_TRUE(p.config.schedule.has_value());
  EXPECT_EQ(p.config.schedule->arrival, Arrival::kGamma);
  EXPECT_DOUBLE_EQ(p.config.schedule->rate_per_s, 4.0);
  EXPECT_DOUBLE_EQ(p.config.schedule->burstiness, 0.5);
  EXPECT_EQ(p.config.schedule->seed, 11u);
  EXPECT_EQ(p.config.concurrency, 1u);  // warm-up one at a time
  EXPECT_FALSE(p.config.requests.has_value());
  EXPECT_TRUE(p.cycles);  // the synthetic stream walked for the duration
  EXPECT_EQ(p.synthetic_requests, kSyntheticCycle);
  EXPECT_EQ(p.text, "open loop, 4 req/s, gamma (burstiness 0.5), 30.0 s");
  // `run --rate` gives the same load.
  LoadOptions run = flags;
  run.rate = 4;
  run.duration_s = 30;
  const LoadPlan r = plan(run);
  EXPECT_EQ(r.text, p.text);
  EXPECT_EQ(r.config.schedule->arrival, p.config.schedule->arrival);
}

// --arrival was read only where a cell was open-loop: `run -c 1 --arrival bogus`, ladder, speed
// and real took it silently, while sweep refused it. Now refused everywhere, with one message.
TEST(LoadPlan, ABadArrivalIsRefusedEvenWhereNoCellIsOpenLoop) {
  LoadOptions flags;
  flags.arrival = "bogus";
  CellLoad closed;
  closed.concurrency = 1;
  closed.requests = 1;
  CellLoad open;
  open.rate_per_s = 2;
  open.duration_s = 10;
  for (const CellLoad& cell : {CellLoad{}, closed, open}) {
    EXPECT_EQ(usage_error([&] { plan(flags, cell); }),
              "--arrival: 'bogus'; use poisson, constant or gamma");
  }
}

// --slo was checked by the flags' reader (".5s" accepted) and then parsed into the cell by another
// (".5s" refused, after the engine had started). One reader now: the flags'.
TEST(LoadPlan, SloIsReadByTheFlagsRules) {
  EXPECT_DOUBLE_EQ(*parse_slo("ttft=.5s").ttft_s, 0.5);
  EXPECT_DOUBLE_EQ(*parse_slo("ttft=+500ms").ttft_s, 0.5);
  EXPECT_DOUBLE_EQ(*parse_slo("e2e=1e3s").e2e_s, 1000.0);
  EXPECT_DOUBLE_EQ(*parse_slo("tpot=50").tpot_s, 0.05);
  EXPECT_EQ(usage_error([] { parse_slo("ttft=0x10ms"); }),
            "--slo: ttft=0x10ms: '0x10' is not a number (expected a number between 0 and "
            "2592000000); write e.g. ttft=500ms or ttft=2s");
  EXPECT_EQ(usage_error([] { parse_slo("ttft=5min"); }),
            "--slo: unit 'min' in ttft=5min; use ms or s");
  LoadOptions flags;
  flags.slo = "tpot=0.5ms";
  EXPECT_EQ(usage_error([&] { plan(flags); }),
            "--slo: tpot=0.5ms: is below 1 ms (an objective is from 1 ms to 30 days); write e.g. "
            "tpot=500ms or tpot=2s");
}

TEST(LoadPlan, FlagsThatExcludeEachOther) {
  LoadOptions both;
  both.rate = 2;
  both.concurrency = 4;
  EXPECT_NE(usage_error([&] { plan(both); }).find("--rate and --concurrency exclude each other"),
            std::string::npos);
  EXPECT_NE(usage_error([] {
              plan(LoadOptions{}, {}, {std::nullopt, true, nullptr});
            }).find("--cycle sends a --stream again"),
            std::string::npos);
  LoadOptions scale;
  scale.time_scale = 2;
  EXPECT_EQ(usage_error([&] { plan(scale); }),
            "--time-scale and --time-window shape a replay; give --schedule timestamps");
  LoadOptions replay;
  replay.schedule = "timestamps";
  EXPECT_NE(usage_error([&] { plan(replay); }).find("replays a --stream"), std::string::npos);
  replay.rate = 1;
  EXPECT_NE(usage_error([&] {
              plan(replay, {}, {"s.jsonl", false, nullptr});
            }).find("it excludes --rate and --concurrency"),
            std::string::npos);
  LoadOptions start;
  start.start_at = "now+5s";
  EXPECT_NE(usage_error([&] { plan(start); }).find("give --shard K/N too"), std::string::npos);
}

TEST(LoadPlan, AStreamBoundsTheRequestsUnlessItCycles) {
  const std::vector<workload::Request> lines = {request("a"), request("b"), request("c")};
  const StreamFacts file{"s.jsonl", false, &lines};
  LoadOptions flags;
  flags.warmup = 1;
  LoadPlan p = plan(flags, {}, file);
  EXPECT_EQ(p.config.requests.value_or(0), 2u);  // the lines the warm-up leaves
  EXPECT_FALSE(p.cycles);
  EXPECT_EQ(p.synthetic_requests, 0u);
  flags.requests = 3;
  EXPECT_EQ(usage_error([&] { plan(flags, {}, file); }),
            "-n 3 and --warmup 1 ask for 4 requests but --stream s.jsonl holds 3 requests; lower "
            "-n, or give --cycle to send the stream again from its start");
  p = plan(flags, {}, {"s.jsonl", true, &lines});
  EXPECT_EQ(p.config.requests.value_or(0), 3u);
  EXPECT_TRUE(p.cycles);
  EXPECT_EQ(p.text, "closed loop, concurrency 8, 3 requests, warm-up 1, cycling the stream");
  flags.requests.reset();
  flags.warmup = 3;
  EXPECT_NE(usage_error([&] { plan(flags, {}, file); }).find("--warmup 3 leaves no measured"),
            std::string::npos);
  // Not read yet: the flags are checked, the count is left open.
  p = plan(flags, {}, {"s.jsonl", false, nullptr});
  EXPECT_FALSE(p.config.requests.has_value());
}

TEST(LoadPlan, AReplaySendsTheWindowOnce) {
  const std::vector<workload::Request> lines = {request("a", 0), request("b", 500),
                                                request("c", 1500)};
  LoadOptions flags;
  flags.schedule = "timestamps";
  flags.time_window = "0,1";
  flags.time_scale = 2;
  const LoadPlan p = plan(flags, {}, {"t.jsonl", false, &lines});
  ASSERT_TRUE(p.config.replay.has_value());
  EXPECT_TRUE(p.config.open_loop);
  EXPECT_DOUBLE_EQ(p.config.replay->to_ms.value_or(0), 1000.0);
  EXPECT_EQ(p.config.requests.value_or(0), 2u);
  EXPECT_EQ(p.text, "replay of the stream's timestamps, time scale 2, window 0,1, 2 requests");
  EXPECT_EQ(usage_error([&] {
              plan(flags, {}, {"t.jsonl", true, &lines});
            }),
            "--cycle: a replay sends each request once");
  flags.time_window = "0x10,";
  EXPECT_NE(usage_error([&] {
              plan(flags, {}, {"t.jsonl", false, &lines});
            }).find("--time-window 0x10,: '0x10': '0x10' is not a number"),
            std::string::npos);
  const std::vector<workload::Request> untimed = {request("u")};
  flags.time_window.reset();
  EXPECT_NE(usage_error([&] {
              plan(flags, {}, {"t.jsonl", false, &untimed});
            }).find("request 'u' of --stream t.jsonl has no at_ms"),
            std::string::npos);
}

// An open loop's schedule is bounded before anything is built, named by the flags the cell's
// rate and duration came from: `run`'s, or a sweep's --rates and --rate-duration.
TEST(LoadPlan, OpenLoopSchedulesAreBoundedNamingTheCellsFlags) {
  LoadOptions run;
  run.rate = 1'000'000;
  run.duration_s = 10;
  EXPECT_EQ(usage_error([&] { plan(run); }),
            "--rate 1000000 for --duration 10 s would schedule about 10000000 requests, more than "
            "the limit of 1000000 for an open loop (each request's trace is held in memory until "
            "the record is written); lower --rate, --duration or -n");
  LoadOptions slow;
  slow.rate = 0.001;
  slow.requests = 5000;
  EXPECT_EQ(usage_error([&] { plan(slow); }),
            "--rate 0.001 would take about 5000000 s to send 5000 requests, past the limit of "
            "2592000 s (30 days); raise --rate, lower -n or give --duration");
  CellLoad sweep;
  sweep.rate_per_s = 50'000;
  sweep.duration_s = 30;
  sweep.names = {"--rates", "--rate-duration", ""};
  EXPECT_EQ(usage_error([&] { plan(LoadOptions{}, sweep); }),
            "--rates 50000 for --rate-duration 30 s would schedule about 1500000 requests, more "
            "than the limit of 1000000 for an open loop (each request's trace is held in memory "
            "until the record is written); lower --rates or --rate-duration");
}

TEST(LoadPlan, AShardSplitsTheClosedLoop) {
  LoadOptions flags;
  flags.shard = "1/2";
  flags.concurrency = 4;
  const LoadPlan p = plan(flags);
  ASSERT_TRUE(p.config.shard.has_value());
  EXPECT_EQ(p.config.shard->k, 1u);
  EXPECT_EQ(p.text, "closed loop, concurrency 4, shard 1/2 (concurrency 2 here), 100 requests");
  flags.concurrency = 1;
  EXPECT_NE(usage_error([&] { plan(flags); }).find("-c 1 cannot be split over 2 shards"),
            std::string::npos);
  flags.concurrency = 4;
  workload::Request turn = request("t");
  turn.turn = workload::Turn{};
  const std::vector<workload::Request> sessions = {turn};
  EXPECT_NE(usage_error([&] {
              plan(flags, {}, {"s.jsonl", true, &sessions});
            }).find("--shard splits a stream of single requests"),
            std::string::npos);
}

TEST(ShardFlags, SlurmTaskNumbersBecomeTheShard) {
  const Shard s = slurm_shard("1", "4");
  EXPECT_EQ(s.k, 1U);
  EXPECT_EQ(s.n, 4U);
  EXPECT_THROW(slurm_shard(nullptr, "2"), UsageError);
  EXPECT_THROW(slurm_shard("0", nullptr), UsageError);
  EXPECT_THROW(slurm_shard("2", "2"), UsageError);
  EXPECT_THROW(slurm_shard("0", "0"), UsageError);
  EXPECT_THROW(slurm_shard("-1", "2"), UsageError);
  EXPECT_THROW(slurm_shard("1x", "2"), UsageError);
  try {
    slurm_shard(nullptr, "2");
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("SLURM_PROCID is not set"), std::string::npos);
  }
}

// The readers every numeric flag goes through are load's (app/flag_values.h makes CLI11
// transforms of them); a bad value is a usage error.
TEST(FlagNumbers, ABadValueIsAUsageError) {
  EXPECT_THROW(parse_number("0x10", 0, 100), UsageError);
  EXPECT_THROW(parse_integer("010", 0, 100), UsageError);
  EXPECT_DOUBLE_EQ(parse_number(".5", 0, 1), 0.5);
  EXPECT_EQ(split_unit("10m"), (std::pair<std::string, std::string>{"10", "m"}));
}

}  // namespace
}  // namespace dyno::load
