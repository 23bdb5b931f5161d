// `dyno sim fit` and `dyno sim predict` end to end: short `dyno run` cells against the
// embedded sim serving a non-default profile (steps of several ms, so a loaded host's timing
// noise stays small against them), a profile fitted to some of them, the held-out cell
// predicted from it; and the inputs the commands refuse (exit 2).
#include <fstream>

#include "integration/integration_fixture.h"

using namespace dyno::integration;  // the fixture, fs, json, Child, read_json(l)

namespace {

const fs::path kVllmData = fs::path(DYNO_SOURCE_DIR) / "tests/record/data/vllm_bench";

class SimFit : public Integration {
 protected:
  fs::path write_profile(const std::string& name, double base_s) {
    const fs::path p = dir_ / (name + ".json");
    std::ofstream(p) << json::serialize(json::object{{"max_running_seqs", 4},
                                                     {"step_token_budget", 2048},
                                                     {"prefill_tokens_per_s", 10000},
                                                     {"step_base_s", base_s},
                                                     {"decode_seq_s", 0.002},
                                                     {"decode_ctx_token_s", 0}});
    return p;
  }

  /// One cell; returns its run id.
  std::string cell(const fs::path& profile, int c, int in, int out, int n) {
    const Outcome o =
        run_dyno({"--profile", profile.string(), "-c", std::to_string(c), "-n", std::to_string(n),
                  "--input-tokens", std::to_string(in), "--output-tokens", std::to_string(out)});
    if (o.exit_code != 0) throw std::runtime_error("dyno run failed: " + o.err);
    return std::string(o.summary.at("run_id").as_string());
  }

