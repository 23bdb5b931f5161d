// The streamed-chunk decoder (transport/openai_stream.h decode_chunk): one SSE `data:` payload,
// held to a Boost.JSON DOM of the same text (fuzz/openai_oracle.h).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "fuzz/openai_oracle.h"
#include "transport/openai_stream.h"

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
  return 0;
}
