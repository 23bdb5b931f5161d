// The streamed-chunk decoder (transport/openai_stream.h decode_chunk): one SSE `data:` payload,
// held to a Boost.JSON DOM of the same text (fuzz/openai_oracle.h). And the stream's decoder
// (ChunkDecoder, which decodes a chunk against the previous one): the input's lines as the
// payloads of one stream, each decoded exactly as decode_chunk decodes it alone.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "fuzz/openai_oracle.h"
#include "transport/openai_stream.h"

namespace {

bool same(const dyno::transport::ChunkInfo& a, const dyno::transport::ChunkInfo& b) {
  const auto usage = [](const dyno::transport::ChunkInfo& i) {
    return i.usage ? std::to_string(i.usage->prompt_tokens.value_or(-1)) + "," +
                         std::to_string(i.usage->completion_tokens.value_or(-1)) + "," +
                         std::to_string(i.usage->cached_tokens.value_or(-1)) + "," +
                         std::to_string(i.usage->reasoning_tokens.value_or(-1))
                   : std::string("none");
  };
  return a.content == b.content && a.reasoning == b.reasoning &&
         a.finish_reason == b.finish_reason && a.timings_json == b.timings_json &&
         a.error_message == b.error_message && a.is_done_marker == b.is_done_marker &&
         usage(a) == usage(b);
}

void check_stream(std::string_view input) {
  dyno::transport::ChunkDecoder decoder;
  dyno::transport::ChunkInfo streamed;
  while (!input.empty()) {
    const std::size_t eol = input.find('\n');
    const std::string_view payload = input.substr(0, eol);
    input = eol == std::string_view::npos ? std::string_view() : input.substr(eol + 1);
    dyno::transport::ChunkInfo alone;
    std::string error_alone;
    std::string error_streamed;
    const bool ok_alone = dyno::transport::decode_chunk(payload, alone, error_alone);
    const bool ok_streamed = decoder.decode(payload, streamed, error_streamed);
    FUZZ_CHECK(ok_alone == ok_streamed);
    FUZZ_CHECK(ok_alone ? same(alone, streamed) : error_alone == error_streamed);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view payload(reinterpret_cast<const char*>(data), size);
  dyno::transport::ChunkInfo info;
  std::string error;
  const bool ok = dyno::transport::decode_chunk(payload, info, error);
  FUZZ_CHECK(ok || !error.empty());
  if (info.is_done_marker) {
    FUZZ_CHECK(ok && payload.find("[DONE]") != std::string_view::npos);
    return 0;
  }
  dyno::fuzz::check_against_dom(payload, ok, info);
  check_stream(payload);
  return 0;
}
