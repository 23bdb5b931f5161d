#include "engine/server_metrics.h"

#include <boost/json.hpp>
#include <cmath>
#include <string_view>

#include "engine/prometheus.h"
#include "record/record_json.h"
#include "record/server_section.h"

namespace dyno::engine {

namespace json = boost::json;

namespace {

/// Σ of a counter's deltas over every label set; nullopt when the engine has no such counter.
std::optional<double> delta_of(const std::vector<Delta>& deltas, std::string_view name) {
  std::optional<double> sum;
  for (const auto& d : deltas) {
    if (d.name == name) sum = sum.value_or(0) + d.delta;
  }
  return sum;
}

std::optional<double> first_of(const std::vector<Delta>& deltas,
                               std::initializer_list<std::string_view> names) {
  for (auto n : names) {
    if (auto v = delta_of(deltas, n)) return v;
  }
  return std::nullopt;
}

std::optional<double> ratio(std::optional<double> num, std::optional<double> den) {
  if (!num || !den || *den <= 0) return std::nullopt;
  return *num / *den;
}

std::string series_name(const Delta& d) {
  std::string s = d.name;
  if (!d.labels.empty()) {
    s += '{';
    bool first = true;
    for (const auto& [k, v] : d.labels) {
      if (!first) s += ',';
      first = false;
      s += k + "=\"" + v + "\"";
    }
    s += '}';
  }
  return s;
}

}  // namespace

json::object server_section(const std::string& before_text, const std::string& after_text) {
  Exposition before, after;
  try {
    before = parse_prometheus(before_text);
    after = parse_prometheus(after_text);
  } catch (const PrometheusError& e) {
    return json::object{{"source", "/metrics"}, {"error", e.what()}};
  }
  const std::vector<Delta> deltas = counter_deltas(before, after);
  json::object counters;
  bool reset = false;
  for (const auto& d : deltas) {
    counters[series_name(d)] = record::number_or_null(d.delta);
    reset = reset || d.reset;
  }
  std::string dialect;
  for (const auto& f : after.families) {
    for (std::string_view prefix : {"vllm:", "sglang:", "llamacpp:"}) {
      if (dialect.empty() && f.name.rfind(prefix, 0) == 0)
        dialect = prefix.substr(0, prefix.size() - 1);
    }
  }
  const auto prompt = first_of(deltas, {"vllm:prompt_tokens_total", "sglang:prompt_tokens_total",
                                        "llamacpp:prompt_tokens_total"});
  const auto generation =
      first_of(deltas, {"vllm:generation_tokens_total", "sglang:generation_tokens_total",
                        "llamacpp:tokens_predicted_total"});
  const auto drafts = delta_of(deltas, "vllm:spec_decode_num_draft_tokens_total");
  const auto accepted = delta_of(deltas, "vllm:spec_decode_num_accepted_tokens_total");
  const auto queries = delta_of(deltas, "vllm:prefix_cache_queries_total");
  const auto hits = delta_of(deltas, "vllm:prefix_cache_hits_total");
  return json::object{
      {"source", "/metrics"},
      {"dialect", dialect.empty() ? json::value(nullptr) : json::value(dialect)},
      {"prompt_tokens", record::number_or_null(prompt)},
      {"generation_tokens", record::number_or_null(generation)},
      {"preemptions", record::number_or_null(delta_of(deltas, "vllm:num_preemptions_total"))},
      {"prefix_cache_hit_rate", record::number_or_null(ratio(hits, queries))},
      {"prefix_cache_queries", record::number_or_null(queries)},
      {"prefix_cache_hits", record::number_or_null(hits)},
      {"spec_decode_acceptance_rate", record::number_or_null(ratio(accepted, drafts))},
      {"counter_reset", reset},
      {"counters", std::move(counters)}};
}

std::optional<json::object> prefix_cache_from_counters(const json::object& server) {
  const record::ServerSection s = record::server_section_from_json(server);
  if (!s.prefix_cache_queries || !s.prefix_cache_hits) return std::nullopt;
  const double queries = *s.prefix_cache_queries, hits = *s.prefix_cache_hits;
  if (!(queries > 0) || !(hits >= 0) || hits > queries || queries > 9e18) return std::nullopt;
  return json::object{{"source", "metrics"},
                      {"requests", nullptr},
                      {"prompt_tokens", static_cast<std::int64_t>(std::llround(queries))},
                      {"cached_tokens", static_cast<std::int64_t>(std::llround(hits))},
                      {"hit_rate", hits / queries},
                      {"ttft_vs_uncached", nullptr}};
}

}  // namespace dyno::engine
