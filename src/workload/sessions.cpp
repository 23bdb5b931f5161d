#include "workload/sessions.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "workload/message_json.h"
#include "workload/request_stream.h"
#include "workload/stream_json.h"

namespace dyno::workload {

using stream_json::fail;

double read_think_ms(const boost::json::value& v, const std::string& where,
                     const std::string& key) {
  const double ms = stream_json::as_number(v, where, key);
  if (!(ms >= 0.0) || !std::isfinite(ms)) fail(where, key, "must be a finite number >= 0");
  if (ms > kMaxThinkMs) {
    fail(where, key,
         "is " + stream_json::number_text(ms) +
             " ms, more than one day (86400000 ms), the "
             "longest pause a turn may take");
  }
  return ms;
}

namespace {

/// The ids of a validated `tool_calls` array (its compact JSON), in order.
std::vector<std::string> call_ids(const std::string& calls) {
  std::vector<std::string> ids;
  if (calls.empty()) return ids;
  const boost::json::value v = parse_kept_json(calls);
  for (const boost::json::value& call : v.as_array()) {
    ids.emplace_back(call.at("id").as_string());
  }
  return ids;
}

}  // namespace

void check_tool_answers(const std::string& calls, const std::vector<Message>& messages,
                        const std::string& where, const std::string& calls_key,
                        const std::function<std::string(std::size_t)>& key_of,
                        const std::string& unit) {
  std::vector<std::string> open = call_ids(calls);
  std::string open_key = calls_key;
  std::string open_unit = "of this " + unit;
  const auto unanswered = [&] {
    fail(where, open_key,
         "no result for call \"" + open.front() + "\"; answer every call " + open_unit +
             " with a tool message");
  };
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const Message& m = messages[i];
    if (m.role == "tool") {
      const auto it = std::find(open.begin(), open.end(), m.tool_call_id);
      if (it == open.end()) {
        fail(where, key_of(i) + ".tool_call_id",
             "\"" + m.tool_call_id + "\" answers no open call " + open_unit +
                 " (each call is answered exactly once)");
      }
      open.erase(it);
      continue;
    }
    if (!open.empty()) unanswered();
    if (!m.tool_calls.empty()) {
      open = call_ids(m.tool_calls);
      open_key = key_of(i) + ".tool_calls";
      open_unit = "of " + key_of(i);
    }
  }
  if (!open.empty()) unanswered();
}

void read_turn_key(const std::string& key, const boost::json::value& v, const std::string& where,
                   TurnKeys& keys) {
  keys.given = true;
  if (key == "session") {
    keys.session = stream_json::as_string(v, where, key);
    if (keys.session->empty()) fail(where, key, "is empty; give the session's id");
  } else if (key == "turn") {
    keys.turn = stream_json::as_int(v, where, key);
    if (*keys.turn < 0) fail(where, key, "must be >= 0 (got " + std::to_string(*keys.turn) + ")");
  } else if (key == "think_ms") {
    keys.think_ms = read_think_ms(v, where, key);
  } else if (key == "tool_calls") {
    keys.tool_calls = parse_tool_calls(v, where, key);
  } else if (key == "tools") {
    keys.tools = parse_tools(v, where, key);
  } else {
    throw std::logic_error("read_turn_key: not a turn key: " + key);
  }
}

Turn finish_turn(const TurnKeys& keys, const Request& request, const std::string& where) {
  if (!keys.session)
    fail(where, "session",
         "missing; `turn`, `think_ms`, `tool_calls` and "
         "`tools` belong to a session's turn");
  if (!keys.turn) fail(where, "turn", "missing; a session's line says which turn it is (0, 1, …)");
  if (!request.is_chat()) {
    fail(where, "prompt", "a session's turn is a chat request: give `messages`, not `prompt`");
  }
  Turn t;
  t.session = *keys.session;
  t.index = *keys.turn;
  t.think_ms = keys.think_ms;
  t.tool_calls = keys.tool_calls;
  t.tools = keys.tools;
  if (t.index == 0) {
    if (t.think_ms) fail(where, "think_ms", "only from turn 1 on (the pause after an answer)");
    if (!t.tool_calls.empty()) {
      fail(where, "tool_calls", "only from turn 1 on (the calls the previous answer made)");
    }
  } else {
    if (!t.tools.empty()) fail(where, "tools", "only on turn 0 (sent with every turn)");
    if (request.at_ms) fail(where, "at_ms", "only on turn 0 (a session starts at a time)");
  }
  return t;
}

void check_sessions(const std::vector<Request>& requests, const std::string& source,
                    const std::vector<std::size_t>& lines) {
  std::map<std::string, std::int64_t> next_turn;
  const bool sessions = requests.front().turn.has_value();
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const std::string where = source + ":" + std::to_string(lines.at(i));
    const Request& r = requests[i];
    if (r.turn.has_value() != sessions) {
      fail(where, "session",
           sessions ? "missing; the stream's first line is a session's turn, so every line is"
                    : "given, but the stream's first line is not a session's turn; a stream "
                      "has sessions on every line or on none");
    }
    if (!sessions) continue;
    std::int64_t& expected = next_turn[r.turn->session];
    if (r.turn->index != expected) {
      fail(where, "turn",
           "is " + std::to_string(r.turn->index) + " but session \"" + r.turn->session +
               "\" expects turn " + std::to_string(expected) +
               " here (turns are 0, 1, … in file order)");
    }
    ++expected;
  }
}

std::vector<SessionPlan> plan_sessions(const std::vector<Request>& requests) {
  std::vector<SessionPlan> out;
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (!requests[i].turn) continue;
    const auto [it, inserted] = index.emplace(requests[i].turn->session, out.size());
    if (inserted) out.push_back(SessionPlan{requests[i].turn->session, {}});
    out[it->second].turns.push_back(i);
  }
  return out;
}

std::size_t count_turns(const std::vector<SessionPlan>& sessions) {
  std::size_t n = 0;
  for (const auto& s : sessions) n += s.turns.size();
  return n;
}

Request Conversation::request_for(const Request& turn) {
  if (!turn.turn || turn.turn->index != next_turn_) {
    throw std::logic_error("Conversation: turn " + std::to_string(next_turn_) + " expected");
  }
  if (next_turn_ == 0) {
    tools_ = turn.turn->tools;
  } else {
    if (!answer_) throw std::logic_error("Conversation: the previous turn has no answer yet");
    Message assistant;
    assistant.role = "assistant";
    assistant.content = std::move(*answer_);
    assistant.tool_calls = turn.turn->tool_calls;
    history_.push_back(std::move(assistant));
    answer_.reset();
  }
  history_.insert(history_.end(), turn.messages.begin(), turn.messages.end());
  Request out = turn;
  out.messages = history_;
  out.turn->tools = tools_;
  ++next_turn_;
  return out;
}

void Conversation::answered(std::string text) { answer_ = std::move(text); }

}  // namespace dyno::workload
