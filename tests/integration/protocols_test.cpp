// The protocols and the stream imports end to end, through the `dyno` binary.
#include "integration/integration_fixture.h"

using namespace dyno::integration;  // the fixture, fs, json, Child, read_json(l)

// ---------------------------------------------------------------------------------------------
// Protocols (embedded simulated engine: one engine for every cell).

namespace {

class Protocols : public Integration {
 protected:
  /// Runs `dyno <protocol> …` with --json; returns the campaign document.
  json::object run_protocol(std::vector<std::string> args, int expected_exit = 0) {
    std::vector<std::string> argv = {DYNO_BINARY, args.front(),  "--json",
                                     "-q",        "--runs-root", (dir_ / "runs").string()};
    argv.insert(argv.end(), args.begin() + 1, args.end());
    Child c(argv, (dir_ / "p.out").string(), (dir_ / "p.err").string());
    EXPECT_EQ(c.wait(), expected_exit) << c.err();
    json::object doc = json::parse(c.out()).as_object();
    EXPECT_TRUE(fs::exists(std::string(doc.at("campaign_file").as_string())));
    return doc;
  }

  /// The records of a cell, checked, with their manifests.
  std::vector<json::object> cell_manifests(const json::object& cell) {
    std::vector<json::object> out;
    for (const auto& run : cell.at("runs").as_array()) {
      const fs::path dir = dir_ / "runs" / std::string(run.at("run_id").as_string());
      check_record(dir);
      out.push_back(read_json(dir / "manifest.json"));
    }
    return out;
  }
};

TEST_F(Protocols, SweepHoldsEachConcurrencyAndGroupsCellsInACampaign) {
  const json::object doc =
      run_protocol({"sweep", "--concurrencies", "1,4", "--min-requests", "6", "--per-slot", "3",
                    "--output-tokens", "16", "--input-tokens", "32"});
  EXPECT_EQ(doc.at("status").as_string(), "ok");
  EXPECT_EQ(doc.at("protocol").at("name").as_string(), "sweep");
  const auto& cells = doc.at("cells").as_array();
  ASSERT_EQ(cells.size(), 2u);
  const std::string campaign(doc.at("campaign_id").as_string());
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const auto& cell = cells[i].as_object();
    const std::int64_t c = i == 0 ? 1 : 4;
    EXPECT_EQ(cell.at("cell").as_string(), "c" + std::to_string(c));
    const auto manifests = cell_manifests(cell);
    ASSERT_EQ(manifests.size(), 1u);
    const auto& m = manifests[0];
    EXPECT_EQ(m.at("campaign").as_string(), campaign);
    EXPECT_EQ(m.at("workload").at("protocol").at("name").as_string(), "sweep");
    EXPECT_EQ(m.at("workload").at("protocol").at("cell").as_string(), cell.at("cell").as_string());
    EXPECT_EQ(m.at("load").at("concurrency").as_int64(), c);
    // max(min_requests, k * C): 6 for C=1, 12 for C=4.
    EXPECT_EQ(m.at("load").at("requests").as_int64(), std::max<std::int64_t>(6, 3 * c));
    const auto& figures = cell.at("figures").as_object();
    EXPECT_GT(figures.at("achieved_concurrency").at("median").as_double(),
              0.8 * static_cast<double>(c));
    EXPECT_GT(figures.at("output_tokens_per_s").at("median").as_double(), 0.0);
    EXPECT_EQ(cell.at("selected_run"), cell.at("runs").as_array()[0].at("run_id"));
  }
}

TEST_F(Protocols, RateSweepRunsOneOpenLoopCellPerRate) {
  const json::object doc =
      run_protocol({"sweep", "--rates", "20,40", "--rate-duration", "0.5", "--arrival", "constant",
                    "--output-tokens", "8", "--input-tokens", "16"});
  const auto& cells = doc.at("cells").as_array();
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[0].at("cell").as_string(), "r20");
  EXPECT_EQ(cells[1].at("cell").as_string(), "r40");
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const auto manifests = cell_manifests(cells[i].as_object());
    const auto& load = manifests[0].at("load");
    EXPECT_EQ(load.at("mode").as_string(), "open");
    EXPECT_EQ(load.at("rate_per_s").as_double(), i == 0 ? 20.0 : 40.0);
    // 0.5 s at R req/s, constant arrivals: R/2 requests.
    EXPECT_EQ(cells[i].at("figures").at("requests_ok").at("median").as_double(),
              i == 0 ? 10.0 : 20.0);
  }
}

