// In-memory run records for compare/ tests: traces in, a consistent summary (computed by
// metrics::summarize_run, as dyno writes it) and a manifest whose identities are complete.
#pragma once

#include <boost/json.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "compare/board.h"
#include "compare/inputs.h"
#include "compare/select.h"
#include "metrics/summary.h"
#include "record/manifest.h"
#include "record/record_json.h"
#include "record/summary_file.h"

namespace dyno::testing {

/// A file's bytes ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Occurrences of `needle` in `hay` (overlapping ones included).
inline std::size_t count(const std::string& hay, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = hay.find(needle); pos != std::string::npos; pos = hay.find(needle, pos + 1)) ++n;
  return n;
}

inline std::filesystem::path fixture_root() {
  return std::filesystem::path(DYNO_SOURCE_DIR) / "tests/compare/data/runs";
}

/// The fixture board's input: arm fast (label=fast) against slow (label=slow).
inline compare::BoardInput fixture_input(const std::string& a = "label=fast",
                                         const std::string& b = "label=slow",
                                         const std::string& a_name = "fast",
                                         const std::string& b_name = "slow") {
  return compare::load_board_input(fixture_root(), {{a_name, {a}}, {b_name, {b}}}, {});
}

/// Options with a fixed generator, as the golden files have it.
inline compare::BoardOptions fixed_options() {
  compare::BoardOptions o;
  o.generator = {"dyno", "golden", "0000000000000000000000000000000000000000",
                 std::string(64, 'e')};
  return o;
}

/// A copy of a run whose manifest or summary a test may change.
inline std::shared_ptr<compare::RunRecord> copy_run(const compare::RunPtr& r) {
  return std::make_shared<compare::RunRecord>(*r);
}

/// Sets a value at a dotted path (objects only; `gpus.0.x` indexes arrays).
inline void set_path(boost::json::object& root, const std::string& path, boost::json::value v) {
  boost::json::value* cur = nullptr;
  boost::json::object* obj = &root;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (cur != nullptr && cur->is_array()) {
      cur = &cur->as_array().at(std::stoul(key));
    } else {
      cur = &(*obj)[key];
    }
    if (dot == std::string::npos) {
      *cur = std::move(v);
      return;
    }
    if (cur->is_null()) *cur = boost::json::object();  // missing steps become objects
    if (cur->is_object()) obj = &cur->as_object();
    start = dot + 1;
  }
}

inline void set_path(boost::json::object& root, const std::string& path, const std::string& v) {
  set_path(root, path, boost::json::value(boost::json::string(v)));
}
inline void set_path(boost::json::object& root, const std::string& path, std::nullptr_t) {
  set_path(root, path, boost::json::value(nullptr));
}
inline void set_path(boost::json::object& root, const std::string& path, const char* v) {
  set_path(root, path, boost::json::value(boost::json::string(v)));
}

/// The typed manifest and summary read again from manifest.json and summary.json as a test
/// changed them (read_run reads both from the file; a test that edits the JSON keeps them one).
inline void retype(compare::RunRecord& r) {
  r.manifest = record::manifest_from_json(r.manifest_json);
  if (r.has_summary()) r.summary = record::summary_file_from_json(r.summary_json);
}

/// Sets a value at a dotted path of a record's manifest.json and reads its typed manifest again.
template <typename V>
inline void set_manifest(compare::RunRecord& r, const std::string& path, V&& v) {
  set_path(r.manifest_json, path, std::forward<V>(v));
  r.manifest = record::manifest_from_json(r.manifest_json);
}

/// Gives a record the engine's own figures as summary.json holds them (docs/metrics.md
/// "Per-response server timings"): medians of its prefill and per-user decode rates, its
/// prefill rate over the run (1.1 × the median: long prompts ran faster), computed and cached
/// prompt tokens, draft acceptance 0.5 from the responses and 0.25 from /metrics.
inline void set_engine_timings(compare::RunRecord& r, double prefill_p50, double decode_p50,
                               std::int64_t computed, std::int64_t cached) {
  namespace json = boost::json;
  // A distribution over the 12 responses of which only the median is given.
  const auto median = [](std::optional<double> p50) {
    json::object d;
    for (const char* stat : {"count", "mean", "stddev", "min", "p50", "p90", "p95", "p99", "p99_9",
                             "max", "jitter_p95_minus_p50"}) {
      d[stat] = nullptr;
    }
    d["count"] = p50 ? 12 : 0;
    if (p50) d["p50"] = *p50;
    return d;
  };
  set_path(r.summary_json, "server.timings",
           json::object{{"source", "response timings"},
                        {"requests_with_timings", 12},
                        {"requests_without_timings", 0},
                        {"prompt_tokens_computed", computed},
                        {"prompt_tokens_cached", cached},
                        {"prompt_cached_fraction",
                         cached + computed > 0 ? json::value(static_cast<double>(cached) /
                                                             static_cast<double>(cached + computed))
                                               : json::value(nullptr)},
                        {"predicted_tokens", 12 * 32},
                        {"prompt_ms", median(std::nullopt)},
                        {"prefill_rate", median(prefill_p50)},
                        {"prefill_tokens_per_s", 1.1 * prefill_p50},
                        {"decode_rate_per_user", median(decode_p50)},
                        {"draft_tokens", 40},
                        {"draft_tokens_accepted", 20},
                        {"spec_decode_acceptance_rate", 0.5}});
  set_path(r.summary_json, "server.spec_decode_acceptance_rate", 0.25);
  retype(r);
}

