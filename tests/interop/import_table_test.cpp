// dyno import table (interop/import_table.h): hand-written ledgers (tests/record/data/table/) —
// a CSV sheet of two engines at three concurrencies with TTFT in seconds, JSON rows with
// nested paths, JSONL — become one summary-only record a row, each figure where --map puts
// it; bad files and bad mappings are refused naming the file, the line or JSON path, and the
// column.
#include "interop/import_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "import_golden.h"
#include "interop/import_formats.h"
#include "interop/result_import.h"
#include "record/record_reader.h"
#include "record/run_verify.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::interop::ImportedResult;
using dyno::interop::ImportFileError;
using dyno::interop::read_table;

namespace {

const fs::path kData = fs::path(DYNO_SOURCE_DIR) / "tests/record/data/table";

std::string bytes_of(const std::string& name) { return dyno::record::read_file(kData / name); }

/// The mapping of ledger.csv: every column but Notes.
const std::vector<std::string> kLedgerMap{"Engine=engine",
                                          "Version=engine.version",
                                          "Model=model",
                                          "GPU=gpu",
                                          "Concurrency=concurrency",
                                          "Prompts=requests",
                                          "Completed=requests.ok",
                                          "Failed=requests.failed",
                                          "Output tok/s=throughput.output_tokens_per_s",
                                          "Req/s=throughput.requests_per_s",
                                          "TTFT p50 (s)=latency_ms.ttft.p50:s",
                                          "TTFT p99 (s)=latency_ms.ttft.p99:s",
                                          "TPOT p50 (ms)=latency_ms.tpot.p50",
                                          "E2E mean (s)=latency_ms.e2e.mean:s"};

/// rows.json: the rows at $.results, figures at nested paths and array elements.
const std::vector<std::string> kRowsMap{
    "$.results=rows",
    "$.engine.name=engine",
    "engine.commit=engine.commit",
    "model=model",
    "$.hardware.gpu=gpu",
    "scenario.protocol=protocol",
    "scenario.cell=cell",
    "scenario.api=api",
    "requests.sent=requests",
    "requests.ok=requests.ok",
    "requests.errors=requests.failed",
    "metrics.throughput.output_tok_s=throughput.output_tokens_per_s",
    "metrics.throughput.req_s=throughput.requests_per_s",
    "metrics.ttft_ms.mean=latency_ms.ttft.mean",
    "$.metrics.ttft_ms.percentiles[0].value=latency_ms.ttft.p50",
    "$.metrics.ttft_ms.percentiles[1].value=latency_ms.ttft.p99",
    "metrics.e2e_s.p50=latency_ms.e2e.p50:s",
    "metrics.accuracy_pct=quality.accuracy:percent"};

/// ledger.jsonl: keys with dots in them ("ttft.p50") are keys, not paths.
const std::vector<std::string> kJsonlMap{"tool=tool",
                                         "tool_version=tool_version",
                                         "engine=engine",
                                         "model=model",
                                         "rate=rate",
                                         "ttft.p50=latency_ms.ttft.p50",
                                         "ttft.p90=latency_ms.ttft.p90",
                                         "tpot.mean=latency_ms.tpot.mean",
                                         "output_tok_s=throughput.output_tokens_per_s",
                                         "ok=requests.ok",
                                         "total=requests.total",
                                         "in_tok=tokens.input_total",
                                         "out_tok=tokens.output_total"};

std::vector<ImportedResult> read(const std::string& name, const std::vector<std::string>& map) {
  return read_table(bytes_of(name), name, map);
}

std::string error_of(const std::string& bytes, const std::vector<std::string>& map,
                     const std::string& name = "t.csv") {
  try {
    (void)read_table(bytes, name, map);
  } catch (const ImportFileError& e) {
    return e.what();
  }
  return "no error";
}

std::string file_error(const std::string& name, const std::vector<std::string>& map) {
  return error_of(bytes_of(name), map, name);
}

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

bool absent(const ImportedResult& r, const std::string& path) {
  return std::find(r.absent_counts.begin(), r.absent_counts.end(), path) != r.absent_counts.end();
}

TEST(Table, CsvLedgerRowsBecomeSummaryOnlyResults) {
  const auto rows = read("ledger.csv", kLedgerMap);
  ASSERT_EQ(rows.size(), 6u);  // the blank line and the row of empty cells are skipped
  const ImportedResult& r = rows[2];
  EXPECT_EQ(r.source.part, "row 4");  // its line in the file
  EXPECT_EQ(r.source.tool, "table");
  EXPECT_EQ(r.source.format, "table");
  EXPECT_EQ(r.source.timing, "summary_only");
  EXPECT_FALSE(r.source.tool_version.has_value());
  EXPECT_EQ(r.model_id, "example-org/tiny-chat");
  EXPECT_EQ(r.engine_name, "vllm");
  EXPECT_EQ(r.engine_version, "0.11.0");
  EXPECT_EQ(r.load.concurrency, 32u);
  EXPECT_EQ(r.load.requests, 200u);
  EXPECT_EQ(r.requests, 200u);
  EXPECT_FALSE(r.pairs_as.has_value());  // a plain run at its load: cell c32
  EXPECT_EQ(r.status, "partial");
  const auto& s = r.summary;
  EXPECT_EQ(s.requests_ok, 198u);
  EXPECT_EQ(s.requests_failed, 2u);
  EXPECT_EQ(s.requests_total, 200u);
  EXPECT_DOUBLE_EQ(*s.error_rate, 0.01);
  EXPECT_EQ(s.errors_by_category.at("imported"), 2u);
  EXPECT_DOUBLE_EQ(*s.output_tokens_per_s, 1710);
  EXPECT_DOUBLE_EQ(*s.ttft_ms.p50, 120);  // 0.12 s
  EXPECT_DOUBLE_EQ(*s.ttft_ms.p99, 410);
  EXPECT_DOUBLE_EQ(*s.e2e_ms.mean, 4800);
  EXPECT_EQ(s.ttft_ms.count, 198u);  // over every completed request: requests.ok
  EXPECT_DOUBLE_EQ(*s.tpot_ms.p50, 17.8);
  EXPECT_TRUE(absent(r, "latency_ms.tpot.count"));  // over requests of 2+ tokens: unknown
  EXPECT_TRUE(absent(r, "tokens.input_total"));
  EXPECT_FALSE(absent(r, "requests.ok"));
  EXPECT_FALSE(s.ttft_ms.mean.has_value());
  EXPECT_FALSE(s.service_window_s.has_value());
  ASSERT_EQ(r.gpus->size(), 8u);  // "8x H100"
  EXPECT_EQ((*r.gpus)[7].at("name").as_string(), "H100");
  EXPECT_EQ((*r.gpus)[7].at("index").to_number<int>(), 7);
  // The mapping verbatim, and the row's own cells, the unmapped Notes column too.
  EXPECT_EQ(r.source.file_fields.at("map").at("TTFT p50 (s)").as_string(), "latency_ms.ttft.p50:s");
  EXPECT_EQ(rows[1].source.file_fields.at("row").at("Notes").as_string(),
            "warm cache, second pass");
  // An empty cell: the figure absent for that row.
  EXPECT_FALSE(rows[4].summary.ttft_ms.p99.has_value());
  EXPECT_EQ(rows[4].engine_name, "sglang");
  EXPECT_EQ(rows[5].source.part, "row 9");
}

TEST(Table, JsonRowsAtAPathWithNestedSources) {
  const auto rows = read("rows.json", kRowsMap);
  ASSERT_EQ(rows.size(), 2u);  // {} is a blank row
  const ImportedResult& r = rows[1];
  EXPECT_EQ(r.source.part, "$.results[1]");
  EXPECT_EQ(r.engine_name, "sglang");
  EXPECT_EQ(r.engine_commit, "89abcdef0123456789abcdef0123456789abcdef");
  EXPECT_EQ(r.pairs_as, "sweep");
  EXPECT_EQ(r.cell, "c16");
  EXPECT_EQ(r.api, "chat");
  EXPECT_EQ(r.status, "partial");
  EXPECT_EQ(r.summary.requests_total, 500u);
  EXPECT_DOUBLE_EQ(*r.summary.ttft_ms.p50, 39.5);
  EXPECT_FALSE(r.summary.ttft_ms.p99.has_value());  // null
  EXPECT_DOUBLE_EQ(*r.summary.e2e_ms.p50, 1710);
  EXPECT_DOUBLE_EQ(*r.summary.accuracy, 0.86);
  EXPECT_EQ(r.summary.ttft_ms.count, 497u);
  ASSERT_EQ(r.gpus->size(), 1u);
  EXPECT_EQ(r.source.file_fields.at("row").at("requests").at("errors").as_int64(), 3);
  EXPECT_EQ(r.source.file_fields.at("map").at("$.results").as_string(), "rows");
}

TEST(Table, JsonlRowsWithDottedKeys) {
  const auto rows = read("ledger.jsonl", kJsonlMap);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].source.part, "line 1");
  EXPECT_EQ(rows[1].source.part, "line 3");
  EXPECT_EQ(rows[0].source.tool, "example-bench");
  EXPECT_EQ(rows[0].source.tool_version, "2.4.1");
  EXPECT_DOUBLE_EQ(*rows[0].summary.ttft_ms.p50, 38.5);  // a number written as a string
  EXPECT_EQ(rows[0].load.rate_per_s, 4.0);
  EXPECT_FALSE(rows[1].load.rate_per_s.has_value());  // "inf": no schedule
  EXPECT_EQ(rows[1].summary.requests_failed, 2u);     // total − ok
  EXPECT_EQ(rows[1].status, "partial");
  EXPECT_EQ(rows[1].summary.input_tokens_total, 60416);
  EXPECT_FALSE(absent(rows[1], "tokens.input_total"));
  EXPECT_TRUE(absent(rows[1], "latency_ms.tpot.count"));
}

