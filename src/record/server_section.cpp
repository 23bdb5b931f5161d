#include "record/server_section.h"

#include <cmath>

#include "metrics/registry.h"
#include "record/object_reader.h"

namespace dyno::record {

namespace {

/// A distribution of `server.timings`, when written.
std::optional<metrics::Distribution> opt_distribution(const ObjectReader& r, const char* key,
                                                      std::vector<std::string>& unknown) {
  if (!r.has(key)) return std::nullopt;
  return r.object(key).distribution(&unknown);
}

ServerTimingsSection timings_from(const ObjectReader& r) {
  ServerTimingsSection t;
  t.source = r.string("source");
  t.test = r.opt_string("test");
  t.repetitions = r.opt_uint("repetitions");
  t.reason = r.opt_string("reason");
  t.requests_with_timings = r.opt_uint("requests_with_timings");
  t.requests_without_timings = r.opt_uint("requests_without_timings");
  t.prompt_tokens_computed = r.opt_uint("prompt_tokens_computed");
  t.prompt_tokens_cached = r.opt_uint("prompt_tokens_cached");
  t.prompt_cached_fraction = r.opt_number("prompt_cached_fraction");
  t.predicted_tokens = r.opt_uint("predicted_tokens");
  t.prompt_ms = opt_distribution(r, "prompt_ms", t.unknown_counts);
  t.ttft_minus_prompt_ms = opt_distribution(r, "ttft_minus_prompt_ms", t.unknown_counts);
  t.prefill_rate = opt_distribution(r, "prefill_rate", t.unknown_counts);
  t.prefill_tokens_per_s = r.opt_number("prefill_tokens_per_s");
  t.decode_rate_per_user = opt_distribution(r, "decode_rate_per_user", t.unknown_counts);
  t.draft_tokens = r.opt_uint("draft_tokens");
  t.draft_tokens_accepted = r.opt_uint("draft_tokens_accepted");
  t.spec_decode_acceptance_rate = r.opt_number("spec_decode_acceptance_rate");
  return t;
}

ServerGauges gauges_from(const ObjectReader& r) {
  ServerGauges g;
  g.period_ms = r.number("period_ms");
  g.scrapes = r.uint("scrapes");
  g.failed_scrapes = r.uint("failed_scrapes");
  const ObjectReader series = r.object("series");
  for (const auto& kv : series.raw()) {
    const std::string key(kv.key());
    const ObjectReader s = series.object(key.c_str());
    g.series[key] = ServerGaugeSeries{s.distribution(), s.opt_number("last")};
  }
  return g;
}

std::optional<double> finite(std::optional<double> v) {
  if (v && !std::isfinite(*v)) v.reset();
  return v;
}

std::optional<double> number(const std::optional<std::uint64_t>& v) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
}

/// A statistic of one of the timings' distributions; nullopt for an unknown count.
std::optional<double> statistic(const ServerTimingsSection& t,
                                const std::optional<metrics::Distribution>& d, const char* key,
                                std::string_view stat) {
  if (!d || stat.empty()) return std::nullopt;
  if (stat == "count") {
    const std::string path = std::string("server.timings.") + key + ".count";
    for (const std::string& u : t.unknown_counts) {
      if (u == path) return std::nullopt;
    }
  }
  return metrics::statistic(*d, stat);
}

std::optional<double> timings_figure(const ServerTimingsSection& t, std::string_view key,
                                     std::string_view stat) {
  if (key == "prompt_ms") return statistic(t, t.prompt_ms, "prompt_ms", stat);
  if (key == "ttft_minus_prompt_ms") {
    return statistic(t, t.ttft_minus_prompt_ms, "ttft_minus_prompt_ms", stat);
  }
  if (key == "prefill_rate") return statistic(t, t.prefill_rate, "prefill_rate", stat);
  if (key == "decode_rate_per_user") {
    return statistic(t, t.decode_rate_per_user, "decode_rate_per_user", stat);
  }
  if (!stat.empty()) return std::nullopt;
  if (key == "repetitions") return number(t.repetitions);
  if (key == "requests_with_timings") return number(t.requests_with_timings);
  if (key == "requests_without_timings") return number(t.requests_without_timings);
  if (key == "prompt_tokens_computed") return number(t.prompt_tokens_computed);
  if (key == "prompt_tokens_cached") return number(t.prompt_tokens_cached);
  if (key == "prompt_cached_fraction") return t.prompt_cached_fraction;
  if (key == "predicted_tokens") return number(t.predicted_tokens);
  if (key == "prefill_tokens_per_s") return t.prefill_tokens_per_s;
  if (key == "draft_tokens") return number(t.draft_tokens);
  if (key == "draft_tokens_accepted") return number(t.draft_tokens_accepted);
  if (key == "spec_decode_acceptance_rate") return t.spec_decode_acceptance_rate;
  return std::nullopt;
}

}  // namespace

ServerSection server_section_from_json(const boost::json::object& server, const std::string& file) {
  const ObjectReader r(server, "server", file);
  ServerSection s;
  (void)r.at("source");  // null when there was no /metrics, but always written
  s.source = r.opt_string("source");
  s.reason = r.opt_string("reason");
  s.error = r.opt_string("error");
  if (!s.source && !s.reason) r.fail(r.name("reason"), "is missing (source is null)");
  if (s.counted()) {
    s.dialect = r.opt_string("dialect");
    s.prompt_tokens = r.opt_number("prompt_tokens");
    s.generation_tokens = r.opt_number("generation_tokens");
    s.preemptions = r.opt_number("preemptions");
    s.prefix_cache_hit_rate = r.opt_number("prefix_cache_hit_rate");
    s.prefix_cache_queries = r.opt_number("prefix_cache_queries");
    s.prefix_cache_hits = r.opt_number("prefix_cache_hits");
    s.spec_decode_acceptance_rate = r.opt_number("spec_decode_acceptance_rate");
    s.counter_reset = r.boolean("counter_reset");
    const ObjectReader counters = r.object("counters");
    for (const auto& kv : counters.raw()) {
      const std::string key(kv.key());
      s.counters[key] = counters.opt_number(key.c_str());
    }
  }
  if (r.has("timings")) s.timings = timings_from(r.object("timings"));
  if (r.has("gauges")) s.gauges = gauges_from(r.object("gauges"));
  return s;
}

std::optional<ServerSection> server_section_of(const std::optional<boost::json::object>& server) {
  if (!server) return std::nullopt;
  return server_section_from_json(*server);
}

std::optional<double> server_figure(const ServerSection& server, std::string_view path,
                                    std::string_view stat) {
  constexpr std::string_view kSection = "server.";
  constexpr std::string_view kTimings = "server.timings.";
  if (path.starts_with(kTimings)) {
    if (!server.timings) return std::nullopt;
    return finite(timings_figure(*server.timings, path.substr(kTimings.size()), stat));
  }
  if (!path.starts_with(kSection) || !stat.empty()) return std::nullopt;
  const std::string_view key = path.substr(kSection.size());
  std::optional<double> v;
  if (key == "prompt_tokens") v = server.prompt_tokens;
  if (key == "generation_tokens") v = server.generation_tokens;
  if (key == "preemptions") v = server.preemptions;
  if (key == "prefix_cache_hit_rate") v = server.prefix_cache_hit_rate;
  if (key == "prefix_cache_queries") v = server.prefix_cache_queries;
  if (key == "prefix_cache_hits") v = server.prefix_cache_hits;
  if (key == "spec_decode_acceptance_rate") v = server.spec_decode_acceptance_rate;
  return finite(v);
}

}  // namespace dyno::record
