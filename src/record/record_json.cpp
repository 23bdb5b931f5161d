#include "record/record_json.h"

#include <array>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "json/json_text.h"
#include "metrics/registry.h"
#include "scrub/redact.h"

namespace dyno::record {

using scrub::redact_literals;
using scrub::redact_server_text;

namespace json = boost::json;

namespace {

json::value opt_int(const std::optional<std::int64_t>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

std::optional<std::int64_t> get_opt_int(const json::object& obj, const char* key) {
  const json::value* v = obj.if_contains(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64()) return static_cast<std::int64_t>(v->as_uint64());
  throw std::runtime_error(std::string("key `") + key + "`: expected an integer");
}

std::string get_string(const json::object& obj, const char* key) {
  const json::value* v = obj.if_contains(key);
  if (v == nullptr || v->is_null()) return {};
  if (!v->is_string())
    throw std::runtime_error(std::string("key `") + key + "`: expected a string");
  return std::string(v->as_string());
}

/// A completed scored request always keeps its output, empty or not: re-scoring reads it.
bool keeps_output_text(const metrics::Trace& t) {
  return !t.output_text.empty() || (t.correct && t.ok());
}

}  // namespace

json::value number_or_null(std::optional<double> v) {
  if (!v || !std::isfinite(*v)) return nullptr;
  return *v;
}

json::object distribution_to_json(const metrics::Distribution& d) {
  json::object o;
  o["count"] = d.count;
  o["mean"] = number_or_null(d.mean);
  o["stddev"] = number_or_null(d.stddev);
  o["min"] = number_or_null(d.min);
  o["p50"] = number_or_null(d.p50);
  o["p90"] = number_or_null(d.p90);
  o["p95"] = number_or_null(d.p95);
  o["p99"] = number_or_null(d.p99);
  o["p99_9"] = number_or_null(d.p999);
  o["max"] = number_or_null(d.max);
  o["jitter_p95_minus_p50"] = number_or_null(d.jitter);
  return o;
}

json::object score_to_json(const metrics::Trace& t) {
  json::object score{{"correct", t.correct.value_or(false)},
                     {"extracted", t.extracted_answer},
                     {"scorer", t.scorer}};
  if (t.expected_answer) score["expected"] = *t.expected_answer;
  if (!t.scorer_pattern.empty()) score["pattern"] = t.scorer_pattern;
  if (!t.scorer_choices.empty()) {
    json::array choices;
    for (const std::string& c : t.scorer_choices) choices.emplace_back(c);
    score["choices"] = std::move(choices);
  }
  return score;
}

namespace {

/// Every member of a requests.jsonl object but the two that come last, in this order:
/// chunk_times_ns and output_text (trace_to_json adds them; trace_line writes them as text).
json::object trace_head(const metrics::Trace& t) {
  json::object o;
  o["index"] = t.index;
  o["request_id"] = t.request_id;
  o["phase"] = t.phase;
  o["status"] = metrics::to_string(t.status);
  o["scheduled_ns"] = opt_int(t.scheduled_ns);
  o["sent_ns"] = opt_int(t.sent_ns);
  o["first_byte_ns"] = opt_int(t.first_byte_ns);
  o["first_token_ns"] = opt_int(t.first_token_ns);
  o["first_content_ns"] = opt_int(t.first_content_ns);
  o["last_token_ns"] = opt_int(t.last_token_ns);
  o["done_ns"] = opt_int(t.done_ns);
  o["input_tokens"] = opt_int(t.input_tokens);
  o["output_tokens"] = opt_int(t.output_tokens);
  o["cached_input_tokens"] = opt_int(t.cached_input_tokens);
  if (t.cached_input_tokens && t.cached_source != metrics::CachedSource::kNone) {
    o["cached_source"] = metrics::to_string(t.cached_source);
  }
  o["reasoning_tokens"] = opt_int(t.reasoning_tokens);
  if (t.session_run) {
    o["session"] = json::object{{"id", t.session},
                                {"run", *t.session_run},
                                {"turn", opt_int(t.turn)},
                                {"turns", opt_int(t.session_turns)}};
  }
  o["token_count_source"] = metrics::to_string(t.token_count_source);
  o["token_events"] = t.event_times_ns.size();
  o["reasoning_events"] = t.reasoning_events;
  o["http_status"] = t.http_status ? json::value(*t.http_status) : json::value(nullptr);
  if (t.error_category.empty()) {
    o["error"] = nullptr;
  } else {
    o["error"] = json::object{{"category", t.error_category}, {"message", t.error_message}};
  }
  o["finish_reason"] =
      t.finish_reason.empty() ? json::value(nullptr) : json::value(t.finish_reason);
  if (!t.server_timings_json.empty()) {
    boost::system::error_code ec;
    json::value timings = json::parse(t.server_timings_json, ec);
    o["server_timings"] = ec ? json::value(nullptr) : timings;
  }
  if (t.correct) o["score"] = score_to_json(t);
  return o;
}

}  // namespace

json::object trace_to_json(const metrics::Trace& t, bool keep_event_times) {
  json::object o = trace_head(t);
  if (keep_event_times) {
    json::array deltas;
    deltas.reserve(t.event_times_ns.size());
    std::int64_t prev = 0;
    for (std::int64_t ts : t.event_times_ns) {
      deltas.push_back(ts - prev);
      prev = ts;
    }
    o["chunk_times_ns"] = std::move(deltas);
  }
  if (keeps_output_text(t)) o["output_text"] = t.output_text;
  return o;
}

std::string trace_line(const metrics::Trace& t, bool keep_event_times,
                       const std::vector<std::string>& secrets, std::size_t* invalid_utf8_bytes) {
  json::value head = trace_head(t);
  const bool has_text = keeps_output_text(t);
  if (!t.error_category.empty() && !t.error_message.empty()) {
    // What the server said may hold a key it echoed, the user's or another's.
    std::string message = t.error_message;
    redact_server_text(message, secrets);
    head.as_object()["error"].as_object()["message"] = message;
  }
  redact_literals(head, secrets);
  json_text::WriteStats stats;
  std::string line = json_text::compact(head, &stats);
  line.pop_back();  // the closing brace
  // `,"key":`, redacted as redact_literals redacts object keys (a secret may be any string).
  const auto key = [&](std::string name) {
    if (!secrets.empty()) redact_literals(name, secrets);
    line += ",\"";
    line += name;
    line += "\":";
  };
  if (keep_event_times) {
    key("chunk_times_ns");
    line += '[';
    line.reserve(line.size() + t.event_times_ns.size() * 8 + 64);
    std::array<char, 24> num{};
    std::int64_t prev = 0;
    bool first = true;
    for (const std::int64_t ts : t.event_times_ns) {
      char* const end = std::to_chars(num.data(), num.data() + num.size(), ts - prev).ptr;
      if (!first) line += ',';
      first = false;
      line.append(num.data(), end);
      prev = ts;
    }
    line += ']';
  }
  if (has_text) {
    json::value text(t.output_text);
    redact_literals(text, secrets);
    key("output_text");
    line += json_text::compact(text, &stats);
  }
  if (stats.invalid_utf8_bytes > 0) {
    key("invalid_utf8_bytes");
    line += std::to_string(stats.invalid_utf8_bytes);
  }
  line += '}';
  if (invalid_utf8_bytes != nullptr) *invalid_utf8_bytes = stats.invalid_utf8_bytes;
  return line;
}

metrics::Trace trace_from_json(const json::object& o) {
  metrics::Trace t;
  const auto idx = get_opt_int(o, "index");
  if (!idx) throw std::runtime_error("key `index`: missing");
  t.index = static_cast<std::uint64_t>(*idx);
  t.request_id = get_string(o, "request_id");
  t.phase = get_string(o, "phase");
  const std::string status = get_string(o, "status");
  if (status == "ok") {
    t.status = metrics::RequestStatus::kOk;
  } else if (status == "error") {
    t.status = metrics::RequestStatus::kError;
  } else if (status == "cancelled") {
    t.status = metrics::RequestStatus::kCancelled;
  } else {
    throw std::runtime_error("key `status`: unknown value '" + status + "'");
  }
  t.scheduled_ns = get_opt_int(o, "scheduled_ns");
  t.sent_ns = get_opt_int(o, "sent_ns");
  t.first_byte_ns = get_opt_int(o, "first_byte_ns");
  t.first_token_ns = get_opt_int(o, "first_token_ns");
  t.first_content_ns = get_opt_int(o, "first_content_ns");
  t.last_token_ns = get_opt_int(o, "last_token_ns");
  t.done_ns = get_opt_int(o, "done_ns");
  t.input_tokens = get_opt_int(o, "input_tokens");
  t.output_tokens = get_opt_int(o, "output_tokens");
  t.cached_input_tokens = get_opt_int(o, "cached_input_tokens");
  t.reasoning_tokens = get_opt_int(o, "reasoning_tokens");
  if (t.cached_input_tokens) {
    const std::string cached = get_string(o, "cached_source");
    t.cached_source = cached == "timings" ? metrics::CachedSource::kTimings
                      : cached == "timings_prompt_n"
                          ? metrics::CachedSource::kTimingsPromptN
                          : metrics::CachedSource::kUsage;  // absent: usage
  }
  if (const json::value* se = o.if_contains("session"); se != nullptr && se->is_object()) {
    const json::object& so = se->get_object();
    t.session = get_string(so, "id");
    const auto run = get_opt_int(so, "run");
    if (!run) throw std::runtime_error("key `session.run`: missing");
    t.session_run = static_cast<std::uint64_t>(*run);
    t.turn = get_opt_int(so, "turn");
    t.session_turns = get_opt_int(so, "turns");
  }
  const std::string source = get_string(o, "token_count_source");
  for (auto s : {metrics::TokenCountSource::kNone, metrics::TokenCountSource::kUsage,
                 metrics::TokenCountSource::kTokenizer, metrics::TokenCountSource::kChunks}) {
    if (source == metrics::to_string(s)) t.token_count_source = s;
  }
  t.reasoning_events = get_opt_int(o, "reasoning_events").value_or(0);
  if (auto hs = get_opt_int(o, "http_status")) t.http_status = static_cast<int>(*hs);
  if (const json::value* e = o.if_contains("error"); e != nullptr && e->is_object()) {
    t.error_category = get_string(e->get_object(), "category");
    t.error_message = get_string(e->get_object(), "message");
  }
  t.finish_reason = get_string(o, "finish_reason");
  if (const json::value* st = o.if_contains("server_timings"); st != nullptr && !st->is_null()) {
    t.server_timings_json = json_text::compact(*st);
  }
  if (const json::value* sc = o.if_contains("score"); sc != nullptr && !sc->is_null()) {
    if (!sc->is_object()) throw std::runtime_error("key `score`: expected an object");
    const json::object& score = sc->get_object();
    const json::value* correct = score.if_contains("correct");
    if (correct == nullptr || !correct->is_bool()) {
      throw std::runtime_error("key `score.correct`: expected a boolean");
    }
    t.correct = correct->get_bool();
    t.extracted_answer = get_string(score, "extracted");
    t.scorer = get_string(score, "scorer");
    if (const json::value* e = score.if_contains("expected"); e != nullptr) {
      if (!e->is_string()) throw std::runtime_error("key `score.expected`: expected a string");
      t.expected_answer = std::string(e->get_string());
    }
    t.scorer_pattern = get_string(score, "pattern");
    if (const json::value* c = score.if_contains("choices"); c != nullptr) {
      if (!c->is_array()) throw std::runtime_error("key `score.choices`: expected an array");
      for (const json::value& label : c->get_array()) {
        if (!label.is_string()) {
          throw std::runtime_error("key `score.choices`: expected strings");
        }
        t.scorer_choices.emplace_back(label.get_string());
      }
    }
  }
  if (const json::value* c = o.if_contains("chunk_times_ns"); c != nullptr && c->is_array()) {
    std::int64_t acc = 0;
    for (const auto& d : c->get_array()) {
      if (!d.is_int64()) throw std::runtime_error("key `chunk_times_ns`: expected integers");
      acc += d.get_int64();
      t.event_times_ns.push_back(acc);
    }
  }
  t.output_text = get_string(o, "output_text");
  return t;
}

json::object warning_to_json(const metrics::Warning& w) {
  return json::object{
      {"code", metrics::to_string(w.code)}, {"message", w.message}, {"hint", w.hint}};
}

namespace {

/// One section of summary.json from the typed summary, as the metric registry lists it (its
/// order is the file's).
json::object figures_to_json(const metrics::Summary& s, std::string_view section) {
  json::object o;
  for (const metrics::Figure* f : metrics::figures_in(section)) {
    const std::string_view key = metrics::leaf(*f);
    if (f->dist != nullptr) {
      o[key] = distribution_to_json(s.*(f->dist));
    } else if (f->value != nullptr) {
      o[key] = number_or_null(s.*(f->value));
    } else if (f->count != nullptr) {
      const std::optional<std::uint64_t>& n = s.*(f->count);
      o[key] = n ? json::value(*n) : json::value(nullptr);
    }
  }
  return o;
}

}  // namespace

json::object quality_to_json(const metrics::Summary& s) { return figures_to_json(s, "quality"); }

json::object cache_totals_to_json(const metrics::CacheTotals& c) {
  return json::object{{"requests", c.requests},
                      {"prompt_tokens", c.prompt_tokens},
                      {"cached_tokens", c.cached_tokens},
                      {"hit_rate", number_or_null(c.hit_rate)}};
}

json::object prefix_cache_to_json(const metrics::PrefixCacheFigures& f) {
  json::object o = cache_totals_to_json(f.totals);
  o["source"] = f.source;
  json::array buckets;
  for (const auto& b : f.buckets) {
    buckets.push_back(json::object{{"uncached_min", b.uncached_min},
                                   {"uncached_max", b.uncached_max},
                                   {"requests", b.requests},
                                   {"ttft_p50_ms", number_or_null(b.ttft_p50_ms)}});
  }
  o["ttft_vs_uncached"] =
      json::object{{"intercept_ms", number_or_null(f.ttft_intercept_ms)},
                   {"ms_per_1k_uncached_tokens", number_or_null(f.ttft_ms_per_1k_uncached)},
                   {"r2", number_or_null(f.ttft_fit_r2)},
                   {"buckets", std::move(buckets)}};
  return o;
}

json::object sessions_to_json(const metrics::SessionFigures& f) {
  json::array per_turn;
  for (const auto& t : f.per_turn) {
    per_turn.push_back(json::object{
        {"turn", t.turn},
        {"requests", t.requests},
        {"failed", t.failed},
        {"ttft_ms", distribution_to_json(t.ttft_ms)},
        {"input_tokens", distribution_to_json(t.input_tokens)},
        {"cache", t.cache ? json::value(cache_totals_to_json(*t.cache)) : json::value(nullptr)}});
  }
  return json::object{{"sessions", f.sessions},
                      {"completed", f.completed},
                      {"failed", f.failed},
                      {"cut", f.cut},
                      {"turns", distribution_to_json(f.turns)},
                      {"duration_s", distribution_to_json(f.duration_s)},
                      {"input_tokens", distribution_to_json(f.input_tokens)},
                      {"output_tokens", distribution_to_json(f.output_tokens)},
                      {"per_turn", std::move(per_turn)}};
}

json::object summary_to_json(const metrics::Summary& s) {
  json::object o;
  o["definition_set"] = s.definition_set;
  o["percentile_method"] = kPercentileMethod;

  json::object errors;
  for (const auto& [k, v] : s.errors_by_category) errors[k] = v;
  o["requests"] = json::object{{"total", s.requests_total},
                               {"ok", s.requests_ok},
                               {"failed", s.requests_failed},
                               {"cancelled", s.requests_cancelled},
                               {"warmup_discarded", s.warmup_requests},
                               {"error_rate", number_or_null(s.error_rate)},
                               {"errors_by_category", std::move(errors)}};
  if (!s.errors_by_message.empty()) {
    json::array by_message;
    for (const metrics::ErrorMessageCount& m : s.errors_by_message) {
      by_message.push_back(
          json::object{{"category", m.category}, {"message", m.message}, {"count", m.count}});
    }
    json::object& requests = o["requests"].as_object();
    requests["errors_by_message"] = std::move(by_message);
    requests["errors_other_messages"] = s.errors_other_messages;
  }

  json::object sources;
  for (const auto& [k, v] : s.token_count_sources) sources[k] = v;
  o["tokens"] =
      json::object{{"input_total", s.input_tokens_complete ? json::value(s.input_tokens_total)
                                                           : json::value(nullptr)},
                   {"output_total", s.output_tokens_total},
                   {"count_sources", std::move(sources)},
                   {"tokens_per_event", number_or_null(s.tokens_per_event)}};

  o["throughput"] = figures_to_json(s, "throughput");

  o["quality"] = quality_to_json(s);

  o["latency_ms"] = figures_to_json(s, "latency_ms");
  o["rates_tok_s"] = figures_to_json(s, "rates_tok_s");
  o["lengths_tokens"] = figures_to_json(s, "lengths_tokens");
  o["client"] = json::object{{"cpu_s", number_or_null(s.client_cpu_s)},
                             {"peak_rss_bytes", number_or_null(s.client_peak_rss_bytes)},
                             {"loop_lag_ms", distribution_to_json(s.client_loop_lag_ms)}};
  if (!s.client_cpu_scope.empty()) {
    o["client"].as_object()["cpu_scope"] = s.client_cpu_scope;
    o["client"].as_object()["loop_cpu_s"] = number_or_null(s.client_loop_cpu_s);
    o["client"].as_object()["threads"] = s.client_threads;
  }
  if (s.sessions) o["sessions"] = sessions_to_json(*s.sessions);
  if (s.prefix_cache) o["prefix_cache"] = prefix_cache_to_json(*s.prefix_cache);
  json::array warnings;
  for (const auto& w : s.warnings) warnings.push_back(warning_to_json(w));
  o["warnings"] = std::move(warnings);
  return o;
}

std::string pretty_json(const json::value& v) { return json_text::pretty(v); }

}  // namespace dyno::record
