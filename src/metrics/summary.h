// Traces -> figures, as defined in docs/metrics.md (definition set "dyno-metrics/v1").
// Pure functions: no I/O, no clocks.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/sessions.h"
#include "metrics/stats.h"
#include "metrics/trace.h"

namespace dyno::metrics {

inline constexpr const char* kDefinitionSet = "dyno-metrics/v1";

/// Per-request figures (METRICS.md "Per-request figures"). Seconds and tokens/s.
/// A figure whose inputs are missing is nullopt.
struct RequestFigures {
  std::optional<double> queue_delay_s;         ///< sent − scheduled
  std::optional<double> ttft_s;                ///< first_token − sent
  std::optional<double> ttft_from_schedule_s;  ///< first_token − scheduled
  std::optional<double> e2e_s;                 ///< done − sent
  std::optional<double> tpot_s;                ///< (last − first token)/(out − 1), out >= 2
  std::optional<double> decode_rate;           ///< (out − 1)/(last − first token), tok/s
  std::optional<double> prefill_rate_client;   ///< input_tokens / ttft, tok/s
  std::optional<double> tokens_per_event;      ///< output_tokens / token-bearing events
};

RequestFigures request_figures(const Trace& trace);

/// Successive differences of a trace's token-bearing event times, in seconds.
std::vector<double> event_gaps_s(const Trace& trace);

/// Service-level objectives for goodput; an unset bound is not checked.
struct Slo {
  std::optional<double> ttft_s;
  std::optional<double> tpot_s;
  std::optional<double> e2e_s;
  bool any() const { return ttft_s || tpot_s || e2e_s; }
};

/// True when every given bound holds. A bound whose figure is undefined for the request
/// (e.g. tpot with one output token) is treated as met.
bool meets_slo(const RequestFigures& figures, const Slo& slo);

/// What a warning is about. Its name (to_string) is what records, boards and the console show;
/// docs/metrics.md "Warnings" lists every one (a test holds the two together).
enum class WarningCode {
  kConcurrencyUnderfilled,
  kHighErrorRate,
  kClientSaturated,
  kNoCompletedRequests,
  kTtftFarAboveServerPrefill,
  kExitedAtOnce,
  kInvalidUtf8Replaced,
  kEnergySourcesDisagree,
  kWindowTooShort,
  kReplayBehind,
  kClockUncertain,
  kInputLengthDiffers,
};
inline constexpr WarningCode kWarningCodes[] = {WarningCode::kConcurrencyUnderfilled,
                                                WarningCode::kHighErrorRate,
                                                WarningCode::kClientSaturated,
                                                WarningCode::kNoCompletedRequests,
                                                WarningCode::kTtftFarAboveServerPrefill,
                                                WarningCode::kExitedAtOnce,
                                                WarningCode::kInvalidUtf8Replaced,
                                                WarningCode::kEnergySourcesDisagree,
                                                WarningCode::kWindowTooShort,
                                                WarningCode::kReplayBehind,
                                                WarningCode::kClockUncertain,
                                                WarningCode::kInputLengthDiffers};

/// The code's name, e.g. "concurrency_underfilled".
const char* to_string(WarningCode code);
/// The code of a name; nullopt for a name this dyno does not know (a newer record's).
std::optional<WarningCode> warning_code_from(std::string_view name);

/// A typed warning with an actionable hint (stored in the record, printed on stderr).
struct Warning {
  WarningCode code;
  std::string message;  ///< what was observed, with the numbers
  std::string hint;     ///< what to change
};

/// A timing caveat (docs/metrics.md "Timing caveats"): what a reader must know to read the
/// figures right, with the run's own numbers. Codes: engine_timer_boundaries, prompt_cache,
/// tokens_per_event.
struct Caveat {
  std::string code;
  std::string text;
};

/// What the client cost while it measured (P10: the record shows whether dyno distorted it).
struct ClientCost {
  std::optional<double> cpu_s;  ///< user + system CPU of the dyno process during the run
  /// What cpu_s covers: "process" (every thread of the dyno process during the load: event
  /// loop, record appender, telemetry), "process_minus_engine" (the same less the embedded
  /// engine's thread) or "event_loops" (the event-loop threads alone: an in-process plugin's
  /// threads cannot be told apart). Empty: not stated (imported records).
  std::string cpu_scope;
  std::optional<double> loop_cpu_s;      ///< the event-loop thread(s) alone during the load
  unsigned threads = 1;                  ///< event loops (threads) that did the I/O
  std::optional<double> peak_rss_bytes;  ///< peak resident memory
  std::vector<double> loop_lag_s;        ///< event-loop lag samples (timer lateness)
};

struct SummaryOptions {
  std::optional<double> declared_concurrency;  ///< closed loop C, for concurrency_underfilled
  bool open_loop = false;
  Slo slo;
  ClientCost client;
  double high_error_rate = 0.05;  ///< warn above this error rate
  bool replay = false;            ///< sent at a trace's timestamps (replay_behind)
  /// The prompt length asked of synthetic prompts made without a tokenizer (--input-tokens):
  /// input_length_differs when the mean counted input differs by more than kInputLengthTolerance.
  std::optional<double> requested_input_tokens;
};

/// Warning thresholds (summarize_run).
/// concurrency_underfilled: achieved_concurrency < kUnderfillRatio × declared_concurrency.
inline constexpr double kUnderfillRatio = 0.9;
/// client_saturated, any of: event-loop lag p99 > kLoopLagP99WarnS; (open loop) queue delay
/// p99 > kQueueDelayP99WarnS; (open loop) the mean queue delay of the last quarter of the
/// ended measured requests, in sent order, exceeds the first quarter's by more than
/// kQueueDelayGrowthWarnS (needs at least 4 such requests).
inline constexpr double kLoopLagP99WarnS = 0.005;
inline constexpr double kQueueDelayP99WarnS = 0.010;
inline constexpr double kQueueDelayGrowthWarnS = 0.005;
/// input_length_differs: |mean input tokens − requested| / requested above this.
inline constexpr double kInputLengthTolerance = 0.05;
/// replay_behind: a replay's send lag (queue delay) p99 above this.
inline constexpr double kReplayLagP99WarnS = 0.010;

/// Failed requests with one category and one message (Summary::errors_by_message).
struct ErrorMessageCount {
  std::string category;
  std::string message;
  std::uint64_t count = 0;
};

/// How many distinct messages the summary names (the rest are counted together).
inline constexpr std::size_t kMaxErrorMessages = 10;

/// The run figures of the measured phase (warm-up excluded).
struct Summary {
  std::string definition_set = kDefinitionSet;