TEST(Table, CountsFollowWhatIsMapped) {
  // Only the figures: no request count, so counts are null, the status ok.
  auto r = read_table("model,ttft\nm,12\n", "t.csv", {"model=model", "ttft=latency_ms.ttft.p50"});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, "ok");
  EXPECT_EQ(r[0].requests, 0u);  // workload.request_stream.count null
  EXPECT_FALSE(r[0].load.requests.has_value());
  for (const char* p : {"requests.total", "requests.ok", "requests.failed", "latency_ms.ttft.count",
                        "tokens.output_total"}) {
    EXPECT_TRUE(absent(r[0], p)) << p;
  }
  // ok 0 of 5: failed.
  r = read_table("model,ok,total\nm,0,5\n", "t.csv",
                 {"model=model", "ok=requests.ok", "total=requests.total"});
  EXPECT_EQ(r[0].status, "failed");
  EXPECT_EQ(r[0].summary.requests_failed, 5u);
  EXPECT_DOUBLE_EQ(*r[0].summary.error_rate, 1.0);
  // Units: us to ms, per_min to per_s, scored/correct give the accuracy.
  r = read_table(
      "model,gap,rpm,scored,correct\nm,2500,120,40,30\n", "t.csv",
      {"model=model", "gap=latency_ms.event_gap.p50:us", "rpm=throughput.requests_per_s:per_min",
       "scored=quality.scored", "correct=quality.correct"});
  EXPECT_DOUBLE_EQ(*r[0].summary.event_gap_ms.p50, 2.5);
  EXPECT_DOUBLE_EQ(*r[0].summary.requests_per_s, 2.0);
  EXPECT_DOUBLE_EQ(*r[0].summary.accuracy, 0.75);
}

