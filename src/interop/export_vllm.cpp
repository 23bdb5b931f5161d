#include "interop/export_vllm.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <cmath>
#include <iterator>
#include <numeric>

#include "metrics/stats.h"

namespace dyno::interop {

using record::Manifest;

namespace json = boost::json;

namespace {

double seconds_of(std::int64_t ns) { return static_cast<double>(ns) / 1e9; }

json::value num(std::optional<double> v) {
  if (!v || !std::isfinite(*v)) return nullptr;
  return *v;
}

[[noreturn]] void refuse(const std::string& run_id, const metrics::Trace& t,
                         const std::string& what) {
  throw ExportError("run " + run_id + ": request " + std::to_string(t.index) + " (" + t.request_id +
                    "): " + what + "; vLLM's per-request arrays need it");
}

/// The gaps between consecutive token events, in seconds (vLLM's itl).
std::vector<double> gaps_s(const metrics::Trace& t) {
  std::vector<double> gaps;
  if (t.event_times_ns.empty()) return gaps;
  gaps.reserve(t.event_times_ns.size() - 1);
  std::int64_t prev = t.event_times_ns.front();
  for (auto it = std::next(t.event_times_ns.begin()); it != t.event_times_ns.end(); ++it) {
    gaps.push_back(seconds_of(*it - prev));
    prev = *it;
  }
  return gaps;
}

/// A completed request in vLLM's terms.
void add_completed(VllmRequests& r, const metrics::Trace& t, const std::string& run_id) {
  if (!t.sent_ns || !t.first_token_ns || !t.done_ns) {
    refuse(run_id, t, "a completed request without its send, first-token or end time");
  }
  if (!t.input_tokens || !t.output_tokens) {
    refuse(run_id, t, "a completed request without its input or output token count");
  }
  if (t.event_times_ns.empty()) {
    refuse(run_id, t,
           "no token event times (chunk_times_ns: the run was recorded with --no-chunk-times)");
  }
  r.ok.push_back(true);
  r.input_lens.push_back(*t.input_tokens);
  r.output_lens.push_back(*t.output_tokens);
  r.ttfts.push_back(seconds_of(*t.first_token_ns - *t.sent_ns));
  r.itls.push_back(gaps_s(t));
  r.latencies.push_back(seconds_of(*t.done_ns - *t.sent_ns));
  r.start_times.push_back(seconds_of(*t.sent_ns));
  r.errors.emplace_back();
}

/// A failed request as vLLM writes one: what it measured before failing, 0 where it has
/// nothing (its defaults), output_len and latency 0; the error text names dyno's category.
void add_failed(VllmRequests& r, const metrics::Trace& t, const std::string& run_id) {
  const std::optional<std::int64_t> start = t.sent_ns ? t.sent_ns : t.scheduled_ns;
  if (!start) refuse(run_id, t, "a failed request without its send or schedule time");
  r.ok.push_back(false);
  r.input_lens.push_back(t.input_tokens.value_or(0));
  r.output_lens.push_back(0);
  r.ttfts.push_back(t.first_token_ns ? seconds_of(*t.first_token_ns - *start) : 0.0);
  r.itls.push_back(gaps_s(t));
  r.latencies.push_back(0.0);
  r.start_times.push_back(seconds_of(*start));
  const std::string category = t.error_category.empty() ? "unknown" : t.error_category;
  r.errors.push_back(t.error_message.empty() ? category : category + ": " + t.error_message);
}

json::array doubles(const std::vector<double>& v) {
  json::array a;
  a.reserve(v.size());
  for (double d : v) a.emplace_back(d);
  return a;
}

json::array counts(const std::vector<std::int64_t>& v) {
  json::array a;
  a.reserve(v.size());
  for (std::int64_t n : v) a.emplace_back(n);
  return a;
}

json::array strings(const std::vector<std::string>& v) {
  json::array a;
  a.reserve(v.size());
  for (const std::string& s : v) a.emplace_back(s);
  return a;
}

/// vLLM's max_output_tokens_per_s and max_concurrent_requests over the completed requests:
/// token-bearing events counted in whole-second buckets from the earliest start, and the peak
/// of requests in flight over half-open [start, start + latency) intervals.
std::pair<std::optional<double>, std::optional<std::int64_t>> vllm_peaks(const VllmRequests& r) {
  double min_start = 0, max_end = 0;
  bool any = false;
  for (std::size_t i = 0; i < r.ok.size(); ++i) {
    if (!r.ok[i]) continue;
    const double end = r.start_times[i] + r.latencies[i];
    min_start = any ? std::min(min_start, r.start_times[i]) : r.start_times[i];
    max_end = any ? std::max(max_end, end) : end;
    any = true;
  }
  if (!any) return {std::nullopt, std::nullopt};
  const auto buckets = static_cast<std::size_t>(std::ceil(max_end - min_start)) + 1;
  std::vector<double> tokens(buckets, 0.0);
  std::vector<std::pair<double, int>> events;
  for (std::size_t i = 0; i < r.ok.size(); ++i) {
    if (!r.ok[i]) continue;
    double t = r.start_times[i] + r.ttfts[i];
    const auto count = [&](double at) {
      const double b = std::trunc(at - min_start);  // Python's int(): toward zero
      if (b >= 0 && b < static_cast<double>(buckets)) tokens[static_cast<std::size_t>(b)] += 1;
    };
    count(t);
    for (double gap : r.itls[i]) count(t += gap);
    events.emplace_back(r.start_times[i], 1);
    events.emplace_back(r.start_times[i] + r.latencies[i], -1);
  }
  std::sort(events.begin(), events.end());  // at one time, a departure (−1) first
  std::int64_t in_flight = 0, peak = 0;
  for (const auto& e : events) peak = std::max(peak, in_flight += e.second);
  return {*std::max_element(tokens.begin(), tokens.end()), peak};
}

void put_stat(json::object& o, const std::string& metric, const VllmStat& s) {
  o["mean_" + metric + "_ms"] = num(s.mean_ms);
  o["median_" + metric + "_ms"] = num(s.median_ms);
  o["std_" + metric + "_ms"] = num(s.std_ms);
  for (std::size_t k = 0; k < std::size(kVllmPercentiles); ++k) {
    o["p" + std::string(kVllmPercentiles[k].second) + "_" + metric + "_ms"] =
        num(s.percentiles_ms[k]);
  }
}

std::optional<double> summary_number(const json::object& summary, const char* section,
                                     const char* key) {
  const json::value* s = summary.if_contains(section);
  if (s == nullptr || !s->is_object()) return std::nullopt;
  const json::value* v = s->get_object().if_contains(key);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->to_number<double>();
}

}  // namespace

VllmStat vllm_stat(std::vector<double> seconds) {
  VllmStat s;
  s.percentiles_ms.assign(std::size(kVllmPercentiles), std::nullopt);
  if (seconds.empty()) return s;
  std::sort(seconds.begin(), seconds.end());
  const double n = static_cast<double>(seconds.size());
  const double mean = std::accumulate(seconds.begin(), seconds.end(), 0.0) / n;
  double squares = 0;
  for (double x : seconds) squares += (x - mean) * (x - mean);
  s.mean_ms = mean * 1000;
  s.std_ms = std::sqrt(squares / n) * 1000;  // numpy's np.std: the population's (ddof 0)
  s.median_ms = *metrics::percentile_sorted(seconds, 50) * 1000;
  for (std::size_t k = 0; k < std::size(kVllmPercentiles); ++k) {
    s.percentiles_ms[k] = *metrics::percentile_sorted(seconds, kVllmPercentiles[k].first) * 1000;
  }
  return s;
}

VllmRequests vllm_requests(const std::vector<metrics::Trace>& traces, const std::string& run_id) {
  VllmRequests r;
  bool scheduled = true, texts = true, any_ok = false;
  for (const metrics::Trace& t : traces) {
    if (!t.measured() || t.status == metrics::RequestStatus::kCancelled) continue;
    if (t.ok()) {
      add_completed(r, t, run_id);
      any_ok = true;
      texts = texts && !t.output_text.empty();
    } else {
      add_failed(r, t, run_id);
    }
    scheduled = scheduled && t.scheduled_ns.has_value();
  }
  if (scheduled) {
    std::vector<double> q;
    for (const metrics::Trace& t : traces) {
      if (!t.measured() || t.status == metrics::RequestStatus::kCancelled) continue;
      const std::int64_t start = t.sent_ns.value_or(*t.scheduled_ns);
      q.push_back(seconds_of(std::max<std::int64_t>(0, start - *t.scheduled_ns)));
    }
    r.queue_times = std::move(q);
  }
  if (texts && any_ok) {
    std::vector<std::string> out;
    for (const metrics::Trace& t : traces) {
      if (t.measured() && t.status != metrics::RequestStatus::kCancelled) {
        out.push_back(t.output_text);
      }
    }
    r.generated_texts = std::move(out);
  }
  return r;
}

json::object vllm_result_keys(const VllmRequests& r, double duration_s, const metrics::Slo& slo) {
  std::int64_t completed = 0, total_input = 0, total_output = 0, good = 0;
  std::vector<double> ttfts, tpots, itls, e2els;
  for (std::size_t i = 0; i < r.ok.size(); ++i) {
    total_output += r.output_lens[i];  // 0 for a failed request
    if (!r.ok[i]) continue;
    ++completed;
    total_input += r.input_lens[i];
    double tpot = 0;  // vLLM: 0 for goodput when output_len <= 1
    if (r.output_lens[i] > 1) {
      tpot = (r.latencies[i] - r.ttfts[i]) / static_cast<double>(r.output_lens[i] - 1);
      tpots.push_back(tpot);
    }
    itls.insert(itls.end(), r.itls[i].begin(), r.itls[i].end());
    ttfts.push_back(r.ttfts[i]);
    e2els.push_back(r.latencies[i]);
    const bool meets = (!slo.ttft_s || r.ttfts[i] <= *slo.ttft_s) &&
                       (!slo.tpot_s || tpot <= *slo.tpot_s) &&
                       (!slo.e2e_s || r.latencies[i] <= *slo.e2e_s);
    good += meets ? 1 : 0;
  }
  const auto [max_tokens, max_concurrent] = vllm_peaks(r);
  const auto per_s = [&](double x) { return x / duration_s; };
  json::object o;
  o["duration"] = duration_s;
  o["completed"] = completed;
  o["failed"] = static_cast<std::int64_t>(r.ok.size()) - completed;
  o["total_input_tokens"] = total_input;
  o["total_output_tokens"] = total_output;
  o["request_throughput"] = per_s(static_cast<double>(completed));
  o["request_goodput"] = slo.any() ? json::value(per_s(static_cast<double>(good))) : nullptr;
  o["output_throughput"] = per_s(static_cast<double>(total_output));
  o["total_token_throughput"] = per_s(static_cast<double>(total_input + total_output));
  o["input_lens"] = counts(r.input_lens);
  o["output_lens"] = counts(r.output_lens);
  o["ttfts"] = doubles(r.ttfts);
  json::array itl_lists;
  for (const auto& gaps : r.itls) itl_lists.emplace_back(doubles(gaps));
  o["itls"] = std::move(itl_lists);
  o["latencies"] = doubles(r.latencies);
  o["start_times"] = doubles(r.start_times);
  if (r.queue_times) o["queue_times"] = doubles(*r.queue_times);
  if (r.generated_texts) o["generated_texts"] = strings(*r.generated_texts);
  o["errors"] = strings(r.errors);
  o["max_output_tokens_per_s"] = num(max_tokens);
  o["max_concurrent_requests"] =
      max_concurrent ? json::value(*max_concurrent) : json::value(nullptr);
  put_stat(o, "ttft", vllm_stat(ttfts));
  put_stat(o, "tpot", vllm_stat(tpots));
  put_stat(o, "itl", vllm_stat(itls));
  put_stat(o, "e2el", vllm_stat(e2els));
  return o;
}

std::optional<std::string> vllm_date(const std::string& iso) {
  // YYYY-MM-DDTHH:MM:SS
  static constexpr const char* kShape = "dddd-dd-ddTdd:dd:dd";
  if (iso.size() < 19) return std::nullopt;
  std::string out;
  for (std::size_t i = 0; i < 19; ++i) {
    const char c = iso[i];
    if (kShape[i] == 'd') {
      if (std::isdigit(static_cast<unsigned char>(c)) == 0) return std::nullopt;
      out += c;
    } else if (c != kShape[i]) {
      return std::nullopt;
    } else if (c == 'T') {
      out += '-';
    }
  }
  return out;
}

json::object export_vllm_bench(const ExportRecord& record) {
  const std::string& id = record.run_id;
  const Manifest& m = record.manifest;
  const std::string hint =
      m.source ? " (the imported file itself is kept as evidence/" + m.source->file + ")" : "";
  if (!record.has_requests) {
    throw ExportError("run " + id +
                      " is a summary-only import (no requests.jsonl): vLLM's per-request arrays "
                      "and duration cannot be made from it" +
                      hint);
  }
  const std::optional<double> window =
      summary_number(record.summary_json, "throughput", "service_window_s");
  if (!window || *window <= 0) {
    throw ExportError("run " + id +
                      " has no service window W (summary throughput.service_window_s is null: "
                      "its requests are not on one clock, or none ended): vLLM's duration and "
                      "start_times cannot be made" +
                      hint);
  }
  // model.id is a string in every record read (the manifest's reader requires it).
  const std::string& model = m.model.id;
  const VllmRequests requests = vllm_requests(record.traces, id);
  if (requests.ok.empty()) {
    throw ExportError("run " + id +
                      " has no measured request that ended: vLLM's num_prompts "
                      "must be at least 1");
  }
  if (m.workload.api != "chat" && m.workload.api != "completions") {
    throw ExportError("run " + id + " measured the " + m.workload.api +
                      " endpoint: vLLM's result names OpenAI chat or completions backends only");
  }
  const std::string backend = m.workload.api == "chat" ? "openai-chat" : "openai";
  json::object o;
  const std::optional<std::string> date = vllm_date(m.started_at);
  o["date"] = date ? json::value(*date) : json::value(nullptr);
  o["endpoint_type"] = backend;
  o["backend"] = backend;
  o["label"] = m.label ? json::value(*m.label) : json::value(nullptr);
  o["model_id"] = model;
  o["tokenizer_id"] = model;
  o["num_prompts"] = requests.ok.size();
  o["dyno_run_id"] = id;  // as vLLM's --metadata KEY=VALUE: a top-level key of its own
  if (m.load.rate_per_s) {
    o["request_rate"] = *m.load.rate_per_s;
    // vLLM's arrivals are gamma with shape `burstiness` (1: Poisson); it has no constant.
    const std::string arrival = m.load.arrival.value_or("poisson");
    o["burstiness"] = arrival == "poisson" ? json::value(1.0)
                      : arrival == "gamma" ? num(m.load.burstiness)
                                           : json::value(nullptr);
  } else {
    o["request_rate"] = "inf";
    o["burstiness"] = 1.0;  // vLLM's default; without a rate it has no effect
  }
  o["max_concurrency"] =
      m.load.concurrency ? json::value(*m.load.concurrency) : json::value(nullptr);
  for (auto& kv : vllm_result_keys(requests, *window, m.slo)) o[kv.key()] = kv.value();
  return o;
}

}  // namespace dyno::interop
