// The request stream as the user asked for it (flags --stream, --cycle, --input-tokens,
// --output-tokens, --max-tokens, --temperature, --extra-body, --extra-body-override).
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
  /// --extra-body: a JSON object of request fields merged into every request body (a
  /// request's own extra_body wins); workload/extra_body.h.
  std::optional<std::string> extra_body;
  /// --extra-body-override: extra_body may replace fields dyno itself sets (model, messages,
  /// prompt, stream, stream_options, max_tokens…); without it such a field is a usage error.
  bool extra_body_override = false;
};

}  // namespace dyno::workload
