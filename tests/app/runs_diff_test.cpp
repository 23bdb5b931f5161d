// `dyno runs diff`: two manifests that differ in every identity field (golden file).
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "app/runs_command.h"
#include "golden.h"
#include "record/record_fixture.h"

namespace json = boost::json;
using dyno::app::diff_manifests;
using dyno::app::DiffSection;
using dyno::testing::sample_manifest;

namespace {

json::object other_manifest() {
  json::object b = sample_manifest("20261130T080000Z-bbbbbb", "2026-11-30T08:00:00.000Z");
  auto& h = b["harness"].as_object();
  h["version"] = "0.2.0";
  h["git_commit"] = "def5678";
  h["git_dirty"] = true;
  h["executable_sha256"] = std::string(64, 'd');
  auto& e = b["engine"].as_object();
  e["name"] = "sglang";
  e["version"] = "0.4.1";
  e["engine_args"] = json::object{{"tp", 2}, {"mem_fraction_static", 0.85}};
  auto& m = b["model"].as_object();
  m["id"] = "Qwen/Qwen2.5-7B-Instruct";
  m["revision"] = "a09a354";
  m["fingerprint"] = std::string(64, '9');
  auto& gpu = b["hardware"].as_object()["gpus"].as_array()[0].as_object();
  gpu["name"] = "NVIDIA H200";
  gpu["uuid"] = "GPU-99999999-8888-7777-6666-555555555555";
  gpu["driver"] = "560.35.03";
  b["hardware"].as_object()["host"] = "bench-02";
  auto& w = b["workload"].as_object();
  w["protocol"] = json::object{{"name", "sweep"}, {"version", 1}, {"cell", "c8"}};
  w["request_stream"].as_object()["sha256"] = std::string(64, 'b');
  w["request_stream"].as_object()["count"] = 64;
  w["sampling"].as_object()["temperature"] = 0.7;
  w["sampling"].as_object()["max_tokens"] = 256;
  auto& l = b["load"].as_object();
  l["concurrency"] = 8;
  l["requests"] = 64;
  b["slo"].as_object()["ttft_s"] = 0.5;
  return b;
}

const DiffSection& section(const std::vector<DiffSection>& s, const std::string& name) {
  for (const auto& x : s) {
    if (x.name == name) return x;
  }
  throw std::runtime_error("no section " + name);
}

std::vector<std::string> fields(const DiffSection& s) {
  std::vector<std::string> out;
  for (const auto& f : s.differ) out.push_back(f.field);
  return out;
}

}  // namespace

TEST(RunsDiff, ListsEveryIdentityFieldThatDiffers) {
  const json::object a = sample_manifest("20261129T214815Z-aaaaaa", "2026-11-29T21:48:15.212Z");
  const json::object b = other_manifest();
  const auto sections = diff_manifests(a, b);
  EXPECT_EQ(fields(section(sections, "harness")),
            (std::vector<std::string>{"harness.version", "harness.git_commit", "harness.git_dirty",
                                      "harness.executable_sha256"}));
  EXPECT_EQ(fields(section(sections, "engine")),
            (std::vector<std::string>{"engine.name", "engine.version", "engine.engine_args",
                                      "engine.engine_args.tp",
                                      "engine.engine_args.mem_fraction_static"}));
  EXPECT_EQ(fields(section(sections, "model")),
            (std::vector<std::string>{"model.id", "model.revision", "model.fingerprint"}));
  EXPECT_EQ(fields(section(sections, "hardware")),
            (std::vector<std::string>{"hardware.host", "hardware.gpus[0].name",
                                      "hardware.gpus[0].uuid", "hardware.gpus[0].driver"}));
  EXPECT_EQ(
      fields(section(sections, "workload")),
      (std::vector<std::string>{"workload.protocol.name", "workload.request_stream.sha256",
                                "workload.request_stream.count", "workload.sampling.temperature",
                                "workload.protocol.cell", "workload.sampling.max_tokens"}));
  EXPECT_EQ(fields(section(sections, "load")),
            (std::vector<std::string>{"load.concurrency", "load.requests"}));
  EXPECT_EQ(fields(section(sections, "slo")), std::vector<std::string>{"slo.ttft_s"});
  EXPECT_TRUE(section(sections, "telemetry").differ.empty());
  EXPECT_EQ(section(sections, "telemetry").same, 1u);
  // A run against itself: nothing differs.
  for (const auto& s : diff_manifests(a, a)) EXPECT_TRUE(s.differ.empty()) << s.name;
  dyno::testing::expect_golden(
      "tests/app/golden/runs_diff.txt",
      dyno::app::render_diff("20261129T214815Z-aaaaaa", "20261130T080000Z-bbbbbb", sections));
}
