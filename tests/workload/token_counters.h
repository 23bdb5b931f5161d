// Prompt token counters for the workload tests: the simulated engine's tokenizer with its chat
// template (as `dyno sim`'s /tokenize counts), and a coarse toy tokenizer whose counts are not
// additive over words (so exact-length searches must re-fit).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/tokenizer.h"
#include "workload/request.h"

namespace dyno::workload::test {

inline std::int64_t sim_count(const Request& r) {
  if (!r.is_chat()) return static_cast<std::int64_t>(sim::count_tokens(*r.prompt));
  std::vector<sim::ChatMessage> messages;
  for (const Message& m : r.messages) messages.push_back({m.role, m.content});
  return static_cast<std::int64_t>(sim::count_tokens(sim::apply_chat_template(messages)));
}

/// One token per 3 bytes (rounded up) plus a BOS token.
inline std::int64_t toy_count(const Request& r) {
  std::string text = r.is_chat() ? std::string() : *r.prompt;
  for (const Message& m : r.messages) text += "<" + m.role + ">" + m.content;
  return 1 + static_cast<std::int64_t>((text.size() + 2) / 3);
}

}  // namespace dyno::workload::test
