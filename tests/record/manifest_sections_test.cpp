// record/manifest_sections.h: the manifest's harness, model and hardware typed. Every shape
// the producers write reads back to the same bytes; a malformed section is an error naming the
// file and the key, never a crash.
#include "record/manifest_sections.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <functional>
#include <stdexcept>
#include <string>

#include "record/manifest.h"
#include "record/record_json.h"

namespace {

namespace json = boost::json;
using dyno::record::pretty_json;

json::object parse(const char* text) { return json::parse(text).as_object(); }

/// A measured run's manifest sections, as engine_session/host_identity.cpp and
/// engine_session/engine_session.cpp write them: a GGUF model, one GPU with details.
json::object manifest_with_sections() {
  dyno::record::Manifest m;
  m.run_id = "20261202T101500Z-0123ab";
  m.started_at = "2026-12-02T10:15:00.000Z";
  m.harness = dyno::record::harness_from_json(parse(R"json({
    "name": "dyno", "version": "0.1.0", "git_commit": "unknown", "git_dirty": false,
    "build_type": "Debug", "executable_sha256": null,
    "unknown": {"git_commit": "outside a checkout", "executable_sha256": "cannot read"}})json"));
  m.model = dyno::record::model_from_json(parse(R"json({
    "id": "m", "revision": null, "fingerprint": "ab", "format": "gguf", "architecture": "llama",
    "parameter_count": 292800, "quantization": "F32", "context_length": null,
    "tokenizer_model": "llama", "fingerprint_method": "sha256 over the header",
    "unknown": {"revision": "not given (--model-revision)"}})json"));
  m.hardware = dyno::record::hardware_from_json(parse(R"json({
    "host": "h", "cpu_model": null, "cpu_cores": 2, "ram_bytes": 1024,
    "gpus": [{"vendor": "nvidia", "kind": "gpu", "index": 0, "name": "G", "uuid": "GPU-1",
              "pci_bus_id": null, "driver": "1.0", "memory_total_bytes": 85899345920,
              "power_limit_w": 700.5, "capabilities": ["energy_counter"],
              "details": {"z": "1", "a": "2"}}],
    "unknown": {"cpu_model": "no 'model name' line"}, "label": "G (80 GiB) · 2 cores"})json"));
  m.engine = parse(R"json({"name": "dyno-sim", "version": "0.1.0",
    "reached": {"kind": "embedded-sim", "scheme": "http", "path": "/v1"},
    "engine_args": {}, "api_key_used": false})json");
  m.workload.protocol = dyno::record::ProtocolRef{};  // {name "run", version 1}
  m.workload.request_stream = {"synthetic", std::string(64, 'b'), 1, false};
  m.load.concurrency = 1;
  m.load.timeouts_s = json::object{};
  return dyno::record::manifest_to_json(m);
}

