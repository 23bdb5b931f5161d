// Micro-benchmark of the client's per-token hot path: SSE framing + chunk decoding, bare and
// through the connection's decoder seam (transport/stream_decoder.h).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <optional>
#include <string>

#include "transport/openai_decoder.h"
#include "transport/openai_stream.h"
#include "transport/sse_parser.h"

namespace {

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

}  // namespace

BENCHMARK_MAIN();
