// Exact-length prompts: seeded pseudo-English prompts grown or shrunk until the target engine's
// own tokenizer counts exactly the requested number of prompt tokens.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "error/error.h"
#include "workload/request.h"

namespace dyno::workload {

/// A prompt length could not be hit exactly; the message names the request index and id.
class ExactLengthError : public Error {
 public:
  explicit ExactLengthError(const std::string& message) : Error(ErrorKind::engine, message) {}
};

struct ExactOptions {
  Api api = Api::kChat;
  std::uint64_t count = 100;
  std::int64_t input_tokens = 256;   ///< exact prompt tokens (chat: with the template)
  std::int64_t output_tokens = 128;  ///< max_tokens = min_tokens, with ignore_eos
  std::uint64_t seed = 0;
  /// > 0: every prompt starts with the same text, which alone (as a whole prompt of the same
  /// api and system prompt) counts exactly this many tokens. Must be < input_tokens.
  std::int64_t shared_prefix_tokens = 0;
  /// Chat: a leading "system" message; completions: text put before the prompt, followed by a
  /// blank line. Counted as part of the prompt.
  std::string system_prompt;
};

/// Requested vs achieved prompt tokens of one request.
struct LengthReport {
  std::string id;
  std::int64_t requested = 0;
  std::int64_t achieved = 0;
  std::int64_t prefix_requested = 0;  ///< shared_prefix_tokens (0: no shared prefix)
  std::int64_t prefix_achieved = 0;   ///< tokens of the shared prefix alone
  std::int64_t calls = 0;             ///< counting calls spent on this request

  bool operator==(const LengthReport&) const = default;
};

/// Returns the target's token count of a request's whole prompt (chat: the messages with the
/// chat template and generation prompt; completions: the prompt text).
using PromptTokenCounter = std::function<std::int64_t(const Request&)>;

/// Calls the counter at most this many times per request (and for the shared prefix).
inline constexpr std::int64_t kMaxExactCalls = 40;

/// Returns the target's token count of whatever a generated text becomes (a whole prompt, or
/// the tokens one message adds to a conversation: see workload/session_make.h).
using TextTokenCounter = std::function<std::int64_t(const std::string& text)>;

/// One text to fit: `head` followed by seeded words, exact by a TextTokenCounter.
struct ExactTextSpec {
  std::string head;                    ///< fixed start (e.g. a shared prefix); may be empty
  std::uint64_t seed = 0;              ///< the words' seed
  std::uint64_t stream = 0;            ///< which word sequence of the seed (distinct texts)
  std::optional<std::uint64_t> index;  ///< encoded in the first words (texts differ early)
  std::int64_t target = 0;             ///< tokens wanted
  std::string where;                   ///< names the text in errors ("session 3 turn 2 (id)")
};

/// The search make_exact_stream runs for each prompt (words by count, then short pieces),
/// measured by `measure`, at most kMaxExactCalls calls. Adds the calls spent to `*calls`
/// (also when it throws). Throws ExactLengthError naming spec.where; exceptions from
/// `measure` propagate.
std::string fit_exact_text(const ExactTextSpec& spec, const TextTokenCounter& measure,
                           std::int64_t* calls = nullptr);

/// Generates `count` requests whose prompts count exactly `input_tokens` tokens by
/// `count_prompt_tokens`. Per request: seeded words (own splitmix64; a fixed 64-word vocabulary
/// of short English words; the first two words encode the index, so prompts differ early) are
/// searched by word count (tokens per word estimated from the counts seen, then bisection),
/// then short pieces (letters, digits, punctuation, with and without a leading space) are
/// appended until the count is exact; a word is dropped when no piece fits. Chat prompts are
/// one user message (after the optional system message); the template overhead is the
/// counter's, so the user text is shorter than the target. With a shared prefix, the prefix
/// text is generated once (exact alone) and each request appends its own suffix.
/// Requests: id "exact-<seed>-<i>", max_tokens = min_tokens = output_tokens, ignore_eos = true,
/// tags {"source": "exact"}. `source` is "exact(api=..,count=..,input_tokens=..,
/// output_tokens=..,seed=..[,shared_prefix=P])"; `sha256` is set. Deterministic for the same
/// tokenizer and options. `report` (optional) receives one LengthReport per request.
/// Throws std::invalid_argument for bad options (input/output tokens < 1, prefix >= input),
/// ExactLengthError when a length cannot be hit within kMaxExactCalls calls (or the template
/// alone exceeds the target); exceptions from the counter propagate.
RequestStream make_exact_stream(const ExactOptions& options,
                                const PromptTokenCounter& count_prompt_tokens,
                                std::vector<LengthReport>* report = nullptr);

}  // namespace dyno::workload
