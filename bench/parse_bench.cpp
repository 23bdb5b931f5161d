// Micro-benchmark of the client's per-token hot path: SSE framing + chunk decoding, bare and
// through the connection's decoder seam (transport/stream_decoder.h); and dyno's hand-written
// chunk decoder against one written with simdjson's On-Demand API, over one real streamed chunk
// per engine (bench/data/chunks/).
//
// Modes besides the benchmarks (each runs the equivalence check first, as the benchmarks do):
//   DYNO_PARSE_COUNT=N    decode every corpus file N times with each decoder, then exit: a driver
//                         for `valgrind --tool=callgrind --toggle-collect=...` (decode_chunk,
//                         *ondemand_decode_padded*, *ondemand_decode_copy*).
//                         DYNO_PARSE_ONLY=<engine> and DYNO_PARSE_DECODER=hand|stream|simdjson|copy
//                         narrow it (stream: ChunkDecoder::decode over the chunk's token stream).
//   DYNO_PARSE_COMPARE=D  run both decoders over every file in directory D (one payload each) and
//                         print where they disagree (malformed input, fuzz corpora).
#include <benchmark/benchmark.h>
#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "transport/openai_decoder.h"
#include "transport/openai_stream.h"
#include "transport/sse_parser.h"

#define DYNO_STRINGIFY_(x) #x
#define DYNO_STRINGIFY(x) DYNO_STRINGIFY_(x)

