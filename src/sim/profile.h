// Performance profiles of the simulated engine (a continuous-batching engine model).
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "error/error.h"

namespace dyno::sim {

class ProfileError : public Error {
 public:
  explicit ProfileError(const std::string& message) : Error(ErrorKind::usage, message) {}
};

/// Every parameter of the model. Times in seconds, rates in tokens/s, sizes in tokens.
/// Step time of one engine iteration:
///   step_s = step_base_s + decode_seq_s * B + decode_ctx_token_s * Σctx + P / prefill_tokens_per_s
///            + prefill_ctx_token_s * A + shared_kv_token_s * (B + P) * K
/// where B = sequences decoding in the step, Σctx = their context lengths summed,
/// P = prompt tokens prefilled in the step (at most step_token_budget − B; chunked prefill) and
/// A = Σ over those prompt tokens of the context each attends to (its position + 1: a chunk of c
/// tokens from position p adds c·p + c(c+1)/2), the quadratic part of prefill, and K = KV cells
/// occupied after the step in a cache shared by all sequences (llama.cpp's unified KV cache, where
/// every token of a batch attends over all occupied cells, masked or not): the running sequences'
/// cells plus what finished sequences left in their slots (max_running_seqs slots, reused least
/// recently used first; a slot keeps its last sequence's prompt and output until reused).
/// After a step in which F sequences finished, the next step starts finish_s * F later.
struct Profile {
  std::string name = "custom";
  std::string description;
  std::string model_name = "dyno-sim";  ///< served model id (GET /v1/models)

  std::uint32_t max_running_seqs = 64;    ///< running sequences at most
  std::int64_t step_token_budget = 8192;  ///< tokens per step (decode + prefill chunk)
  double prefill_tokens_per_s = 20000.0;
  double step_base_s = 0.004;
  double decode_seq_s = 0.0001;      ///< per decoding sequence in the step
  double decode_ctx_token_s = 0.0;   ///< per context token of decoding sequences
  double prefill_ctx_token_s = 0.0;  ///< per (prompt token × context token) prefilled
  double shared_kv_token_s = 0.0;    ///< per (batch token × occupied cell of a shared KV cache)
  /// Engine time per sequence that finished in a step, spent after that step before the next
  /// one is planned (sending the final response, releasing the slot): the other sequences wait
  /// for it, and a request that arrives meanwhile joins the next step.
  double finish_s = 0.0;
  std::int64_t kv_capacity_tokens = 1 << 20;  ///< Σ(prompt + max_tokens) of running sequences
  std::int64_t max_model_len = 32768;         ///< prompt + max_tokens above this: HTTP 400

  std::int64_t default_max_tokens = 256;  ///< when a request sets none
  double eos_probability = 0.0;  ///< per token after min_tokens unless ignore_eos (0: never)

  std::uint32_t spec_tokens = 0;  ///< draft tokens per step (0: no speculative decoding)
  double spec_acceptance = 0.0;   ///< per-draft-token acceptance probability

  double reasoning_fraction = 0.0;  ///< leading share of output sent as reasoning_content
  /// Extra tokens the chat template adds per message, on top of its own markup (12 tokens per
  /// message + 7 for the generation prompt, see apply_chat_template in sim/tokenizer.h).
  std::int64_t chat_template_tokens = 0;
  /// Prompt tokens each image part of a chat message counts for (a fixed vision-encoder cost).
  std::int64_t image_tokens = 576;

  /// Prefix cache (docs/sim.md "Prefix cache"): block size in tokens (vLLM's default 16) and
  /// capacity in blocks; 0 blocks: no prefix cache (every built-in profile's default).
  std::int64_t prefix_cache_block_tokens = 16;
  std::int64_t prefix_cache_blocks = 0;

  bool zero_delay = false;  ///< firehose: all times 0, generate as fast as the sockets allow
};

/// Names of the built-in profiles, in display order.
std::vector<std::string> builtin_profile_names();
/// A built-in profile by name; throws ProfileError listing the valid names.
Profile builtin_profile(const std::string& name);
/// Reads a JSON profile file: any subset of the fields above, keyed by their names (unknown keys
/// and wrong types are errors naming the file and key); "base": "<builtin>" starts from a
/// built-in, otherwise from Profile{}. "name" defaults to the file's stem. Values are validated
/// (rates > 0, times >= 0, probabilities and reasoning_fraction in [0, 1], sizes >= 1,
/// spec_tokens <= 64,
/// prefix_cache_block_tokens >= 1, prefix_cache_blocks >= 0). Throws ProfileError.
Profile load_profile_file(const std::filesystem::path& path);
/// A built-in name, or a path to a JSON file.
Profile resolve_profile(const std::string& name_or_path);
/// The profile as a JSON object text with every field (for records and
/// `dyno sim --show-profile`); load_profile_file reads it back unchanged.
std::string profile_to_json(const Profile& profile);

}  // namespace dyno::sim
