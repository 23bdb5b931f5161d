// The simulated engine's prefix cache, block-granular like vLLM's automatic prefix caching: a
// prompt's token ids are cut into blocks of `block_tokens`; block k is identified by a hash of
// every token up to the end of block k (chained: the hash of block k−1 and block k's ids), so
// two prompts share block k only when their first (k + 1) · block_tokens tokens are identical.
// Only full blocks exist. The cache holds at most `capacity_blocks` block hashes and evicts the
// least recently used (inserted or hit) one when full. Not thread-safe: it lives inside the
// Model, which its one driver thread owns (the server's thread, or the plugin under its mutex).
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

namespace dyno::sim {

/// Chained hashes of the full blocks of `ids` (ids.size() / block_tokens of them; none when
/// block_tokens < 1). Element k covers ids[0, (k + 1) · block_tokens).
std::vector<std::uint64_t> prefix_block_hashes(std::span<const std::int32_t> ids,
                                               std::int64_t block_tokens);

class PrefixCache {
 public:
  explicit PrefixCache(std::int64_t capacity_blocks = 0);

  bool enabled() const { return capacity_ > 0; }
  /// The number of leading blocks of `hashes` present, at most `max_blocks`; those blocks become
  /// the most recently used (in order, so the first block of a prefix outlives its tail).
  std::size_t match(std::span<const std::uint64_t> hashes, std::size_t max_blocks);
  /// Inserts (or touches) every block of `hashes` in order, evicting the least recently used
  /// blocks beyond capacity. A no-op when disabled.
  void insert(std::span<const std::uint64_t> hashes);
  bool contains(std::uint64_t hash) const { return index_.count(hash) != 0; }
  std::size_t size() const { return lru_.size(); }

 private:
  void touch(std::unordered_map<std::uint64_t, std::list<std::uint64_t>::iterator>::iterator it);

  std::size_t capacity_ = 0;
  std::list<std::uint64_t> lru_;  ///< front: least recently used
  std::unordered_map<std::uint64_t, std::list<std::uint64_t>::iterator> index_;
};

}  // namespace dyno::sim
