// llama.cpp's `timings` object (engine/llamacpp_timings.h): any text gives nullopt or fields
// that hold what the header promises (non-negative counts, finite non-negative times).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "record/llamacpp_timings.h"

namespace {

void check_count(const std::optional<std::int64_t>& n) { FUZZ_CHECK(!n || *n >= 0); }

void check_time(const std::optional<double>& ms) {
  FUZZ_CHECK(!ms || (std::isfinite(*ms) && *ms >= 0.0));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto t = dyno::record::parse_llamacpp_timings(text);
  if (!t) return 0;
  check_count(t->cache_n);
  check_count(t->prompt_n);
  check_count(t->predicted_n);
  check_count(t->draft_n);
  check_count(t->draft_n_accepted);
  check_time(t->prompt_ms);
  check_time(t->predicted_ms);
  return 0;
}
