// llama.cpp's per-response `timings` object (llama-server: the last streamed chunk, or the top
// level of a non-streamed body), as the engine reports it. Pure: no I/O, no clock.
//
// The engine's definitions (server_slot::get_timings): cache_n prompt tokens reused from the
// KV cache; prompt_n prompt tokens computed; prompt_ms from the start of prompt processing to the
// first sampled token; predicted_n every output token (the first included); predicted_ms from
// the first sampled token to the end of generation; draft_n tokens drafted and draft_n_accepted
// of them accepted (speculative decoding only).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace dyno::record {

/// The fields dyno reads; each is nullopt when absent, null or of the wrong type. The derived
/// `*_per_token_ms` / `*_per_second` fields are not read: dyno derives its own rates.
struct LlamaCppTimings {
  std::optional<std::int64_t> cache_n;
  std::optional<std::int64_t> prompt_n;
  std::optional<double> prompt_ms;
  std::optional<std::int64_t> predicted_n;
  std::optional<double> predicted_ms;
  std::optional<std::int64_t> draft_n;
  std::optional<std::int64_t> draft_n_accepted;
};

/// Parses the raw JSON text of a `timings` object. nullopt when the text is not a JSON object.
/// Counts must be non-negative integers (a float with an integral value is accepted) and times
/// finite non-negative numbers; any other value leaves its field nullopt.
std::optional<LlamaCppTimings> parse_llamacpp_timings(std::string_view json_text);

}  // namespace dyno::record
