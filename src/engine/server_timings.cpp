#include "engine/server_timings.h"

#include <algorithm>
#include <boost/json.hpp>
#include <sstream>
#include <vector>

#include "record/llamacpp_timings.h"
#include "record/record_json.h"

namespace dyno::engine {

namespace json = boost::json;

ServerTimingFigures server_timing_figures(std::span<const metrics::Trace> traces) {
  ServerTimingFigures f;
  std::vector<double> prompt_ms, prefill, decode, gap;
  std::int64_t cached = 0, drafted = 0, accepted = 0, prefill_tokens = 0;
  double prefill_ms = 0.0;
  bool any_cached = false, any_drafts = false;
  for (const metrics::Trace& t : traces) {
    if (!t.measured() || !t.ok()) continue;
    const std::optional<record::LlamaCppTimings> timings =
        t.server_timings_json.empty() ? std::nullopt
                                      : record::parse_llamacpp_timings(t.server_timings_json);
    if (!timings) {
      ++f.without_timings;
      continue;
    }
    ++f.with_timings;
    const record::LlamaCppTimings& x = *timings;
    if (x.prompt_n) f.prompt_tokens_computed += *x.prompt_n;
    if (x.cache_n) {
      cached += *x.cache_n;
      any_cached = true;
    } else if (x.prompt_n && t.input_tokens && *t.input_tokens >= *x.prompt_n) {
      cached += *t.input_tokens - *x.prompt_n;  // what the engine had and did not compute
      any_cached = true;
    }
    if (x.predicted_n) f.predicted_tokens += *x.predicted_n;
    if (x.prompt_n && *x.prompt_n >= 1 && x.prompt_ms) {
      prompt_ms.push_back(*x.prompt_ms);
      if (t.first_token_ns && t.sent_ns) {
        gap.push_back(static_cast<double>(*t.first_token_ns - *t.sent_ns) * 1e-6 - *x.prompt_ms);
      }
      if (*x.prompt_ms > 0.0) {
        prefill.push_back(static_cast<double>(*x.prompt_n) / (*x.prompt_ms * 1e-3));
        prefill_tokens += *x.prompt_n;
        prefill_ms += *x.prompt_ms;
      }
    }
    if (x.predicted_n && *x.predicted_n >= 2 && x.predicted_ms && *x.predicted_ms > 0.0) {
      decode.push_back(static_cast<double>(*x.predicted_n - 1) / (*x.predicted_ms * 1e-3));
    }
    if (x.draft_n) {
      drafted += *x.draft_n;
      accepted += x.draft_n_accepted.value_or(0);
      any_drafts = true;
    }
  }
  f.prompt_ms = metrics::summarize(std::move(prompt_ms));
  f.ttft_minus_prompt_ms = metrics::summarize(std::move(gap));
  f.prefill_rate = metrics::summarize(std::move(prefill));
  if (prefill_ms > 0.0) {
    f.prefill_tokens_per_s = static_cast<double>(prefill_tokens) / (prefill_ms * 1e-3);
  }
  f.decode_rate_per_user = metrics::summarize(std::move(decode));
  if (any_cached) {
    f.prompt_tokens_cached = cached;
    const std::int64_t total = cached + f.prompt_tokens_computed;
    if (total > 0)
      f.prompt_cached_fraction = static_cast<double>(cached) / static_cast<double>(total);
  }
  if (any_drafts) {
    f.draft_tokens = drafted;
    f.draft_tokens_accepted = accepted;
    if (drafted > 0)
      f.acceptance_rate = static_cast<double>(accepted) / static_cast<double>(drafted);
  }
  if (f.with_timings == 0) {
    f.reason = f.without_timings == 0
                   ? "no measured request completed"
                   : "no completed response carried a `timings` object (llama.cpp's server sends "
                     "one per response; vLLM and SGLang do not)";
  }
  return f;
}

std::optional<metrics::Warning> prefill_gap_warning(const ServerTimingFigures& f) {
  const std::optional<double> gap = f.ttft_minus_prompt_ms.p50;
  const std::optional<double> prompt = f.prompt_ms.p50;
  if (!gap || !prompt || *gap <= std::max(250.0, 2.0 * *prompt)) return std::nullopt;
  std::ostringstream m;
  m.setf(std::ios::fixed);
  m.precision(1);
  m << "median TTFT exceeds the engine's own prompt time (timings.prompt_ms, median " << *prompt
    << " ms) by " << *gap << " ms: requests waited " << *gap / 1000.0
    << " s before or after the engine's prefill";
  return metrics::Warning{
      metrics::WarningCode::kTtftFarAboveServerPrefill, m.str(),
      "the server queued requests: fewer slots than --concurrency, or its HTTP threads were "
      "busy (idle keep-alive connections of other clients, dyno's own /metrics polling: try "
      "--telemetry off); compare server.timings.ttft_minus_prompt_ms per cell"};
}

std::optional<std::int64_t> computed_prompt_tokens(const metrics::Trace& t) {
  if (!t.server_timings_json.empty()) {
    if (const auto timings = record::parse_llamacpp_timings(t.server_timings_json);
        timings && timings->prompt_n) {
      return timings->prompt_n;
    }
  }
  if (t.input_tokens && t.cached_input_tokens) return *t.input_tokens - *t.cached_input_tokens;
  return std::nullopt;
}

json::object server_timings_json(const ServerTimingFigures& f) {
  json::object o{{"source", "response timings"},
                 {"requests_with_timings", f.with_timings},
                 {"requests_without_timings", f.without_timings}};
  if (f.with_timings == 0) {
    o["reason"] = f.reason;
    return o;
  }
  const auto opt_int = [](const std::optional<std::int64_t>& v) {
    return v ? json::value(*v) : json::value(nullptr);
  };
  o["prompt_tokens_computed"] = f.prompt_tokens_computed;
  o["prompt_tokens_cached"] = opt_int(f.prompt_tokens_cached);
  o["prompt_cached_fraction"] = record::number_or_null(f.prompt_cached_fraction);
  o["predicted_tokens"] = f.predicted_tokens;
  o["prompt_ms"] = record::distribution_to_json(f.prompt_ms);
  o["ttft_minus_prompt_ms"] = record::distribution_to_json(f.ttft_minus_prompt_ms);
  o["prefill_rate"] = record::distribution_to_json(f.prefill_rate);
  o["prefill_tokens_per_s"] = record::number_or_null(f.prefill_tokens_per_s);
  o["decode_rate_per_user"] = record::distribution_to_json(f.decode_rate_per_user);
  o["draft_tokens"] = opt_int(f.draft_tokens);
  o["draft_tokens_accepted"] = opt_int(f.draft_tokens_accepted);
  o["spec_decode_acceptance_rate"] = record::number_or_null(f.acceptance_rate);
  return o;
}

std::vector<metrics::Caveat> timing_caveats(std::span<const metrics::Trace> traces,
                                            const ServerTimingFigures& f,
                                            std::optional<double> tokens_per_event) {
  std::vector<metrics::Caveat> out;
  const auto add = [&out](const char* code, const std::string& text) {
    out.push_back({code, text});
  };
  if (f.with_timings > 0) {
    add("engine_timer_boundaries",
        std::to_string(f.with_timings) +
            " responses carried the engine's own timings (prompt_ms, predicted_ms): they start "
            "and end where the engine starts and ends its work, not where the client sends and "
            "receives, so they compare with each other, not with TTFT or TPOT");
  }
  std::int64_t prompt = 0;
  std::int64_t cached_usage = 0;
  for (const auto& t : traces) {
    if (!t.measured() || !t.ok()) continue;
    prompt += t.input_tokens.value_or(0);
    cached_usage += t.cached_input_tokens.value_or(0);
  }
  const std::int64_t cached = f.prompt_tokens_cached.value_or(cached_usage);
  if (cached > 0) {
    add("prompt_cache",
        std::to_string(cached) + " of " + std::to_string(prompt) +
            " prompt tokens were served from the engine's prompt cache (" +
            (f.prompt_tokens_cached ? "response timings" : "usage cached_tokens") +
            "): TTFT and the client's prefill rate cover less prefill than the prompts' length");
  }
  if (tokens_per_event && *tokens_per_event > 1.05) {
    std::ostringstream n;
    n.precision(3);
    n << *tokens_per_event;
    add("tokens_per_event",
        "token events carried " + n.str() +
            " tokens on average (several tokens per chunk, or speculative decoding accepting "
            "several at once): the time between events is not a time per token; TPOT divides "
            "by tokens");
  }
  return out;
}

void cached_tokens_from_timings(std::vector<metrics::Trace>& traces) {
  for (metrics::Trace& t : traces) {
    if (t.cached_input_tokens || t.server_timings_json.empty()) continue;
    const auto timings = record::parse_llamacpp_timings(t.server_timings_json);
    if (!timings) continue;
    if (timings->cache_n) {
      t.cached_input_tokens = *timings->cache_n;
      t.cached_source = metrics::CachedSource::kTimings;
    } else if (timings->prompt_n && t.input_tokens && *t.input_tokens >= *timings->prompt_n) {
      // What the engine had and did not compute: the count the server section reports too.
      t.cached_input_tokens = *t.input_tokens - *timings->prompt_n;
      t.cached_source = metrics::CachedSource::kTimingsPromptN;
    }
  }
}

}  // namespace dyno::engine
