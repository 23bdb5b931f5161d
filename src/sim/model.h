// The performance model of the simulated engine: a continuous-batching scheduler (waiting queue
// -> running set, chunked prefill, per-step token budget, KV-capacity admission) driven by a
// caller-supplied clock. It is pure: no threads, no real time; the server drives it with the
// steady clock and tests drive it with virtual time.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "sim/prefix_cache.h"
#include "sim/profile.h"

namespace dyno::sim {

/// One request as the model sees it (token counts only; text is the server's business).
struct ModelRequest {
  std::uint64_t id = 0;            ///< caller-chosen, unique among live requests
  std::int64_t prompt_tokens = 1;  ///< values below 1 are treated as 1
  std::int64_t max_tokens = 0;     ///< output length cap; <= 0: profile.default_max_tokens
  std::int64_t min_tokens = 0;     ///< no EOS stop before this many output tokens
  bool ignore_eos = false;         ///< never stop before max_tokens
  std::uint64_t seed = 0;          ///< mixed with the model seed for EOS/speculation draws
  /// prefix_block_hashes of the prompt's cacheable ids (empty: nothing to look up or cache).
  std::vector<std::uint64_t> block_hashes;
};

enum class TokenKind { kReasoning, kContent };
enum class FinishReason { kNone, kLength, kStop };

/// Tokens a sequence emitted at the end of one step. An event never straddles the
/// reasoning/content boundary (speculative acceptance is cut there), so all its tokens are of
/// one kind.
struct Event {
  std::uint64_t request_id = 0;
  double time_s = 0.0;           ///< end of the step that produced it
  std::int64_t first_index = 0;  ///< output index of the event's first token (0-based)
  std::int32_t tokens = 0;       ///< >= 1
  TokenKind kind = TokenKind::kContent;
  bool first = false;                         ///< carries the sequence's first output token
  FinishReason finish = FinishReason::kNone;  ///< kNone unless this is the last event
  /// Only on the `first` event: start of the step that prefilled the sequence's first prompt
  /// chunk (llama.cpp's t_start_process_prompt), so time_s − prefill_start_s is the prefill time.
  double prefill_start_s = 0.0;
  /// Only on the `first` event: prompt tokens served from the prefix cache (not prefilled).
  std::int64_t cached_tokens = 0;
};

/// What one planned step does (exposed for tests and diagnostics).
struct StepPlan {
  double start_s = 0.0;
  double end_s = 0.0;
  std::int64_t decode_seqs = 0;      ///< B
  std::int64_t decode_context = 0;   ///< Σctx of the decoding sequences
  std::int64_t prefill_tokens = 0;   ///< P
  std::int64_t prefill_context = 0;  ///< A: Σ over prefilled tokens of their position + 1
  /// K: cells of the shared KV cache occupied after the step (0 unless shared_kv_token_s > 0).
  std::int64_t kv_cells = 0;
};

/// Semantics per step: a sequence whose prefill completes in the step emits its first token
/// (one token) at the step's end; each decoding sequence emits one event of 1 token, or with
/// spec_tokens k > 0 of 1 + (leading accepted drafts, each accepted with spec_acceptance,
/// stopping at the first rejection) tokens, capped by the remaining output and by the
/// reasoning/content boundary. A decoding sequence takes one budget token whatever k is.
/// Prefix cache (profile.prefix_cache_blocks > 0): at admission a sequence's leading blocks
/// found in the cache (at most (prompt − 1) / block_tokens of them, so the last prompt token is
/// always computed) count as prefilled and are never charged to a step; its blocks are inserted
/// when its prefill completes.
/// Shared KV cache (profile.shared_kv_token_s > 0): each admitted sequence takes the free slot
/// (of max_running_seqs, at most 65536) used least recently, whose previous content it replaces;
/// a finished or cancelled sequence leaves its cells (prompt + output so far) in its slot.
/// Output length is max_tokens (request, else default_max_tokens) unless an EOS draw (per
/// token from index min_tokens on, probability eos_probability, not with ignore_eos) ends it
/// earlier with FinishReason::kStop. The first floor(reasoning_fraction * length) tokens are
/// reasoning. A finished or cancelled sequence frees its KV reservation (prompt + max_tokens).
///
/// Finish work (profile.finish_s > 0): after a step in which F sequences finished, the next step
/// starts no earlier than its end + F * finish_s (ready_s()).
///
/// Contract: the caller alternates start_step(now) -> (wait until end_s) -> complete_step();
/// submit/cancel/set_paused may be called at any time, including while a step is planned: a
/// request submitted during a step is considered at the next step's start, a cancelled one is
/// dropped from the planned step's results, and its KV reservation is freed at once.
class Model {
 public:
  explicit Model(Profile profile, std::uint64_t seed = 0);

  const Profile& profile() const { return profile_; }

  /// Enqueues a request (FCFS). Output length (EOS draw) is decided here, deterministically
  /// from (model seed, request seed). Returns the planned output length. When idle, the clock
  /// used by run_until() moves to arrival_s.
  std::int64_t submit(const ModelRequest& request, double arrival_s = 0.0);
  /// Drops a waiting or running request; returns false if unknown (e.g. already finished).
  bool cancel(std::uint64_t id);
  /// A paused sequence keeps its KV reservation but takes no part in steps (backpressure).
  void set_paused(std::uint64_t id, bool paused);

