// dyno export (interop/export_vllm.h, interop/export_csv.h): a hand-made record becomes vLLM's
// result object (golden file, and every vLLM summary key checked against vLLM's definitions
// computed by hand) and a CSV table (golden file, RFC 4180, no formula); the round trip
// record → vllm-bench → `dyno import vllm-bench` gives back every figure both sides define;
// records that cannot be exported are refused, naming the run and why.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "import_golden.h"
#include "interop/export_csv.h"
#include "interop/export_record.h"
#include "interop/export_vllm.h"
#include "interop/import_vllm.h"
#include "interop/result_import.h"
#include "json/json_text.h"
#include "record/run_writer.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::interop::ExportError;
using dyno::interop::ExportRecord;
using dyno::interop::ImportedResult;
using dyno::metrics::RequestStatus;
using dyno::metrics::Trace;
using dyno::testing::fixed_import_options;
using dyno::testing::replace_all;

namespace {

constexpr std::int64_t kMs = 1'000'000;

Trace ok_trace(std::uint64_t index, std::int64_t scheduled, std::int64_t sent,
               std::vector<std::int64_t> events, std::int64_t done, std::int64_t in,
               std::int64_t out, std::string text) {
  Trace t;
  t.index = index;
  t.request_id = "r" + std::to_string(index);
  t.scheduled_ns = scheduled;
  t.sent_ns = sent;
  t.event_times_ns = dyno::metrics::EventTimes(events);
  t.first_token_ns = t.event_times_ns.front();
  t.first_content_ns = t.first_token_ns;
  t.last_token_ns = t.event_times_ns.back();
  t.done_ns = done;
  t.input_tokens = in;
  t.output_tokens = out;
  t.token_count_source = dyno::metrics::TokenCountSource::kUsage;
  t.output_text = std::move(text);
  return t;
}

/// Four requests, two in flight: r0 and r1 from the start, r2 fails (HTTP 500) and r3 is sent
/// 10 ms after its schedule, when r0 ends. Round milliseconds, so vLLM's figures can be
/// computed by hand.
ImportedResult handmade() {
  ImportedResult r;
  r.source.tool = "hand";
  r.source.format = "vllm-bench";
  r.source.timing = "shared_clock";
  r.label = "=handmade";  // a formula-like label: the CSV must not make it one
  r.model_id = "example-org/tiny-chat";
  r.api = "chat";
  r.load.imported = true;
  r.load.concurrency = 2;
  r.requests = 4;
  r.status = "partial";
  r.traces.push_back(ok_trace(0, 0, 0, {100 * kMs, 120 * kMs, 150 * kMs}, 160 * kMs, 10, 3,
                              "one, \"two\"\nthree"));
  r.traces.push_back(ok_trace(1, 0, 10 * kMs, {130 * kMs, 140 * kMs}, 150 * kMs, 12, 2, "de"));
  Trace failed;
  failed.index = 2;
  failed.request_id = "r2";
  failed.scheduled_ns = 20 * kMs;
  failed.sent_ns = 20 * kMs;
  failed.done_ns = 30 * kMs;
  failed.status = RequestStatus::kError;
  failed.http_status = 500;
  failed.error_category = "http_status";
  failed.error_message = "HTTP 500";
  r.traces.push_back(failed);
  r.traces.push_back(ok_trace(3, 150 * kMs, 160 * kMs, {200 * kMs}, 210 * kMs, 8, 1, "f"));
  return r;
}

fs::path write_record(const fs::path& root, const ImportedResult& r, const std::string& name) {
  return dyno::interop::write_imported_run(r, name, "{}", fixed_import_options(root)).dir;
}

json::object summary_of(const fs::path& dir) {
  return json::parse(dyno::record::read_file(dir / "summary.json")).as_object();
}

double number_at(const json::object& o, const std::string& dotted) {
  const json::value* v = nullptr;
  const json::object* cur = &o;
  std::size_t from = 0;
  while (true) {
    const std::size_t dot = dotted.find('.', from);
    v = cur->if_contains(dotted.substr(from, dot - from));
    if (v == nullptr) ADD_FAILURE() << "no " << dotted;
    if (v == nullptr || dot == std::string::npos) break;
    cur = &v->as_object();
    from = dot + 1;
  }
  if (v == nullptr || !v->is_number()) return std::nan("");
  return v->to_number<double>();
}

/// The round trip's tolerance: every time comes back within 2 ns (seconds are doubles, the
/// import rounds to whole ns), so a figure agrees to 1e-5 relative (absolute below 1).
void expect_close(double a, double b, const std::string& what) {
  EXPECT_NEAR(a, b, 1e-5 * std::max(1.0, std::abs(a))) << what;
}

const std::vector<std::string> kDistributions = {"latency_ms.ttft",
                                                 "latency_ms.e2e",
                                                 "latency_ms.tpot",
                                                 "latency_ms.event_gap",
                                                 "latency_ms.queue_delay",
                                                 "latency_ms.ttft_from_schedule",
                                                 "rates_tok_s.decode_rate_per_user",
                                                 "rates_tok_s.prefill_rate_client",
                                                 "lengths_tokens.input",
                                                 "lengths_tokens.output"};

const std::vector<std::string> kStats = {"count", "mean", "stddev", "min",   "p50",
                                         "p90",   "p95",  "p99",    "p99_9", "max"};

/// Exports `dir`, imports the export as `dyno import vllm-bench` does, and compares the two
/// records' figures.
void expect_round_trip(const fs::path& root, const fs::path& dir) {
  const ExportRecord rec = dyno::interop::read_export_record(dir);
  const std::string bytes = dyno::json_text::pretty(dyno::interop::export_vllm_bench(rec));
  const ImportedResult back = dyno::interop::read_vllm_bench(bytes, "export.json");
  EXPECT_EQ(back.source.timing, "shared_clock");
  ASSERT_EQ(back.traces.size(), rec.traces.size());
  for (std::size_t i = 0; i < rec.traces.size(); ++i) {  // every time within 2 ns
    const Trace& a = rec.traces[i];
    const Trace& b = back.traces[i];
    const std::int64_t shift = *b.sent_ns - *a.sent_ns;  // the import counts from the origin
    EXPECT_EQ(a.ok(), b.ok()) << i;
    if (!a.ok()) continue;
    EXPECT_LE(std::abs(*b.first_token_ns - shift - *a.first_token_ns), 2) << i;
    EXPECT_LE(std::abs(*b.done_ns - shift - *a.done_ns), 2) << i;
    ASSERT_EQ(a.event_times_ns.size(), b.event_times_ns.size()) << i;
    const std::vector<std::int64_t> ae = a.event_times_ns.to_vector();
    const std::vector<std::int64_t> be = b.event_times_ns.to_vector();
    for (std::size_t k = 0; k < ae.size(); ++k) {
      EXPECT_LE(std::abs(be[k] - shift - ae[k]), 2) << i << "/" << k;
    }
  }
  const fs::path back_dir = write_record(root, back, "export.json");
  const json::object s0 = summary_of(dir);
  const json::object s1 = summary_of(back_dir);
  for (const char* k : {"requests.total", "requests.ok", "requests.failed", "requests.error_rate",
                        "tokens.input_total", "tokens.output_total", "tokens.tokens_per_event",
                        "throughput.service_window_s", "throughput.output_tokens_per_s",
                        "throughput.input_tokens_per_s", "throughput.requests_per_s",
                        "throughput.decode_tokens_per_s"}) {
    expect_close(number_at(s0, k), number_at(s1, k), k);
  }
  for (const std::string& d : kDistributions) {
    for (const std::string& stat : kStats) {
      const std::string k = d + "." + stat;
      const json::value& a = s0.at(d.substr(0, d.find('.'))).at(d.substr(d.find('.') + 1));
      if (a.at(stat).is_null()) {
        EXPECT_TRUE(
            s1.at(d.substr(0, d.find('.'))).at(d.substr(d.find('.') + 1)).at(stat).is_null())
            << k;
        continue;
      }
      expect_close(number_at(s0, k), number_at(s1, k), k);
    }
  }
  // Failures come back as category `imported`, one for one.
  const double failed = number_at(s0, "requests.failed");
  if (failed > 0) expect_close(number_at(s1, "requests.errors_by_category.imported"), failed, "");
  // achieved_concurrency: vLLM's file gives a failed request no end, so its time in flight
  // (counted by dyno) does not come back.
  double failed_e2e_s = 0;
  for (const Trace& t : rec.traces) {
    if (!t.ok() && t.sent_ns && t.done_ns)
      failed_e2e_s += static_cast<double>(*t.done_ns - *t.sent_ns) / 1e9;
  }
  expect_close(number_at(s0, "throughput.achieved_concurrency") -
                   failed_e2e_s / number_at(s0, "throughput.service_window_s"),
               number_at(s1, "throughput.achieved_concurrency"), "achieved_concurrency");
}

}  // namespace

