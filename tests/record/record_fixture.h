// Hand-made run records for the store and scrub tests: the keys dyno writes, small values.
#pragma once

#include <boost/json.hpp>
#include <filesystem>
#include <random>
#include <string>

#include "record/record_json.h"
#include "record/run_writer.h"
#include "record/summary_file.h"
#include "temp_dir.h"

namespace dyno::testing {

/// A manifest of the shape dyno writes (docs/record.md), for a finished run.
inline boost::json::object sample_manifest(const std::string& run_id,
                                           const std::string& started_at) {
  namespace json = boost::json;
  return json::object{
      {"schema_version", record::kSchemaVersion},
      {"run_id", run_id},
      {"label", nullptr},
      {"campaign", nullptr},
      {"status", "ok"},
      {"started_at", started_at},
      {"ended_at", started_at},
      {"harness",
       {{"name", "dyno"},
        {"version", "0.1.0"},
        {"git_commit", "abc1234"},
        {"git_dirty", false},
        {"build_type", "RelWithDebInfo"},
        {"executable_sha256", std::string(64, 'e')}}},
      {"engine",
       {{"name", "vllm"},
        {"version", "0.6.3"},
        {"reached", {{"kind", "http"}, {"scheme", "http"}, {"path", "/v1"}}},
        {"engine_args", json::object{}},
        {"api_key_used", false}}},
      {"model",
       {{"id", "meta-llama/Llama-3.1-8B-Instruct"},
        {"revision", "0e9e39f"},
        {"fingerprint", std::string(64, 'f')}}},
      {"hardware",
       {{"host", "bench-01"},
        {"cpu_model", "AMD EPYC 9654"},
        {"cpu_cores", 192},
        {"ram_bytes", 1024},
        {"gpus", json::array{json::object{{"vendor", "nvidia"},
                                          {"index", 0},
                                          {"name", "NVIDIA H100 80GB HBM3"},
                                          {"uuid", "GPU-00000000-1111-2222-3333-444444444444"},
                                          {"driver", "550.54.15"}}}}}},
      {"workload",
       {{"protocol", {{"name", "run"}, {"version", 1}}},
        {"api", "chat"},
        {"request_stream",
         {{"source", "synthetic:256/128 seed 0"}, {"sha256", std::string(64, 'a')}, {"count", 20}}},
        {"sampling", {{"temperature", 0.0}, {"stream", true}}},
        {"warmup_requests", 0}}},
      {"load",
       {{"mode", "closed"},
        {"concurrency", 4},
        {"rate_per_s", nullptr},
        {"seed", 0},
        {"requests", 20},
        {"duration_s", nullptr}}},
      {"slo", {{"ttft_s", nullptr}, {"tpot_s", nullptr}, {"e2e_s", nullptr}}},
      {"telemetry", {{"mode", "off"}}},
      {"warnings", json::array{}},
      {"scrubbed_fields", json::array{}},
      {"evidence", json::array{}}};
}

inline boost::json::object sample_summary(const std::string& run_id, double tok_s, double ttft_ms) {
  // A whole summary.json as dyno writes it (the typed reader refuses a partial one).
  record::SummaryFile f;
  f.run_id = run_id;
  f.status = "ok";
  metrics::Summary& s = f.figures;
  s.requests_total = 20;
  s.requests_ok = 20;
  s.error_rate = 0.0;
  s.output_tokens_per_s = tok_s;
  s.requests_per_s = 2.5;
  s.ttft_ms.p50 = ttft_ms;
  s.tpot_ms.p50 = 12.5;
  s.e2e_ms.p50 = 900.0;
  f.client.states_connections = true;
  f.client.connections_opened = 1;
  f.energy = boost::json::object{{"energy_j", nullptr}, {"reason", "telemetry off"}};
  f.server = boost::json::object{{"source", nullptr}, {"reason", "no /metrics"}};
  return record::summary_file_to_json(f);
}

/// Writes <root>/<manifest.run_id>/ with manifest, summary, requests.jsonl and SHA256SUMS.
inline std::filesystem::path write_run(
    const std::filesystem::path& root, const boost::json::object& manifest,
    const boost::json::object& summary,
    const std::string& requests_jsonl = "{\"index\":0,\"status\":\"ok\",\"error\":null}\n") {
  const std::string id(manifest.at("run_id").as_string());
  const std::filesystem::path dir = root / id;
  std::filesystem::create_directories(dir);
  // In dyno's order: the final manifest after the summary.
  record::write_file_atomic(dir / "summary.json", record::pretty_json(summary));
  record::write_file_atomic(dir / "requests.jsonl", requests_jsonl);
  record::write_file_atomic(dir / "manifest.json", record::pretty_json(manifest));
  record::write_sha256sums(dir);
  return dir;
}

}  // namespace dyno::testing
