// Reading request traces for replay (docs/protocols.md "Trace replay"): the Mooncake JSONL
// trace (timestamp, input_length, output_length, hash_ids), the Azure LLM inference trace CSV
// (TIMESTAMP, ContextTokens, GeneratedTokens) and BurstGPT's CSV (Timestamp, Model, Request
// tokens, Response tokens, Total tokens, Log Type). Only the lengths, times and block hashes
// are read here; workload/trace_prompts.h turns them into exact prompts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dyno::workload {

/// One request of a trace.
struct TraceRecord {
  std::size_t line = 0;                 ///< 1-based line in the file (CSV: the record's first line)
  std::int64_t time_ns = 0;             ///< the trace's clock, ns (its origin is the trace's own)
  std::int64_t input_tokens = 0;        ///< >= 1
  std::int64_t output_tokens = 0;       ///< >= 1
  std::vector<std::uint64_t> hash_ids;  ///< Mooncake: prompt blocks (empty: none given)
  std::map<std::string, std::string> tags;  ///< BurstGPT: model, log_type

  bool operator==(const TraceRecord&) const = default;
};

struct TraceFile {
  std::string kind;                   ///< mooncake | azure | burstgpt
  std::string source;                 ///< names the file in messages
  std::vector<TraceRecord> records;   ///< kept rows, file order (time order, checked)
  std::size_t rows = 0;               ///< data rows read (up to the limit)
  std::size_t skipped_no_output = 0;  ///< output length 0 (BurstGPT: a failed request)
  std::size_t skipped_no_input = 0;   ///< input length 0 (no prompt to send)
};

/// What a trace reader adds its rows to: skips, time order, the limit (trace_import.cpp).
class TraceCollector;

/// An entry of the trace registry (error/registry.h): a trace format parse_trace_text reads.
struct TraceFormat {
  std::string_view name;      ///< the kind: "mooncake"
  std::string_view describe;  ///< one line: the file and the fields read
  /// Adds each row of `text` to `out`; errors name `source`, the line and the field.
  void (*parse)(std::string_view text, TraceCollector& out, const std::string& source);
};

/// The trace formats: mooncake, azure, burstgpt.
std::span<const TraceFormat> trace_formats();

/// A kind of trace_formats().
bool is_trace_kind(std::string_view kind);

/// Parses a trace. Mooncake: one JSON object per line (blank lines skipped) with `timestamp`
/// (ms, a number >= 0), `input_length` and `output_length` (integers >= 0) and optional
/// `hash_ids` (array of integers >= 0); other keys are errors. Azure: CSV with header columns
/// TIMESTAMP ("YYYY-MM-DD HH:MM:SS" with up to 9 fractional digits, UTC), ContextTokens and
/// GeneratedTokens (integers >= 0); other columns ignored. BurstGPT: CSV with Timestamp
/// (seconds, a decimal number >= 0), Model, Request tokens, Response tokens (integers >= 0) and
/// Log Type; Total tokens and other columns ignored; Model and Log Type become tags "model"
/// and "log_type". Lengths are at most 10,000,000 tokens. Rows with an output length of 0
/// (BurstGPT: failed requests) or an input length of 0 are skipped and counted. Times must not go
/// backwards. Stops after `limit` kept records. Throws StreamError("<source>:<line>: key
/// `input_length`: …" / "column `…`").
TraceFile parse_trace_text(std::string_view kind, std::string_view text, const std::string& source,
                           std::optional<std::size_t> limit = std::nullopt);

/// parse_trace_text on a file (`source` = its path).
TraceFile read_trace_file(std::string_view kind, const std::filesystem::path& path,
                          std::optional<std::size_t> limit = std::nullopt);

/// "YYYY-MM-DD HH:MM:SS[.f…]" (also with 'T' between date and time; years 1970 to 2200) as ns
/// since 1970-01-01 UTC; nullopt when malformed (fields out of range included).
std::optional<std::int64_t> parse_datetime_ns(std::string_view text);

}  // namespace dyno::workload