TEST(ExportVllm, StatisticsFollowVllmsDefinitions) {
  // numpy: mean 2.5, np.std (population) sqrt(1.25), np.percentile linear.
  const auto s = dyno::interop::vllm_stat({4.0, 1.0, 3.0, 2.0});
  EXPECT_DOUBLE_EQ(*s.mean_ms, 2500.0);
  EXPECT_DOUBLE_EQ(*s.median_ms, 2500.0);
  EXPECT_NEAR(*s.std_ms, std::sqrt(1.25) * 1000, 1e-9);
  EXPECT_NEAR(*s.percentiles_ms[0], 3700.0, 1e-9);  // p90: rank 2.7
  EXPECT_NEAR(*s.percentiles_ms[3], 3997.0, 1e-9);  // p99.9: rank 2.997
  const auto one = dyno::interop::vllm_stat({0.25});
  EXPECT_DOUBLE_EQ(*one.std_ms, 0.0);  // population: defined for one value
  const auto none = dyno::interop::vllm_stat({});
  EXPECT_FALSE(none.mean_ms || none.median_ms || none.std_ms || none.percentiles_ms[2]);
  EXPECT_EQ(dyno::interop::vllm_date("2026-01-02T03:04:05Z"), "20260102-030405");
  EXPECT_EQ(dyno::interop::vllm_date("2026-01-02T03:04:05.123456Z"), "20260102-030405");
  EXPECT_FALSE(dyno::interop::vllm_date("2026-01-02 03:04").has_value());
}

