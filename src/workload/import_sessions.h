// Importing multi-turn sessions (docs/protocols.md "Sessions"): ShareGPT conversations with
// every human turn (`dyno stream import sharegpt --multi-turn`) and the JSONL agent-trajectory
// form (`dyno stream import agent`). Recorded answers are never sent: the runner feeds the
// engine's actual answers back (workload/sessions.h Conversation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "workload/import.h"
#include "workload/request.h"

namespace dyno::workload {

/// ShareGPT with every turn: each conversation becomes a session "sharegpt-<id>" (ids as
/// stream_from_sharegpt), each human turn a turn "sharegpt-<id>-<k>" whose messages are that human
/// message; the last system turn before the first human turn is turn 0's system message, a
/// system turn after it goes into the next human turn's messages (before the user message),
/// one after the last human turn is dropped; reply turns ("gpt", …) are not sent. A reply
/// before the first human turn is ignored. max_tokens: options.max_tokens on every turn, or
/// with output_from_reference the reference reply's length (the replies between this human
/// turn and the next, words × 1.3 as stream_from_sharegpt): the session then ends at its first
/// human turn without a reply (a conversation whose first human turn has none is skipped).
/// min_prompt_chars applies to the first human message; shuffle and limit count
/// conversations. Chat API only. Throws StreamError("<file>: element <i>: ...").
RequestStream stream_from_sharegpt_sessions(const std::filesystem::path& path,
                                            const ShareGptOptions& options);

struct AgentOptions {
  std::optional<std::int64_t> max_tokens;  ///< turns whose step and trajectory set none
  std::optional<std::size_t> limit;        ///< keep the first `limit` trajectories
};

/// The JSONL agent-trajectory form, one trajectory per line (blank lines skipped):
///   {"id": string, "system"?: string, "tools"?: [tool spec…], "think_ms"?: number >= 0,
///    "max_tokens"?: integer >= 1, "steps": [step, …]}
/// a step being {"user": string} or {"tool_calls": [OpenAI tool calls…], "tool_results":
/// [{"tool_call_id": string, "content": string}, …]}, either with optional "think_ms" and
/// "max_tokens". Step 0 is a user step. Each step becomes a turn "<id>-<k>" of session
/// "<id>": a user step's messages are [system?, user] on turn 0 and [user] later; a tool
/// step's `tool_calls` attach to the previous answer (Turn::tool_calls) and its results become
/// `tool` messages in the order given, answering every call of the step exactly once. `tools`
/// go on turn 0 (sent with every turn). think_ms (the step's, else the trajectory's) on turns
/// >= 1; max_tokens: the step's, else the trajectory's, else options.max_tokens, else unset.
/// Tags {"source": "agent"}. Unknown keys, wrong types, a result naming no call of its step,
/// a call without a result, duplicate call ids within a trajectory and duplicate trajectory
/// ids are errors: StreamError("<source>:<line>: key `steps[2].tool_results[0].content`: …").
RequestStream parse_agent_text(std::string_view text, const std::string& source,
                               const AgentOptions& options);

/// parse_agent_text on a file; `source` is "agent:<path>".
RequestStream stream_from_agent(const std::filesystem::path& path, const AgentOptions& options);

}  // namespace dyno::workload