namespace {

using dyno::transport::ChunkInfo;

// A vLLM-style chat chunk (about 250 bytes on the wire).
const std::string kChunk =
    R"({"id":"chatcmpl-8d1f0c3a2b4e4f6a9c7d5e3b1a0f2c4d","object":"chat.completion.chunk",)"
    R"("created":1795987651,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,)"
    R"("delta":{"content":" world"},"logprobs":null,"finish_reason":null}]})";

// A llama.cpp server chat chunk (tests/transport/data/chat_stream_sse.txt).
const std::string kLlamaCppChunk =
    R"({"choices":[{"finish_reason":null,"index":0,"delta":{"content":" kindly"}}],)"
    R"("created":1795987651,"id":"chatcmpl-oMMUdWATen93Gn7mubBOLJmz6jk8wo6G",)"
    R"("model":"rand-tiny-23M-f16","system_fingerprint":"b4748-c392e50",)"
    R"("object":"chat.completion.chunk"})";

// The shape `dyno sim` streams.
const std::string kSimChunk =
    R"({"id":"chatcmpl-42","object":"chat.completion.chunk",)"
    R"("created":1795987651,"model":"sim","choices":[{"index":0,"delta":{"content":" word"},)"
    R"("logprobs":null,"finish_reason":null}]})";

// ---------------------------------------------------------------------------------------------
// The same decoder as dyno::transport::decode_chunk, written with simdjson On-Demand: the root
// members are visited once, in document order; only the members decode_chunk reads are
// materialised, everything else is left for On-Demand to skip.

namespace od = simdjson::ondemand;
using simdjson::error_code;

std::string_view trim_right(std::string_view s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

std::string_view trim_space(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  return trim_right(s);
}

// The members decode_chunk's scanner acts on (openai_stream.cpp): a rival decoder names them too.
enum class Key : unsigned char {
  kOther,
  kChoices,
  kUsage,
  kTimings,
  kError,
  kDelta,
  kMessage,
  kText,
  kFinishReason,
  kContent,
  kReasoning,
};

Key classify(std::string_view key) {
  switch (key.size()) {
    case 4:
      return key == "text" ? Key::kText : Key::kOther;
    case 5:
      return key == "usage"   ? Key::kUsage
             : key == "error" ? Key::kError
             : key == "delta" ? Key::kDelta
                              : Key::kOther;
    case 7:
      return key == "choices"   ? Key::kChoices
             : key == "timings" ? Key::kTimings
             : key == "message" ? Key::kMessage
             : key == "content" ? Key::kContent
                                : Key::kOther;
    case 9:
      return key == "reasoning" ? Key::kReasoning : Key::kOther;
    case 13:
      return key == "finish_reason" ? Key::kFinishReason : Key::kOther;
    case 17:
      return key == "reasoning_content" ? Key::kReasoning : Key::kOther;
    default:
      return Key::kOther;
  }
}

class OnDemandDecoder {
 public:
  // `json` has SIMDJSON_PADDING readable bytes past its end (a simdjson::padded_string).
  [[gnu::noinline]] bool ondemand_decode_padded(simdjson::padded_string_view json, ChunkInfo& out,
                                                std::string& error) {
    return decode(json, out, error);
  }

  // What a decoder over socket bytes has to do: copy the payload into a padded buffer first.
  [[gnu::noinline]] bool ondemand_decode_copy(std::string_view payload, ChunkInfo& out,
                                              std::string& error) {
    if (payload.size() + simdjson::SIMDJSON_PADDING > capacity_) [[unlikely]] {
      capacity_ = payload.size() + simdjson::SIMDJSON_PADDING;
      buffer_ = std::make_unique<char[]>(capacity_);
    }
    std::memcpy(buffer_.get(), payload.data(), payload.size());
    return decode(simdjson::padded_string_view(buffer_.get(), payload.size(), capacity_), out,
                  error);
  }

 private:
  [[gnu::always_inline]] bool decode(simdjson::padded_string_view json, ChunkInfo& out,
                                     std::string& error) {
    clear(out);
    if (json.size() <= 16 && trim_space(json) == "[DONE]") {
      out.is_done_marker = true;
      return true;
    }
    od::document doc;
    od::object object;
    error_code e = parser_.iterate(json).get(doc);
    if (!e) e = doc.get_object().get(object);
    if (!e) e = root(object, out);
    // Anything after the root object (3.0.1 has no document::at_end()).
    if (!e && doc.current_location().error() != simdjson::OUT_OF_BOUNDS) {
      e = simdjson::TRAILING_CONTENT;
    }
    if (e) [[unlikely]] {
      error = simdjson::error_message(e);
      return false;
    }
    return true;
  }

  static void clear(ChunkInfo& out) {
    out.content.clear();
    out.reasoning.clear();
    out.usage.reset();
    out.finish_reason.clear();
    out.timings_json.clear();
    out.error_message.clear();
    out.is_done_marker = false;
  }

  // The member's name: its raw bytes when it holds no escape (the input is padded and the
  // string was delimited by stage 1, so the scan stops at its closing quote), else unescaped.
  static error_code key_of(od::field& field, std::string_view& key) {
    const char* const begin = field.key().raw();
    const char* p = begin;
    while (*p != '"' && *p != '\\') ++p;
    if (*p == '"') [[likely]] {
      key = std::string_view(begin, static_cast<std::size_t>(p - begin));
      return simdjson::SUCCESS;
    }
    return field.unescaped_key().get(key);
  }

  // Iterates the members of `object`, calling member(key, value); stops at the first error.
  template <typename Fn>
  static error_code members(od::object& object, Fn&& member) {
    for (auto result : object) {
      od::field field;
      if (error_code e = std::move(result).get(field); e) return e;
      std::string_view key;
      if (error_code e = key_of(field, key); e) return e;
      if (error_code e = member(key, field.value()); e) return e;
    }
    return simdjson::SUCCESS;
  }

  // `null` passes (the member is absent in effect); any other value is `shape`.
  static error_code null_or(od::value& v, error_code shape) {
    bool is_null = false;
    if (v.is_null().get(is_null) != simdjson::SUCCESS || !is_null) return shape;
    return simdjson::SUCCESS;
  }

  // A string (decoded into `out`) or null (leaves `out` as it is).
  static error_code text_or_null(od::value& v, std::string& out) {
    std::string_view s;
    const error_code e = v.get_string().get(s);
    if (!e) [[likely]] {
      out.assign(s.data(), s.size());
      return simdjson::SUCCESS;
    }
    if (e != simdjson::INCORRECT_TYPE) return e;
    return null_or(v, e);
  }

  error_code root(od::object& object, ChunkInfo& out) {
    return members(object, [this, &out](std::string_view key, od::value& v) -> error_code {
      switch (classify(key)) {
        case Key::kChoices:
          return choices(v, out);
        case Key::kUsage:
          return usage(v, out);
        case Key::kTimings:
          return timings(v, out);
        case Key::kError:
          return error_member(v, out);
        default:
          return simdjson::SUCCESS;  // skipped by On-Demand
      }
    });
  }

  static error_code choices(od::value& v, ChunkInfo& out) {
    od::array array;
    if (error_code e = v.get_array().get(array); e) {
      return e == simdjson::INCORRECT_TYPE ? null_or(v, e) : e;
    }
    bool first = true;
    for (auto result : array) {
      od::value item;
      if (error_code e = std::move(result).get(item); e) return e;
      if (!first) continue;  // only choices[0] is read
      first = false;
      od::object choice;
      const error_code e = item.get_object().get(choice);
      if (e == simdjson::INCORRECT_TYPE) continue;
      if (e) return e;
      if (error_code ce = choice_members(choice, out); ce) return ce;
    }
    return simdjson::SUCCESS;
  }

  static error_code choice_members(od::object& choice, ChunkInfo& out) {
    return members(choice, [&out](std::string_view key, od::value& v) -> error_code {
      switch (classify(key)) {
        case Key::kDelta:
        case Key::kMessage:
          return delta(v, out);
        case Key::kText:
          return text_or_null(v, out.content);
        case Key::kFinishReason:
          return text_or_null(v, out.finish_reason);
        default:
          return simdjson::SUCCESS;
      }
    });
  }

  static error_code delta(od::value& v, ChunkInfo& out) {
    od::object object;
    if (error_code e = v.get_object().get(object); e) {
      return e == simdjson::INCORRECT_TYPE ? null_or(v, e) : e;
    }
    return members(object, [&out](std::string_view key, od::value& member) -> error_code {
      switch (classify(key)) {
        case Key::kContent:
          return text_or_null(member, out.content);
        case Key::kReasoning:
          return text_or_null(member, out.reasoning);
        default:
          return simdjson::SUCCESS;
      }
    });
  }

  // An integer count; a fraction, an exponent, an out-of-range integer or another type leaves
  // it unreported (as decode_chunk does); a malformed number is an error.
  static error_code count(od::value& v, std::optional<std::int64_t>& value) {
    std::int64_t n = 0;
    if (v.get_int64().get(n) == simdjson::SUCCESS) {
      value = n;
      return simdjson::SUCCESS;
    }
    od::json_type type{};
    if (error_code e = v.type().get(type); e) return e;
    if (type != od::json_type::number) return simdjson::SUCCESS;
    double d = 0;
    return v.get_double().get(d);
  }

  static error_code details(od::value& v, std::string_view wanted,
                            std::optional<std::int64_t>& value) {
    od::object object;
    if (error_code e = v.get_object().get(object); e) {
      return e == simdjson::INCORRECT_TYPE ? simdjson::SUCCESS : e;  // null etc.: unreported
    }
    return members(object, [wanted, &value](std::string_view key, od::value& member) {
      return key == wanted ? count(member, value) : simdjson::SUCCESS;
    });
  }

  [[gnu::noinline]] static error_code usage(od::value& v, ChunkInfo& out) {
    od::object object;
    if (error_code e = v.get_object().get(object); e) {
      return e == simdjson::INCORRECT_TYPE ? null_or(v, e) : e;  // usage: null = not reported
    }
    dyno::transport::Usage& usage = out.usage.emplace();
    return members(object, [&usage](std::string_view key, od::value& member) -> error_code {
      if (key == "prompt_tokens") return count(member, usage.prompt_tokens);
      if (key == "completion_tokens") return count(member, usage.completion_tokens);
      if (key == "prompt_tokens_details") {
        return details(member, "cached_tokens", usage.cached_tokens);
      }
      if (key == "completion_tokens_details") {
        return details(member, "reasoning_tokens", usage.reasoning_tokens);
      }
      return simdjson::SUCCESS;
    });
  }

  [[gnu::noinline]] static error_code timings(od::value& v, ChunkInfo& out) {
    od::object object;
    if (error_code e = v.get_object().get(object); e) {
      return e == simdjson::INCORRECT_TYPE ? simdjson::SUCCESS : e;
    }
    std::string_view raw;
    if (error_code e = object.raw_json().get(raw); e) return e;
    out.timings_json.assign(trim_right(raw));
    return simdjson::SUCCESS;
  }

  // An `error` member: a string is the message; an object's `message` string is; when that is
  // empty or absent the raw JSON of the value is (as decode_chunk does).
  [[gnu::noinline]] static error_code error_member(od::value& v, ChunkInfo& out) {
    od::json_type type{};
    if (error_code e = v.type().get(type); e) return e;
    std::string_view raw;
    switch (type) {
      case od::json_type::null:
        return null_or(v, simdjson::INCORRECT_TYPE);
      case od::json_type::string:
        raw = trim_right(v.raw_json_token());
        if (error_code e = text_or_null(v, out.error_message); e) return e;
        break;
      case od::json_type::object: {
        od::object object;
        if (error_code e = v.get_object().get(object); e) return e;
        if (error_code e = object.raw_json().get(raw); e) return e;
        raw = trim_right(raw);
        bool non_empty = false;
        if (error_code e = object.reset().get(non_empty); e) return e;
        const error_code e =
            members(object, [&out](std::string_view key, od::value& member) -> error_code {
              od::json_type t{};
              if (classify(key) == Key::kMessage && member.type().get(t) == simdjson::SUCCESS &&
                  t == od::json_type::string) {
                return text_or_null(member, out.error_message);
              }
              return simdjson::SUCCESS;
            });
        if (e) return e;
        break;
      }
      case od::json_type::array: {
        od::array array;
        if (error_code e = v.get_array().get(array); e) return e;
        if (error_code e = array.raw_json().get(raw); e) return e;
        raw = trim_right(raw);
        break;
      }
      default:
        raw = trim_right(v.raw_json_token());
        break;
    }
    if (out.error_message.empty()) out.error_message.assign(raw);
    return simdjson::SUCCESS;
  }

  od::parser parser_;
  std::unique_ptr<char[]> buffer_;
  std::size_t capacity_ = 0;
};

// ---------------------------------------------------------------------------------------------
// The corpus and the equivalence check.

struct Payload {
  std::string name;  // the engine (file stem), or the file name in compare mode
  std::string json;
};

std::vector<Payload> load_dir(const std::filesystem::path& dir, bool json_only) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file()) continue;
    if (json_only && entry.path().extension() != ".json") continue;
    files.push_back(entry.path());
  }
  if (ec) {
    std::fprintf(stderr, "parse_bench: cannot read %s: %s\n", dir.c_str(), ec.message().c_str());
    std::exit(1);
  }
  std::sort(files.begin(), files.end());
  std::vector<Payload> out;
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    text.resize(trim_right(text).size());  // the file's trailing newline is not the payload's
    out.push_back({json_only ? path.stem().string() : path.filename().string(), std::move(text)});
  }
  return out;
}

