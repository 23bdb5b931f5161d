#include "sim/model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace dyno::sim {
namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t x = (state += 0x9E3779B97F4A7C15ull);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in [0, 1).
double uniform(std::uint64_t& state) {
  return static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
}

}  // namespace

Model::Model(Profile profile, std::uint64_t seed)
    : profile_(std::move(profile)), seed_(seed), cache_(profile_.prefix_cache_blocks) {
  if (profile_.shared_kv_token_s > 0.0 && !profile_.zero_delay) {
    slot_left_.assign(std::min<std::size_t>(profile_.max_running_seqs, 65536), 0);
    for (std::size_t i = 0; i < slot_left_.size(); ++i) free_slots_.push_back(i);
  }
}

std::int64_t Model::submit(const ModelRequest& request, double arrival_s) {
  Seq s;
  s.id = request.id;
  s.prompt = std::max<std::int64_t>(1, request.prompt_tokens);
  s.max_tokens = std::max<std::int64_t>(
      1, request.max_tokens > 0 ? request.max_tokens : profile_.default_max_tokens);
  std::uint64_t mix = seed_ ^ (request.seed * 0xD1B54A32D192ED03ull) ^ 0x5EEDull;
  s.rng = splitmix64(mix);
  s.output_len = s.max_tokens;
  s.finish = FinishReason::kLength;
  const double p = profile_.eos_probability;
  if (p > 0.0 && !request.ignore_eos) {
    // Each token at index >= min_tokens (1-based) is EOS with probability p: the stop position
    // is first + a geometric number of failures.
    const std::int64_t first = std::max<std::int64_t>(1, request.min_tokens);
    if (first <= s.max_tokens) {
      double failures = 0.0;
      if (p < 1.0) {
        const double u = 1.0 - uniform(s.rng);  // (0, 1]
        failures = std::floor(std::log(u) / std::log1p(-p));
      }
      if (static_cast<double>(first) + failures <= static_cast<double>(s.max_tokens)) {
        s.output_len = first + static_cast<std::int64_t>(failures);
        s.finish = FinishReason::kStop;
      }
    }
  }
  s.reasoning_len = static_cast<std::int64_t>(
      std::floor(profile_.reasoning_fraction * static_cast<double>(s.output_len)));
  if (cache_.enabled()) s.block_hashes = request.block_hashes;
  if (!plan_) clock_ = std::max(clock_, arrival_s);
  waiting_.push_back(std::move(s));
  return s.output_len;
}

bool Model::cancel(std::uint64_t id) {
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    if (it->id == id) {
      waiting_.erase(it);
      return true;
    }
  }
  for (Seq& s : running_) {
    if (s.id == id && !s.gone) {
      release(s);
      if (!plan_) compact();
      return true;
    }
  }
  return false;
}

void Model::set_paused(std::uint64_t id, bool paused) {
  for (Seq& s : running_) {
    if (s.id == id && !s.gone) s.paused = paused;
  }
  for (Seq& s : waiting_) {
    if (s.id == id) s.paused = paused;
  }
}

bool Model::admissible(const Seq& s) const {
  const std::size_t count = running();
  if (count >= profile_.max_running_seqs) return false;
  return count == 0 || kv_used_ + reservation(s) <= profile_.kv_capacity_tokens;
}

bool Model::has_work() const {
  for (const Seq& s : running_) {
    if (!s.gone && !s.paused) return true;
  }
  return !waiting_.empty() && admissible(waiting_.front());
}

double Model::step_duration(std::int64_t decode_seqs, std::int64_t decode_context,
                            std::int64_t prefill_tokens, std::int64_t prefill_context,
                            std::int64_t kv_cells) const {
  if (profile_.zero_delay) return 0.0;
  return profile_.step_base_s + profile_.decode_seq_s * static_cast<double>(decode_seqs) +
         profile_.decode_ctx_token_s * static_cast<double>(decode_context) +
         static_cast<double>(prefill_tokens) / profile_.prefill_tokens_per_s +
         profile_.prefill_ctx_token_s * static_cast<double>(prefill_context) +
         profile_.shared_kv_token_s * static_cast<double>(decode_seqs + prefill_tokens) *
             static_cast<double>(kv_cells);
}

std::int64_t Model::kv_cells() const {
  if (slot_left_.empty()) return 0;
  std::int64_t cells = left_cells_;
  for (const Seq& s : running_) {
    if (!s.gone) cells += s.prefilled + s.generated;
  }
  return cells;
}

