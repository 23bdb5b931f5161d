// The trace readers (workload/trace_import.h) and the prompt builder (trace_prompts.h): the
// first byte picks Mooncake, Azure or BurstGPT, the rest is the file. Any bytes give records
// or a StreamError naming "<source>:<line>" or the source; records are in time order with
// lengths >= 1, and when they are small the built prompts count exactly their input length by
// the simulated engine's tokenizer, with at_ms >= 0 in file order.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "sim/tokenizer.h"
#include "workload/request_stream.h"
#include "workload/trace_import.h"
#include "workload/trace_prompts.h"

namespace {

std::int64_t sim_count(const dyno::workload::Request& r) {
  if (!r.is_chat()) return static_cast<std::int64_t>(dyno::sim::count_tokens(*r.prompt));
  std::vector<dyno::sim::ChatMessage> messages;
  for (const auto& m : r.messages) messages.push_back({m.role, m.content});
  return static_cast<std::int64_t>(
      dyno::sim::count_tokens(dyno::sim::apply_chat_template(messages)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const char* const kKinds[] = {"mooncake", "azure", "burstgpt"};
  const char* kind = kKinds[data[0] % 3];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  dyno::workload::TraceFile trace;
  try {
    trace = dyno::workload::parse_trace_text(kind, text, "fuzz.trace", 64);
  } catch (const dyno::workload::StreamError& error) {
    FUZZ_CHECK(std::string_view(error.what()).rfind("fuzz.trace", 0) == 0);
    return 0;
  }
  FUZZ_CHECK(!trace.records.empty() && trace.records.size() <= 64);
  std::int64_t total = 0;
  for (std::size_t i = 0; i < trace.records.size(); ++i) {
    const auto& r = trace.records[i];
    FUZZ_CHECK(r.input_tokens >= 1 && r.output_tokens >= 1 && r.line >= 1);
    FUZZ_CHECK(i == 0 || r.time_ns >= trace.records[i - 1].time_ns);
    total += r.input_tokens;
  }
  if (total > 20'000) return 0;  // the builder writes every token's text
  dyno::workload::TracePromptOptions o;
  o.api = data[0] % 2 == 0 ? dyno::workload::Api::kCompletions : dyno::workload::Api::kChat;
  o.block_tokens = 16 + data[0] % 64;
  dyno::workload::RequestStream stream;
  try {
    stream = dyno::workload::build_trace_stream(trace, o, sim_count);
  } catch (const dyno::workload::StreamError& error) {
    FUZZ_CHECK(std::string_view(error.what()).rfind("fuzz.trace", 0) == 0);
    return 0;
  }
  FUZZ_CHECK(stream.requests.size() == trace.records.size());
  for (std::size_t i = 0; i < stream.requests.size(); ++i) {
    const auto& r = stream.requests[i];
    FUZZ_CHECK(sim_count(r) == trace.records[i].input_tokens);
    FUZZ_CHECK(r.at_ms && *r.at_ms >= 0 && (i == 0 || *r.at_ms >= *stream.requests[i - 1].at_ms));
    FUZZ_CHECK(r.sampling.max_tokens == trace.records[i].output_tokens);
  }
  FUZZ_CHECK(stream.sha256 == dyno::workload::stream_sha256(stream.requests));
  return 0;
}
