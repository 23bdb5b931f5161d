// dyno import vllm-bench (interop/import_vllm.h, interop/result_import.h): hand-written result
// files in vLLM's documented shape (tests/record/data/vllm_bench/) become traces or mapped
// summary figures, and records that verify; bad files are refused naming the file and the
// JSON path or line, leaving nothing behind.
#include "interop/result_import.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <filesystem>
#include <string>

#include "digest/digest.h"
#include "import_golden.h"
#include "interop/import_formats.h"
#include "interop/import_vllm.h"
#include "record/record_reader.h"
#include "record/run_verify.h"
#include "record/run_writer.h"
#include "store/run_index.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::interop::ImportedResult;
using dyno::interop::ImportFileError;
using dyno::interop::read_vllm_bench;

namespace {

const fs::path kData = fs::path(DYNO_SOURCE_DIR) / "tests/record/data/vllm_bench";

std::string bytes_of(const std::string& name) { return dyno::record::read_file(kData / name); }

ImportedResult read(const std::string& name) { return read_vllm_bench(bytes_of(name), name); }

std::string error_of(const std::string& name) {
  try {
    (void)read(name);
  } catch (const ImportFileError& e) {
    return e.what();
  }
  return "no error";
}

json::object read_json(const fs::path& p) {
  return json::parse(dyno::record::read_file(p)).as_object();
}

dyno::interop::ImportWriteOptions options(const fs::path& root) {
  dyno::interop::ImportWriteOptions o;
  o.runs_root = root;
  o.harness = dyno::record::harness_from_json(json::object{{"name", "dyno"},
                                                           {"version", "0.0.0-test"},
                                                           {"git_commit", "unknown"},
                                                           {"git_dirty", false},
                                                           {"build_type", "test"},
                                                           {"executable_sha256", nullptr}});
  return o;
}

TEST(VllmBench, DetailedResultBecomesTracesOnOneClock) {
  const ImportedResult r = read("detailed.json");
  EXPECT_EQ(r.source.timing, "shared_clock");
  EXPECT_EQ(r.source.tool, "vllm bench serve");
  EXPECT_EQ(r.api, "chat");
  EXPECT_EQ(r.status, "partial");
  EXPECT_EQ(r.model_id, "example-org/tiny-chat");
  EXPECT_FALSE(r.label.has_value());  // null in the file
  EXPECT_EQ(r.requests, 4u);
  EXPECT_EQ(r.load.concurrency, 2u);
  EXPECT_FALSE(r.load.rate_per_s.has_value());  // "inf": no schedule
  ASSERT_EQ(r.traces.size(), 4u);
  // Request 2 arrived with the others (start − queue time = the origin) and was sent 0.25 s
  // later; its token times are its ttft and the running sum of its itls.
  const auto& t = r.traces[2];
  EXPECT_EQ(t.scheduled_ns, 0);
  EXPECT_EQ(t.sent_ns, 250'000'000);
  EXPECT_EQ(t.first_token_ns, 400'000'000);
  EXPECT_EQ(t.last_token_ns, 650'000'000);
  EXPECT_EQ(t.done_ns, 650'000'000);
  EXPECT_EQ(t.input_tokens, 30);
  EXPECT_EQ(t.output_tokens, 2);
  EXPECT_EQ(t.output_text, "hi there");
  ASSERT_EQ(r.traces[1].event_times_ns.size(), 4u);
  EXPECT_EQ(r.traces[1].event_times_ns.to_vector()[3], 500'000'000);
  const auto& failed = r.traces[3];
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.error_category, "imported");
  EXPECT_EQ(failed.error_message, "HTTP 500: Internal Server Error");
  EXPECT_FALSE(failed.output_tokens.has_value());
  EXPECT_FALSE(failed.done_ns.has_value());
  EXPECT_EQ(r.source.file_fields.at("date").as_string(), "20250314-091500");
}

TEST(VllmBench, WithoutStartTimesEachRequestHasItsOwnOrigin) {
  const ImportedResult r = read("no_start_times.json");
  EXPECT_EQ(r.source.timing, "per_request");
  for (const auto& t : r.traces) {
    EXPECT_EQ(t.sent_ns, 0);
    EXPECT_FALSE(t.scheduled_ns.has_value());
  }
  EXPECT_EQ(r.traces[2].first_token_ns, 150'000'000);
}

