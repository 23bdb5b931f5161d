// The campaign file's roll-ups (protocol/campaign_summary.h) and the summary parts of the
// campaign document: headline keys per protocol, telemetry over the whole session, energy
// flags, warnings and caveats with their cells, readiness.
#include "protocol/campaign_summary.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "protocol/campaign.h"
#include "protocol/plan.h"

namespace json = boost::json;
using namespace dyno;

namespace {

json::object device(const char* source, int index, double energy, double peak, double temp,
                    double clock, json::array flags = {}) {
  return json::object{{"source", source},
                      {"device", index},
                      {"kind", "gpu"},
                      {"name", "GPU " + std::to_string(index)},
                      {"energy_j", energy},
                      {"power_peak_w", peak},
                      {"temperature_max_c", temp},
                      {"temperature_junction_max_c", nullptr},
                      {"temperature_memory_max_c", nullptr},
                      {"memory_used_peak_bytes", 1000.0 * index + 1},
                      {"clock_sm_median_mhz", clock},
                      {"clock_memory_median_mhz", nullptr},
                      {"flags", std::move(flags)}};
}

engine_session::CellOutcome measured(const std::string& id, double window_s, double energy_j,
                                     double peak_w, std::int64_t tokens, json::array devices) {
  engine_session::CellOutcome o;
  o.run_id = id;
  o.status = "ok";
  o.summary_file.energy = json::object{
      {"window", "service"},       {"window_s", window_s},         {"scope", "gpu"},
      {"energy_j", energy_j},      {"output_tokens", tokens},      {"power_peak_w", peak_w},
      {"vram_peak_bytes", 5000.0}, {"devices", std::move(devices)}};
  return o;
}

}  // namespace

TEST(CampaignSummary, SessionTelemetrySumsEnergyOverTheMeasuredWindowsOnly) {
  const auto a = measured(
      "run-a", 2.0, 600.0, 320.0, 300,
      json::array{device("nvml", 0, 400, 200, 61, 1800), device("nvml", 1, 200, 150, 58, 1750)});
  const auto b = measured(
      "run-b", 4.0, 1400.0, 410.0, 900,
      json::array{device("nvml", 0, 900, 260, 67, 1700), device("nvml", 1, 500, 170, 60, 1760)});
  engine_session::CellOutcome off;  // telemetry off: energy without a window
  off.run_id = "run-c";
  off.summary_file.energy = json::object{{"energy_j", nullptr}, {"reason", "telemetry off"}};
  const json::object t =
      protocol::engine_session_telemetry({{"fr/solo", &a}, {"fr/agg", &b}, {"en/solo", &off}});
  EXPECT_EQ(t.at("windows").to_number<int>(), 2);
  EXPECT_DOUBLE_EQ(t.at("covered_s").as_double(), 6.0);
  EXPECT_DOUBLE_EQ(t.at("energy_j").as_double(), 2000.0);
  EXPECT_DOUBLE_EQ(t.at("power_mean_w").as_double(), 2000.0 / 6.0);
  // The peak of the summed reading is the highest window's, never a sum of card peaks.
  EXPECT_DOUBLE_EQ(t.at("power_peak_w").as_double(), 410.0);
  EXPECT_DOUBLE_EQ(t.at("output_tokens_per_j").as_double(), 1200.0 / 2000.0);
  const auto& devs = t.at("devices").as_array();
  ASSERT_EQ(devs.size(), 2u);
  const auto& d0 = devs[0].as_object();
  EXPECT_EQ(d0.at("source"), "nvml");
  EXPECT_EQ(d0.at("windows").to_number<int>(), 2);
  EXPECT_DOUBLE_EQ(d0.at("energy_j").as_double(), 1300.0);
  EXPECT_DOUBLE_EQ(d0.at("temperature_max_c").as_double(), 67.0);
  EXPECT_DOUBLE_EQ(d0.at("clock_sm_median_mhz").at("min").as_double(), 1700.0);
  EXPECT_DOUBLE_EQ(d0.at("clock_sm_median_mhz").at("max").as_double(), 1800.0);
  EXPECT_TRUE(d0.at("clock_memory_median_mhz").is_null());
}

