// summary.json's `server` section read typed (docs/record.md, docs/metrics.md "Server-side
// figures" and "Per-response server timings"): what the engine said of the run — its /metrics
// counter deltas, its gauges sampled on the telemetry period, the figures of its per-response
// timings — or why there is none. The engine writes the section (engine/server_metrics.cpp,
// server_gauges.cpp, server_timings.cpp; an import, interop/result_import.cpp; a merge,
// app/runs_merge.cpp); summary_file_from_json checks it on read, and every reader of a
// record's server figures — boards (compare/figures.cpp), the cell's console headline
// (app/cell_report.cpp), the protocols' cell figures (protocol/plans.cpp) — reads it here.
// SummaryFile keeps the section as written (its `server`), so writing what was read gives the
// same bytes; server_section_of(file.server) reads it typed on demand, as energy_section() does
// energy.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/stats.h"

namespace dyno::record {

/// One gauge series of `server.gauges.series`: the distribution of its samples and the last.
struct ServerGaugeSeries {
  metrics::Distribution samples;
  std::optional<double> last;
};

/// `server.gauges`: the engine's gauges sampled on the telemetry period.
struct ServerGauges {
  double period_ms = 0;
  std::uint64_t scrapes = 0;
  std::uint64_t failed_scrapes = 0;
  /// By `name{label="value",...}`, the engine's own names (open by design).
  std::map<std::string, ServerGaugeSeries> series;
};

/// `server.timings`: the engine's own timing of the responses. Three sources write it, each
/// its own keys (the schema's $defs server_timings); a key the source does not write is
/// nullopt:
/// - "response timings" (llama.cpp's per-response `timings`): the request counts, and `reason`
///   when no response had timings, else every figure from prompt_tokens_computed on;
/// - "in-process benchmark" (an imported llama-bench test): test, repetitions, prefill_rate,
///   decode_rate_per_user;
/// - "stated by the imported file" (`dyno import table --map`): prefill_tokens_per_s.
struct ServerTimingsSection {
  std::string source;
  std::optional<std::string> test;
  std::optional<std::uint64_t> repetitions;
  std::optional<std::string> reason;  ///< why there are no figures
  std::optional<std::uint64_t> requests_with_timings, requests_without_timings;
  std::optional<std::uint64_t> prompt_tokens_computed, prompt_tokens_cached;
  std::optional<double> prompt_cached_fraction;
  std::optional<std::uint64_t> predicted_tokens;
  std::optional<metrics::Distribution> prompt_ms, ttft_minus_prompt_ms, prefill_rate,
      decode_rate_per_user;
  std::optional<double> prefill_tokens_per_s;
  std::optional<std::uint64_t> draft_tokens, draft_tokens_accepted;
  std::optional<double> spec_decode_acceptance_rate;
  /// The distributions' counts written null (unknown: an imported mean over repetitions the
  /// file does not count), e.g. "server.timings.prefill_rate.count"; the typed count reads 0.
  std::vector<std::string> unknown_counts;
};

/// The section, one of three forms (the schema's $defs server_absent, server_unreadable,
/// server_counters):
/// - no /metrics: `source` nullopt and `reason` says why;
/// - /metrics did not parse: `source` "/metrics" and `error` says where;
/// - /metrics read: `source` "/metrics", the dialect, the figures and every counter's delta.
/// `timings` and `gauges` may come with any of them (gauges not with the first).
struct ServerSection {
  std::optional<std::string> source;   ///< "/metrics", or nullopt when there was none
  std::optional<std::string> reason;   ///< why there is no /metrics
  std::optional<std::string> error;    ///< why its text did not parse
  std::optional<std::string> dialect;  ///< vllm | sglang | llamacpp; nullopt when unknown
  std::optional<double> prompt_tokens, generation_tokens, preemptions;
  std::optional<double> prefix_cache_hit_rate, prefix_cache_queries, prefix_cache_hits;
  std::optional<double> spec_decode_acceptance_rate;
  bool counter_reset = false;
  /// Every counter's delta over the run, by series name (the engine's own names).
  std::map<std::string, std::optional<double>> counters;
  std::optional<ServerTimingsSection> timings;
  std::optional<ServerGauges> gauges;

  /// Whether /metrics was read and its counters are here (the third form).
  bool counted() const { return source.has_value() && !error.has_value(); }
};

/// Reads the section; `file` names the file in errors ("summary.json: server.timings.prefill_rate
/// is not an object"), a std::runtime_error.
ServerSection server_section_from_json(const boost::json::object& server,
                                       const std::string& file = "summary.json");

/// A summary's `server` (SummaryFile::server) read typed; nullopt without one.
/// summary_file_from_json has checked it; a section a writer set wrong throws
/// std::runtime_error naming the key.
std::optional<ServerSection> server_section_of(const std::optional<boost::json::object>& server);

/// A figure of the section by its metric registry path (metrics/registry.h) — a number, e.g.
/// "server.spec_decode_acceptance_rate" or "server.timings.prefill_tokens_per_s", or a
/// distribution's statistic, "server.timings.prefill_rate" with `stat` "p50" — as the record
/// holds it: nullopt when absent, null, non-finite, an unknown count, or not a figure of the
/// section.
std::optional<double> server_figure(const ServerSection& server, std::string_view path,
                                    std::string_view stat = {});

}  // namespace dyno::record
