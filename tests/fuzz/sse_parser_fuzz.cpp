// SSE parser (transport/sse_parser.h): any bytes, fed whole and fed in pieces whose sizes come
// from the input, give the same events, the same finish() answer and the same overflow (a line
// terminator, a BOM or a field name cut anywhere changes nothing). The input's second byte
// picks a small event bound (or the default), so the bound is reached.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "transport/sse_parser.h"

namespace {

struct Seen {
  std::string type;
  std::string data;
  std::string id;
  std::string error;
  bool unframed = false;
  bool operator==(const Seen&) const = default;
};

struct Result {
  std::vector<Seen> events;
  bool pending = false;
  bool overflowed = false;
  std::uint64_t count = 0;
};

// Feeds `bytes` in pieces of 1..16 bytes chosen by `sizes` (cycled); whole when `sizes` is empty.
Result parse(std::string_view bytes, std::string_view sizes, std::size_t bound) {
  Result r;
  dyno::transport::SseParser parser(
      [&r](const dyno::transport::SseEvent& e) {
        r.events.push_back({std::string(e.type), std::string(e.data), std::string(e.id),
                            std::string(e.error), e.unframed});
      },
      bound);
  if (sizes.empty()) {
    parser.feed(bytes);
  } else {
    std::size_t i = 0;
    while (!bytes.empty()) {
      const std::size_t n =
          1 + static_cast<std::size_t>(static_cast<unsigned char>(sizes[i++ % sizes.size()]) % 16);
      parser.feed(bytes.substr(0, n));
      bytes.remove_prefix(std::min(n, bytes.size()));
    }
  }
  r.count = parser.events_dispatched();
  r.overflowed = parser.overflowed();
  r.pending = parser.finish();
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  // The first byte (when there is one) sizes the piece pattern taken from the input's start.
  const std::size_t pattern = input.empty() ? 0 : static_cast<unsigned char>(input[0]) % 8;
  const std::string_view sizes = input.substr(0, std::min(pattern, input.size()));
  const std::size_t bound =
      input.size() < 2 || input[1] % 2 == 0
          ? dyno::transport::SseParser::kDefaultMaxEventBytes
          : static_cast<std::size_t>(static_cast<unsigned char>(input[1]) / 2);
  const Result whole = parse(input, {}, bound);
  FUZZ_CHECK(whole.count == whole.events.size());
  for (const Seen& e : whole.events) {
    FUZZ_CHECK(e.data.size() <= bound);
    FUZZ_CHECK(e.error.size() <= bound);
    FUZZ_CHECK(!e.unframed || (!e.data.empty() && e.data.front() == '{' && e.error.empty()));
  }
  const Result pieces = parse(input, sizes.empty() ? std::string_view("\x00", 1) : sizes, bound);
  FUZZ_CHECK(pieces.events == whole.events);
  FUZZ_CHECK(pieces.pending == whole.pending);
  FUZZ_CHECK(pieces.overflowed == whole.overflowed);
  return 0;
}
