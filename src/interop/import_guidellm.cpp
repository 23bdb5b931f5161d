#include "interop/import_guidellm.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "interop/import_json.h"

namespace dyno::interop {

using record::LoadSection;

namespace json = boost::json;

namespace {

using Doc = ImportDoc;

/// A request that did not succeed: errored (category `imported`, its message) or incomplete
/// (cut off when the benchmark ended: cancelled, outside every figure).
metrics::Trace unsuccessful(metrics::Trace t, const std::string& status,
                            std::optional<std::string> error) {
  t.status =
      status == "errored" ? metrics::RequestStatus::kError : metrics::RequestStatus::kCancelled;
  t.error_category = "imported";
  t.error_message = error.value_or(status);
  return t;
}

/// GuideLLM stamps requests with time.time(): seconds since the epoch.
constexpr double kMaxClockS = 1e10;
constexpr const char* kStatuses[] = {"successful", "incomplete", "errored"};

/// load: the benchmark's scheduling strategy.
LoadSection load_of(const Doc& s, std::uint64_t total) {
  const std::string type = s.string("type_");
  LoadSection l;
  l.imported = true;
  l.requests = total;
  const auto cap = s.opt_count("max_concurrency");
  if (type == "synchronous") {
    l.concurrency = 1;
  } else if (type == "concurrent") {
    const std::int64_t streams = s.count("streams");
    if (streams < 1) s.fail(s.at("streams"), "expected at least 1");
    l.concurrency = static_cast<std::uint64_t>(streams);
  } else if (type == "throughput" || type == "constant" || type == "poisson") {
    if (cap && *cap > 0) l.concurrency = static_cast<std::uint64_t>(*cap);
    if (type != "throughput") {
      const double rate = s.number("rate");
      if (rate <= 0) s.fail(s.at("rate"), "expected a positive number of requests per second");
      l.rate_per_s = rate;
      l.arrival = type;
    }
  } else {
    s.fail(s.at("type_"), "'" + type +
                              "': expected synchronous, concurrent, throughput, constant or "
                              "poisson");
  }
  return l;
}

/// One request of status `status` as a trace; times from `origin` (the earliest start).
metrics::Trace trace_of(const Doc& q, const std::string& status, std::size_t index, double origin) {
  metrics::Trace t;
  t.index = index;
  t.request_id = q.opt_string("request_id").value_or(std::to_string(index));
  const double start = q.seconds(q.need("start_time"), q.at("start_time"), kMaxClockS);
  const double end = q.seconds(q.need("end_time"), q.at("end_time"), kMaxClockS);
  if (end < start) q.fail(q.at("end_time"), "is before start_time");
  t.sent_ns = seconds_to_ns(start - origin);
  t.input_tokens = q.tokens(q.need("prompt_tokens"), q.at("prompt_tokens"));
  if (status != "successful") return unsuccessful(std::move(t), status, q.opt_string("error"));
  const double first = q.seconds(q.need("first_token_time"), q.at("first_token_time"), kMaxClockS);
  const double last = q.seconds(q.need("last_token_time"), q.at("last_token_time"), kMaxClockS);
  if (first < start) q.fail(q.at("first_token_time"), "is before start_time");
  if (last < first) q.fail(q.at("last_token_time"), "is before first_token_time");
  if (end < last) q.fail(q.at("end_time"), "is before last_token_time");
  // Only the first and last token times: no per-token event times are invented.
  t.first_token_ns = seconds_to_ns(first - origin);
  t.first_content_ns = t.first_token_ns;
  t.last_token_ns = seconds_to_ns(last - origin);
  t.done_ns = seconds_to_ns(end - origin);
  t.output_tokens = q.tokens(q.need("output_tokens"), q.at("output_tokens"));
  t.token_count_source = metrics::TokenCountSource::kTokenizer;
  if (const auto text = q.opt_string("output")) t.output_text = *text;
  return t;
}

/// The api the requests' request_type names (all the same).
std::string api_of(const Doc& b, const std::vector<std::pair<Doc, std::string>>& requests) {
  std::optional<std::string> api;
  for (const auto& [q, status] : requests) {
    const std::string type = q.string("request_type");
    std::string a;
    if (type == "chat_completions")
      a = "chat";
    else if (type == "text_completions")
      a = "completions";
    else
      q.fail(q.at("request_type"), "'" + type + "': expected chat_completions or text_completions");
    if (api && *api != a) q.fail(q.at("request_type"), "differs from the other requests'");
    api = a;
  }
  if (!api) {
    b.fail(b.at("requests"),
           "no request listed: the report does not say the endpoint (chat or "
           "completions)");
  }
  return *api;
}

/// summary_only: the counts, and the means whose definitions match dyno's (GuideLLM's
/// percentiles are not numpy's linear ones; docs/interop.md).
metrics::Summary summary_of(const Doc& b, std::int64_t ok, std::int64_t failed) {
  metrics::Summary s;
  set_request_counts(s, static_cast<std::uint64_t>(ok), static_cast<std::uint64_t>(failed));
  const Doc m = b.child("metrics");
  const auto mean_of = [&](const char* key) -> std::optional<double> {
    if (m.find(key) == nullptr) return std::nullopt;
    const Doc k = m.child(key);
    if (k.find("successful") == nullptr) return std::nullopt;
    return k.child("successful").opt_number("mean");
  };
  if (ok > 0) {
    if (const auto ttft = mean_of("time_to_first_token_ms")) {
      s.ttft_ms.mean = *ttft;
      s.ttft_ms.count = static_cast<std::size_t>(ok);
    }
    if (const auto e2e = mean_of("request_latency")) {  // seconds
      s.e2e_ms.mean = *e2e * 1000.0;
      s.e2e_ms.count = static_cast<std::size_t>(ok);
    }
  }
  return s;
}

json::object file_fields(const Doc& b) {
  json::object f;
  for (const char* key : {"id_", "run_id", "start_time", "end_time", "args", "request_totals"}) {
    if (const json::value* v = b.raw().if_contains(key)) f[key] = *v;
  }
  if (const json::object* w = b.opt_object("worker")) {
    for (const char* key : {"backend_type", "backend_target", "backend_model"}) {
      if (const json::value* v = w->if_contains(key)) f[std::string("worker.") + key] = *v;
    }
  }
  return f;
}

ImportedResult benchmark_of(const Doc& b, std::size_t i) {
  if (b.find("config") != nullptr || b.find("scheduler_metrics") != nullptr) {
    b.fail(b.path(),
           "a benchmark in the layout of GuideLLM 0.4 or later (config, "
           "scheduler_metrics) in a report whose first benchmark has the layout of 0.2 and 0.3");
  }
  ImportedResult r;
  r.source.tool = kGuideLlmTool;
  r.source.format = "guidellm";
  r.source.part = "$.benchmarks[" + std::to_string(i) + "]";
  r.source.file_fields = file_fields(b);
  if (const json::object* w = b.opt_object("worker")) {
    const Doc wd(*w, b.file(), b.at("worker"), "a GuideLLM benchmark");
    if (const auto model = wd.opt_string("backend_model"); model && *model != "None") {
      r.model_id = *model;
    }
  }
  const Doc totals = b.child("request_totals");
  std::int64_t n[3];
  for (int k = 0; k < 3; ++k) n[k] = totals.count(kStatuses[k]);
  const Doc lists = b.child("requests");
  std::vector<std::pair<Doc, std::string>> requests;
  bool sampled = false;
  for (int k = 0; k < 3; ++k) {
    const json::array* a = lists.opt_array(kStatuses[k]);
    if (a == nullptr) lists.fail(lists.at(kStatuses[k]), "missing (a GuideLLM benchmark has it)");
    if (static_cast<std::int64_t>(a->size()) > n[k]) {
      lists.fail(lists.at(kStatuses[k]), "lists " + std::to_string(a->size()) +
                                             " requests, more than request_totals." + kStatuses[k] +
                                             " (" + std::to_string(n[k]) + ")");
    }
    sampled = sampled || static_cast<std::int64_t>(a->size()) < n[k];
    for (std::size_t j = 0; j < a->size(); ++j) {
      requests.emplace_back(lists.element(*a, j, lists.at(kStatuses[k])), kStatuses[k]);
    }
  }
  r.api = api_of(b, requests);
  const std::int64_t total = b.add(b.add(n[0], n[1], totals.path()), n[2], totals.path());
  r.load = load_of(b.child("args").child("strategy"), static_cast<std::uint64_t>(total));
  r.requests = static_cast<std::uint64_t>(total);
  r.status = n[0] == 0 ? "failed" : n[2] > 0 ? "partial" : "ok";
  if (sampled) {  // a sample of the requests: figures over the window would be the sample's
    r.source.timing = "summary_only";
    r.summary = summary_of(b, n[0], n[2]);
    r.summary.requests_cancelled = static_cast<std::uint64_t>(n[1]);
    // The report's token totals are over its sample: the run's totals are not in the file.
    r.absent_counts = {"tokens.input_total", "tokens.output_total"};
    return r;
  }
  double origin = kMaxClockS;
  for (const auto& [q, status] : requests) {
    origin = std::min(origin, q.seconds(q.need("start_time"), q.at("start_time"), kMaxClockS));
  }
  for (std::size_t k = 0; k < requests.size(); ++k) {
    r.traces.push_back(trace_of(requests[k].first, requests[k].second, k, origin));
  }
  r.source.timing = "shared_clock";
  return r;
}

// ---- GuideLLM 0.4 and later: a benchmark's `config`, `scheduler_metrics`, requests'
// `info.timings` (guidellm/benchmark/schemas, guidellm/schemas/request_stats.py, info.py).

/// The layout of a 0.4+ report: its schema (0: GuideLLM 0.4, no `metadata`; 1: 0.5 and 0.6;
/// 2: 0.7 and later), what source.tool_version says, the api a schema-2 report names once.
struct Layout {
  std::int64_t schema = 0;
  std::string tool_version;
  std::optional<std::string> api;
  std::optional<std::string> model;
  json::object metadata;
};

/// schema 2: the endpoint `$.config.spec.backend.request_format` names (requests no longer
/// carry `request_type`).
std::string api_of_format(const Doc& top) {
  const Doc backend = top.child("config").child("spec").child("backend");
  const std::string format = backend.string("request_format");
  if (format == "/v1/chat/completions") return "chat";
  if (format == "/v1/completions") return "completions";
  backend.fail(backend.at("request_format"),
               "'" + format + "': expected /v1/chat/completions or /v1/completions");
}

Layout layout_of(const Doc& top) {
  Layout l;
  if (top.find("args") != nullptr) l.model = top.child("args").opt_string("model");  // 0.4-0.6
  if (top.find("metadata") == nullptr) {
    l.tool_version = "0.4";
    return l;
  }
  const Doc m = top.child("metadata");
  l.schema = m.count("version");
  if (l.schema != 1 && l.schema != 2) {
    m.fail(m.at("version"), std::to_string(l.schema) +
                                ": a report schema version dyno does not know; it reads 1 "
                                "(GuideLLM 0.5, 0.6), 2 (GuideLLM 0.7 and later) and reports "
                                "without metadata (GuideLLM 0.2 to 0.4)");
  }
  const auto package = m.opt_string("guidellm_version");
  l.tool_version = (package ? *package + " " : std::string()) + "(report schema " +
                   std::to_string(l.schema) + ")";
  l.metadata = m.raw();
  if (l.schema == 2) {
    l.api = api_of_format(top);
    l.model = top.child("config").child("spec").child("backend").opt_string("model");
  }
  if (l.model && l.model->empty()) l.model.reset();
  return l;
}

/// A time of `timings` (seconds since the epoch), or nullopt when absent or null.
std::optional<double> opt_time(const Doc& t, const char* key) {
  const json::value* v = t.find(key);
  if (v == nullptr) return std::nullopt;
  return t.seconds(*v, t.at(key), kMaxClockS);
}

/// The token count `metrics.total_tokens` (input_metrics, output_metrics), or nullopt.
std::optional<std::int64_t> opt_tokens(const Doc& q, const char* key) {
  if (q.find(key) == nullptr) return std::nullopt;
  const Doc m = q.child(key);
  if (m.find("total_tokens") == nullptr) return std::nullopt;
  return m.tokens(m.need("total_tokens"), m.at("total_tokens"));
}

/// One 0.4+ request as a trace: its `info.timings` from `origin`.
metrics::Trace trace_v4_of(const Doc& q, const std::string& status, std::size_t index,
                           double origin, metrics::TokenCountSource source) {
  metrics::Trace t;
  t.index = index;
  t.request_id = q.string("request_id");
  const Doc info = q.child("info");
  const Doc tm = info.child("timings");
  const double start = tm.seconds(tm.need("request_start"), tm.at("request_start"), kMaxClockS);
  t.sent_ns = seconds_to_ns(start - origin);
  t.input_tokens = opt_tokens(q, "input_metrics");
  if (status != "successful") {
    return unsuccessful(std::move(t), status, info.opt_string("error"));
  }
  const double end = tm.seconds(tm.need("request_end"), tm.at("request_end"), kMaxClockS);
  if (end < start) tm.fail(tm.at("request_end"), "is before request_start");
  t.done_ns = seconds_to_ns(end - origin);
  // The first and last token times only: no per-token times are invented.
  const double first =
      tm.seconds(tm.need("first_token_iteration"), tm.at("first_token_iteration"), kMaxClockS);
  const double last =
      tm.seconds(tm.need("last_token_iteration"), tm.at("last_token_iteration"), kMaxClockS);
  if (first < start) tm.fail(tm.at("first_token_iteration"), "is before request_start");
  if (last < first) tm.fail(tm.at("last_token_iteration"), "is before first_token_iteration");
  if (end < last) tm.fail(tm.at("request_end"), "is before last_token_iteration");
  t.first_token_ns = seconds_to_ns(first - origin);
  t.last_token_ns = seconds_to_ns(last - origin);
  t.first_content_ns = t.first_token_ns;
  if (const auto content = opt_time(tm, "first_output_token_iteration")) {  // schema 2
    if (*content < first || *content > last) {
      tm.fail(tm.at("first_output_token_iteration"),
              "is outside first_token_iteration..last_token_iteration");
    }
    t.first_content_ns = seconds_to_ns(*content - origin);
  }
  t.output_tokens = opt_tokens(q, "output_metrics");
  if (t.output_tokens) t.token_count_source = source;
  if (const auto text = q.opt_string("output")) t.output_text = *text;
  return t;
}

json::object file_fields_v4(const Doc& b, const Layout& l) {
  json::object f;
  const Doc c = b.child("config");
  for (const char* key : {"id_", "run_id", "run_index", "strategy", "sample_size",
                          "sample_requests", "prefer_response_metrics"}) {
    if (const json::value* v = c.raw().if_contains(key)) f[std::string("config.") + key] = *v;
  }
  const Doc sm = b.child("scheduler_metrics");
  for (const char* key : {"measure_start_time", "measure_end_time", "requests_made"}) {
    if (const json::value* v = sm.raw().if_contains(key)) {
      f[std::string("scheduler_metrics.") + key] = *v;
    }
  }
  f["metrics.request_totals"] = b.child("metrics").child("request_totals").raw();
  for (const auto& [key, v] : l.metadata) f["metadata." + std::string(key)] = v;
  return f;
}

/// The requests of a 0.4+ benchmark: each with its status, and whether they are a sample.
struct Requests {
  std::vector<std::pair<Doc, std::string>> list;
  std::int64_t n[3] = {0, 0, 0};
  bool sampled = false;
};

Requests requests_v4_of(const Doc& b) {
  Requests rq;
  const Doc totals = b.child("metrics").child("request_totals");
  const Doc lists = b.child("requests");
  for (int k = 0; k < 3; ++k) {
    rq.n[k] = totals.count(kStatuses[k]);
    const json::array* a = lists.opt_array(kStatuses[k]);
    if (a == nullptr) lists.fail(lists.at(kStatuses[k]), "missing (a GuideLLM benchmark has it)");
    if (static_cast<std::int64_t>(a->size()) > rq.n[k]) {
      lists.fail(lists.at(kStatuses[k]), "lists " + std::to_string(a->size()) +
                                             " requests, more than metrics.request_totals." +
                                             kStatuses[k] + " (" + std::to_string(rq.n[k]) + ")");
    }
    rq.sampled = rq.sampled || static_cast<std::int64_t>(a->size()) < rq.n[k];
    for (std::size_t j = 0; j < a->size(); ++j) {
      rq.list.emplace_back(lists.element(*a, j, lists.at(kStatuses[k])), kStatuses[k]);
    }
  }
  return rq;
}

ImportedResult benchmark_v4_of(const Doc& b, std::size_t i, const Layout& l) {
  ImportedResult r;
  r.source.tool = kGuideLlmTool;
  r.source.tool_version = l.tool_version;
  r.source.format = "guidellm";
  r.source.part = "$.benchmarks[" + std::to_string(i) + "]";
  if (b.find("config") == nullptr)
    b.fail(b.at("config"), "missing (a GuideLLM 0.4+ benchmark has it)");
  r.source.file_fields = file_fields_v4(b, l);
  if (l.model) r.model_id = *l.model;
  const Doc config = b.child("config");
  const Requests rq = requests_v4_of(b);
  r.api = l.api ? *l.api : api_of(b, rq.list);
  const std::string totals_path = b.at("metrics") + ".request_totals";
  const std::int64_t total = b.add(b.add(rq.n[0], rq.n[1], totals_path), rq.n[2], totals_path);
  r.load = load_of(config.child("strategy"), static_cast<std::uint64_t>(total));
  r.requests = static_cast<std::uint64_t>(total);
  r.status = rq.n[0] == 0 ? "failed" : rq.n[2] > 0 ? "partial" : "ok";
  if (rq.sampled) {  // a sample: only the counts (docs/interop.md: why no means)
    r.source.timing = "summary_only";
    set_request_counts(r.summary, static_cast<std::uint64_t>(rq.n[0]),
                       static_cast<std::uint64_t>(rq.n[2]));
    r.summary.requests_cancelled = static_cast<std::uint64_t>(rq.n[1]);
    r.absent_counts = {"tokens.input_total", "tokens.output_total"};
    return r;
  }
  bool usage = true;
  if (const json::value* p = config.find("prefer_response_metrics")) {
    if (!p->is_bool()) config.fail(config.at("prefer_response_metrics"), "expected true or false");
    usage = p->get_bool();
  }
  double origin = kMaxClockS;
  for (const auto& [q, status] : rq.list) {
    const Doc tm = q.child("info").child("timings");
    origin =
        std::min(origin, tm.seconds(tm.need("request_start"), tm.at("request_start"), kMaxClockS));
  }
  for (std::size_t k = 0; k < rq.list.size(); ++k) {
    r.traces.push_back(trace_v4_of(
        rq.list[k].first, rq.list[k].second, k, origin,
        usage ? metrics::TokenCountSource::kUsage : metrics::TokenCountSource::kTokenizer));
  }
  r.source.timing = "shared_clock";
  return r;
}

}  // namespace

std::vector<ImportedResult> read_guidellm(const std::string& bytes, const std::string& file_name) {
  json::value v = parse_one_json(
      bytes, file_name, "the JSON report `guidellm benchmark --output-path x.json` writes");
  if (!v.is_object()) throw ImportFileError(file_name + ": $: expected a JSON object");
  const Doc top(v.get_object(), file_name, "$", "a GuideLLM report");
  std::optional<Layout> layout;
  if (top.find("metadata") != nullptr) layout = layout_of(top);
  const json::array* benchmarks = top.opt_array("benchmarks");
  if (benchmarks == nullptr) top.fail("$.benchmarks", "missing (a GuideLLM report has it)");
  if (!layout && !benchmarks->empty()) {  // GuideLLM 0.4: no metadata, benchmarks with config
    const Doc first = top.element(*benchmarks, 0, "$.benchmarks");
    if (first.find("config") != nullptr || first.find("scheduler_metrics") != nullptr) {
      layout = layout_of(top);
    }
  }
  std::vector<ImportedResult> out;
  for (std::size_t i = 0; i < benchmarks->size(); ++i) {
    const Doc b = top.element(*benchmarks, i, "$.benchmarks");
    out.push_back(layout ? benchmark_v4_of(b, i, *layout) : benchmark_of(b, i));
  }
  return out;
}

}  // namespace dyno::interop