std::string describe_usage(const std::optional<dyno::transport::Usage>& u) {
  if (!u) return "none";
  const auto part = [](const std::optional<std::int64_t>& v) {
    return v ? std::to_string(*v) : std::string("-");
  };
  return "{" + part(u->prompt_tokens) + "," + part(u->completion_tokens) + "," +
         part(u->cached_tokens) + "," + part(u->reasoning_tokens) + "}";
}

// The first field in which a and b differ ("" when none).
std::string first_difference(const ChunkInfo& a, const ChunkInfo& b) {
  if (a.content != b.content) return "content";
  if (a.reasoning != b.reasoning) return "reasoning";
  if (describe_usage(a.usage) != describe_usage(b.usage)) {
    return "usage " + describe_usage(a.usage) + " vs " + describe_usage(b.usage);
  }
  if (a.finish_reason != b.finish_reason) return "finish_reason";
  if (a.timings_json != b.timings_json) return "timings_json";
  if (a.error_message != b.error_message) return "error_message";
  if (a.is_done_marker != b.is_done_marker) return "is_done_marker";
  return "";
}

struct Outcome {
  bool hand_ok = false;
  bool simd_ok = false;
  bool copy_ok = false;
  std::string hand_error;
  std::string simd_error;
  std::string difference;  // between the decoders' ChunkInfo when all accepted the payload
};