TEST(ExportVllm, SummaryKeysEqualVllmsDefinitionsComputedByHand) {
  dyno::testing::TempDir root;
  const json::object o = dyno::interop::export_vllm_bench(
      dyno::interop::read_export_record(write_record(root.path(), handmade(), "hand.json")));
  const auto n = [&](const char* k) { return o.at(k).to_number<double>(); };
  EXPECT_EQ(o.at("backend").as_string(), "openai-chat");
  EXPECT_EQ(o.at("date").as_string(), "20260102-030405");  // the record's start, UTC
  EXPECT_EQ(o.at("request_rate").as_string(), "inf");
  EXPECT_EQ(o.at("max_concurrency").to_number<int>(), 2);
  EXPECT_EQ(o.at("num_prompts").to_number<int>(), 4);
  EXPECT_DOUBLE_EQ(n("duration"), 0.21);  // W: r0 sent at 0 to r3's end at 210 ms
  EXPECT_EQ(n("completed"), 3);
  EXPECT_EQ(n("failed"), 1);
  EXPECT_EQ(n("total_input_tokens"), 30);  // completed requests only, as vLLM counts
  EXPECT_EQ(n("total_output_tokens"), 6);
  EXPECT_DOUBLE_EQ(n("request_throughput"), 3 / 0.21);
  EXPECT_DOUBLE_EQ(n("output_throughput"), 6 / 0.21);
  EXPECT_DOUBLE_EQ(n("total_token_throughput"), 36 / 0.21);
  EXPECT_TRUE(o.at("request_goodput").is_null());  // the record has no objectives
  // TTFT 100, 120, 40 ms.
  EXPECT_NEAR(n("mean_ttft_ms"), 260.0 / 3, 1e-9);
  EXPECT_NEAR(n("median_ttft_ms"), 100.0, 1e-9);
  EXPECT_NEAR(
      n("std_ttft_ms"),
      std::sqrt((std::pow(40.0 / 3, 2) + std::pow(100.0 / 3, 2) + std::pow(140.0 / 3, 2)) / 3),
      1e-9);
  EXPECT_NEAR(n("p90_ttft_ms"), 116.0, 1e-9);
  // TPOT = (latency − ttft)/(out − 1): r0 (160 − 100)/2 = 30, r1 (140 − 120)/1 = 20; r3 has
  // one output token and no TPOT.
  EXPECT_NEAR(n("mean_tpot_ms"), 25.0, 1e-9);
  EXPECT_NEAR(n("std_tpot_ms"), 5.0, 1e-9);
  EXPECT_NEAR(n("p99_tpot_ms"), 29.9, 1e-9);
  // ITL, pooled: 20, 30 (r0), 10 (r1).
  EXPECT_NEAR(n("mean_itl_ms"), 20.0, 1e-9);
  EXPECT_NEAR(n("median_itl_ms"), 20.0, 1e-9);
  EXPECT_NEAR(n("std_itl_ms"), std::sqrt(200.0 / 3), 1e-9);
  // E2EL 160, 140, 50.
  EXPECT_NEAR(n("mean_e2el_ms"), 350.0 / 3, 1e-9);
  EXPECT_NEAR(n("p99.9_e2el_ms"), 159.96, 1e-9);  // rank 1.998: 140 + 0.998 × 20
  // Six token events in the first second; r3 is sent when r0 ends (a departure counts first).
  EXPECT_DOUBLE_EQ(n("max_output_tokens_per_s"), 6.0);
  EXPECT_EQ(n("max_concurrent_requests"), 2);
  // The failed request as vLLM writes one, its error naming dyno's category.
  EXPECT_EQ(o.at("errors").at(2).as_string(), "http_status: HTTP 500");
  EXPECT_EQ(o.at("output_lens").at(2).to_number<int>(), 0);
  EXPECT_EQ(o.at("latencies").at(2).to_number<double>(), 0.0);
  EXPECT_DOUBLE_EQ(o.at("queue_times").at(3).to_number<double>(), 0.01);
  EXPECT_DOUBLE_EQ(o.at("start_times").at(1).to_number<double>(), 0.01);
}

