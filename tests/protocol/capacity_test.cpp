#include "protocol/capacity.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include "error/error.h"

namespace dyno::protocol {
namespace {

namespace json = boost::json;

metrics::Trace request(double ttft_s, double tpot_s, int tokens = 10, bool ok = true) {
  metrics::Trace t;
  t.sent_ns = 0;
  const auto ns = [](double s) { return static_cast<std::int64_t>(s * 1e9); };
  t.first_token_ns = ns(ttft_s);
  t.last_token_ns = ns(ttft_s + tpot_s * (tokens - 1));
  t.done_ns = t.last_token_ns;
  t.output_tokens = tokens;
  t.input_tokens = 16;
  if (!ok) {
    t.status = metrics::RequestStatus::kError;
    t.error_category = "timeout";
  }
  return t;
}

std::vector<const metrics::Trace*> ptrs(const std::vector<metrics::Trace>& v) {
  std::vector<const metrics::Trace*> out;
  for (const auto& t : v) out.push_back(&t);
  return out;
}

TEST(CapacitySlo, ReadsPercentileObjectivesAndAnErrorShare) {
  const CapacitySlo s = parse_capacity_slo("ttft_p90=500ms,tpot_p99.9=0.05s,errors=1%", 0.95);
  ASSERT_EQ(s.objectives.size(), 3u);
  EXPECT_EQ(s.objectives[0].figure, "ttft");
  EXPECT_DOUBLE_EQ(*s.objectives[0].quantile, 0.9);
  EXPECT_DOUBLE_EQ(s.objectives[0].limit, 0.5);
  EXPECT_DOUBLE_EQ(*s.objectives[1].quantile, 0.999);
  EXPECT_DOUBLE_EQ(s.objectives[1].limit, 0.05);
  EXPECT_FALSE(s.objectives[2].quantile);
  EXPECT_DOUBLE_EQ(s.objectives[2].limit, 0.01);
  EXPECT_DOUBLE_EQ(parse_capacity_slo("e2e_p50=2s,errors=0.02", 0.9).objectives[1].limit, 0.02);
  const metrics::Slo g = goodput_slo(s);
  EXPECT_DOUBLE_EQ(*g.ttft_s, 0.5);
  EXPECT_DOUBLE_EQ(*g.tpot_s, 0.05);
  EXPECT_FALSE(g.e2e_s);
}

TEST(CapacitySlo, RefusesWhatItCannotJudgeNamingTheFlag) {
  for (const char* bad : {"ttft=500ms", "itl_p90=5ms", "ttft_p100=1s", "ttft_p0=1s",
                          "ttft_pX=1s", "ttft_p90=500us", "errors=1%", "ttft_p90=1s,ttft_p90=2s",
                          "ttft_p90", "errors=150%,ttft_p90=1s", "errors=1,ttft_p90=1s", ""}) {
    try {
      parse_capacity_slo(bad, 0.95);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--slo"), std::string::npos) << e.what();
    }
  }
}

TEST(CapacityJudge, ABoundWithinTheLimitHoldsOneBeyondItFailsElseUnclear) {
  const CapacitySlo slo = parse_capacity_slo("ttft_p90=500ms", 0.95);
  std::vector<metrics::Trace> fast(40, request(0.1, 0.01));
  EXPECT_EQ(judge(slo, ptrs(fast)).verdict, Verdict::kHolds);
  std::vector<metrics::Trace> slow(40, request(0.9, 0.01));
  EXPECT_EQ(judge(slo, ptrs(slow)).verdict, Verdict::kFails);
  // 36 fast and 4 slow of 40: the p90 is at the edge; the bounds straddle the limit.
  std::vector<metrics::Trace> edge(36, request(0.1, 0.01));
  for (int i = 0; i < 4; ++i) edge.push_back(request(0.9, 0.01));
  const Judgement j = judge(slo, ptrs(edge));
  EXPECT_EQ(j.verdict, Verdict::kUnclear);
  EXPECT_EQ(j.checks[0].requests, 40u);
  ASSERT_TRUE(j.checks[0].low && j.checks[0].high);
  EXPECT_LE(*j.checks[0].low, 0.5);
  EXPECT_GT(*j.checks[0].high, 0.5);
  // Too few requests for an upper bound at 95 %: never "holds", however fast.
  std::vector<metrics::Trace> few(10, request(0.1, 0.01));
  EXPECT_EQ(judge(slo, ptrs(few)).verdict, Verdict::kUnclear);
  EXPECT_TRUE(judge(slo, ptrs(few)).point_estimate_holds);
}

TEST(CapacityJudge, ErrorsAreCountedAndLeftOutOfTheLatencies) {
  const CapacitySlo slo = parse_capacity_slo("ttft_p90=500ms,errors=5%", 0.95);
  std::vector<metrics::Trace> v(40, request(0.1, 0.01));
  for (int i = 0; i < 20; ++i) v.push_back(request(9.0, 0.01, 10, /*ok=*/false));
  const Judgement j = judge(slo, ptrs(v));
  EXPECT_EQ(j.checks[0].requests, 40u);  // only completed requests have a latency
  EXPECT_EQ(j.checks[0].verdict, Verdict::kHolds);
  EXPECT_EQ(j.checks[1].requests, 60u);
  EXPECT_NEAR(*j.checks[1].value, 20.0 / 60.0, 1e-12);
  EXPECT_EQ(j.checks[1].verdict, Verdict::kFails);
  EXPECT_EQ(j.verdict, Verdict::kFails);
  // Warm-up requests are not judged.
  std::vector<metrics::Trace> w(40, request(0.1, 0.01));
  for (auto& t : w) t.phase = "warmup";
  EXPECT_EQ(judge(slo, ptrs(w)).checks[0].requests, 0u);
}

/// A search driven by an oracle: `holds(level, repetition)` says whether that run held.
struct Oracle {
  explicit Oracle(std::function<bool(double, std::size_t)> h) : holds(std::move(h)) {}
  std::function<bool(double, std::size_t)> holds;
  std::size_t runs = 0;
  std::set<double> levels;
};

Answer drive(const SearchOptions& o, Oracle& oracle) {
  std::map<double, LevelState> levels;
  for (int guard = 0; guard < 1000; ++guard) {
    const Step s = search_step(o, levels);
    if (!s.next) return s.answer;
    LevelState& st = levels[*s.next];
    const bool h = oracle.holds(*s.next, st.each_holds.size());
    st.each_holds.push_back(h);
    ++oracle.runs;
    oracle.levels.insert(*s.next);
    // Pooled: held in the majority of runs (the repeated boundary settles it).
    std::size_t yes = 0;
    for (bool b : st.each_holds) yes += b ? 1 : 0;
    st.pooled = 2 * yes > st.each_holds.size() ? Verdict::kHolds : Verdict::kFails;
    st.pooled_point_holds = st.pooled == Verdict::kHolds;
  }
  ADD_FAILURE() << "the search did not end";
  return {};
}

TEST(CapacitySearch, FindsTheBoundaryOfAnExhaustiveSweepInAThirdOfItsCells) {
  // Every capacity from 1 to 200 under --max 256: the search's answer is the exhaustive
  // sweep's (the largest level below the first failing one), in at most a third of the
  // 256 cells the sweep runs, the boundary repeated 3 times.
  for (double truth = 1; truth <= 200; ++truth) {
    SearchOptions o;
    o.max = 256;
    Oracle oracle{[truth](double level, std::size_t) { return level <= truth; }};
    const Answer a = drive(o, oracle);
    ASSERT_EQ(a.status, "found") << truth;
    EXPECT_EQ(*a.capacity, truth);
    EXPECT_EQ(*a.first_failing, truth + 1);
    EXPECT_LE(oracle.runs * 3, 256u) << truth << ": " << oracle.runs << " runs";
    EXPECT_EQ(a.spread_repetitions, 3u);
    EXPECT_EQ(*a.spread_min, truth);
    EXPECT_EQ(*a.spread_max, truth);
  }
}

TEST(CapacitySearch, AResolutionStopsTheBisectionSooner) {
  SearchOptions o;
  o.max = 256;
  o.resolution = 8;
  Oracle oracle{[](double level, std::size_t) { return level <= 100; }};
  const Answer a = drive(o, oracle);
  EXPECT_EQ(a.status, "found");
  EXPECT_LE(*a.first_failing - *a.capacity, 8.0);
  EXPECT_LE(*a.capacity, 100.0);
  EXPECT_GT(*a.first_failing, 100.0);
}

TEST(CapacitySearch, EdgesBelowTheMinimumAndAboveTheMaximum) {
  SearchOptions o;
  o.max = 16;
  Oracle none{[](double, std::size_t) { return false; }};
  const Answer below = drive(o, none);
  EXPECT_EQ(below.status, "below_min");
  EXPECT_FALSE(below.capacity);
  EXPECT_EQ(none.levels, std::set<double>{1});
  EXPECT_EQ(none.runs, 3u);  // the lowest level confirmed by its repetitions
  Oracle all{[](double, std::size_t) { return true; }};
  const Answer above = drive(o, all);
  EXPECT_EQ(above.status, "at_least_max");
  EXPECT_EQ(*above.capacity, 16.0);
  EXPECT_EQ(all.levels, (std::set<double>{1, 2, 4, 8, 16}));
}

TEST(CapacitySearch, NoiseIsSettledByRepetitionNeverByOneLuckyRun) {
  // The truth is 20; the first run at 16 fails by bad luck (a noisy neighbour), later runs
  // there hold. The search repeats the boundary and finds 20, with the spread showing the
  // unlucky run.
  SearchOptions o;
  o.max = 64;
  Oracle noisy{[](double level, std::size_t rep) {
    if (level == 16 && rep == 0) return false;
    return level <= 20;
  }};
  const Answer a = drive(o, noisy);
  EXPECT_EQ(a.status, "found");
  EXPECT_EQ(*a.capacity, 20.0);
  EXPECT_EQ(*a.first_failing, 21.0);
  // A lucky run above the boundary is repeated and does not move the answer.
  Oracle lucky{[](double level, std::size_t rep) {
    if (level == 32 && rep == 0) return true;
    return level <= 20;
  }};
  const Answer b = drive(o, lucky);
  EXPECT_EQ(*b.capacity, 20.0);
}

TEST(CapacitySearch, APredictionStartsTheBracketNearIt) {
  SearchOptions o;
  o.max = 256;
  o.start = 90;
  Oracle oracle{[](double level, std::size_t) { return level <= 100; }};
  const Answer a = drive(o, oracle);
  EXPECT_EQ(*a.capacity, 100.0);
  EXPECT_EQ(*oracle.levels.begin(), 90.0);  // nothing probed below the prediction
  SearchOptions cold = o;
  cold.start.reset();
  Oracle again{[](double level, std::size_t) { return level <= 100; }};
  (void)drive(cold, again);
  EXPECT_LT(oracle.runs, again.runs);
}

TEST(CapacitySearch, RatesBisectToARelativeResolution) {
  SearchOptions o;
  o.integer = false;
  o.min = 0.5;
  o.max = 64;
  o.relative = true;
  o.resolution = 0.1;
  Oracle oracle{[](double level, std::size_t) { return level <= 7.3; }};
  const Answer a = drive(o, oracle);
  EXPECT_EQ(a.status, "found");
  EXPECT_LE(*a.capacity, 7.3);
  EXPECT_GT(*a.first_failing, 7.3);
  EXPECT_LE(*a.first_failing - *a.capacity, 0.1 * *a.capacity + 1e-9);
}

TEST(CapacitySearch, ARunLimitEndsUnresolved) {
  SearchOptions o;
  o.max = 256;
  o.max_probes = 4;
  Oracle oracle{[](double level, std::size_t) { return level <= 100; }};
  const Answer a = drive(o, oracle);
  EXPECT_EQ(a.status, "unresolved");
  EXPECT_EQ(oracle.runs, 4u);
}

TEST(CapacityParams, RoundTripThroughTheCampaignFile) {
  CapacityParams p;
  p.by = "rate";
  p.slo = parse_capacity_slo("ttft_p90=500ms,errors=1%", 0.9);
  p.search.integer = false;
  p.search.min = 0.5;
  p.search.max = 32;
  p.search.relative = true;
  p.search.resolution = 0.1;
  p.search.start = 4;
  p.gpu_hour_cost = 2.5;
  p.gpus = 2;
  p.predicted = 4;
  p.predicted_with = "fit.json";
  const json::object j = params_json(p);
  const CapacityParams back = params_from_json(j);
  EXPECT_EQ(params_json(back), j);
  json::object broken = j;
  broken["by"] = "tokens";
  EXPECT_THROW(params_from_json(broken), std::invalid_argument);
  broken = j;
  broken.erase("search");
  EXPECT_THROW(params_from_json(broken), std::invalid_argument);
}

TEST(CapacityAnswer, TheSentenceSaysTheNumbers) {
  CapacityParams p;
  p.by = "concurrency";
  p.slo = parse_capacity_slo("ttft_p90=500ms,tpot_p90=50ms,errors=1%", 0.95);
  Answer a;
  a.status = "found";
  a.capacity = 24;
  a.first_failing = 26;
  a.spread_min = 22;
  a.spread_max = 26;
  a.spread_repetitions = 3;
  EXPECT_EQ(answer_sentence(p, a),
            "capacity 24 users: ttft_p90 <= 500 ms, tpot_p90 <= 50 ms and errors <= 1 % held at "
            "24 and not at 26 (22–26 over 3 repetitions; 95 % bounds over requests)");
  Answer none;
  none.status = "below_min";
  EXPECT_EQ(answer_sentence(p, none),
            "no capacity within the SLO: ttft_p90 <= 500 ms, tpot_p90 <= 50 ms and errors <= 1 % "
            "failed already at 1 user (95 % bounds over requests)");
}

}  // namespace
}  // namespace dyno::protocol
