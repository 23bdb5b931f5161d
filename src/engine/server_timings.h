// What the engine says about each response: llama.cpp's per-response `timings` (kept raw in
// every trace) turned into server-side figures — prefill and decode rates by the engine's own
// clock, computed vs cached prompt tokens, draft acceptance — reported in summary.json's
// `server.timings`, next to (never instead of) dyno's client-side figures.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "metrics/stats.h"
#include "metrics/summary.h"
#include "metrics/trace.h"

namespace dyno::engine {

/// Server-side figures from the `timings` of completed measured responses (docs/metrics.md,
/// "Per-response server timings"). Times in ms, rates in tokens/s.
struct ServerTimingFigures {
  std::uint64_t with_timings = 0;     ///< completed measured requests whose response had timings
  std::uint64_t without_timings = 0;  ///< completed measured requests whose response had none
  std::int64_t prompt_tokens_computed = 0;  ///< Σ prompt_n
  /// Σ cache_n, or, for a response without cache_n, its usage prompt tokens − prompt_n (what
  /// the engine did not compute); absent when no response allowed either.
  std::optional<std::int64_t> prompt_tokens_cached;
  std::optional<double> prompt_cached_fraction;  ///< cached / (cached + computed)
  std::int64_t predicted_tokens = 0;             ///< Σ predicted_n
  metrics::Distribution prompt_ms;               ///< prompt_ms (prompt_n >= 1)
  /// The client's TTFT minus the engine's prompt_ms, per request (ms): the time outside the
  /// engine's prefill (HTTP, tokenization, queueing, the first token's way back).
  metrics::Distribution ttft_minus_prompt_ms;
  metrics::Distribution prefill_rate;  ///< prompt_n / prompt_ms (prompt_n >= 1, ms > 0)
  /// The engine-timed prefill rate of the run: Σ prompt_n / Σ prompt_ms over the responses
  /// prefill_rate counts (each prompt weighted by its time); absent when there are none.
  std::optional<double> prefill_tokens_per_s;
  metrics::Distribution decode_rate_per_user;  ///< (predicted_n − 1) / predicted_ms (n >= 2)
  std::optional<std::int64_t> draft_tokens;    ///< Σ draft_n; absent when none reported it
  std::optional<std::int64_t> draft_tokens_accepted;  ///< Σ draft_n_accepted
  std::optional<double> acceptance_rate;              ///< accepted / drafted, when drafted > 0
  std::string reason;  ///< why there are no figures ("" when with_timings > 0)
};

/// Pure: measured (phase != "warmup"), ok traces only; a trace whose `server_timings_json` is
/// empty or not a JSON object counts in without_timings. Each figure takes the responses that
/// report its inputs (a response without cache_n adds nothing to prompt_tokens_cached).
ServerTimingFigures server_timing_figures(std::span<const metrics::Trace> traces);

/// The client's TTFT at the median exceeds the engine's prompt time by far — more than
/// max(250 ms, 2 × prompt_ms p50): requests waited before the engine began them (connections
/// queued behind idle ones on a server with few HTTP threads, fewer slots than the load).
/// Warning `ttft_far_above_server_prefill` with both numbers.
std::optional<metrics::Warning> prefill_gap_warning(const ServerTimingFigures& figures);

/// Prompt tokens the engine computed for one response: llama.cpp's timings.prompt_n when the
/// response has timings, else usage prompt tokens − cached tokens when the engine reported
/// cached tokens; nullopt otherwise.
std::optional<std::int64_t> computed_prompt_tokens(const metrics::Trace& trace);

/// summary.json's `server.timings`: {"source": "response timings", requests_with_timings,
/// requests_without_timings, then the figures} or, when no response had timings, the counts and
/// `reason`.
boost::json::object server_timings_json(const ServerTimingFigures& figures);

/// The timing caveats that apply to a run (summary.json `caveats`, docs/metrics.md "Timing
/// caveats"), each a code and a text with the run's own numbers:
/// - `engine_timer_boundaries`: responses carried the engine's own timings, which start and
///   end at the engine's boundaries, not at the client's send and receive;
/// - `prompt_cache`: prompt tokens were served from the engine's prompt cache (timings'
///   cache_n, or usage cached_tokens), so TTFT covers less prefill than the prompts' length;
/// - `tokens_per_event`: token events carried more than one token on average
///   (`tokens_per_event` > 1.05), so the time between events is not a time per token.
/// Measured, ok traces only. Empty when none applies.
std::vector<metrics::Caveat> timing_caveats(std::span<const metrics::Trace> traces,
                                            const ServerTimingFigures& figures,
                                            std::optional<double> tokens_per_event);

/// For each request whose engine gave no cached count in `usage` but whose timings carry
/// cache_n (llama.cpp), sets cached_input_tokens = cache_n with source kTimings; when the
/// timings have prompt_n but no cache_n (llama.cpp builds before cache_n), the input tokens
/// less prompt_n (source kTimingsPromptN) — the count server_timing_figures() reports as
/// cached — so the prefix-cache and per-turn figures (metrics/sessions.h) see it.
void cached_tokens_from_timings(std::vector<metrics::Trace>& traces);

}  // namespace dyno::engine
