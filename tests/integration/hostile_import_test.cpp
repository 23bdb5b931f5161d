// Hostile input to `dyno import`, through the binary (issue 32, "Hostile input, round three";
// docs/reliability.md "Round three: imports"): a count the file does not give is null, never 0;
// one file of many results keeps its evidence once; an interrupt leaves nothing partial;
// secrets never reach a record; odd file names still verify; token totals that overflow,
// duplicate keys, a num_prompts the arrays contradict and files that are not regular files
// exit 2 naming the file and the key. Each test has its own temporary directory.
#include <sys/stat.h>
#include <sys/types.h>

#include "integration/integration_fixture.h"

using namespace dyno::integration;  // the fixture, fs, json, Child, read_json(l)

namespace {

const fs::path kData = fs::path(DYNO_SOURCE_DIR) / "tests/record/data";

class HostileImport : public Integration {
 protected:
  /// Writes `text` to <dir>/<name>; returns its path.
  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  static std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  static json::object parse_file(const fs::path& p) { return json::parse(slurp(p)).as_object(); }
  /// The run ids a `--json` import printed.
  static std::vector<std::string> ids_of(const Outcome& o) {
    std::vector<std::string> ids;
    const json::value rows = json::parse(o.out);
    for (const auto& row : rows.as_array()) {
      ids.emplace_back(row.at("run_id").as_string());
    }
    return ids;
  }
  void expect_verifies(const std::string& id) {
    const Outcome v = dyno({"runs", "verify", id, "--runs-root", runs()});
    EXPECT_EQ(v.exit_code, 0) << id << "\n" << v.out << v.err;
  }
  /// Nothing of an import in the store: no run directory, no staging directory.
  void expect_store_empty() {
    if (!fs::is_directory(dir_ / "runs")) return;
    for (const auto& e : fs::directory_iterator(dir_ / "runs")) {
      EXPECT_FALSE(e.is_directory()) << "left behind: " << e.path();
    }
  }
  /// Every file of a record as one text.
  static std::string record_text(const fs::path& run) {
    std::string all;
    for (const auto& e : fs::recursive_directory_iterator(run)) {
      if (e.is_regular_file()) all += slurp(e.path()) + "\n";
    }
    return all;
  }
};

/// The value at a dotted path of `o` (nullptr when absent).
const json::value* at_path(const json::object& o, const std::string& path) {
  const json::object* at = &o;
  std::size_t from = 0;
  for (;;) {
    const std::size_t dot = path.find('.', from);
    const json::value* v = at->if_contains(path.substr(from, dot - from));
    if (v == nullptr || dot == std::string::npos) return v;
    if (!v->is_object()) return nullptr;
    at = &v->get_object();
    from = dot + 1;
  }
}

// (B6) Every format, from a file that lacks some counts: what it does not give is null.
TEST_F(HostileImport, NoImportWritesZeroForACountItsFileDoesNotGive) {
  json::object aiperf = parse_file(kData / "aiperf/profile_export_aiperf.json");
  aiperf.erase("total_isl");
  aiperf.erase("total_osl");
  const std::string aiperf_file = write("aggregate_no_totals.json", json::serialize(aiperf));
  json::object vllm = parse_file(kData / "vllm_bench/summary_only.json");
  for (const char* k : {"mean_e2el_ms", "median_e2el_ms", "std_e2el_ms", "p99_e2el_ms"}) {
    vllm.erase(k);
  }
  const std::string vllm_file = write("vllm_no_e2e.json", json::serialize(vllm));
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> null_paths;  // summary.json counts the file does not give
  };
  const std::vector<Case> cases{
      {{"llama-bench", (kData / "llama_bench/old.csv").string()},
       {"requests.total", "requests.ok", "tokens.input_total", "tokens.output_total"}},
      {{"sglang-bench", (kData / "sglang_bench/summary_only.jsonl").string(), "--model", "m"},
       {"requests.total", "requests.failed"}},
      {{"aiperf", aiperf_file}, {"tokens.input_total", "tokens.output_total"}},
      {{"guidellm", (kData / "guidellm/sampled.json").string()},
       {"tokens.input_total", "tokens.output_total"}},
      {{"vllm-bench", vllm_file}, {"latency_ms.e2e.count"}},
      {{"table", (kData / "table/ledger.csv").string(), "--api", "chat", "--map", "Model=model",
        "--map", "Output tok/s=throughput.output_tokens_per_s"},
       {"requests.total", "requests.ok", "requests.failed", "tokens.output_total"}},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args{"import"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    args.insert(args.end(), {"--runs-root", runs(), "--json"});
    const Outcome o = dyno(args);
    ASSERT_EQ(o.exit_code, 0) << c.args[0] << ": " << o.err;
    for (const std::string& id : ids_of(o)) {
      SCOPED_TRACE(c.args[0] + " " + id);
      expect_verifies(id);
      const json::object s = read_json(dir_ / "runs" / id / "summary.json");
      const json::object m = read_json(dir_ / "runs" / id / "manifest.json");
      for (const std::string& p : c.null_paths) {
        const json::value* v = at_path(s, p);
        ASSERT_NE(v, nullptr) << p;
        EXPECT_TRUE(v->is_null()) << p << " is " << json::serialize(*v) << ", not null";
      }
      // No count of a summary-only record is a 0 standing for "not in the file": each of
      // these files says some request completed, so a 0 here could only be a placeholder.
      if (!s.at("import").at("summary_only").as_bool()) continue;
      std::vector<std::string> counts{"requests.total", "requests.ok", "tokens.input_total",
                                      "tokens.output_total"};
      for (const char* sec : {"latency_ms", "rates_tok_s", "lengths_tokens"}) {
        for (const auto& kv : s.at(sec).as_object()) {
          counts.push_back(std::string(sec) + "." + std::string(kv.key()) + ".count");
        }
      }
      if (const json::value* t = at_path(s, "server.timings"); t != nullptr && t->is_object()) {
        for (const char* d : {"prefill_rate", "decode_rate_per_user"}) {
          const json::object& dist = t->at(d).as_object();
          bool any = false;
          for (const auto& kv : dist) any = any || (kv.key() != "count" && !kv.value().is_null());
          if (any) counts.push_back(std::string("server.timings.") + d + ".count");
        }
      }
      for (const std::string& p : counts) {
        const json::value* v = at_path(s, p);
        if (v != nullptr && v->is_number()) {
          EXPECT_NE(v->to_number<double>(), 0.0) << p;
        }
      }
      const json::value& stream_count = m.at("workload").at("request_stream").at("count");
      if (stream_count.is_number()) {
        EXPECT_GT(stream_count.to_number<double>(), 0.0);
      }
    }
  }
}

/// A llama-bench CSV of `rows` tests (pp512 each, different build numbers).
std::string llama_csv(std::size_t rows, const std::string& extra_model = "") {
  std::string csv =
      "build_commit,build_number,model_filename,n_prompt,n_gen,test_time,avg_ns,stddev_ns,avg_ts,"
      "stddev_ts\n";
  for (std::size_t i = 0; i < rows; ++i) {
    csv += "\"abc1234\",\"" + std::to_string(4000 + i) + "\",\"models/m" + extra_model +
           ".gguf\",\"512\",\"0\",\"2025-01-01T00:00:00Z\",\"200000000\",\"1000\",\"2560.0\","
           "\"1.0\"\n";
  }
  return csv;
}

// (2) One file of many results: its evidence is on disk once, every record verifies.
TEST_F(HostileImport, OneFileOfManyResultsKeepsItsEvidenceOnce) {
  const std::string file = write("many.csv", llama_csv(40));
  const Outcome o = dyno({"import", "llama-bench", file, "--runs-root", runs(), "--json"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const std::vector<std::string> ids = ids_of(o);
  ASSERT_EQ(ids.size(), 40u);
  std::set<ino_t> inodes;
  for (const std::string& id : ids) {
    struct stat st {};
    const fs::path ev = dir_ / "runs" / id / "evidence" / "many.csv";
    ASSERT_EQ(::stat(ev.c_str(), &st), 0) << ev;
    inodes.insert(st.st_ino);
    EXPECT_EQ(st.st_nlink, 40u);
  }
  EXPECT_EQ(inodes.size(), 1u);  // one copy, linked into every record
  expect_verifies(ids.front());
  expect_verifies(ids.back());
  const Outcome all = dyno({"runs", "verify", "--all", "--runs-root", runs()});
  EXPECT_EQ(all.exit_code, 0) << all.out << all.err;
  for (const auto& e : fs::directory_iterator(dir_ / "runs")) {
    EXPECT_FALSE(e.path().filename().string().starts_with(".import-")) << e.path();
  }
}

// (2) SIGTERM while the records are written: exit 130, nothing in the store.
TEST_F(HostileImport, SigtermLeavesNoPartialImport) {
  const std::string file = write("big.csv", llama_csv(20000));
  Child c({DYNO_BINARY, "import", "llama-bench", file, "--runs-root", runs()},
          (dir_ / "cmd.out").string(), (dir_ / "cmd.err").string());
  // Wait until records are being written into the staging directory, then interrupt.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool writing = false;
  while (!writing && std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_ / "runs", ec)) {
      if (e.path().filename().string().starts_with(".import-") &&
          std::distance(fs::directory_iterator(e.path(), ec), fs::directory_iterator()) > 5) {
        writing = true;
      }
    }
    if (!writing) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(writing) << "the import never started writing: " << c.err();
  c.signal(SIGTERM);
  EXPECT_EQ(c.wait(std::chrono::seconds(30)), 130) << c.err();
  EXPECT_NE(c.err().find("nothing was imported"), std::string::npos) << c.err();
  expect_store_empty();
}

// (9) Bare sk-… keys and a URL's password never reach requests.jsonl, file_fields or the
// evidence copy.
TEST_F(HostileImport, BareKeysAndUrlPasswordsNeverReachTheRecord) {
  const std::string key = "sk-proj-Q7zX9aB3cD4eF5gH6iJ7kL8mN9";
  const std::string password = "hunter2Secret";
  json::object o = parse_file(kData / "vllm_bench/detailed.json");
  o["generated_texts"].as_array()[0] = "the key is " + key + " (do not share)";
  o["errors"].as_array()[3] = "401 for " + key;
  o["tokenizer_id"] = key;                                           // kept in source.file_fields
  o["base_url"] = "http://admin:" + password + "@10.1.2.3:8000/v1";  // evidence only
  const std::string file = write("leaky.json", json::serialize(o));
  const Outcome out = dyno({"import", "vllm-bench", file, "--runs-root", runs(), "--json"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  const std::string id = ids_of(out).front();
  expect_verifies(id);
  const std::string all = record_text(dir_ / "runs" / id);
  EXPECT_EQ(all.find("Q7zX9aB3"), std::string::npos);
  EXPECT_EQ(all.find(password), std::string::npos);
  EXPECT_NE(all.find("<scrubbed:secret>"), std::string::npos);
  EXPECT_EQ(out.out.find("Q7zX9aB3"), std::string::npos);
  const json::object m = read_json(dir_ / "runs" / id / "manifest.json");
  EXPECT_TRUE(m.at("source").at("evidence_redacted").as_bool());
}

// (10) A file name with a newline, or ending in .tmp: the record is kept under a safe name and
// verifies.
TEST_F(HostileImport, OddFileNamesImportIntoRecordsThatVerify) {
  const std::string bytes = slurp(kData / "vllm_bench/summary_only.json");
  for (const std::string& name : {std::string("two\nlines.json"), std::string("result.tmp"),
                                  std::string("back\\slash\x01.json")}) {
    const std::string file = write(name, bytes);
    const Outcome o = dyno({"import", "vllm-bench", file, "--runs-root", runs(), "--json"});
    ASSERT_EQ(o.exit_code, 0) << o.err;
    const std::string id = ids_of(o).front();
    expect_verifies(id);
    const json::object m = read_json(dir_ / "runs" / id / "manifest.json");
    const std::string kept(m.at("evidence").as_array()[0].at("path").as_string());
    EXPECT_EQ(kept.find('\n'), std::string::npos) << kept;
    EXPECT_FALSE(kept.ends_with(".tmp")) << kept;
    EXPECT_TRUE(fs::is_regular_file(dir_ / "runs" / id / kept)) << kept;
  }
}

// (11) Token counts past what one request (or the run) could hold: exit 2 naming file and key.
TEST_F(HostileImport, OverflowingTokenCountsExit2NamingFileAndKey) {
  json::object total = parse_file(kData / "vllm_bench/summary_only.json");
  total["total_input_tokens"] = INT64_MAX;
  json::object lens = parse_file(kData / "vllm_bench/detailed.json");
  lens["input_lens"].as_array()[0] = INT64_MAX;
  lens["input_lens"].as_array()[1] = INT64_MAX;
  const json::array tests = json::parse(slurp(kData / "llama_bench/tests.json")).as_array();
  json::array big = tests;
  big[0].as_object()["n_prompt"] = INT64_MAX;
  const std::string csv = llama_csv(1);
  std::string csv_big = csv;
  csv_big.replace(csv_big.find("\"512\""), 5, "\"9223372036854775807\"");
  struct Case {
    std::string format, name, text, key;
  };
  const std::vector<Case> cases{
      {"vllm-bench", "total.json", json::serialize(total), "$.total_input_tokens"},
      {"vllm-bench", "lens.json", json::serialize(lens), "$.input_lens[0]"},
      {"llama-bench", "tests.json", json::serialize(big), "n_prompt"},
      {"llama-bench", "tests.csv", csv_big, "n_prompt"},
  };
  for (const Case& c : cases) {
    const std::string file = write(c.name, c.text);
    const Outcome o = dyno({"import", c.format, file, "--runs-root", runs()});
    EXPECT_EQ(o.exit_code, 2) << c.name << ": " << o.out << o.err;
    EXPECT_NE(o.err.find(c.name), std::string::npos) << o.err;
    EXPECT_NE(o.err.find(c.key), std::string::npos) << o.err;
  }
  expect_store_empty();
}

// (14) A FIFO, /dev/zero, a directory: exit 2 at once, naming the path and what it is.
TEST_F(HostileImport, OnlyRegularFilesAreRead) {
  const std::string fifo = (dir_ / "pipe.json").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_directories(dir_ / "adir");
  struct Case {
    std::string path, words;
  };
  for (const Case& c : {Case{fifo, "FIFO"}, Case{"/dev/zero", "character device"},
                        Case{(dir_ / "adir").string(), "is a directory"}}) {
    Child child({DYNO_BINARY, "import", "vllm-bench", c.path, "--runs-root", runs()},
                (dir_ / "cmd.out").string(), (dir_ / "cmd.err").string());
    const auto start = std::chrono::steady_clock::now();
    const int rc = child.wait(std::chrono::seconds(20));
    if (rc == -1) child.signal(SIGKILL);
    EXPECT_EQ(rc, 2) << c.path << ": " << child.err();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    EXPECT_NE(child.err().find(c.path), std::string::npos) << child.err();
    EXPECT_NE(child.err().find(c.words), std::string::npos) << child.err();
  }
  expect_store_empty();
}

// (17) A key given twice is refused, naming it; num_prompts must match the per-request arrays.
TEST_F(HostileImport, DuplicateKeysAndInconsistentNumPromptsExit2) {
  std::string dup = slurp(kData / "vllm_bench/summary_only.json");
  dup.insert(dup.find('{') + 1, "\"completed\": 1, ");
  const std::string nested =
      "{\"backend\": \"vllm\", \"model_id\": \"m\", \"num_prompts\": 1, \"duration\": 1,"
      " \"completed\": 1, \"total_input_tokens\": 1, \"total_output_tokens\": 1,"
      " \"extra\": [{\"a\": 1}, {\"b\": 1, \"b\": 2}]}";
  json::object fewer = parse_file(kData / "vllm_bench/detailed.json");
  fewer["num_prompts"] = 5;
  fewer["failed"] = 2;
  std::string sglang = slurp(kData / "sglang_bench/summary_only.jsonl");
  sglang.insert(sglang.find('{') + 1, "\"tag\": \"x\", ");
  struct Case {
    std::string format, name, text, words;
  };
  const std::vector<Case> cases{
      {"vllm-bench", "dup.json", dup, "$: the key 'completed' appears twice"},
      {"vllm-bench", "nested.json", nested, "$.extra[1]: the key 'b' appears twice"},
      {"vllm-bench", "fewer.json", json::serialize(fewer), "$.num_prompts"},
      {"sglang-bench", "dup.jsonl", sglang, "dup.jsonl:1: $: the key 'tag' appears twice"},
  };
  for (const Case& c : cases) {
    const std::string file = write(c.name, c.text);
    const Outcome o = dyno({"import", c.format, file, "--runs-root", runs(), "--model", "m"});
    EXPECT_EQ(o.exit_code, 2) << c.name << ": " << o.out << o.err;
    EXPECT_NE(o.err.find(c.words), std::string::npos) << c.name << ": " << o.err;
  }
  expect_store_empty();
}

}  // namespace
