// `dyno stream import KIND`: public data sets (sharegpt, table, image-qa, agent) and traces
// (mooncake, azure, burstgpt) → request streams. The kinds are a registry (stream_imports()).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "workload/import.h"

namespace CLI {
class App;
}

namespace dyno::app {

struct StreamImportOptions {
  std::string kind;    ///< one of stream_imports(): sharegpt, table, … mooncake, azure, burstgpt
  std::string input;   ///< the data file (or directory, for image-qa)
  std::string output;  ///< -o FILE
  /// chat | completions; unset: chat, except the traces: completions (a trace's input length
  /// is the model's input, and the completions prompt has the least fixed cost).
  std::optional<std::string> api;
  std::optional<std::int64_t> max_tokens;
  std::optional<std::size_t> limit;
  std::optional<std::uint64_t> shuffle_seed;  ///< sharegpt: shuffle with this seed
  bool output_from_reference = false;         ///< sharegpt
  std::size_t min_prompt_chars = 0;           ///< sharegpt
  /// table: column mapping "prompt=question,id=qid,expected=answer,tags=lang;topic".
  std::string columns;
  std::string format;       ///< table / image-qa: csv | jsonl | json ("" = by extension)
  std::string scorer;       ///< table / image-qa: scorer for every row
  std::string instruction;  ///< image-qa: appended to each question
  std::string image_dir;    ///< image-qa: image directory relative to the data file
  bool multi_turn = false;  ///< sharegpt: every human turn (a session per conversation)
  // Trace imports (mooncake, azure, burstgpt): the counting target and the block texts.
  std::optional<std::string> url;
  std::optional<std::string> model;
  std::string profile = "small-gpu";
  double timeout_s = 30.0;
  bool insecure = false;
  std::optional<std::string> ca_file;
  std::int64_t block_tokens = 512;  ///< mooncake: tokens per hash id
  std::uint64_t seed = 0;           ///< the block texts' seed
  bool skip_short = false;          ///< traces: skip rows below a prompt's fixed cost
  bool json = false;
};

/// An entry of the stream-import registry (error/registry.h): a kind `dyno stream import`
/// reads.
struct StreamImport {
  std::string_view name;      ///< as `dyno stream import` takes it: "sharegpt"
  std::string_view describe;  ///< one line: what the input is and what the stream holds
  /// Reads the input, writes the stream to -o and prints what it wrote; returns the exit code.
  /// A trace kind (workload::is_trace_kind) is trace_import_command.
  int (*run)(const StreamImportOptions& options);
};

/// Every kind, in the order the kind argument's help lists them.
std::span<const StreamImport> stream_imports();

/// Adds `dyno stream import`'s arguments and options to `cmd`.
void add_stream_import_options(CLI::App& cmd, StreamImportOptions& options);

/// Imports and writes the stream; prints its size and hash. Throws UsageError naming the flag
/// or file:line, or listing the kinds for an unknown one.
int stream_import_command(const StreamImportOptions& options);

/// `dyno stream import mooncake|azure|burstgpt` (app/trace_import_command.cpp): reads the
/// trace, builds exact prompts counted by the target (workload/trace_prompts.h), writes the
/// stream and prints what it cost. Throws StreamError naming file:line for bad rows.
int trace_import_command(const StreamImportOptions& options);

}  // namespace dyno::app