  static double number(const json::value& v) { return v.to_number<double>(); }
};

TEST_F(SimFit, AProfileFittedToRunsPredictsAHeldOutRun) {
  const fs::path truth = write_profile("truth", 0.005);
  const std::vector<std::string> train = {cell(truth, 1, 64, 16, 8), cell(truth, 1, 400, 16, 8),
                                          cell(truth, 3, 64, 16, 12), cell(truth, 6, 200, 16, 18)};
  const std::string held = cell(truth, 2, 200, 24, 10);

  const fs::path fitted = dir_ / "fitted.json";
  std::vector<std::string> args = {"sim", "fit",           "--runs-root", runs(),
                                   "-o",  fitted.string(), "--json"};
  args.insert(args.end(), train.begin(), train.end());
  const Outcome fit = dyno(args);
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const json::object r = json::parse(fit.out).as_object();
  const json::object& p = r.at("profile").as_object();
  // Truth: 10000 tok/s prefill, 5 ms + 2 ms per decoding sequence, at most 4 running.
  EXPECT_NEAR(number(p.at("prefill_tokens_per_s")) / 10000.0, 1.0, 0.3) << fit.out;
  const double step2 = number(p.at("step_base_s")) + 2 * number(p.at("decode_seq_s"));
  EXPECT_NEAR(step2 / 0.009, 1.0, 0.15) << fit.out;
  EXPECT_EQ(p.at("max_running_seqs").as_int64(), 4) << fit.out;
  EXPECT_TRUE(r.at("max_running_identified").as_bool());
  EXPECT_EQ(r.at("cells").as_array().size(), train.size());
  EXPECT_EQ(p.at("name").as_string(), "fitted");
  EXPECT_EQ(r.at("attention").as_string(), "per-sequence");  // the default, as given
  EXPECT_TRUE(r.at("attention_objectives").as_object().empty());
  EXPECT_EQ(number(p.at("shared_kv_token_s")), 0.0);

  // auto fits both attention structures and keeps the one with the lower objective.
  args.push_back("--attention=auto");
  const Outcome both = dyno(args);
  ASSERT_EQ(both.exit_code, 0) << both.err;
  const json::object rb = json::parse(both.out).as_object();
  const json::object& objectives = rb.at("attention_objectives").as_object();
  ASSERT_EQ(objectives.size(), 2u) << both.out;
  const std::string kept(rb.at("attention").as_string());
  const std::string other = kept == "per-sequence" ? "shared-cache" : "per-sequence";
  EXPECT_LE(number(objectives.at(kept)), number(objectives.at(other))) << both.out;
  args.pop_back();

  // The file is a plain profile: the sim serves it, and predicts the held-out run with it.
  const Outcome show = dyno({"sim", "--show-profile", "--profile", fitted.string()});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const Outcome pred =
      dyno({"sim", "predict", "--profile", fitted.string(), "--runs-root", runs(), held, "--json"});
  ASSERT_EQ(pred.exit_code, 0) << pred.err;
  const json::object pr = json::parse(pred.out).as_object();
  const json::object& med = pr.at("median_abs_error").as_object();
  for (const char* figure : {"ttft_p50", "tpot_p50", "output_tokens_per_s"}) {
    EXPECT_LT(number(med.at(figure)), 0.2) << figure << "\n" << pred.out;
  }
  // One run of each cell: nothing measured twice, so no repeat error.
  EXPECT_EQ(pr.at("repeated_cells").as_int64(), 0) << pred.out;
  EXPECT_TRUE(pr.at("median_repeat_difference").at("tpot_p50").is_null()) << pred.out;
  // The held-out cell measured again: its two runs are one cell measured twice, and how far
  // they differ is the floor under the prediction's error (the sim repeats itself closely).
  const std::string held_again = cell(truth, 2, 200, 24, 10);
  const Outcome twice = dyno(
      {"sim", "predict", "--profile", fitted.string(), "--runs-root", runs(), held, held_again});
  ASSERT_EQ(twice.exit_code, 0) << twice.err;
  EXPECT_NE(twice.out.find("repeats: 1 cell measured more than once"), std::string::npos)
      << twice.out;
  const Outcome twice_json = dyno({"sim", "predict", "--profile", fitted.string(), "--runs-root",
                                   runs(), held, held_again, train[0], "--json"});
  ASSERT_EQ(twice_json.exit_code, 0) << twice_json.err;
  const json::value tj = json::parse(twice_json.out);
  EXPECT_EQ(tj.at("repeated_cells").as_int64(), 1) << twice_json.out;
  for (const char* figure : {"ttft_p50", "tpot_p50", "output_tokens_per_s"}) {
    const double d = number(tj.at("median_repeat_difference").at(figure));
    EXPECT_GE(d, 0.0) << figure;
    EXPECT_LT(d, 0.2) << figure << "\n" << twice_json.out;
  }
  // The same cell described by flags instead of a record.
  const Outcome flags =
      dyno({"sim", "predict", "--profile", fitted.string(), "-c", "2", "--input-tokens", "200",
            "--output-tokens", "24", "-n", "10", "--json"});
  ASSERT_EQ(flags.exit_code, 0) << flags.err;
  const json::value flags_doc = json::parse(flags.out);
  const json::object& f = flags_doc.at("predicted").as_object();
  const json::object& m = pr.at("cells").at(0).at("measured").as_object();
  EXPECT_NEAR(number(f.at("tpot_p50_s")) / number(m.at("tpot_p50_s")), 1.0, 0.2) << flags.out;
  const Outcome text = dyno({"sim", "predict", "--profile", fitted.string(), "--rate", "5",
                             "--input-tokens", "100", "--output-tokens", "10"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("ttft"), std::string::npos) << text.out;
}

// The sim serves a profile's finish work: after a request's last token the engine works
// finish_s before its next step, so a closed loop's next request (sent at once) gets its first
// token no sooner than that; the same profile without it answers within a few ms.
TEST_F(SimFit, TheSimServesFinishWork) {
  const fs::path profile = dir_ / "finishing.json";
  std::ofstream(profile) << R"({"max_running_seqs": 4, "step_token_budget": 2048,
    "prefill_tokens_per_s": 10000, "step_base_s": 0.005, "decode_seq_s": 0,
    "finish_s": 0.06})";
  const Outcome o = run_dyno({"--profile", profile.string(), "-c", "1", "-n", "3", "--input-tokens",
                              "16", "--output-tokens", "4"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  std::vector<json::object> lines = check_record(o.run_dir);
  ASSERT_EQ(lines.size(), 3u);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const double wait_s = static_cast<double>(lines[i].at("first_token_ns").as_int64() -
                                              lines[i - 1].at("done_ns").as_int64()) *
                          1e-9;
    EXPECT_GE(wait_s, 0.06 - 0.002) << i;  // the finish work, less the client's own time
  }
  const Outcome show = dyno({"sim", "--show-profile", "--profile", profile.string()});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("\"finish_s\":0.06"), std::string::npos) << show.out;
}

