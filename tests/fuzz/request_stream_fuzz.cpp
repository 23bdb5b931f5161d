// The request-stream reader (workload/request_stream.h parse_stream_text): any bytes give a
// stream or a StreamError naming "<source>:<line>" or the source; every request of a stream
// reads back equal from its own JSON line, and the stream's hash is stable.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "workload/request_stream.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // Image parts given by a relative path resolve below a directory that does not exist.
  const char* const base_dir = "/nonexistent/dyno-fuzz";
  dyno::workload::RequestStream stream;
  try {
    stream = dyno::workload::parse_stream_text(text, "fuzz.jsonl", base_dir);
  } catch (const dyno::workload::StreamError& error) {
    FUZZ_CHECK(std::string_view(error.what()).rfind("fuzz.jsonl", 0) == 0);
    return 0;
  }
  FUZZ_CHECK(!stream.requests.empty());
  for (const auto& request : stream.requests) {
    const std::string line = dyno::workload::to_json_line(request);
    const auto back = dyno::workload::parse_request_line(line, "round trip", base_dir);
    FUZZ_CHECK(back == request);
    FUZZ_CHECK(!dyno::workload::canonical_line(request).empty());
  }
  FUZZ_CHECK(dyno::workload::stream_sha256(stream.requests) == stream.sha256);
  return 0;
}
