#include "workload/exact_prompt.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string_view>
#include <utility>

#include "workload/request_stream.h"
#include "workload/seeded_text.h"

namespace dyno::workload {

namespace {

constexpr auto& kWords = kCommonWords;
constexpr std::uint64_t kVocab = kWords.size();

// Short pieces appended to fine-tune a length, tried in this order (the last one that fitted
// first): usually one token each, with and without a leading space.
constexpr std::array<std::string_view, 12> kPieces = {" a", "1", ".",  " I", ",", " x",
                                                      "a",  "-", " 7", "!",  "x", " ."};

// The word sequence of one text: `index_words` leading words encode `index` (base 64, least
// significant first, shifted by a seed-dependent offset), then seeded random words.
class Words {
 public:
  Words(std::uint64_t seed, std::uint64_t stream, std::optional<std::uint64_t> index)
      : rng_(seed ^ (stream * 0xd1342543de82ef95ULL + 0x632be59bd9b4e019ULL)) {
    if (index) {
      std::uint64_t rest = *index;
      int digit = 0;
      do {
        words_.push_back(kWords[(rest + rng_.next()) % kVocab]);
        rest /= kVocab;
        ++digit;
      } while (rest != 0 || digit < 2);
    }
  }
  std::string_view at(std::size_t k) {
    while (words_.size() <= k) words_.push_back(kWords[rng_.next() % kVocab]);
    return words_[k];
  }

 private:
  SplitMix64 rng_;
  std::vector<std::string_view> words_;
};

// Searches one text of exactly `target` tokens, counting at most kMaxExactCalls times.
class Fitter {
 public:
  Fitter(const TextTokenCounter& measure, std::string where)
      : measure_(measure), where_(std::move(where)) {}

  std::int64_t calls() const { return calls_; }

  // `head` + words of `words` (space-separated; a leading space unless the text is empty) +
  // short pieces, counting exactly `target` tokens.
  std::string fit(const std::string& head, Words& words, std::int64_t target) {
    target_ = target;
    const auto text_of = [&](std::int64_t n) {
      std::string text = head;
      for (std::int64_t k = 0; k < n; ++k) {
        if (!text.empty()) text.push_back(' ');
        text.append(words.at(static_cast<std::size_t>(k)));
      }
      return text;
    };

    // 1. Word count: secant steps from the counts seen, bisection inside the bracket.
    std::int64_t lo = 0;
    std::int64_t c_lo = count(text_of(0));
    if (c_lo == target) return text_of(0);
    if (c_lo > target) {
      throw ExactLengthError(where_ + ": the prompt without text already counts " +
                             std::to_string(c_lo) + " tokens (template, system prompt or " +
                             "prefix), more than the " + std::to_string(target) + " requested");
    }
    std::optional<std::int64_t> hi;
    double rate = 1.0;  // tokens per word
    for (int step = 0;; ++step) {
      const std::int64_t deficit = target - c_lo;
      std::int64_t n =
          lo + std::max<std::int64_t>(1, std::llround(static_cast<double>(deficit) / rate));
      n = std::min(n, lo + 4 * deficit + 8);  // words cost at least ~1/4 token
      if (hi) {
        if (*hi - lo <= 1) break;
        if (step % 2 == 1) n = lo + (*hi - lo) / 2;
        n = std::clamp(n, lo + 1, *hi - 1);
      }
      const std::int64_t c = count(text_of(n));
      if (c == target) return text_of(n);
      if (c > c_lo) rate = static_cast<double>(c - c_lo) / static_cast<double>(n - lo);
      if (c < target) {
        lo = n;
        c_lo = c;
      } else {
        hi = n;
      }
    }

    // 2. Fine-tune with short pieces; drop a word when none fits.
    std::string text = text_of(lo);
    std::int64_t cur = c_lo;
    std::size_t sticky = 0;
    for (;;) {
      bool progressed = false;
      for (std::size_t k = 0; k < kPieces.size(); ++k) {
        const std::size_t p = (sticky + k) % kPieces.size();
        std::string candidate = text;
        candidate.append(kPieces[p]);
        const std::int64_t c = count(candidate);
        if (c == target) return candidate;
        if (c < target && c >= cur) {
          text = std::move(candidate);
          cur = c;
          sticky = p;
          progressed = true;
          break;
        }
      }
      if (progressed) continue;
      if (lo == 0) fail();
      --lo;
      text = text_of(lo);
      cur = count(text);
      if (cur == target) return text;
    }
  }

 private:
  std::int64_t count(const std::string& text) {
    if (calls_ >= kMaxExactCalls) fail();
    ++calls_;
    const std::int64_t c = measure_(text);
    if (c < target_ && (!below_ || c > *below_)) below_ = c;
    if (c > target_ && (!above_ || c < *above_)) above_ = c;
    return c;
  }