/// The error reading `manifest` gives, after `edit`.
std::string error_of(const std::function<void(json::object&)>& edit) {
  json::object o = manifest_with_sections();
  edit(o);
  try {
    (void)dyno::record::manifest_from_json(o);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

json::object& section(json::object& o, const char* key) { return o[key].as_object(); }

}  // namespace

TEST(ManifestSections, EveryShapeReadsBackToTheSameBytes) {
  const json::object o = manifest_with_sections();
  const dyno::record::Manifest m = dyno::record::manifest_from_json(o);
  EXPECT_EQ(pretty_json(dyno::record::manifest_to_json(m)), pretty_json(o));
  // Typed: what the readers of a run use.
  EXPECT_EQ(m.model.id, "m");
  EXPECT_FALSE(m.model.revision);
  ASSERT_TRUE(m.model.context_length);
  EXPECT_FALSE(*m.model.context_length);  // present, null: the GGUF file does not say
  ASSERT_EQ(m.hardware.gpus.size(), 1u);
  EXPECT_EQ(m.hardware.gpus[0].memory_total_bytes, 85899345920);
  EXPECT_EQ(m.hardware.gpus[0].details->entries.front().first, "z");  // the order written
  EXPECT_EQ(m.hardware.unknown_reason("cpu_model"), "no 'model name' line");
  EXPECT_FALSE(m.hardware.unknown_reason("gpus"));
  EXPECT_EQ(m.harness.unknown->get("executable_sha256"), "cannot read");
}

TEST(ManifestSections, OptionalKeysAreWrittenOnlyWhenSet) {
  // An import's sections (interop/result_import.cpp): no label, no harness unknown, no model
  // file keys; a safetensors model keeps its dtypes in the order written.
  const json::object hw = parse(R"json({"host": null, "cpu_model": null, "cpu_cores": null,
    "ram_bytes": null, "gpus": [], "unknown": {"host": "not in the imported file"}})json");
  EXPECT_EQ(json::serialize(dyno::record::hardware_to_json(dyno::record::hardware_from_json(hw))),
            json::serialize(hw));
  const json::object model = parse(R"json({"id": "m", "revision": "r", "fingerprint": "f",
    "format": "safetensors", "parameter_count": 10, "dtypes": {"F16": 3, "BF16": 1},
    "shards": 2, "fingerprint_method": "x"})json");
  EXPECT_EQ(json::serialize(dyno::record::model_to_json(dyno::record::model_from_json(model))),
            json::serialize(model));
  const json::object harness =
      parse(R"json({"name": "dyno", "version": "1", "git_commit": "unknown",
    "git_dirty": true, "build_type": "Release", "executable_sha256": null})json");
  EXPECT_EQ(
      json::serialize(dyno::record::harness_to_json(dyno::record::harness_from_json(harness))),
      json::serialize(harness));
  // An empty `unknown` stays present and empty (a measured run's hardware always writes it).
  const json::object empty_unknown = parse(R"json({"host": "h", "cpu_model": "c", "cpu_cores": 1,
    "ram_bytes": 1, "gpus": [], "unknown": {}})json");
  EXPECT_EQ(json::serialize(
                dyno::record::hardware_to_json(dyno::record::hardware_from_json(empty_unknown))),
            json::serialize(empty_unknown));
}

TEST(ManifestSections, AKeyThisDynoDoesNotKnowIsKeptAfterTheOthers) {
  const json::object hw = parse(R"json({"host": "h", "cpu_model": "c", "cpu_cores": 1,
    "ram_bytes": 1, "gpus": [], "numa_nodes": 2})json");
  const dyno::record::HardwareIdentity h = dyno::record::hardware_from_json(hw);
  EXPECT_EQ(json::serialize(h.extra), R"json({"numa_nodes":2})json");
  EXPECT_EQ(json::serialize(dyno::record::hardware_to_json(h)), json::serialize(hw));
}

