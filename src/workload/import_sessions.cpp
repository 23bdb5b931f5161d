#include "workload/import_sessions.h"

#include <boost/json.hpp>
#include <cmath>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "json/json_text.h"
#include "workload/import_util.h"
#include "workload/message_json.h"
#include "workload/request_stream.h"
#include "workload/sessions.h"
#include "workload/stream_json.h"

namespace dyno::workload {

namespace json = boost::json;
namespace fs = std::filesystem;
using stream_json::fail;
using stream_json::got;

namespace {

// ----------------------------------------------------------------------------------------------
// ShareGPT, every turn

/// One human turn of a conversation: the messages it adds, and its recorded reply's words.
struct HumanTurn {
  std::vector<Message> messages;
  std::optional<std::string> reply;  ///< the reply turns after it, joined by "\n"
};

/// The conversation's id (as stream_from_sharegpt names it) and its human turns.
struct ShareGptConversation {
  std::string id;
  std::vector<HumanTurn> turns;
};

ShareGptConversation read_conversation(const json::value& element, std::size_t index,
                                       const std::string& where) {
  if (!element.is_object()) throw StreamError(where + ": expected an object {id, conversations}");
  const json::object& obj = element.get_object();
  ShareGptConversation c;
  c.id = std::to_string(index);
  if (const json::value* v = obj.if_contains("id")) {
    if (v->is_string()) {
      c.id = std::string(v->get_string());
    } else if (v->is_int64() || v->is_uint64()) {
      c.id = json_text::compact(*v);
    } else {
      throw StreamError(where + ": key `id` must be a string or an integer");
    }
    if (c.id.empty()) throw StreamError(where + ": key `id` is empty");
  }
  const json::value* conv = obj.if_contains("conversations");
  if (conv == nullptr || !conv->is_array()) {
    throw StreamError(where + ": key `conversations` missing or not an array");
  }
  std::optional<std::string> first_system;
  std::vector<Message> pending_system;  // system turns after the first human turn
  const json::array& turns = conv->get_array();
  for (std::size_t t = 0; t < turns.size(); ++t) {
    using Role = import_util::ShareGptTurn::Role;
    import_util::ShareGptTurn turn = import_util::read_sharegpt_turn(turns, t, where);
    std::string& text = turn.text;
    const bool is_user = turn.role == Role::kUser;
    if (turn.role == Role::kSystem) {
      if (c.turns.empty()) {
        first_system = std::move(text);
      } else {
        pending_system.push_back(Message{"system", std::move(text)});
      }
    } else if (is_user) {
      HumanTurn h;
      if (c.turns.empty() && first_system) h.messages.push_back({"system", *first_system});
      h.messages.insert(h.messages.end(), pending_system.begin(), pending_system.end());
      pending_system.clear();
      h.messages.push_back(Message{"user", std::move(text)});
      c.turns.push_back(std::move(h));
    } else if (!c.turns.empty()) {  // a reply before the first human turn is ignored
      std::optional<std::string>& reply = c.turns.back().reply;
      reply = reply ? *reply + "\n" + text : text;
    }
  }
  return c;
}

}  // namespace

RequestStream stream_from_sharegpt_sessions(const fs::path& path, const ShareGptOptions& options) {
  const std::string name = path.string();
  if (options.api != Api::kChat) {
    throw StreamError(name + ": sessions (--multi-turn) need the chat API");
  }
  if (options.max_tokens < 1) throw StreamError(name + ": max_tokens must be >= 1");
  const json::value root =
      import_util::parse_json(import_util::read_all(path, "ShareGPT file"), name);
  if (!root.is_array()) {
    throw StreamError(name + ": expected a JSON array of {id, conversations} (ShareGPT)");
  }
  const json::array& arr = root.get_array();
  struct Item {
    ShareGptConversation conversation;
    std::string where;
  };
  std::vector<Item> items;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string where = name + ": element " + std::to_string(i);
    ShareGptConversation c = read_conversation(arr[i], i, where);
    if (c.turns.empty()) continue;
    if (c.turns.front().messages.back().content.size() < options.min_prompt_chars) continue;
    if (options.output_from_reference) {
      std::size_t answered = 0;
      while (answered < c.turns.size() && c.turns[answered].reply) ++answered;
      c.turns.resize(answered);
      if (c.turns.empty()) continue;
    }
    items.push_back({std::move(c), where});
  }
  if (options.shuffle) import_util::seeded_shuffle(items, options.seed);
  if (options.limit && items.size() > *options.limit) items.resize(*options.limit);
  RequestStream stream;
  std::map<std::string, std::string> seen;
  for (Item& item : items) {
    const std::string session = "sharegpt-" + item.conversation.id;
    for (std::size_t k = 0; k < item.conversation.turns.size(); ++k) {
      HumanTurn& h = item.conversation.turns[k];
      Request r;
      r.id = session + "-" + std::to_string(k);
      r.messages = std::move(h.messages);
      r.turn = Turn{session, static_cast<std::int64_t>(k), {}, {}, {}};
      r.sampling.max_tokens = options.output_from_reference
                                  ? import_util::reply_max_tokens(*h.reply)
                                  : options.max_tokens;
      import_util::add_unique(stream, seen, std::move(r), item.where);
    }
  }
  import_util::finish(stream, "sharegpt", path);
  return stream;
}