  [[noreturn]] void fail() const {
    std::string closest;
    if (below_) closest += "below: " + std::to_string(*below_);
    if (above_)
      closest += std::string(closest.empty() ? "" : ", ") + "above: " + std::to_string(*above_);
    throw ExactLengthError(where_ + ": cannot reach exactly " + std::to_string(target_) +
                           " prompt tokens within " + std::to_string(kMaxExactCalls) +
                           " tokenize calls (closest " + closest + ")");
  }

  const TextTokenCounter& measure_;
  std::string where_;
  std::int64_t target_ = 0;
  std::int64_t calls_ = 0;
  std::optional<std::int64_t> below_;
  std::optional<std::int64_t> above_;
};

// The request of one generated text (make_exact_stream): [system?, user] or the prompt.
Request exact_request(const ExactOptions& options, const std::string& text) {
  Request r;
  if (options.api == Api::kChat) {
    if (!options.system_prompt.empty()) {
      r.messages.push_back(Message{"system", options.system_prompt});
    }
    r.messages.push_back(Message{"user", text});
  } else {
    r.prompt = options.system_prompt.empty() ? text : options.system_prompt + "\n\n" + text;
  }
  return r;
}

std::string describe(const ExactOptions& o) {
  std::string s =
      "exact(api=" + std::string(o.api == Api::kChat ? "chat" : "completions") +
      ",count=" + std::to_string(o.count) + ",input_tokens=" + std::to_string(o.input_tokens) +
      ",output_tokens=" + std::to_string(o.output_tokens) + ",seed=" + std::to_string(o.seed);
  if (o.shared_prefix_tokens > 0) s += ",shared_prefix=" + std::to_string(o.shared_prefix_tokens);
  return s + ")";
}

}  // namespace

std::string fit_exact_text(const ExactTextSpec& spec, const TextTokenCounter& measure,
                           std::int64_t* calls) {
  Fitter fitter(measure, spec.where);
  Words words(spec.seed, spec.stream, spec.index);
  std::string text;
  try {
    text = fitter.fit(spec.head, words, spec.target);
  } catch (...) {
    if (calls) *calls += fitter.calls();
    throw;
  }
  if (calls) *calls += fitter.calls();
  return text;
}

RequestStream make_exact_stream(const ExactOptions& options,
                                const PromptTokenCounter& count_prompt_tokens,
                                std::vector<LengthReport>* report) {
  if (options.input_tokens < 1) throw std::invalid_argument("input_tokens must be at least 1");
  if (options.output_tokens < 1) throw std::invalid_argument("output_tokens must be at least 1");
  if (options.shared_prefix_tokens < 0) {
    throw std::invalid_argument("shared_prefix_tokens must be >= 0");
  }
  if (options.shared_prefix_tokens >= options.input_tokens) {
    throw std::invalid_argument(
        "shared_prefix_tokens (" + std::to_string(options.shared_prefix_tokens) +
        ") must be less than input_tokens (" + std::to_string(options.input_tokens) + ")");
  }
  if (!count_prompt_tokens) throw std::invalid_argument("no prompt token counter");

  // The shared prefix: one text, exact on its own.
  std::string prefix;
  std::int64_t prefix_achieved = 0;
  if (options.shared_prefix_tokens > 0) {
    const TextTokenCounter measure = [&](const std::string& text) {
      return count_prompt_tokens(exact_request(options, text));
    };
    Fitter fitter(measure, "shared prefix");
    Words words(options.seed, 0, std::nullopt);
    prefix = fitter.fit("", words, options.shared_prefix_tokens);
    prefix_achieved = options.shared_prefix_tokens;
  }

  const TextTokenCounter measure = [&](const std::string& text) {
    return count_prompt_tokens(exact_request(options, text));
  };
  RequestStream stream;
  stream.requests.reserve(options.count);
  if (report) report->clear();
  for (std::uint64_t i = 0; i < options.count; ++i) {
    const std::string id = "exact-" + std::to_string(options.seed) + "-" + std::to_string(i);
    Fitter fitter(measure, "request " + std::to_string(i) + " (" + id + ")");
    Words words(options.seed, i + 1, i);
    const std::string text = fitter.fit(prefix, words, options.input_tokens);
    Request r = exact_request(options, text);
    r.id = id;
    r.sampling.max_tokens = options.output_tokens;
    r.sampling.min_tokens = options.output_tokens;
    r.sampling.ignore_eos = true;
    r.tags["source"] = "exact";
    if (report) {
      report->push_back(LengthReport{id, options.input_tokens, options.input_tokens,
                                     options.shared_prefix_tokens, prefix_achieved,
                                     fitter.calls()});
    }
    stream.requests.push_back(std::move(r));
  }
  stream.source = describe(options);
  stream.sha256 = stream_sha256(stream.requests);
  return stream;
}

}  // namespace dyno::workload
