// The request stream as the user asked for it (flags --stream, --cycle, --input-tokens,
// --output-tokens, --max-tokens, --temperature).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dyno::workload {

struct StreamOptions {
  std::optional<std::string> file;  ///< --stream
  bool cycle = false;  ///< --cycle: -n may exceed the --stream's length (sent again from its start)
  std::int64_t input_tokens = 256;         ///< the synthetic stream's prompts
  std::int64_t output_tokens = 128;        ///< the synthetic stream's answers
  std::optional<std::int64_t> max_tokens;  ///< fills requests that set none
  double temperature = 0.0;                ///< fills requests that set none
};

}  // namespace dyno::workload
