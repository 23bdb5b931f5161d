// The seeded randomness and the word list every generated workload uses (synthetic streams,
// exact-length prompts, shuffled imports): fixed by definition, so a seed gives the same
// stream on every platform and standard library.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace dyno::workload {

/// splitmix64 (Steele, Lea & Flood 2014).
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, bound) by rejection (no modulo bias); bound > 0.
  std::uint64_t below(std::uint64_t bound) {
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    std::uint64_t x = next();
    while (x >= limit) x = next();
    return x % bound;
  }

 private:
  std::uint64_t state_;
};

/// Short, common lowercase English words: each is one token (with its leading space) in the
/// usual BPE and SentencePiece vocabularies and in the simulated engine's, so a prompt of N
/// words is about N tokens. 64 words: a word is 6 bits of a random draw. Changing this list
/// changes every generated stream and its hash.
inline constexpr std::array<std::string_view, 64> kCommonWords = {
    "the",   "of",   "and",  "to",    "in",    "is",   "it",   "that", "was",  "for",   "on",
    "are",   "as",   "with", "his",   "they",  "at",   "be",   "this", "from", "have",  "or",
    "by",    "one",  "had",  "not",   "but",   "what", "all",  "were", "when", "we",    "there",
    "can",   "an",   "your", "which", "their", "said", "if",   "do",   "will", "each",  "about",
    "how",   "up",   "out",  "them",  "then",  "she",  "many", "some", "so",   "these", "would",
    "other", "into", "has",  "more",  "her",   "two",  "like", "him",  "see"};

}  // namespace dyno::workload
