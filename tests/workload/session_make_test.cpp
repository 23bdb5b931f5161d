#include "workload/session_make.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "sim/tokenizer.h"
#include "workload/request_stream.h"
#include "workload/sessions.h"
#include "workload/token_counters.h"

namespace dyno::workload {
namespace {

using test::sim_count;
using test::toy_count;

SessionMakeOptions options() {
  SessionMakeOptions o;
  o.sessions = 3;
  o.turns = 4;
  o.turn_input_tokens = 40;
  o.system_tokens = 30;
  o.think_ms = 250.0;
  o.output_tokens = 16;
  o.seed = 5;
  return o;
}

Request chat(std::vector<Message> messages) {
  Request r;
  r.messages = std::move(messages);
  return r;
}

/// The session's turns in order, by session id.
std::vector<const Request*> turns_of(const RequestStream& s, const std::string& session) {
  std::vector<const Request*> out;
  for (const Request& r : s.requests) {
    if (r.turn && r.turn->session == session) out.push_back(&r);
  }
  return out;
}

TEST(SessionMake, EveryTurnHitsItsLengthWithTheSimTokenizer) {
  std::vector<TurnLengthReport> report;
  const RequestStream s = make_session_stream(options(), sim_count, &report);
  ASSERT_EQ(s.requests.size(), 12u);
  ASSERT_EQ(report.size(), 12u);
  for (std::size_t i = 0; i < 3; ++i) {
    const std::string session = "sess-5-" + std::to_string(i);
    const auto turns = turns_of(s, session);
    ASSERT_EQ(turns.size(), 4u);
    for (std::size_t k = 0; k < turns.size(); ++k) {
      const Request& r = *turns[k];
      EXPECT_EQ(r.id, session + "-" + std::to_string(k));
      EXPECT_EQ(r.turn->index, static_cast<std::int64_t>(k));
      EXPECT_EQ(turn_tokens(turns, k, sim_count), k == 0 ? 70 : 40) << r.id;
      EXPECT_EQ(r.sampling.max_tokens, 16);
      EXPECT_EQ(r.sampling.min_tokens, 16);
      EXPECT_EQ(r.sampling.ignore_eos, true);
      EXPECT_EQ(r.tags.at("source"), "sessions");
      if (k == 0) {
        ASSERT_EQ(r.messages.size(), 2u);
        EXPECT_EQ(r.messages[0].role, "system");
        EXPECT_EQ(sim_count(chat({r.messages[0]})), 30);
        EXPECT_FALSE(r.turn->think_ms);
      } else {
        ASSERT_EQ(r.messages.size(), 1u);
        EXPECT_EQ(r.messages[0].role, "user");
        EXPECT_EQ(r.turn->think_ms, 250.0);
      }
    }
  }
  EXPECT_EQ(report[0].requested, 70);
  EXPECT_EQ(report[0].system_requested, 30);
  EXPECT_EQ(report[0].system_achieved, 30);
  EXPECT_EQ(report[1].requested, 40);
  for (const TurnLengthReport& r : report) EXPECT_LE(r.calls, 2 * kMaxExactCalls) << r.id;
  // The file reads back as a valid session stream, with the same hash.
  std::string text;
  for (const Request& r : s.requests) text += to_json_line(r) + "\n";
  const RequestStream back = parse_stream_text(text, "s.jsonl");
  EXPECT_EQ(back.requests, s.requests);
  EXPECT_EQ(back.sha256, s.sha256);
  EXPECT_EQ(plan_sessions(back.requests).size(), 3u);
}

TEST(SessionMake, TheDeltaDoesNotDependOnTheAnswerText) {
  // The sim's template frames each message alone, so the tokens a user message adds are the
  // same whatever the previous answer says: the stand-in stands for the real answer.
  const RequestStream s = make_session_stream(options(), sim_count);
  const auto turns = turns_of(s, "sess-5-1");
  for (const std::string answer : {"ok", " a much longer answer, with 7 digits 1234567!", ""}) {
    std::vector<Message> before = turns[0]->messages;
    before.push_back(Message{"assistant", answer});
    const std::int64_t base = sim_count(chat(before));
    before.push_back(turns[1]->messages[0]);
    EXPECT_EQ(sim_count(chat(before)) - base, 40) << answer;
  }
}

TEST(SessionMake, SharedOrPerSessionSystemMessages) {
  const RequestStream shared = make_session_stream(options(), sim_count);
  std::set<std::string> systems;
  for (const Request& r : shared.requests) {
    if (r.turn->index == 0) systems.insert(r.messages[0].content);
  }
  EXPECT_EQ(systems.size(), 1u);
  SessionMakeOptions o = options();
  o.shared_system = false;
  const RequestStream own = make_session_stream(o, sim_count);
  systems.clear();
  for (const Request& r : own.requests) {
    if (r.turn->index != 0) continue;
    systems.insert(r.messages[0].content);
    EXPECT_EQ(sim_count(chat({r.messages[0]})), 30) << r.id;
    EXPECT_EQ(sim_count(r), 70) << r.id;
  }
  EXPECT_EQ(systems.size(), 3u);
  EXPECT_NE(own.sha256, shared.sha256);
}

TEST(SessionMake, LiteralOrNoSystemMessage) {
  SessionMakeOptions o = options();
  o.system_tokens = 0;
  o.system_text = "You are terse.";
  std::vector<TurnLengthReport> report;
  const RequestStream lit = make_session_stream(o, sim_count, &report);
  const std::int64_t sys = sim_count(chat({Message{"system", "You are terse."}}));
  EXPECT_EQ(lit.requests[0].messages[0].content, "You are terse.");
  EXPECT_EQ(sim_count(lit.requests[0]), sys + 40);
  EXPECT_EQ(report[0].system_achieved, sys);
  o.system_text.clear();
  const RequestStream none = make_session_stream(o, sim_count);
  ASSERT_EQ(none.requests[0].messages.size(), 1u);
  EXPECT_EQ(sim_count(none.requests[0]), 40);
}

TEST(SessionMake, SeededAndDeterministic) {
  const RequestStream a = make_session_stream(options(), sim_count);
  const RequestStream b = make_session_stream(options(), sim_count);
  EXPECT_EQ(a.requests, b.requests);
  EXPECT_EQ(a.sha256, b.sha256);
  EXPECT_EQ(a.source,
            "sessions(sessions=3,turns=4,turn_input_tokens=40,system_tokens=30,"
            "shared_system=true,output_tokens=16,seed=5,think_ms=250)");
  SessionMakeOptions o = options();
  o.seed = 6;
  const RequestStream c = make_session_stream(o, sim_count);
  EXPECT_NE(c.sha256, a.sha256);
  EXPECT_EQ(c.requests[0].id, "sess-6-0-0");
  // Every user message differs from every other.
  std::set<std::string> texts;
  for (const Request& r : a.requests) texts.insert(r.messages.back().content);
  EXPECT_EQ(texts.size(), a.requests.size());
}

TEST(SessionMake, ACoarseTokenizerIsHitToo) {
  SessionMakeOptions o = options();
  o.sessions = 2;
  const RequestStream s = make_session_stream(o, toy_count);
  for (const std::string session : {"sess-5-0", "sess-5-1"}) {
    const auto turns = turns_of(s, session);
    for (std::size_t k = 0; k < turns.size(); ++k) {
      EXPECT_EQ(turn_tokens(turns, k, toy_count), k == 0 ? 70 : 40) << turns[k]->id;
    }
  }
}

TEST(SessionMake, LengthsBelowTheTemplateAndBadOptionsAreErrors) {
  SessionMakeOptions o = options();
  o.system_tokens = 0;
  o.turn_input_tokens = 3;  // the sim's template costs 19 tokens for one user message
  try {
    make_session_stream(o, sim_count);
    FAIL() << "no error";
  } catch (const ExactLengthError& e) {
    EXPECT_NE(std::string(e.what()).find("session 0 turn 0 (sess-5-0-0)"), std::string::npos)
        << e.what();
  }
  o = options();
  o.turns = 0;
  EXPECT_THROW(make_session_stream(o, sim_count), std::invalid_argument);
  o = options();
  o.system_text = "x";
  EXPECT_THROW(make_session_stream(o, sim_count), std::invalid_argument);
  o = options();
  o.system_tokens = 0;
  o.shared_system = false;
  EXPECT_THROW(make_session_stream(o, sim_count), std::invalid_argument);
}

}  // namespace
}  // namespace dyno::workload