TEST(ManifestSections, AMalformedSectionNamesTheFileAndTheKey) {
  EXPECT_EQ(error_of([](json::object& o) { section(o, "hardware")["cpu_cores"] = "two"; }),
            "manifest.json: hardware.cpu_cores is not a non-negative integer");
  EXPECT_EQ(error_of([](json::object& o) { section(o, "hardware")["cpu_cores"] = -2; }),
            "manifest.json: hardware.cpu_cores is not a non-negative integer");
  EXPECT_EQ(error_of([](json::object& o) { section(o, "hardware")["ram_bytes"] = 1.5; }),
            "manifest.json: hardware.ram_bytes is not an integer");
  EXPECT_EQ(error_of([](json::object& o) { section(o, "hardware").erase("host"); }),
            "manifest.json: hardware.host is missing");
  EXPECT_EQ(error_of([](json::object& o) { section(o, "hardware")["gpus"] = json::object{}; }),
            "manifest.json: hardware.gpus is not an array");
  EXPECT_EQ(error_of([](json::object& o) { section(o, "hardware")["gpus"].as_array()[0] = 7; }),
            "manifest.json: hardware.gpus[] is not an object");
  EXPECT_EQ(error_of([](json::object& o) {
              section(o, "hardware")["gpus"].as_array()[0].as_object()["memory_total_bytes"] =
                  "80 GB";
            }),
            "manifest.json: hardware.gpus[].memory_total_bytes is not an integer");
  EXPECT_EQ(error_of([](json::object& o) {
              section(o, "hardware")["gpus"].as_array()[0].as_object()["capabilities"] =
                  json::array{1};
            }),
            "manifest.json: hardware.gpus[].capabilities[] is not a string");
  EXPECT_EQ(error_of([](json::object& o) {
              section(o, "hardware")["gpus"].as_array()[0].as_object()["details"] =
                  json::object{{"zone", 3}};
            }),
            "manifest.json: hardware.gpus[].details.zone is not a string");
  EXPECT_EQ(error_of([](json::object& o) { section(o, "hardware")["unknown"] = "why"; }),
            "manifest.json: hardware.unknown is not an object");
  EXPECT_EQ(error_of([](json::object& o) {
              section(o, "hardware")["unknown"].as_object()["gpus"] = nullptr;
            }),
            "manifest.json: hardware.unknown.gpus is not a string");
  EXPECT_EQ(error_of([](json::object& o) { o["hardware"] = "a box"; }),
            "manifest.json: hardware is not an object");
  EXPECT_EQ(error_of([](json::object& o) { section(o, "harness")["git_dirty"] = "yes"; }),
            "manifest.json: harness.git_dirty is not a boolean");
  EXPECT_EQ(error_of([](json::object& o) { section(o, "harness").erase("executable_sha256"); }),
            "manifest.json: harness.executable_sha256 is missing");
  EXPECT_EQ(error_of([](json::object& o) { section(o, "model")["id"] = nullptr; }),
            "manifest.json: model.id is not a string");
  EXPECT_EQ(error_of([](json::object& o) { section(o, "model")["context_length"] = "long"; }),
            "manifest.json: model.context_length is not a non-negative integer");
  EXPECT_EQ(error_of([](json::object& o) {
              section(o, "model")["dtypes"] = json::object{{"F16", -1}};
            }),
            "manifest.json: model.dtypes.F16 is not a non-negative integer");
}

TEST(ManifestSections, ADerivedRecordsHarnessIsNamedWhereItIs) {
  const json::object derived = parse(R"json({"kind": "rescore", "run_id": "a",
    "summary_sha256": "s", "sha256sums_sha256": "t", "scorer": null,
    "created_at": "2026-12-03T08:00:00.000Z",
    "harness": {"name": "dyno", "git_commit": "unknown", "git_dirty": false,
                "build_type": "Debug", "executable_sha256": null}})json");
  EXPECT_EQ(error_of([&](json::object& o) { o["derived_from"] = derived; }),
            "manifest.json: derived_from.harness.version is missing");
}

TEST(ManifestSections, EveryProtocolShapeReadsBackToTheSameBytes) {
  for (const char* text :
       {R"json({"name": "run", "version": 1})json",
        R"json({"name": "import", "version": 1, "pairs_as": "sweep", "cell": "c8"})json",
        R"json({"name": "sweep", "version": 2, "params": {"levels": [1, 8]}, "cell": "c8",
                   "cell_params": {"concurrency": 8}, "repetition": 2, "repetitions": 3,
                   "selection": {"rule": "median", "metric": "output_tokens_per_s",
                                 "repetitions": 3}})json"}) {
    const json::object o = parse(text);
    const dyno::record::ProtocolRef p = dyno::record::protocol_from_json(o);
    EXPECT_EQ(json::serialize(dyno::record::protocol_to_json(p)), json::serialize(o));
  }
}

TEST(ManifestSections, AMalformedProtocolNamesTheKey) {
  const auto protocol = [](json::object& o) -> json::object& {
    return section(o, "workload")["protocol"].as_object();
  };
  EXPECT_EQ(error_of([&](json::object& o) { protocol(o)["repetition"] = "two"; }),
            "manifest.json: workload.protocol.repetition is not a non-negative integer");
  EXPECT_EQ(error_of([&](json::object& o) { protocol(o)["version"] = nullptr; }),
            "manifest.json: workload.protocol.version is null");
  EXPECT_EQ(error_of([&](json::object& o) { protocol(o)["cell_params"] = json::array{}; }),
            "manifest.json: workload.protocol.cell_params is not an object");
  EXPECT_EQ(error_of([&](json::object& o) {
              protocol(o)["selection"] = json::object{{"rule", "median"}, {"repetitions", 3}};
            }),
            "manifest.json: workload.protocol.selection.metric is missing");
}
