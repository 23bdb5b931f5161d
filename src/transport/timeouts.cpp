#include "transport/timeouts.h"

#include <cstdint>

namespace dyno::transport {

DerivedTimeouts derive_timeouts(const workload::Request& request) {
  std::uint64_t prompt_bytes = request.prompt ? request.prompt->size() : 0;
  std::uint64_t images = 0;
  for (const auto& message : request.messages) {
    prompt_bytes += message.content.size();
    for (const auto& part : message.parts) {
      if (part.kind == workload::ContentPart::Kind::kImage) {
        ++images;
      } else {
        prompt_bytes += part.text.size();
      }
    }
  }
  using std::chrono::milliseconds;
  DerivedTimeouts out{milliseconds(60'000 + static_cast<std::int64_t>(prompt_bytes / 4) +
                                   static_cast<std::int64_t>(images) * 10'000),
                      std::nullopt};
  if (const auto& max_tokens = request.sampling.max_tokens; max_tokens && *max_tokens > 0) {
    out.total = out.first_token + milliseconds(60'000 + *max_tokens * 250);
  }
  return out;
}

}  // namespace dyno::transport
