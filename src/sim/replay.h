// A measured or hypothetical cell played through the performance model (sim/model.h) in
// virtual time: exact, deterministic and instant. `dyno sim predict` and the fitter
// (sim/fit.h) use it; docs/sim.md "Calibration".
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "metrics/trace.h"
#include "sim/profile.h"

namespace dyno::sim {

/// One request of a cell, as the model sees it.
struct CellRequest {
  std::int64_t input_tokens = 1;   ///< prompt tokens (>= 1)
  std::int64_t cached_tokens = 0;  ///< of which served by a prefix cache (not prefilled)
  std::int64_t output_tokens = 1;  ///< generated tokens (>= 1), exactly (ignore_eos)
};

/// The load of a cell: a closed loop (`concurrency` slots, each sending its next request when
/// the previous one ended, in request order) or an open loop (request i sent at
/// `arrivals_s[i]`, seconds from the cell's start, non-decreasing).
struct CellSpec {
  std::optional<std::uint32_t> concurrency;
  /// Closed loop only, optional: the client's own delay before sending request i — from the
  /// cell's start for the first `concurrency` requests, from the moment its slot freed for
  /// the others (0 for requests beyond the vector). A replay of a record uses the delays the
  /// record shows, so the requests reach the engine as spread out as they did.
  std::vector<double> send_delays_s;
  std::vector<double> arrivals_s;  ///< open loop only: one per request
  std::vector<CellRequest> requests;
};

/// Plays the cell and returns one measured, ok trace per request (in request order), its
/// times in ns from the cell's start: sent, first token, every event, done (the last event).
/// The client adds no time of its own beyond send_delays_s: a request is sent when its slot
/// frees (closed loop) or at its arrival (open loop), and an event is seen the instant its
/// step ends. A
/// request sent while a step runs joins the step after it; one sent to an idle engine starts a
/// step at once (alone, even when others are sent at the same instant: they arrive just after).
/// Cached tokens shorten the prompt the model prefills (and the context it decodes with). The
/// profile's prefix cache and EOS draws are off (every request produces exactly output_tokens);
/// speculative decoding keeps the profile's settings (seed 0). Throws std::invalid_argument for an
/// empty cell, a closed loop of concurrency 0, or an open loop whose arrivals are not one per
/// request, finite,
/// >= 0 and non-decreasing, or send delays that are not finite and >= 0.
std::vector<metrics::Trace> replay_cell(const Profile& profile, const CellSpec& cell);

/// The figures a cell is judged by (seconds and per-second rates, from metrics::summarize_run
/// of its traces: the same definitions as a record's summary.json). nullopt: not defined
/// (e.g. TPOT when no request produced two tokens).
struct CellFigures {
  std::optional<double> ttft_p50_s;
  std::optional<double> ttft_p90_s;
  std::optional<double> tpot_p50_s;
  std::optional<double> tpot_p90_s;
  std::optional<double> e2e_p50_s;
  std::optional<double> e2e_p90_s;
  std::optional<double> output_tokens_per_s;
  std::optional<double> requests_per_s;
};

/// The measured-phase figures of traces (warm-up, failed and cancelled requests follow
/// summarize_run's rules).
CellFigures cell_figures(std::span<const metrics::Trace> traces);

/// predicted / measured − 1, or nullopt when either is absent or measured is not > 0.
std::optional<double> relative_error(std::optional<double> measured,
                                     std::optional<double> predicted);

}  // namespace dyno::sim
