// `dyno stream make --sessions`, `dyno stream import sharegpt --multi-turn | agent` and the
// trace imports (mooncake, azure, burstgpt) end to end: the dyno binary against its embedded
// simulated engine's tokenizer, lengths checked by counting what was written again.
#include "integration/integration_fixture.h"
#include "sim/tokenizer.h"
#include "workload/request_stream.h"
#include "workload/session_make.h"

namespace dyno::integration {
namespace {

const fs::path kData = fs::path(DYNO_SOURCE_DIR) / "tests/workload/data";

/// The embedded sim's count of a request's whole prompt (its /tokenize, in-process).
std::int64_t sim_count(const workload::Request& r) {
  if (!r.is_chat()) return static_cast<std::int64_t>(sim::count_tokens(*r.prompt));
  std::vector<sim::ChatMessage> messages;
  for (const workload::Message& m : r.messages) messages.push_back({m.role, m.content});
  return static_cast<std::int64_t>(sim::count_tokens(sim::apply_chat_template(messages)));
}

using StreamSessions = Integration;

TEST_F(StreamSessions, MakeWritesExactTurns) {
  const std::string file = (dir_ / "s.jsonl").string();
  const Outcome o = dyno({"stream", "make", "--sessions", "2", "--turns", "3",
                          "--turn-input-tokens", "30", "--system-tokens", "25", "--think-ms", "100",
                          "--output-tokens", "8", "--seed", "4", "-o", file, "--json"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const json::object doc = json::parse(o.out).as_object();
  EXPECT_TRUE(doc.at("ok").as_bool());
  EXPECT_EQ(doc.at("totals").at("turns").as_int64(), 6);
  EXPECT_EQ(doc.at("totals").at("hit").as_int64(), 6);
  const json::array& turns = doc.at("turns").as_array();
  EXPECT_EQ(turns[0].at("measure").as_string(), "prompt");
  EXPECT_EQ(turns[0].at("requested").as_int64(), 55);
  EXPECT_EQ(turns[0].at("system_achieved").as_int64(), 25);
  EXPECT_EQ(turns[1].at("measure").as_string(), "delta");
  EXPECT_EQ(turns[1].at("achieved").as_int64(), 30);
  // Counted again here, from the file.
  const workload::RequestStream s = workload::read_stream_file(file);
  EXPECT_EQ(std::string(doc.at("canonical_sha256").as_string()), s.sha256);
  ASSERT_EQ(s.requests.size(), 6u);
  std::vector<const workload::Request*> session;
  for (const workload::Request& r : s.requests) {
    if (r.turn->session != "sess-4-1") continue;
    session.push_back(&r);
    EXPECT_EQ(workload::turn_tokens(session, session.size() - 1, sim_count),
              session.size() == 1 ? 55 : 30)
        << r.id;
  }
  EXPECT_EQ(session.size(), 3u);
  EXPECT_EQ(s.requests[1].turn->think_ms, 100.0);

  const Outcome text = dyno({"stream", "make", "--sessions", "1", "--turns", "2",
                             "--turn-input-tokens", "30", "--output-tokens", "8", "-o", file});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("2/2 turns hit their target exactly"), std::string::npos) << text.out;
}

TEST_F(StreamSessions, MakeRefusesMixedFlags) {
  const std::string file = (dir_ / "s.jsonl").string();
  Outcome o = dyno({"stream", "make", "--sessions", "2", "--output-tokens", "8", "-o", file});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--turns is required with --sessions"), std::string::npos) << o.err;
  o = dyno({"stream", "make", "--sessions", "2", "--turns", "2", "--turn-input-tokens", "30",
            "--count", "3", "--output-tokens", "8", "-o", file});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--count does not apply with --sessions"), std::string::npos) << o.err;
  o = dyno({"stream", "make", "--count", "2", "--input-tokens", "30", "--think-ms", "5",
            "--output-tokens", "8", "-o", file});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--think-ms belongs to a session stream"), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(file));
}

TEST_F(StreamSessions, ImportShareGptTurnsAndAgentTrajectories) {
  const std::string out = (dir_ / "s.jsonl").string();
  Outcome o = dyno({"stream", "import", "sharegpt", (kData / "sharegpt_multi.json").string(),
                    "--multi-turn", "-o", out, "--json"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(read_jsonl(out).size(), 6u);
  EXPECT_EQ(workload::read_stream_file(out).requests[1].turn->index, 1);
  o = dyno({"stream", "import", "agent", (kData / "agent_trajectories.jsonl").string(), "-o", out});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto lines = read_jsonl(out);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_TRUE(lines[1].contains("tool_calls"));
  EXPECT_TRUE(lines[0].contains("tools"));

  const fs::path bad = dir_ / "bad.jsonl";
  std::ofstream(bad) << R"({"id":"a","steps":[{"user":"x"}]})"
                        "\n"
                        R"({"id":"b","steps":[{"user":5}]})"
                        "\n";
  o = dyno({"stream", "import", "agent", bad.string(), "-o", out});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find(bad.string() + ":2: key `steps[0].user`: must be a string"),
            std::string::npos)
      << o.err;
  o = dyno({"stream", "import", "table", bad.string(), "--multi-turn", "-o", out});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--multi-turn: sharegpt only"), std::string::npos) << o.err;
}

TEST_F(StreamSessions, TraceImportsWriteExactPromptsAndSendTimes) {
  const std::string out = (dir_ / "t.jsonl").string();
  Outcome o = dyno({"stream", "import", "mooncake", (kData / "traces/mooncake.jsonl").string(),
                    "--block-tokens", "16", "-o", out, "--json"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  json::object doc = json::parse(o.out).as_object();
  EXPECT_EQ(doc.at("requests").as_int64(), 5);
  EXPECT_EQ(doc.at("distinct_blocks").as_int64(), 6);
  EXPECT_EQ(doc.at("exact_first").as_int64(), 5);
  EXPECT_TRUE(doc.at("embedded_sim").as_bool());
  EXPECT_EQ(doc.at("api").as_string(), "completions");  // the traces' default
  const workload::RequestStream s = workload::read_stream_file(out);
  const std::vector<std::int64_t> lengths = {40, 35, 16, 20, 48};
  const std::vector<double> at = {0, 0, 1500, 3052.5, 4000};
  ASSERT_EQ(s.requests.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(sim_count(s.requests[i]), lengths[i]) << s.requests[i].id;
    EXPECT_EQ(s.requests[i].at_ms, at[i]);
  }

  o = dyno({"stream", "import", "azure", (kData / "traces/azure.csv").string(), "--api",
            "completions", "-o", out});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("read 4 rows of"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("3 requests, 1 skipped with 0 output tokens"), std::string::npos) << o.out;
  o = dyno({"stream", "import", "burstgpt", (kData / "traces/burstgpt.csv").string(), "--limit",
            "1", "--api", "chat", "-o", out, "--json"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  doc = json::parse(o.out).as_object();
  EXPECT_EQ(doc.at("requests").as_int64(), 1);
  const workload::RequestStream b = workload::read_stream_file(out);
  ASSERT_TRUE(b.requests[0].is_chat());
  EXPECT_EQ(sim_count(b.requests[0]), 210);  // chat: the template included
  EXPECT_EQ(b.requests[0].tags.at("model"), "ChatGPT");
}

TEST_F(StreamSessions, MalformedTracesExitTwoNamingTheLine) {
  const fs::path bad = dir_ / "bad.jsonl";
  std::ofstream(bad) << R"({"timestamp": 0, "input_length": 40, "output_length": 5})"
                        "\n"
                     << R"({"timestamp": 1, "input_length": "40", "output_length": 5})"
                        "\n";
  const std::string out = (dir_ / "t.jsonl").string();
  Outcome o = dyno({"stream", "import", "mooncake", bad.string(), "-o", out});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find(bad.string() + ":2: key `input_length`: must be an integer"),
            std::string::npos)
      << o.err;
  o = dyno({"stream", "import", "mooncake", (kData / "traces/mooncake.jsonl").string(), "-o", out});
  EXPECT_EQ(o.exit_code, 2);  // blocks of 512 do not fit the fixture's lengths
  EXPECT_NE(o.err.find(":1: key `hash_ids`: 3 blocks of 512 tokens hold 1025..1536 tokens"),
            std::string::npos)
      << o.err;
  o = dyno({"stream", "import", "azure", (kData / "traces/azure.csv").string(), "--max-tokens", "5",
            "-o", out});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace dyno::integration
