// The built-in synthetic stream: seeded pseudo-text prompts of approximately a given length.
#pragma once

#include <cstdint>
#include <optional>

#include "workload/request.h"

namespace dyno::workload {

struct SyntheticOptions {
  Api api = Api::kChat;
  std::uint64_t count = 100;
  std::int64_t input_tokens = 256;   ///< approximate: about one token per generated word
  std::int64_t output_tokens = 128;  ///< becomes max_tokens (with ignore_eos) of every request
  std::uint64_t seed = 0;
};

/// Generates `count` requests with ids "syn-<seed>-<i>". Deterministic in the options (own
/// splitmix64 generator, no std:: distributions). Each prompt is `input_tokens` space-separated
/// words from a fixed vocabulary of 64 short lowercase English words (about one token each;
/// exact lengths are measured later via /tokenize); chat → one "user" message, completions →
/// `prompt`. Prompts start with words encoding i (at least two words), so they are distinct
/// from their first words whenever input_tokens covers that prefix (2 words up to 4096
/// requests, 3 up to 262144, ...). Every request has max_tokens = output_tokens,
/// ignore_eos = true and tags {"source": "synthetic"}. Sets `source` to
/// "synthetic(api=chat|completions,count=N,input_tokens=T,output_tokens=O,seed=S)" and
/// `sha256`. Throws std::invalid_argument when input_tokens or output_tokens < 1.
RequestStream make_synthetic_stream(const SyntheticOptions& options);

}  // namespace dyno::workload
