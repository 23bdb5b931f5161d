// HTTP response reader (transport/http_response.h): any bytes, fed whole and fed in pieces
// whose sizes come from the input, give the same responses (heads, bodies, where each ends),
// the same error and the same end-of-stream answer; responses that follow one another on a
// connection (the reader reset after each, as a kept connection does) are read the same way.
// A body never holds more than the bytes given, a Content-Length body is exactly its length,
// and what a head holds is bounded.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "transport/http_response.h"

namespace {

using dyno::transport::HttpResponseReader;
using dyno::transport::ResponseHead;

struct Response {
  int status = 0;
  bool keep_alive = false;
  bool chunked = false;
  bool has_length = false;
  std::uint64_t length = 0;
  std::string content_type;
  std::string location;
  std::string body;
  bool complete = false;
  bool operator==(const Response&) const = default;
};

struct Result {
  std::vector<Response> responses;
  HttpResponseReader::ErrorKind error = HttpResponseReader::ErrorKind::kNone;
  std::string error_message;
  bool eof_completes = false;
  bool operator==(const Result&) const = default;
};

class Collector : public HttpResponseReader::Handler {
 public:
  explicit Collector(Result& r) : r_(r) {}
  bool on_head(const ResponseHead& head) override {
    FUZZ_CHECK(head.status >= 200 && head.status <= 599);
    FUZZ_CHECK(head.content_type.size() <= HttpResponseReader::kMaxHeaderBytes);
    Response& resp = r_.responses.emplace_back();
    resp.status = head.status;
    resp.keep_alive = head.keep_alive;
    resp.chunked = head.chunked;
    resp.has_length = head.content_length.has_value();
    resp.length = head.content_length.value_or(0);
    resp.content_type = head.content_type;
    resp.location = head.location;
    return true;
  }
  bool on_body(std::string_view bytes) override {
    FUZZ_CHECK(!r_.responses.empty());
    FUZZ_CHECK(!bytes.empty());
    r_.responses.back().body.append(bytes);
    return true;
  }

 private:
  Result& r_;
};

// Feeds `input` in pieces of 1..64 bytes chosen by `sizes` (cycled); whole when `sizes` is empty.
Result read_all(std::string_view input, std::string_view sizes) {
  Result r;
  Collector collector(r);
  HttpResponseReader reader;
  std::size_t piece = 0;
  const std::size_t total = input.size();
  std::size_t used_total = 0;
  while (!input.empty()) {
    const std::size_t n =
        sizes.empty()
            ? input.size()
            : std::min(input.size(),
                       1 + static_cast<std::size_t>(
                               static_cast<unsigned char>(sizes[piece++ % sizes.size()]) % 64));
    std::size_t consumed = 0;
    const HttpResponseReader::State state = reader.feed(input.data(), n, collector, &consumed);
    FUZZ_CHECK(consumed <= n);
    used_total += consumed;
    FUZZ_CHECK(used_total <= total);
    if (state == HttpResponseReader::State::kError) {
      FUZZ_CHECK(!reader.error().empty());
      r.error = reader.error_kind();
      r.error_message = reader.error();
      return r;
    }
    FUZZ_CHECK(state != HttpResponseReader::State::kStopped);  // the collector never stops
    if (state == HttpResponseReader::State::kNeedMore) FUZZ_CHECK(consumed == n);
    if (state == HttpResponseReader::State::kComplete) {
      FUZZ_CHECK(!r.responses.empty());
      Response& done = r.responses.back();
      done.complete = true;
      if (done.has_length && !done.chunked) FUZZ_CHECK(done.body.size() == done.length);
      reader.reset();
      if (r.responses.size() >= 8) return r;  // enough pipelined responses
    }
    input.remove_prefix(consumed);
  }
  r.eof_completes = reader.eof_completes();
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  // The first byte (when there is one) sizes the piece pattern taken from the input's start.
  const std::size_t pattern = input.empty() ? 0 : static_cast<unsigned char>(input[0]) % 8;
  const std::string_view sizes = input.substr(0, std::min(pattern, input.size()));
  const Result whole = read_all(input, {});
  std::size_t body_bytes = 0;
  for (const Response& r : whole.responses) body_bytes += r.body.size();
  FUZZ_CHECK(body_bytes <= input.size());
  const Result pieces = read_all(input, sizes.empty() ? std::string_view("\x00", 1) : sizes);
  FUZZ_CHECK(pieces == whole);
  return 0;
}