  /// Whether a step could be started now (something to prefill/decode, or admissible).
  bool has_work() const;
  /// Whether a step is planned and not yet completed.
  bool in_step() const { return plan_.has_value(); }
  /// Plans a step starting at now_s: admits waiting requests (FCFS while the running count is
  /// below max_running_seqs and Σ(prompt + max_tokens) fits kv_capacity_tokens; a request that
  /// alone exceeds the capacity is admitted when nothing runs, so it cannot starve), gives each
  /// decoding sequence one budget token and the rest to prefill chunks in admission order.
  /// Returns the plan, or nullopt if there is nothing to do. If a step is already planned,
  /// returns that one.
  std::optional<StepPlan> start_step(double now_s);
  /// Applies the planned step and returns its events: decoding sequences first, then those whose
  /// prefill completed (first token), each group in admission order. Requires in_step(). The
  /// reference stays valid until the next complete_step()/run_until().
  const std::vector<Event>& complete_step();

  /// Virtual-time driver for tests: runs every step that ends at or before t_s (starting each
  /// step when the previous ended, or at the model clock when idle, but never before
  /// ready_s()) and returns their events. Like a real engine, the step after the last
  /// completed one is planned at once (at ready_s()) if there is work and ready_s() <= t_s,
  /// and stays planned when it ends after t_s: a request submitted then joins the following
  /// step. If idle afterwards, the model clock is t_s.
  std::vector<Event> run_until(double t_s);
  /// End of the planned step, or of the step that would start now at the model clock.
  std::optional<double> next_step_end();
  /// The earliest time the next step may start: the end of the last completed step plus
  /// profile.finish_s per sequence that finished in it (0 before any step, and the step's end
  /// when zero_delay). A caller that drives the model in time waits until then before
  /// start_step, so that requests submitted meanwhile join that step; start_step never
  /// starts a step earlier.
  double ready_s() const { return ready_s_; }
  double clock() const { return clock_; }

  std::size_t waiting() const { return waiting_.size(); }
  std::size_t running() const { return live_; }
  std::int64_t kv_used() const { return kv_used_; }
  /// Prefix-cache totals (vLLM's prefix_cache_queries/hits): prompt tokens of admitted requests
  /// looked up in the cache (0 with the cache off), and those served from it.
  std::int64_t prefix_cache_queries() const { return cache_queries_; }
  std::int64_t prefix_cache_hits() const { return cache_hits_; }
  const PrefixCache& prefix_cache() const { return cache_; }
  /// Duration of a step with the given shape under this profile (0 when zero_delay).
  double step_duration(std::int64_t decode_seqs, std::int64_t decode_context,
                       std::int64_t prefill_tokens, std::int64_t prefill_context = 0,
                       std::int64_t kv_cells = 0) const;
  /// Shared-KV-cache cells occupied now: running sequences' plus those left in free slots.
  std::int64_t kv_cells() const;

 private:
  struct Seq {
    std::uint64_t id = 0;
    std::int64_t prompt = 1;
    std::int64_t prefilled = 0;
    std::int64_t max_tokens = 0;
    std::int64_t output_len = 0;     ///< planned (EOS draw)
    std::int64_t reasoning_len = 0;  ///< floor(reasoning_fraction * output_len)
    std::int64_t generated = 0;
    double prefill_start_s = 0.0;  ///< start of the step with the first prompt chunk
    bool prefill_started = false;
    std::int64_t cached = 0;  ///< leading prompt tokens served by the prefix cache at admission
    std::vector<std::uint64_t> block_hashes;
    FinishReason finish = FinishReason::kLength;
    std::uint64_t rng = 0;
    bool paused = false;
    bool gone = false;           ///< cancelled or finished; removed after the step
    std::size_t slot = kNoSlot;  ///< shared-KV-cache slot
  };
  static constexpr std::size_t kNoSlot = static_cast<std::size_t>(-1);
  struct Planned {
    std::size_t index = 0;     ///< into running_
    std::int64_t prefill = 0;  ///< chunk size; decode when the sequence was decoding
    bool decode = false;
  };

  std::int64_t reservation(const Seq& s) const { return s.prompt + s.max_tokens; }
  bool admissible(const Seq& s) const;
  void compact();
  void admit(Seq& s);
  void take_slot(Seq& s);
  void release(Seq& s);  ///< marks a finished or cancelled sequence gone and frees what it held
  std::int32_t decode_tokens(Seq& s);

  Profile profile_;
  std::uint64_t seed_;
  std::deque<Seq> waiting_;
  std::vector<Seq> running_;
  std::int64_t kv_used_ = 0;
  std::size_t live_ = 0;  ///< running_ entries that are not gone
  std::optional<StepPlan> plan_;
  std::vector<Planned> planned_;
  std::vector<Event> events_;
  double clock_ = 0.0;
  double ready_s_ = 0.0;
  PrefixCache cache_;
  std::int64_t cache_queries_ = 0;
  std::int64_t cache_hits_ = 0;
  // Shared KV cache only: the cells each slot's last sequence left (0 while a sequence holds it),
  // their sum, and the free slots, least recently used first (never-used ones, by index, first).
  std::vector<std::int64_t> slot_left_;
  std::int64_t left_cells_ = 0;
  std::deque<std::size_t> free_slots_;
};

}  // namespace dyno::sim