Outcome run_both(const std::string& json) {
  Outcome o;
  ChunkInfo hand;
  ChunkInfo simd;
  ChunkInfo copy;
  std::string copy_error;
  OnDemandDecoder decoder;
  const simdjson::padded_string padded(json);
  o.hand_ok = dyno::transport::decode_chunk(json, hand, o.hand_error);
  o.simd_ok = decoder.ondemand_decode_padded(padded, simd, o.simd_error);
  o.copy_ok = decoder.ondemand_decode_copy(json, copy, copy_error);
  if (o.simd_ok != o.copy_ok) o.difference = "padded vs copied input";
  if (o.hand_ok && o.simd_ok) {
    o.difference = first_difference(hand, simd);
    if (o.difference.empty()) o.difference = first_difference(simd, copy);
  }
  return o;
}

// Both decoders must accept every corpus file and produce the same ChunkInfo.
void check_equivalence(const std::vector<Payload>& corpus) {
  if (corpus.empty()) {
    std::fprintf(stderr, "parse_bench: no *.json in %s\n", DYNO_CHUNK_CORPUS);
    std::abort();
  }
  for (const Payload& p : corpus) {
    const Outcome o = run_both(p.json);
    if (!o.hand_ok || !o.simd_ok || !o.copy_ok || !o.difference.empty()) {
      std::fprintf(stderr,
                   "parse_bench: decoders disagree on %s: decode_chunk %s (%s), simdjson %s (%s), "
                   "%s\n",
                   p.name.c_str(), o.hand_ok ? "ok" : "failed", o.hand_error.c_str(),
                   o.simd_ok ? "ok" : "failed", o.simd_error.c_str(), o.difference.c_str());
      std::abort();
    }
  }
}