std::optional<StepPlan> Model::start_step(double now_s) {
  if (plan_) return plan_;
  while (!waiting_.empty() && admissible(waiting_.front())) {
    kv_used_ += reservation(waiting_.front());
    ++live_;
    admit(waiting_.front());
    take_slot(waiting_.front());
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
  planned_.clear();
  std::int64_t budget = profile_.step_token_budget;
  StepPlan plan;
  for (std::size_t i = 0; i < running_.size() && budget > 0; ++i) {
    const Seq& s = running_[i];
    if (s.gone || s.paused || s.prefilled < s.prompt) continue;
    planned_.push_back(Planned{i, 0, true});
    --budget;
    ++plan.decode_seqs;
    plan.decode_context += s.prompt + s.generated;
  }
  for (std::size_t i = 0; i < running_.size() && budget > 0; ++i) {
    const Seq& s = running_[i];
    if (s.gone || s.paused || s.prefilled >= s.prompt) continue;
    const std::int64_t chunk = std::min(budget, s.prompt - s.prefilled);
    planned_.push_back(Planned{i, chunk, false});
    budget -= chunk;
    plan.prefill_tokens += chunk;
    // Token k (0-based position) attends to k + 1 tokens: the chunk covers s.prefilled onwards.
    plan.prefill_context += chunk * s.prefilled + chunk * (chunk + 1) / 2;
  }
  if (planned_.empty()) return std::nullopt;
  if (!slot_left_.empty()) plan.kv_cells = kv_cells() + plan.decode_seqs + plan.prefill_tokens;
  plan.start_s = std::max(now_s, ready_s_);
  plan.end_s =
      plan.start_s + step_duration(plan.decode_seqs, plan.decode_context, plan.prefill_tokens,
                                   plan.prefill_context, plan.kv_cells);
  plan_ = plan;
  return plan_;
}

std::int32_t Model::decode_tokens(Seq& s) {
  std::int64_t n = 1;
  for (std::uint32_t k = 0; k < profile_.spec_tokens; ++k) {
    if (uniform(s.rng) >= profile_.spec_acceptance) break;
    ++n;
  }
  n = std::min(n, s.output_len - s.generated);
  if (s.generated < s.reasoning_len) n = std::min(n, s.reasoning_len - s.generated);
  return static_cast<std::int32_t>(n);
}

const std::vector<Event>& Model::complete_step() {
  if (!plan_) throw std::logic_error("Model::complete_step without a planned step");
  events_.clear();
  const double end = plan_->end_s;
  std::int64_t finished = 0;
  for (const Planned& p : planned_) {
    Seq& s = running_[p.index];
    if (s.gone) continue;
    Event e;
    e.request_id = s.id;
    e.time_s = end;
    e.first_index = s.generated;
    e.kind = s.generated < s.reasoning_len ? TokenKind::kReasoning : TokenKind::kContent;
    if (p.decode) {
      e.tokens = decode_tokens(s);
    } else {
      if (!s.prefill_started) s.prefill_start_s = plan_->start_s;
      s.prefill_started = true;
      s.prefilled += p.prefill;
      if (s.prefilled < s.prompt) continue;
      cache_.insert(s.block_hashes);
      e.tokens = 1;  // prefill completion produces the first output token
      e.first = true;
      e.prefill_start_s = s.prefill_start_s;
      e.cached_tokens = s.cached;
    }
    s.generated += e.tokens;
    if (s.generated >= s.output_len) {
      e.finish = s.finish;
      release(s);
      ++finished;
    }
    events_.push_back(e);
  }
  clock_ = end;
  ready_s_ = profile_.zero_delay ? end : end + profile_.finish_s * static_cast<double>(finished);
  plan_.reset();
  compact();
  return events_;
}

// The prefix-cache lookup at admission: the longest run of leading cached blocks, leaving at
// least the last prompt token to compute.
void Model::admit(Seq& s) {
  if (!cache_.enabled()) return;
  cache_queries_ += s.prompt;
  const auto max_blocks =
      static_cast<std::size_t>((s.prompt - 1) / profile_.prefix_cache_block_tokens);
  const std::size_t blocks = cache_.match(s.block_hashes, max_blocks);
  s.cached = static_cast<std::int64_t>(blocks) * profile_.prefix_cache_block_tokens;
  s.prefilled = s.cached;
  cache_hits_ += s.cached;
}

// The free slot used least recently (never-used slots first, lowest index first); its old cells
// are replaced.
void Model::take_slot(Seq& s) {
  if (free_slots_.empty()) return;
  const std::size_t slot = free_slots_.front();
  free_slots_.pop_front();
  left_cells_ -= slot_left_[slot];
  slot_left_[slot] = 0;
  s.slot = slot;
}

void Model::release(Seq& s) {
  s.gone = true;
  --live_;
  kv_used_ -= reservation(s);
  if (s.slot == kNoSlot) return;
  slot_left_[s.slot] = s.prefilled + s.generated;
  left_cells_ += slot_left_[s.slot];
  free_slots_.push_back(s.slot);
}

void Model::compact() {
  running_.erase(
      std::remove_if(running_.begin(), running_.end(), [](const Seq& s) { return s.gone; }),
      running_.end());
}

std::vector<Event> Model::run_until(double t_s) {
  std::vector<Event> out;
  for (;;) {
    if (!plan_) {
      const double at = std::max(clock_, ready_s_);
      // Still finishing at t_s: a request submitted until then joins the next step.
      if (at > t_s || !start_step(at)) break;
    }
    if (plan_->end_s > t_s) break;
    const std::vector<Event>& events = complete_step();
    out.insert(out.end(), events.begin(), events.end());
  }
  if (!plan_) clock_ = std::max(clock_, t_s);
  return out;
}

std::optional<double> Model::next_step_end() {
  if (!plan_ && !start_step(std::max(clock_, ready_s_))) return std::nullopt;
  return plan_->end_s;
}

}  // namespace dyno::sim
