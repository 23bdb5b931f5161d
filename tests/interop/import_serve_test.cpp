// dyno import sglang-bench and aiperf (interop/import_sglang.h, interop/import_aiperf.h):
// hand-written files in each tool's documented shape (tests/record/data/sglang_bench/,
// tests/record/data/aiperf/) become traces or mapped summary figures and records that
// verify; bad files are refused naming the file, the line and the JSON path.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "import_golden.h"
#include "interop/import_aiperf.h"
#include "interop/import_formats.h"
#include "interop/import_sglang.h"
#include "interop/result_import.h"
#include "metrics/summary.h"
#include "record/record_reader.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::interop::ImportedResult;
using dyno::interop::ImportFileError;

namespace {

const fs::path kData = fs::path(DYNO_SOURCE_DIR) / "tests/record/data";

std::string bytes_of(const std::string& path) { return dyno::record::read_file(kData / path); }

std::vector<ImportedResult> read(const std::string& format, const std::string& path) {
  return dyno::interop::read_import(format, bytes_of(path), fs::path(path).filename().string(), {});
}

std::string error_of(const std::string& format, const std::string& path) {
  try {
    (void)read(format, path);
  } catch (const ImportFileError& e) {
    return e.what();
  }
  return "no error";
}

std::string error_of_bytes(const std::string& format, const std::string& bytes) {
  try {
    (void)dyno::interop::read_import(format, bytes, "x.jsonl", {});
  } catch (const ImportFileError& e) {
    return e.what();
  }
  return "no error";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// ---- sglang-bench ----------------------------------------------------------------------

TEST(SglangBench, EachLineIsAResultBlankLinesSkipped) {
  const auto results = read("sglang-bench", "sglang_bench/summary_only.jsonl");
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].source.part, "line 1");
  EXPECT_EQ(results[1].source.part, "line 3");
  const ImportedResult& a = results[0];
  EXPECT_EQ(a.source.tool, "sglang.bench_serving");
  EXPECT_FALSE(a.source.tool_version.has_value());
  EXPECT_EQ(a.source.timing, "summary_only");
  EXPECT_EQ(a.api, "completions");
  EXPECT_EQ(a.label, "nightly");
  EXPECT_FALSE(a.model_id.has_value());  // bench_serving does not write the model
  EXPECT_EQ(a.load.concurrency, 16u);
  EXPECT_FALSE(a.load.rate_per_s.has_value());  // Infinity: no schedule
  EXPECT_EQ(a.source.file_fields.at("request_rate").as_string(), "Infinity");
  const auto& s = a.summary;
  EXPECT_EQ(s.requests_ok, 100u);
  EXPECT_FALSE(s.error_rate.has_value());   // the line does not say how many failed
  EXPECT_EQ(s.output_tokens_total, 12795);  // retokenized, not usage-or-requested
  EXPECT_EQ(s.token_count_sources.at("tokenizer"), 100u);
  EXPECT_DOUBLE_EQ(*s.ttft_ms.mean, 120.5);
  EXPECT_DOUBLE_EQ(*s.ttft_ms.p50, 110.0);
  EXPECT_DOUBLE_EQ(*s.e2e_ms.p90, 1990.0);
  EXPECT_EQ(s.e2e_ms.count, 100u);
  EXPECT_FALSE(s.ttft_ms.stddev.has_value());  // population std, not dyno's sample std
  EXPECT_FALSE(s.tpot_ms.mean.has_value());    // latency − ttft over usage-or-requested
  EXPECT_FALSE(s.event_gap_ms.mean.has_value());
  EXPECT_FALSE(s.requests_per_s.has_value());  // over duration, not dyno's W
  const ImportedResult& b = results[1];
  EXPECT_EQ(b.api, "chat");
  EXPECT_EQ(b.load.rate_per_s, 4.0);
  EXPECT_EQ(b.load.arrival, "poisson");
  EXPECT_FALSE(b.load.concurrency.has_value());
  EXPECT_FALSE(b.summary.e2e_ms.p90.has_value());
}