int compare_dir(const char* dir) {
  int disagreements = 0;
  for (const Payload& p : load_dir(dir, false)) {
    const Outcome o = run_both(p.json);
    const bool agree = o.hand_ok == o.simd_ok && o.difference.empty();
    disagreements += agree ? 0 : 1;
    std::printf("%-4s %-40s decode_chunk: %s%s%s | simdjson: %s%s%s%s%s\n", agree ? "same" : "DIFF",
                p.name.c_str(), o.hand_ok ? "ok" : "rejects (", o.hand_error.c_str(),
                o.hand_ok ? "" : ")", o.simd_ok ? "ok" : "rejects (", o.simd_error.c_str(),
                o.simd_ok ? "" : ")", o.difference.empty() ? "" : " | differs in ",
                o.difference.c_str());
  }
  return disagreements == 0 ? 0 : 2;
}

// DYNO_PARSE_COUNT: every corpus file, n times per decoder, nothing else (for callgrind).
// A stream of one engine's chunks as a connection decodes them (ChunkDecoder: each chunk
// against the previous one): the corpus chunk with its content replaced, chunk by chunk, by
// one of 64 different tokens (escaped ones among them), as the tokens of an answer differ.
std::vector<std::string> token_stream(const std::string& json) {
  static const char* const kTokens[] = {
      " the", " quick", " brown", " fox", ",",           " jumps",     " over", "\\n",
      " a",   " lazy",  " dog",   ".",    " caf\\u00e9", " \\\"q\\\"", " 42",   " und"};
  const std::string key = "\"content\":\"";
  const std::size_t open = json.find(key);
  if (open == std::string::npos) return {json};
  const std::size_t start = open + key.size();
  const std::size_t close = json.find('"', start);
  std::vector<std::string> out;
  for (int i = 0; i < 64; ++i) {
    std::string token = kTokens[i % 16];
    if (i >= 16) token += std::to_string(i);
    out.push_back(json.substr(0, start) + token + json.substr(close));
  }
  return out;
}