TEST_F(Protocols, LadderKeepsEveryRepetitionAndSelectsTheMedian) {
  const json::object doc = run_protocol({"ladder", "--depths", "0,1500", "--prefill-sizes", "600",
                                         "--decode-tokens", "12", "--repeat", "3"});
  const auto& cells = doc.at("cells").as_array();
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(cells[0].at("cell").as_string(), "decode@0");
  EXPECT_EQ(cells[1].at("cell").as_string(), "decode@1500");
  EXPECT_EQ(cells[2].at("cell").as_string(), "prefill@600");
  std::set<std::string> prompts;
  for (const auto& cv : cells) {
    const auto& cell = cv.as_object();
    const auto manifests = cell_manifests(cell);
    ASSERT_EQ(manifests.size(), 3u);
    for (const auto& m : manifests) {
      prompts.insert(std::string(m.at("workload").at("request_stream").at("sha256").as_string()));
      EXPECT_EQ(m.at("workload").at("protocol").at("repetitions").as_int64(), 3);
    }
    const auto& figures = cell.at("figures").as_object();
    for (const char* f : {"input_tokens", "ttft_ms", "prefill_tok_s"}) {
      const auto& s = figures.at(f).as_object();
      EXPECT_LE(s.at("min").as_double(), s.at("median").as_double()) << f;
      EXPECT_LE(s.at("median").as_double(), s.at("max").as_double()) << f;
    }
    // The selected run is one of the three, and its metric is the median one.
    const std::string selected(cell.at("selected_run").as_string());
    bool found = false;
    for (const auto& r : cell.at("runs").as_array())
      found |= r.at("run_id").as_string() == selected;
    EXPECT_TRUE(found);
  }
  // Decode cells measured decoding; the prefill cell asked for one token only.
  EXPECT_GT(cells[1].at("figures").at("decode_tok_s").at("median").as_double(), 0.0);
  // Exact prompt lengths through the engine's /tokenize (chat template included).
  EXPECT_EQ(cells[1].at("figures").at("input_tokens").at("min").as_double(), 1500.0);
  EXPECT_EQ(cells[1].at("figures").at("input_tokens").at("max").as_double(), 1500.0);
  EXPECT_EQ(cells[2].at("figures").at("input_tokens").at("median").as_double(), 600.0);
  EXPECT_EQ(doc.at("protocol").at("params").at("prompt_lengths").as_string(), "exact");
  EXPECT_TRUE(cells[2].at("figures").at("decode_tok_s").at("median").is_null());
  // Every repetition sent a prompt of its own (no prefix-cache hits between them).
  EXPECT_EQ(prompts.size(), 9u);
}

