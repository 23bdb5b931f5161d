#include "workload/trace_prompts.h"

#include <atomic>
#include <exception>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "workload/request_stream.h"
#include "workload/seeded_text.h"

namespace dyno::workload {

namespace {

/// The words block texts are made of: those that cost one token inside a text, with what
/// each costs as a whole prompt alone (template, BOS and the word).
struct Vocabulary {
  std::vector<std::string_view> words;
  std::vector<std::int64_t> start_cost;
};

Request request_of(Api api, std::string text) {
  Request r;
  if (api == Api::kChat) {
    r.messages.push_back(Message{"user", std::move(text)});
  } else {
    r.prompt = std::move(text);
  }
  return r;
}

Vocabulary calibrate(Api api, const PromptTokenCounter& count, std::int64_t& calls) {
  const std::string ref(kCommonWords[0]);
  const std::int64_t ref_cost = count(request_of(api, ref));
  ++calls;
  Vocabulary v;
  for (const std::string_view w : kCommonWords) {
    const std::int64_t start = count(request_of(api, std::string(w)));
    const std::int64_t inside = count(request_of(api, ref + " " + std::string(w))) - ref_cost;
    calls += 2;
    if (inside == 1) {
      v.words.push_back(w);
      v.start_cost.push_back(start);
    }
  }
  if (v.words.size() < 2) {
    throw ExactLengthError(
        "the target's tokenizer splits the common English words (" +
        std::to_string(v.words.size()) +
        " of 64 cost one token after another word); trace blocks cannot be built exactly");
  }
  return v;
}

/// A seeded word sequence of the vocabulary; `index` (when set) is encoded in its first three
/// or more words, so texts of different records differ from their start.
class WordSequence {
 public:
  WordSequence(const Vocabulary& v, std::uint64_t seed, std::uint64_t key, std::uint64_t salt,
               std::optional<std::uint64_t> index)
      : size_(v.words.size()),
        rng_(SplitMix64(seed ^ (salt * 0x9e3779b97f4a7c15ULL)).next() ^
             (key * 0xd1342543de82ef95ULL + 0x632be59bd9b4e019ULL)) {
    if (index) {
      std::uint64_t rest = *index;
      int digit = 0;
      do {
        pending_.push_back(rest % size_);
        rest /= size_;
        ++digit;
      } while (rest != 0 || digit < 3);
    }
  }
  std::size_t next() {
    if (next_pending_ < pending_.size()) return pending_[next_pending_++];
    return static_cast<std::size_t>(rng_.below(size_));
  }

