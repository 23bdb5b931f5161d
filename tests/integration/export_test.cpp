// `dyno export` end to end: a `dyno run` against the embedded sim, exported as vllm-bench and
// imported back with `dyno import vllm-bench`, gives the same figures; `dyno export csv` of two
// runs parses back (RFC 4180) with the identity and summary columns; bad runs and bad -o
// paths exit with the documented codes, naming what is wrong.
#include <unistd.h>

#include "integration/integration_fixture.h"
#include "record/run_writer.h"

using namespace dyno::integration;  // the fixture, fs, json, Child, read_json(l)

namespace {

class Export : public Integration {
 protected:
  std::string run_id(const Outcome& o) { return o.run_dir.filename().string(); }
};

const json::value* at_path(const json::object& o, const std::string& dotted) {
  const json::object* cur = &o;
  std::size_t from = 0;
  while (true) {
    const std::size_t dot = dotted.find('.', from);
    const json::value* v = cur->if_contains(dotted.substr(from, dot - from));
    if (v == nullptr || dot == std::string::npos) return v;
    if (!v->is_object()) return nullptr;
    cur = &v->get_object();
    from = dot + 1;
  }
}

/// RFC 4180 records (CRLF line ends, quoted fields with doubled quotes).
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1, std::vector<std::string>(1));
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    std::string& field = rows.back().back();
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().emplace_back();
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      rows.emplace_back(1);
      ++i;
    } else {
      field += c;
    }
  }
  if (rows.back().size() == 1 && rows.back()[0].empty()) rows.pop_back();
  return rows;
}

