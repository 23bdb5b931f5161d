// Importing request streams from public data formats: ShareGPT conversations, generic tables
// (JSONL, CSV, JSON arrays) and image question answering sets (ChartQA-style).
// Every import returns a stream with `source` set ("<kind>:<path>") and `sha256` =
// stream_sha256(requests); errors are StreamError naming the file and the record.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "workload/request.h"
#include "workload/request_stream.h"

namespace dyno::workload {

/// How stream_from_sharegpt turns conversations into requests.
struct ShareGptOptions {
  /// max_tokens of every request (when output_from_reference is false).
  std::int64_t max_tokens = 256;
  /// When true, max_tokens approximates the reference reply's length: the number of
  /// whitespace-separated words of the turn following the first human turn, times 1.3,
  /// rounded to nearest, at least 1. Conversations without such a reply are then skipped.
  bool output_from_reference = false;
  /// Keep at most this many requests (after filtering and shuffling); nullopt: all.
  std::optional<std::size_t> limit;
  /// Shuffle the kept conversations with a seeded Fisher–Yates (splitmix64) before `limit`.
  bool shuffle = false;
  std::uint64_t seed = 0;
  /// Skip conversations whose user message has fewer bytes than this.
  std::size_t min_prompt_chars = 0;
  /// kChat: messages [system?, user]; kCompletions: prompt = (system + "\n\n")? + user text.
  Api api = Api::kChat;
};

/// Reads a ShareGPT JSON file: an array of {"id"?: string|integer, "conversations":
/// [{"from": ..., "value": string}, ...]} (other keys ignored). Roles: "human"/"user" are the
/// user; "gpt"/"assistant"/"chatgpt"/"bard"/"bing" the reply; "system" a system turn; any other
/// `from` is an error. One request per conversation: the first human turn is the user message,
/// a system turn before it (the last one, if several) the system message. Conversations without
/// a human turn are skipped. Ids are "sharegpt-<id>", or "sharegpt-<index>" (0-based element
/// index) without an id; duplicate ids are an error. Order: file order, filtered
/// (min_prompt_chars, reply presence), then shuffled if asked, then cut to `limit`. Throws
/// StreamError("<file>: element <i>: ...") when malformed, and when no request remains.
RequestStream stream_from_sharegpt(const std::filesystem::path& path,
                                   const ShareGptOptions& options);

/// Column (CSV) or key (JSONL / JSON array) names for import_table. Empty name: not used.
struct TableMapping {
  /// "" (by extension: .csv → csv, .json → json, anything else → jsonl), "csv", "jsonl" or
  /// "json" (one array of objects).
  std::string format;
  std::string prompt = "prompt";  ///< required: the user message (chat) or prompt text
  std::string id;                 ///< else ids are "row-<n>", n the 1-based data row number
  std::string system;             ///< chat only: a system message before the user message
  std::string expected;           ///< the expected answer; a row with an empty cell is an error
  /// Fixed scorer name for every row (needs `expected`; default "exact" when `expected` is set).
  std::string scorer;
  std::string scorer_pattern;               ///< scorer "regex": its pattern
  std::vector<std::string> scorer_choices;  ///< scorer "choice": the option labels
  std::string max_tokens_column;            ///< per-row max_tokens (integer >= 1)
  std::optional<std::int64_t> max_tokens;   ///< fixed max_tokens; not with max_tokens_column
  /// Chat only: a column holding an image path (relative to the table file's directory); the
  /// message becomes parts [image, text]. An empty cell gives a text-only message.
  std::string image;
  std::vector<std::string> tags;  ///< columns copied into tags (tag key = column name)
  Api api = Api::kChat;           ///< kChat: messages; kCompletions: prompt
};

/// Imports a table: CSV (RFC 4180: header row, quoted fields with "" escapes, embedded commas
/// and newlines, CRLF or LF, optional UTF-8 BOM; every record has the header's field count),
/// JSONL (one object per line, blank lines skipped) or a JSON array of objects. JSON values
/// that are strings are taken as is; numbers and booleans as their JSON text; null as "";
/// arrays and objects are an error when a mapped column holds one. A mapped column missing
/// (from the CSV header, or from a JSON record) is an error naming it and listing the
/// available ones. Errors name "<file>:<line>" (CSV: the record's first line; JSONL: the line)
/// or "<file>: element <i>" (JSON array). Duplicate ids and empty prompts are errors.
RequestStream stream_from_table(const std::filesystem::path& path, const TableMapping& mapping);

/// How import_image_qa reads a ChartQA-style set.
struct ImageQaOptions {
  std::string format;        ///< as TableMapping::format
  std::string image_key;     ///< "" → "image", else "imgname" (the first present in a record)
  std::string question_key;  ///< "" → "query", else "question"
  std::string answer_key;    ///< "" → "label", else "answer"
  /// Directory holding the images, relative to the data file's directory unless absolute;
  /// "" → the data file's directory (ChartQA: "png").
  std::filesystem::path image_dir;
  /// Appended to the question after one space when non-empty, e.g. "Answer with a single word
  /// or number."
  std::string instruction;
  std::string scorer = "relaxed_numeric";  ///< exact | normalized | relaxed_numeric
  std::optional<std::int64_t> max_tokens;  ///< set on every request when given
  std::optional<std::size_t> limit;        ///< keep the first `limit` records
};

/// Imports image question answering records from a JSONL, CSV or JSON-array file (or a
/// directory holding exactly one such file: *.jsonl, *.csv, *.json). Each record becomes a
/// chat request "<file stem>-<i>" (i the 0-based record index) with one user message of parts
/// [image (data URL, image_sha256 set), text question (+ " " + instruction)], expected = the
/// answer (a string, a number, or an array of exactly one such value, as in ChartQA's
/// Hugging Face export) scored by options.scorer.
RequestStream stream_from_image_qa(const std::filesystem::path& dir_or_file,
                                   const ImageQaOptions& options);

}  // namespace dyno::workload