 private:
  std::uint64_t size_;
  SplitMix64 rng_;
  std::vector<std::uint64_t> pending_;
  std::size_t next_pending_ = 0;
};

constexpr std::uint64_t kSaltBlock = 1;
constexpr std::uint64_t kSaltRecord = 2;

/// Appends a text of exactly `tokens` tokens to `out`. At the prompt's start: "w1 … wk" with
/// start_cost(w1) + k - 1 = tokens (false when the first word alone costs more); elsewhere
/// " w1 … w_tokens".
bool append_text(std::string& out, const Vocabulary& v, WordSequence words, bool at_start,
                 std::int64_t tokens) {
  std::int64_t n = tokens;
  if (at_start) {
    const std::size_t first = words.next();
    n = tokens - v.start_cost[first] + 1;
    if (n < 1) return false;
    out.append(v.words[first]);
    --n;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    out.push_back(' ');
    out.append(v.words[words.next()]);
  }
  return true;
}

std::string where_of(const TraceFile& t, const TraceRecord& r) {
  return t.source + ":" + std::to_string(r.line);
}

[[noreturn]] void too_short(const TraceFile& t, const TraceRecord& r, const Vocabulary& v,
                            std::int64_t tokens) {
  std::int64_t least = v.start_cost.front();
  for (const std::int64_t c : v.start_cost) least = std::min(least, c);
  throw StreamError(where_of(t, r) + ": " + std::to_string(tokens) +
                    " tokens cannot start a prompt: one word alone already counts " +
                    std::to_string(least) +
                    "+ tokens with this API (template, BOS); --api completions has the least, "
                    "--skip-short skips such rows (and counts them)");
}

/// The prompt text of one record, exact by the vocabulary's costs (nullopt: its first block is
/// shorter than a prompt's fixed cost); `last_block` receives the offset where its last block
/// starts (0 without hash ids).
std::optional<std::string> prompt_text(const TraceRecord& r, const Vocabulary& v,
                                       const TracePromptOptions& o, std::size_t& last_block) {
  std::string text;
  last_block = 0;
  if (r.hash_ids.empty()) {
    text.reserve(static_cast<std::size_t>(r.input_tokens) * 5);
    if (!append_text(text, v, WordSequence(v, o.seed, r.line, kSaltRecord, r.line), true,
                     r.input_tokens)) {
      return std::nullopt;
    }
    return text;
  }
  const auto n = static_cast<std::int64_t>(r.hash_ids.size());
  text.reserve(static_cast<std::size_t>(r.input_tokens) * 5);
  for (std::int64_t b = 0; b < n; ++b) {
    const std::int64_t tokens =
        b + 1 < n ? o.block_tokens : r.input_tokens - o.block_tokens * (n - 1);
    const WordSequence words(v, o.seed, r.hash_ids[static_cast<std::size_t>(b)], kSaltBlock,
                             std::nullopt);
    last_block = text.size();
    if (!append_text(text, v, words, b == 0, tokens)) return std::nullopt;
  }
  return text;
}

/// Checks hash_ids against the input length and the block positions seen so far.
void check_blocks(const TraceFile& t, const TraceRecord& r, std::int64_t block_tokens,
                  std::unordered_map<std::uint64_t, std::pair<std::size_t, bool>>& seen) {
  if (r.hash_ids.empty()) return;
  const auto n = static_cast<std::int64_t>(r.hash_ids.size());
  if (r.input_tokens <= block_tokens * (n - 1) || r.input_tokens > block_tokens * n) {
    throw StreamError(where_of(t, r) + ": key `hash_ids`: " + std::to_string(n) + " blocks of " +
                      std::to_string(block_tokens) + " tokens hold " +
                      std::to_string(block_tokens * (n - 1) + 1) + ".." +
                      std::to_string(block_tokens * n) + " tokens, but input_length is " +
                      std::to_string(r.input_tokens) +
                      " (is --block-tokens the trace's block size?)");
  }
  for (std::size_t b = 0; b < r.hash_ids.size(); ++b) {
    const auto [it, inserted] = seen.emplace(r.hash_ids[b], std::make_pair(r.line, b == 0));
    if (!inserted && it->second.second != (b == 0)) {
      throw StreamError(where_of(t, r) + ": key `hash_ids[" + std::to_string(b) + "]`: hash id " +
                        std::to_string(r.hash_ids[b]) +
                        (b == 0 ? " starts this prompt but " : " is inside this prompt but ") +
                        (it->second.second ? "starts" : "is inside") + " the prompt of line " +
                        std::to_string(it->second.first) +
                        "; a block that starts a prompt carries the template and BOS");
    }
  }
}

/// One record's request as built and first counted (by a worker).
struct Built {
  std::optional<Request> request;  ///< nullopt: below a prompt's fixed cost
  std::size_t last_block = 0;
  std::int64_t count = 0;
};

/// Builds and counts records [0, n) on `counters.size()` threads (each its own counter), the
/// i-th record going to whichever thread takes it next. The first exception is rethrown.
std::vector<Built> build_and_count(const TraceFile& trace, const Vocabulary& vocab,
                                   const TracePromptOptions& o,
                                   const std::vector<PromptTokenCounter>& counters) {
  std::vector<Built> out(trace.records.size());
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  const auto work = [&](const PromptTokenCounter& count) {
    try {
      for (std::size_t i = next++; i < out.size() && !failed; i = next++) {
        const TraceRecord& r = trace.records[i];
        std::optional<std::string> prompt = prompt_text(r, vocab, o, out[i].last_block);
        if (!prompt) continue;
        Request req = request_of(o.api, std::move(*prompt));
        req.id = trace.kind + "-" + std::to_string(r.line);
        req.sampling.max_tokens = r.output_tokens;
        req.sampling.min_tokens = r.output_tokens;
        req.sampling.ignore_eos = true;
        req.tags = r.tags;
        req.tags["source"] = trace.kind;
        out[i].count = count(req);
        out[i].request = std::move(req);
      }
    } catch (...) {
      const std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      failed = true;
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t t = 1; t < counters.size(); ++t)
    threads.emplace_back(work, std::cref(counters[t]));
  work(counters.front());
  for (std::thread& t : threads) t.join();
  if (error) std::rethrow_exception(error);
  return out;
}

}  // namespace

RequestStream build_trace_stream(const TraceFile& trace, const TracePromptOptions& o,
                                 const PromptTokenCounter& count, TraceReport* report,
                                 const std::vector<PromptTokenCounter>& parallel) {
  if (o.block_tokens < 1) throw std::invalid_argument("block_tokens must be at least 1");
  if (!count) throw std::invalid_argument("no prompt token counter");
  if (trace.records.empty()) throw StreamError(trace.source + ": no requests");
  TraceReport local;
  TraceReport& rep = report ? *report : local;
  rep = TraceReport{};
  std::int64_t total = 0;
  for (const TraceRecord& r : trace.records) total += r.input_tokens;
  if (total > kMaxTraceTokens) {
    throw StreamError(trace.source + ": " + std::to_string(trace.records.size()) +
                      " requests ask for " + std::to_string(total) +
                      " prompt tokens in all, more than " + std::to_string(kMaxTraceTokens) +
                      " (about 5 GB of text); import part of the trace with --limit");
  }
  std::unordered_map<std::uint64_t, std::pair<std::size_t, bool>> seen;
  for (const TraceRecord& r : trace.records) check_blocks(trace, r, o.block_tokens, seen);
  rep.distinct_blocks = seen.size();

  const Vocabulary vocab = calibrate(o.api, count, rep.calibration_calls);
  rep.vocabulary = vocab.words.size();
  std::vector<Built> built =
      build_and_count(trace, vocab, o, parallel.empty() ? std::vector{count} : parallel);

  std::optional<std::int64_t> t0;  // the first request written
  RequestStream stream;
  stream.requests.reserve(trace.records.size());
  for (std::size_t i = 0; i < built.size(); ++i) {
    const TraceRecord& r = trace.records[i];
    if (!built[i].request) {
      if (!o.skip_short) {
        too_short(trace, r, vocab, r.hash_ids.size() > 1 ? o.block_tokens : r.input_tokens);
      }
      rep.skipped_short.push_back(r.line);
      continue;
    }
    if (!t0) t0 = r.time_ns;
    Request& req = *built[i].request;
    req.at_ms = static_cast<double>(r.time_ns - *t0) / 1e6;
    ++rep.count_calls;
    if (built[i].count == r.input_tokens) {
      ++rep.exact_first;
    } else {
      // Re-fit the last block against the whole prompt (the blocks before it stay as they are).
      std::string& text = req.is_chat() ? req.messages.back().content : *req.prompt;
      ExactTextSpec spec;
      spec.head = text.substr(0, built[i].last_block);
      spec.seed = o.seed;
      spec.stream = r.line;
      spec.index = r.line;
      spec.target = r.input_tokens;
      spec.where = where_of(trace, r) + " (" + req.id + ")";
      Request probe = req;
      text = fit_exact_text(
          spec,
          [&](const std::string& candidate) {
            (probe.is_chat() ? probe.messages.back().content : *probe.prompt) = candidate;
            return count(probe);
          },
          &rep.count_calls);
      rep.adjusted.push_back(req.id);
    }
    rep.requested_tokens += r.input_tokens;
    rep.achieved_tokens += r.input_tokens;
    stream.requests.push_back(std::move(req));
  }
  if (stream.requests.empty()) {
    throw StreamError(trace.source +
                      ": no requests (every row is shorter than a prompt's fixed "
                      "cost)");
  }
  rep.requests = stream.requests.size();
  stream.source = trace.kind + ":" + trace.source;
  stream.sha256 = stream_sha256(stream.requests);
  return stream;
}

}  // namespace dyno::workload
