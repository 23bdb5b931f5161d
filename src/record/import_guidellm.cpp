#include "record/import_guidellm.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "record/import_json.h"

namespace dyno::record {

namespace json = boost::json;

namespace {

using Doc = ImportDoc;

/// GuideLLM stamps requests with time.time(): seconds since the epoch.
constexpr double kMaxClockS = 1e10;
constexpr const char* kStatuses[] = {"successful", "incomplete", "errored"};

/// The layouts GuideLLM ≥ 0.4 writes (a report `metadata`, a benchmark's `config` and
/// `scheduler_metrics`, per-request `info.timings`) are refused by name, not misread.
void refuse_newer(const Doc& top) {
  if (const json::value* m = top.raw().if_contains("metadata")) {
    std::string version = "unknown";
    if (m->is_object()) {
      if (const json::value* v = m->get_object().if_contains("version"))
        version = json::serialize(*v);
    }
    top.fail("$.metadata", "a report of schema version " + version +
                               " (GuideLLM 0.5 or later): dyno reads the layout of GuideLLM 0.2 "
                               "and 0.3 (no metadata) only");
  }
}

/// load: the benchmark's scheduling strategy.
LoadSection load_of(const Doc& b, std::uint64_t total) {
  const Doc s = b.child("args").child("strategy");
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
  t.input_tokens = q.count("prompt_tokens");
  if (status != "successful") {
    t.status =
        status == "errored" ? metrics::RequestStatus::kError : metrics::RequestStatus::kCancelled;
    t.error_category = "imported";
    t.error_message = q.opt_string("error").value_or(status);
    return t;
  }
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
  t.output_tokens = q.count("output_tokens");
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
           "scheduler_metrics): dyno reads the layout of GuideLLM 0.2 and 0.3 only");
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
  const std::int64_t total = n[0] + n[1] + n[2];
  r.load = load_of(b, static_cast<std::uint64_t>(total));
  r.requests = static_cast<std::uint64_t>(total);
  r.status = n[0] == 0 ? "failed" : n[2] > 0 ? "partial" : "ok";
  if (sampled) {  // a sample of the requests: figures over the window would be the sample's
    r.source.timing = "summary_only";
    r.summary = summary_of(b, n[0], n[2]);
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

}  // namespace

std::vector<ImportedResult> read_guidellm(const std::string& bytes, const std::string& file_name) {
  json::value v = parse_one_json(
      bytes, file_name, "the JSON report `guidellm benchmark --output-path x.json` writes");
  if (!v.is_object()) throw ImportFileError(file_name + ": $: expected a JSON object");
  const Doc top(v.get_object(), file_name, "$", "a GuideLLM report");
  refuse_newer(top);
  const json::array* benchmarks = top.opt_array("benchmarks");
  if (benchmarks == nullptr) top.fail("$.benchmarks", "missing (a GuideLLM report has it)");
  std::vector<ImportedResult> out;
  for (std::size_t i = 0; i < benchmarks->size(); ++i) {
    out.push_back(benchmark_of(top.element(*benchmarks, i, "$.benchmarks"), i));
  }
  return out;
}

}  // namespace dyno::record
