#include "sim/prefix_cache.h"

namespace dyno::sim {

std::vector<std::uint64_t> prefix_block_hashes(std::span<const std::int32_t> ids,
                                               std::int64_t block_tokens) {
  std::vector<std::uint64_t> out;
  if (block_tokens < 1) return out;
  const auto block = static_cast<std::size_t>(block_tokens);
  out.reserve(ids.size() / block);
  // FNV-1a-64 over the little-endian bytes of each id, continued from the previous block's
  // hash, so a block's hash depends on every token before it.
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::size_t end = block; end <= ids.size(); end += block) {
    for (std::size_t i = end - block; i < end; ++i) {
      auto v = static_cast<std::uint32_t>(ids[i]);
      for (int b = 0; b < 4; ++b) {
        h ^= v & 0xFFu;
        h *= 0x100000001b3ull;
        v >>= 8;
      }
    }
    out.push_back(h);
  }
  return out;
}

PrefixCache::PrefixCache(std::int64_t capacity_blocks)
    : capacity_(capacity_blocks > 0 ? static_cast<std::size_t>(capacity_blocks) : 0) {}

void PrefixCache::touch(
    std::unordered_map<std::uint64_t, std::list<std::uint64_t>::iterator>::iterator it) {
  lru_.splice(lru_.end(), lru_, it->second);
}

std::size_t PrefixCache::match(std::span<const std::uint64_t> hashes, std::size_t max_blocks) {
  std::size_t n = 0;
  while (n < hashes.size() && n < max_blocks) {
    const auto it = index_.find(hashes[n]);
    if (it == index_.end()) break;
    touch(it);
    ++n;
  }
  return n;
}

void PrefixCache::insert(std::span<const std::uint64_t> hashes) {
  if (capacity_ == 0) return;
  for (const std::uint64_t h : hashes) {
    const auto it = index_.find(h);
    if (it != index_.end()) {
      touch(it);
      continue;
    }
    if (lru_.size() >= capacity_) {
      index_.erase(lru_.front());
      lru_.pop_front();
    }
    lru_.push_back(h);
    index_.emplace(h, std::prev(lru_.end()));
  }
}

}  // namespace dyno::sim