TEST(CampaignSummary, EnergySourceAndSamplingComeFromTheRecords) {
  const auto with = [](json::object d, const char* source, std::int64_t samples) {
    d["energy_source"] = source;
    d["samples"] = samples;
    return d;
  };
  auto a = measured("run-a", 2.0, 600.0, 320.0, 300,
                    json::array{with(device("nvml", 0, 400, 200, 61, 1800), "counter", 40),
                                with(device("nvml", 1, 200, 150, 58, 1750), "counter", 41)});
  auto b = measured("run-b", 4.0, 1400.0, 410.0, 900,
                    json::array{with(device("nvml", 0, 900, 260, 67, 1700), "counter", 80),
                                with(device("nvml", 1, 500, 170, 60, 1760), "power_instant", 79)});
  a.telemetry = record::TelemetrySection{};
  a.telemetry->period_ms = {50.0, 50.4, 61.0};
  b.telemetry = record::TelemetrySection{};
  b.telemetry->period_ms = {50.0, 51.2, 70.0};
  json::object t = protocol::engine_session_telemetry({{"fr/solo", &a}, {"fr/agg", &b}});
  // One card fell back to its power readings in one window: the session says mixed, and how.
  EXPECT_EQ(t.at("energy_source"), "mixed");
  EXPECT_EQ(t.at("energy_sources"), (json::object{{"counter", 3}, {"power_instant", 1}}));
  const auto& s = t.at("sampling").as_object();
  EXPECT_DOUBLE_EQ(s.at("period_ms_requested").as_double(), 50.0);
  EXPECT_DOUBLE_EQ(s.at("period_ms_achieved_mean").at("min").as_double(), 50.4);
  EXPECT_DOUBLE_EQ(s.at("period_ms_achieved_mean").at("max").as_double(), 51.2);
  EXPECT_EQ(s.at("samples").as_int64(), 240);
  EXPECT_EQ(t.at("devices").as_array()[0].at("samples").as_int64(), 120);
  // Windows that asked for different periods have no one requested period; one source is named.
  b.telemetry->period_ms.requested = 100.0;
  t = protocol::engine_session_telemetry({{"fr/solo", &a}});
  EXPECT_EQ(t.at("energy_source"), "counter");
  t = protocol::engine_session_telemetry({{"fr/solo", &a}, {"fr/agg", &b}});
  EXPECT_TRUE(t.at("sampling").at("period_ms_requested").is_null());
}

TEST(CampaignSummary, NoTelemetryGivesAReason) {
  engine_session::CellOutcome off;
  off.summary_file.energy = json::object{{"energy_j", nullptr}, {"reason", "telemetry off"}};
  const json::object t = protocol::engine_session_telemetry({{"c1", &off}});
  EXPECT_EQ(t.at("windows").to_number<int>(), 0);
  EXPECT_TRUE(t.contains("reason"));
  EXPECT_FALSE(t.contains("energy_j"));
}

TEST(CampaignSummary, FlagsWarningsAndCaveatsNameTheirCell) {
  auto a = measured(
      "run-a", 2.0, 600.0, 320.0, 300,
      json::array{device("nvml", 1, 400, 200, 61, 1800, json::array{"energy_sources_disagree"})});
  a.summary.warnings.push_back(
      {metrics::WarningCode::kConcurrencyUnderfilled, "held 3.1 of 8", "raise --per-slot"});
  a.summary_file.caveats =
      std::vector<metrics::Caveat>{{"prompt_cache", "the engine answered from its cache"}};
  auto b = measured("run-b", 4.0, 1400.0, 410.0, 900, json::array{});
  b.summary_file.caveats = std::vector<metrics::Caveat>{
      {"prompt_cache", "another text"}, {"tokens_per_event", "2.0 tokens per event"}};
  const std::vector<protocol::CellRep> reps{{"fr/solo", &a}, {"fr/agg", &b}};

  const json::array flags = protocol::energy_flags(reps);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].at("cell"), "fr/solo");
  EXPECT_EQ(flags[0].at("run_id"), "run-a");
  EXPECT_EQ(flags[0].at("device"), "nvml:1");
  EXPECT_EQ(flags[0].at("flag"), "energy_sources_disagree");

  const json::array warnings = protocol::cell_warnings(reps);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].at("cell"), "fr/solo");
  EXPECT_EQ(warnings[0].at("code"), "concurrency_underfilled");

  const json::array caveats = protocol::cell_caveats(reps);
  ASSERT_EQ(caveats.size(), 2u);
  EXPECT_EQ(caveats[0].at("code"), "prompt_cache");
  const auto& cache = caveats[0].at("cells").as_array();
  ASSERT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache[0].at("text"), "the engine answered from its cache");  // each run's own text
  EXPECT_EQ(cache[1].at("text"), "another text");
  EXPECT_EQ(cache[1].at("run_id"), "run-b");
  EXPECT_EQ(caveats[1].at("code"), "tokens_per_event");
  EXPECT_EQ(caveats[1].at("cells").as_array()[0].at("cell"), "fr/agg");
}

