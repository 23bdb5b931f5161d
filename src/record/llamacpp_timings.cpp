#include "record/llamacpp_timings.h"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cmath>

namespace dyno::record {

namespace json = boost::json;

namespace {

std::optional<double> number(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  const double d = v->to_number<double>();
  if (!std::isfinite(d) || d < 0.0) return std::nullopt;
  return d;
}

std::optional<std::int64_t> count(const json::object& o, std::string_view key) {
  const std::optional<double> d = number(o, key);
  if (!d || *d != std::floor(*d) || *d > 9.0e15) return std::nullopt;
  return static_cast<std::int64_t>(*d);
}

}  // namespace

std::optional<LlamaCppTimings> parse_llamacpp_timings(std::string_view json_text) {
  boost::system::error_code ec;
  const json::value v = json::parse(json_text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const json::object& o = v.get_object();
  LlamaCppTimings t;
  t.cache_n = count(o, "cache_n");
  t.prompt_n = count(o, "prompt_n");
  t.prompt_ms = number(o, "prompt_ms");
  t.predicted_n = count(o, "predicted_n");
  t.predicted_ms = number(o, "predicted_ms");
  t.draft_n = count(o, "draft_n");
  t.draft_n_accepted = count(o, "draft_n_accepted");
  return t;
}

}  // namespace dyno::record
