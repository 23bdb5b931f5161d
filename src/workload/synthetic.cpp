#include "workload/synthetic.h"

#include <array>
#include <stdexcept>
#include <string>
#include <string_view>

#include "workload/request_stream.h"
#include "workload/seeded_text.h"

namespace dyno::workload {

namespace {

constexpr auto& kWords = kCommonWords;
constexpr std::uint64_t kVocab = kWords.size();

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
