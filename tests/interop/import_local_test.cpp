// dyno import llama-bench and dyno import guidellm (interop/import_llama_bench.h,
// interop/import_guidellm.h): hand-written files in each tool's documented shape
// (tests/record/data/llama_bench/, tests/record/data/guidellm/) become records whose figures
// are only those whose definitions match dyno's; bad files are refused naming the file and
// where.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "import_golden.h"
#include "interop/import_formats.h"
#include "interop/import_guidellm.h"
#include "interop/import_llama_bench.h"
#include "metrics/summary.h"
#include "record/record_json.h"
#include "record/record_reader.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::interop::ImportedResult;
using dyno::interop::ImportFileError;

namespace {

const fs::path kData = fs::path(DYNO_SOURCE_DIR) / "tests/record/data";

std::string bytes_of(const std::string& dir, const std::string& name) {
  return dyno::record::read_file(kData / dir / name);
}

std::vector<ImportedResult> llama(const std::string& name) {
  return dyno::interop::read_llama_bench(bytes_of("llama_bench", name), name);
}

std::vector<ImportedResult> guide(const std::string& name) {
  return dyno::interop::read_guidellm(bytes_of("guidellm", name), name);
}

template <typename F>
std::string error_of(F read) {
  try {
    (void)read();
  } catch (const ImportFileError& e) {
    return e.what();
  }
  return "no error";
}

const json::object& timings(const ImportedResult& r) { return *r.engine_timings; }

double p50(const json::object& timings, const char* figure) {
  return timings.at(figure).at("p50").to_number<double>();
}

TEST(LlamaBench, TestNamesAreLlamaBenchs) {
  EXPECT_EQ(dyno::interop::llama_bench_test_name(512, 0, 0), "pp512");
  EXPECT_EQ(dyno::interop::llama_bench_test_name(0, 128, 0), "tg128");
  EXPECT_EQ(dyno::interop::llama_bench_test_name(512, 128, 0), "pp512+tg128");
  EXPECT_EQ(dyno::interop::llama_bench_test_name(512, 0, 4096), "pp512 @ d4096");
}

TEST(LlamaBench, JsonArrayIsOneResultPerTestWithEngineTimedRates) {
  const auto rs = llama("tests.json");
  ASSERT_EQ(rs.size(), 3u);
  const ImportedResult& pp = rs[0];
  EXPECT_EQ(pp.source.part, "$[0]");
  EXPECT_EQ(pp.source.timing, "summary_only");
  EXPECT_EQ(pp.api, "in_process");
  EXPECT_EQ(pp.engine_name, "llama.cpp");
  EXPECT_EQ(pp.engine_version, "b5821-3a5ba33f");
  EXPECT_EQ(pp.engine_commit, "3a5ba33f");
  EXPECT_EQ(pp.model_id, "models/example-8b-q4_k_m.gguf");
  EXPECT_EQ(pp.cpu_model, "AMD EPYC 9654 96-Core Processor");
  ASSERT_TRUE(pp.gpus.has_value());
  ASSERT_EQ(pp.gpus->size(), 2u);
  EXPECT_EQ(pp.gpus->at(1).at("name").as_string(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(pp.gpus->at(1).at("vendor").as_string(), "nvidia");
  EXPECT_EQ(pp.pairs_as, "llama-bench");
  EXPECT_EQ(pp.cell, "pp512");
  EXPECT_EQ(pp.load.concurrency, 1u);
  EXPECT_EQ(pp.requests, 3u);
  EXPECT_EQ(pp.summary.input_tokens_total, 3 * 512);
  // The p50 of the three repetitions' rates, by dyno's percentile code; no decode rate.
  EXPECT_DOUBLE_EQ(p50(timings(pp), "prefill_rate"), 2560.0);
  EXPECT_EQ(timings(pp).at("prefill_rate").at("count").to_number<int>(), 3);
  EXPECT_TRUE(timings(pp).at("decode_rate_per_user").at("p50").is_null());
  EXPECT_EQ(pp.source.file_fields.at("flash_attn").to_number<int>(), 1);
  EXPECT_FALSE(pp.source.file_fields.contains("samples_ts"));
  // No client figure: llama-bench measured none.
  EXPECT_FALSE(pp.summary.ttft_ms.mean.has_value());
  EXPECT_FALSE(pp.summary.output_tokens_per_s.has_value());

  const ImportedResult& tg = rs[1];
  EXPECT_EQ(tg.cell, "tg128");
  EXPECT_DOUBLE_EQ(p50(timings(tg), "decode_rate_per_user"), 79.0123);
  EXPECT_TRUE(timings(tg).at("prefill_rate").at("p50").is_null());
  // pp+tg: one rate over both phases is neither a prefill nor a decode rate.
  const ImportedResult& pg = rs[2];
  EXPECT_EQ(pg.cell, "pp512+tg128");
  EXPECT_TRUE(timings(pg).at("prefill_rate").at("mean").is_null());
  EXPECT_TRUE(timings(pg).at("decode_rate_per_user").at("mean").is_null());
}

TEST(LlamaBench, JsonlLinesAtDepthAndAGpuOfUnsaidVendor) {
  const auto rs = llama("depth.jsonl");
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[0].source.part, "line 1");
  EXPECT_EQ(rs[0].cell, "pp512 @ d4096");
  EXPECT_EQ(rs[1].cell, "tg32 @ d4096");
  EXPECT_FALSE(rs[0].gpus.has_value());
  EXPECT_NE(rs[0].gpus_unknown.find("Apple M2 Max"), std::string::npos);
  EXPECT_EQ(rs[0].source.file_fields.at("flash_attn").to_number<int>(), -1);
}

TEST(LlamaBench, CsvRowsWithoutSamplesKeepTheMeanOnly) {
  for (const char* name : {"tests.csv", "old.csv"}) {
    const auto rs = llama(name);
    ASSERT_EQ(rs.size(), 2u) << name;
    EXPECT_EQ(rs[0].source.part, "row 1");
    EXPECT_EQ(rs[0].requests, 0u);  // how many repetitions, a CSV does not say
    EXPECT_TRUE(timings(rs[0]).at("repetitions").is_null());
    EXPECT_TRUE(timings(rs[0]).at("prefill_rate").at("p50").is_null());
    EXPECT_GT(timings(rs[0]).at("prefill_rate").at("mean").to_number<double>(), 0.0);
    EXPECT_EQ(rs[1].cell, "tg128");
  }
  const auto old = llama("old.csv");
  EXPECT_TRUE(old[0].gpus.has_value());  // gpu_info "": no GPU
  EXPECT_TRUE(old[0].gpus->empty());
  EXPECT_FALSE(old[0].source.file_fields.contains("n_depth"));
  EXPECT_EQ(old[0].source.file_fields.at("use_mmap").as_string(), "1");
}

TEST(LlamaBench, BadFilesNameTheFileAndWhere) {
  const auto has = [](const std::string& e, const std::string& part) {
    EXPECT_NE(e.find(part), std::string::npos) << e;
  };
  has(error_of([] { return llama("not_json.jsonl"); }), "not_json.jsonl:2: not JSON");
  has(error_of([] { return llama("missing_key.json"); }),
      "missing_key.json: $[0].build_commit: missing");
  has(error_of([] { return llama("wrong_type.json"); }),
      "wrong_type.json: $[1].n_gen: expected a non-negative integer");
  has(error_of([] { return llama("short_row.csv"); }),
      "short_row.csv:3: 8 fields; the header has 10");
  has(error_of([] { return dyno::interop::read_llama_bench("a,b\n1,2\n", "x.csv"); }),
      "x.csv:1: header: no column 'build_commit'");
  has(error_of([] { return dyno::interop::read_llama_bench(" \n", "e.json"); }), "e.json: empty");
  std::string csv = bytes_of("llama_bench", "tests.csv");
  csv.replace(csv.find("\"512\",\"0\",\"0\""), 5, "\"5x2\"");  // row 1's n_prompt
  has(error_of([&] { return dyno::interop::read_llama_bench(csv, "t.csv"); }),
      "t.csv:2: column n_prompt: '5x2': expected a non-negative integer");
  json::array a = json::parse(bytes_of("llama_bench", "tests.json")).as_array();
  a[0].as_object()["samples_ts"] = json::array{1.0, 2.0};
  has(error_of([&] { return dyno::interop::read_llama_bench(json::serialize(a), "s.json"); }),
      "s.json: $[0].samples_ts: holds 2 rates; expected 3");
  a[0].as_object()["samples_ts"] = json::array{1.0, -2.0, 3.0};
  has(error_of([&] { return dyno::interop::read_llama_bench(json::serialize(a), "n.json"); }),
      "n.json: $[0].samples_ts[1]: expected a positive rate");
  a[0].as_object()["n_prompt"] = 0;
  has(error_of([&] { return dyno::interop::read_llama_bench(json::serialize(a), "z.json"); }),
      "z.json: $[0].n_gen: n_prompt and n_gen are both 0");
}

TEST(GuideLlm, BenchmarksBecomeTracesOnOneClockWithoutInventedEventTimes) {
  const auto rs = guide("report.json");
  ASSERT_EQ(rs.size(), 2u);
  const ImportedResult& sync = rs[0];
  EXPECT_EQ(sync.source.part, "$.benchmarks[0]");
  EXPECT_EQ(sync.source.timing, "shared_clock");
  EXPECT_EQ(sync.api, "chat");
  EXPECT_EQ(sync.model_id, "example-org/tiny-chat");
  EXPECT_EQ(sync.load.concurrency, 1u);
  EXPECT_EQ(sync.status, "ok");
  ASSERT_EQ(sync.traces.size(), 2u);
  // Epoch seconds as doubles carry about 0.2 µs: the times are the file's to that precision.
  EXPECT_NEAR(static_cast<double>(*sync.traces[1].sent_ns), 500'000'000, 1000);
  EXPECT_NEAR(static_cast<double>(*sync.traces[1].first_token_ns), 620'000'000, 1000);
  EXPECT_TRUE(sync.traces[1].event_times_ns.empty());

  const ImportedResult& conc = rs[1];
  EXPECT_EQ(conc.load.concurrency, 4u);
  EXPECT_EQ(conc.status, "partial");
  ASSERT_EQ(conc.traces.size(), 5u);
  EXPECT_EQ(conc.traces[3].status, dyno::metrics::RequestStatus::kCancelled);
  EXPECT_EQ(conc.traces[4].status, dyno::metrics::RequestStatus::kError);
  EXPECT_EQ(conc.traces[4].error_message, "HTTP 500: Internal Server Error");
  // dyno's own figures: TTFT and TPOT from first/last token times; no event gaps.
  const dyno::metrics::Summary s = dyno::metrics::summarize_run(conc.traces, {});
  EXPECT_EQ(s.requests_ok, 3u);
  EXPECT_EQ(s.ttft_ms.count, 3u);
  EXPECT_NEAR(*s.ttft_ms.p50, 250.0, 1e-3);
  EXPECT_EQ(s.tpot_ms.count, 3u);
  EXPECT_EQ(s.event_gap_ms.count, 0u);
  EXPECT_FALSE(s.event_gap_ms.p50.has_value());
  EXPECT_FALSE(s.tokens_per_event.has_value());
}

TEST(GuideLlm, SampledRequestsGiveASummaryOnlyRecordOfMatchingMeans) {
  const auto rs = guide("sampled.json");
  ASSERT_EQ(rs.size(), 1u);
  const ImportedResult& r = rs[0];
  EXPECT_EQ(r.source.timing, "summary_only");
  EXPECT_TRUE(r.traces.empty());
  EXPECT_EQ(r.api, "completions");
  EXPECT_EQ(r.load.rate_per_s, 2.5);
  EXPECT_EQ(r.load.arrival, "poisson");
  EXPECT_EQ(r.requests, 11u);
  EXPECT_EQ(r.summary.requests_ok, 10u);
  EXPECT_EQ(r.summary.requests_failed, 1u);
  EXPECT_DOUBLE_EQ(*r.summary.ttft_ms.mean, 95.5);
  EXPECT_DOUBLE_EQ(*r.summary.e2e_ms.mean, 420.0);
  // GuideLLM's percentiles are nearest-rank, not dyno's linear ones; its TPOT counts the
  // first token: not mapped.
  EXPECT_FALSE(r.summary.ttft_ms.p50.has_value());
  EXPECT_FALSE(r.summary.tpot_ms.mean.has_value());
}

TEST(GuideLlm, BadFilesNameTheFileAndWhere) {
  const auto has = [](const std::string& e, const std::string& part) {
    EXPECT_NE(e.find(part), std::string::npos) << e;
  };
  has(error_of([] { return guide("newer.json"); }),
      "newer.json: $.metadata.version: 3: a report schema version dyno does not know; it reads 1 "
      "(GuideLLM 0.5, 0.6), 2");
  has(error_of([] { return guide("not_json.json"); }), "not_json.json:");
  has(error_of([] { return guide("not_json.json"); }), "not JSON");
  has(error_of([] { return guide("missing_key.json"); }),
      "missing_key.json: $.benchmarks[1].requests.successful[1].first_token_time: missing");
  has(error_of([] { return guide("wrong_type.json"); }),
      "wrong_type.json: $.benchmarks[0].requests.successful[0].prompt_tokens: expected a "
      "non-negative integer");
  json::object o = json::parse(bytes_of("guidellm", "report.json")).as_object();
  json::object& b = o["benchmarks"].as_array()[0].as_object();
  b["args"].as_object()["strategy"].as_object()["type_"] = "replay";
  has(error_of([&] { return dyno::interop::read_guidellm(json::serialize(o), "s.json"); }),
      "s.json: $.benchmarks[0].args.strategy.type_: 'replay'");
  b["args"].as_object()["strategy"].as_object()["type_"] = "synchronous";
  b["request_totals"].as_object()["successful"] = 1;
  has(error_of([&] { return dyno::interop::read_guidellm(json::serialize(o), "t.json"); }),
      "t.json: $.benchmarks[0].requests.successful: lists 2 requests, more than");
  b["request_totals"].as_object()["successful"] = 2;
  o["benchmarks"].as_array()[1].as_object()["config"] = json::object{};
  has(error_of([&] { return dyno::interop::read_guidellm(json::serialize(o), "c.json"); }),
      "c.json: $.benchmarks[1]: a benchmark in the layout of GuideLLM 0.4");
  has(error_of([] { return dyno::interop::read_guidellm("[]", "a.json"); }),
      "a.json: $: expected a JSON object");
}

TEST(GuideLlm, Layout04RequestsBecomeTracesFromInfoTimings) {
  const auto rs = guide("v04_report.json");
  ASSERT_EQ(rs.size(), 1u);
  const ImportedResult& r = rs[0];
  EXPECT_EQ(r.source.tool_version, "0.4");
  EXPECT_EQ(r.source.timing, "shared_clock");
  EXPECT_EQ(r.api, "chat");
  EXPECT_EQ(r.model_id, "example-org/tiny-chat");
  EXPECT_EQ(r.load.concurrency, 1u);
  EXPECT_EQ(r.status, "partial");
  ASSERT_EQ(r.traces.size(), 3u);
  EXPECT_EQ(r.traces[1].request_id, "r1");
  EXPECT_NEAR(static_cast<double>(*r.traces[1].sent_ns), 500'000'000, 1000);
  EXPECT_NEAR(static_cast<double>(*r.traces[1].first_token_ns), 620'000'000, 1000);
  EXPECT_NEAR(static_cast<double>(*r.traces[1].last_token_ns), 900'000'000, 1000);
  EXPECT_NEAR(static_cast<double>(*r.traces[1].done_ns), 905'000'000, 1000);
  EXPECT_EQ(r.traces[1].input_tokens, 12);
  EXPECT_EQ(r.traces[1].output_tokens, 6);
  EXPECT_EQ(r.traces[1].token_count_source, dyno::metrics::TokenCountSource::kUsage);
  EXPECT_TRUE(r.traces[1].event_times_ns.empty());
  EXPECT_EQ(r.traces[2].status, dyno::metrics::RequestStatus::kError);
  EXPECT_EQ(r.traces[2].error_message, "HTTP 500: Internal Server Error");
  EXPECT_FALSE(r.traces[2].first_token_ns.has_value());
  const dyno::metrics::Summary s = dyno::metrics::summarize_run(r.traces, {});
  EXPECT_EQ(s.requests_ok, 2u);
  EXPECT_NEAR(*s.ttft_ms.p50, 110.0, 1e-3);  // 100 and 120 ms
}

TEST(GuideLlm, Schema1And2RecordTheirVersionsLoadAndEndpoint) {
  const auto v1 = guide("v1_report.json");
  ASSERT_EQ(v1.size(), 1u);
  EXPECT_EQ(v1[0].source.tool_version, "0.5.4 (report schema 1)");
  EXPECT_EQ(v1[0].api, "completions");
  EXPECT_EQ(v1[0].load.concurrency, 2u);
  EXPECT_EQ(v1[0].status, "ok");
  ASSERT_EQ(v1[0].traces.size(), 3u);
  EXPECT_EQ(v1[0].traces[2].status, dyno::metrics::RequestStatus::kCancelled);
  // prefer_response_metrics false: GuideLLM counted with its tokenizer.
  EXPECT_EQ(v1[0].traces[0].token_count_source, dyno::metrics::TokenCountSource::kTokenizer);
  EXPECT_EQ(v1[0].source.file_fields.at("metadata.version").as_int64(), 1);

  const auto v2 = guide("v2_report.json");
  ASSERT_EQ(v2.size(), 1u);
  const ImportedResult& r = v2[0];
  EXPECT_EQ(r.source.tool_version, "0.7.3 (report schema 2)");
  EXPECT_EQ(r.api, "chat");
  EXPECT_EQ(r.model_id, "example-org/tiny-reasoner");
  EXPECT_EQ(r.load.rate_per_s, 4.0);
  EXPECT_EQ(r.load.arrival, "constant");
  EXPECT_EQ(r.load.concurrency, 8u);
  ASSERT_EQ(r.traces.size(), 3u);
  // first_output_token_iteration (the first non-reasoning token) is the first content time.
  EXPECT_NEAR(static_cast<double>(*r.traces[0].first_token_ns), 100'000'000, 1000);
  EXPECT_NEAR(static_cast<double>(*r.traces[0].first_content_ns), 300'000'000, 1000);
  EXPECT_EQ(r.traces[1].first_content_ns, r.traces[1].first_token_ns);
}

TEST(GuideLlm, SampledNewerReportsGiveCountsOnly) {
  const auto rs = guide("v2_sampled.json");
  ASSERT_EQ(rs.size(), 1u);
  const ImportedResult& r = rs[0];
  EXPECT_EQ(r.source.timing, "summary_only");
  EXPECT_TRUE(r.traces.empty());
  EXPECT_EQ(r.api, "completions");
  EXPECT_EQ(r.requests, 42u);
  EXPECT_EQ(r.summary.requests_ok, 40u);
  EXPECT_EQ(r.summary.requests_failed, 2u);
  EXPECT_EQ(r.load.arrival, "poisson");
  // GuideLLM >= 0.4 averages a missing value as 0 (`or 0.0`): its means are not dyno's.
  EXPECT_FALSE(r.summary.ttft_ms.mean.has_value());
  EXPECT_FALSE(r.summary.e2e_ms.mean.has_value());
}

TEST(GuideLlm, BadNewerFilesNameTheFileAndWhere) {
  const auto has = [](const std::string& e, const std::string& part) {
    EXPECT_NE(e.find(part), std::string::npos) << e;
  };
  has(error_of([] { return guide("v2_missing_key.json"); }),
      "v2_missing_key.json: $.benchmarks[0].requests.successful[1].info.timings.request_start: "
      "missing");
  has(error_of([] { return guide("v1_wrong_type.json"); }),
      "v1_wrong_type.json: $.benchmarks[0].requests.successful[0].input_metrics.total_tokens: "
      "expected a non-negative integer");
  json::object o = json::parse(bytes_of("guidellm", "v2_report.json")).as_object();
  o["config"].as_object()["spec"].as_object()["backend"].as_object()["request_format"] =
      "/v1/embeddings";
  has(error_of([&] { return dyno::interop::read_guidellm(json::serialize(o), "e.json"); }),
      "e.json: $.config.spec.backend.request_format: '/v1/embeddings'");
  o = json::parse(bytes_of("guidellm", "v2_report.json")).as_object();
  json::object& b = o["benchmarks"].as_array()[0].as_object();
  b["config"].as_object()["strategy"].as_object()["type_"] = "trace";
  has(error_of([&] { return dyno::interop::read_guidellm(json::serialize(o), "t.json"); }),
      "t.json: $.benchmarks[0].config.strategy.type_: 'trace'");
  b["config"].as_object()["strategy"].as_object()["type_"] = "constant";
  b["metrics"].as_object()["request_totals"].as_object()["errored"] = 0;
  has(error_of([&] { return dyno::interop::read_guidellm(json::serialize(o), "n.json"); }),
      "n.json: $.benchmarks[0].requests.errored: lists 1 requests, more than");
  b["metrics"].as_object()["request_totals"].as_object()["errored"] = 1;
  json::object& t = b["requests"]
                        .as_object()["successful"]
                        .as_array()[0]
                        .as_object()["info"]
                        .as_object()["timings"]
                        .as_object();
  t["last_token_iteration"] = nullptr;
  has(error_of([&] { return dyno::interop::read_guidellm(json::serialize(o), "l.json"); }),
      "l.json: $.benchmarks[0].requests.successful[0].info.timings.last_token_iteration: "
      "expected a number");
  o["metadata"].as_object()["version"] = "2";
  has(error_of([&] { return dyno::interop::read_guidellm(json::serialize(o), "v.json"); }),
      "v.json: $.metadata.version: expected");
}

void golden(const std::string& format, const std::string& dir, const std::string& name) {
  const std::string bytes = bytes_of(dir, name);
  dyno::testing::expect_import_golden(format + "/" + fs::path(name).stem().string() + "_" +
                                          fs::path(name).extension().string().substr(1),
                                      dyno::interop::read_import(format, bytes, name, {}), name,
                                      bytes);
}

TEST(ImportGolden, LlamaBenchJson) { golden("llama-bench", "llama_bench", "tests.json"); }
TEST(ImportGolden, LlamaBenchJsonl) { golden("llama-bench", "llama_bench", "depth.jsonl"); }
TEST(ImportGolden, LlamaBenchCsv) { golden("llama-bench", "llama_bench", "tests.csv"); }
TEST(ImportGolden, LlamaBenchOldCsv) { golden("llama-bench", "llama_bench", "old.csv"); }
TEST(ImportGolden, GuideLlmReport) { golden("guidellm", "guidellm", "report.json"); }
TEST(ImportGolden, GuideLlmSampled) { golden("guidellm", "guidellm", "sampled.json"); }
TEST(ImportGolden, GuideLlm04) { golden("guidellm", "guidellm", "v04_report.json"); }
TEST(ImportGolden, GuideLlmSchema1) { golden("guidellm", "guidellm", "v1_report.json"); }
TEST(ImportGolden, GuideLlmSchema2) { golden("guidellm", "guidellm", "v2_report.json"); }
TEST(ImportGolden, GuideLlmSchema2Sampled) { golden("guidellm", "guidellm", "v2_sampled.json"); }

}  // namespace