  std::uint64_t requests_total = 0;  ///< measured requests that ended (ok + failed)
  std::uint64_t requests_ok = 0;
  std::uint64_t requests_failed = 0;
  std::uint64_t requests_cancelled = 0;  ///< in flight at an interrupt; excluded
  std::uint64_t warmup_requests = 0;     ///< discarded
  std::map<std::string, std::uint64_t> errors_by_category;
  /// The most frequent (category, message) pairs of the failed requests — what servers said,
  /// counted — at most kMaxErrorMessages, most frequent first (then by category, message).
  std::vector<ErrorMessageCount> errors_by_message;
  /// Failed requests whose message is not among errors_by_message.
  std::uint64_t errors_other_messages = 0;
  std::optional<double> error_rate;

  std::optional<double> service_window_s;  ///< W: earliest sent to latest done (measured)
  std::int64_t input_tokens_total = 0;
  /// Whether every completed request carried the server's input count: when one did not, the
  /// total above is partial, and the record writes input_total null (unknown, never 0).
  bool input_tokens_complete = true;
  std::int64_t output_tokens_total = 0;
  std::map<std::string, std::uint64_t> token_count_sources;  ///< source name -> requests

  std::optional<double> output_tokens_per_s;
  std::optional<double> input_tokens_per_s;
  std::optional<double> requests_per_s;
  std::optional<double> decode_tokens_per_s;   ///< Σ(out−1) / |∪[first_token, last_token]|
  std::optional<double> achieved_concurrency;  ///< Σ e2e / W
  std::optional<double> goodput_requests_per_s;
  std::optional<std::uint64_t> goodput_requests;
  std::optional<double> tokens_per_event;  ///< Σ output tokens / Σ token-bearing events

