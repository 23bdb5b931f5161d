#include "interop/import_sglang.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "interop/import_json.h"

namespace dyno::interop {

using record::LoadSection;

namespace json = boost::json;

namespace {

using Doc = ImportDoc;

constexpr const char* kWhat =
    "one JSON object a line, as `sglang.bench_serving --output-file` appends";

/// Python's json.dumps writes the bare tokens NaN, Infinity and -Infinity (a request rate of
/// inf; the mean of no latencies), which are not JSON: outside strings they become the
/// strings "NaN", "Infinity" and "-Infinity", so that every other byte keeps its place.
std::string python_tokens_as_strings(std::string_view line) {
  std::string out;
  out.reserve(line.size() + 16);
  bool in_string = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < line.size()) {
        out += line[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    for (std::string_view token : {"NaN", "Infinity", "-Infinity"}) {
      if (line.substr(i, token.size()) == token) {
        out += '"';
        out += token;
        out += '"';
        i += token.size() - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

bool is_python_special(const json::value& v) {
  if (!v.is_string()) return false;
  const auto s = v.get_string();
  return s == "NaN" || s == "Infinity" || s == "-Infinity";
}

/// A figure of the line: absent when missing, null or NaN (SGLang's mean of no values).
std::optional<double> figure(const Doc& d, const char* key) {
  const json::value* v = d.find(key);
  if (v == nullptr || (v->is_string() && v->get_string() == "NaN")) return std::nullopt;
  return d.number(*v, d.at(key));
}

/// The endpoint a bench_serving backend sends to.
std::string api_of(const Doc& d, const std::string& backend) {
  if (backend == "sglang-oai-chat" || backend == "vllm-chat" || backend == "lmdeploy-chat") {
    return "chat";
  }
  if (backend == "sglang-oai" || backend == "vllm" || backend == "lmdeploy") return "completions";
  if (backend == "sglang" || backend == "sglang-native") return "generate";
  d.fail("$.backend", "'" + backend +
                          "': expected sglang-oai, vllm, lmdeploy (completions), "
                          "sglang-oai-chat, vllm-chat, lmdeploy-chat (chat) or sglang, "
                          "sglang-native (SGLang's /generate): dyno records these endpoints only");
}

/// A distribution from SGLang's mean_/median_/p<N>_ keys of `metric` (e.g. "ttft_ms").
metrics::Distribution mapped_distribution(const Doc& d, const std::string& metric,
                                          std::size_t count) {
  metrics::Distribution out;
  const auto key = [&](const std::string& prefix) {
    return figure(d, (prefix + "_" + metric).c_str());
  };
  out.mean = key("mean");
  out.p50 = key("median");
  out.p90 = key("p90");
  out.p95 = key("p95");
  out.p99 = key("p99");
  if (out.p50 && out.p95) out.jitter = *out.p95 - *out.p50;
  if (out.mean || out.p50 || out.p90 || out.p95 || out.p99) out.count = count;
  return out;
}

metrics::Summary summary_only(const Doc& d, std::int64_t completed) {
  metrics::Summary s;
  // The line does not say how many requests failed: requests.failed and total are written
  // null (ImportedResult::absent_counts), error_rate null (docs/interop.md).
  s.requests_ok = static_cast<std::uint64_t>(completed);
  s.requests_total = s.requests_ok;
  s.input_tokens_total = d.token_total("total_input_tokens", completed);
  if (d.find("total_output_tokens_retokenized") != nullptr) {
    s.output_tokens_total = d.token_total("total_output_tokens_retokenized", completed);
    s.token_count_sources["tokenizer"] = static_cast<std::uint64_t>(completed);
  }
  const auto n = static_cast<std::size_t>(completed);
  s.ttft_ms = mapped_distribution(d, "ttft_ms", n);
  s.e2e_ms = mapped_distribution(d, "e2e_latency_ms", n);
  return s;
}

struct Arrays {
  const json::array* input_lens = nullptr;
  const json::array* output_lens = nullptr;
  const json::array* ttfts = nullptr;
  const json::array* itls = nullptr;
  const json::array* texts = nullptr;
  const json::array* errors = nullptr;
};

Arrays read_arrays(const Doc& d) {
  Arrays a{d.opt_array("input_lens"), d.opt_array("output_lens"),     d.opt_array("ttfts"),
           d.opt_array("itls"),       d.opt_array("generated_texts"), d.opt_array("errors")};
  const std::pair<const char*, const json::array*> all[] = {
      {"input_lens", a.input_lens}, {"output_lens", a.output_lens},
      {"ttfts", a.ttfts},           {"itls", a.itls},
      {"generated_texts", a.texts}, {"errors", a.errors}};
  bool any = false;
  for (const auto& [name, arr] : all) any = any || arr != nullptr;
  if (!any) return Arrays{};
  for (const auto& [name, arr] : all) {
    if (arr == nullptr) {
      d.fail(std::string("$.") + name,
             "missing: a line written with --output-details has input_lens, output_lens, "
             "ttfts, itls, generated_texts and errors together");
    }
  }
  const std::size_t n = a.errors->size();
  if (n == 0) d.fail("$.errors", "empty: expected one element per request sent");
  for (const auto& [name, arr] : all) {
    if (arr->size() != n) {
      d.fail(std::string("$.") + name, "holds " + std::to_string(arr->size()) +
                                           " elements; expected " + std::to_string(n) +
                                           " (one per request, as $.errors)");
    }
  }
  return a;
}

/// A request of SGLang's native /generate backend: its output length is the server's
/// `completion_tokens`, and its ITLs spread each chunk's gap evenly over the chunk's tokens, so
/// the chunks' own times are lost: only the first and the last token's times are kept (their
/// sum is exact), never the spread ones as if they were events (docs/interop.md).
void native_times(const Doc& d, const json::array& gaps, const std::string& at, double ttft,
                  std::int64_t output_len, metrics::Trace& t) {
  double elapsed = ttft;
  for (std::size_t k = 0; k < gaps.size(); ++k) {
    const std::string where = "$.itls" + at + "[" + std::to_string(k) + "]";
    elapsed += d.seconds(gaps[k], where, kMaxImportedRequestS);
    if (elapsed > kMaxImportedRequestS)
      d.fail(where, "the request's times add up past 1e7 seconds");
  }
  if (ttft > 0.0) {
    t.first_token_ns = seconds_to_ns(ttft);
    t.first_content_ns = t.first_token_ns;
    t.last_token_ns = seconds_to_ns(elapsed);
  }
  t.output_tokens = output_len;
  t.token_count_source = metrics::TokenCountSource::kUsage;
}

/// One request as a trace, its times from its own send (SGLang keeps no send times).
metrics::Trace trace_of(const Doc& d, const Arrays& a, std::size_t i, bool native) {
  const std::string at = "[" + std::to_string(i) + "]";
  metrics::Trace t;
  t.index = i;
  t.request_id = std::to_string(i);
  t.sent_ns = 0;
  const json::value& err = a.errors->at(i);
  if (!err.is_string()) d.fail("$.errors" + at, "expected a string (\"\" when it succeeded)");
  t.input_tokens = d.tokens(a.input_lens->at(i), "$.input_lens" + at);
  const std::int64_t output_len = d.tokens(a.output_lens->at(i), "$.output_lens" + at);
  const double ttft = d.seconds(a.ttfts->at(i), "$.ttfts" + at, kMaxImportedRequestS);
  const json::value& itl = a.itls->at(i);
  if (!itl.is_array()) d.fail("$.itls" + at, "expected an array of seconds");
  const json::value& text = a.texts->at(i);
  if (!text.is_string()) d.fail("$.generated_texts" + at, "expected a string");
  if (!err.get_string().empty()) {
    t.status = metrics::RequestStatus::kError;
    t.error_category = "imported";
    t.error_message = std::string(err.get_string());
    return t;
  }
  t.output_text = std::string(text.get_string());
  const json::array& gaps = itl.get_array();
  // SGLang's ttft stays 0.0 until a chunk with text arrives: 0 means no token came.
  if (ttft == 0.0 && !gaps.empty()) {
    d.fail("$.itls" + at, "gaps after no first token ($.ttfts" + at + " is 0)");
  }
  if (native) {
    native_times(d, gaps, at, ttft, output_len, t);
    return t;
  }
  if (ttft > 0.0) {
    double elapsed = ttft;
    t.event_times_ns.push_back(seconds_to_ns(elapsed));
    for (std::size_t k = 0; k < gaps.size(); ++k) {
      const std::string where = "$.itls" + at + "[" + std::to_string(k) + "]";
      elapsed += d.seconds(gaps[k], where, kMaxImportedRequestS);
      if (elapsed > kMaxImportedRequestS)
        d.fail(where, "the request's times add up past 1e7 seconds");
      t.event_times_ns.push_back(seconds_to_ns(elapsed));
    }
    t.first_token_ns = t.event_times_ns.front();
    t.first_content_ns = t.first_token_ns;
    t.last_token_ns = t.event_times_ns.back();
  }
  // output_lens is the server's usage count when a chunk carried one, else the length SGLang
  // asked for: dyno counts the token-bearing chunks instead (docs/interop.md).
  t.output_tokens = static_cast<std::int64_t>(t.event_times_ns.size());
  t.token_count_source = metrics::TokenCountSource::kChunks;
  return t;
}

LoadSection load_of(const Doc& d, std::uint64_t requests) {
  LoadSection l;
  l.imported = true;
  if (requests > 0) l.requests = requests;  // 0: the line does not say
  if (const json::value* c = d.find("max_concurrency")) {
    const std::int64_t n = d.count(*c, "$.max_concurrency");
    if (n > 0) l.concurrency = static_cast<std::uint64_t>(n);
  }
  const json::value* rate = d.find("request_rate");
  if (rate != nullptr &&
      !(rate->is_string() && (rate->get_string() == "Infinity" || rate->get_string() == "inf" ||
                              rate->get_string() == "trace"))) {
    if (is_python_special(*rate)) d.fail("$.request_rate", "expected a positive number");
    const double r = d.number(*rate, "$.request_rate");
    if (r <= 0) d.fail("$.request_rate", "expected a positive number, Infinity or \"trace\"");
    l.rate_per_s = r;
    l.arrival = "poisson";  // bench_serving draws exponential gaps
  }
  return l;
}

/// The line's own settings, kept verbatim in manifest source.file_fields.
json::object file_fields(const Doc& d) {
  json::object f;
  for (const char* key :
       {"tag", "backend", "dataset_name", "request_rate", "max_concurrency", "sharegpt_output_len",
        "random_input_len", "random_output_len", "random_range_ratio"}) {
    if (const json::value* v = d.raw().if_contains(key)) f[key] = *v;
  }
  return f;
}

/// A line of another layout (a newer bench_serving, another tool): refused by its keys.
void check_layout(const Doc& d) {
  if (d.raw().contains("backend") || d.raw().contains("completed")) return;
  for (const char* key : {"metrics", "results", "benchmarks", "schema_version", "version"}) {
    if (d.raw().contains(key)) {
      d.fail(d.at(key),
             "a layout this dyno does not read; expected SGLang's flat result "
             "object (backend, completed, duration, total_input_tokens…)");
    }
  }
}

ImportedResult read_line(const json::object& top, const std::string& file, std::size_t line) {
  const Doc d(top, file, "$", "an sglang-bench result", line);
  check_layout(d);
  ImportedResult r;
  r.source.tool = kSglangBenchTool;
  r.source.format = "sglang-bench";
  r.source.part = "line " + std::to_string(line);
  r.source.file_fields = file_fields(d);
  r.api = api_of(d, d.string("backend"));
  r.label = d.opt_string("tag");
  const double duration = d.number("duration");
  if (duration <= 0) d.fail("$.duration", "expected a positive number of seconds");
  const std::int64_t completed = d.count("completed");
  (void)d.token_total("total_input_tokens", completed);
  (void)d.token_total("total_output_tokens", completed);
  if (d.find("total_output_tokens_retokenized") != nullptr) {
    (void)d.token_total("total_output_tokens_retokenized", completed);
  }
  const Arrays a = read_arrays(d);
  if (a.errors == nullptr) {
    if (completed == 0) {
      d.fail("$.completed",
             "0 and no per-request arrays: the line says no request completed and "
             "not how many were sent; nothing to record");
    }
    // The line says how many completed, not how many were sent or failed: those counts are
    // null (and the request count of the stream), never a 0 or a guess.
    r.requests = 0;
    r.summary = summary_only(d, completed);
    r.absent_counts = {"requests.total", "requests.failed"};
    if (d.find("total_output_tokens_retokenized") == nullptr) {
      r.absent_counts.push_back("tokens.output_total");
    }
    r.source.timing = "summary_only";
    r.status = "ok";
  } else {
    for (std::size_t i = 0; i < a.errors->size(); ++i)
      r.traces.push_back(trace_of(d, a, i, *r.api == "generate"));
    const auto ok = std::count_if(r.traces.begin(), r.traces.end(),
                                  [](const metrics::Trace& t) { return t.ok(); });
    if (ok != completed) {
      d.fail("$.errors", std::to_string(ok) + " requests have no error; expected $.completed (" +
                             std::to_string(completed) + ")");
    }
    r.requests = r.traces.size();
    r.source.timing = "per_request";
    r.status = ok == 0                                          ? "failed"
               : static_cast<std::size_t>(ok) < r.traces.size() ? "partial"
                                                                : "ok";
  }
  r.load = load_of(d, r.requests);
  return r;
}

}  // namespace

std::vector<ImportedResult> read_sglang_bench(const std::string& bytes,
                                              const std::string& file_name) {
  std::vector<ImportedResult> results;
  std::size_t line = 0;
  for (std::size_t begin = 0; begin < bytes.size();) {
    std::size_t end = bytes.find('\n', begin);
    if (end == std::string::npos) end = bytes.size();
    ++line;
    const std::string_view text(bytes.data() + begin, end - begin);
    begin = end + 1;
    if (text.find_first_not_of(" \t\r") == std::string_view::npos) continue;  // blank
    json::value v = parse_one_json(python_tokens_as_strings(text), file_name, kWhat, line);
    if (!v.is_object()) {
      throw ImportFileError(file_name + ":" + std::to_string(line) +
                            ": $: expected a JSON object (one result a line)");
    }
    results.push_back(read_line(v.get_object(), file_name, line));
  }
  return results;
}

}  // namespace dyno::interop
