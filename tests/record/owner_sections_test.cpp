// record/owner_sections.h: manifest.json's engine, telemetry and workload.sampling read typed.
// Each shape their owners write reads with its values; a malformed one is an error naming the
// file and the key when the manifest is read (manifest_from_json), never later in a reader.
#include "record/owner_sections.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <functional>
#include <stdexcept>
#include <string>

#include "record/manifest.h"

namespace {

namespace json = boost::json;
using dyno::record::engine_section_from_json;
using dyno::record::EngineSection;
using dyno::record::sampling_section_from_json;
using dyno::record::telemetry_section_from_json;
using dyno::record::TelemetrySection;

json::object parse(const char* text) { return json::parse(text).as_object(); }

/// A launched engine with its source checkout, as engine_session/engine_session.cpp writes it.
constexpr const char* kLaunched = R"json({
  "name": "llama.cpp", "version": "b4000",
  "reached": {"kind": "launched", "scheme": "http", "path": "/v1"},
  "launch": {"launch_id": "l1", "spec_file": "llama.toml", "spec_sha256": "ab",
    "preset": "llamacpp", "argv": ["llama-server", "-np", "4"], "env": {"HF_TOKEN": "<redacted>"},
    "workdir": null, "container_image": null, "port": 8080,
    "launched_at": "2026-12-02T10:15:00.000Z", "ready_s": 12.5, "probe_ready_s": 12.0,
    "first_request_s": 0.5,
    "ready": {"http_path": "/health", "http_status": 200, "log_line": null, "timeout_s": 600,
              "first_request": true},
    "stop": {"signal": "SIGTERM", "grace_s": 10}, "cell_index": 2, "shared_by_cells": true,
    "log": "evidence/engine.log"},
  "engine_args": {"np": 4}, "topology": {"tp": 1},
  "source": {"checkout": "/src/llama.cpp", "commit": null, "dirty": false,
             "unknown": {"commit": "not a git checkout"}},
  "reported": {"name": "llama.cpp", "version": "b4000", "sources": {"/props": {}},
               "unavailable": {"/version": "404"}},
  "api_key_used": false})json";

/// The telemetry of a run on a host with one GPU source and an idle baseline.
constexpr const char* kTelemetry = R"json({
  "mode": "auto", "period_ms": {"requested": 100, "achieved_mean": 101.5, "achieved_p99": null},
  "read_errors": 0,
  "backends": [
    {"source": "nvml", "available": true, "reason": null, "details": {"driver": "550.1"},
     "devices": [{"vendor": "nvidia", "kind": "gpu", "index": 0, "name": "G", "uuid": "GPU-1",
                  "pci_bus_id": null, "driver": "550.1", "memory_total_bytes": 85899345920,
                  "power_limit_w": 700, "capabilities": ["energy_counter"]}]},
    {"source": "rapl", "available": false, "reason": "no powercap", "details": {},
     "devices": []}],
  "idle_baseline": {"duration_s": 2.0, "devices": [{"source": "nvml", "device": 0,
                                                    "power_w": 61.5}]}})json";

