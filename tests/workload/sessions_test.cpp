#include "workload/sessions.h"

#include <gtest/gtest.h>

#include <string>

#include "workload/request_stream.h"

namespace dyno::workload {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_stream_text(text, "s.jsonl");
  } catch (const StreamError& e) {
    return e.what();
  }
  return "no error";
}

constexpr const char* kTwoSessions =
    R"({"id":"a0","session":"a","turn":0,"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi \"there\"."}],"max_tokens":8}
{"id":"b0","session":"b","turn":0,"messages":[{"role":"user","content":"B?"}]}
{"id":"a1","session":"a","turn":1,"think_ms":250,"messages":[{"role":"user","content":"And then?"}]}
{"id":"a2","session":"a","turn":2,"think_ms":0,"messages":[{"role":"user","content":"Last."}]}
)";

TEST(Sessions, StreamLinesCarryTurnsAndPlanThemInOrder) {
  const RequestStream s = parse_stream_text(kTwoSessions, "s.jsonl");
  ASSERT_EQ(s.requests.size(), 4u);
  ASSERT_TRUE(s.requests[2].turn);
  EXPECT_EQ(s.requests[2].turn->session, "a");
  EXPECT_EQ(s.requests[2].turn->index, 1);
  EXPECT_EQ(s.requests[2].turn->think_ms, 250.0);
  const auto plan = plan_sessions(s.requests);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].id, "a");
  EXPECT_EQ(plan[0].turns, (std::vector<std::size_t>{0, 2, 3}));
  EXPECT_EQ(plan[1].turns, (std::vector<std::size_t>{1}));
  EXPECT_EQ(count_turns(plan), 4u);
  // Lines round-trip, so a written stream keeps its sessions and its hash.
  for (const Request& r : s.requests) {
    EXPECT_EQ(parse_request_line(to_json_line(r), "x"), r);
  }
  EXPECT_TRUE(plan_sessions(parse_stream_text(R"({"id":"x","prompt":"p"})", "p").requests).empty());
}

TEST(Sessions, MalformedSessionsNameTheLineAndKey) {
  EXPECT_EQ(
      error_of(R"({"id":"a1","session":"a","turn":1,"messages":[{"role":"user","content":"x"}]})"),
      "s.jsonl:1: key `turn`: is 1 but session \"a\" expects turn 0 here (turns are 0, 1, "
      "… in file order)");
  EXPECT_EQ(
      error_of(R"({"id":"a0","session":"a","turn":0,"messages":[{"role":"user","content":"x"}]}
{"id":"a2","session":"a","turn":2,"messages":[{"role":"user","content":"x"}]})"),
      "s.jsonl:2: key `turn`: is 2 but session \"a\" expects turn 1 here (turns are 0, 1, … in "
      "file order)");
  EXPECT_EQ(
      error_of(R"({"id":"a0","session":"a","turn":0,"messages":[{"role":"user","content":"x"}]}
{"id":"p","messages":[{"role":"user","content":"x"}]})"),
      "s.jsonl:2: key `session`: missing; the stream's first line is a session's turn, so every "
      "line is");
  EXPECT_EQ(error_of(R"({"id":"a0","session":"a","messages":[{"role":"user","content":"x"}]})"),
            "s.jsonl:1: key `turn`: missing; a session's line says which turn it is (0, 1, …)");
  EXPECT_EQ(error_of(R"({"id":"a0","turn":0,"messages":[{"role":"user","content":"x"}]})"),
            "s.jsonl:1: key `session`: missing; `turn`, `think_ms`, `tool_calls` and `tools` "
            "belong to a session's turn");
  EXPECT_EQ(error_of(R"({"id":"a0","session":"a","turn":0,"prompt":"x"})"),
            "s.jsonl:1: key `prompt`: a session's turn is a chat request: give `messages`, not "
            "`prompt`");
  EXPECT_EQ(
      error_of(
          R"({"id":"a0","session":"a","turn":0,"think_ms":5,"messages":[{"role":"user","content":"x"}]})"),
      "s.jsonl:1: key `think_ms`: only from turn 1 on (the pause after an answer)");
  EXPECT_EQ(
      error_of(R"({"id":"a0","session":"a","turn":-1,"messages":[{"role":"user","content":"x"}]})"),
      "s.jsonl:1: key `turn`: must be >= 0 (got -1)");
  EXPECT_EQ(
      error_of(R"({"id":"a0","session":"","turn":0,"messages":[{"role":"user","content":"x"}]})"),
      "s.jsonl:1: key `session`: is empty; give the session's id");
  EXPECT_EQ(
      error_of(
          R"({"id":"a0","session":"a","turn":0,"think_ms":-1,"messages":[{"role":"user","content":"x"}]})"),
      "s.jsonl:1: key `think_ms`: must be a finite number >= 0");
  EXPECT_EQ(
      error_of(R"({"id":"a0","session":"a","turn":0,"messages":[{"role":"user","content":"x"}]}
{"id":"a1","session":"a","turn":1,"at_ms":5,"messages":[{"role":"user","content":"x"}]})"),
      "s.jsonl:2: key `at_ms`: only on turn 0 (a session starts at a time)");
  EXPECT_EQ(
      error_of(R"({"id":"a0","session":"a","turn":0,"messages":[{"role":"user","content":"x"}]}
{"id":"a1","session":"a","turn":1,"tools":[{"type":"function"}],"messages":[{"role":"user","content":"x"}]})"),
      "s.jsonl:2: key `tools`: only on turn 0 (sent with every turn)");
  EXPECT_EQ(error_of(R"({"id":"x","prompt":"p","at_ms":-3})"),
            "s.jsonl:1: key `at_ms`: must be a finite number >= 0");
}

