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
struct Message {
  std::string role;
  std::string content;
  std::vector<ContentPart> parts{};

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

/// One request of a stream. Chat requests carry `messages`; completion requests carry `prompt`.
struct Request {
  std::string id;                     ///< stable across engines: derived from the stream
  std::vector<Message> messages;      ///< chat endpoint
  std::optional<std::string> prompt;  ///< completions endpoint
  Sampling sampling;
  std::optional<Expectation> expected;      ///< when set, the output is scored
  std::map<std::string, std::string> tags;  ///< free labels (language, case, pass)

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
