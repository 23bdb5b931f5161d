// Micro-benchmark of the client's per-token hot path: SSE framing + chunk decoding.
#include <benchmark/benchmark.h>

#include <string>

#include "transport/openai_stream.h"
#include "transport/sse_parser.h"

namespace {

// A vLLM-style chat chunk (about 250 bytes on the wire).
const std::string kChunk =
    R"({"id":"chatcmpl-8d1f0c3a2b4e4f6a9c7d5e3b1a0f2c4d","object":"chat.completion.chunk",)"
    R"("created":1795987651,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,)"
    R"("delta":{"content":" world"},"logprobs":null,"finish_reason":null}]})";

void BM_DecodeChunk(benchmark::State& state) {
  dyno::transport::ChunkInfo info;
  std::string error;
  for (auto _ : state) {
    info = {};
    const bool ok = dyno::transport::decode_chunk(kChunk, info, error);
    benchmark::DoNotOptimize(ok);
    benchmark::DoNotOptimize(info.content.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecodeChunk);

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

}  // namespace

BENCHMARK_MAIN();
