// `dyno stream make`: writes a request stream whose prompts have exact token lengths, measured
// by the target engine's own tokenizer (or the embedded simulated engine's).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

namespace CLI {
class App;
}

namespace dyno::app {

/// `dyno stream make` flags, as parsed. Validated by stream_make_command().
struct StreamMakeOptions {
  std::optional<std::string> url;      ///< base URL, e.g. http://127.0.0.1:8000/v1
  std::optional<std::string> model;    ///< required with --url
  std::string api = "chat";            ///< chat | completions
  std::string profile = "small-gpu";   ///< embedded sim profile (no --url)
  std::uint64_t count = 0;             ///< --count (required without --sessions, >= 1)
  std::int64_t input_tokens = 0;       ///< --input-tokens (required without --sessions, >= 1)
  std::int64_t output_tokens = 0;      ///< --output-tokens (required, >= 1)
  std::uint64_t sessions = 0;          ///< --sessions N: a session stream (0: none)
  std::int64_t turns = 0;              ///< --turns T (required with --sessions)
  std::int64_t turn_input_tokens = 0;  ///< --turn-input-tokens K (required with --sessions)
  std::int64_t system_tokens = 0;      ///< --system-tokens S (sessions)
  bool shared_system = true;           ///< --shared-system / --no-shared-system (sessions)
  std::optional<double> think_ms;      ///< --think-ms M (sessions: turns >= 1)
  std::uint64_t seed = 0;
  std::int64_t shared_prefix = 0;  ///< --shared-prefix P (0: none; < input tokens)
  std::string system;              ///< --system TEXT
  std::string output;              ///< -o FILE (required)
  bool json = false;               ///< --json: the report as JSON on stdout
  double timeout_s = 30.0;         ///< per tokenize call
  bool insecure = false;
  std::optional<std::string> ca_file;
};

/// Adds `dyno stream make`'s options to `cmd`.
void add_stream_make_options(CLI::App& cmd, StreamMakeOptions& options);

/// Generates the stream (workload/exact_prompt.h) through the target's /tokenize
/// (transport/tokenize_client.h; API key from DYNO_API_KEY or OPENAI_API_KEY), re-counts every
/// written request once, writes FILE (canonical JSONL) and prints requested vs achieved per
/// request, totals and the stream's canonical sha256 (docs/record.md; what a run's manifest says)
/// to `out` (a table, or JSON with `json`). Returns kExitOk when every request hit its target,
/// kExitRunFailed otherwise. Throws UsageError naming the flag for bad options; TokenizeError /
/// ExactLengthError / StreamError when the tokenizer cannot be used, a length cannot be hit, or the
/// file cannot be written.
/// With --sessions: a session stream (workload/session_make.h), every turn re-counted
/// (turn_tokens), and the per-turn report (stream_sessions_command).
int stream_make_command(const StreamMakeOptions& options, std::ostream& out);

/// The --sessions half of stream_make_command (app/stream_sessions.cpp).
int stream_sessions_command(const StreamMakeOptions& options, std::ostream& out);

}  // namespace dyno::app
