#include "interop/import_vllm.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "interop/import_json.h"

namespace dyno::interop {

using record::LoadSection;

namespace json = boost::json;

namespace {

using Doc = ImportDoc;

json::object parse_top(const std::string& bytes, const std::string& file) {
  json::value v =
      parse_one_json(bytes, file,
                     "a single JSON object, the one `vllm bench serve --save-result` writes (an "
                     "--append-result file holds one result a line)");
  if (!v.is_object()) throw ImportFileError(file + ": $: expected a JSON object");
  return std::move(v.get_object());
}

/// The endpoint a vLLM backend name stands for.
std::string api_of(const Doc& d, const std::string& backend) {
  if (backend == "openai-chat") return "chat";
  if (backend == "vllm" || backend == "openai") return "completions";
  d.fail("$.backend", "'" + backend +
                          "': expected vllm, openai (completions) or openai-chat (chat): dyno "
                          "records OpenAI chat and completions runs only");
}

/// A distribution from the tool's mean/median/p<N> keys of `metric` (e.g. "ttft"), in ms.
metrics::Distribution mapped_distribution(const Doc& d, const std::string& metric,
                                          std::size_t count) {
  metrics::Distribution out;
  const auto key = [&](const std::string& k) { return d.opt_number(k.c_str()); };
  out.mean = key("mean_" + metric + "_ms");
  out.p50 = key("median_" + metric + "_ms");
  out.p90 = key("p90_" + metric + "_ms");
  out.p95 = key("p95_" + metric + "_ms");
  out.p99 = key("p99_" + metric + "_ms");
  out.p999 = key("p99.9_" + metric + "_ms");
  if (out.p50 && out.p95) out.jitter = *out.p95 - *out.p50;
  const bool any = out.mean || out.p50 || out.p90 || out.p95 || out.p99 || out.p999;
  if (any) out.count = count;
  return out;
}

metrics::Summary summary_only(const Doc& d, std::int64_t completed, std::int64_t failed) {
  metrics::Summary s;
  set_request_counts(s, static_cast<std::uint64_t>(completed), static_cast<std::uint64_t>(failed));
  s.input_tokens_total = d.token_total("total_input_tokens", completed);
  s.output_tokens_total = d.token_total("total_output_tokens", completed);
  if (completed > 0) {
    s.token_count_sources["tokenizer"] = static_cast<std::uint64_t>(completed);
    s.ttft_ms = mapped_distribution(d, "ttft", static_cast<std::size_t>(completed));
    s.e2e_ms = mapped_distribution(d, "e2el", static_cast<std::size_t>(completed));
  }
  return s;
}

/// The largest send time (vLLM's clock is time.perf_counter: seconds since an arbitrary
/// point, such as boot); the longest time within a request is kMaxImportedRequestS.
constexpr double kMaxClockS = 1e9;

/// The per-request arrays, each checked to hold `n` elements.
struct Arrays {
  const json::array* input_lens = nullptr;
  const json::array* output_lens = nullptr;
  const json::array* ttfts = nullptr;
  const json::array* itls = nullptr;
  const json::array* errors = nullptr;
  const json::array* start_times = nullptr;
  const json::array* latencies = nullptr;
  const json::array* queue_times = nullptr;
  const json::array* texts = nullptr;
};

Arrays read_arrays(const Doc& d) {
  Arrays a{d.opt_array("input_lens"), d.opt_array("output_lens"), d.opt_array("ttfts"),
           d.opt_array("itls"),       d.opt_array("errors"),      d.opt_array("start_times"),
           d.opt_array("latencies"),  d.opt_array("queue_times"), d.opt_array("generated_texts")};
  const std::vector<std::pair<const char*, const json::array*>> needed{
      {"input_lens", a.input_lens},
      {"output_lens", a.output_lens},
      {"ttfts", a.ttfts},
      {"itls", a.itls},
      {"errors", a.errors}};
  bool any = false;
  for (const auto& [name, arr] : needed) any = any || arr != nullptr;
  if (!any) return Arrays{};
  for (const auto& [name, arr] : needed) {
    if (arr == nullptr) {
      d.fail(std::string("$.") + name,
             "missing: a result saved with --save-detailed has input_lens, output_lens, ttfts, "
             "itls and errors together");
    }
  }
  const std::size_t n = a.errors->size();
  const std::vector<std::pair<const char*, const json::array*>> all{{"input_lens", a.input_lens},
                                                                    {"output_lens", a.output_lens},
                                                                    {"ttfts", a.ttfts},
                                                                    {"itls", a.itls},
                                                                    {"start_times", a.start_times},
                                                                    {"latencies", a.latencies},
                                                                    {"queue_times", a.queue_times},
                                                                    {"generated_texts", a.texts}};
  for (const auto& [name, arr] : all) {
    if (arr != nullptr && arr->size() != n) {
      d.fail(std::string("$.") + name, "holds " + std::to_string(arr->size()) +
                                           " elements; expected " + std::to_string(n) +
                                           " (one per request, as $.errors)");
    }
  }
  return a;
}

/// One request as a trace. `origin`: the earliest arrival (start − queue time) on the tool's
/// clock when the file has start_times; nullopt: the request's times from its own send.
metrics::Trace trace_of(const Doc& d, const Arrays& a, std::size_t i,
                        std::optional<double> origin) {
  const std::string at = "[" + std::to_string(i) + "]";
  metrics::Trace t;
  t.index = i;
  t.request_id = std::to_string(i);
  const json::value& err = a.errors->at(i);
  if (!err.is_null() && !err.is_string()) d.fail("$.errors" + at, "expected a string or null");
  const bool ok = err.is_null() || err.get_string().empty();
  std::int64_t sent = 0;
  if (origin) {
    sent =
        seconds_to_ns(d.seconds(a.start_times->at(i), "$.start_times" + at, kMaxClockS) - *origin);
    if (a.queue_times != nullptr) {
      const double q = d.seconds(a.queue_times->at(i), "$.queue_times" + at, kMaxImportedRequestS);
      t.scheduled_ns = std::max<std::int64_t>(0, sent - seconds_to_ns(q));
    }
  }
  t.sent_ns = sent;
  t.input_tokens = d.tokens(a.input_lens->at(i), "$.input_lens" + at);
  const std::int64_t out = d.tokens(a.output_lens->at(i), "$.output_lens" + at);
  const double ttft = d.seconds(a.ttfts->at(i), "$.ttfts" + at, kMaxImportedRequestS);
  const json::value& itl = a.itls->at(i);
  if (!itl.is_array()) d.fail("$.itls" + at, "expected an array of seconds");
  if (a.texts != nullptr) {
    const json::value& text = a.texts->at(i);
    if (!text.is_string()) d.fail("$.generated_texts" + at, "expected a string");
    if (ok) t.output_text = std::string(text.get_string());
  }
  if (!ok) {
    t.status = metrics::RequestStatus::kError;
    t.error_category = "imported";
    t.error_message = std::string(err.get_string());
    return t;
  }
  t.output_tokens = out;
  t.token_count_source = metrics::TokenCountSource::kTokenizer;
  double elapsed = ttft;
  t.event_times_ns.push_back(sent + seconds_to_ns(elapsed));
  const json::array& gaps = itl.get_array();
  for (std::size_t k = 0; k < gaps.size(); ++k) {
    const std::string where = "$.itls" + at + "[" + std::to_string(k) + "]";
    elapsed += d.seconds(gaps[k], where, kMaxImportedRequestS);
    if (elapsed > kMaxImportedRequestS)
      d.fail(where, "the request's times add up past 1e7 seconds");
    t.event_times_ns.push_back(sent + seconds_to_ns(elapsed));
  }
  t.first_token_ns = t.event_times_ns.front();
  t.first_content_ns = t.first_token_ns;
  t.last_token_ns = t.event_times_ns.back();
  if (a.latencies != nullptr) {
    const double latency = d.seconds(a.latencies->at(i), "$.latencies" + at, kMaxImportedRequestS);
    // The tool's latency and its token times come from one clock: only rounding to whole
    // nanoseconds can put the end before the last token.
    t.done_ns = std::max(sent + seconds_to_ns(latency), *t.last_token_ns);
  }
  return t;
}

std::vector<metrics::Trace> traces_of(const Doc& d, const Arrays& a) {
  const std::size_t n = a.errors->size();
  std::optional<double> origin;
  if (a.start_times != nullptr) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::string at = "[" + std::to_string(i) + "]";
      double arrival = d.seconds(a.start_times->at(i), "$.start_times" + at, kMaxClockS);
      if (a.queue_times != nullptr) {
        arrival -= d.seconds(a.queue_times->at(i), "$.queue_times" + at, kMaxImportedRequestS);
      }
      origin = origin ? std::min(*origin, arrival) : arrival;
    }
  }
  std::vector<metrics::Trace> traces;
  traces.reserve(n);
  for (std::size_t i = 0; i < n; ++i) traces.push_back(trace_of(d, a, i, origin));
  return traces;
}

