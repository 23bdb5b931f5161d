// Answer-quality scoring: judges a request's output text against its Expectation.
// The rules are defined exactly in docs/metrics.md ("Quality"); pure functions, no I/O.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "workload/request.h"

namespace dyno::workload {

/// Removes model reasoning from an output text, then trims ASCII whitespace:
/// - every `<think>…</think>` block;
/// - an unterminated `<think>` and everything after it (output cut off while reasoning);
/// - a stray `</think>` with no open block, and everything before it (Qwen/DeepSeek templates
///   put the opening tag in the prompt, so the output starts inside the block).
/// Tags are matched exactly (lower case).
std::string strip_reasoning(std::string_view text);

/// The verdict on one output.
struct Score {
  bool correct = false;
  std::string extracted;  ///< the answer the scorer read from the output ("" when none)
  std::string scorer;     ///< the scorer's name, as in Expectation::scorer

  bool operator==(const Score&) const = default;
};

/// Scores `output` (reasoning stripped first) with `expected.scorer`: exact | normalized |
/// relaxed_numeric | regex | choice. Throws std::invalid_argument for an unknown scorer or a
/// regex scorer whose pattern is empty or does not compile (request streams reject both at
/// load time: workload::validate_expectation in request_stream.h). A choice expectation whose
/// answer is not among its choices is simply never correct. regex and choice read at most the
/// last 256 KiB of the output (docs/metrics.md, "Quality").
Score score_answer(const Expectation& expected, std::string_view output);

/// Why a regex scorer's pattern cannot be used ("" when it can): empty, over the limits of
/// workload/regex_limits.h (1024 bytes, backreferences up to \\99, repetitions up to 1000), or
/// not compiling as ECMAScript.
std::string regex_scorer_problem(const std::string& pattern);

/// A scorer (docs/metrics.md "Quality"), an entry of the scorers' registry (error/registry.h):
/// its name, one line, the parameter it needs (regex's `pattern`, choice's `choices`; nullptr
/// for none) and how it reads an answer: `text` is the output with reasoning stripped, `answer`
/// the expected answer trimmed; it sets the score's extracted and correct.
struct Scorer {
  const char* name;
  const char* describe;
  const char* parameter;
  void (*score)(const Expectation& expected, const std::string& text, std::string_view answer,
                Score& out);
};

/// Every scorer, in the order docs/metrics.md gives them: exact, normalized, relaxed_numeric,
/// regex, choice. Adding one: an entry here (docs/extending.md "A scorer").
std::span<const Scorer> scorers();

/// True for the scorer names score_answer knows (an entry of scorers()).
bool is_known_scorer(std::string_view scorer);

/// The `normalized` scorer's form of a text: ASCII lower case; leading and trailing
/// whitespace and punctuation (. , ; : ! ? " ' ` ( ) [ ] { } *) removed; words split on ASCII
/// whitespace, the articles a / an / the dropped, and the rest joined with one space.
std::string normalize_answer(std::string_view text);

/// A number as `relaxed_numeric` reads it, when the whole trimmed text is one: an optional
/// sign, an optional `$`, digits (plain, or grouped in threes with commas: 1,234,567), an
/// optional fraction (.5, 3.25), an optional `%` (dropped: "12%" reads as 12).
std::optional<double> parse_number(std::string_view text);

}  // namespace dyno::workload
