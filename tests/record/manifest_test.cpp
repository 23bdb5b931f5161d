// record::Manifest: its JSON form (golden file, valid against docs/schema/manifest.schema.json)
// and the reading back.
#include "record/manifest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <stdexcept>
#include <string>

#include "golden.h"
#include "record/record_json.h"
#include "record/record_schema.h"

namespace json = boost::json;
using dyno::record::Manifest;

namespace {

/// A finished closed-loop run of a launched engine that crashed, with a plugin's event stamps:
/// every optional section present.
Manifest full_manifest() {
  Manifest m;
  m.run_id = "20261202T101500Z-0123ab-fast";
  m.label = "fast";
  m.status = "engine_crashed";
  m.started_at = "2026-12-02T10:15:00.000Z";
  m.ended_at = "2026-12-02T10:16:40.500Z";
  m.harness.version = "0.1.0";
  m.harness.git_commit = "0123456789abcdef0123456789abcdef01234567";
  m.harness.build_type = "RelWithDebInfo";
  m.harness.executable_sha256 = std::string(64, 'a');
  m.engine = json::object{
      {"name", "sim"},
      {"version", "1"},
      {"reached", json::object{{"kind", "launched"}, {"scheme", "http"}, {"path", "/v1"}}},
      {"engine_args", json::object{}},
      {"api_key_used", false}};
  m.engine_exit = dyno::record::EngineExit{
      "killed by signal 9 (SIGKILL)", std::nullopt, 9, 1'500'000'000, "engine log line\n", 3};
  m.model.id = "dyno-sim";
  m.model.unknown = dyno::record::TextMap{{{"fingerprint", "no --model-file"}}};
  m.hardware.host = "h";
  m.hardware.cpu_cores = 2;
  m.hardware.ram_bytes = 1024;
  m.hardware.unknown = dyno::record::TextMap{};
  m.workload.protocol = dyno::record::ProtocolRef{};  // {name "run", version 1}
  m.workload.api = "chat";
  m.workload.request_stream = {"synthetic", std::string(64, 'b'), 50, false};
  m.workload.sampling = json::object{{"temperature", 0}, {"stream", true}};
  m.workload.warmup_requests = 2;
  m.load.concurrency = 8;
  m.load.seed = 1;
  m.load.requests = 50;
  m.load.timeouts_s = json::object{{"connect", 10},
                                   {"first_token", nullptr},
                                   {"total", nullptr},
                                   {"idle", 60},
                                   {"derived_rule", "rule"}};
  m.slo.ttft_s = 0.5;
  m.warnings.push_back({dyno::metrics::WarningCode::kConcurrencyUnderfilled,
                        "only 6 of 8 in flight", "send more requests"});
  m.evidence.push_back({"evidence/engine.log", std::string(64, 'c')});
  m.telemetry = json::object{{"mode", "off"},
                             {"period_ms", json::object{{"requested", 100}}},
                             {"backends", json::array()},
                             {"idle_baseline", nullptr}};
  dyno::record::ClockReference ref;
  ref.address = "10.0.0.5:7123";
  ref.id = "00000000deadbeef";
  ref.before = dyno::record::ClockMeasurement{-250'000'000, 60'000, 120'000, 16, 16, 1600};
  ref.after = dyno::record::ClockMeasurement{-249'990'000, 55'000, 110'000, 15, 16, 1800};
  m.clock =
      dyno::record::ClockSection{123, 456, dyno::record::EventStamps{40, 2, 1}, 1700, 3, "b", ref};
  // A merged record and a shard's never both; the form of each is what is checked here.
  m.shard = dyno::record::ShardSection{1, 2, "2026-12-02T10:15:00.000Z"};
  m.merged_from = dyno::record::MergedFrom{
      "measured_offset",
      170'000,
      21000,
      {{"20261202T101400Z-0123ab", 0, 0, -250'000'000, 60'000, 10'000},
       {"20261202T101400Z-0123ac", 1, 55000, 1'000, 40'000, std::nullopt}},
      "00000000deadbeef",
      std::nullopt,
      "shard 0 (run 20261202T101400Z-0123ab): drift 0.01 ms (bound 0.001 ms)"};
  return m;
}

}  // namespace

TEST(Manifest, GoldenAndValidAgainstItsSchema) {
  const json::object o = dyno::record::manifest_to_json(full_manifest());
  dyno::testing::expect_golden("tests/record/golden/manifest.json", dyno::record::pretty_json(o));
  const auto problems = dyno::record::record_schema("manifest").validate(o);
  for (const auto& p : problems) ADD_FAILURE() << p.pointer << ": " << p.message;
}

TEST(Manifest, ReadsBackWhatItWrote) {
  const json::object o = dyno::record::manifest_to_json(full_manifest());
  const Manifest back = dyno::record::manifest_from_json(o);
  EXPECT_EQ(dyno::record::manifest_to_json(back), o);
  ASSERT_TRUE(back.engine_exit);
  EXPECT_EQ(back.engine_exit->signal, 9);
  EXPECT_FALSE(back.engine_exit->code);
  EXPECT_FALSE(back.engine.contains("exit"));  // typed, not left in the object
  ASSERT_TRUE(back.clock && back.clock->event_stamps);
  EXPECT_EQ(back.clock->event_stamps->engine, 40u);
  EXPECT_EQ(back.load.concurrency, 8u);
  EXPECT_FALSE(back.load.open_loop);
  EXPECT_EQ(back.slo.ttft_s, 0.5);
  EXPECT_FALSE(back.slo.tpot_s);
  ASSERT_TRUE(back.shard && back.merged_from && back.clock->t0_unix_ns);
  EXPECT_EQ(back.shard->k, 1u);
  EXPECT_EQ(back.merged_from->shards.at(1).offset_ns, 55000);
  EXPECT_EQ(*back.clock->t0_unix_ns, 1700);
  ASSERT_TRUE(back.clock->reference && back.clock->reference->after);
  EXPECT_EQ(back.clock->reference->drift_ns(), 10'000);
  EXPECT_EQ(back.merged_from->shards.at(0).clock_drift_ns, 10'000);
  EXPECT_FALSE(back.merged_from->shards.at(1).clock_drift_ns);
}

TEST(Manifest, TheSharedFlagsAndTheExtraBodyAreStatedAndReadBack) {
  Manifest m = full_manifest();
  m.workload.extra_body = json::object{{"cache_prompt", false}};
  m.workload.extra_body_override = true;
  m.load.client_threads = 3;
  m.load.error_budget = 0.5;
  m.load.unreachable_after_s = 4.0;
  const json::object o = dyno::record::manifest_to_json(m);
  const auto problems = dyno::record::record_schema("manifest").validate(o);
  for (const auto& p : problems) ADD_FAILURE() << p.pointer << ": " << p.message;
  EXPECT_EQ(json::serialize(o.at("workload").at("extra_body")), R"({"cache_prompt":false})");
  EXPECT_EQ(o.at("load").at("client_threads"), 3);
  const Manifest back = dyno::record::manifest_from_json(o);
  EXPECT_EQ(dyno::record::manifest_to_json(back), o);
  EXPECT_TRUE(back.workload.extra_body_override);
  EXPECT_EQ(back.load.client_threads.value_or(0), 3u);
  // Without them (imported records, older ones): absent, not null.
  const json::object plain = dyno::record::manifest_to_json(full_manifest());
  EXPECT_FALSE(plain.at("workload").as_object().contains("extra_body"));
  EXPECT_FALSE(plain.at("load").as_object().contains("client_threads"));
}

TEST(Manifest, ARunningManifestHasNoClockOrTelemetry) {
  Manifest m = full_manifest();
  m.status = "running";
  m.ended_at.reset();
  m.engine_exit.reset();
  m.telemetry.reset();
  m.clock.reset();
  m.load = {};
  m.load.open_loop = true;
  m.load.rate_per_s = 4;
  m.load.arrival = "gamma";
  m.load.burstiness = 0.5;
  m.load.duration_s = 30;
  m.load.timeouts_s = json::object{{"connect", 10}, {"first_token", 0}, {"total", 0}, {"idle", 0}};
  const json::object o = dyno::record::manifest_to_json(m);
  EXPECT_FALSE(o.contains("clock"));
  EXPECT_FALSE(o.contains("telemetry"));
  EXPECT_TRUE(o.at("ended_at").is_null());
  EXPECT_TRUE(o.at("load").at("concurrency").is_null());
  EXPECT_EQ(o.at("load").at("mode"), "open");
  const auto problems = dyno::record::record_schema("manifest").validate(o);
  for (const auto& p : problems) ADD_FAILURE() << p.pointer << ": " << p.message;
  const Manifest back = dyno::record::manifest_from_json(o);
  EXPECT_FALSE(back.clock);
  EXPECT_FALSE(back.telemetry);
  EXPECT_EQ(back.load.arrival, "gamma");
}

TEST(Manifest, ADerivedRecordSaysWhereItCameFrom) {
  Manifest m = full_manifest();
  m.merged_from.reset();
  m.derived_from = dyno::record::DerivedFrom{"rescore",
                                             "20261202T101500Z-0123ab-fast",
                                             std::string(64, 'c'),
                                             std::string(64, 'd'),
                                             json::object{{"kind", "regex"}, {"pattern", "(\\d+)"}},
                                             "2026-12-03T08:00:00.000Z",
                                             m.harness};
  m.run_id = "20261203T080000Z-abcdef-fast-rescore";
  const json::object o = dyno::record::manifest_to_json(m);
  const auto problems = dyno::record::record_schema("manifest").validate(o);
  for (const auto& p : problems) ADD_FAILURE() << p.pointer << ": " << p.message;
  // Right after ended_at, before the harness that measured.
  std::vector<std::string> keys;
  for (const auto& kv : o) keys.emplace_back(kv.key());
  const auto at = std::find(keys.begin(), keys.end(), "derived_from");
  ASSERT_NE(at, keys.end());
  EXPECT_EQ(*(at - 1), "ended_at");
  EXPECT_EQ(*(at + 1), "harness");
  const Manifest back = dyno::record::manifest_from_json(o);
  ASSERT_TRUE(back.derived_from);
  EXPECT_EQ(back.derived_from->run_id, "20261202T101500Z-0123ab-fast");
  EXPECT_EQ(dyno::record::manifest_to_json(back), o);
  // A measured record has none, and the scorer may be null or a name.
  EXPECT_FALSE(dyno::record::manifest_to_json(full_manifest()).contains("derived_from"));
  for (const json::value& scorer : {json::value(nullptr), json::value("normalized")}) {
    m.derived_from->scorer = scorer;
    EXPECT_TRUE(dyno::record::record_schema("manifest")
                    .validate(dyno::record::manifest_to_json(m))
                    .empty());
  }
  m.derived_from->scorer = "fuzzy";
  EXPECT_FALSE(
      dyno::record::record_schema("manifest").validate(dyno::record::manifest_to_json(m)).empty());
}

TEST(Manifest, AMalformedManifestNamesTheKey) {
  json::object o = dyno::record::manifest_to_json(full_manifest());
  o["load"].as_object()["concurrency"] = "eight";
  try {
    (void)dyno::record::manifest_from_json(o);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("load.concurrency"), std::string::npos) << e.what();
  }
  o = dyno::record::manifest_to_json(full_manifest());
  o.erase("run_id");
  EXPECT_THROW((void)dyno::record::manifest_from_json(o), std::runtime_error);
  // A record written before request_stream.cycle existed reads as not cycling.
  o = dyno::record::manifest_to_json(full_manifest());
  o["workload"].as_object()["request_stream"].as_object().erase("cycle");
  EXPECT_FALSE(dyno::record::manifest_from_json(o).workload.request_stream.cycle);
}