// ----------------------------------------------------------------------------------------------
// Agent trajectories

namespace {

std::int64_t positive_int(const json::value& v, const std::string& where, const std::string& key) {
  const std::int64_t n = stream_json::as_int(v, where, key);
  if (n < 1) fail(where, key, "must be >= 1 (got " + std::to_string(n) + ")");
  return n;
}

double think(const json::value& v, const std::string& where, const std::string& key) {
  return read_think_ms(v, where, key);  // the stream reader's own check
}

/// Per-step settings a trajectory gives as defaults.
struct Defaults {
  std::optional<double> think_ms;
  std::optional<std::int64_t> max_tokens;
};

/// The tool results of a tool step: `tool` messages answering each of `calls` exactly once.
std::vector<Message> tool_results(const json::value& v, const std::string& where,
                                  const std::string& key, const std::string& calls) {
  if (!v.is_array() || v.get_array().empty()) {
    fail(where, key, "must be a non-empty array of {tool_call_id, content}" + got(v));
  }
  std::vector<Message> out;
  const json::array& arr = v.get_array();
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string k = key + "[" + std::to_string(i) + "]";
    if (!arr[i].is_object())
      fail(where, k, "must be an object {tool_call_id, content}" + got(arr[i]));
    Message m;
    m.role = "tool";
    bool has_content = false;
    for (const auto& kv : arr[i].get_object()) {
      const std::string name(kv.key());
      if (name == "tool_call_id") {
        m.tool_call_id = stream_json::as_string(kv.value(), where, k + ".tool_call_id");
      } else if (name == "content") {
        m.content = stream_json::as_string(kv.value(), where, k + ".content");
        has_content = true;
      } else {
        fail(where, k + "." + name, "unknown key; a tool result has `tool_call_id` and `content`");
      }
    }
    if (m.tool_call_id.empty()) fail(where, k + ".tool_call_id", "missing or empty");
    if (!has_content) fail(where, k + ".content", "missing; give the tool's output text");
    out.push_back(std::move(m));
  }
  // The stream reader's own check: each call of the step answered exactly once.
  check_tool_answers(
      calls, out, where, key, [&key](std::size_t i) { return key + "[" + std::to_string(i) + "]"; },
      "step");
  return out;
}

/// One step as a turn: its messages, tool calls, and per-step settings.
Request read_step(const json::value& v, const std::string& where, const std::string& key,
                  std::size_t index, std::set<std::string>& call_ids, Defaults defaults) {
  if (!v.is_object())
    fail(where, key, "must be an object ({user} or {tool_calls, tool_results})" + got(v));
  const json::object& step = v.get_object();
  Request r;
  const json::value* user = nullptr;
  const json::value* calls = nullptr;
  const json::value* results = nullptr;
  for (const auto& kv : step) {
    const std::string name(kv.key());
    if (name == "user") {
      user = &kv.value();
    } else if (name == "tool_calls") {
      calls = &kv.value();
    } else if (name == "tool_results") {
      results = &kv.value();
    } else if (name == "think_ms") {
      defaults.think_ms = think(kv.value(), where, key + ".think_ms");
    } else if (name == "max_tokens") {
      defaults.max_tokens = positive_int(kv.value(), where, key + ".max_tokens");
    } else {
      fail(where, key + "." + name,
           "unknown key; a step has `user`, or `tool_calls` and `tool_results`, and optionally "
           "`think_ms` and `max_tokens`");
    }
  }
  r.turn = Turn{};
  r.turn->index = static_cast<std::int64_t>(index);
  if (user != nullptr) {
    if (calls != nullptr || results != nullptr) {
      fail(where, key, "a step is {user} or {tool_calls, tool_results}, not both");
    }
    r.messages.push_back(Message{"user", stream_json::as_string(*user, where, key + ".user")});
  } else {
    if (calls == nullptr)
      fail(where, key + ".tool_calls", "missing; a step has `user` or `tool_calls`");
    if (results == nullptr) fail(where, key + ".tool_results", "missing; give each call's result");
    if (index == 0) {
      fail(where, key, "step 0 must be a user step (tool calls follow an answer)");
    }
    r.turn->tool_calls = parse_tool_calls(*calls, where, key + ".tool_calls");
    const json::array& call_array = calls->get_array();
    for (std::size_t i = 0; i < call_array.size(); ++i) {
      const std::string id(call_array[i].at("id").get_string());
      if (!call_ids.insert(id).second) {
        fail(where, key + ".tool_calls[" + std::to_string(i) + "].id",
             "\"" + id + "\" is used twice in this trajectory; call ids must be unique");
      }
    }
    r.messages = tool_results(*results, where, key + ".tool_results", r.turn->tool_calls);
  }
  if (index > 0) r.turn->think_ms = defaults.think_ms;
  r.sampling.max_tokens = defaults.max_tokens;
  return r;
}

