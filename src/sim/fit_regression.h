// The fitter's first stage (sim/fit.h): least-squares estimates of the step-time parameters
// from the step structure that per-request event times show, under one attention structure
// (the Attention fit.h chooses). Used by sim/fit.cpp and its tests.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "metrics/trace.h"

namespace dyno::sim {

/// How attention is charged (docs/sim.md "Calibration"): per sequence (each sequence's own
/// context: decode_ctx_token_s and prefill_ctx_token_s, as a paged-attention engine), or over one
/// KV cache shared by all sequences (shared_kv_token_s and decode_ctx_token_s, as llama.cpp).
enum class Attention { kPerSequence, kSharedCache };
const char* attention_name(Attention a);

/// One request's times in seconds from its cell's start, with its token counts.
struct ObservedTimes {
  double sent_s = 0.0;
  std::vector<double> events_s;    ///< token-bearing events, first token first; never empty
  std::int64_t prompt_tokens = 1;  ///< prompt tokens prefilled (input − cached, >= 1)
  std::int64_t input_tokens = 1;   ///< prompt tokens, cached ones included (KV cells)
  std::int64_t output_tokens = 1;
  double first() const { return events_s.front(); }
  double last() const { return events_s.back(); }
};

/// The usable measured requests of a cell (ok, measured, with sent and event times and token
/// counts), times relative to the earliest of their sent times.
std::vector<ObservedTimes> observed_times(const std::vector<metrics::Trace>& traces);

/// What the regression found. A coefficient is nullopt when the data cannot determine it.
struct StepRegression {
  std::optional<double> step_base_s;
  std::optional<double> decode_seq_s;
  std::optional<double> decode_ctx_token_s;
  std::optional<double> prefill_s_per_token;
  std::optional<double> prefill_ctx_token_s;  ///< per (prompt token × its context) prefilled
  std::optional<double> shared_kv_token_s;    ///< per (batch token × shared KV cell)
  std::optional<double> finish_s;             ///< per request that finished in the previous step
  std::int64_t decode_rows = 0;               ///< decode-only steps used
  std::int64_t prefill_rows = 0;              ///< first-token steps used
  std::uint32_t max_decoding = 0;             ///< most requests seen decoding at once
  std::uint32_t max_in_flight = 0;  ///< most requests seen between sent and last event at once
  int batch_levels = 0;             ///< distinct numbers of decoding requests among the rows
  int prefill_levels = 0;           ///< distinct prompt sizes among the first-token rows
};

/// Regresses step durations on [1, B, Σctx, P, A, (B + P)·K, F] (A: Σ over prefilled prompt tokens
/// of their position + 1; K: the cells a KV cache shared by all sequences would hold, estimated as
/// the cells of the `slots` requests sent last — slots: the most requests seen between first and
/// last token at once — with finished ones counting prompt + output; F, on decode rows only: the
/// other requests whose last event ended the step before, the engine's finish work (profile
/// finish_s); non-negative least squares,
/// each step weighted once): decode rows are inter-event
/// gaps during which no other request's first token came; first-token rows are the step that ended
/// with a request's first token, from the later of its sent time and the previous event of any
/// other request. Steps whose prefill exceeds `step_token_budget` (chunked over several steps) are
/// left out.
/// `attention` picks the columns: per sequence leaves K out, a shared cache leaves A out.
StepRegression regress_steps(const std::vector<std::vector<ObservedTimes>>& cells,
                             std::int64_t step_token_budget,
                             Attention attention = Attention::kPerSequence);

}  // namespace dyno::sim