TEST(VllmBench, SummaryOnlyMapsOnlyMatchingDefinitions) {
  const ImportedResult r = read("summary_only.json");
  EXPECT_EQ(r.source.timing, "summary_only");
  EXPECT_TRUE(r.traces.empty());
  EXPECT_EQ(r.api, "completions");
  EXPECT_EQ(r.label, "nightly");
  EXPECT_EQ(r.load.rate_per_s, 4.0);
  EXPECT_EQ(r.load.arrival, "poisson");
  EXPECT_FALSE(r.load.concurrency.has_value());
  const auto& s = r.summary;
  EXPECT_EQ(s.requests_ok, 98u);
  EXPECT_EQ(s.requests_failed, 2u);
  EXPECT_DOUBLE_EQ(*s.error_rate, 0.02);
  EXPECT_EQ(s.output_tokens_total, 12544);
  EXPECT_EQ(s.ttft_ms.count, 98u);
  EXPECT_DOUBLE_EQ(*s.ttft_ms.mean, 41.5);
  EXPECT_DOUBLE_EQ(*s.ttft_ms.p50, 38.25);
  EXPECT_DOUBLE_EQ(*s.ttft_ms.p90, 52.0);
  EXPECT_DOUBLE_EQ(*s.ttft_ms.p99, 77.75);
  EXPECT_FALSE(s.ttft_ms.stddev.has_value());  // vLLM's is the population's; dyno's the sample's
  EXPECT_DOUBLE_EQ(*s.e2e_ms.p99, 1990.0);
  // TPOT (vLLM divides latency − ttft, dyno last token − first token), ITL (no count) and the
  // throughputs (vLLM's duration is not dyno's service window) are not mapped.
  EXPECT_EQ(s.tpot_ms.count, 0u);
  EXPECT_FALSE(s.tpot_ms.mean.has_value());
  EXPECT_FALSE(s.event_gap_ms.mean.has_value());
  EXPECT_FALSE(s.requests_per_s.has_value());
  EXPECT_FALSE(s.output_tokens_per_s.has_value());
  EXPECT_FALSE(s.service_window_s.has_value());
}

TEST(VllmBench, BadFilesNameTheFileAndWhere) {
  const std::string missing = error_of("missing_model_id.json");
  EXPECT_NE(missing.find("missing_model_id.json: $.model_id: missing"), std::string::npos)
      << missing;
  const std::string wrong = error_of("wrong_type_ttft.json");
  EXPECT_NE(wrong.find("wrong_type_ttft.json: $.ttfts[1]: expected a number"), std::string::npos)
      << wrong;
  const std::string shorter = error_of("short_itls.json");
  EXPECT_NE(shorter.find("$.itls: holds 3 elements; expected 4"), std::string::npos) << shorter;
  const std::string not_json = error_of("not_json.json");
  EXPECT_NE(not_json.find("not_json.json:7: not JSON"), std::string::npos) << not_json;
}

TEST(VllmBench, RefusesWhatItCannotRecordHonestly) {
  json::object o = json::parse(bytes_of("summary_only.json")).as_object();
  o["backend"] = "tgi";
  try {
    (void)read_vllm_bench(json::serialize(o), "tgi.json");
    FAIL() << "a backend that is neither chat nor completions was accepted";
  } catch (const ImportFileError& e) {
    EXPECT_NE(std::string(e.what()).find("tgi.json: $.backend: 'tgi'"), std::string::npos);
  }
  o["backend"] = "vllm";
  o["completed"] = 101;
  EXPECT_THROW((void)read_vllm_bench(json::serialize(o), "x.json"), ImportFileError);
  json::object d = json::parse(bytes_of("detailed.json")).as_object();
  d["ttfts"] = json::array{0.1, 1e300, 0.15, 0.0};  // would overflow the record's nanoseconds
  try {
    (void)read_vllm_bench(json::serialize(d), "huge.json");
    FAIL() << "a ttft of 1e300 s was accepted";
  } catch (const ImportFileError& e) {
    EXPECT_NE(std::string(e.what()).find("huge.json: $.ttfts[1]: expected seconds from 0 to"),
              std::string::npos)
        << e.what();
  }
  d["ttfts"] = json::array{0.1, 0.2, 0.15, 0.0};
  d["itls"].as_array()[1].as_array()[0] = -0.1;  // a gap back in time
  EXPECT_THROW((void)read_vllm_bench(json::serialize(d), "neg.json"), ImportFileError);
  EXPECT_THROW((void)read_vllm_bench("[1, 2]", "list.json"), ImportFileError);
  EXPECT_THROW((void)read_vllm_bench("{} {}", "two.json"), ImportFileError);
}

