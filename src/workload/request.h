// The request: what one call to an engine asks for, independent of any wire format.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dyno::workload {

/// Which OpenAI-compatible endpoint a request is meant for.
enum class Api { kChat, kCompletions };

/// One part of a multi-part chat message (OpenAI content parts).
struct ContentPart {
  enum class Kind { kText, kImage };
  Kind kind = Kind::kText;
  std::string text;          ///< kText
  std::string image_url;     ///< kImage: a data URL ("data:image/png;base64,...") or http(s) URL
  std::string image_sha256;  ///< kImage with a data URL: SHA-256 (hex) of the decoded bytes

  bool operator==(const ContentPart&) const = default;
};

/// One chat message: plain-text `content`, or `parts` (text and images) when non-empty.
/// Agent transcripts: an assistant message may carry `tool_calls` (the OpenAI array, kept as
/// compact JSON text), and a `tool` message names the call it answers in `tool_call_id`.
struct Message {
  std::string role;
  std::string content;
  std::vector<ContentPart> parts{};
  std::string tool_calls{};    ///< role assistant: JSON array of tool calls ("" when none)
  std::string tool_call_id{};  ///< role tool: the id of the call this message answers

  bool operator==(const Message&) const = default;
};

/// How a request's answer is judged (see workload/scoring.h).
struct Expectation {
  std::string answer;                ///< the expected answer
  std::string scorer = "exact";      ///< exact | normalized | relaxed_numeric | regex | choice
  std::string pattern;               ///< regex: extraction pattern (first group, else match)
  std::vector<std::string> choices;  ///< choice: the option labels, e.g. {"A","B","C","D"}

  bool operator==(const Expectation&) const = default;
};

/// Sampling parameters. An unset field is not sent, and the engine's default applies.
struct Sampling {
  std::optional<std::int64_t> max_tokens;
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<std::int64_t> seed;
  std::vector<std::string> stop;
  std::optional<bool> ignore_eos;
  std::optional<std::int64_t> min_tokens;

  bool operator==(const Sampling&) const = default;
};

/// A request's place in a multi-turn session (docs/protocols.md "Sessions"). The request's
/// `messages` are what the turn adds; the conversation sent is the session's earlier messages,
/// the assistant's actual answers, then these (workload/sessions.h).
struct Turn {
  std::string session;             ///< the session's id
  std::int64_t index = 0;          ///< 0, 1, … in order
  std::optional<double> think_ms;  ///< turn >= 1: the user's pause after the previous answer
  /// turn >= 1: tool calls (JSON array) the previous answer is recorded to have made; they are
  /// attached to that assistant message, and this turn's `tool` messages answer them.
  std::string tool_calls;
  std::string tools;  ///< turn 0: the tool specification (JSON array) sent with every turn

  bool operator==(const Turn&) const = default;
};

/// The largest `at_ms` a stream may give: 1e13 ms (about 317 years; every trace import's times
/// fit). How much of it a replay may span is checked when the run is planned (30 days).
inline constexpr double kMaxAtMs = 1e13;

/// One request of a stream. Chat requests carry `messages`; completion requests carry `prompt`.
struct Request {
  std::string id;                     ///< stable across engines: derived from the stream
  std::vector<Message> messages;      ///< chat endpoint
  std::optional<std::string> prompt;  ///< completions endpoint
  Sampling sampling;
  std::optional<Expectation> expected;      ///< when set, the output is scored
  std::map<std::string, std::string> tags;  ///< free labels (language, case, pass)
  std::optional<Turn> turn;                 ///< set when the request is a session's turn
  std::optional<double> at_ms;  ///< trace replay: send time in ms from the trace's start
  /// Fields of the user's own merged into the request body (`extra_body` of a stream line,
  /// `--extra-body`): a JSON object as compact text, "" when none (workload/extra_body.h).
  std::string extra_body{};

  bool is_chat() const { return !prompt.has_value(); }
  bool operator==(const Request&) const = default;
};

/// An ordered, identified list of requests: the unit two runs must share to be compared.
struct RequestStream {
  std::vector<Request> requests;
  std::string source;  ///< a file path, or a description of the synthetic generator
  std::string sha256;  ///< canonical hash of `requests` (see request_stream.h)
};

}  // namespace dyno::workload
