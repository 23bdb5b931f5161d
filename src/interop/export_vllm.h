// `dyno export vllm-bench`: a dyno record as the JSON object `vllm bench serve --save-result
// --save-detailed` writes, so dyno's runs plot in vLLM's tooling and read back with `dyno
// import vllm-bench` (docs/interop.md "Export"). Every summary key is computed from the
// record's requests with vLLM's own definitions (not dyno's): TPOT = (latency − ttft) /
// (output_len − 1) over requests with output_len > 1, ITL = the pooled gaps, std the
// population standard deviation, percentiles linear — over dyno's service window W where vLLM
// divides by its wall time.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "interop/export_record.h"
#include "metrics/summary.h"

namespace dyno::interop {

/// The percentiles the export writes for each metric (vLLM's key p<word>_<metric>_ms).
inline constexpr std::pair<double, const char*> kVllmPercentiles[] = {
    {90.0, "90"}, {95.0, "95"}, {99.0, "99"}, {99.9, "99.9"}};

/// vLLM's statistics of one metric: mean, median, population std and the kVllmPercentiles,
/// each in ms, of a sample in seconds. All null for an empty sample (where vLLM writes 0).
struct VllmStat {
  std::optional<double> mean_ms;
  std::optional<double> median_ms;
  std::optional<double> std_ms;
  std::vector<std::optional<double>> percentiles_ms;  ///< one per kVllmPercentiles
};
VllmStat vllm_stat(std::vector<double> seconds);

/// The per-request arrays of vLLM's file, one element per exported request.
struct VllmRequests {
  std::vector<bool> ok;
  std::vector<std::int64_t> input_lens;
  std::vector<std::int64_t> output_lens;  ///< 0 for a failed request (as vLLM writes)
  std::vector<double> ttfts;              ///< seconds
  std::vector<std::vector<double>> itls;  ///< seconds between token-bearing events
  std::vector<double> latencies;          ///< seconds; 0 for a failed request (as vLLM)
  std::vector<double> start_times;        ///< seconds on the record's clock (sent_ns / 1e9)
  std::optional<std::vector<double>> queue_times;  ///< sent − scheduled, when every one has it
  std::vector<std::string> errors;                 ///< "" for a completed request
  std::optional<std::vector<std::string>> generated_texts;  ///< when the outputs were kept
};

/// The record's measured requests (warm-up and cancelled ones left out) in vLLM's terms.
/// Throws ExportError naming the run and request when a completed request lacks a time or a
/// count vLLM's arrays need (no chunk_times_ns: a record made with --no-chunk-times).
VllmRequests vllm_requests(const std::vector<metrics::Trace>& traces, const std::string& run_id);

/// vLLM's result keys of the requests over `duration_s` (completed … total_token_throughput,
/// max_output_tokens_per_s, max_concurrent_requests, and mean/median/std/p<N> of ttft, tpot,
/// itl and e2el), in vLLM's order. request_goodput follows vLLM's goodput (a completed request
/// whose ttft, TPOT — 0 for one output token — and e2el meet every bound of `slo`) when the
/// record has objectives, else null.
boost::json::object vllm_result_keys(const VllmRequests& r, double duration_s,
                                     const metrics::Slo& slo);

/// vLLM's `date` (YYYYMMDD-HHMMSS) of an ISO 8601 time, in the same zone (dyno's: UTC);
/// nullopt when `iso` is not of the form YYYY-MM-DDTHH:MM:SS….
std::optional<std::string> vllm_date(const std::string& iso);

/// The whole vLLM object of a record. Throws ExportError when the record cannot make vLLM's
/// required keys: a summary-only or per_request import (no requests on one clock: no
/// duration), no measured request, no model id, or what vllm_requests refuses.
boost::json::object export_vllm_bench(const ExportRecord& record);

}  // namespace dyno::interop