TEST_F(Protocols, SpeedRunsSoloAndBurstPerPassAndRepeatsTheFirstPass) {
  const json::object doc =
      run_protocol({"speed", "--passes", "fr,en,fr2", "--burst", "4", "--output-tokens", "10"});
  const auto& cells = doc.at("cells").as_array();
  ASSERT_EQ(cells.size(), 6u);
  std::map<std::string, std::string> stream_of;
  for (const auto& cv : cells) {
    const auto& cell = cv.as_object();
    const std::string name(cell.at("cell").as_string());
    const auto manifests = cell_manifests(cell);
    stream_of[name] =
        std::string(manifests[0].at("workload").at("request_stream").at("sha256").as_string());
    const auto& f = cell.at("figures").as_object();
    if (name.ends_with("/solo")) {
      EXPECT_GT(f.at("ttft_ms").at("median").as_double(), 0.0);
      EXPECT_GT(f.at("tok_s").at("median").as_double(), 0.0);
      EXPECT_EQ(f.at("ok").at("median").as_double(), 1.0);
    } else {
      EXPECT_EQ(f.at("ok").at("median").as_double(), 4.0);
      EXPECT_GT(f.at("p50_latency_s").at("median").as_double(), 0.0);
    }
  }
  EXPECT_EQ(cells[0].at("cell").as_string(), "fr/solo");
  // fr2 repeats fr's prompts (drift), en has its own.
  EXPECT_EQ(stream_of["fr2/agg"], stream_of["fr/agg"]);
  EXPECT_NE(stream_of["en/agg"], stream_of["fr/agg"]);
  // ...on purpose: a drift pass is a planned re-measurement, not a duplicate of fr's runs.
  Child list({DYNO_BINARY, "runs", "list", "--json", "--runs-root", (dir_ / "runs").string()},
             (dir_ / "list.out").string(), (dir_ / "list.err").string());
  ASSERT_EQ(list.wait(), 0) << list.err();
  const json::array rows = json::parse(list.out()).as_array();
  EXPECT_EQ(rows.size(), 6u);
  for (const auto& row : rows) EXPECT_TRUE(row.at("duplicate_of").is_null()) << row;
  // One discarded warm-up request before the first solo request, none later.
  const fs::path first =
      dir_ / "runs" / std::string(cells[0].at("runs").as_array()[0].at("run_id").as_string());
  const auto lines = read_jsonl(first / "requests.jsonl");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].at("phase").as_string(), "warmup");
  EXPECT_EQ(lines[1].at("phase").as_string(), "measured");
}

TEST_F(Protocols, RealGroupsRequestsByCase) {
  std::ofstream(dir_ / "cases.jsonl")
      << R"({"id":"d1","messages":[{"role":"user","content":"design a cache"}],"max_tokens":24,"tags":{"case":"design"}})"
      << "\n"
      << R"({"id":"r1","messages":[{"role":"user","content":"review this code"}],"max_tokens":24,"tags":{"case":"review"}})"
      << "\n";
  const json::object doc =
      run_protocol({"real", "--stream", (dir_ / "cases.jsonl").string(), "--repeat", "2"});
  const auto& cells = doc.at("cells").as_array();
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[0].at("cell").as_string(), "design");
  EXPECT_EQ(cells[1].at("cell").as_string(), "review");
  for (const auto& cv : cells) {
    EXPECT_EQ(cell_manifests(cv.as_object()).size(), 2u);
    EXPECT_EQ(cv.at("figures").at("output_tokens").at("median").as_double(), 24.0);
  }
}

