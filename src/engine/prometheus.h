// The Prometheus text exposition format (version 0.0.4), as served by an engine's /metrics
// (vLLM `vllm:`, SGLang `sglang:`, llama.cpp `llamacpp:`), and counter deltas between two
// snapshots of it. Pure: no I/O, no clock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "error/error.h"

namespace dyno::engine {

/// One sample line: `name{labels} value [timestamp]`.
struct Sample {
  std::string name;                           ///< the sample's own name (`x_bucket`, `x_total`)
  std::map<std::string, std::string> labels;  ///< unescaped label values
  double value = 0.0;                         ///< NaN and ±Inf are kept as such
  std::optional<std::int64_t> timestamp_ms;   ///< milliseconds since the Unix epoch, if given
};

enum class MetricType { kCounter, kGauge, kHistogram, kSummary, kUntyped };

/// "counter", "gauge", "histogram", "summary", "untyped".
std::string_view metric_type_name(MetricType type);

/// A metric family: the name of its `# TYPE` / `# HELP` lines and its samples in text order.
/// A histogram `x` holds `x_bucket{le=…}`, `x_sum` and `x_count`; a summary `x` holds
/// `x{quantile=…}`, `x_sum` and `x_count`; a counter `x` (OpenMetrics style) may hold `x_total`.
/// Samples without a TYPE line form an untyped family of their own name.
struct Family {
  std::string name;
  MetricType type = MetricType::kUntyped;
  std::string help;  ///< unescaped; "" when there is no HELP line
  std::vector<Sample> samples;
};

/// Families in order of first appearance (a TYPE, HELP or sample line).
struct Exposition {
  std::vector<Family> families;
};

/// A malformed exposition. what() reads "prometheus text line N: …".
class PrometheusError : public Error {
 public:
  PrometheusError(std::size_t line, const std::string& message);
  /// 1-based line number of the offending line.
  [[nodiscard]] std::size_t line() const noexcept { return line_; }

 private:
  std::size_t line_;
};

/// Parses a whole exposition. Lines end in LF or CRLF; blank lines and `#` lines other than
/// `# HELP name text` / `# TYPE name type` are ignored. HELP text unescapes `\\` and `\n`;
/// label values unescape `\\`, `\"` and `\n`; a trailing comma in a label set is allowed.
/// Values: decimal or exponent notation, `NaN`, `+Inf`, `-Inf`. Metric names may contain `:`.
/// Throws PrometheusError naming the line on: a bad metric or label name, an unterminated label
/// value, an unknown escape, a duplicate label, a missing or bad value or timestamp, trailing
/// text, an unknown TYPE, a second TYPE or HELP line for a family, a TYPE line after the
/// family's samples, a histogram `_bucket` without `le` or a summary quantile sample without
/// `quantile`.
Exposition parse_prometheus(std::string_view text);

/// The first sample named `name` (the sample name, e.g. `x_bucket`, not the family name) whose
/// labels include every given label with the same value; nullptr if none.
const Sample* find(const Exposition& exposition, std::string_view name,
                   const std::map<std::string, std::string>& labels = {});

/// find()'s sample value, if there is one.
std::optional<double> value_of(const Exposition& exposition, std::string_view name,
                               const std::map<std::string, std::string>& labels = {});

/// The change of one cumulative sample between two snapshots.
struct Delta {
  std::string name;
  std::map<std::string, std::string> labels;
  double before = 0.0;
  double after = 0.0;
  double delta = 0.0;  ///< after - before; after itself when reset
  bool reset = false;  ///< after < before: the counter restarted (as Prometheus' rate() assumes)
};

/// Deltas of every cumulative sample of `after` (every sample of a counter family; `_bucket`,
/// `_sum` and `_count` of a histogram; `_sum` and `_count` of a summary) that `before` also has
/// with the same name and exactly the same labels, in `after`'s order. A NaN on either side
/// gives a NaN delta and no reset.
std::vector<Delta> counter_deltas(const Exposition& before, const Exposition& after);

}  // namespace dyno::engine
