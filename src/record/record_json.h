// JSON forms of the record's value types (schema version 1, see docs/record.md).
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <optional>
#include <string>
#include <vector>

#include "metrics/summary.h"
#include "metrics/trace.h"

namespace dyno::record {

inline constexpr int kSchemaVersion = 1;
inline constexpr const char* kPercentileMethod =
    "linear interpolation between closest ranks (numpy 'linear', Hyndman-Fan type 7)";

/// A double as JSON: non-finite values become null (never NaN/Infinity in a record).
boost::json::value number_or_null(std::optional<double> v);

boost::json::object distribution_to_json(const metrics::Distribution& d);

/// One requests.jsonl object. `keep_event_times` adds chunk_times_ns, delta-encoded: the
/// first element is the first event's time from t0, each next one the gap to its predecessor.
/// A scored trace (`correct` set) carries "score": {correct, extracted, scorer} and what it was
/// judged against: `expected` (when set), `pattern` (regex), `choices` (choice); its
/// output_text is written even when empty (re-scoring reads it).
boost::json::object trace_to_json(const metrics::Trace& trace, bool keep_event_times);

/// One requests.jsonl line (no newline): compact(trace_to_json(trace, keep_event_times)) with
/// every secret redacted (redact_literals), byte for byte, but the event times are formatted
/// straight into the text (no JSON value per event). `*invalid_utf8_bytes` (when given)
/// receives the count of ill-formed UTF-8 bytes replaced by U+FFFD; a line with any carries
/// "invalid_utf8_bytes": N as its last key.
std::string trace_line(const metrics::Trace& trace, bool keep_event_times,
                       const std::vector<std::string>& secrets,
                       std::size_t* invalid_utf8_bytes = nullptr);

/// A scored trace's `score` object: {correct, extracted, scorer, expected?, pattern?, choices?}.
boost::json::object score_to_json(const metrics::Trace& trace);

/// Reads a requests.jsonl object back (inverse of trace_to_json). Throws std::runtime_error
/// naming the key on a malformed object. To read a run directory's requests, use
/// read_requests (record_reader.h): it checks the record's schema_version first.
metrics::Trace trace_from_json(const boost::json::object& obj);

/// A warning as the records write it (summary and manifest): {code, message, hint}.
boost::json::object warning_to_json(const metrics::Warning& warning);

/// summary.json's `quality` section: {scored, correct, accuracy}, each null when nothing was
/// scored.
boost::json::object quality_to_json(const metrics::Summary& summary);

/// The figures part of summary.json (everything but identity keys added by the caller).
boost::json::object summary_to_json(const metrics::Summary& summary);

/// Pretty-prints with two-space indentation and a trailing newline (for files people read).
/// Keys keep insertion order, which the writers keep stable.
std::string pretty_json(const boost::json::value& v);

}  // namespace dyno::record
