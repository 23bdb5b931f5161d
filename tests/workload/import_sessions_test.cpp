#include "workload/import_sessions.h"

#include <gtest/gtest.h>

#include <string>

#include "workload/request_stream.h"
#include "workload/sessions.h"
#include "workload/stream_test_util.h"

namespace dyno::workload {
namespace {

namespace fs = std::filesystem;

const fs::path kData = fs::path(DYNO_SOURCE_DIR) / "tests/workload/data";

std::string agent_error(const std::string& text) {
  try {
    parse_agent_text(text, "a.jsonl", {});
  } catch (const StreamError& e) {
    return e.what();
  }
  return "no error";
}

/// The stream written and read back: a valid session stream, equal, same hash.
void expect_round_trip(const RequestStream& s) {
  std::string text;
  for (const Request& r : s.requests) text += to_json_line(r) + "\n";
  const RequestStream back = parse_stream_text(text, "s.jsonl");
  EXPECT_EQ(back.requests, s.requests);
  EXPECT_EQ(back.sha256, s.sha256);
}

TEST(ShareGptSessions, EveryHumanTurnIsATurn) {
  ShareGptOptions o;
  o.max_tokens = 99;
  const RequestStream s = stream_from_sharegpt_sessions(kData / "sharegpt_multi.json", o);
  ASSERT_EQ(s.requests.size(), 6u);
  const Request& t0 = s.requests[0];
  EXPECT_EQ(t0.id, "sharegpt-c1-0");
  EXPECT_EQ(t0.turn->session, "sharegpt-c1");
  EXPECT_EQ(t0.turn->index, 0);
  ASSERT_EQ(t0.messages.size(), 2u);  // the last system turn before the first human turn
  EXPECT_EQ(t0.messages[0].role, "system");
  EXPECT_EQ(t0.messages[0].content, "You are terse.");
  EXPECT_EQ(t0.messages[1].content, "Name three primes.");
  EXPECT_EQ(t0.sampling.max_tokens, 99);
  EXPECT_EQ(s.requests[1].messages, (std::vector<Message>{{"user", "More?"}}));
  EXPECT_EQ(s.requests[2].messages,
            (std::vector<Message>{{"system", "Now answer in French."}, {"user", "Thanks!"}}));
  EXPECT_EQ(s.requests[3].id, "sharegpt-7-0");
  EXPECT_EQ(s.requests[4].id, "sharegpt-7-1");
  EXPECT_EQ(s.requests[5].id, "sharegpt-unanswered-0");
  for (const Request& r : s.requests) {
    for (const Message& m : r.messages) EXPECT_NE(m.role, "assistant") << r.id;
  }
  EXPECT_EQ(s.source, "sharegpt:" + (kData / "sharegpt_multi.json").string());
  expect_round_trip(s);
}

TEST(ShareGptSessions, ReferenceLengthsEndASessionAtItsFirstUnansweredTurn) {
  ShareGptOptions o;
  o.output_from_reference = true;
  const RequestStream s = stream_from_sharegpt_sessions(kData / "sharegpt_multi.json", o);
  ASSERT_EQ(s.requests.size(), 4u);  // c1: 3 turns; 7: its answered first turn; no "unanswered"
  EXPECT_EQ(s.requests[0].sampling.max_tokens, 4);  // "2 3 5": 3 words × 1.3
  EXPECT_EQ(s.requests[1].sampling.max_tokens, 8);  // both replies: 6 words × 1.3 = 7.8
  EXPECT_EQ(s.requests[2].sampling.max_tokens, 3);  // "De rien.": 2 × 1.3 = 2.6
  EXPECT_EQ(s.requests[3].id, "sharegpt-7-0");
  EXPECT_EQ(s.requests[3].sampling.max_tokens, 18);  // 14 words
}

TEST(ShareGptSessions, LimitShuffleAndFiltersCountConversations) {
  ShareGptOptions o;
  o.limit = 1;
  EXPECT_EQ(stream_from_sharegpt_sessions(kData / "sharegpt_multi.json", o).requests.size(), 3u);
  o.limit.reset();
  o.min_prompt_chars = 18;  // "Name three primes." is 18 bytes; the others are shorter
  const RequestStream kept = stream_from_sharegpt_sessions(kData / "sharegpt_multi.json", o);
  ASSERT_EQ(kept.requests.size(), 5u);
  EXPECT_EQ(kept.requests.back().id, "sharegpt-7-1");
  o.min_prompt_chars = 0;
  o.shuffle = true;
  o.seed = 3;
  const RequestStream a = stream_from_sharegpt_sessions(kData / "sharegpt_multi.json", o);
  const RequestStream b = stream_from_sharegpt_sessions(kData / "sharegpt_multi.json", o);
  EXPECT_EQ(a.sha256, b.sha256);
  EXPECT_EQ(a.requests.size(), 6u);
  expect_round_trip(a);
  o.api = Api::kCompletions;
  EXPECT_THROW(stream_from_sharegpt_sessions(kData / "sharegpt_multi.json", o), StreamError);
}

TEST(ShareGptSessions, MalformedFilesNameTheElement) {
  test::ScratchDir dir;
  const auto error = [&](const std::string& text) {
    try {
      stream_from_sharegpt_sessions(dir.write("s.json", text), {});
    } catch (const StreamError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string p = (dir.path() / "s.json").string();
  EXPECT_EQ(error(R"([{"conversations": [{"from": "robot", "value": "x"}]}])"),
            p + ": element 0: key `conversations[0].from`: unknown role \"robot\"; expected "
                "human, gpt or system");
  EXPECT_EQ(error(R"([{"conversations": [{"from": "human"}]}])"),
            p + ": element 0: key `conversations[0].value` missing or not a string");
  EXPECT_EQ(error(R"([{"id": "a", "conversations": [{"from": "human", "value": "x"}]},
                      {"id": "a", "conversations": [{"from": "human", "value": "y"}]}])"),
            p + ": element 1: duplicate id \"sharegpt-a-0\" (first at " + p +
                ": element 0); ids must be unique within a stream");
  EXPECT_EQ(error("{}"), p + ": expected a JSON array of {id, conversations} (ShareGPT)");
}

TEST(AgentTrajectories, StepsBecomeTurnsWithToolCallsAndResults) {
  const RequestStream s = stream_from_agent(kData / "agent_trajectories.jsonl", {});
  ASSERT_EQ(s.requests.size(), 5u);
  const Request& t0 = s.requests[0];
  EXPECT_EQ(t0.id, "weather-0");
  EXPECT_EQ(t0.turn->session, "weather");
  ASSERT_EQ(t0.messages.size(), 2u);
  EXPECT_EQ(t0.messages[0], (Message{"system", "You are a helpful agent."}));
  EXPECT_EQ(t0.messages[1], (Message{"user", "What is the weather in Paris and Rome?"}));
  EXPECT_NE(t0.turn->tools.find("get_weather"), std::string::npos);
  EXPECT_FALSE(t0.turn->think_ms);
  EXPECT_EQ(t0.sampling.max_tokens, 64);
  const Request& t1 = s.requests[1];
  EXPECT_EQ(t1.turn->think_ms, 40.0);  // the step's own
  EXPECT_NE(t1.turn->tool_calls.find("call_1"), std::string::npos);
  ASSERT_EQ(t1.messages.size(), 2u);
  EXPECT_EQ(t1.messages[0].role, "tool");
  EXPECT_EQ(t1.messages[0].tool_call_id, "call_2");
  EXPECT_EQ(t1.messages[0].content, "Rome: 24C, sunny");
  EXPECT_EQ(t1.messages[1].tool_call_id, "call_1");
  const Request& t2 = s.requests[2];
  EXPECT_EQ(t2.turn->think_ms, 500.0);  // the trajectory's
  EXPECT_EQ(t2.sampling.max_tokens, 32);
  EXPECT_EQ(s.requests[3].id, "chat-0");
  EXPECT_FALSE(s.requests[3].sampling.max_tokens);
  EXPECT_EQ(s.requests[4].tags.at("source"), "agent");
  EXPECT_EQ(s.source, "agent:" + (kData / "agent_trajectories.jsonl").string());
  expect_round_trip(s);

  // At run time: the tool calls attach to the actual first answer, the results follow.
  Conversation c;
  c.request_for(t0);
  c.answered("Let me check.");
  const Request sent = c.request_for(t1);
  ASSERT_EQ(sent.messages.size(), 5u);
  EXPECT_EQ(sent.messages[2].role, "assistant");
  EXPECT_EQ(sent.messages[2].content, "Let me check.");
  EXPECT_EQ(sent.messages[2].tool_calls, t1.turn->tool_calls);
  EXPECT_EQ(sent.messages[3].role, "tool");
  EXPECT_EQ(sent.turn->tools, t0.turn->tools);
}

TEST(AgentTrajectories, OptionsSetDefaultsAndLimit) {
  AgentOptions o;
  o.max_tokens = 12;
  o.limit = 1;
  const RequestStream s = stream_from_agent(kData / "agent_trajectories.jsonl", o);
  ASSERT_EQ(s.requests.size(), 3u);
  EXPECT_EQ(s.requests[0].sampling.max_tokens, 64);  // the trajectory's own wins
  o.limit.reset();
  const RequestStream all = stream_from_agent(kData / "agent_trajectories.jsonl", o);
  EXPECT_EQ(all.requests[3].sampling.max_tokens, 12);
}

TEST(AgentTrajectories, MalformedLinesNameTheLineAndKey) {
  const std::string calls =
      R"([{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}])";
  EXPECT_EQ(agent_error(R"({"steps":[{"user":"x"}]})"),
            "a.jsonl:1: key `id`: missing; every trajectory has an id");
  EXPECT_EQ(agent_error("\n"
                        R"({"id":"a","steps":[]})"),
            "a.jsonl:2: key `steps`: must be a non-empty array of steps (got an array)");
  EXPECT_EQ(agent_error(R"({"id":"a","steps":[{"user":"x"}],"colour":1})"),
            "a.jsonl:1: key `colour`: unknown key; a trajectory has `id`, `steps`, and "
            "optionally `system`, `tools`, `think_ms` and `max_tokens`");
  EXPECT_EQ(agent_error(R"({"id":"a","steps":[{"tool_calls":)" + calls +
                        R"(,"tool_results":[{"tool_call_id":"c1","content":"r"}]}]})"),
            "a.jsonl:1: key `steps[0]`: step 0 must be a user step (tool calls follow an answer)");
  EXPECT_EQ(agent_error(R"({"id":"a","steps":[{"user":"x"},{"tool_calls":)" + calls +
                        R"(,"tool_results":[{"tool_call_id":"c9","content":"r"}]}]})"),
            "a.jsonl:1: key `steps[1].tool_results[0].tool_call_id`: \"c9\" answers no open call "
            "of this step (each call is answered exactly once)");
  EXPECT_EQ(agent_error(R"({"id":"a","steps":[{"user":"x"},{"tool_calls":)" + calls +
                        R"(,"tool_results":[{"tool_call_id":"c1"}]}]})"),
            "a.jsonl:1: key `steps[1].tool_results[0].content`: missing; give the tool's output "
            "text");
  EXPECT_EQ(agent_error(R"({"id":"a","steps":[{"user":"x"},{"tool_calls":)" + calls + "}]}"),
            "a.jsonl:1: key `steps[1].tool_results`: missing; give each call's result");
  EXPECT_EQ(agent_error(R"({"id":"a","steps":[{"user":"x"},{"tool_calls":)" + calls +
                        R"(,"tool_results":[{"tool_call_id":"c1","content":"r"}]},{"tool_calls":)" +
                        calls + R"(,"tool_results":[{"tool_call_id":"c1","content":"r"}]}]})"),
            "a.jsonl:1: key `steps[2].tool_calls[0].id`: \"c1\" is used twice in this "
            "trajectory; call ids must be unique");
  EXPECT_EQ(agent_error(R"({"id":"a","steps":[{"user":"x","tool_calls":[]}]})"),
            "a.jsonl:1: key `steps[0]`: a step is {user} or {tool_calls, tool_results}, not both");
  EXPECT_EQ(agent_error(R"({"id":"a","steps":[{"user":"x","think_ms":-1}]})"),
            "a.jsonl:1: key `steps[0].think_ms`: must be a finite number >= 0");
  // Issue 32 (5): 1e308 was written to the stream, and overflowed the run's schedule.
  EXPECT_EQ(agent_error(R"({"id":"a","think_ms":1e308,"steps":[{"user":"x"},{"user":"y"}]})"),
            "a.jsonl:1: key `think_ms`: is 1e+308 ms, more than one day (86400000 ms), the "
            "longest pause a turn may take");
  EXPECT_EQ(agent_error(R"({"id":"a","steps":[{"user":"x"},{"user":"y","think_ms":9e7}]})"),
            "a.jsonl:1: key `steps[1].think_ms`: is 9e+07 ms, more than one day (86400000 ms), the "
            "longest pause a turn may take");
  EXPECT_EQ(agent_error(R"({"id":"a","steps":[{"user":3}]})"),
            "a.jsonl:1: key `steps[0].user`: must be a string (got an integer)");
  EXPECT_EQ(agent_error(R"({"id":"a","steps":[{"user":"x"}]})"
                        "\n"
                        R"({"id":"a","steps":[{"user":"y"}]})"),
            "a.jsonl:2: key `id`: \"a\" was already used at a.jsonl:1; trajectory ids must be "
            "unique");
  EXPECT_EQ(agent_error("{oops"), "a.jsonl:1: invalid JSON (syntax error)");
  EXPECT_EQ(agent_error("\n\n"), "a.jsonl: no trajectories (empty file)");
}

}  // namespace
}  // namespace dyno::workload