LoadSection load_of(const Doc& d, std::int64_t num_prompts) {
  LoadSection l;
  l.imported = true;
  l.requests = static_cast<std::uint64_t>(num_prompts);
  if (const auto c = d.opt_count("max_concurrency"); c && *c > 0) {
    l.concurrency = static_cast<std::uint64_t>(*c);
  }
  const json::value* rate = d.find("request_rate");
  const bool ramp = d.find("ramp_up_strategy") != nullptr;
  if (rate != nullptr && !(rate->is_string() && rate->get_string() == "inf")) {
    const double r = d.number(*rate, "$.request_rate");
    if (r <= 0) d.fail("$.request_rate", "expected a positive number or \"inf\"");
    if (!ramp) {  // a ramp's rate changes during the run: no single rate stands for it
      l.rate_per_s = r;
      l.burstiness = d.opt_number("burstiness").value_or(1.0);
      l.arrival = *l.burstiness == 1.0 ? "poisson" : "gamma";
    }
  }
  return l;
}

/// The file's own settings, kept verbatim in manifest source.file_fields.
json::object file_fields(const Doc& d) {
  json::object f;
  for (const char* key : {"date", "backend", "endpoint_type", "label", "model_id", "tokenizer_id",
                          "num_prompts", "request_rate", "burstiness", "max_concurrency",
                          "ramp_up_strategy", "ramp_up_start_rps", "ramp_up_end_rps"}) {
    if (const json::value* v = d.raw().if_contains(key)) f[key] = *v;
  }
  return f;
}

}  // namespace

