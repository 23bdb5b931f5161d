#include "interop/import_aiperf.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "interop/import_json.h"

namespace dyno::interop {

namespace json = boost::json;

namespace {

using Doc = ImportDoc;

constexpr const char* kRecordWhat =
    "one JSON object a line, an AIPerf record (profile_export.jsonl: metadata, metrics, error)";
constexpr const char* kAggregateWhat =
    "AIPerf's profile_export.jsonl (a record a line) or profile_export_aiperf.json (one object)";

/// The longest time within one request, in ms, and the furthest a record's start may lie
/// from the earliest one (1e7 s): past it the record's nanoseconds would overflow.
constexpr double kMaxRequestMs = 1e10;
constexpr std::int64_t kMaxSpreadNs = 10'000'000'000'000'000;

std::int64_t ms_to_ns(double ms) { return std::llround(ms * 1e6); }

/// The lines of `bytes` that are not blank, with their 1-based numbers.
std::vector<std::pair<std::size_t, std::string_view>> lines_of(const std::string& bytes) {
  std::vector<std::pair<std::size_t, std::string_view>> out;
  std::size_t line = 0;
  for (std::size_t begin = 0; begin < bytes.size();) {
    std::size_t end = bytes.find('\n', begin);
    if (end == std::string::npos) end = bytes.size();
    ++line;
    const std::string_view text(bytes.data() + begin, end - begin);
    begin = end + 1;
    if (text.find_first_not_of(" \t\r") != std::string_view::npos) out.emplace_back(line, text);
  }
  return out;
}

// ---- the per-record JSONL ----------------------------------------------------------------

/// A metric of a record: {value, unit} with the unit AIPerf exports it in.
const json::value* metric_value(const Doc& metrics, const char* tag, const char* unit) {
  const json::object* m = metrics.opt_object(tag);
  if (m == nullptr) return nullptr;
  const Doc md = metrics.child(tag);
  const std::string u = md.string("unit");
  if (u != unit) md.fail(md.at("unit"), "'" + u + "'; expected " + unit);
  return &md.need("value");
}

std::optional<double> ms_metric(const Doc& metrics, const char* tag) {
  const json::value* v = metric_value(metrics, tag, "ms");
  if (v == nullptr) return std::nullopt;
  const std::string path = metrics.at(tag) + ".value";
  const double ms = metrics.number(*v, path);
  if (ms < 0 || ms > kMaxRequestMs) metrics.fail(path, "expected milliseconds from 0 to 1e10");
  return ms;
}

std::optional<std::int64_t> token_metric(const Doc& metrics, const char* tag) {
  const json::value* v = metric_value(metrics, tag, "tokens");
  if (v == nullptr) return std::nullopt;
  return metrics.tokens(*v, metrics.at(tag) + ".value");
}

/// The token-bearing event times of a completed record from its first token on: the first
/// at the first token, each next one the previous plus an inter-chunk gap.
void token_times(const Doc& metrics, metrics::Trace& t, double ttft_ms) {
  t.first_token_ns = *t.sent_ns + ms_to_ns(ttft_ms);
  const json::value* icl = metric_value(metrics, "inter_chunk_latency", "ms");
  if (icl == nullptr) {
    // No per-chunk times: the last token is AIPerf's request_latency (which ends at the last
    // token-bearing response); the events between are unknown and stay so.
    if (const auto latency = ms_metric(metrics, "request_latency")) {
      if (*latency < ttft_ms) {
        metrics.fail(metrics.at("request_latency") + ".value", "shorter than time_to_first_token");
      }
      t.last_token_ns = *t.sent_ns + ms_to_ns(*latency);
    } else {
      // A first token without a last one is no answer's timeline (fuzzing found it).
      metrics.fail(metrics.at("request_latency"),
                   "missing: a completed request needs request_latency or inter_chunk_latency "
                   "(when its last token came)");
    }
    return;
  }
  const std::string path = metrics.at("inter_chunk_latency") + ".value";
  if (!icl->is_array()) metrics.fail(path, "expected an array of milliseconds");
  double elapsed = ttft_ms;
  t.event_times_ns.push_back(*t.first_token_ns);
  const json::array& gaps = icl->get_array();
  for (std::size_t k = 0; k < gaps.size(); ++k) {
    const std::string where = path + "[" + std::to_string(k) + "]";
    const double gap = metrics.number(gaps[k], where);
    if (gap < 0) metrics.fail(where, "expected milliseconds of 0 or more");
    elapsed += gap;
    if (elapsed > kMaxRequestMs) metrics.fail(where, "the request's times add up past 1e10 ms");
    t.event_times_ns.push_back(*t.sent_ns + ms_to_ns(elapsed));
  }
  t.last_token_ns = t.event_times_ns.back();
}

struct Record {
  std::int64_t start_ns = 0;
  std::size_t line = 0;
  metrics::Trace trace;
};

/// One line of the JSONL, its times from its own start (moved onto the shared axis later).
Record read_record(const json::object& o, const std::string& file, std::size_t line,
                   std::size_t index) {
  const Doc d(o, file, "$", "an AIPerf record", line);
  const Doc meta = d.child("metadata");
  Record r;
  r.line = line;
  r.start_ns = meta.count("request_start_ns");
  if (meta.count("request_end_ns") < r.start_ns) {
    meta.fail(meta.at("request_end_ns"), "before request_start_ns");
  }
  metrics::Trace& t = r.trace;
  t.index = index;
  t.request_id = meta.opt_string("x_request_id").value_or(std::to_string(index));
  const std::string phase = meta.opt_string("benchmark_phase").value_or("profiling");
  if (phase != "profiling" && phase != "warmup") {
    meta.fail(meta.at("benchmark_phase"), "'" + phase + "'; expected profiling or warmup");
  }
  if (phase == "warmup") t.phase = "warmup";
  t.sent_ns = 0;
  const json::value* m = d.find("metrics");
  if (m != nullptr && !m->is_object()) d.fail("$.metrics", "expected an object or null");
  const json::object none;
  const Doc metrics(m != nullptr ? m->get_object() : none, file, "$.metrics", "an AIPerf record",
                    line);
  if (d.opt_object("error") != nullptr) {
    const Doc e = d.child("error");
    t.status = metrics::RequestStatus::kError;
    t.error_category = "imported";
    t.error_message = e.string("message");
    if (const auto type = e.opt_string("type"); type && !type->empty()) {
      t.error_message = *type + ": " + t.error_message;
    }
    if (const auto code = e.opt_count("code"); code && *code >= 100 && *code <= 599) {
      t.http_status = static_cast<int>(*code);
    }
    t.input_tokens = token_metric(metrics, "error_isl");
    return r;
  }
  t.input_tokens = token_metric(metrics, "input_sequence_length");
  t.output_tokens = token_metric(metrics, "output_sequence_length");
  t.reasoning_tokens = token_metric(metrics, "reasoning_token_count");
  if (t.output_tokens) t.token_count_source = metrics::TokenCountSource::kTokenizer;
  if (const auto ttft = ms_metric(metrics, "time_to_first_token")) {
    token_times(metrics, t, *ttft);
    // The first token counts reasoning text too; the first content is known only without it.
    if (!t.reasoning_tokens || *t.reasoning_tokens == 0) t.first_content_ns = t.first_token_ns;
  }
  return r;
}

ImportedResult read_records(const std::string& bytes, const std::string& file) {
  std::vector<Record> records;
  for (const auto& [line, text] : lines_of(bytes)) {
    json::value v = parse_one_json(std::string(text), file, kRecordWhat, line);
    if (!v.is_object()) {
      throw ImportFileError(file + ":" + std::to_string(line) +
                            ": $: expected a JSON object (one AIPerf record a line)");
    }
    records.push_back(read_record(v.get_object(), file, line, records.size()));
  }
  const std::int64_t origin =
      std::min_element(records.begin(), records.end(), [](const Record& a, const Record& b) {
        return a.start_ns < b.start_ns;
      })->start_ns;
  ImportedResult r;
  std::size_t measured = 0;
  std::size_t ok = 0;
  for (Record& rec : records) {
    const std::int64_t shift = rec.start_ns - origin;
    if (shift > kMaxSpreadNs) {
      throw ImportFileError(file + ":" + std::to_string(rec.line) +
                            ": $.metadata.request_start_ns: more than 1e7 s after the earliest "
                            "record's start");
    }
    metrics::Trace& t = rec.trace;
    const auto move = [shift](std::optional<std::int64_t>& ns) {
      if (ns) *ns += shift;
    };
    move(t.sent_ns);
    move(t.first_token_ns);
    move(t.first_content_ns);
    move(t.last_token_ns);
    t.event_times_ns.shift(shift);
    if (t.measured()) {
      ++measured;
      if (t.ok()) ++ok;
    }
    r.traces.push_back(std::move(t));
  }
  if (measured == 0) {
    throw ImportFileError(file + ": holds no profiling record (every record is warm-up)");
  }
  r.source.tool = kAiperfTool;
  r.source.format = "aiperf";
  r.source.timing = "shared_clock";
  // The per-record export does not name the endpoint: `dyno import --api` says it.
  r.requests = measured;
  r.load.imported = true;
  r.load.requests = measured;
  r.status = ok == 0 ? "failed" : ok < measured ? "partial" : "ok";
  return r;
}

// ---- the aggregate JSON ------------------------------------------------------------------

/// A distribution from an aggregate metric {unit, avg, min, max, p50…}; `count` when the
/// metric has none of its own (nullopt: not mapped without one).
metrics::Distribution distribution(const Doc& d, const char* tag, const char* unit,
                                   std::optional<std::uint64_t> fallback_count) {
  metrics::Distribution out;
  if (d.opt_object(tag) == nullptr) return out;
  const Doc m = d.child(tag);
  const std::string u = m.string("unit");
  if (u != unit) m.fail(m.at("unit"), "'" + u + "'; expected " + unit);
  const auto count = m.opt_count("count");
  if (!count && !fallback_count) return out;
  out.count = count ? static_cast<std::size_t>(*count) : static_cast<std::size_t>(*fallback_count);
  if (out.count == 0) return metrics::Distribution{};
  out.mean = m.opt_number("avg");
  out.min = m.opt_number("min");
  out.max = m.opt_number("max");
  out.p50 = m.opt_number("p50");
  out.p90 = m.opt_number("p90");
  out.p95 = m.opt_number("p95");
  out.p99 = m.opt_number("p99");
  if (out.p50 && out.p95) out.jitter = *out.p95 - *out.p50;
  return out;
}

/// A counter of the aggregate ({unit, avg}): its avg, a whole number of `unit`.
std::optional<std::int64_t> counter(const Doc& d, const char* tag, const char* unit) {
  if (d.opt_object(tag) == nullptr) return std::nullopt;
  const Doc m = d.child(tag);
  const std::string u = m.string("unit");
  if (u != unit) m.fail(m.at("unit"), "'" + u + "'; expected " + unit);
  const double v = m.number("avg");
  if (v < 0 || v != std::floor(v) || v > 9e15) m.fail(m.at("avg"), "expected a whole count");
  return static_cast<std::int64_t>(v);
}

void check_schema(const Doc& d) {
  if (const auto v = d.opt_string("schema_version"); v && *v != "1" && v->rfind("1.", 0) != 0) {
    d.fail("$.schema_version", "'" + *v + "': a newer schema than this dyno reads; expected 1.x");
  }
  const json::object* ic = d.opt_object("input_config");
  if (ic != nullptr && !ic->contains("endpoint") &&
      (ic->contains("endpoint_type") || ic->contains("model") || ic->contains("perf_analyzer"))) {
    d.fail("$.input_config",
           "genai-perf's layout (endpoint_type, model at the top): dyno reads "
           "AIPerf's export only, not profile_export_genai_perf.json");
  }
  for (const char* key : {"request_count", "error_request_count", "time_to_first_token",
                          "request_latency", "input_config"}) {
    if (d.raw().contains(key)) return;
  }
  d.fail("$",
         "neither an AIPerf record (metadata, metrics, error) nor its aggregate export "
         "(request_count, time_to_first_token…, input_config)");
}

std::string api_of(const Doc& endpoint) {
  const std::string type = endpoint.opt_string("type").value_or("chat");
  if (type == "chat" || type == "completions") return type;
  endpoint.fail(endpoint.at("type"), "'" + type +
                                         "': expected chat or completions: dyno records OpenAI "
                                         "chat and completions runs only");
}

json::object pick(const json::object* o, std::initializer_list<const char*> keys) {
  json::object out;
  if (o == nullptr) return out;
  for (const char* k : keys) {
    if (const json::value* v = o->if_contains(k)) out[k] = *v;
  }
  return out;
}

ImportedResult read_aggregate(const json::object& top, const std::string& file) {
  const Doc d(top, file, "$", "an AIPerf aggregate export");
  check_schema(d);
  ImportedResult r;
  r.source.tool = kAiperfTool;
  r.source.format = "aiperf";
  r.source.timing = "summary_only";
  r.source.tool_version = d.opt_string("aiperf_version");
  const json::object none;
  const json::object* ic = d.opt_object("input_config");
  const Doc config(ic != nullptr ? *ic : none, file, "$.input_config", "AIPerf's input_config");
  const json::object* ep = config.opt_object("endpoint");
  const Doc endpoint(ep != nullptr ? *ep : none, file, "$.input_config.endpoint",
                     "AIPerf's endpoint config");
  const json::object* lg = config.opt_object("loadgen");
  const Doc loadgen(lg != nullptr ? *lg : none, file, "$.input_config.loadgen",
                    "AIPerf's loadgen config");
  r.api = api_of(endpoint);
  if (const json::array* names = endpoint.opt_array("model_names")) {
    for (std::size_t i = 0; i < names->size(); ++i) {
      if (!(*names)[i].is_string()) {
        endpoint.fail(endpoint.at("model_names") + "[" + std::to_string(i) + "]",
                      "expected a string");
      }
    }
    if (names->size() == 1) r.model_id = std::string((*names)[0].get_string());
  }
  const auto streaming = endpoint.find("streaming");
  if (streaming != nullptr && !streaming->is_bool()) {
    endpoint.fail(endpoint.at("streaming"), "expected true or false");
  }
  const bool streamed = streaming != nullptr && streaming->as_bool();
  const auto server_counts = endpoint.find("use_server_token_count");
  const bool usage =
      server_counts != nullptr && server_counts->is_bool() && server_counts->as_bool();

  const std::int64_t completed = counter(d, "request_count", "requests").value_or(0);
  const std::int64_t failed = counter(d, "error_request_count", "requests").value_or(0);
  if (completed + failed == 0) {
    d.fail("$.request_count", "missing or 0 and no error_request_count: no request to record");
  }
  metrics::Summary& s = r.summary;
  set_request_counts(s, static_cast<std::uint64_t>(completed), static_cast<std::uint64_t>(failed));
  const auto ok_count = static_cast<std::uint64_t>(completed);
  // A total the export does not give is null, never 0 (ImportedResult::absent_counts).
  if (const auto isl = counter(d, "total_isl", "tokens")) {
    s.input_tokens_total = *isl;
  } else {
    r.absent_counts.push_back("tokens.input_total");
  }
  if (const auto osl = counter(d, "total_osl", "tokens")) {
    s.output_tokens_total = *osl;
    if (completed > 0) s.token_count_sources[usage ? "usage" : "tokenizer"] = ok_count;
  } else {
    r.absent_counts.push_back("tokens.output_total");
  }
  s.ttft_ms = distribution(d, "time_to_first_token", "ms",
                           streamed ? std::optional(ok_count) : std::nullopt);
  s.tpot_ms = distribution(d, "inter_token_latency", "ms", std::nullopt);
  s.input_tokens = distribution(d, "input_sequence_length", "tokens", ok_count);
  s.output_tokens = distribution(d, "output_sequence_length", "tokens", std::nullopt);

  r.requests = s.requests_total;
  r.load.imported = true;
  r.load.requests = r.requests;
  if (const auto c = loadgen.opt_count("concurrency"); c && *c > 0) {
    r.load.concurrency = static_cast<std::uint64_t>(*c);
  }
  if (const auto rate = loadgen.opt_number("request_rate")) {
    if (*rate <= 0) loadgen.fail(loadgen.at("request_rate"), "expected a positive number");
    r.load.rate_per_s = *rate;
    const std::string mode = loadgen.opt_string("request_rate_mode").value_or("poisson");
    if (mode == "poisson" || mode == "constant") r.load.arrival = mode;
  }
  r.source.file_fields = pick(&top, {"schema_version", "aiperf_version", "benchmark_id",
                                     "start_time", "end_time", "was_cancelled"});
  json::object ep_fields =
      pick(ep, {"model_names", "type", "streaming", "custom_endpoint", "use_server_token_count"});
  if (!ep_fields.empty()) r.source.file_fields["endpoint"] = std::move(ep_fields);
  json::object lg_fields =
      pick(lg, {"concurrency", "request_rate", "request_rate_mode", "request_count",
                "benchmark_duration", "warmup_request_count"});
  if (!lg_fields.empty()) r.source.file_fields["loadgen"] = std::move(lg_fields);
  r.status = completed == 0 ? "failed" : failed > 0 ? "partial" : "ok";
  return r;
}

}  // namespace

ImportedResult read_aiperf(const std::string& bytes, const std::string& file_name) {
  // A JSONL of records: its first line alone is an object with `metadata`.
  const auto lines = lines_of(bytes);
  if (!lines.empty()) {
    boost::system::error_code ec;
    const json::value first = json::parse(lines.front().second, ec);
    if (!ec && first.is_object() && first.get_object().contains("metadata")) {
      return read_records(bytes, file_name);
    }
  }
  json::value v = parse_one_json(bytes, file_name, kAggregateWhat);
  if (!v.is_object()) throw ImportFileError(file_name + ": $: expected a JSON object");
  return read_aggregate(v.get_object(), file_name);
}

}  // namespace dyno::interop