TEST(Table, BadMappingsAreRefusedListingWhatIsAllowed) {
  const std::string csv = "model,ttft\nm,1\n";
  EXPECT_HAS(error_of(csv, {}), "no --map");
  EXPECT_HAS(error_of(csv, {"model"}), "--map 'model': expected SOURCE=TARGET");
  const std::string unknown = error_of(csv, {"model=model", "ttft=latency_ms.ttft.p42"});
  EXPECT_HAS(unknown, "--map 'ttft=latency_ms.ttft.p42': unknown target 'latency_ms.ttft.p42'");
  EXPECT_HAS(unknown, "throughput.output_tokens_per_s");
  EXPECT_HAS(unknown, "p99_9");
  EXPECT_HAS(unknown, "concurrency");
  EXPECT_HAS(error_of(csv, {"model=model", "ttft=latency_ms.ttft.p50:min"}),
             "unknown unit 'min' for latency_ms.ttft.p50; use ms, s, us, ns");
  EXPECT_HAS(error_of(csv, {"model=model", "ttft=requests.ok:s"}), "it takes none");
  EXPECT_HAS(error_of(csv, {"model=model", "ttft=latency_ms.ttft.p50", "model=latency_ms.e2e.p50"}),
             "'model' is mapped twice");
  EXPECT_HAS(error_of("model,a,b\nm,1,2\n",
                      {"model=model", "a=latency_ms.ttft.p50", "b=latency_ms.ttft.p50"}),
             "'latency_ms.ttft.p50' is mapped twice");
  const std::string missing = error_of(csv, {"model=model", "TTFT=latency_ms.ttft.p50"});
  EXPECT_HAS(missing, "t.csv: column 'TTFT' (--map 'TTFT=latency_ms.ttft.p50') is not in the file");
  EXPECT_HAS(missing, "its columns: 'model', 'ttft'");
  const std::string no_key =
      file_error("ledger.jsonl", {"model=model", "$.ttft.p99=latency_ms.ttft.p99"});
  EXPECT_HAS(no_key,
             "ledger.jsonl: '$.ttft.p99' (--map '$.ttft.p99=latency_ms.ttft.p99') is in no row");
  EXPECT_HAS(no_key, "the first row's keys: 'tool', 'tool_version'");
}