TEST(CampaignSummary, HeadlineKeysAreStablePerProtocol) {
  protocol::Shared shared;
  shared.api = workload::Api::kCompletions;
  shared.stream.input_tokens = 8;
  shared.stream.output_tokens = 4;
  protocol::SpeedOptions sp;
  sp.concurrency = 2;
  const protocol::ProtocolPlan plan = protocol::plan_speed(sp, {"fr", "fr2"}, shared, std::nullopt);
  protocol::ProtocolCampaign campaign(plan, "");
  int n = 0;
  campaign.run(
      [&](const engine_session::CellSpec&) {
        engine_session::CellOutcome out;
        out.run_id = "run-" + std::to_string(n++);
        out.status = "ok";
        out.summary.output_tokens_per_s = 100.0 + n;
        return out;
      },
      [](const std::string&) {});
  const json::object doc = campaign.document(
      json::object{
          {"name", "dyno-sim"},
          {"version", "0.1.0"},
          {"reached", json::object{{"kind", "embedded-sim"}, {"scheme", "http"}, {"path", "/v1"}}},
          {"engine_args", json::object{}},
          {"api_key_used", false}},
      "m", nullptr);
  const auto& h = doc.at("headline").as_object();
  ASSERT_TRUE(h.contains("fr") && h.contains("fr2"));
  EXPECT_TRUE(h.at("fr").as_object().contains("solo"));
  EXPECT_TRUE(h.at("fr").as_object().contains("agg"));
  EXPECT_EQ(h.at("fr2").at("agg").at("tok_s"),
            doc.at("cells").as_array()[3].at("figures").at("tok_s").at("selected"));
  EXPECT_TRUE(doc.at("readiness").at("ready_s").is_null());
  EXPECT_TRUE(doc.at("readiness").as_object().contains("reason"));

  json::object headline;
  protocol::put_headline(headline, {"decode", "8000"}, json::object{{"decode_tok_s", 50.0}});
  protocol::put_headline(headline, {"decode", "0"}, json::object{{"decode_tok_s", 55.0}});
  protocol::put_headline(headline, {"prefill", "512"}, json::object{{"prefill_tok_s", 900.0}});
  EXPECT_EQ(headline.at("decode").at("0").at("decode_tok_s"), 55.0);
  EXPECT_EQ(headline.at("decode").at("8000").at("decode_tok_s"), 50.0);
  EXPECT_EQ(headline.at("prefill").at("512").at("prefill_tok_s"), 900.0);
}

TEST(CampaignSummary, ReadinessOfALaunchedEngineComesFromItsLaunch) {
  protocol::Shared shared;
  shared.api = workload::Api::kCompletions;
  protocol::RealOptions re;
  workload::RequestStream stream;
  workload::Request r;
  r.id = "q1";
  r.prompt = "hello";
  r.tags["case"] = "short";
  stream.requests.push_back(r);
  const protocol::ProtocolPlan plan = protocol::plan_real(re, shared, stream);
  protocol::ProtocolCampaign campaign(plan, "");
  campaign.run(
      [](const engine_session::CellSpec&) {
        engine_session::CellOutcome out;
        out.run_id = "run-0";
        out.status = "ok";
        out.summary.decode_rate_per_user.p50 = 40.0;
        return out;
      },
      [](const std::string&) {});
  const json::object engine = json::parse(R"json({
    "name": "llama-server", "version": null,
    "reached": {"kind": "launched", "scheme": "http", "path": "/v1"},
    "launch": {"launch_id": "l1", "spec_file": "llama.toml", "spec_sha256": "ab", "preset": "llamacpp",
      "argv": ["llama-server", "-m", "x.gguf"], "env": {}, "workdir": null, "container_image": null,
      "port": 8080, "launched_at": "2026-12-02T10:15:00.000Z", "ready_s": 12.5,
      "probe_ready_s": 12.0, "first_request_s": 0.5,
      "ready": {"http_path": "/health", "http_status": 200, "log_line": null, "timeout_s": 600,
                "first_request": true},
      "stop": {"signal": "SIGTERM", "grace_s": 10}, "cell_index": 0, "shared_by_cells": true,
      "log": "evidence/engine.log"},
    "engine_args": {}, "api_key_used": false})json")
                                  .as_object();
  const json::object doc = campaign.document(engine, "m", nullptr);
  EXPECT_EQ(doc.at("readiness").at("ready_s"), 12.5);
  EXPECT_EQ(doc.at("readiness").at("probe_ready_s"), 12.0);
  EXPECT_FALSE(doc.at("readiness").as_object().contains("argv"));
  EXPECT_EQ(doc.at("headline").at("short").at("decode_tok_s"), 40.0);
}