TEST_F(Protocols, ScoredRequestsKeepTheirOutputsAndReportAccuracy) {
  std::ofstream(dir_ / "qa.jsonl")
      << R"({"id":"q1","messages":[{"role":"user","content":"2+2?"}],"max_tokens":6,"expected":"4","scorer":"relaxed_numeric"})"
      << "\n"
      << R"({"id":"q2","messages":[{"role":"user","content":"capital of France?"}],"max_tokens":6,"expected":"Paris","scorer":"normalized"})"
      << "\n";
  const Outcome o = run_dyno({"--stream", (dir_ / "qa.jsonl").string(), "-n", "2", "-c", "1"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto lines = check_record(o.run_dir);
  for (const auto& r : lines) {
    ASSERT_TRUE(r.contains("score"));
    EXPECT_FALSE(r.at("output_text").as_string().empty());  // kept without --keep-outputs
    // The simulated engine answers with pseudo-words: wrong, and scored as such.
    EXPECT_FALSE(r.at("score").at("correct").as_bool());
  }
  EXPECT_EQ(o.summary.at("quality").at("scored").as_int64(), 2);
  EXPECT_EQ(o.summary.at("quality").at("correct").as_int64(), 0);
  EXPECT_EQ(o.summary.at("quality").at("accuracy").as_double(), 0.0);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Streams from data sets, and images end to end.

namespace {

TEST_F(Integration, ImageQuestionsArriveIntactAtTheEngine) {
  // Two different images, imported as a ChartQA-style set.
  std::string png = dyno::workload::test::tiny_png();
  std::ofstream(dir_ / "a.png", std::ios::binary) << png;
  std::string png_b = png;
  png_b[png_b.size() - 20] = static_cast<char>(png_b[png_b.size() - 20] ^ 0x01);
  std::ofstream(dir_ / "b.png", std::ios::binary) << png_b;
  std::ofstream(dir_ / "qa.jsonl") << R"({"imgname":"a.png","query":"How many bars?","label":"3"})"
                                   << "\n"
                                   << R"({"imgname":"b.png","query":"Highest value?","label":"42"})"
                                   << "\n";
  const fs::path stream = dir_ / "stream.jsonl";
  Child imp({DYNO_BINARY, "stream", "import", "image-qa", (dir_ / "qa.jsonl").string(), "-o",
             stream.string(), "--max-tokens", "8", "--instruction", "Answer with a number."},
            (dir_ / "imp.out").string(), (dir_ / "imp.err").string());
  ASSERT_EQ(imp.wait(), 0) << imp.err();
  EXPECT_NE(imp.out().find("wrote 2 requests"), std::string::npos) << imp.out();

  const fs::path truth = dir_ / "truth.jsonl";
  const std::string url = start_sim({"--profile", "small-gpu", "--truth", truth.string()});
  const Outcome o = run_dyno(
      {"--url", url, "--model", "dyno-sim", "--stream", stream.string(), "-n", "2", "-c", "1"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  stop_sims();
  // The engine received exactly the bytes of each file.
  std::set<std::string> received;
  for (const auto& t : read_jsonl(truth)) {
    ASSERT_TRUE(t.contains("image_sha256"));
    for (const auto& h : t.at("image_sha256").as_array())
      received.insert(std::string(h.as_string()));
  }
  EXPECT_EQ(received, (std::set<std::string>{dyno::workload::test::openssl_sha256(png),
                                             dyno::workload::test::openssl_sha256(png_b)}));
  // Scored with ChartQA's relaxed rule; outputs kept for an audit.
  EXPECT_EQ(o.summary.at("quality").at("scored").as_int64(), 2);
  for (const auto& r : check_record(o.run_dir)) {
    EXPECT_EQ(r.at("score").at("scorer").as_string(), "relaxed_numeric");
  }
}

TEST_F(Integration, TableImportKeepsColumnsAndFailsClearlyOnAMissingOne) {
  std::ofstream(dir_ / "t.csv") << "qid,question,answer,lang\n"
                                << "q1,\"Say \"\"hi\"\", twice\",hi hi,en\n"
                                << "q2,Dis bonjour,bonjour,fr\n";
  const fs::path stream = dir_ / "t.jsonl";
  Child ok({DYNO_BINARY, "stream", "import", "table", (dir_ / "t.csv").string(), "-o",
            stream.string(), "--columns", "prompt=question,id=qid,expected=answer,tags=lang",
            "--scorer", "normalized", "--max-tokens", "4"},
           (dir_ / "i.out").string(), (dir_ / "i.err").string());
  ASSERT_EQ(ok.wait(), 0) << ok.err();
  const auto lines = read_jsonl(stream);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].at("id").as_string(), "q1");
  EXPECT_EQ(lines[0].at("messages").at(0).at("content").as_string(), "Say \"hi\", twice");
  EXPECT_EQ(lines[1].at("tags").at("lang").as_string(), "fr");
  const Outcome o = run_dyno({"--stream", stream.string(), "-n", "2", "-c", "2"});
  EXPECT_EQ(o.exit_code, 0) << o.err;

  Child bad({DYNO_BINARY, "stream", "import", "table", (dir_ / "t.csv").string(), "-o",
             (dir_ / "x.jsonl").string(), "--columns", "prompt=prompt_text"},
            (dir_ / "b.out").string(), (dir_ / "b.err").string());
  EXPECT_EQ(bad.wait(), 2);
  EXPECT_NE(bad.err().find("prompt_text"), std::string::npos) << bad.err();
  EXPECT_NE(bad.err().find("question"), std::string::npos) << bad.err();  // lists what exists
}

}  // namespace
