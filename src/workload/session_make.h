// Session streams with exact turn lengths (`dyno stream make --sessions`): N sessions of T
// turns, each new user message exactly K tokens by the target's own tokenizer, measured as the
// tokens the message adds to the templated conversation (docs/protocols.md "Sessions").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "workload/exact_prompt.h"
#include "workload/request.h"

namespace dyno::workload {

struct SessionMakeOptions {
  std::uint64_t sessions = 1;           ///< N >= 1
  std::int64_t turns = 1;               ///< T >= 1 turns per session
  std::int64_t turn_input_tokens = 64;  ///< K >= 1: the tokens each new user message adds
  /// S >= 0: turn 0 starts with a system message whose conversation alone ([system], chat
  /// template and generation prompt included) counts exactly S tokens. 0: no system message.
  std::int64_t system_tokens = 0;
  std::string system_text;  ///< instead of system_tokens: this literal system message
  /// true: one system text for every session (a prefix-cache hit across sessions, as in real
  /// deployments); false: each session its own (only with system_tokens).
  bool shared_system = true;
  std::optional<double> think_ms;    ///< think_ms of every turn >= 1
  std::int64_t output_tokens = 128;  ///< max_tokens = min_tokens, ignore_eos, every turn
  std::uint64_t seed = 0;
};

/// Requested vs achieved tokens of one turn.
struct TurnLengthReport {
  std::string id;
  std::string session;
  std::int64_t turn = 0;
  /// Turn 0: the whole prompt (system + user, template included) = S + K. Turn k >= 1: the
  /// tokens the turn's user message adds to the conversation = K (turn_delta_tokens).
  std::int64_t requested = 0;
  std::int64_t achieved = 0;
  std::int64_t system_requested = 0;  ///< turn 0 with a system message: S (literal: 0)
  std::int64_t system_achieved = 0;   ///< turn 0 with a system message: its tokens alone
  std::int64_t calls = 0;             ///< counting calls spent on this turn

  bool operator==(const TurnLengthReport&) const = default;
};

/// The text every earlier answer stands for when a turn's delta is measured (the actual
/// answers are only known at run time).
inline constexpr const char* kStandInAnswer = "ok";

/// The conversation a turn's delta is measured against: the session's turns 0..k-1 as
/// Conversation would assemble them, each answer replaced by an assistant message
/// kStandInAnswer (carrying the next turn's recorded tool_calls), then the stand-in
/// answer of turn k-1 (with turn k's tool_calls). `turns` are the session's requests in turn
/// order; k >= 1.
std::vector<Message> conversation_before(const std::vector<const Request*>& turns, std::size_t k);

/// Tokens turn k adds: turn 0: count(turn 0's messages); turn k >= 1:
/// count(conversation_before + turn k's messages) - count(conversation_before). Two counts
/// for k >= 1, one for turn 0.
std::int64_t turn_tokens(const std::vector<const Request*>& turns, std::size_t k,
                         const PromptTokenCounter& count);

/// Generates the session stream, session-major (session 0's turns 0..T-1, then session 1's…).
/// Session ids "sess-<seed>-<i>", request ids "sess-<seed>-<i>-<k>"; turn 0 = [system?, user],
/// turn k = [user]; every turn max_tokens = min_tokens = output_tokens, ignore_eos = true,
/// tags {"source": "sessions"}; think_ms on turns >= 1 when set. Texts are seeded words
/// (fit_exact_text): the system text exact alone (S), turn 0's user message so that turn 0's
/// whole prompt is exactly S + K (K without a system message), turn k's user message so that
/// turn_tokens == K. `source` is "sessions(...)" naming every option; `sha256` is set.
/// Deterministic for the same tokenizer and options. Throws std::invalid_argument for bad
/// options, ExactLengthError when a length cannot be hit; counter exceptions propagate.
RequestStream make_session_stream(const SessionMakeOptions& options,
                                  const PromptTokenCounter& count,
                                  std::vector<TurnLengthReport>* report = nullptr);

}  // namespace dyno::workload