/// One trajectory line as its turns.
std::vector<Request> read_trajectory(const json::value& v, const std::string& where,
                                     const AgentOptions& options) {
  if (!v.is_object())
    throw StreamError(where + ": expected a trajectory object {id, steps}" + got(v));
  std::string id;
  std::string system;
  std::string tools;
  const json::value* steps = nullptr;
  Defaults defaults;
  defaults.max_tokens = options.max_tokens;
  for (const auto& kv : v.get_object()) {
    const std::string name(kv.key());
    if (name == "id") {
      id = stream_json::as_string(kv.value(), where, "id");
      if (id.empty()) fail(where, "id", "is empty; give the trajectory's id");
    } else if (name == "system") {
      system = stream_json::as_string(kv.value(), where, "system");
    } else if (name == "tools") {
      tools = parse_tools(kv.value(), where, "tools");
    } else if (name == "think_ms") {
      defaults.think_ms = think(kv.value(), where, "think_ms");
    } else if (name == "max_tokens") {
      defaults.max_tokens = positive_int(kv.value(), where, "max_tokens");
    } else if (name == "steps") {
      steps = &kv.value();
    } else {
      fail(where, name,
           "unknown key; a trajectory has `id`, `steps`, and optionally `system`, `tools`, "
           "`think_ms` and `max_tokens`");
    }
  }
  if (id.empty()) fail(where, "id", "missing; every trajectory has an id");
  if (steps == nullptr) fail(where, "steps", "missing; give the trajectory's steps");
  if (!steps->is_array() || steps->get_array().empty()) {
    fail(where, "steps", "must be a non-empty array of steps" + got(*steps));
  }
  std::vector<Request> out;
  std::set<std::string> call_ids;
  const json::array& arr = steps->get_array();
  for (std::size_t k = 0; k < arr.size(); ++k) {
    Request r = read_step(arr[k], where, "steps[" + std::to_string(k) + "]", k, call_ids, defaults);
    r.id = id + "-" + std::to_string(k);
    r.turn->session = id;
    if (k == 0) {
      if (!system.empty()) r.messages.insert(r.messages.begin(), Message{"system", system});
      r.turn->tools = tools;
    }
    r.tags["source"] = "agent";
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

RequestStream parse_agent_text(std::string_view text, const std::string& source,
                               const AgentOptions& options) {
  RequestStream stream;
  std::map<std::string, std::string> seen;
  std::map<std::string, std::string> sessions;
  std::size_t kept = 0;
  import_util::for_each_line(text, [&](const std::string& line, std::size_t line_no) {
    if (options.limit && kept >= *options.limit) return false;
    const std::string where = source + ":" + std::to_string(line_no);
    std::vector<Request> turns =
        read_trajectory(import_util::parse_json(line, where), where, options);
    const auto [it, inserted] = sessions.emplace(turns.front().turn->session, where);
    if (!inserted) {
      fail(where, "id",
           "\"" + it->first + "\" was already used at " + it->second +
               "; trajectory ids must be unique");
    }
    for (Request& r : turns) import_util::add_unique(stream, seen, std::move(r), where);
    ++kept;
    return true;
  });
  if (stream.requests.empty()) throw StreamError(source + ": no trajectories (empty file)");
  stream.source = source;
  stream.sha256 = stream_sha256(stream.requests);
  return stream;
}

RequestStream stream_from_agent(const fs::path& path, const AgentOptions& options) {
  const std::string text = import_util::read_all(path, "agent trajectory file");
  RequestStream stream = parse_agent_text(text, path.string(), options);
  stream.source = "agent:" + path.string();
  return stream;
}

}  // namespace dyno::workload
