// The whole-response decoder (transport/openai_stream.h decode_full_response): a non-streamed
// body, held to a Boost.JSON DOM of the same text (fuzz/openai_oracle.h). The decoder reuses a
// ChunkInfo across responses in the transport; so does this target (nothing may leak over).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "fuzz/openai_oracle.h"
#include "transport/openai_stream.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  static dyno::transport::ChunkInfo info;  // reused, as the transport's connection does
  std::string error;
  const bool ok = dyno::transport::decode_full_response(body, info, error);
  FUZZ_CHECK(ok || !error.empty());
  FUZZ_CHECK(!info.is_done_marker);
  dyno::fuzz::check_against_dom(body, ok, info);
  return 0;
}