/// The error reading a manifest with every owner section set, after `edit`.
std::string manifest_error(const std::function<void(json::object&)>& edit) {
  dyno::record::Manifest m;
  m.run_id = "20261202T101500Z-0123ab";
  m.started_at = "2026-12-02T10:15:00.000Z";
  m.engine = parse(kLaunched);
  m.telemetry = parse(kTelemetry);
  m.workload.sampling = parse(R"({"temperature": 0, "max_tokens": 64, "stream": true})");
  m.workload.request_stream = {"synthetic", std::string(64, 'b'), 1, false};
  m.load.concurrency = 1;
  m.load.timeouts_s = json::object{};
  json::object o = dyno::record::manifest_to_json(m);
  edit(o);
  try {
    (void)dyno::record::manifest_from_json(o);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(OwnerSections, ALaunchedEngineReadsWithItsLaunchAndSource) {
  const EngineSection e = engine_section_from_json(parse(kLaunched));
  EXPECT_EQ(e.name, "llama.cpp");
  EXPECT_EQ(e.reached.kind, "launched");
  EXPECT_EQ(e.reached.path, "/v1");
  ASSERT_TRUE(e.launch);
  EXPECT_EQ(e.launch->preset, "llamacpp");
  EXPECT_EQ(e.launch->argv.size(), 3u);
  EXPECT_EQ(e.launch->env.get("HF_TOKEN"), "<redacted>");
  EXPECT_EQ(e.launch->ready_s, 12.5);
  EXPECT_EQ(e.launch->first_request_s, 0.5);
  EXPECT_EQ(e.launch->ready.http_status, 200);
  EXPECT_EQ(e.launch->stop.signal, "SIGTERM");
  EXPECT_EQ(e.launch->cell_index, 2u);
  ASSERT_TRUE(e.source);
  EXPECT_FALSE(e.source->commit);
  EXPECT_EQ(e.source->dirty, false);
  EXPECT_EQ(e.source->unknown.get("commit"), "not a git checkout");
  ASSERT_TRUE(e.reported);
  EXPECT_EQ(e.reported->unavailable.get("/version"), "404");
  EXPECT_EQ(e.engine_args.at("np"), 4);
  EXPECT_EQ(e.api_key_used, false);
  EXPECT_FALSE(e.sim_profile_name());
}

TEST(OwnerSections, TheSimPluginAndImportShapesRead) {
  const EngineSection sim = engine_section_from_json(parse(R"json({
    "name": "dyno-sim", "version": "0.1.0",
    "reached": {"kind": "embedded-sim", "scheme": "http", "path": "/v1"},
    "sim_profile": {"name": "default", "ttft_ms": 50}, "engine_args": {}, "api_key_used": true})json"));
  EXPECT_EQ(sim.sim_profile_name(), "default");
  EXPECT_EQ(sim.api_key_used, true);
  EXPECT_FALSE(sim.launch);

  const EngineSection plugin = engine_section_from_json(parse(R"json({
    "name": "toy", "version": null,
    "reached": {"kind": "plugin", "file": "libtoy.so", "sha256": "cd", "abi_version": 1},
    "identity": {"engine_name": "toy", "engine_version": null, "model_id": "m",
                 "model_fingerprint": null, "args": {"k": 1}},
    "engine_args": {"plugin_config": "k=1"}, "api_key_used": false})json"));
  EXPECT_FALSE(plugin.version);
  EXPECT_EQ(plugin.reached.file, "libtoy.so");
  EXPECT_EQ(plugin.reached.abi_version, 1);
  ASSERT_TRUE(plugin.identity);
  EXPECT_EQ(plugin.identity->model_id, "m");
  EXPECT_EQ(plugin.identity->args.at("k"), 1);

  const EngineSection imported = engine_section_from_json(parse(R"json({
    "name": "vllm", "version": null, "reached": {"kind": "import"}, "engine_args": {},
    "api_key_used": null, "unknown": {"version": "the file does not say"}})json"));
  EXPECT_FALSE(imported.api_key_used);
  EXPECT_EQ(imported.unknown.get("version"), "the file does not say");
}

TEST(OwnerSections, TelemetryReadsItsBackendsAndIdleBaseline) {
  const TelemetrySection t = telemetry_section_from_json(parse(kTelemetry));
  EXPECT_EQ(t.mode, "auto");
  EXPECT_EQ(t.period_ms.requested, 100);
  EXPECT_EQ(t.period_ms.achieved_mean, 101.5);
  EXPECT_FALSE(t.period_ms.achieved_p99);
  ASSERT_EQ(t.backends.size(), 2u);
  EXPECT_EQ(t.backends[0].devices.at(0).uuid, "GPU-1");
  EXPECT_EQ(t.backends[0].details.get("driver"), "550.1");
  EXPECT_FALSE(t.backends[1].available);
  EXPECT_EQ(t.backends[1].reason, "no powercap");
  ASSERT_TRUE(t.idle_baseline);
  EXPECT_EQ(t.idle_baseline->devices.at(0).power_w, 61.5);

  // Telemetry off, and a record closed at once (docs/record.md): no backends, no baseline.
  const TelemetrySection off = telemetry_section_from_json(parse(
      R"({"mode": "off", "period_ms": {"requested": 1000}, "backends": [], "idle_baseline": null})"));
  EXPECT_EQ(off.mode, "off");
  EXPECT_TRUE(off.backends.empty());
  EXPECT_FALSE(off.idle_baseline);
  EXPECT_FALSE(off.read_errors);
}

TEST(OwnerSections, SamplingTellsAbsentFromNoCap) {
  const auto s = sampling_section_from_json(
      parse(R"({"temperature": 0.7, "max_tokens": null, "ignore_eos": true, "stream": true})"));
  EXPECT_EQ(s.temperature, 0.7);
  ASSERT_TRUE(s.max_tokens);
  EXPECT_FALSE(*s.max_tokens);  // null: no cap
  EXPECT_EQ(s.ignore_eos, true);
  const auto imported = sampling_section_from_json(json::object{});  // an import: not stated
  EXPECT_FALSE(imported.max_tokens);
  EXPECT_FALSE(imported.temperature);
}

TEST(OwnerSections, AMalformedSectionFailsWhenTheManifestIsReadNamingTheKey) {
  EXPECT_EQ(manifest_error([](json::object&) {}), "(no error)");
  const auto engine = [](json::object& o) -> json::object& { return o["engine"].as_object(); };
  EXPECT_EQ(manifest_error([&](json::object& o) { engine(o).erase("reached"); }),
            "manifest.json: engine.reached is missing");
  EXPECT_EQ(manifest_error([&](json::object& o) { engine(o)["name"] = 7; }),
            "manifest.json: engine.name is not a string");
  EXPECT_EQ(manifest_error([&](json::object& o) { engine(o)["api_key_used"] = "no"; }),
            "manifest.json: engine.api_key_used is not a boolean");
  EXPECT_EQ(manifest_error([&](json::object& o) { engine(o)["launch"].as_object()["argv"] = "x"; }),
            "manifest.json: engine.launch.argv is not an array");
  EXPECT_EQ(manifest_error([&](json::object& o) {
              engine(o)["source"].as_object()["unknown"].as_object()["commit"] = 1;
            }),
            "manifest.json: engine.source.unknown.commit is not a string");
  const auto telemetry = [](json::object& o) -> json::object& {
    return o["telemetry"].as_object();
  };
  EXPECT_EQ(manifest_error([&](json::object& o) { telemetry(o)["mode"] = nullptr; }),
            "manifest.json: telemetry.mode is not a string");
  EXPECT_EQ(manifest_error([&](json::object& o) {
              telemetry(o)["backends"].as_array()[0].as_object()["devices"] = json::array{1};
            }),
            "manifest.json: telemetry.backends[].devices[] is not an object");
  EXPECT_EQ(manifest_error([&](json::object& o) {
              telemetry(o)["idle_baseline"].as_object()["devices"] =
                  json::array{json::object{{"source", "nvml"}, {"device", 0}, {"power_w", "hot"}}};
            }),
            "manifest.json: telemetry.idle_baseline.devices[].power_w is not a number");
  EXPECT_EQ(manifest_error([](json::object& o) {
              o["workload"].as_object()["sampling"].as_object()["max_tokens"] = -1;
            }),
            "manifest.json: workload.sampling.max_tokens is not a non-negative integer");
}