ImportedResult read_vllm_bench(const std::string& bytes, const std::string& file_name) {
  const json::object top = parse_top(bytes, file_name);
  const Doc d(top, file_name, "$", "a vllm-bench result");
  ImportedResult r;
  r.source.tool = kVllmBenchTool;
  r.source.format = "vllm-bench";
  r.source.file_fields = file_fields(d);
  const std::string backend = d.string("backend");
  r.api = api_of(d, backend);
  r.model_id = d.string("model_id");
  r.label = d.opt_string("label");
  const std::int64_t num_prompts = d.count("num_prompts");
  if (num_prompts < 1) d.fail("$.num_prompts", "expected at least 1");
  const double duration = d.number(d.need("duration"), "$.duration");
  if (duration <= 0) d.fail("$.duration", "expected a positive number of seconds");
  const std::int64_t completed = d.count("completed");
  // vLLM counts completed requests' tokens only; a total is at most that many requests' worth.
  (void)d.token_total("total_input_tokens", completed);
  (void)d.token_total("total_output_tokens", completed);
  if (completed > num_prompts) {
    d.fail("$.completed", "is " + std::to_string(completed) + ", more than $.num_prompts (" +
                              std::to_string(num_prompts) + ")");
  }
  r.load = load_of(d, num_prompts);

  const Arrays a = read_arrays(d);
  std::int64_t failed = d.opt_count("failed").value_or(num_prompts - completed);
  // Every prompt vLLM sent ends completed or failed: the counts must say the same.
  if (d.add(completed, failed, "$.failed") != num_prompts) {
    d.fail("$.failed", "is " + std::to_string(failed) + "; with $.completed (" +
                           std::to_string(completed) + ") expected $.num_prompts (" +
                           std::to_string(num_prompts) + ") requests");
  }
  if (a.errors != nullptr && a.errors->size() != static_cast<std::size_t>(num_prompts)) {
    d.fail("$.num_prompts", "is " + std::to_string(num_prompts) +
                                ", but the per-request arrays "
                                "hold " +
                                std::to_string(a.errors->size()) +
                                " requests ($.errors); one of them is not this run's");
  }
  if (a.errors != nullptr) {
    r.traces = traces_of(d, a);
    const auto ok = std::count_if(r.traces.begin(), r.traces.end(),
                                  [](const metrics::Trace& t) { return t.ok(); });
    if (ok != completed) {
      d.fail("$.errors", std::to_string(ok) + " requests have no error; expected $.completed (" +
                             std::to_string(completed) + ")");
    }
    failed = static_cast<std::int64_t>(r.traces.size()) - ok;
    r.source.timing = a.start_times != nullptr ? "shared_clock" : "per_request";
  } else {
    r.summary = summary_only(d, completed, failed);
    r.source.timing = "summary_only";
  }
  r.requests = static_cast<std::uint64_t>(num_prompts);
  r.status = completed == 0 ? "failed" : failed > 0 ? "partial" : "ok";
  return r;
}

}  // namespace dyno::interop