TEST_F(Export, VllmBenchOfASimRunImportsBackToTheSameFigures) {
  const Outcome run = run_dyno({"-n", "16", "-c", "4", "--output-tokens", "12", "--warmup", "2",
                                "--telemetry", "off", "--keep-outputs"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string file = (dir_ / "vllm.json").string();
  const Outcome exp =
      dyno({"export", "vllm-bench", run_id(run), "-o", file, "--runs-root", runs()});
  ASSERT_EQ(exp.exit_code, 0) << exp.err;
  EXPECT_NE(exp.out.find("wrote " + file), std::string::npos) << exp.out;
  const json::object v = read_json(file);
  EXPECT_EQ(v.at("num_prompts").to_number<int>(), 16);  // warm-up left out
  EXPECT_EQ(v.at("backend").as_string(), "openai-chat");
  EXPECT_EQ(v.at("generated_texts").as_array().size(), 16u);

  const Outcome imp = dyno({"import", "vllm-bench", file, "--runs-root", runs(), "--json"});
  ASSERT_EQ(imp.exit_code, 0) << imp.err;
  const std::string back(json::parse(imp.out).as_array().at(0).at("run_id").as_string());
  const json::object a = read_json(run.run_dir / "summary.json");
  const json::object b = read_json(dir_ / "runs" / back / "summary.json");
  std::vector<std::string> keys = {"requests.total",
                                   "requests.ok",
                                   "requests.failed",
                                   "tokens.input_total",
                                   "tokens.output_total",
                                   "throughput.service_window_s",
                                   "throughput.output_tokens_per_s",
                                   "throughput.input_tokens_per_s",
                                   "throughput.requests_per_s",
                                   "throughput.decode_tokens_per_s",
                                   "throughput.achieved_concurrency"};
  for (const char* d :
       {"latency_ms.ttft", "latency_ms.e2e", "latency_ms.tpot", "latency_ms.event_gap",
        "latency_ms.queue_delay", "rates_tok_s.decode_rate_per_user", "lengths_tokens.output"}) {
    for (const char* s : {"count", "mean", "min", "p50", "p90", "p99", "max"}) {
      keys.push_back(std::string(d) + "." + s);
    }
  }
  for (const std::string& k : keys) {
    const json::value* x = at_path(a, k);
    const json::value* y = at_path(b, k);
    ASSERT_TRUE(x != nullptr && y != nullptr) << k;
    ASSERT_TRUE(x->is_number()) << k << " is " << json::serialize(*x);
    ASSERT_TRUE(y->is_number()) << k << " is " << json::serialize(*y);
    const double p = x->to_number<double>(), q = y->to_number<double>();
    EXPECT_NEAR(p, q, 1e-5 * std::max(1.0, std::abs(p))) << k;  // docs/interop.md "Export"
  }
}

TEST_F(Export, CsvOfTwoRunsParsesBackWithItsColumns) {
  const Outcome a = run_dyno(
      {"-n", "6", "-c", "2", "--output-tokens", "4", "--telemetry", "off", "--label", "=closed"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const Outcome b = run_dyno(
      {"-n", "6", "--rate", "50", "--output-tokens", "4", "--telemetry", "off", "--label", "open"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const std::string file = (dir_ / "runs.csv").string();
  const Outcome exp =
      dyno({"export", "csv", run_id(a), run_id(b), "-o", file, "--runs-root", runs()});
  ASSERT_EQ(exp.exit_code, 0) << exp.err;
  const auto rows = parse_csv(dyno::record::read_file(file));
  ASSERT_EQ(rows.size(), 3u);
  const std::vector<std::string>& h = rows[0];
  const auto col = [&](const std::string& name) {
    const auto it = std::find(h.begin(), h.end(), name);
    EXPECT_NE(it, h.end()) << name;
    return static_cast<std::size_t>(it - h.begin());
  };
  const std::vector<std::string> identity = {
      "run_id",     "label",          "status",       "started_at", "model",
      "engine",     "engine_version", "protocol",     "cell",       "concurrency",
      "rate_per_s", "source_tool",    "source_format"};
  for (std::size_t i = 0; i < identity.size(); ++i) EXPECT_EQ(h[i], identity[i]);
  for (const auto& r : rows) EXPECT_EQ(r.size(), h.size());
  EXPECT_EQ(rows[1][col("run_id")], run_id(a));
  EXPECT_EQ(rows[2][col("run_id")], run_id(b));
  EXPECT_EQ(rows[1][col("label")], "'=closed");  // never a formula
  EXPECT_EQ(rows[1][col("concurrency")], "2");
  EXPECT_EQ(rows[1][col("rate_per_s")], "");
  EXPECT_EQ(rows[2][col("rate_per_s")], "50.0");
  EXPECT_EQ(rows[1][col("source_format")], "");  // a dyno run
  EXPECT_EQ(rows[1][col("engine")], "dyno-sim");
  for (std::size_t r = 1; r <= 2; ++r) {
    const json::object s = read_json((r == 1 ? a : b).run_dir / "summary.json");
    for (const char* k : {"throughput.output_tokens_per_s", "latency_ms.ttft.p50", "requests.ok",
                          "latency_ms.e2e.p99_9"}) {
      EXPECT_EQ(std::stod(rows[r][col(k)]), at_path(s, k)->to_number<double>()) << k;
    }
  }
}

TEST_F(Export, BadRunsAndOutputsExitWithWhatIsWrong) {
  const Outcome a = run_dyno({"-n", "3", "-c", "1", "--output-tokens", "3", "--telemetry", "off"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const Outcome b = run_dyno({"-n", "3", "-c", "1", "--output-tokens", "3", "--telemetry", "off"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const std::string out = (dir_ / "x.json").string();
  Outcome r = dyno({"export", "vllm-bench", "no-such-run", "-o", out, "--runs-root", runs()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no run 'no-such-run'"), std::string::npos) << r.err;
  r = dyno({"export", "vllm-bench", run_id(a), "--runs-root", runs()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-o"), std::string::npos) << r.err;
  r = dyno({"export", "csv", run_id(a), "-o", (dir_ / "none" / "x.csv").string(), "--runs-root",
            runs()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
  // Several runs as vllm-bench: -o is a directory; an existing file is refused.
  std::ofstream(out) << "x";
  r = dyno({"export", "vllm-bench", run_id(a), run_id(b), "-o", out, "--runs-root", runs()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is a file"), std::string::npos) << r.err;
  const fs::path many = dir_ / "many";
  r = dyno(
      {"export", "vllm-bench", run_id(a), run_id(b), "-o", many.string(), "--runs-root", runs()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(many / (run_id(a) + ".json")));
  EXPECT_TRUE(fs::exists(many / (run_id(b) + ".json")));
  // A tampered record is refused.
  const fs::path summary = a.run_dir / "summary.json";
  std::string text = dyno::record::read_file(summary.string());
  text.insert(text.find('{') + 1, " ");
  fs::remove(summary);
  std::ofstream(summary) << text;
  r = dyno({"export", "csv", run_id(a), "-o", (dir_ / "t.csv").string(), "--runs-root", runs()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("fails `dyno runs verify`"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "t.csv"));
  fs::remove(summary);
  std::ofstream(summary) << text.erase(text.find('{') + 1, 1);  // put it back as it was
  // An -o that cannot be written: exit 1, naming it.
  if (::geteuid() != 0) {  // root writes anywhere
    const fs::path locked = dir_ / "locked";
    fs::create_directory(locked);
    fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
    r = dyno(
        {"export", "csv", run_id(b), "-o", (locked / "x.csv").string(), "--runs-root", runs()});
    fs::permissions(locked, fs::perms::owner_all);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find((locked / "x.csv").string()), std::string::npos) << r.err;
  }
}

}  // namespace
