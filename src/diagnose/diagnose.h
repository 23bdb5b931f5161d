// Why the limit is where it is (docs/metrics.md "Diagnosis"): one finished run record read for
// the causes that bound a cell — requests queued in the server, a full KV cache or
// preemptions, prefill interrupting decode, the client saturated, the network — each finding
// with its verdict and the record's own figures as evidence, or "unknown" naming what the
// record lacks. Pure: it reads what record::read_run gave and nothing else (no I/O, no clock).
// `dyno runs diagnose` prints it; `dyno capacity` diagnoses the records at its boundary.
#pragma once

#include <boost/json/object.hpp>
#include <string>
#include <vector>

#include "record/run_record.h"

namespace dyno::diagnose {

/// One cause looked for. `name`: queue | kv_cache | prefill_interrupts_decode |
/// client_saturated | network. `verdict`: "yes" | "no" | "unknown". `summary`: one sentence
/// with the numbers. `evidence`: the figures it rests on, each key ending in its unit
/// (`_requests`, `_ms`, `_percent`, `_count`, `_ratio`…), and `source`: which evidence was used
/// (or, for "unknown", `missing`: what the record lacks).
struct Finding {
  std::string name, verdict, summary;
  boost::json::object evidence;
};

/// Every finding, in the fixed order of kFindingNames.
struct Diagnosis {
  std::vector<Finding> findings;
};

/// The findings' names, in the order diagnose_run gives them.
inline constexpr const char* kFindingNames[] = {"queue", "kv_cache", "prefill_interrupts_decode",
                                                "client_saturated", "network"};

// ---- thresholds (docs/metrics.md "Diagnosis" states each) ------------------------------------

/// queue, from the server's gauges: requests queued when the waiting gauge's median over the
/// samples is at least this (half the samples or more saw a request waiting).
inline constexpr double kQueueWaitingMedian = 1.0;
/// queue, from the client's traces: TTFT "grows with the number in flight" when the median TTFT
/// of the third of requests sent with the most requests in flight is at least this many times
/// that of the third sent with the fewest, while the TPOT medians differ by at most
/// kTpotFlatRatio, and the two thirds' mean numbers in flight differ by at least
/// kInFlightSpread.
inline constexpr double kTtftGrowthRatio = 2.0;
inline constexpr double kTpotFlatRatio = 1.5;
inline constexpr double kInFlightSpread = 1.0;
/// queue, from the client's traces: TTFT "does not grow" below this ratio.
inline constexpr double kTtftFlatRatio = 1.5;
/// The client-side rules need at least this many completed measured requests.
inline constexpr std::size_t kMinRequests = 6;
/// kv_cache: the usage gauge's highest sample at or above this share of the cache is "full".
inline constexpr double kKvFullRatio = 0.95;
/// prefill_interrupts_decode: an inter-token gap is long above this many times the median gap
/// of the run; long gaps line up with arrivals when at least kAlignedShare of them hold another
/// request's first token, at least kAlignedOverOrdinary times the share of ordinary gaps that
/// do, and at least kMinAlignedGaps of them do.
inline constexpr double kLongGapFactor = 3.0;
inline constexpr double kAlignedShare = 0.5;
inline constexpr double kAlignedOverOrdinary = 2.0;
inline constexpr std::size_t kMinAlignedGaps = 3;
/// client_saturated: besides the record's client_saturated warning, the event-loop thread(s)
/// busy at least this share of the service window.
inline constexpr double kLoopBusyShare = 0.9;
/// network: failures at connect, TLS or send above this share of the ended requests; the
/// fastest first byte (an upper bound on one round trip) at or above kNetworkSlowShare of the
/// TTFT median is the network's weight, at or below kNetworkSmallShare it is small.
inline constexpr double kNetworkFailureShare = 0.01;
inline constexpr double kNetworkSmallShare = 0.10;
inline constexpr double kNetworkSlowShare = 0.25;

/// The diagnosis of one record, from its summary (server gauges and counters, the client's
/// cost and warnings), its manifest (engine, load) and its traces (when read_run read them).
Diagnosis diagnose_run(const record::RunRecord& run);

/// {"findings": [{name, verdict, summary, evidence}, ...]} in the fixed order.
boost::json::object to_json(const Diagnosis& d);

/// The lines a console prints: per finding, "name: verdict — summary", then its evidence.
std::string plain_text(const Diagnosis& d);

}  // namespace dyno::diagnose
