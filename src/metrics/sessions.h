// Figures of multi-turn sessions and of the engine's prefix cache (docs/metrics.md "Sessions"
// and "Prefix cache"), from traces. Pure: no I/O, no clock.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "metrics/stats.h"
#include "metrics/trace.h"

namespace dyno::metrics {

/// Prompt tokens served from the cache, over the completed measured requests that say.
struct CacheTotals {
  std::uint64_t requests = 0;      ///< ok measured requests with a cached count and a prompt count
  std::int64_t prompt_tokens = 0;  ///< Σ input_tokens of those
  std::int64_t cached_tokens = 0;  ///< Σ cached_input_tokens of those
  std::optional<double> hit_rate;  ///< cached / prompt (absent when prompt is 0)
};

/// One bucket of TTFT against uncached prompt tokens (input − cached).
struct UncachedBucket {
  std::int64_t uncached_min = 0;  ///< smallest uncached count in the bucket
  std::int64_t uncached_max = 0;  ///< largest
  std::uint64_t requests = 0;
  std::optional<double> ttft_p50_ms;
};

/// The prefix cache as the engine reported it.
struct PrefixCacheFigures {
  std::string
      source;  ///< usage, timings, timings_prompt_n, joined by + (the counts that were read)
  CacheTotals totals;
  /// TTFT against uncached prompt tokens: least squares ttft_ms = intercept + slope × uncached/1000
  /// over the requests of `totals` with a TTFT (absent with fewer than 3 such requests or no
  /// spread in uncached tokens); r2 its coefficient of determination.
  std::optional<double> ttft_intercept_ms;
  std::optional<double> ttft_ms_per_1k_uncached;
  std::optional<double> ttft_fit_r2;
  /// The same requests in four buckets of equal count by uncached tokens (fewer when fewer).
  std::vector<UncachedBucket> buckets;
};

/// The prefix-cache figures; nullopt when no completed measured request has a cached count.
std::optional<PrefixCacheFigures> prefix_cache_figures(std::span<const Trace> traces);

/// The figures of one turn index over the measured sessions.
struct TurnFigures {
  std::int64_t turn = 0;
  std::uint64_t requests = 0;  ///< measured turns with this index that ended (ok or failed)
  std::uint64_t failed = 0;
  Distribution ttft_ms;              ///< ok turns
  Distribution input_tokens;         ///< ok turns: the prompt sent (the conversation so far)
  std::optional<CacheTotals> cache;  ///< absent when no ok turn has a cached count
};

/// Sessions of the measured phase: those with a measured turn (warm-up sessions excluded).
struct SessionFigures {
  std::uint64_t sessions = 0;
  std::uint64_t completed = 0;  ///< every turn of the stream's session ended ok
  std::uint64_t failed = 0;     ///< ended at a failed turn (its later turns not sent)
  std::uint64_t cut = 0;        ///< ended early otherwise: the run's count, duration or interrupt
  Distribution turns;           ///< turns sent per session (ended ones; cancelled excluded)
  Distribution duration_s;      ///< first turn sent to last turn done
  Distribution input_tokens;    ///< Σ prompt tokens of a session's ok turns
  Distribution output_tokens;   ///< Σ output tokens of a session's ok turns
  std::vector<TurnFigures> per_turn;  ///< by turn index, ascending
};

/// The session figures; nullopt when no measured trace is a session's turn.
std::optional<SessionFigures> session_figures(std::span<const Trace> traces);

}  // namespace dyno::metrics
