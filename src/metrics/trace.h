// The trace of one request: raw timestamps and counts appended on the hot path.
// Every figure is computed from traces afterwards by the pure functions in summary.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "metrics/event_times.h"

namespace dyno::metrics {

/// Where output_tokens/input_tokens came from (METRICS.md "Tokens").
enum class TokenCountSource { kNone, kUsage, kTokenizer, kChunks };

/// Where cached_input_tokens came from (docs/metrics.md "Prefix cache"): usage's cached_tokens,
/// llama.cpp's timings.cache_n, or — when the timings have no cache_n (llama.cpp before it
/// had one) — the prompt tokens less timings.prompt_n, those the engine computed.
enum class CachedSource { kNone, kUsage, kTimings, kTimingsPromptN };

/// Outcome of a request.
enum class RequestStatus {
  kOk,         ///< completed; counted in every figure
  kError,      ///< failed; counted in error_rate by `error_category`
  kCancelled,  ///< still in flight when the run was interrupted; excluded from figures
};

/// All times are nanoseconds from the run's t0 on the steady clock. An absent stamp is nullopt.
struct Trace {
  std::uint64_t index = 0;         ///< submission order within the run (warm-up first)
  std::string request_id;          ///< the stream's request id
  std::string phase = "measured";  ///< "warmup" or "measured" (or a protocol pass name)

  std::optional<std::int64_t> scheduled_ns;
  std::optional<std::int64_t> sent_ns;
  std::optional<std::int64_t> first_byte_ns;
  std::optional<std::int64_t> first_token_ns;    ///< first event with any generated text
  std::optional<std::int64_t> first_content_ns;  ///< first event with non-reasoning text
  std::optional<std::int64_t> last_token_ns;
  std::optional<std::int64_t> done_ns;

  /// Time of every token-bearing event (content, reasoning or completion text), in order;
  /// delta-coded in memory (event_times.h).
  EventTimes event_times_ns;
  std::int64_t reasoning_events = 0;  ///< of which carried reasoning text only

  std::optional<std::int64_t> input_tokens;
  std::optional<std::int64_t> output_tokens;
  /// Prompt tokens the engine served from its prefix cache: usage.prompt_tokens_details
  /// .cached_tokens, or llama.cpp's timings.cache_n (cached_source says which).
  std::optional<std::int64_t> cached_input_tokens;
  CachedSource cached_source = CachedSource::kNone;
  std::optional<std::int64_t> reasoning_tokens;  ///< usage.completion_tokens_details
  TokenCountSource token_count_source = TokenCountSource::kNone;

  // Multi-turn sessions (docs/metrics.md "Sessions"): set on a session's turns only.
  std::string session;                        ///< the session's id in the stream
  std::optional<std::uint64_t> session_run;   ///< which session of the run (0, 1, … as started)
  std::optional<std::int64_t> turn;           ///< the turn's index in its session
  std::optional<std::int64_t> session_turns;  ///< turns the session has in the stream

  RequestStatus status = RequestStatus::kOk;
  std::optional<int> http_status;
  std::string error_category;  ///< "" when ok; else
                               ///< connect|tls|http_status|timeout|stream_truncated|parse|cancelled
  std::string error_message;
  std::string finish_reason;
  std::string output_text;          ///< only when outputs are kept
  std::string server_timings_json;  ///< raw JSON object of engine-reported timings, when any

  // Answer quality (docs/metrics.md "Quality"), filled by the app after the run, never on the
  // hot path. `correct` is set only for a request that carried an expected answer; a failed
  // request that had one gets correct = false and an empty extracted_answer.
  std::optional<bool> correct;
  std::string extracted_answer;  ///< what the scorer read from the output ("" when none)
  std::string scorer;            ///< exact | normalized | relaxed_numeric | regex | choice
  // What the output was judged against, kept in the record so that `dyno rescore` can judge
  // the kept output again without the stream: set with `correct`.
  std::optional<std::string> expected_answer;
  std::string scorer_pattern;               ///< regex: the extraction pattern
  std::vector<std::string> scorer_choices;  ///< choice: the option labels

  bool ok() const { return status == RequestStatus::kOk; }
  bool measured() const { return phase != "warmup"; }
};

const char* to_string(TokenCountSource source);
const char* to_string(RequestStatus status);
const char* to_string(CachedSource source);

}  // namespace dyno::metrics
