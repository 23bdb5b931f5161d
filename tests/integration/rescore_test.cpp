// `dyno rescore` end to end: a run of the embedded simulated engine with expected answers, its
// kept outputs judged again with another scorer into a derived record that `dyno runs verify`
// passes and `dyno runs list` lists beside its source, neither marked a duplicate.
#include "digest/digest.h"
#include "integration/integration_fixture.h"
#include "record/run_writer.h"
#include "store/run_index.h"

using namespace dyno::integration;  // the fixture, fs, json, Child, read_json(l)

namespace {

class Rescore : public Integration {
 protected:
  /// A stream of `answers.size()` one-word questions; request i has seed i (the simulated
  /// engine's words depend on the seed only) and expects answers[i] with `scorer`.
  fs::path stream(const std::string& name, const std::vector<std::string>& answers,
                  const std::string& scorer) {
    const fs::path file = dir_ / name;
    std::ofstream out(file);
    for (std::size_t i = 0; i < answers.size(); ++i) {
      json::object line{
          {"id", "q" + std::to_string(i)},
          {"messages", json::array{json::object{{"role", "user"}, {"content", "one word?"}}}},
          {"max_tokens", 1},
          {"seed", i},
          {"expected", answers[i]},
          {"scorer", scorer}};
      out << json::serialize(line) << "\n";
    }
    return file;
  }
};

TEST_F(Rescore, AnotherScorerJudgesTheKeptOutputsIntoADerivedRecordThatVerifies) {
  // 1. What the engine answers to each question (one word each).
  const Outcome probe =
      run_dyno({"--stream", stream("probe.jsonl", {"-", "-", "-"}, "exact").string(), "-c", "1"});
  ASSERT_EQ(probe.exit_code, 0) << probe.err;
  std::map<std::string, std::string> words;
  for (const auto& line : check_record(probe.run_dir)) {
    words[std::string(line.at("request_id").as_string())] =
        std::string(line.at("output_text").as_string());
  }
  ASSERT_EQ(words.size(), 3u);

  // 2. The run: each answer is the engine's word in capitals with a full stop, judged `exact`:
  //    all wrong. A parser that normalizes would call them all right.
  std::vector<std::string> answers;
  for (const auto& [id, word] : words) {
    std::string a;
    for (char ch : word) {
      if (ch != ' ') a += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    }
    answers.push_back(a + ".");
  }
  const Outcome run =
      run_dyno({"--stream", stream("qa.jsonl", answers, "exact").string(), "-c", "1"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.summary.at("quality").at("correct").as_int64(), 0);
  const std::string source_id = run.run_dir.filename().string();
  const std::string source_sums = dyno::record::read_file(run.run_dir / "SHA256SUMS");

  // 3. Re-scored with `normalized`: a new record, the run itself untouched.
  const Outcome r = dyno({"rescore", source_id, "--scorer", "normalized", "--runs-root", runs(),
                          "--label", "fixed", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json::object out = json::parse(r.out).as_object();
  const std::string id(out.at("run_id").as_string());
  EXPECT_TRUE(id.ends_with("-fixed")) << id;
  EXPECT_EQ(out.at("source_run_id").as_string(), source_id);
  EXPECT_EQ(out.at("before").at("accuracy").as_double(), 0.0);
  EXPECT_EQ(out.at("after").at("scored").as_int64(), 3);
  EXPECT_EQ(out.at("after").at("correct").as_int64(), 3);
  EXPECT_EQ(out.at("after").at("accuracy").as_double(), 1.0);
  EXPECT_EQ(out.at("changed").as_int64(), 3);
  EXPECT_EQ(dyno::record::read_file(run.run_dir / "SHA256SUMS"), source_sums);

  const fs::path derived = dir_ / "runs" / id;
  const json::object manifest = read_json(derived / "manifest.json");
  EXPECT_EQ(manifest.at("derived_from").at("run_id").as_string(), source_id);
  EXPECT_EQ(manifest.at("derived_from").at("scorer").as_string(), "normalized");
  EXPECT_EQ(manifest.at("derived_from").at("sha256sums_sha256").as_string(),
            dyno::digest::sha256_hex(source_sums));
  const json::object source_manifest = read_json(run.run_dir / "manifest.json");
  for (const char* key : {"engine", "model", "workload", "load", "harness"}) {
    EXPECT_EQ(manifest.at(key), source_manifest.at(key)) << key;
  }
  const json::object summary = read_json(derived / "summary.json");
  EXPECT_EQ(summary.at("latency_ms"), run.summary.at("latency_ms"));  // not measured again
  EXPECT_EQ(summary.at("quality").at("accuracy").as_double(), 1.0);
  for (const auto& line : check_record(derived)) {
    EXPECT_EQ(line.at("score").at("scorer").as_string(), "normalized");
    EXPECT_TRUE(line.at("score").at("correct").as_bool());
  }

  // The text form says before and after. An API key in the environment reaches no file.
  const std::string canary = "sk-rescore-canary-7f3a";
  const Outcome text = dyno({"rescore", source_id, "--scorer", "normalized", "--runs-root", runs()},
                            {{"DYNO_API_KEY", canary}, {"OPENAI_API_KEY", canary}});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("original"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("100.0 %"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("verdicts changed: 3 of 3"), std::string::npos) << text.out;
  for (const auto& e : fs::recursive_directory_iterator(dir_ / "runs")) {
    if (e.is_regular_file()) {
      EXPECT_EQ(dyno::record::read_file(e.path()).find(canary), std::string::npos) << e.path();
    }
  }

  // 4. runs verify passes; runs list shows it beside its source, neither a duplicate of the
  //    other (the second re-score, made the same way, is a duplicate of the first).
  const Outcome verify = dyno({"runs", "verify", id, "--runs-root", runs()});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  const Outcome list = dyno({"runs", "list", "--json", "--runs-root", runs()});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  std::map<std::string, json::object> rows;
  const json::value listed = json::parse(list.out);
  for (const auto& row : listed.as_array()) {
    rows[std::string(row.at("run_id").as_string())] = row.as_object();
  }
  ASSERT_EQ(rows.size(), 4u);  // probe, run, two re-scores
  ASSERT_TRUE(rows.count(id));
  EXPECT_EQ(rows[id].at("accuracy").as_double(), 1.0);
  EXPECT_TRUE(rows[source_id].at("duplicate_of").is_null());
  EXPECT_EQ(rows[source_id].at("accuracy").as_double(), 0.0);
  // The two re-scores share the source's started_at: the later id is the duplicate (their ids
  // may share a second).
  std::vector<std::string> rescored;
  for (const auto& [run_id, row] : rows) {
    if (run_id != source_id && run_id != probe.run_dir.filename().string()) {
      rescored.push_back(run_id);
    }
  }
  ASSERT_EQ(rescored.size(), 2u);  // sorted: the first is the original of the two
  EXPECT_TRUE(rows[rescored[0]].at("duplicate_of").is_null());
  EXPECT_EQ(rows[rescored[1]].at("duplicate_of").as_string(), rescored[0]);
}

TEST_F(Rescore, AnUnknownScorerOrARunWithNothingToJudgeIsAUsageError) {
  const Outcome run = run_dyno({"--stream", stream("qa.jsonl", {"a", "b"}, "exact").string()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string id = run.run_dir.filename().string();

  const Outcome unknown = dyno({"rescore", id, "--scorer", "fuzzy", "--runs-root", runs()});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown scorer \"fuzzy\"; the known scorers are exact, normalized, "
                             "relaxed_numeric, regex and choice"),
            std::string::npos)
      << unknown.err;

  const Outcome no_pattern = dyno({"rescore", id, "--scorer", "regex", "--runs-root", runs()});
  EXPECT_EQ(no_pattern.exit_code, 2);
  EXPECT_NE(no_pattern.err.find("--scorer regex needs a pattern"), std::string::npos)
      << no_pattern.err;

  const Outcome synthetic = run_dyno({"-n", "2"});
  ASSERT_EQ(synthetic.exit_code, 0) << synthetic.err;
  const Outcome nothing =
      dyno({"rescore", synthetic.run_dir.filename().string(), "--runs-root", runs(), "--json"});
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_NE(nothing.err.find("has no scored request"), std::string::npos) << nothing.err;
  EXPECT_TRUE(nothing.out.empty());

  const Outcome missing = dyno({"rescore", "19990101T000000Z", "--runs-root", runs()});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  // Nothing was written by the refused commands: the two runs only.
  EXPECT_EQ(dyno::store::run_directory_names(dir_ / "runs").size(), 2u);
}

}  // namespace

namespace {

class Replaced : public Rescore {
 protected:
  /// `dyno report --spec` of arms a (label a) and b (label b) whose one spec cell holds
  /// `a_run` for a and `b_run` for b; the board.json.
  json::object board(const std::string& a_run, const std::string& b_run, const std::string& out) {
    const fs::path spec = dir_ / (out + ".json");
    std::ofstream(spec) << json::serialize(json::object{
        {"baseline", "b"},
        {"arms", json::array{json::object{{"name", "a"}, {"runs", "label=a"}},
                             json::object{{"name", "b"}, {"runs", "label=b"}}}},
        {"cells", json::array{json::object{{"name", "qa"},
                                           {"runs", json::object{{"a", a_run}, {"b", b_run}}}}}}});
    const Outcome rep = dyno(
        {"report", "--spec", spec.string(), "--runs-root", runs(), "--out", (dir_ / out).string()});
    EXPECT_EQ(rep.exit_code, 0) << rep.out << rep.err;
    return read_json(dir_ / out / "board.json");
  }
};

TEST_F(Replaced, ASpecCellsRescoredOrRerunRunCompletesTheBoardAndNamesWhatItReplaced) {
  const fs::path qa = stream("qa.jsonl", {"x", "y", "z", "w"}, "exact");
  const auto run = [&](const std::string& label) {
    const Outcome o = run_dyno({"--stream", qa.string(), "-c", "1", "--label", label});
    EXPECT_EQ(o.exit_code, 0) << o.err;
    return o.run_dir.filename().string();
  };
  const std::string a = run("a");
  const std::string b = run("b");
  const Outcome r = dyno({"rescore", a, "--scorer", "normalized", "--runs-root", runs(), "--label",
                          "fixed", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string fixed(json::parse(r.out).at("run_id").as_string());

  // The rescored record in the original's place: the original is replaced, not unpaired.
  json::object bd = board(fixed, b, "derived");
  EXPECT_EQ(bd.at("status").as_string(), "complete") << bd;
  EXPECT_TRUE(bd.at("unpaired").as_array().empty()) << bd.at("unpaired");
  ASSERT_EQ(bd.at("replaced").as_array().size(), 1u) << bd;
  const json::object& x = bd.at("replaced").as_array()[0].as_object();
  EXPECT_EQ(x.at("run_id").as_string(), a);
  EXPECT_EQ(x.at("replaced_by").as_string(), fixed);
  EXPECT_EQ(x.at("how").as_string(), "derived");
  EXPECT_EQ(x.at("arm").as_string(), "a");
  EXPECT_EQ(x.at("cell").as_string(), "qa");
  bool finding = false;
  for (const auto& f : bd.at("findings").as_array()) {
    EXPECT_NE(f.at("type").as_string(), "unpaired_runs") << f;
    if (f.at("type").as_string() == "run_replaced") {
      finding = true;
      EXPECT_EQ(f.at("data").at("replaced_by").as_string(), fixed);
    }
  }
  EXPECT_TRUE(finding) << bd.at("findings");
  const std::string readme = dyno::record::read_file(dir_ / "derived" / "README.md");
  EXPECT_NE(readme.find("## Replaced runs"), std::string::npos) << readme;
  EXPECT_EQ(readme.find("## Unpaired runs"), std::string::npos) << readme;
  EXPECT_NE(readme.find("1 run replaced by the board spec"), std::string::npos) << readme;

  // A rerun of the cell (a second run of arm a) in the first one's place.
  const std::string again = run("a");
  bd = board(again, b, "rerun");
  EXPECT_EQ(bd.at("status").as_string(), "complete") << bd;
  EXPECT_TRUE(bd.at("unpaired").as_array().empty()) << bd.at("unpaired");
  ASSERT_EQ(bd.at("replaced").as_array().size(), 1u) << bd;
  EXPECT_EQ(bd.at("replaced").as_array()[0].at("run_id").as_string(), a);
  EXPECT_EQ(bd.at("replaced").as_array()[0].at("replaced_by").as_string(), again);
  EXPECT_EQ(bd.at("replaced").as_array()[0].at("how").as_string(), "rerun");

  // A run of another cell stays unpaired: the board is then incomplete, as before.
  const Outcome other = run_dyno({"--stream", qa.string(), "-c", "2", "--label", "a"});
  ASSERT_EQ(other.exit_code, 0) << other.err;
  bd = board(again, b, "other");
  EXPECT_EQ(bd.at("status").as_string(), "incomplete") << bd;
  ASSERT_EQ(bd.at("unpaired").as_array().size(), 1u) << bd;
  EXPECT_EQ(bd.at("unpaired").as_array()[0].at("run_id").as_string(),
            other.run_dir.filename().string());
}

}  // namespace