TEST(ExportVllm, GoldenFile) {
  dyno::testing::TempDir root;
  const ExportRecord rec =
      dyno::interop::read_export_record(write_record(root.path(), handmade(), "hand.json"));
  dyno::testing::expect_golden(
      "tests/record/golden/export/vllm-bench/handmade.json",
      replace_all(dyno::json_text::pretty(dyno::interop::export_vllm_bench(rec)), rec.run_id,
                  "RUN"));
}

TEST(ExportVllm, RoundTripGivesBackEveryFigureBothSidesDefine) {
  dyno::testing::TempDir root;
  expect_round_trip(root.path(), write_record(root.path(), handmade(), "hand.json"));
}

TEST(ExportVllm, RoundTripOfManyRequestsAtNanosecondTimes) {
  // Times that are not round: 300 requests over ~40 s of a clock read long after boot, with
  // open-loop lateness, ragged token gaps and a failure every 37th request.
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::int64_t> gap(1'000'001, 90'000'007);
  ImportedResult r = handmade();
  r.traces.clear();
  r.load.concurrency.reset();
  r.load.rate_per_s = 7.5;
  std::int64_t at = 123'456'789'012;
  for (std::uint64_t i = 0; i < 300; ++i) {
    at += gap(rng);
    const std::int64_t sent = at + gap(rng) / 100;
    std::vector<std::int64_t> events{sent + 5 * gap(rng)};
    const auto out = static_cast<std::int64_t>(1 + rng() % 40);
    for (std::int64_t k = 1; k < out; ++k) events.push_back(events.back() + gap(rng) / 3);
    Trace t = ok_trace(i, at, sent, events, events.back() + gap(rng) / 7,
                       static_cast<std::int64_t>(100 + rng() % 900), out, "");
    if (i % 37 == 5) {  // refused by the server before any token
      t.status = RequestStatus::kError;
      t.error_category = "http_status";
      t.error_message = "HTTP 503";
      t.output_tokens.reset();
      t.event_times_ns.clear();
      t.first_token_ns.reset();
      t.first_content_ns.reset();
      t.last_token_ns.reset();
      t.done_ns = sent + gap(rng) / 10;
    }
    r.traces.push_back(t);
  }
  r.status = "partial";
  dyno::testing::TempDir root;
  expect_round_trip(root.path(), write_record(root.path(), r, "many.json"));
}