  // Answer quality (docs/metrics.md "Quality"); all three absent when nothing was scored.
  std::optional<std::uint64_t> scored_requests;   ///< ended measured traces with `correct` set
  std::optional<std::uint64_t> correct_requests;  ///< of which ok and correct
  std::optional<double> accuracy;                 ///< correct_requests / scored_requests

  // Distributions over completed measured requests (ms for latencies, tok/s for rates).
  Distribution queue_delay_ms;
  Distribution ttft_ms;
  Distribution ttft_from_schedule_ms;
  Distribution e2e_ms;
  Distribution tpot_ms;
  Distribution event_gap_ms;          ///< pooled inter-event gaps (vLLM "ITL")
  Distribution decode_rate_per_user;  ///< tok/s
  Distribution prefill_rate_client;   ///< tok/s
  Distribution input_tokens;
  Distribution output_tokens;

  // dyno's own cost.
  std::optional<double> client_cpu_s;
  std::string client_cpu_scope;  ///< ClientCost::cpu_scope
  std::optional<double> client_loop_cpu_s;
  unsigned client_threads = 1;
  std::optional<double> client_peak_rss_bytes;
  Distribution client_loop_lag_ms;

  std::optional<SessionFigures> sessions;          ///< when the stream ran sessions
  std::optional<PrefixCacheFigures> prefix_cache;  ///< when the engine reported cached tokens

  std::vector<Warning> warnings;
};

/// Which traces feed which figure (phase != "warmup" is "measured"):
/// - warm-up traces are only counted in warmup_requests; measured cancelled traces only in
///   requests_cancelled. "Ended" below means measured and ok or failed.
/// - errors_by_category: failed traces by error_category ("unknown" when empty).
/// - W (service_window_s): earliest sent_ns of the ended traces that have one to the latest
///   done_ns of the ended traces that have one (failed requests occupy the service too);
///   absent when either is missing or latest done < earliest sent. Every "/ W" rate is
///   absent unless W > 0.
/// - requests_per_s = requests_ok / W. Token totals, output/input_tokens_per_s,
///   token_count_sources, tokens_per_event and every distribution use ok traces only; a token
///   rate is absent when no ok trace has that count.
/// - decode_tokens_per_s: ok traces with output_tokens >= 2 and last_token > first_token
///   (the same traces that have a decode_rate); absent when there are none.
/// - achieved_concurrency = Σ e2e over ended traces with sent and done / W.
/// - goodput_requests(_per_s): only when options.slo.any(); ok traces meeting every bound.
/// - client_saturated's queue-delay checks use every ended trace with sent and scheduled.
/// - quality: scored_requests counts the ended traces whose `correct` is set (failed ones
///   included: a failed request that had an expected answer is scored and incorrect, whatever
///   `correct` says); correct_requests the ok ones among them with correct == true; accuracy =
///   correct / scored. All three are absent when no ended trace is scored.
Summary summarize_run(std::span<const Trace> traces, const SummaryOptions& options);

/// Length of the union of closed intervals [a, b] (any order, any overlap), same units.
/// An interval with b < a is empty and contributes nothing.
double union_length(std::vector<std::pair<std::int64_t, std::int64_t>> intervals);

}  // namespace dyno::metrics
