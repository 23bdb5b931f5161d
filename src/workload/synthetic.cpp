#include "workload/synthetic.h"

#include <array>
#include <stdexcept>
#include <string>
#include <string_view>

#include "workload/request_stream.h"

namespace dyno::workload {

namespace {

// Short, common lowercase English words: each is one token (with its leading space) in the
// usual BPE and SentencePiece vocabularies, so a prompt of N words is about N tokens. Exact
// lengths are the tokenizer's business (measured later via /tokenize). 64 words, so a word
// is 6 bits of a random draw. Changing this list changes every synthetic stream's hash.
constexpr std::array<std::string_view, 64> kWords = {
    "the",   "of",   "and",  "to",    "in",    "is",   "it",   "that", "was",  "for",   "on",
    "are",   "as",   "with", "his",   "they",  "at",   "be",   "this", "from", "have",  "or",
    "by",    "one",  "had",  "not",   "but",   "what", "all",  "were", "when", "we",    "there",
    "can",   "an",   "your", "which", "their", "said", "if",   "do",   "will", "each",  "about",
    "how",   "up",   "out",  "them",  "then",  "she",  "many", "some", "so",   "these", "would",
    "other", "into", "has",  "more",  "her",   "two",  "like", "him",  "see"};
constexpr std::uint64_t kVocab = kWords.size();

/// splitmix64 (Steele, Lea & Flood 2014): a tiny generator whose output is fixed by its
/// definition, so the stream is the same on every platform and standard library.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t state_;
};

/// The prompt of request i: first the base-64 digits of i (least significant first, at least
/// two), each shifted by a seed-dependent offset, so that prompts differ from their first word
/// and a prefix cache cannot reuse one request's blocks for another; then random words.
std::string make_prompt(std::uint64_t i, std::int64_t words, SplitMix64& rng,
                        const std::array<std::uint64_t, 11>& offsets) {
  std::string prompt;
  std::int64_t written = 0;
  const auto add = [&](std::uint64_t index) {
    if (written > 0) prompt.push_back(' ');
    prompt.append(kWords[index % kVocab]);
    ++written;
  };
  std::uint64_t rest = i;
  std::size_t digit = 0;
  do {
    add(rest % kVocab + offsets[digit]);
    rest /= kVocab;
    ++digit;
  } while ((rest > 0 || digit < 2) && written < words);
  while (written < words) {
    std::uint64_t bits = rng.next();
    for (int k = 0; k < 10 && written < words; ++k) {  // ten 6-bit words per draw
      add(bits & (kVocab - 1));
      bits >>= 6;
    }
  }
  return prompt;
}

}  // namespace

RequestStream make_synthetic_stream(const SyntheticOptions& options) {
  if (options.input_tokens < 1) {
    throw std::invalid_argument("synthetic: input_tokens must be >= 1 (got " +
                                std::to_string(options.input_tokens) + ")");
  }
  if (options.output_tokens < 1) {
    throw std::invalid_argument("synthetic: output_tokens must be >= 1 (got " +
                                std::to_string(options.output_tokens) + ")");
  }
  const char* api = options.api == Api::kChat ? "chat" : "completions";
  SplitMix64 rng(options.seed);
  std::array<std::uint64_t, 11> offsets{};  // 11 base-64 digits cover any uint64 index
  for (auto& o : offsets) o = rng.next() % kVocab;

  RequestStream stream;
  stream.requests.reserve(options.count);
  for (std::uint64_t i = 0; i < options.count; ++i) {
    Request r;
    r.id = "syn-" + std::to_string(options.seed) + "-" + std::to_string(i);
    std::string prompt = make_prompt(i, options.input_tokens, rng, offsets);
    if (options.api == Api::kChat) {
      r.messages.push_back({"user", std::move(prompt)});
    } else {
      r.prompt = std::move(prompt);
    }
    r.sampling.max_tokens = options.output_tokens;
    r.sampling.ignore_eos = true;
    r.tags["source"] = "synthetic";
    stream.requests.push_back(std::move(r));
  }
  stream.source = std::string("synthetic(api=") + api + ",count=" + std::to_string(options.count) +
                  ",input_tokens=" + std::to_string(options.input_tokens) +
                  ",output_tokens=" + std::to_string(options.output_tokens) +
                  ",seed=" + std::to_string(options.seed) + ")";
  stream.sha256 = stream_sha256(stream.requests);
  return stream;
}

}  // namespace dyno::workload