TEST(Sessions, ToolCallsAndToolMessagesAreChecked) {
  EXPECT_EQ(
      error_of(R"({"id":"a0","session":"a","turn":0,"messages":[{"role":"user","content":"x"}]}
{"id":"a1","session":"a","turn":1,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f"}}],"messages":[{"role":"tool","tool_call_id":"c1","content":"r"}]})"),
      "s.jsonl:2: key `tool_calls[0].function.arguments`: missing (the JSON text)");
  EXPECT_EQ(error_of(R"({"id":"x","messages":[{"role":"tool","content":"r"}]})"),
            "s.jsonl:1: key `messages[0].tool_call_id`: missing; a tool message names the call it "
            "answers");
  EXPECT_EQ(
      error_of(
          R"({"id":"x","messages":[{"role":"user","content":"r","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}]})"),
      "s.jsonl:1: key `messages[0].tool_calls`: only an assistant message carries tool "
      "calls");
  EXPECT_EQ(error_of(R"({"id":"x","messages":[{"role":"user","content":null}]})"),
            "s.jsonl:1: key `messages[0].content`: is null; only an assistant message with "
            "tool_calls may have no content");
  EXPECT_EQ(
      error_of(
          R"({"id":"x","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"42"},{"role":"user","content":"ok?"}]})"),
      "no error");
}

// Issue 32 (5): think_ms 1e300 overflowed the schedule to negative times; at_ms 1e300 the replay.
TEST(Sessions, ThinkMsAndAtMsAreBounded) {
  constexpr const char* kTurn0 =
      R"({"id":"a0","session":"a","turn":0,"messages":[{"role":"user","content":"x"}]})";
  EXPECT_EQ(
      error_of(
          std::string(kTurn0) + "\n" +
          R"({"id":"a1","session":"a","turn":1,"think_ms":1e300,"messages":[{"role":"user","content":"y"}]})"),
      "s.jsonl:2: key `think_ms`: is 1e+300 ms, more than one day (86400000 ms), the longest "
      "pause a turn may take");
  EXPECT_EQ(
      error_of(
          std::string(kTurn0) + "\n" +
          R"({"id":"a1","session":"a","turn":1,"think_ms":86400000,"messages":[{"role":"user","content":"y"}]})"),
      "no error");
  EXPECT_EQ(error_of(R"({"id":"x","prompt":"p","at_ms":1e300})"),
            "s.jsonl:1: key `at_ms`: is 1e+300 ms, more than the largest send time a stream may "
            "give (1e13 ms)");
  EXPECT_EQ(error_of(R"({"id":"x","prompt":"p","at_ms":1e13})"), "no error");
}