TEST(ImportedRecord, DetailedRecordVerifiesAndComputesFiguresFromTraces) {
  dyno::testing::TempDir root;
  const std::string bytes = bytes_of("detailed.json");
  const auto out = dyno::interop::write_imported_run(read_vllm_bench(bytes, "detailed.json"),
                                                     "detailed.json", bytes, options(root.path()));
  const auto report = dyno::record::verify_run_dir(out.dir, true);
  for (const auto& p : report.problems) ADD_FAILURE() << p.path << ": " << p.message;
  const json::object m = read_json(out.dir / "manifest.json");
  const json::object& source = m.at("source").as_object();
  EXPECT_EQ(source.at("sha256").as_string(), dyno::digest::sha256_hex(bytes));
  EXPECT_EQ(source.at("file").as_string(), "detailed.json");
  EXPECT_TRUE(source.at("tool_version").is_null());
  EXPECT_EQ(dyno::record::read_file(out.dir / "evidence/detailed.json"), bytes);
  EXPECT_EQ(m.at("hardware").at("unknown").at("gpus").as_string(), "not in the imported file");
  EXPECT_EQ(m.at("load").at("mode").as_string(), "imported");
  EXPECT_EQ(m.at("workload").at("protocol").at("name").as_string(), "import");
  const json::object s = read_json(out.dir / "summary.json");
  EXPECT_EQ(s.at("status").as_string(), "partial");
  // W = earliest send (0) to the latest end (request 2: 0.25 + 0.4 s).
  EXPECT_NEAR(s.at("throughput").at("service_window_s").to_number<double>(), 0.65, 1e-9);
  EXPECT_NEAR(s.at("throughput").at("requests_per_s").to_number<double>(), 3 / 0.65, 1e-9);
  EXPECT_NEAR(s.at("latency_ms").at("tpot").at("p50").to_number<double>(), 100.0, 1e-6);
  EXPECT_EQ(s.at("requests").at("errors_by_category").at("imported").to_number<int>(), 1);
  EXPECT_EQ(dyno::record::read_requests(out.dir).size(), 4u);
}

TEST(ImportedRecord, PerRequestTimingHasNoWindowFigures) {
  dyno::testing::TempDir root;
  const std::string bytes = bytes_of("no_start_times.json");
  const auto out =
      dyno::interop::write_imported_run(read_vllm_bench(bytes, "no_start_times.json"),
                                        "no_start_times.json", bytes, options(root.path()));
  EXPECT_TRUE(dyno::record::verify_run_dir(out.dir, true).ok());
  const json::object s = read_json(out.dir / "summary.json");
  EXPECT_TRUE(s.at("throughput").at("service_window_s").is_null());
  EXPECT_TRUE(s.at("throughput").at("output_tokens_per_s").is_null());
  EXPECT_NEAR(s.at("latency_ms").at("ttft").at("p50").to_number<double>(), 150.0, 1e-6);
  EXPECT_EQ(s.at("import").at("timing").as_string(), "per_request");
}

TEST(ImportedRecord, SummaryOnlyRecordVerifiesWithoutRequests) {
  dyno::testing::TempDir root;
  const std::string bytes = bytes_of("summary_only.json");
  auto o = options(root.path());
  o.engine = "vllm";
  const auto out = dyno::interop::write_imported_run(read_vllm_bench(bytes, "summary_only.json"),
                                                     "summary_only.json", bytes, o);
  EXPECT_FALSE(fs::exists(out.dir / "requests.jsonl"));
  const auto report = dyno::record::verify_run_dir(out.dir, true);
  for (const auto& p : report.problems) ADD_FAILURE() << p.path << ": " << p.message;
  const json::object s = read_json(out.dir / "summary.json");
  EXPECT_TRUE(s.at("import").at("summary_only").as_bool());
  EXPECT_EQ(read_json(out.dir / "manifest.json").at("engine").at("name").as_string(), "vllm");
  // A summary that says summary_only in a record that is not imported does not pass.
  json::object m = read_json(out.dir / "manifest.json");
  m.erase("source");
  dyno::record::write_file_atomic(out.dir / "manifest.json", json::serialize(m));
  dyno::record::write_sha256sums(out.dir);
  EXPECT_FALSE(dyno::record::verify_run_dir(out.dir, false).ok());
}

TEST(ImportedRecord, SameBytesAreADuplicateOtherBytesAreNot) {
  dyno::testing::TempDir root;
  const std::string bytes = bytes_of("summary_only.json");
  const auto r = read_vllm_bench(bytes, "summary_only.json");
  const auto a =
      dyno::interop::write_imported_run(r, "summary_only.json", bytes, options(root.path()));
  const auto b = dyno::interop::write_imported_run(r, "copy.json", bytes, options(root.path()));
  const std::string other = bytes + "\n";
  const auto c = dyno::interop::write_imported_run(read_vllm_bench(other, "c.json"), "c.json",
                                                   other, options(root.path()));
  const auto key = [](const fs::path& dir) {
    return dyno::store::duplicate_key(read_json(dir / "manifest.json"));
  };
  EXPECT_EQ(key(a.dir), key(b.dir));
  EXPECT_NE(key(a.dir), key(c.dir));
  EXPECT_NE(key(a.dir).find(a.sha256), std::string::npos);
}

