// What every decoder's messages share: the transport's facts of a response, in words.
#include "transport/stream_decoder.h"

namespace dyno::transport {

std::string describe_transport(const ResponseFacts& facts) {
  std::string out = "HTTP " + std::to_string(facts.status);
  out += facts.content_type.empty() ? std::string(", no Content-Type")
                                    : ", Content-Type " + std::string(facts.content_type);
  out += ", " + std::to_string(facts.body_bytes) + " body bytes";
  return out;
}

}  // namespace dyno::transport