/// Sequential requests (concurrency 1): request i is sent when i − 1 is done; `e2e_ms[i]` its
/// latency, first token after 10 % of it, `output_tokens` each.
inline std::vector<metrics::Trace> sequential_traces(const std::vector<double>& e2e_ms,
                                                     std::int64_t output_tokens = 32,
                                                     std::int64_t input_tokens = 64) {
  std::vector<metrics::Trace> out;
  std::int64_t t = 1'000'000;
  for (std::size_t i = 0; i < e2e_ms.size(); ++i) {
    metrics::Trace tr;
    tr.index = i;
    tr.request_id = "r" + std::to_string(i);
    tr.phase = "measured";
    const auto e2e = static_cast<std::int64_t>(e2e_ms[i] * 1e6);
    tr.scheduled_ns = t;
    tr.sent_ns = t;
    tr.first_byte_ns = t + e2e / 20;
    tr.first_token_ns = t + e2e / 10;
    tr.last_token_ns = t + e2e;
    tr.done_ns = t + e2e;
    tr.input_tokens = input_tokens;
    tr.output_tokens = output_tokens;
    tr.token_count_source = metrics::TokenCountSource::kUsage;
    tr.status = metrics::RequestStatus::kOk;
    out.push_back(tr);
    t += e2e;
  }
  return out;
}

/// A complete, consistent run record from traces.
inline compare::RunPtr make_run(const std::string& run_id, const std::string& label,
                                std::vector<metrics::Trace> traces, int concurrency = 1,
                                const std::string& campaign = "", int repetition = 1,
                                int repetitions = 1) {
  namespace json = boost::json;
  auto r = std::make_shared<compare::RunRecord>();
  r->run_id = run_id;
  r->dir = "/nonexistent/" + run_id;
  metrics::SummaryOptions so;
  so.declared_concurrency = concurrency;
  const metrics::Summary s = metrics::summarize_run(traces, so);
  r->summary_json = json::object{{"schema_version", 1}, {"run_id", run_id}, {"status", "ok"}};
  for (auto& kv : record::summary_to_json(s)) r->summary_json[kv.key()] = kv.value();
  r->summary_json["energy"] = json::object{{"energy_j", nullptr}, {"reason", "telemetry off"}};
  r->summary = record::SummaryFile{};
  r->summary->run_id = run_id;
  r->summary->status = "ok";
  r->summary->figures = s;
  r->has_requests = true;
  r->sums_sha256 = std::string(64, 'a');
  r->traces = std::move(traces);
  record::Manifest& m = r->manifest;
  m.run_id = run_id;
  m.label = label;
  if (!campaign.empty()) m.campaign = campaign;
  m.status = "ok";
  m.harness.version = "test";
  m.harness.git_commit = "abc";
  m.harness.executable_sha256 = std::string(64, 'e');
  m.engine =
      json::object{{"name", label},
                   {"version", "1"},
                   {"reached", json::object{{"kind", "http"}, {"scheme", "http"}, {"path", "/v1"}}},
                   {"engine_args", json::object{}},
                   {"api_key_used", false}};
  m.model.id = "m";
  m.model.revision = "r1";
  m.model.fingerprint = std::string(64, 'f');
  m.hardware.cpu_model = "cpu";
  m.hardware.cpu_cores = 8;
  record::DeviceEntry gpu;
  gpu.name = "GPU X";
  gpu.uuid = "GPU-1";
  gpu.driver = "1.0";
  gpu.memory_total_bytes = 1000;
  m.hardware.gpus.push_back(gpu);
  m.workload.protocol.name = "sweep";
  m.workload.protocol.cell = "c" + std::to_string(concurrency);
  m.workload.protocol.cell_params = json::object{{"concurrency", concurrency}};
  m.workload.protocol.repetition = static_cast<std::uint64_t>(repetition);
  m.workload.protocol.repetitions = static_cast<std::uint64_t>(repetitions);
  m.workload.protocol.selection = record::ProtocolSelection{
      "median", "output_tokens_per_s", static_cast<std::uint64_t>(repetitions), {}};
  m.workload.request_stream = {"synthetic", std::string(64, '5'), 10, false};
  m.workload.sampling = json::object{{"temperature", 0.0}};
  m.load.concurrency = static_cast<std::uint64_t>(concurrency);
  m.telemetry = json::object{{"mode", "off"},
                             {"period_ms", json::object{{"requested", 1000}}},
                             {"backends", json::array()},
                             {"idle_baseline", nullptr}};
  r->manifest_json = record::manifest_to_json(m);
  return r;
}

/// A board input of two arms with one run each.
inline compare::BoardInput pair_input(compare::RunPtr a, compare::RunPtr b,
                                      const std::string& a_name = "a",
                                      const std::string& b_name = "b") {
  compare::BoardInput in;
  in.arms.push_back({a_name, {"test"}, {std::move(a)}});
  in.arms.push_back({b_name, {"test"}, {std::move(b)}});
  return in;
}

}  // namespace dyno::testing
