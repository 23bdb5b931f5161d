// Multi-turn sessions (docs/protocols.md "Sessions"): the stream keys of a turn, the checks of a
// stream's sessions, the order their turns run in, and the conversation each turn sends — the
// earlier messages, the assistant's actual answers, then the turn's own messages.
#pragma once

#include <boost/json/value.hpp>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "workload/request.h"

namespace dyno::workload {

/// The longest think_ms a stream (or an agent trajectory) may give: one day. A longer pause is
/// no user's; 1e300 would overflow the run's schedule.
inline constexpr double kMaxThinkMs = 86'400'000.0;

/// A think_ms value: a finite number from 0 to kMaxThinkMs. Throws StreamError naming `where`
/// and `key`. The one check of the stream reader and of `stream import agent`.
double read_think_ms(const boost::json::value& v, const std::string& where, const std::string& key);

/// The tool messages among `messages` answer the calls before them: `calls` (the compact JSON
/// of a turn's `tool_calls`, the previous answer's calls; "" for none) are open first, and each
/// assistant message with `tool_calls` opens its own; each `tool` message answers an open call
/// (by `tool_call_id`) exactly once, and every open call is answered before any other message
/// and by the end. `key_of(i)` names message i in errors, `calls_key` the calls given, `unit`
/// what they belong to ("turn", "step"). Throws StreamError naming `where` and the key, e.g.
/// "key `messages[0].tool_call_id`: \"c9\" answers no open call of this turn". The one check
/// of the stream reader and of `stream import agent`.
void check_tool_answers(const std::string& calls, const std::vector<Message>& messages,
                        const std::string& where, const std::string& calls_key,
                        const std::function<std::string(std::size_t)>& key_of,
                        const std::string& unit);

/// The turn keys of one stream line as read (session, turn, think_ms, tool_calls, tools).
struct TurnKeys {
  bool given = false;
  std::optional<std::string> session;
  std::optional<std::int64_t> turn;
  std::optional<double> think_ms;
  std::string tool_calls;
  std::string tools;
};

/// Reads one of the turn keys into `keys`. Throws StreamError naming `where` and the key.
void read_turn_key(const std::string& key, const boost::json::value& v, const std::string& where,
                   TurnKeys& keys);

/// The line's Turn, checked against the rest of the request: `session` and `turn` come
/// together; a turn is a chat request; think_ms and tool_calls only from turn 1 on, tools only
/// on turn 0; at_ms only on turn 0 (a session starts at a time, its later turns follow their
/// answers). Throws StreamError.
Turn finish_turn(const TurnKeys& keys, const Request& request, const std::string& where);

/// Checks the sessions of a stream: each session's turns are 0, 1, … with none missing or
/// repeated, each after the previous one in the file, and a stream either has sessions on
/// every line or on none. `lines[i]` is the file line of requests[i] (for messages as
/// "<source>:<line>"). Throws StreamError.
void check_sessions(const std::vector<Request>& requests, const std::string& source,
                    const std::vector<std::size_t>& lines);

/// A session: its id and the stream positions of its turns, in turn order.
struct SessionPlan {
  std::string id;
  std::vector<std::size_t> turns;
};

/// The sessions of a checked stream in the order their first turns appear. Empty when the
/// stream has no sessions.
std::vector<SessionPlan> plan_sessions(const std::vector<Request>& requests);

/// Total turns of the sessions.
std::size_t count_turns(const std::vector<SessionPlan>& sessions);

/// One running session's conversation. request_for(turn) gives the request to send for the
/// session's next turn; answered(text) gives the assistant's answer to it as streamed back.
class Conversation {
 public:
  /// The request to send: the turn's id and sampling, and as messages everything so far —
  /// turn 0's messages; then for each later turn the previous answer as an assistant message
  /// (carrying the turn's recorded `tool_calls` when it has them), then the turn's messages.
  /// Turn 0's `tools` go with every turn. Throws std::logic_error when a turn comes out of
  /// order or before the previous answer.
  Request request_for(const Request& turn);
  /// The answer to the last request_for (content text, reasoning excluded).
  void answered(std::string text);
  /// Turns sent so far.
  std::int64_t turns_sent() const { return next_turn_; }

 private:
  std::vector<Message> history_;
  std::string tools_;
  std::optional<std::string> answer_;
  std::int64_t next_turn_ = 0;
};

}  // namespace dyno::workload
