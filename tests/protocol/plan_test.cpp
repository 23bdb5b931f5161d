// Protocols as plans (protocol/plan.h) and campaigns (protocol/campaign.h), without a request
// sent or a file written: the cells each protocol makes, and the campaign document a runner's
// outcomes give.
#include "protocol/plan.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "error/error.h"
#include "protocol/campaign.h"
#include "workload/synthetic.h"

namespace json = boost::json;
using namespace dyno;

namespace {

protocol::Shared shared() {
  protocol::Shared s;
  s.api = workload::Api::kCompletions;
  s.load.seed = 7;
  s.load.warmup = 2;
  s.load.error_budget = 0.1;
  s.stream.input_tokens = 16;
  s.stream.output_tokens = 4;
  return s;
}

workload::RequestStream stream_of(std::uint64_t n) {
  workload::SyntheticOptions syn;
  syn.api = workload::Api::kCompletions;
  syn.count = n;
  syn.input_tokens = 16;
  syn.output_tokens = 4;
  return workload::make_synthetic_stream(syn);
}

std::vector<std::string> names(const protocol::ProtocolPlan& plan) {
  std::vector<std::string> out;
  for (const auto& c : plan.cells) out.push_back(c.name);
  return out;
}

TEST(ProtocolPlan, SweepHasOneClosedCellPerConcurrency) {
  protocol::SweepOptions s;
  s.min_requests = 32;
  s.per_slot = 8;
  const std::vector<double> levels{1, 4, 8};
  EXPECT_EQ(protocol::sweep_requests(s, levels), 64u);
  const auto stream = stream_of(2 + 64);
  const protocol::ProtocolPlan plan = protocol::plan_sweep(s, levels, shared(), stream);
  EXPECT_EQ(plan.name, "sweep");
  EXPECT_EQ(plan.primary, "output_tokens_per_s");
  EXPECT_EQ(names(plan), (std::vector<std::string>{"c1", "c4", "c8"}));
  EXPECT_EQ(plan.params.at("request_stream_sha256"), json::value(stream.sha256));
  const engine_session::CellSpec c8 = plan.cells[2].spec_for(0);
  EXPECT_EQ(c8.load.concurrency, 8u);
  EXPECT_EQ(*c8.load.requests, 64u);
  EXPECT_EQ(c8.load.warmup, 2u);
  EXPECT_FALSE(c8.stream_cycles);  // 2 + 64 requests in a stream of 66
  EXPECT_EQ(c8.seed, 7u);
  EXPECT_DOUBLE_EQ(c8.error_budget, 0.1);
  EXPECT_EQ(plan.cells[0].spec_for(0).load.requests, 32u);
}

TEST(ProtocolPlan, SweepOverRatesHasOpenLoopCellsOfAFixedDuration) {
  protocol::SweepOptions s;
  s.rates = "2.5";
  s.rate_duration_s = 3;
  const protocol::ProtocolPlan plan = protocol::plan_sweep(s, {2.5}, shared(), stream_of(40));
  ASSERT_EQ(names(plan), std::vector<std::string>{"r2.5"});
  const engine_session::CellSpec r = plan.cells[0].spec_for(0);
  EXPECT_TRUE(r.load.open_loop);
  EXPECT_FALSE(r.load.requests.has_value());
  EXPECT_DOUBLE_EQ(*r.load.duration_s, 3.0);
  EXPECT_DOUBLE_EQ(r.load.schedule->rate_per_s, 2.5);
  EXPECT_TRUE(r.stream_cycles);
  EXPECT_EQ(r.load_text, "open loop, 2.5 req/s, poisson, 3.0 s, warm-up 2");
}

TEST(ProtocolPlan, SweepNamesABadArrivalByItsFlag) {
  protocol::SweepOptions s;
  s.rates = "1";
  protocol::Shared sh = shared();
  sh.load.arrival = "uniform";
  try {
    protocol::plan_sweep(s, {1}, sh, stream_of(4));
    FAIL() << "expected a usage error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_EQ(std::string(e.what()), "--arrival: 'uniform'; use poisson, constant or gamma");
  }
}

TEST(ProtocolPlan, LadderRepetitionsNeverRepeatAPrompt) {
  protocol::LadderOptions l;
  l.decode_tokens = 32;
  const protocol::ProtocolPlan plan = protocol::plan_ladder(l, {0, 100}, {50}, shared(), {}, "");
  EXPECT_EQ(names(plan), (std::vector<std::string>{"decode@0", "decode@100", "prefill@50"}));
  EXPECT_EQ(plan.params.at("prompt_lengths"), "approximate");
  EXPECT_EQ(plan.cells[2].metric, "prefill_rate_p50");
  std::set<std::string> hashes;
  for (const auto& cell : plan.cells) {
    for (std::uint32_t r = 0; r < 3; ++r) hashes.insert(cell.spec_for(r).stream_sha256);
  }
  EXPECT_EQ(hashes.size(), 9u);
  const engine_session::CellSpec decode = plan.cells[1].spec_for(0);
  EXPECT_EQ(decode.sampling.at("max_tokens"), 32);
  EXPECT_EQ(decode.sampling.at("ignore_eos"), true);
  EXPECT_EQ(plan.cells[2].spec_for(0).sampling.at("max_tokens"), 1);
  EXPECT_EQ(plan.cells[1].params.at("output_tokens"), 32);
  EXPECT_EQ(plan.cells[2].params.at("output_tokens"), 1);
  EXPECT_EQ(plan.params.at("prefill_decode_tokens"), 1);
}

TEST(ProtocolPlan, LadderPrefillCellsMayDecodeAndKeepTheirPrefillMetric) {
  protocol::LadderOptions l;
  l.prefill_decode_tokens = 64;
  const protocol::ProtocolPlan plan = protocol::plan_ladder(l, {0}, {50}, shared(), {}, "");
  const engine_session::CellSpec prefill = plan.cells[1].spec_for(0);
  EXPECT_EQ(prefill.sampling.at("max_tokens"), 64);
  EXPECT_EQ(prefill.sampling.at("ignore_eos"), true);  // it decodes all 64
  EXPECT_EQ(plan.cells[1].metric, "prefill_rate_p50");
  EXPECT_EQ(plan.cells[1].params.at("output_tokens"), 64);
  EXPECT_EQ(plan.params.at("prefill_decode_tokens"), 64);
}

TEST(ProtocolPlan, SpeedRepeatsAPassesPromptsForItsDriftPass) {
  protocol::SpeedOptions sp;
  sp.concurrency = 3;
  const protocol::ProtocolPlan plan =
      protocol::plan_speed(sp, {"fr", "en", "fr2"}, shared(), std::nullopt);
  EXPECT_EQ(names(plan), (std::vector<std::string>{"fr/solo", "fr/agg", "en/solo", "en/agg",
                                                   "fr2/solo", "fr2/agg"}));
  const engine_session::CellSpec fr = plan.cells[0].spec_for(0);
  const engine_session::CellSpec fr2 = plan.cells[4].spec_for(0);
  EXPECT_EQ(fr.load.warmup, 2u);  // the session's --warmup (at least one), before the first solo
  EXPECT_EQ(fr.requests.size(), 3u);
  EXPECT_EQ(fr2.load.warmup, 0u);
  EXPECT_EQ(fr.requests.back().prompt, fr2.requests.back().prompt);
  EXPECT_NE(plan.cells[2].spec_for(0).requests.back().prompt, fr2.requests.back().prompt);
  EXPECT_EQ(plan.cells[1].spec_for(0).load.concurrency, 3u);
}

TEST(ProtocolPlan, SpeedRefusesAPassWithoutPrompts) {
  workload::RequestStream file = stream_of(2);
  protocol::Shared sh = shared();
  sh.stream.file = "prompts.jsonl";
  EXPECT_THROW(protocol::plan_speed({}, {"fr"}, sh, file), UsageError);
}

TEST(ProtocolPlan, RealHasOneCellPerCase) {
  workload::RequestStream stream = stream_of(3);
  stream.requests[0].tags["case"] = "a";
  stream.requests[1].tags["case"] = "b";
  stream.requests[2].tags["case"] = "a";
  const protocol::ProtocolPlan plan = protocol::plan_real({}, shared(), stream);
  EXPECT_EQ(names(plan), (std::vector<std::string>{"a", "b"}));
  // --warmup 2: two discarded requests (8 tokens each) before the first case only.
  const engine_session::CellSpec a = plan.cells[0].spec_for(0);
  EXPECT_EQ(a.requests.size(), 4u);
  EXPECT_EQ(a.load.warmup, 2u);
  EXPECT_EQ(a.load.requests.value_or(0), 2u);
  EXPECT_EQ(a.requests[0].sampling.max_tokens.value_or(0), 8);
  EXPECT_EQ(plan.cells[1].spec_for(0).load.warmup, 0u);
  EXPECT_EQ(plan.cells[0].params.at("requests"), 2);
}

TEST(ProtocolPlan, EveryCellOfEveryProtocolTakesTheSharedFlagsAsRunDoes) {
  protocol::Shared sh = shared();
  sh.load.client_threads = 3;
  sh.load.unreachable_after_s = 4;
  sh.load.slo = "ttft=900ms";
  sh.record.keep_outputs = true;
  sh.record.no_chunk_times = true;
  sh.stream.extra_body = R"({"cache_prompt":false})";
  workload::RequestStream cases = stream_of(2);
  cases.requests[0].tags["case"] = "a";
  std::vector<protocol::ProtocolPlan> plans;
  protocol::SweepOptions rates;
  rates.rates = "2";
  plans.push_back(protocol::plan_sweep({}, {1, 2}, sh, stream_of(80)));
  plans.push_back(protocol::plan_sweep(rates, {2}, sh, stream_of(80)));
  plans.push_back(protocol::plan_ladder({}, {0, 100}, {50}, sh, {}, ""));
  plans.push_back(protocol::plan_speed({}, {"fr"}, sh, std::nullopt));
  plans.push_back(protocol::plan_real({}, sh, cases));
  for (const auto& plan : plans) {
    for (const auto& cell : plan.cells) {
      SCOPED_TRACE(plan.name + " " + cell.name);
      const engine_session::CellSpec c = cell.spec_for(0);
      EXPECT_EQ(c.load.client_threads, 3u);
      EXPECT_EQ(c.load.unreachable_after_s, 4.0);
      EXPECT_FALSE(c.load.keep_event_times);
      EXPECT_TRUE(c.load.keep_output_text);
      EXPECT_EQ(c.seed, 7u);
      EXPECT_EQ(c.error_budget, 0.1);
      EXPECT_EQ(c.slo.ttft_s.value_or(0), 0.9);
      EXPECT_EQ(c.slo_text, "ttft=900ms");
      EXPECT_EQ(json::serialize(c.extra_body), R"({"cache_prompt":false})");
      // Synthetic prompts get the fields here; a --stream's get them when it is read
      // (engine_session::stream_as_given).
      if (plan.name == "ladder" || plan.name == "speed") {
        for (const auto& r : c.requests) EXPECT_EQ(r.extra_body, R"({"cache_prompt":false})");
      }
      if (plan.name == "sweep" && c.load.open_loop) {
        EXPECT_EQ(c.load.schedule->seed, 7u);
        EXPECT_EQ(c.load.warmup, 2u);
      }
    }
  }
}

TEST(ProtocolPlan, EngineTimedFiguresSitBesideTheClientsNamedAsTheEngines) {
  engine_session::CellOutcome c;
  c.summary.decode_rate_per_user.p50 = 40.0;
  c.summary.tokens_per_event = 2.5;
  const auto ladder = protocol::plan_ladder({}, {0}, {}, shared(), {}, "");
  // No timings and no /metrics: the client's figures and tokens per event only.
  json::object f = ladder.figures(c);
  EXPECT_EQ(f.at("decode_tok_s"), 40.0);
  EXPECT_EQ(f.at("tokens_per_event"), 2.5);
  EXPECT_FALSE(f.contains("server_decode_tok_s"));
  EXPECT_FALSE(f.contains("draft_acceptance_metrics"));
  // The engine's timings and its /metrics, each under its own name.
  c.server_timings.with_timings = 2;
  c.server_timings.prefill_rate.p50 = 1000.0;
  c.server_timings.decode_rate_per_user.p50 = 45.0;
  c.server_timings.prompt_tokens_cached = 60;
  c.server_timings.acceptance_rate = 0.7;
  c.summary_file.server = json::object{{"source", "/metrics"},
                                       {"dialect", "vllm"},
                                       {"prompt_tokens", 100.0},
                                       {"generation_tokens", 64.0},
                                       {"preemptions", 0.0},
                                       {"prefix_cache_hit_rate", nullptr},
                                       {"spec_decode_acceptance_rate", 0.65},
                                       {"counter_reset", false},
                                       {"counters", json::object{}}};
  for (const protocol::ProtocolPlan& plan :
       {ladder, protocol::plan_real({}, shared(), stream_of(1)),
        protocol::plan_speed({}, {"fr"}, shared(), std::nullopt)}) {
    f = plan.figures(c);
    SCOPED_TRACE(plan.name);
    EXPECT_EQ(f.at("server_prefill_tok_s"), 1000.0);
    EXPECT_EQ(f.at("server_decode_tok_s"), 45.0);
    EXPECT_EQ(f.at("cached_prompt_tokens"), 60);
    EXPECT_EQ(f.at("draft_acceptance_timings"), 0.7);
    EXPECT_EQ(f.at("draft_acceptance_metrics"), 0.65);
    EXPECT_EQ(f.at("tokens_per_event"), 2.5);
  }
}

/// A campaign over a runner that makes outcomes up: decode rates by repetition.
TEST(ProtocolCampaign, SelectsTheMedianRepetitionAndKeepsEveryRun) {
  protocol::LadderOptions l;
  l.rep.repeat = 3;
  const protocol::ProtocolPlan plan = protocol::plan_ladder(l, {0}, {}, shared(), {}, "");
  protocol::ProtocolCampaign campaign(plan, "");
  const std::vector<double> rates{30, 10, 20};
  std::size_t n = 0;
  std::vector<std::string> said;
  campaign.run(
      [&](const engine_session::CellSpec& spec) {
        EXPECT_EQ(spec.label, "ladder");
        EXPECT_EQ(*spec.campaign, campaign.id());
        engine_session::CellOutcome out;
        out.run_id = "run-" + std::to_string(n);
        out.status = "ok";
        out.summary.decode_rate_per_user.p50 = rates[n++];
        return out;
      },
      [&](const std::string& line) { said.push_back(line); });
  EXPECT_EQ(said.front(), "dyno ladder: cell decode@0 (repetition 1 of 3)");
  const json::object engine{
      {"name", "e"},
      {"version", nullptr},
      {"reached", json::object{{"kind", "http"}, {"scheme", "http"}, {"path", "/v1"}}},
      {"engine_args", json::object{}},
      {"api_key_used", false}};
  const json::object doc = campaign.document(engine, "m", nullptr);
  EXPECT_EQ(doc.at("status"), "ok");
  const auto& cell = doc.at("cells").as_array().at(0).as_object();
  EXPECT_EQ(cell.at("runs").as_array().size(), 3u);
  EXPECT_EQ(cell.at("selected_run"), "run-2");  // 20: the median of 10, 20, 30
  EXPECT_EQ(cell.at("figures").at("decode_tok_s").at("selected"), 20.0);
}

TEST(ProtocolCampaign, StopsAtAnInterruptAndCallsAFailedCellPartial) {
  protocol::SweepOptions s;
  const protocol::ProtocolPlan plan = protocol::plan_sweep(s, {1, 2, 4}, shared(), stream_of(40));
  {
    protocol::ProtocolCampaign campaign(plan, "mine");
    std::size_t runs = 0;
    campaign.run(
        [&](const engine_session::CellSpec& spec) {
          EXPECT_EQ(spec.label, "mine");
          engine_session::CellOutcome out;
          out.status = ++runs == 1 ? "failed" : "ok";
          return out;
        },
        [](const std::string&) {});
    EXPECT_EQ(runs, 3u);
    EXPECT_EQ(campaign.status(), "partial");
  }
  protocol::ProtocolCampaign campaign(plan, "");
  std::size_t runs = 0;
  campaign.run(
      [&](const engine_session::CellSpec&) {
        engine_session::CellOutcome out;
        out.status = "interrupted";
        out.interrupted = ++runs == 2;
        return out;
      },
      [](const std::string&) {});
  EXPECT_EQ(runs, 2u);
  EXPECT_EQ(campaign.status(), "interrupted");
}

TEST(ProtocolCampaign, RefusesAnUnknownSelectionMetric) {
  protocol::SweepOptions s;
  s.rep.select = "speed";
  const protocol::ProtocolPlan plan = protocol::plan_sweep(s, {1}, shared(), stream_of(40));
  EXPECT_THROW(protocol::ProtocolCampaign(plan, ""), UsageError);
}

}  // namespace