TEST(ExportVllm, AnImportedVllmFileExportsItsOwnArraysBack) {
  const fs::path file = fs::path(DYNO_SOURCE_DIR) / "tests/record/data/vllm_bench/detailed.json";
  const std::string bytes = dyno::record::read_file(file);
  const json::object in = json::parse(bytes).as_object();
  dyno::testing::TempDir root;
  const fs::path dir =
      write_record(root.path(), dyno::interop::read_vllm_bench(bytes, "d.json"), "detailed.json");
  const json::object out = dyno::interop::export_vllm_bench(dyno::interop::read_export_record(dir));
  for (const char* k : {"input_lens", "output_lens", "generated_texts"}) {
    EXPECT_EQ(out.at(k), in.at(k)) << k;
  }
  // The failed request's error comes back behind its category in the import, `imported`.
  EXPECT_EQ(out.at("errors").at(0).as_string(), "");
  EXPECT_EQ(out.at("errors").at(3).as_string(),
            "imported: " + std::string(in.at("errors").at(3).as_string()));
  for (const char* k : {"ttfts", "latencies", "queue_times"}) {
    for (std::size_t i = 0; i < 3; ++i) {  // the completed ones (the failed one has no latency)
      EXPECT_NEAR(out.at(k).at(i).to_number<double>(), in.at(k).at(i).to_number<double>(), 2e-9)
          << k << "[" << i << "]";
    }
  }
  for (const char* k : {"max_concurrency", "max_output_tokens_per_s", "max_concurrent_requests",
                        "completed", "failed", "total_input_tokens", "total_output_tokens"}) {
    EXPECT_EQ(out.at(k).to_number<double>(), in.at(k).to_number<double>()) << k;
  }
}

