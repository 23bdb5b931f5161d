#include "workload/session_make.h"

#include <charconv>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "workload/request_stream.h"

namespace dyno::workload {

namespace {

Request chat_of(std::vector<Message> messages) {
  Request r;
  r.messages = std::move(messages);
  return r;
}

void validate(const SessionMakeOptions& o) {
  if (o.sessions < 1) throw std::invalid_argument("sessions must be at least 1");
  if (o.turns < 1) throw std::invalid_argument("turns must be at least 1");
  if (o.turn_input_tokens < 1) throw std::invalid_argument("turn_input_tokens must be >= 1");
  if (o.output_tokens < 1) throw std::invalid_argument("output_tokens must be at least 1");
  if (o.system_tokens < 0) throw std::invalid_argument("system_tokens must be >= 0");
  if (o.system_tokens > 0 && !o.system_text.empty()) {
    throw std::invalid_argument("give system_tokens or a system text, not both");
  }
  if (!o.shared_system && o.system_tokens == 0) {
    throw std::invalid_argument("a system message per session needs system_tokens");
  }
  if (o.think_ms && !(*o.think_ms >= 0.0)) throw std::invalid_argument("think_ms must be >= 0");
}

std::string describe(const SessionMakeOptions& o) {
  std::ostringstream s;
  s << "sessions(sessions=" << o.sessions << ",turns=" << o.turns
    << ",turn_input_tokens=" << o.turn_input_tokens << ",system_tokens=" << o.system_tokens;
  if (!o.system_text.empty()) s << ",system_text";
  s << ",shared_system=" << (o.shared_system ? "true" : "false")
    << ",output_tokens=" << o.output_tokens << ",seed=" << o.seed;
  if (o.think_ms) {
    char buf[32];
    const auto end = std::to_chars(buf, buf + sizeof buf, *o.think_ms).ptr;  // shortest form
    s << ",think_ms=" << std::string_view(buf, static_cast<std::size_t>(end - buf));
  }
  s << ")";
  return s.str();
}

}  // namespace

std::vector<Message> conversation_before(const std::vector<const Request*>& turns, std::size_t k) {
  if (k == 0 || k >= turns.size()) throw std::logic_error("conversation_before: turn out of range");
  std::vector<Message> out;
  for (std::size_t j = 0; j < k; ++j) {
    out.insert(out.end(), turns[j]->messages.begin(), turns[j]->messages.end());
    Message answer;
    answer.role = "assistant";
    answer.content = kStandInAnswer;
    if (turns[j + 1]->turn) answer.tool_calls = turns[j + 1]->turn->tool_calls;
    out.push_back(std::move(answer));
  }
  return out;
}

std::int64_t turn_tokens(const std::vector<const Request*>& turns, std::size_t k,
                         const PromptTokenCounter& count) {
  if (k == 0) return count(chat_of(turns.at(0)->messages));
  std::vector<Message> before = conversation_before(turns, k);
  const std::int64_t base = count(chat_of(before));
  before.insert(before.end(), turns[k]->messages.begin(), turns[k]->messages.end());
  return count(chat_of(std::move(before))) - base;
}

RequestStream make_session_stream(const SessionMakeOptions& o, const PromptTokenCounter& count,
                                  std::vector<TurnLengthReport>* report) {
  validate(o);
  if (!count) throw std::invalid_argument("no prompt token counter");
  if (report) report->clear();
  const auto turns = static_cast<std::uint64_t>(o.turns);
  const std::string prefix = "sess-" + std::to_string(o.seed) + "-";

  // The system text of session i: the literal one, one fitted text for every session, or
  // one per session (its own word stream, its index in its first words).
  std::string shared_system = o.system_text;
  std::int64_t shared_system_count = 0;
  std::int64_t shared_system_calls = 0;
  const auto fit_system = [&](std::optional<std::uint64_t> session, std::int64_t* calls) {
    ExactTextSpec spec;
    spec.seed = o.seed;
    spec.stream = session ? 1 + *session * (turns + 1) + turns : 0;
    spec.index = session;
    spec.target = o.system_tokens;
    spec.where = session ? "session " + std::to_string(*session) + " system message"
                         : "the shared system message";
    return fit_exact_text(
        spec,
        [&](const std::string& text) {
          return count(chat_of({Message{"system", text}}));
        },
        calls);
  };
  if (o.system_tokens > 0 && o.shared_system) {
    shared_system = fit_system(std::nullopt, &shared_system_calls);
    shared_system_count = o.system_tokens;
  } else if (!o.system_text.empty()) {
    shared_system_count = count(chat_of({Message{"system", o.system_text}}));
    shared_system_calls = 1;
  }

  RequestStream stream;
  stream.requests.reserve(o.sessions * turns);
  for (std::uint64_t i = 0; i < o.sessions; ++i) {
    const std::string session = prefix + std::to_string(i);
    std::int64_t system_calls = i == 0 ? shared_system_calls : 0;
    std::string system = shared_system;
    std::int64_t system_count = shared_system_count;
    if (o.system_tokens > 0 && !o.shared_system) {
      system = fit_system(i, &system_calls);
      system_count = o.system_tokens;
    }
    const std::size_t first = stream.requests.size();
    for (std::uint64_t k = 0; k < turns; ++k) {
      Request r;
      r.id = session + "-" + std::to_string(k);
      r.turn = Turn{session, static_cast<std::int64_t>(k), {}, {}, {}};
      if (k > 0) r.turn->think_ms = o.think_ms;
      r.sampling.max_tokens = o.output_tokens;
      r.sampling.min_tokens = o.output_tokens;
      r.sampling.ignore_eos = true;
      r.tags["source"] = "sessions";
      ExactTextSpec spec;
      spec.seed = o.seed;
      spec.stream = 1 + i * (turns + 1) + k;
      spec.index = i * turns + k;
      spec.where =
          "session " + std::to_string(i) + " turn " + std::to_string(k) + " (" + r.id + ")";
      TurnLengthReport row{
          r.id, session, static_cast<std::int64_t>(k), o.turn_input_tokens, o.turn_input_tokens,
          0,    0,       k == 0 ? system_calls : 0};
      std::vector<Message> head;  // turn 0: the system message; later: the conversation before
      std::int64_t base = 0;
      if (k == 0) {
        if (!system.empty()) head.push_back(Message{"system", system});
        spec.target = system_count + o.turn_input_tokens;
        row.requested = row.achieved = spec.target;
        row.system_requested = o.system_tokens;
        row.system_achieved = system_count;
      } else {
        std::vector<const Request*> so_far;
        for (std::size_t j = first; j < stream.requests.size(); ++j) {
          so_far.push_back(&stream.requests[j]);
        }
        so_far.push_back(&r);
        head = conversation_before(so_far, k);
        base = count(chat_of(head));
        ++row.calls;
        spec.target = o.turn_input_tokens;
      }
      const std::string text = fit_exact_text(
          spec,
          [&](const std::string& t) {
            std::vector<Message> messages = head;
            messages.push_back(Message{"user", t});
            return count(chat_of(std::move(messages))) - base;
          },
          &row.calls);
      if (k == 0 && !system.empty()) r.messages.push_back(Message{"system", system});
      r.messages.push_back(Message{"user", text});
      if (report) report->push_back(std::move(row));
      stream.requests.push_back(std::move(r));
    }
  }
  stream.source = describe(o);
  stream.sha256 = stream_sha256(stream.requests);
  return stream;
}

}  // namespace dyno::workload