TEST(ImportedRecord, NothingIsLeftWhenTheRecordCannotBeMade) {
  dyno::testing::TempDir root;
  json::object o = json::parse(bytes_of("summary_only.json")).as_object();
  o["model_id"] = "";
  const std::string bytes = json::serialize(o);
  EXPECT_THROW((void)dyno::interop::write_imported_run(read_vllm_bench(bytes, "m.json"), "m.json",
                                                       bytes, options(root.path())),
               ImportFileError);
  EXPECT_TRUE(fs::is_empty(root.path()));
  // A write that fails half-way (evidence/. cannot be a file) removes the run directory.
  const std::string good = bytes_of("summary_only.json");
  EXPECT_THROW((void)dyno::interop::write_imported_run(read_vllm_bench(good, "s.json"), ".", good,
                                                       options(root.path())),
               dyno::record::RecordError);
  EXPECT_TRUE(fs::is_empty(root.path()));
}

}  // namespace

namespace {

void golden_of(const std::string& name) {
  const std::string bytes = bytes_of(name);
  dyno::testing::expect_import_golden("vllm-bench/" + fs::path(name).stem().string(),
                                      dyno::interop::read_import("vllm-bench", bytes, name, {}),
                                      name, bytes);
}

TEST(ImportGolden, VllmBenchDetailed) { golden_of("detailed.json"); }
TEST(ImportGolden, VllmBenchNoStartTimes) { golden_of("no_start_times.json"); }
TEST(ImportGolden, VllmBenchSummaryOnly) { golden_of("summary_only.json"); }

}  // namespace

namespace {

TEST(ImportedRecord, SecretsInTheFileNeverReachTheRecord) {
  dyno::testing::TempDir root;
  json::object o = json::parse(bytes_of("summary_only.json")).as_object();
  o["api_key"] = "sk-live-SECRET123";  // a tool's saved settings, as some tools keep them
  o["extra_headers"] = json::object{{"Authorization", "Bearer sk-live-SECRET123"}};
  const std::string bytes = json::serialize(o);
  const auto out = dyno::interop::write_imported_run(read_vllm_bench(bytes, "s.json"), "s.json",
                                                     bytes, options(root.path()));
  const auto report = dyno::record::verify_run_dir(out.dir, true);
  for (const auto& p : report.problems) ADD_FAILURE() << p.path << ": " << p.message;
  for (const auto& e : fs::recursive_directory_iterator(out.dir)) {
    if (!e.is_regular_file()) continue;
    EXPECT_EQ(dyno::record::read_file(e.path()).find("SECRET123"), std::string::npos) << e.path();
  }
  const json::object m = read_json(out.dir / "manifest.json");
  // The source is still the file as it was (its digest names it; duplicates are found by it).
  EXPECT_EQ(m.at("source").at("sha256").as_string(), dyno::digest::sha256_hex(bytes));
  EXPECT_TRUE(m.at("source").at("evidence_redacted").as_bool());
  EXPECT_NE(dyno::record::read_file(out.dir / "evidence/s.json").find("<scrubbed:secret>"),
            std::string::npos);
}

TEST(ImportedRecord, ASecretTheServerEchoedInAnAnswerNeverReachesRequests) {
  dyno::testing::TempDir root;
  json::object o = json::parse(bytes_of("detailed.json")).as_object();
  o["generated_texts"].as_array()[0] = "your header was Authorization: Bearer sk-live-SECRET123";
  o["errors"].as_array()[3] = "401: bad key api_key=sk-live-SECRET123";
  const std::string bytes = json::serialize(o);
  const auto out = dyno::interop::write_imported_run(read_vllm_bench(bytes, "e.json"), "e.json",
                                                     bytes, options(root.path()));
  EXPECT_TRUE(dyno::record::verify_run_dir(out.dir, true).ok());
  for (const auto& e : fs::recursive_directory_iterator(out.dir)) {
    if (!e.is_regular_file()) continue;
    EXPECT_EQ(dyno::record::read_file(e.path()).find("SECRET123"), std::string::npos) << e.path();
  }
  EXPECT_EQ(dyno::record::read_requests(out.dir).size(), 4u);
}

}  // namespace
