// Telemetry, model identity and the server's side of a run end to end, through the `dyno`
// binary.
#include "integration/integration_fixture.h"

using namespace dyno::integration;  // the fixture, fs, json, Child, read_json(l)

// ---------------------------------------------------------------------------------------------
// Telemetry end to end: dyno run with the fake NVML library (tests/telemetry/fake_nvml).

namespace {

TEST_F(Integration, EnergyFromAFakeGpuMatchesTheHandComputation) {
  // The fake GPU draws a constant 400 W (idle included: the fake's clock starts at an instant
  // the test does not know, so phases in time would make this test depend on scheduling); its
  // energy counter steps every 100 ms, like NVML's. Idle subtraction with a distinct idle power
  // is checked on synthetic traces in tests/telemetry/energy_test.cpp.
  std::ofstream trace(dir_ / "trace.csv");
  trace << "t_ms,energy_mJ,power_instant_mW,power_average_mW,mem_used_B,temp_C,sm_MHz,event\n";
  for (long long t = 0; t <= 600000; t += 100) {
    trace << t << "," << t * 400 << ",400000,400000,5000000000,70,1980,\n";
  }
  trace.close();
  const Outcome o = run_dyno({"-n", "24", "-c", "4", "--output-tokens", "96", "--input-tokens",
                              "32", "--nvml-library", FAKE_NVML_PATH, "--idle-baseline", "1"},
                             {{"FAKE_NVML_TRACE", (dir_ / "trace.csv").string()}});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  check_record(o.run_dir);
  const auto& e = o.summary.at("energy").as_object();
  const double window = e.at("window_s").as_double();
  const double tokens = static_cast<double>(e.at("output_tokens").as_int64());
  ASSERT_GT(window, 1.0);  // many counter updates
  EXPECT_EQ(e.at("scope").as_string(), "gpu");
  // Counter and integral both ≈ 400 W × W (edges interpolated; the counter quantises 100 ms).
  EXPECT_NEAR(e.at("energy_j").as_double(), 400.0 * window, 400.0 * 0.1 + 0.02 * 400 * window);
  const auto& dev = e.at("devices").as_array().at(0).as_object();
  EXPECT_EQ(dev.at("energy_source").as_string(), "counter");
  EXPECT_EQ(dev.at("integral_source").as_string(), "power_instant");
  EXPECT_LT(dev.at("disagreement").as_double(), 0.15);
  EXPECT_NEAR(dev.at("power_p95_w").as_double(), 400.0, 1e-6);
  EXPECT_NEAR(e.at("power_peak_w").as_double(), 400.0, 1e-6);  // one GPU: its own peak
  EXPECT_NEAR(dev.at("idle_power_w").as_double(), 400.0, 400.0 * 0.02);
  EXPECT_EQ(dev.at("temperature_max_c").as_double(), 70.0);
  EXPECT_EQ(dev.at("memory_used_peak_bytes").as_int64(), 5'000'000'000LL);
  // Gross and net per output token, as a hand computation gives them.
  const double energy = e.at("energy_j").as_double();
  EXPECT_NEAR(e.at("joules_per_output_token").as_double(), energy / tokens, 1e-9);
  EXPECT_NEAR(e.at("output_tokens_per_j").as_double(), tokens / energy, 1e-9);
  const double idle_w = e.at("idle_power_w").as_double();
  EXPECT_NEAR(e.at("idle_subtracted_joules_per_output_token").as_double(),
              (energy - idle_w * window) / tokens, 1e-9);
  // The identity of the GPU reached the manifest; every sample reached telemetry.jsonl.
  const json::object manifest = read_json(o.run_dir / "manifest.json");
  const auto& gpu = manifest.at("hardware").at("gpus").as_array().at(0).as_object();
  EXPECT_EQ(gpu.at("name").as_string(), "Fake GPU 0");
  // ...and its short label: the GPU by name and memory, the CPU, the cores.
  const std::string label(manifest.at("hardware").at("label").as_string());
  EXPECT_EQ(label.rfind("Fake GPU 0 (", 0), 0u) << label;
  EXPECT_TRUE(label.ends_with(" cores")) << label;
  EXPECT_FALSE(gpu.at("uuid").as_string().empty());
  EXPECT_FALSE(gpu.at("driver").as_string().empty());
  EXPECT_GT(manifest.at("telemetry").at("period_ms").at("achieved_mean").as_double(), 90.0);
  const auto rows = read_jsonl(o.run_dir / "telemetry.jsonl");
  std::size_t nvml_rows = 0;
  for (const auto& r : rows) nvml_rows += r.at("source").as_string() == "nvml" ? 1 : 0;
  EXPECT_GE(nvml_rows, static_cast<std::size_t>(window * 10.0 * 0.8));
}

TEST_F(Integration, DoctorSaysWhyEachSourceIsMissing) {
  Child c({DYNO_BINARY, "doctor", "--nvml-library", "/nonexistent/libnvidia-ml.so.1",
           "--sysfs-root", (dir_ / "nosys").string()},
          (dir_ / "d.out").string(), (dir_ / "d.err").string());
  EXPECT_EQ(c.wait(), 0) << c.err();
  const std::string out = c.out();
  EXPECT_NE(out.find("nvml: unavailable"), std::string::npos) << out;
  EXPECT_NE(out.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << out;
  EXPECT_NE(out.find("amdgpu: unavailable"), std::string::npos) << out;
  EXPECT_NE(out.find("rapl: unavailable"), std::string::npos) << out;
  EXPECT_NE(out.find("host: available"), std::string::npos) << out;
  Child g({DYNO_BINARY, "doctor", "--nvml-library", FAKE_NVML_PATH}, (dir_ / "g.out").string(),
          (dir_ / "g.err").string());
  EXPECT_EQ(g.wait(), 0);
  EXPECT_NE(g.out().find("Fake GPU 0"), std::string::npos) << g.out();
  EXPECT_NE(g.out().find("energy_counter"), std::string::npos) << g.out();
}

}  // namespace

namespace {

TEST_F(Integration, ModelFileFingerprintReachesTheManifest) {
  const fs::path gguf =
      fs::path(DYNO_SOURCE_DIR) / ".." / "shared" / "fixtures" / "stories260K.gguf";
  if (!fs::exists(gguf)) GTEST_SKIP() << "fixture absent: " << gguf;
  const Outcome o = run_dyno({"-n", "2", "-c", "1", "--output-tokens", "4", "--model-file",
                              gguf.string(), "--model-revision", "r1"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto model = read_json(o.run_dir / "manifest.json").at("model").as_object();
  EXPECT_EQ(model.at("fingerprint").as_string(),
            "6d1305921b546d1384a3a7de9a511136fca0c8a25e2f7ed477531694a66b3f2b");
  EXPECT_EQ(model.at("architecture").as_string(), "llama");
  EXPECT_EQ(model.at("parameter_count").as_int64(), 292800);
  EXPECT_EQ(model.at("revision").as_string(), "r1");
  // Without --model-file the fingerprint is unknown, with the reason.
  const Outcome bare = run_dyno({"-n", "1", "--output-tokens", "2"});
  const auto m2 = read_json(bare.run_dir / "manifest.json").at("model").as_object();
  EXPECT_TRUE(m2.at("fingerprint").is_null());
  EXPECT_NE(std::string(m2.at("unknown").at("fingerprint").as_string()).find("--model-file"),
            std::string::npos);
}

}  // namespace

namespace {

TEST_F(Integration, ServerCountersSitBesideTheClientsFigures) {
  const std::string url = start_sim({"--profile", "spec"});
  const Outcome o = run_dyno({"--url", url, "--model", "dyno-sim", "-n", "12", "-c", "3",
                              "--output-tokens", "40", "--input-tokens", "64"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  check_record(o.run_dir);
  const auto& server = o.summary.at("server").as_object();
  EXPECT_EQ(server.at("dialect").as_string(), "vllm");
  // The engine's own counters agree with the tokens dyno counted from usage.
  EXPECT_EQ(server.at("generation_tokens").as_double(),
            static_cast<double>(o.summary.at("tokens").at("output_total").as_int64()));
  EXPECT_EQ(server.at("prompt_tokens").as_double(),
            static_cast<double>(o.summary.at("tokens").at("input_total").as_int64()));
  // Speculative decoding: the engine's acceptance rate, and several tokens per event.
  const double acceptance = server.at("spec_decode_acceptance_rate").as_double();
  EXPECT_GT(acceptance, 0.3);
  EXPECT_LT(acceptance, 1.0);
  EXPECT_GT(o.summary.at("tokens").at("tokens_per_event").as_double(), 1.2);
  // Both snapshots are evidence, listed with their digests.
  const auto manifest = read_json(o.run_dir / "manifest.json");
  const auto& evidence = manifest.at("evidence").as_array();
  ASSERT_EQ(evidence.size(), 3u);  // the two snapshots and the gauge series
  for (const auto& e : evidence) {
    const fs::path file = o.run_dir / std::string(e.at("path").as_string());
    ASSERT_TRUE(fs::exists(file));
    EXPECT_EQ(dyno::workload::test::openssl_sha256(Child::slurp(file.string())),
              e.at("sha256").as_string());
  }
}

}  // namespace

namespace {

TEST_F(Integration, ServerTimingsSitBesideTheClientsFigures) {
  // The embedded engine with speculative decoding: every response carries llama.cpp-shaped
  // timings, which become summary.server.timings, next to the client's own figures.
  const Outcome o = run_dyno({"--profile", "spec", "-n", "16", "-c", "4", "--output-tokens", "120",
                              "--input-tokens", "256", "--warmup", "1"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto lines = check_record(o.run_dir);
  for (const auto& l : lines) {
    const auto& t = l.at("server_timings").as_object();
    EXPECT_EQ(t.at("predicted_n").as_int64(), l.at("output_tokens").as_int64());
    EXPECT_EQ(t.at("prompt_n").as_int64(), l.at("input_tokens").as_int64());
  }
  const auto& server = o.summary.at("server").as_object();
  const auto& timings = server.at("timings").as_object();
  EXPECT_EQ(timings.at("source").as_string(), "response timings");
  // The record says how to read them: the engine's timer boundaries are not the client's, and
  // speculative decoding puts several tokens in an event.
  std::set<std::string> caveats;
  for (const auto& c : o.summary.at("caveats").as_array())
    caveats.emplace(c.at("code").as_string());
  EXPECT_TRUE(caveats.count("engine_timer_boundaries")) << o.summary.at("caveats");
  EXPECT_GT(o.summary.at("tokens").at("tokens_per_event").to_number<double>(), 1.05);
  EXPECT_TRUE(caveats.count("tokens_per_event")) << o.summary.at("caveats");
  EXPECT_EQ(timings.at("requests_with_timings").as_int64(), 16);  // warm-up left out
  EXPECT_EQ(timings.at("requests_without_timings").as_int64(), 0);
  EXPECT_EQ(timings.at("prompt_tokens_computed").as_int64(),
            o.summary.at("tokens").at("input_total").as_int64());
  EXPECT_EQ(timings.at("prompt_tokens_cached").as_int64(), 0);  // the sim has no prefix cache
  EXPECT_EQ(timings.at("predicted_tokens").as_int64(),
            o.summary.at("tokens").at("output_total").as_int64());

  // Acceptance from the engine: drafts accepted with p = 0.7 each up to the first rejection, 3
  // per step, so (0.7 + 0.49 + 0.343) / 3 = 0.511 of the drafts; /metrics counts the same
  // drafts, so both sources agree (each keeps its own key and source).
  const double from_timings = timings.at("spec_decode_acceptance_rate").as_double();
  EXPECT_NEAR(from_timings, 0.511, 0.08);
  EXPECT_NEAR(server.at("spec_decode_acceptance_rate").as_double(), from_timings, 0.05);
  EXPECT_GT(o.summary.at("tokens").at("tokens_per_event").as_double(), 1.5);

  // The engine's decode rate per user pairs with the client's (both count the tokens after the
  // first over the first-to-last-token span): within a sane factor of each other.
  const double server_decode = timings.at("decode_rate_per_user").at("p50").as_double();
  const double client_decode =
      o.summary.at("rates_tok_s").at("decode_rate_per_user").at("p50").as_double();
  EXPECT_GT(server_decode, client_decode / 2.0);
  EXPECT_LT(server_decode, client_decode * 2.0);
  // Prefill by the engine's clock excludes queueing and the network: never slower than the
  // client's input_tokens / ttft by more than noise.
  const double server_prefill = timings.at("prefill_rate").at("p50").as_double();
  EXPECT_GT(server_prefill,
            0.8 * o.summary.at("rates_tok_s").at("prefill_rate_client").at("p50").as_double());
  EXPECT_EQ(timings.at("prompt_ms").at("count").as_int64(), 16);

  // The console prints the server rows under the client's, and both acceptance rates.
  Child c({DYNO_BINARY, "run", "-q", "--color", "never", "--runs-root", (dir_ / "runs").string(),
           "--profile", "spec", "-n", "4", "-c", "2", "--output-tokens", "40"},
          (dir_ / "text.out").string(), (dir_ / "text.err").string());
  ASSERT_EQ(c.wait(), 0) << c.err();
  const std::string out = c.out();
  const auto decode_client = out.find("  decode per user ");
  const auto decode_server = out.find("  decode/user (server) ");
  const auto prefill_client = out.find("  prefill (client) ");
  const auto prefill_server = out.find("  prefill (server) ");
  ASSERT_NE(decode_server, std::string::npos) << out;
  ASSERT_NE(prefill_server, std::string::npos) << out;
  EXPECT_LT(decode_client, decode_server);
  EXPECT_LT(decode_server, prefill_client);
  EXPECT_LT(prefill_client, prefill_server);
  EXPECT_NE(out.find("server      timings in 4 of 4 responses"), std::string::npos) << out;
  EXPECT_NE(out.find("speculative drafts "), std::string::npos) << out;
  EXPECT_NE(out.find("(timings)"), std::string::npos) << out;
  EXPECT_NE(out.find("(/metrics)"), std::string::npos) << out;
}

TEST_F(Integration, NonStreamedResponsesCarryServerTimings) {
  // llama.cpp puts timings at the top level of a non-streamed body; dyno reads them there too.
  // Without speculative decoding there are no draft counts, and no acceptance rate.
  const Outcome o = run_dyno({"-n", "4", "-c", "2", "--output-tokens", "8", "--no-stream"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto& timings = o.summary.at("server").at("timings").as_object();
  EXPECT_EQ(timings.at("requests_with_timings").as_int64(), 4);
  EXPECT_EQ(timings.at("predicted_tokens").as_int64(), 32);
  EXPECT_TRUE(timings.at("draft_tokens").is_null());
  EXPECT_TRUE(timings.at("spec_decode_acceptance_rate").is_null());
  // The engine's decode rate exists where the client's cannot (one "event" per body).
  EXPECT_EQ(timings.at("decode_rate_per_user").at("count").as_int64(), 4);
  EXPECT_EQ(o.summary.at("rates_tok_s").at("decode_rate_per_user").at("count").as_int64(), 0);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The record schemas (docs/schema/) against records the binary wrote. Every test's records are
// checked in TearDown (expect_records_conform); these check what the schemas catch.

namespace {

TEST_F(Integration, ARecordWithAPlantedFaultFailsItsSchema) {
  const Outcome o = run_dyno({"-n", "4", "-c", "2", "--output-tokens", "4"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_TRUE(dyno::record::validate_run_dir(o.run_dir).empty());
  const fs::path copy = dir_ / "planted";  // outside runs/: TearDown must not see it
  fs::copy(o.run_dir, copy, fs::copy_options::recursive);
  json::object manifest = read_json(copy / "manifest.json");
  manifest["engine"].as_object()["launch_line"] = "vllm serve";  // a key no schema knows
  std::ofstream(copy / "manifest.json") << json::serialize(manifest);
  json::object summary = read_json(copy / "summary.json");
  summary["latency_ms"].as_object()["ttft"].as_object()["p50"] = "12 ms";  // a type error
  std::ofstream(copy / "summary.json") << json::serialize(summary);
  std::string problems;
  for (const auto& p : dyno::record::validate_run_dir(copy)) problems += p.to_string() + "\n";
  EXPECT_NE(problems.find("manifest.json: /engine/launch_line: unexpected key `launch_line`"),
            std::string::npos)
      << problems;
  EXPECT_NE(
      problems.find("summary.json: /latency_ms/ttft/p50: expected number or null, found string"),
      std::string::npos)
      << problems;
}

TEST_F(Integration, ARunKilledBySecondSignalLeavesARecordThatConforms) {
  // Two Ctrl-Cs back to back are one interrupt (app/signals.h); a later second one exits at
  // once. Either way the record is closed as interrupted (tests/integration/cli_test.cpp).
  Child c({DYNO_BINARY, "run", "-q", "--runs-root", (dir_ / "runs").string(), "--duration", "60",
           "-c", "2", "--output-tokens", "64"},
          (dir_ / "run.out").string(), (dir_ / "run.err").string());
  const fs::path run_dir = wait_for_finished_requests(1);
  ASSERT_FALSE(run_dir.empty());
  c.signal(SIGINT);
  c.signal(SIGINT);
  EXPECT_EQ(c.wait(std::chrono::seconds(30)), 130) << c.err();
  EXPECT_EQ(read_json(run_dir / "manifest.json").at("status").as_string(), "interrupted");
  // It conforms; TearDown checks it again with every other record.
  const auto problems = dyno::record::validate_run_dir(run_dir);
  for (const auto& p : problems) ADD_FAILURE() << p.to_string();
}

}  // namespace

namespace {

/// --telemetry off: no sampler and no /metrics polling beside the load (only the snapshots
/// before and after the cell, which the server figures need); auto polls the gauges.
TEST_F(Integration, TelemetryOffPollsNoMetrics) {
  const std::string url = start_sim({"--profile", "small-gpu"});
  const Outcome off = run_dyno({"--url", url, "--model", "dyno-sim", "-n", "12", "-c", "2",
                                "--output-tokens", "48", "--telemetry", "off"});
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_FALSE(fs::exists(off.run_dir / "evidence" / "metrics_gauges.jsonl"));
  EXPECT_FALSE(off.summary.at("server").as_object().contains("gauges"));
  EXPECT_TRUE(fs::exists(off.run_dir / "evidence" / "metrics_before.txt"));
  const Outcome on = run_dyno({"--url", url, "--model", "dyno-sim", "-n", "12", "-c", "2",
                               "--output-tokens", "48", "--idle-baseline", "0"});
  ASSERT_EQ(on.exit_code, 0) << on.err;
  EXPECT_TRUE(fs::exists(on.run_dir / "evidence" / "metrics_gauges.jsonl"));
}

}  // namespace