TEST_F(SimFit, RefusesRunsThatCannotBeFittedTogether) {
  const std::string a = cell(write_profile("a", 0.002), 1, 32, 4, 2);
  const std::string b = cell(write_profile("b", 0.003), 1, 32, 4, 2);
  const std::string out = (dir_ / "p.json").string();
  const Outcome mixed = dyno({"sim", "fit", "--runs-root", runs(), "-o", out, a, b});
  EXPECT_EQ(mixed.exit_code, 2);
  EXPECT_NE(mixed.err.find(a), std::string::npos) << mixed.err;
  EXPECT_NE(mixed.err.find(b), std::string::npos) << mixed.err;
  EXPECT_NE(mixed.err.find("different engines"), std::string::npos) << mixed.err;
  EXPECT_FALSE(fs::exists(out));

  const Outcome twice = dyno({"sim", "fit", "--runs-root", runs(), "-o", out, a, a});
  EXPECT_EQ(twice.exit_code, 2);
  const Outcome unknown = dyno({"sim", "fit", "--runs-root", runs(), "-o", out, "no-such-run"});
  EXPECT_EQ(unknown.exit_code, 2);
  const Outcome no_output = dyno({"sim", "fit", "--runs-root", runs(), a});
  EXPECT_EQ(no_output.exit_code, 2);
  const Outcome attention =
      dyno({"sim", "fit", "--runs-root", runs(), "-o", out, "--attention", "paged", a});
  EXPECT_EQ(attention.exit_code, 2);
  EXPECT_NE(attention.err.find("--attention"), std::string::npos) << attention.err;
  const Outcome no_dir =
      dyno({"sim", "fit", "--runs-root", runs(), "-o", (dir_ / "missing" / "p.json").string(), a});
  EXPECT_EQ(no_dir.exit_code, 2);
  EXPECT_NE(no_dir.err.find("does not exist"), std::string::npos) << no_dir.err;

  // An imported summary-only record has no per-request times.
  const Outcome imp = dyno({"import", "vllm-bench", (kVllmData / "summary_only.json").string(),
                            "--runs-root", runs(), "--json"});
  ASSERT_EQ(imp.exit_code, 0) << imp.err;
  const std::string summary_id(json::parse(imp.out).at(0).at("run_id").as_string());
  const Outcome summary = dyno({"sim", "fit", "--runs-root", runs(), "-o", out, summary_id});
  EXPECT_EQ(summary.exit_code, 2);
  EXPECT_NE(summary.err.find("summary-only"), std::string::npos) << summary.err;

  // A record that no longer verifies.
  { std::ofstream(dir_ / "runs" / a / "requests.jsonl", std::ios::app) << "\n"; }
  const Outcome tampered = dyno({"sim", "fit", "--runs-root", runs(), "-o", out, a});
  EXPECT_EQ(tampered.exit_code, 2);
  EXPECT_NE(tampered.err.find(a), std::string::npos) << tampered.err;
  EXPECT_FALSE(fs::exists(out));
  fs::remove_all(dir_ / "runs" / a);  // not a record any more: keep the store conforming
}

TEST_F(SimFit, PredictRefusesBadProfilesAndFlags) {
  const fs::path bad = dir_ / "bad.json";
  std::ofstream(bad) << R"({"step_base_s": "slow"})";
  const Outcome bad_profile = dyno({"sim", "predict", "--profile", bad.string(), "-c", "1",
                                    "--input-tokens", "8", "--output-tokens", "8"});
  EXPECT_EQ(bad_profile.exit_code, 2);
  EXPECT_NE(bad_profile.err.find("step_base_s"), std::string::npos) << bad_profile.err;
  const std::vector<std::vector<std::string>> refused = {
      {"sim", "predict", "--profile", "cpu", "-c", "1", "--rate", "2", "--input-tokens", "8",
       "--output-tokens", "8"},
      {"sim", "predict", "--profile", "cpu", "-c", "1", "--input-tokens", "8"},
      {"sim", "predict", "--profile", "cpu", "--input-tokens", "8", "--output-tokens", "8"},
      {"sim", "predict", "--profile", "cpu", "-c", "1", "--input-tokens", "9000", "--output-tokens",
       "8"},
      {"sim", "predict", "--profile", "cpu", "-c", "0", "--input-tokens", "8", "--output-tokens",
       "8"},
      {"sim", "predict", "--profile", "cpu", "--runs-root", runs(), "-c", "1", "some-run"},
      {"sim", "predict", "-c", "1", "--input-tokens", "8", "--output-tokens", "8"},
  };
  for (const auto& args : refused) {
    const Outcome o = dyno(args);
    EXPECT_EQ(o.exit_code, 2) << json::serialize(json::value_from(args)) << "\n" << o.err;
  }
  // dyno sim without a subcommand still serves (its flags unchanged).
  const Outcome show = dyno({"sim", "--show-profile", "--profile", "cpu"});
  EXPECT_EQ(show.exit_code, 0) << show.err;
}

}  // namespace