TEST(Table, LedgerIdentitiesAreCheckedAndKeptPerGpu) {
  const std::string h(64, 'C');  // upper case: lowered
  const std::vector<std::string> map{"m=model",
                                     "g=gpu",
                                     "u=gpu.uuid",
                                     "d=gpu.driver",
                                     "s=request_stream.sha256",
                                     "h=harness.sha256",
                                     "r=model.revision"};
  const std::vector<ImportedResult> rs =
      read_table("m,g,u,d,s,h,r\nx,2x A100,\"G-0, G-1\",550.1," + h + ",sha256:" + h + ",main\n",
                 "t.csv", map);
  ASSERT_EQ(rs.size(), 1u);
  const ImportedResult& r = rs[0];
  ASSERT_TRUE(r.gpus && r.gpus->size() == 2u);
  EXPECT_EQ((*r.gpus)[0].at("uuid").as_string(), "G-0");
  EXPECT_EQ((*r.gpus)[1].at("uuid").as_string(), "G-1");
  EXPECT_EQ((*r.gpus)[1].at("driver").as_string(), "550.1");
  EXPECT_EQ((*r.gpus)[1].at("name").as_string(), "A100");
  EXPECT_EQ(r.gpus_unknown,
            "the file names the GPU model, UUID and driver only: vendor, PCI bus id, memory and "
            "power limit are not in the imported file");
  EXPECT_EQ(r.request_stream_sha256, std::string(64, 'c'));
  EXPECT_EQ(r.source.harness_sha256, std::string(64, 'c'));
  EXPECT_EQ(r.model_revision, "main");
  // UUIDs alone: one GPU each, model unknown.
  const auto only = read_table("m,u\nx,G-0 G-1 G-2\n", "t.csv", {"m=model", "u=gpu.uuid"});
  ASSERT_TRUE(only[0].gpus && only[0].gpus->size() == 3u);
  EXPECT_TRUE((*only[0].gpus)[0].at("name").is_null());
  // Refused: a hash that is not a SHA-256, UUIDs that are not one per GPU, a driver of no GPU.
  EXPECT_HAS(error_of("m,s\nx,abc\n", {"m=model", "s=request_stream.sha256"}),
             "t.csv:2: column 's': 'abc' is not a SHA-256 (64 hex digits); request_stream.sha256 "
             "is one");
  EXPECT_HAS(error_of("m,g,u\nx,2x A100,G-0\n", {"m=model", "g=gpu", "u=gpu.uuid"}),
             "t.csv:2: gpu.uuid names 1 GPU but gpu '2x A100' 2");
  EXPECT_HAS(error_of("m,d\nx,550\n", {"m=model", "d=gpu.driver"}),
             "gpu.driver '550' but no gpu or gpu.uuid says how many GPUs it drives");
}

