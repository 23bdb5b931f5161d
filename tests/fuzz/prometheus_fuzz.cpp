// The Prometheus text parser (engine/prometheus.h): any text parses or throws PrometheusError
// naming a line of the text; a parsed exposition finds each of its samples and has no change
// against itself (when no series appears twice).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "engine/prometheus.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  dyno::engine::Exposition e;
  try {
    e = dyno::engine::parse_prometheus(text);
  } catch (const dyno::engine::PrometheusError& error) {
    std::size_t lines = 1;
    for (const char c : text) lines += c == '\n' ? 1 : 0;
    FUZZ_CHECK(error.line() >= 1 && error.line() <= lines);
    return 0;
  }
  std::set<std::pair<std::string, std::map<std::string, std::string>>> series;
  bool repeated = false;
  for (const auto& family : e.families) {
    FUZZ_CHECK(!family.name.empty());
    FUZZ_CHECK(!dyno::engine::metric_type_name(family.type).empty());
    for (const auto& sample : family.samples) {
      const dyno::engine::Sample* found = dyno::engine::find(e, sample.name, sample.labels);
      FUZZ_CHECK(found != nullptr);
      repeated = !series.emplace(sample.name, sample.labels).second || repeated;
    }
  }
  if (repeated) return 0;
  for (const auto& d : dyno::engine::counter_deltas(e, e)) {
    FUZZ_CHECK(!d.reset);
    FUZZ_CHECK(std::isnan(d.delta) || std::isinf(d.after) || d.delta == 0.0);
  }
  return 0;
}