TEST(ExportVllm, RecordsThatCannotMakeVllmsKeysAreRefused) {
  dyno::testing::TempDir root;
  const fs::path data = fs::path(DYNO_SOURCE_DIR) / "tests/record/data/vllm_bench";
  const auto error_of = [&](const fs::path& dir) -> std::string {
    try {
      (void)dyno::interop::export_vllm_bench(dyno::interop::read_export_record(dir));
    } catch (const ExportError& e) {
      return e.what();
    }
    return "no error";
  };
  for (const char* name : {"summary_only.json", "no_start_times.json"}) {
    const std::string bytes = dyno::record::read_file(data / name);
    const fs::path dir =
        write_record(root.path(), dyno::interop::read_vllm_bench(bytes, name), name);
    const std::string e = error_of(dir);
    EXPECT_NE(e.find(dir.filename().string()), std::string::npos) << e;
    EXPECT_NE(e.find(std::string("evidence/") + name), std::string::npos) << e;
  }
  // A tampered record is never exported.
  const fs::path dir = write_record(root.path(), handmade(), "hand.json");
  std::string summary = dyno::record::read_file(dir / "summary.json");
  summary.replace(summary.find("\"ok\": 3"), 7, "\"ok\": 4");
  dyno::record::write_file_atomic(dir / "summary.json", summary);
  EXPECT_NE(error_of(dir).find("fails `dyno runs verify`"), std::string::npos) << error_of(dir);
  // A completed request without token event times (--no-chunk-times).
  std::vector<Trace> traces = handmade().traces;
  traces[1].event_times_ns.clear();
  try {
    (void)dyno::interop::vllm_requests(traces, "RUN");
    ADD_FAILURE() << "no error";
  } catch (const ExportError& e) {
    EXPECT_NE(std::string(e.what()).find("request 1 (r1)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--no-chunk-times"), std::string::npos) << e.what();
  }
}

TEST(ExportCsv, FieldsAreRfc4180AndNeverFormulas) {
  using dyno::interop::csv_field;
  EXPECT_EQ(csv_field(nullptr), "");
  EXPECT_EQ(csv_field(true), "true");
  EXPECT_EQ(csv_field(0.1), "0.1");
  EXPECT_EQ(csv_field(24.0), "24.0");
  EXPECT_EQ(csv_field(-1.5), "-1.5");  // a number stays a number
  EXPECT_EQ(csv_field(std::int64_t{42}), "42");
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\"\r\n"), "\"say \"\"hi\"\"\r\n\"");
  EXPECT_EQ(csv_field("=1+1"), "'=1+1");
  EXPECT_EQ(csv_field("+1"), "'+1");
  EXPECT_EQ(csv_field("-x"), "'-x");
  EXPECT_EQ(csv_field("@SUM(A1)"), "'@SUM(A1)");
  EXPECT_EQ(csv_field("\tx"), "'\tx");
  EXPECT_EQ(csv_field("=HYPERLINK(\"x\",\"y\")"), "\"'=HYPERLINK(\"\"x\"\",\"\"y\"\")\"");
}

TEST(ExportCsv, GoldenFileOfADynoShapedAndASummaryOnlyRecord) {
  dyno::testing::TempDir root;
  const fs::path data = fs::path(DYNO_SOURCE_DIR) / "tests/record/data/vllm_bench";
  const std::string bytes = dyno::record::read_file(data / "summary_only.json");
  const fs::path a = write_record(root.path(), handmade(), "hand.json");
  const fs::path b = write_record(
      root.path(), dyno::interop::read_vllm_bench(bytes, "summary_only.json"), "summary_only.json");
  const std::vector<ExportRecord> records{dyno::interop::read_export_record(a),
                                          dyno::interop::read_export_record(b)};
  const std::string csv = dyno::interop::export_csv(records);
  dyno::testing::expect_golden(
      "tests/record/golden/export/csv/two_runs.csv",
      replace_all(replace_all(csv, records[0].run_id, "RUN_A"), records[1].run_id, "RUN_B"));
  // The union of the columns: every summary column of either record, each once.
  const std::string header = csv.substr(0, csv.find("\r\n"));
  EXPECT_EQ(header.rfind("run_id,label,status,started_at,model,engine,engine_version,protocol,"
                         "cell,concurrency,rate_per_s,source_tool,source_format,",
                         0),
            0u)
      << header;
  for (const auto& [k, v] : dyno::interop::flatten_summary(records[0].summary_json)) {
    EXPECT_NE(("," + header + ",").find("," + k + ","), std::string::npos) << k;
  }
  EXPECT_NE(csv.find(",'=handmade,"), std::string::npos);
}