TEST(Table, BadFilesNameTheFileLineAndColumn) {
  const std::vector<std::string> map{"model=model", "concurrency=concurrency",
                                     "TTFT p50 (ms)=latency_ms.ttft.p50"};
  EXPECT_HAS(file_error("ragged.csv", map), "ragged.csv:3: 2 fields, but the header has 3");
  EXPECT_HAS(file_error("not_a_number.csv", map),
             "not_a_number.csv:3: column 'TTFT p50 (ms)': 'abc' is not a number");
  EXPECT_HAS(file_error("negative.csv", map),
             "negative.csv:2: column 'TTFT p50 (ms)': '-4' is negative");
  EXPECT_HAS(file_error("not_finite.csv", map),
             "not_finite.csv:2: column 'TTFT p50 (ms)': 'nan' is not a finite number");
  EXPECT_HAS(file_error("open_quote.csv", map), "open_quote.csv:2: quoted field is not closed");
  EXPECT_HAS(file_error("empty.csv", map), "empty.csv: empty file");
  EXPECT_HAS(file_error("header_only.csv", map), "header_only.csv: holds no rows");
  EXPECT_HAS(file_error("bad_line.jsonl", {"model=model", "ttft=latency_ms.ttft.p50"}),
             "bad_line.jsonl:2: not JSON");
  EXPECT_HAS(file_error("counts_disagree.csv", {"model=model", "ok=requests.ok",
                                                "failed=requests.failed", "total=requests.total"}),
             "counts_disagree.csv:2: requests.ok (10) + requests.failed (2) is not requests.total "
             "(13)");
  EXPECT_HAS(error_of("model,c\nm,2.5\n", {"model=model", "c=concurrency"}),
             "t.csv:2: column 'c': '2.5' is not a whole number");
  EXPECT_HAS(error_of("model,c\nm,0\n", {"model=model", "c=concurrency"}), "'0' is not 1 or more");
  EXPECT_HAS(error_of("model,a\nm,1.5\n", {"model=model", "a=quality.accuracy"}),
             "'1.5' is more than 1");
  EXPECT_HAS(error_of("model,api\nm,tgi\n", {"model=model", "api=api"}),
             "'tgi' is not an api dyno records");
  EXPECT_HAS(error_of("model,p\nm,Sweep!\n", {"model=model", "p=protocol"}),
             "'Sweep!' is not a protocol name");
  EXPECT_HAS(error_of("model,t\n,1\n", {"model=model", "t=latency_ms.ttft.p50"}),
             "t.csv:2: column 'model': is empty; every row needs a model");
  EXPECT_HAS(error_of("model,model\nm,n\n", {"model=model"}),
             "t.csv:1: the header names 'model' twice");
  // JSON: the path of the value.
  EXPECT_HAS(error_of(R"([{"model": "m", "m": {"t": [1, true]}}])",
                      {"model=model", "$.m.t[1]=latency_ms.ttft.p50"}, "r.json"),
             "r.json: $[0].m.t[1]: 'true' is not a number");
  EXPECT_HAS(error_of(R"({"rows": 3})", {"$.rows=rows", "model=model"}, "r.json"),
             "r.json: $.rows: expected an array of rows");
  EXPECT_HAS(error_of(R"([1])", {"model=model"}, "r.json"), "r.json: $[0]: expected a row object");
  EXPECT_HAS(error_of("[]", {"model=model"}, "r.json"), "r.json: holds no rows");
  EXPECT_HAS(error_of("{\"model\": \"m\", \"t\": -1}\n", {"model=model", "t=latency_ms.ttft.p50"},
                      "r.jsonl"),
             "r.jsonl:1: $.t: '-1' is negative");
}