// Issue 32 (19): a turn's tool message must answer a call of the answer before it, as
// `stream import agent` requires (one check, workload::check_tool_answers).
TEST(Sessions, ToolMessagesAnswerOpenCallsExactlyOnce) {
  constexpr const char* kTurn0 =
      R"({"id":"a0","session":"a","turn":0,"messages":[{"role":"user","content":"x"}]})";
  const std::string calls =
      R"("tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}])";
  EXPECT_EQ(error_of(std::string(kTurn0) + "\n" + R"({"id":"a1","session":"a","turn":1,)" + calls +
                     R"(,"messages":[{"role":"tool","tool_call_id":"c9","content":"r"}]})"),
            "s.jsonl:2: key `messages[0].tool_call_id`: \"c9\" answers no open call of this turn "
            "(each call is answered exactly once)");
  EXPECT_EQ(error_of(std::string(kTurn0) + "\n" + R"({"id":"a1","session":"a","turn":1,)" + calls +
                     R"(,"messages":[{"role":"tool","tool_call_id":"c1","content":"r"},)"
                     R"({"role":"tool","tool_call_id":"c1","content":"again"}]})"),
            "s.jsonl:2: key `messages[1].tool_call_id`: \"c1\" answers no open call of this turn "
            "(each call is answered exactly once)");
  EXPECT_EQ(error_of(std::string(kTurn0) + "\n" + R"({"id":"a1","session":"a","turn":1,)" + calls +
                     R"(,"messages":[{"role":"user","content":"r"}]})"),
            "s.jsonl:2: key `tool_calls`: no result for call \"c1\"; answer every call of this "
            "turn with a tool message");
  // A tool message on turn 0 (no call before it), and in a single request without its call.
  EXPECT_EQ(
      error_of(
          R"({"id":"a0","session":"a","turn":0,"messages":[{"role":"tool","tool_call_id":"c1","content":"r"}]})"),
      "s.jsonl:1: key `messages[0].tool_call_id`: \"c1\" answers no open call of this turn "
      "(each call is answered exactly once)");
  EXPECT_EQ(
      error_of(
          R"({"id":"x","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"d","content":"42"}]})"),
      "s.jsonl:1: key `messages[1].tool_call_id`: \"d\" answers no open call of messages[0] "
      "(each call is answered exactly once)");
  EXPECT_EQ(
      error_of(
          R"({"id":"x","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"?"}]})"),
      "s.jsonl:1: key `messages[0].tool_calls`: no result for call \"c\"; answer every call of "
      "messages[0] with a tool message");
}

TEST(Sessions, TheConversationFeedsBackTheActualAnswersVerbatim) {
  const RequestStream s = parse_stream_text(kTwoSessions, "s.jsonl");
  Conversation c;
  const Request t0 = c.request_for(s.requests[0]);
  EXPECT_EQ(t0.messages, s.requests[0].messages);
  EXPECT_EQ(t0.id, "a0");
  EXPECT_EQ(t0.sampling.max_tokens, 8);
  const std::string answer = "Well \"quoted\", \xc3\xa9\n and  spaced ";
  c.answered(answer);
  const Request t1 = c.request_for(s.requests[2]);
  ASSERT_EQ(t1.messages.size(), 4u);
  EXPECT_EQ(t1.messages[2].role, "assistant");
  EXPECT_EQ(t1.messages[2].content, answer);
  EXPECT_EQ(t1.messages[3].content, "And then?");
  EXPECT_EQ(t1.id, "a1");
  c.answered("second");
  const Request t2 = c.request_for(s.requests[3]);
  ASSERT_EQ(t2.messages.size(), 6u);
  EXPECT_EQ(t2.messages[2].content, answer);
  EXPECT_EQ(t2.messages[4].content, "second");
  EXPECT_EQ(t2.messages[5].content, "Last.");
  EXPECT_EQ(c.turns_sent(), 3);
  // Out of order, or before the answer: a programming error, never a silent wrong prompt.
  Conversation d;
  EXPECT_THROW(d.request_for(s.requests[2]), std::logic_error);
  d.request_for(s.requests[0]);
  EXPECT_THROW(d.request_for(s.requests[2]), std::logic_error);
}

TEST(Sessions, ToolTurnsAttachTheRecordedCallsToTheActualAnswer) {
  const RequestStream s = parse_stream_text(
      R"({"id":"t0","session":"t","turn":0,"tools":[{"type":"function","function":{"name":"ls","parameters":{"type":"object"}}}],"messages":[{"role":"system","content":"You are an agent."},{"role":"user","content":"List the files."}]}
{"id":"t1","session":"t","turn":1,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{\"dir\":\".\"}"}}],"messages":[{"role":"tool","tool_call_id":"call_1","content":"a.txt b.txt"}]}
)",
      "agent.jsonl");
  Conversation c;
  const Request t0 = c.request_for(s.requests[0]);
  EXPECT_EQ(t0.turn->tools,
            R"([{"type":"function","function":{"name":"ls","parameters":{"type":"object"}}}])");
  c.answered("Let me look.");
  const Request t1 = c.request_for(s.requests[1]);
  ASSERT_EQ(t1.messages.size(), 4u);
  EXPECT_EQ(t1.messages[2].role, "assistant");
  EXPECT_EQ(t1.messages[2].content, "Let me look.");
  EXPECT_EQ(
      t1.messages[2].tool_calls,
      R"([{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{\"dir\":\".\"}"}}])");
  EXPECT_EQ(t1.messages[3].role, "tool");
  EXPECT_EQ(t1.messages[3].tool_call_id, "call_1");
  EXPECT_EQ(t1.turn->tools, t0.turn->tools);  // the spec goes with every turn
  for (const Request& r : s.requests) EXPECT_EQ(parse_request_line(to_json_line(r), "x"), r);
}

}  // namespace
}  // namespace dyno::workload
