// Exact prompts for a trace (docs/protocols.md "Trace replay"): each hash id becomes a fixed
// block of words that counts exactly `block_tokens` tokens by the target's tokenizer, so
// requests sharing hash ids share byte-identical prefixes (and the engine's prefix cache hits
// as in production); every prompt's whole length is counted once by the target and must
// equal the trace's input length.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "workload/exact_prompt.h"
#include "workload/request.h"
#include "workload/trace_import.h"

namespace dyno::workload {

/// The most prompt tokens one import writes (every token is text in memory and in the file).
inline constexpr std::int64_t kMaxTraceTokens = 1'000'000'000;

struct TracePromptOptions {
  Api api = Api::kChat;             ///< chat: one user message; completions: the prompt
  std::int64_t block_tokens = 512;  ///< tokens per hash id (Mooncake's traces: 512)
  std::uint64_t seed = 0;           ///< the block words' seed
  /// A row whose first block is below a prompt's fixed cost (template, BOS, one word): skipped
  /// and listed in TraceReport::skipped_short (false: an error naming its line).
  bool skip_short = false;
};

/// What building a trace's prompts cost and found.
struct TraceReport {
  std::size_t requests = 0;
  std::size_t exact_first = 0;             ///< prompts whose first count was their input length
  std::vector<std::string> adjusted;       ///< ids whose last block was re-fitted (first count off)
  std::vector<std::size_t> skipped_short;  ///< lines skipped by skip_short
  std::size_t distinct_blocks = 0;         ///< distinct hash ids
  std::size_t vocabulary = 0;              ///< one-token words the block texts are made of
  std::int64_t calibration_calls = 0;
  std::int64_t count_calls = 0;  ///< one per request (its whole prompt), plus re-fits
  std::int64_t requested_tokens = 0;
  std::int64_t achieved_tokens = 0;
};

/// Builds the stream. Calibration (129 counts): each of the 64 common words (seeded_text.h) is
/// counted as a whole prompt alone (its start cost: template, BOS, the word) and after "the"
/// (its cost inside a text); the words that cost exactly one token inside a text are the
/// vocabulary (at least 2, else ExactLengthError). Block texts are seeded words of that
/// vocabulary, a pure function of (seed, hash id, vocabulary): a block that starts the prompt is
/// "w1 w2 … wk" with start_cost(w1) + k - 1 = block_tokens (the template and BOS belong to the
/// first block, as in the engine's own blocks); any other block is " w1 … w_B" (B words). The
/// last block holds the rest of the input length, r = input - B·(n-1) tokens: its first words
/// (a prefix of the full block's text). A record without hash ids gets a text of its own
/// (first words encode its line). Each prompt is counted once; when the count is off (a
/// tokenizer that merges across words), the last block is re-fitted (fit_exact_text) against the
/// whole prompt and the id is listed in `adjusted`. A length below the prompt's fixed cost is an
/// error naming the line, or with skip_short skipped and listed. Requests: id "<kind>-<line>",
/// at_ms = ms since the first request written, max_tokens = min_tokens = output length, ignore_eos,
/// tags
/// {"source": kind} plus the record's. `source` = "<kind>:<file>"; sha256 set.
/// Throws StreamError naming the file when the prompts add up to more than kMaxTraceTokens,
/// naming "<file>:<line>" when hash_ids do not fit the input length at
/// this block size, when a hash id starts one prompt and sits inside another, or when a
/// length is below the prompt's fixed cost (without skip_short); ExactLengthError when a re-fit
/// fails.
/// `parallel` (optional): counters to build and count the prompts with, one thread each (each
/// counter is only called from its thread); `count` alone calibrates and re-fits.
RequestStream build_trace_stream(const TraceFile& trace, const TracePromptOptions& options,
                                 const PromptTokenCounter& count, TraceReport* report = nullptr,
                                 const std::vector<PromptTokenCounter>& parallel = {});

}  // namespace dyno::workload