TEST(Table, TheEngineTimedPrefillRateGoesToServerTimings) {
  // A rate per minute, converted; a row without the cell states no engine timing at all.
  const auto rows =
      read_table("model,prefill\nm,90000\nm,\n", "t.csv",
                 {"model=model", "prefill=server.timings.prefill_tokens_per_s:per_min"});
  ASSERT_EQ(rows.size(), 2u);
  ASSERT_TRUE(rows[0].engine_timings);
  EXPECT_EQ(json::serialize(*rows[0].engine_timings),
            R"({"source":"stated by the imported file","prefill_tokens_per_s":1.5E3})");
  EXPECT_FALSE(rows[1].engine_timings);
  EXPECT_HAS(error_of("model,prefill\nm,-3\n",
                      {"model=model", "prefill=server.timings.prefill_tokens_per_s"}),
             "prefill");
}

TEST(Table, RecordsVerifyAndSayWhatTheLedgerDoesNotGive) {
  dyno::testing::TempDir root;
  const std::string bytes = "model,ttft\nm,12\n";
  const auto rows = read_table(bytes, "t.csv", {"model=model", "ttft=latency_ms.ttft.p50"});
  auto options = dyno::testing::fixed_import_options(root.path());
  options.api = "completions";
  const auto out = dyno::interop::write_imported_run(rows[0], "t.csv", bytes, options);
  const auto report = dyno::record::verify_run_dir(out.dir, true);
  for (const auto& p : report.problems) ADD_FAILURE() << p.path << ": " << p.message;
  const json::object s = json::parse(dyno::record::read_file(out.dir / "summary.json")).as_object();
  EXPECT_TRUE(s.at("requests").at("ok").is_null());
  EXPECT_TRUE(s.at("tokens").at("input_total").is_null());
  EXPECT_TRUE(s.at("latency_ms").at("ttft").at("count").is_null());
  EXPECT_TRUE(s.at("latency_ms").at("e2e").at("count").is_null());  // nothing mapped: unknown
  const json::object m =
      json::parse(dyno::record::read_file(out.dir / "manifest.json")).as_object();
  EXPECT_TRUE(m.at("workload").at("request_stream").at("count").is_null());
  EXPECT_EQ(m.at("source").at("part").as_string(), "row 2");
  // No model column and no --model: refused before anything is written.
  dyno::testing::TempDir empty;
  const auto none = read_table(bytes, "t.csv", {"ttft=latency_ms.ttft.p50"});
  EXPECT_THROW((void)dyno::interop::write_imported_run(
                   none[0], "t.csv", bytes, dyno::testing::fixed_import_options(empty.path())),
               ImportFileError);
  EXPECT_TRUE(fs::is_empty(empty.path()));
}

/// `api`: as --api gives it, for a ledger without an api column.
void golden_of(const std::string& name, const std::vector<std::string>& map,
               const std::optional<std::string>& api = "completions") {
  const std::string bytes = bytes_of(name);
  dyno::interop::ImportReadOptions options;
  options.map = map;
  std::string golden = name;
  std::replace(golden.begin(), golden.end(), '.', '_');
  // A ledger without an api column: the endpoint as --api gives it.
  dyno::testing::expect_import_golden("table/" + golden,
                                      dyno::interop::read_import("table", bytes, name, options),
                                      name, bytes, api);
}

TEST(ImportGolden, TableCsvLedger) { golden_of("ledger.csv", kLedgerMap); }
TEST(ImportGolden, TableJsonRows) { golden_of("rows.json", kRowsMap, std::nullopt); }
TEST(ImportGolden, TableJsonl) { golden_of("ledger.jsonl", kJsonlMap); }

}  // namespace