TEST(SglangBench, DetailsBecomeTracesOfTheirOwnOrigin) {
  const auto results = read("sglang-bench", "sglang_bench/details.jsonl");
  ASSERT_EQ(results.size(), 1u);
  const ImportedResult& r = results[0];
  EXPECT_EQ(r.source.timing, "per_request");
  EXPECT_EQ(r.api, "chat");
  EXPECT_EQ(r.status, "partial");
  EXPECT_EQ(r.requests, 4u);
  EXPECT_EQ(r.load.concurrency, 2u);
  EXPECT_EQ(r.load.rate_per_s, 8.0);
  ASSERT_EQ(r.traces.size(), 4u);
  const auto& t = r.traces[1];
  EXPECT_EQ(t.sent_ns, 0);
  EXPECT_EQ(t.first_token_ns, 200'000'000);
  ASSERT_EQ(t.event_times_ns.size(), 4u);
  EXPECT_EQ(t.last_token_ns, 500'000'000);
  EXPECT_FALSE(t.done_ns.has_value());  // the details keep no latency per request
  // Chunks, not output_lens (the server's usage or the requested length).
  EXPECT_EQ(t.output_tokens, 4);
  EXPECT_EQ(t.token_count_source, dyno::metrics::TokenCountSource::kChunks);
  EXPECT_EQ(r.traces[2].output_tokens, 2);
  EXPECT_EQ(r.traces[0].output_text, "one two three");
  EXPECT_EQ(t.input_tokens, 20);
  const auto& failed = r.traces[3];
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.error_category, "imported");
  EXPECT_EQ(failed.error_message, "Internal Server Error: engine overloaded");
}

TEST(SglangBench, BadFilesNameFileLineAndPath) {
  const std::string not_json = error_of("sglang-bench", "sglang_bench/not_json.jsonl");
  EXPECT_TRUE(contains(not_json, "not_json.jsonl:3: not JSON")) << not_json;
  const std::string missing = error_of("sglang-bench", "sglang_bench/missing_completed.jsonl");
  EXPECT_TRUE(contains(missing, "missing_completed.jsonl:1: $.completed: missing")) << missing;
  const std::string wrong = error_of("sglang-bench", "sglang_bench/wrong_type.jsonl");
  EXPECT_TRUE(contains(wrong, "wrong_type.jsonl:1: $.ttfts[1]: expected a number")) << wrong;
  const std::string shorter = error_of("sglang-bench", "sglang_bench/short_itls.jsonl");
  EXPECT_TRUE(contains(shorter, "short_itls.jsonl:1: $.itls: holds 3 elements; expected 4"))
      << shorter;
  const std::string newer = error_of("sglang-bench", "sglang_bench/newer_schema.jsonl");
  EXPECT_TRUE(contains(newer, "newer_schema.jsonl:1: $.metrics: a layout this dyno does not read"))
      << newer;
}

TEST(SglangBench, RefusesWhatItCannotRecordHonestly) {
  json::object o = json::parse(R"({"backend": "tgi", "duration": 1.0, "completed": 1,
                      "total_input_tokens": 1, "total_output_tokens": 1})")
                       .as_object();
  EXPECT_TRUE(contains(error_of_bytes("sglang-bench", json::serialize(o)),
                       "x.jsonl:1: $.backend: 'tgi': expected sglang-oai"));
  o["backend"] = "vllm";
  o["completed"] = 0;  // no arrays, nothing completed: nothing to record
  EXPECT_TRUE(contains(error_of_bytes("sglang-bench", json::serialize(o)), "$.completed: 0"));
  o["completed"] = 1;
  o["request_rate"] = -1.0;
  EXPECT_TRUE(contains(error_of_bytes("sglang-bench", json::serialize(o)), "$.request_rate"));
  o["request_rate"] = 1.0;
  EXPECT_EQ(error_of_bytes("sglang-bench", json::serialize(o)), "no error");
  // A second, broken line fails the whole file: nothing half-imported.
  const std::string two = json::serialize(o) + "\n[1, 2]\n";
  EXPECT_TRUE(
      contains(error_of_bytes("sglang-bench", two), "x.jsonl:2: $: expected a JSON object"));
  EXPECT_TRUE(contains(error_of_bytes("sglang-bench", "\n \n"), "holds no result"));
  // NaN only where a figure may be missing; a string that merely reads "NaN" stays a string.
  o["tag"] = "NaN";
  const auto r = dyno::interop::read_sglang_bench(json::serialize(o), "n.jsonl");
  EXPECT_EQ(r.at(0).label, "NaN");
  // Gaps after no first token, a time past 1e7 s.
  std::string line = bytes_of("sglang_bench/details.jsonl");
  line.replace(line.find("NaN"), 3, "null");  // Python's NaN is not JSON
  json::object d = json::parse(line).as_object();
  d["ttfts"].as_array()[0] = 0.0;
  EXPECT_TRUE(contains(error_of_bytes("sglang-bench", json::serialize(d)),
                       "$.itls[0]: gaps after no first token"));
  d["ttfts"].as_array()[0] = 1e300;
  EXPECT_TRUE(contains(error_of_bytes("sglang-bench", json::serialize(d)),
                       "$.ttfts[0]: expected seconds from 0 to"));
}