int drive(const std::vector<Payload>& corpus, long n) {
  const char* only = std::getenv("DYNO_PARSE_ONLY");
  const char* which = std::getenv("DYNO_PARSE_DECODER");
  const auto wanted = [which](std::string_view decoder) {
    return which == nullptr || decoder == which;
  };
  for (const Payload& p : corpus) {
    if (only != nullptr && p.name != only) continue;
    ChunkInfo info;
    std::string error;
    std::size_t bytes = 0;
    if (wanted("hand")) {
      const std::string_view view(p.json);
      for (long i = 0; i < n; ++i) {
        if (!dyno::transport::decode_chunk(view, info, error)) return 1;
        bytes += info.content.size();
      }
    }
    if (wanted("stream")) {  // ChunkDecoder over the chunk's token stream (BM_StreamDecode)
      const std::vector<std::string> chunks = token_stream(p.json);
      dyno::transport::ChunkDecoder stream;
      for (long i = 0; i < n; ++i) {
        if (!stream.decode(chunks[static_cast<std::size_t>(i) % chunks.size()], info, error))
          return 1;
        bytes += info.content.size();
      }
    }
    OnDemandDecoder decoder;
    if (wanted("simdjson")) {
      const simdjson::padded_string padded(p.json);
      for (long i = 0; i < n; ++i) {
        if (!decoder.ondemand_decode_padded(padded, info, error)) return 1;
        bytes += info.content.size();
      }
    }
    if (wanted("copy")) {
      for (long i = 0; i < n; ++i) {
        if (!decoder.ondemand_decode_copy(p.json, info, error)) return 1;
        bytes += info.content.size();
      }
    }
    std::printf("%s: %ld calls per decoder, %zu content bytes\n", p.name.c_str(), n, bytes);
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Benchmarks.

void decode_loop(benchmark::State& state, const std::string& chunk) {
  dyno::transport::ChunkInfo info;
  std::string error;
  for (auto _ : state) {
    info = {};
    const bool ok = dyno::transport::decode_chunk(chunk, info, error);
    benchmark::DoNotOptimize(ok);
    benchmark::DoNotOptimize(info.content.data());
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_DecodeChunk(benchmark::State& state) { decode_loop(state, kChunk); }
BENCHMARK(BM_DecodeChunk);

void BM_DecodeChunkLlamaCpp(benchmark::State& state) { decode_loop(state, kLlamaCppChunk); }
BENCHMARK(BM_DecodeChunkLlamaCpp);

void BM_DecodeChunkSim(benchmark::State& state) { decode_loop(state, kSimChunk); }
BENCHMARK(BM_DecodeChunkSim);

void BM_SseParseAndDecode(benchmark::State& state) {
  // 64 events per feed, as a read of a busy stream would deliver them.
  std::string wire;
  for (int i = 0; i < 64; ++i) wire += "data: " + kChunk + "\n\n";
  dyno::transport::ChunkInfo info;
  std::string error;
  std::size_t events = 0;
  dyno::transport::SseParser parser([&](const dyno::transport::SseEvent& e) {
    info = {};
    dyno::transport::decode_chunk(e.data, info, error);
    ++events;
  });
  for (auto _ : state) parser.feed(wire);
  benchmark::DoNotOptimize(events);
  state.SetItemsProcessed(state.iterations() * 64);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(wire.size()));
}
BENCHMARK(BM_SseParseAndDecode);

// An observer that only counts, as cheap as an observer can be.
class CountingObserver final : public dyno::transport::StreamObserver {
 public:
  void on_sent(std::int64_t) override {}
  void on_first_byte(std::int64_t, int) override {}
  void on_token_event(std::int64_t, std::string_view content, std::string_view) override {
    bytes_ += content.size();
  }
  void on_usage(const dyno::transport::Usage&) override {}
  void on_done(std::int64_t, const dyno::transport::DoneInfo&) override {}
  void on_error(std::int64_t, dyno::transport::ErrorCategory, std::string_view,
                std::optional<int>) override {}
  std::size_t bytes_ = 0;
};

void BM_DecoderFeed(benchmark::State& state) {
  // BM_SseParseAndDecode's reads, through the StreamDecoder a connection hands its body bytes
  // to (one virtual call per read; each token event also reaches the observer).
  std::string wire;
  for (int i = 0; i < 64; ++i) wire += "data: " + kChunk + "\n\n";
  CountingObserver observer;
  dyno::transport::OpenAiDecoder decoder;
  dyno::transport::StreamDecoder* seam_ptr = &decoder;
  benchmark::DoNotOptimize(seam_ptr);  // a call through the interface, as the connection's
  dyno::transport::StreamDecoder& seam = *seam_ptr;
  seam.begin(observer, true);
  const dyno::transport::ResponseFacts head{200, "text/event-stream", 0};
  if (!seam.accept(head, true).empty()) state.SkipWithError("not accepted");
  std::int64_t t_ns = 0;
  for (auto _ : state) {
    if ((++t_ns & 4095) == 0) {  // a new request, within the bound of 2^20 token events
      seam.begin(observer, true);
      seam.accept(head, true);
    }
    if (!seam.feed(t_ns, wire)) state.SkipWithError("refused");
  }
  benchmark::DoNotOptimize(observer.bytes_);
  state.SetItemsProcessed(state.iterations() * 64);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(wire.size()));
}
BENCHMARK(BM_DecoderFeed);

// Per corpus file: one ChunkInfo reused across iterations, as OpenAiDecoder reuses its own.
void BM_HandDecode(benchmark::State& state, const std::string& json) {
  ChunkInfo info;
  std::string error;
  const std::string_view payload(json);
  for (auto _ : state) {
    const bool ok = dyno::transport::decode_chunk(payload, info, error);
    benchmark::DoNotOptimize(ok);
    benchmark::DoNotOptimize(info.content.data());
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(json.size()));
}

void BM_SimdjsonOnDemand(benchmark::State& state, const std::string& json) {
  ChunkInfo info;
  std::string error;
  OnDemandDecoder decoder;  // one ondemand::parser for every iteration
  const simdjson::padded_string padded(json);
  for (auto _ : state) {
    const bool ok = decoder.ondemand_decode_padded(padded, info, error);
    benchmark::DoNotOptimize(ok);
    benchmark::DoNotOptimize(info.content.data());
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(json.size()));
}

void BM_SimdjsonOnDemandCopy(benchmark::State& state, const std::string& json) {
  ChunkInfo info;
  std::string error;
  OnDemandDecoder decoder;
  const std::string_view payload(json);
  for (auto _ : state) {
    const bool ok = decoder.ondemand_decode_copy(payload, info, error);
    benchmark::DoNotOptimize(ok);
    benchmark::DoNotOptimize(info.content.data());
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(json.size()));
}

void BM_StreamDecode(benchmark::State& state, const std::string& json) {
  const std::vector<std::string> chunks = token_stream(json);
  dyno::transport::ChunkDecoder decoder;
  ChunkInfo info;
  std::string error;
  std::size_t i = 0;
  for (auto _ : state) {
    const bool ok = decoder.decode(chunks[i], info, error);
    if (++i == chunks.size()) i = 0;
    benchmark::DoNotOptimize(ok);
    benchmark::DoNotOptimize(info.content.data());
  }
  state.SetItemsProcessed(state.iterations());
}

}  // namespace

int main(int argc, char** argv) {
  if (const char* dir = std::getenv("DYNO_PARSE_COMPARE")) return compare_dir(dir);

  static const std::vector<Payload> corpus = load_dir(DYNO_CHUNK_CORPUS, true);
  check_equivalence(corpus);

  if (const char* n = std::getenv("DYNO_PARSE_COUNT")) return drive(corpus, std::atol(n));

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // On-Demand's walk is compiled into this file for the kernel the compiler flags allow
  // (fallback without -march); stage 1 runs in libsimdjson, the kernel picked at run time.
  benchmark::AddCustomContext("simdjson_ondemand_kernel",
                              DYNO_STRINGIFY(SIMDJSON_BUILTIN_IMPLEMENTATION));
  benchmark::AddCustomContext("simdjson_stage1_kernel",
                              simdjson::get_active_implementation()->name());
  for (const Payload& p : corpus) {
    benchmark::RegisterBenchmark(("BM_HandDecode/" + p.name).c_str(), BM_HandDecode, p.json);
    benchmark::RegisterBenchmark(("BM_StreamDecode/" + p.name).c_str(), BM_StreamDecode, p.json);
    benchmark::RegisterBenchmark(("BM_SimdjsonOnDemand/" + p.name).c_str(), BM_SimdjsonOnDemand,
                                 p.json);
    benchmark::RegisterBenchmark(("BM_SimdjsonOnDemandCopy/" + p.name).c_str(),
                                 BM_SimdjsonOnDemandCopy, p.json);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