// ---- aiperf ------------------------------------------------------------------------------

TEST(Aiperf, RecordsBecomeTracesOnTheSharedClock) {
  const auto results = read("aiperf", "aiperf/profile_export.jsonl");
  ASSERT_EQ(results.size(), 1u);
  const ImportedResult& r = results[0];
  EXPECT_EQ(r.source.timing, "shared_clock");
  EXPECT_EQ(r.source.tool, "aiperf");
  // The export names no endpoint: `dyno import --api` must, or nothing is imported.
  EXPECT_FALSE(r.api.has_value());
  EXPECT_THROW((void)dyno::interop::import_api(r, std::nullopt, "p.jsonl"), ImportFileError);
  EXPECT_EQ(dyno::interop::import_api(r, "completions", "p.jsonl"), "completions");
  EXPECT_EQ(r.status, "partial");
  EXPECT_EQ(r.requests, 3u);  // the warm-up record is not measured
  ASSERT_EQ(r.traces.size(), 4u);
  const auto& warm = r.traces[0];
  EXPECT_EQ(warm.phase, "warmup");
  EXPECT_EQ(warm.sent_ns, 0);  // the earliest start is the origin
  const auto& a = r.traces[1];
  EXPECT_EQ(a.request_id, "req-0");
  EXPECT_EQ(a.sent_ns, 100'000'000);
  EXPECT_EQ(a.first_token_ns, 200'000'000);
  ASSERT_EQ(a.event_times_ns.size(), 4u);
  EXPECT_EQ(a.event_times_ns.to_vector()[2], 400'000'000);
  EXPECT_EQ(a.last_token_ns, 500'000'000);
  EXPECT_FALSE(a.done_ns.has_value());  // request_end_ns is the last token, not the end
  EXPECT_EQ(a.output_tokens, 4);
  EXPECT_EQ(a.input_tokens, 550);
  EXPECT_EQ(a.token_count_source, dyno::metrics::TokenCountSource::kTokenizer);
  // Without inter_chunk_latency: first and last token only, no invented events between.
  const auto& b = r.traces[2];
  EXPECT_EQ(b.first_token_ns, 750'000'000);
  EXPECT_EQ(b.last_token_ns, 950'000'000);
  EXPECT_TRUE(b.event_times_ns.empty());
  EXPECT_EQ(b.reasoning_tokens, 1);
  EXPECT_FALSE(b.first_content_ns.has_value());  // reasoning came first, content unknown
  const auto& failed = r.traces[3];
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.http_status, 500);
  EXPECT_EQ(failed.error_message, "Internal Server Error: engine overloaded");
  EXPECT_EQ(failed.input_tokens, 300);
  // dyno's figures from these traces: TPOT = AIPerf's ITL (100 ms for both), no event gap
  // from the request without chunk times, no window.
  const auto s = dyno::metrics::summarize_run(r.traces, {});
  EXPECT_EQ(s.tpot_ms.count, 2u);
  EXPECT_NEAR(*s.tpot_ms.p50, 100.0, 1e-6);
  EXPECT_EQ(s.event_gap_ms.count, 3u);
  EXPECT_FALSE(s.service_window_s.has_value());
  EXPECT_FALSE(s.e2e_ms.mean.has_value());
  EXPECT_EQ(s.ttft_ms.count, 2u);
}

TEST(Aiperf, AggregateIsSummaryOnlyWithMatchingFigures) {
  const ImportedResult r = read("aiperf", "aiperf/profile_export_aiperf.json").at(0);
  EXPECT_EQ(r.source.timing, "summary_only");
  EXPECT_EQ(r.source.tool_version, "0.3.0");
  EXPECT_EQ(r.model_id, "example-org/tiny-chat");
  EXPECT_EQ(r.api, "chat");
  EXPECT_EQ(r.status, "partial");
  EXPECT_EQ(r.requests, 100u);
  EXPECT_EQ(r.load.concurrency, 8u);
  const auto& s = r.summary;
  EXPECT_EQ(s.requests_ok, 98u);
  EXPECT_EQ(s.requests_failed, 2u);
  EXPECT_DOUBLE_EQ(*s.error_rate, 0.02);
  EXPECT_EQ(s.output_tokens_total, 12544);
  EXPECT_EQ(s.input_tokens_total, 50176);
  EXPECT_EQ(s.ttft_ms.count, 98u);
  EXPECT_DOUBLE_EQ(*s.ttft_ms.p90, 60.0);
  EXPECT_DOUBLE_EQ(*s.ttft_ms.min, 30.0);
  EXPECT_EQ(s.tpot_ms.count, 97u);  // AIPerf's ITL is dyno's TPOT
  EXPECT_DOUBLE_EQ(*s.tpot_ms.p50, 12.25);
  EXPECT_FALSE(s.ttft_ms.stddev.has_value());
  EXPECT_FALSE(s.e2e_ms.mean.has_value());  // request_latency ends at the last token
  EXPECT_FALSE(s.output_tokens_per_s.has_value());
  EXPECT_EQ(r.source.file_fields.at("endpoint").at("streaming").as_bool(), true);
  const ImportedResult old = read("aiperf", "aiperf/aggregate_v0.json").at(0);
  EXPECT_FALSE(old.source.tool_version.has_value());
  EXPECT_EQ(old.api, "completions");
  EXPECT_EQ(old.load.rate_per_s, 4.0);
  EXPECT_EQ(old.load.arrival, "constant");
  EXPECT_EQ(old.summary.ttft_ms.count, 40u);           // streamed: every completed request has one
  EXPECT_FALSE(old.summary.tpot_ms.mean.has_value());  // no count of requests with osl ≥ 2
}

TEST(Aiperf, BadFilesNameFileLineAndPath) {
  const std::string not_json = error_of("aiperf", "aiperf/not_json.jsonl");
  EXPECT_TRUE(contains(not_json, "not_json.jsonl:3: not JSON")) << not_json;
  const std::string missing = error_of("aiperf", "aiperf/missing_start.jsonl");
  EXPECT_TRUE(contains(missing, "missing_start.jsonl:1: $.metadata.request_start_ns: missing"))
      << missing;
  const std::string wrong = error_of("aiperf", "aiperf/wrong_type.jsonl");
  EXPECT_TRUE(
      contains(wrong, "wrong_type.jsonl:1: $.metrics.time_to_first_token.value: expected a number"))
      << wrong;
  const std::string unit = error_of("aiperf", "aiperf/wrong_unit.jsonl");
  EXPECT_TRUE(contains(unit, "$.metrics.time_to_first_token.unit: 's'; expected ms")) << unit;
  const std::string newer = error_of("aiperf", "aiperf/newer_schema.json");
  EXPECT_TRUE(contains(newer, "newer_schema.json: $.schema_version: '2.0': a newer schema"))
      << newer;
  const std::string genai = error_of("aiperf", "aiperf/genai_perf.json");
  EXPECT_TRUE(contains(genai, "genai_perf.json: $.input_config: genai-perf's layout")) << genai;
  EXPECT_TRUE(contains(error_of_bytes("aiperf", "{\"foo\": 1}"), "x.jsonl: $: neither"));
  EXPECT_TRUE(contains(error_of_bytes("aiperf", "[1]"), "x.jsonl: $: expected a JSON object"));
  json::object agg = json::parse(bytes_of("aiperf/profile_export_aiperf.json")).as_object();
  agg["input_config"].as_object()["endpoint"].as_object()["type"] = "embeddings";
  EXPECT_TRUE(contains(error_of_bytes("aiperf", json::serialize(agg)),
                       "$.input_config.endpoint.type: 'embeddings'"));
}

}  // namespace

namespace {

void golden_of(const std::string& format, const std::string& dir, const std::string& name) {
  const std::string bytes = bytes_of(dir + "/" + name);
  dyno::testing::expect_import_golden(format + "/" + fs::path(name).stem().string(),
                                      dyno::interop::read_import(format, bytes, name, {}), name,
                                      bytes);
}

// The records need a model: sglang-bench and the per-record JSONL name none (--model).
void golden_with_model(const std::string& format, const std::string& dir, const std::string& name) {
  const std::string bytes = bytes_of(dir + "/" + name);
  auto results = dyno::interop::read_import(format, bytes, name, {});
  for (auto& r : results) r.model_id = "example-org/tiny-chat";
  // The per-record JSONL names no endpoint either (--api).
  const std::optional<std::string> api =
      format == "aiperf" ? std::optional<std::string>("chat") : std::nullopt;
  dyno::testing::expect_import_golden(format + "/" + fs::path(name).stem().string(), results, name,
                                      bytes, api);
}

TEST(ImportGolden, SglangBenchSummaryOnly) {
  golden_with_model("sglang-bench", "sglang_bench", "summary_only.jsonl");
}
TEST(ImportGolden, SglangBenchDetails) {
  golden_with_model("sglang-bench", "sglang_bench", "details.jsonl");
}
TEST(ImportGolden, AiperfRecords) { golden_with_model("aiperf", "aiperf", "profile_export.jsonl"); }
TEST(ImportGolden, AiperfAggregate) { golden_of("aiperf", "aiperf", "profile_export_aiperf.json"); }
TEST(ImportGolden, AiperfAggregateV0) { golden_of("aiperf", "aiperf", "aggregate_v0.json"); }

}  // namespace

namespace {

TEST(SglangBench, NativeGenerateKeepsOnlyTheTimesItRecorded) {
  const auto results = read("sglang-bench", "sglang_bench/native_details.jsonl");
  ASSERT_EQ(results.size(), 1u);
  const ImportedResult& r = results[0];
  EXPECT_EQ(r.api, "generate");  // SGLang's own endpoint, never passed off as OpenAI's
  ASSERT_EQ(r.traces.size(), 3u);
  const auto& t = r.traces[0];
  // The ITLs spread each chunk's gap over its tokens: only the first and last token are known.
  EXPECT_TRUE(t.event_times_ns.empty());
  EXPECT_EQ(t.first_token_ns, 100'000'000);
  EXPECT_EQ(t.last_token_ns, 200'000'000);
  EXPECT_EQ(t.output_tokens, 5);  // the server's completion_tokens
  EXPECT_EQ(t.token_count_source, dyno::metrics::TokenCountSource::kUsage);
  EXPECT_EQ(r.traces[2].status, dyno::metrics::RequestStatus::kError);
  // dyno's TPOT from the exact ends; no event gaps invented from the spread ones.
  const auto s = dyno::metrics::summarize_run(r.traces, {});
  ASSERT_TRUE(s.tpot_ms.p50.has_value());
  EXPECT_NEAR(*s.tpot_ms.p50, (25.0 + 50.0) / 2, 1e-6);  // 100 ms / 4 and 100 ms / 2
  EXPECT_EQ(s.event_gap_ms.count, 0u);
}

TEST(ImportGolden, SglangBenchNativeDetails) {
  golden_with_model("sglang-bench", "sglang_bench", "native_details.jsonl");
}

}  // namespace
