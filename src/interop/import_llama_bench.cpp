#include "interop/import_llama_bench.h"

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "interop/import_json.h"
#include "metrics/stats.h"
#include "record/record_json.h"
#include "workload/csv.h"
#include "workload/request_stream.h"

namespace dyno::interop {

using record::distribution_to_json;

namespace json = boost::json;

namespace {

using Doc = ImportDoc;

constexpr const char* kTool = "a llama-bench test";

/// The columns every version of llama-bench writes and this reader needs.
const std::vector<std::string>& required_keys() {
  static const std::vector<std::string> keys{
      "build_commit", "build_number", "model_filename", "n_prompt", "n_gen", "avg_ns", "avg_ts"};
  return keys;
}

/// A GPU description's vendor, as the manifest's device_identity names vendors; nullopt when
/// the description does not say.
std::optional<std::string> vendor_of(const std::string& name) {
  const auto has = [&](const char* word) { return name.find(word) != std::string::npos; };
  if (name.rfind("NVIDIA", 0) == 0 || has("GeForce") || has("Tesla") || has("Quadro")) {
    return "nvidia";
  }
  if (name.rfind("AMD", 0) == 0 || has("Radeon") || has("Instinct")) return "amd";
  if (name.rfind("Intel", 0) == 0) return "intel";
  return std::nullopt;
}

/// gpu_info ("NVIDIA GeForce RTX 4090, NVIDIA GeForce RTX 4090": the descriptions of the GPU
/// devices llama.cpp's backends found, joined with ", ") as device_identity entries. Unknown
/// (nullopt, `why` set) when one description names no vendor dyno records.
std::optional<json::array> gpus_of(const std::string& info, std::string& why) {
  json::array gpus;
  if (info.empty()) return gpus;  // the backends found no GPU
  std::size_t from = 0;
  for (std::size_t index = 0; from <= info.size(); ++index) {
    std::size_t to = info.find(", ", from);
    if (to == std::string::npos) to = info.size();
    const std::string name = info.substr(from, to - from);
    const std::optional<std::string> vendor = vendor_of(name);
    if (!vendor) {
      why = "llama-bench's gpu_info '" + info + "' names a device ('" + name +
            "') whose vendor (nvidia, amd, intel) it does not say";
      return std::nullopt;
    }
    gpus.push_back(named_gpu(*vendor, index, name));
    from = to + 2;
  }
  return gpus;
}

/// The per-repetition rates (tokens/s): samples_ts, else llama-bench's own formula over
/// samples_ns ((n_prompt + n_gen) / t); empty when the test has neither (a CSV row).
std::vector<double> samples_of(const Doc& d, std::int64_t n_tokens) {
  const json::array* ts = d.opt_array("samples_ts");
  const json::array* ns = d.opt_array("samples_ns");
  if (ts != nullptr && ns != nullptr && ts->size() != ns->size()) {
    d.fail(d.at("samples_ts"), "holds " + std::to_string(ts->size()) + " rates; expected " +
                                   std::to_string(ns->size()) + " (one per samples_ns entry)");
  }
  std::vector<double> out;
  if (ts != nullptr) {
    for (std::size_t i = 0; i < ts->size(); ++i) {
      const std::string at = d.at("samples_ts") + "[" + std::to_string(i) + "]";
      const double v = d.number((*ts)[i], at);
      if (v <= 0) d.fail(at, "expected a positive rate (tokens/s)");
      out.push_back(v);
    }
  } else if (ns != nullptr) {
    for (std::size_t i = 0; i < ns->size(); ++i) {
      const std::string at = d.at("samples_ns") + "[" + std::to_string(i) + "]";
      const std::int64_t v = d.count((*ns)[i], at);
      if (v == 0) d.fail(at, "expected a positive time (ns)");
      out.push_back(1e9 * static_cast<double>(n_tokens) / static_cast<double>(v));
    }
  }
  if (out.empty() && (ts != nullptr || ns != nullptr)) {
    d.fail(d.at(ts != nullptr ? "samples_ts" : "samples_ns"),
           "is empty; expected one entry per repetition");
  }
  return out;
}

/// One test as a result. `fields`: the test's settings as the file wrote them.
ImportedResult result_of(const Doc& d, json::object fields, const std::string& part) {
  ImportedResult r;
  r.source.tool = kLlamaBenchTool;
  r.source.format = "llama-bench";
  r.source.timing = "summary_only";
  r.source.part = part;
  r.source.file_fields = std::move(fields);
  r.api = "in_process";
  r.engine_name = "llama.cpp";
  const std::string commit = d.string("build_commit");
  const std::int64_t build = d.count("build_number");
  // What llama.cpp's server reports as its version (/props build_info: b<number>-<commit>).
  r.engine_version = "b" + std::to_string(build) + "-" + commit;
  r.source.tool_version = r.engine_version;
  if (!commit.empty() && commit != "unknown") r.engine_commit = commit;
  r.model_id = d.string("model_filename");
  if (const auto cpu = d.opt_string("cpu_info"); cpu && !cpu->empty()) r.cpu_model = *cpu;
  if (const auto gpu = d.opt_string("gpu_info")) r.gpus = gpus_of(*gpu, r.gpus_unknown);

  const std::int64_t n_prompt = d.tokens(d.need("n_prompt"), d.at("n_prompt"));
  const std::int64_t n_gen = d.tokens(d.need("n_gen"), d.at("n_gen"));
  const std::int64_t n_depth =
      d.find("n_depth") != nullptr ? d.tokens(d.need("n_depth"), d.at("n_depth")) : 0;
  if (n_prompt + n_gen == 0) d.fail(d.at("n_gen"), "n_prompt and n_gen are both 0: no test");
  (void)d.count("avg_ns");
  const double avg_ts = d.number("avg_ts");
  if (avg_ts < 0) d.fail(d.at("avg_ts"), "expected a non-negative rate (tokens/s)");
  const std::string test = llama_bench_test_name(n_prompt, n_gen, n_depth);
  r.pairs_as = "llama-bench";
  r.cell = test;

  std::vector<double> samples = samples_of(d, n_prompt + n_gen);
  const std::size_t reps = samples.size();
  metrics::Distribution rate;
  if (reps > 0) {
    rate = metrics::summarize(std::move(samples));
  } else {
    rate.mean = avg_ts;  // no samples: llama-bench's mean only; how many, the file does not say
  }
  metrics::Distribution prefill, decode;
  if (n_gen == 0)
    prefill = rate;  // pp: n_prompt tokens over their prefill time
  else if (n_prompt == 0)
    decode = rate;  // tg: n_gen one-token decode steps over their time
  // pp+tg: (n_prompt + n_gen) over both phases is neither rate: both absent.
  json::object timings{{"source", "in-process benchmark"},
                       {"test", test},
                       {"repetitions", reps > 0 ? json::value(reps) : json::value(nullptr)},
                       {"prefill_rate", distribution_to_json(prefill)},
                       {"decode_rate_per_user", distribution_to_json(decode)}};
  if (reps == 0 && (n_gen == 0 || n_prompt == 0)) {  // a mean over repetitions it does not count
    timings[n_gen == 0 ? "prefill_rate" : "decode_rate_per_user"].as_object()["count"] = nullptr;
  }
  r.engine_timings = std::move(timings);

  // llama-bench runs one sequence at a time, `reps` times; a failed test is not written.
  r.load.imported = true;
  r.load.concurrency = 1;
  if (reps == 0) {
    // A CSV row does not say how many repetitions ran: every count of them is null, never 0.
    r.requests = 0;
    r.absent_counts = {"requests.total", "requests.ok", "tokens.input_total",
                       "tokens.output_total"};
    return r;
  }
  const auto n = static_cast<std::int64_t>(reps);
  r.requests = reps;
  r.load.requests = reps;
  r.summary.requests_ok = reps;
  r.summary.requests_total = reps;
  r.summary.input_tokens_total = d.mul(n_prompt, n, d.at("n_prompt"));
  r.summary.output_tokens_total = d.mul(n_gen, n, d.at("n_gen"));
  return r;
}

json::object fields_of(const json::object& o) {
  json::object f;
  for (const auto& kv : o) {
    if (kv.key() != "samples_ns" && kv.key() != "samples_ts") f[kv.key()] = kv.value();
  }
  return f;
}

std::vector<ImportedResult> read_json_array(const std::string& bytes, const std::string& file) {
  const json::value v =
      parse_one_json(bytes, file, "the JSON array `llama-bench -o json` writes, one object a test");
  if (!v.is_array()) throw ImportFileError(file + ": $: expected a JSON array of tests");
  const json::array& a = v.get_array();
  const json::object empty;
  const Doc top(empty, file, "$", kTool);
  std::vector<ImportedResult> out;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const Doc d = top.element(a, i, "$");
    out.push_back(result_of(d, fields_of(d.raw()), "$[" + std::to_string(i) + "]"));
  }
  return out;
}

std::vector<ImportedResult> read_jsonl(const std::string& bytes, const std::string& file) {
  std::vector<ImportedResult> out;
  std::size_t line = 0;
  std::size_t from = 0;
  while (from < bytes.size()) {
    std::size_t to = bytes.find('\n', from);
    if (to == std::string::npos) to = bytes.size();
    ++line;
    const std::string text = bytes.substr(from, to - from);
    from = to + 1;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const json::value v =
        parse_one_json(text, file, "one JSON object a line (`llama-bench -o jsonl`)", line);
    if (!v.is_object())
      throw ImportFileError(file + ":" + std::to_string(line) + ": $: expected a JSON object");
    const Doc d(v.get_object(), file, "$", kTool, line);
    out.push_back(result_of(d, fields_of(d.raw()), "line " + std::to_string(line)));
  }
  return out;
}

/// A CSV cell of a column this reader uses, typed as the JSON output types it.
json::value csv_value(const std::string& column, const std::string& text, const std::string& at) {
  static const std::set<std::string> counts{"build_number", "n_prompt", "n_gen", "n_depth",
                                            "avg_ns"};
  if (counts.contains(column)) {
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v < 0) {
      throw ImportFileError(at + ": column " + column + ": '" + text +
                            "': expected a non-negative integer");
    }
    return v;
  }
  if (column == "avg_ts" || column == "stddev_ts") {
    double v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) {
      throw ImportFileError(at + ": column " + column + ": '" + text + "': expected a number");
    }
    return v;
  }
  return json::value(text);
}

std::vector<ImportedResult> read_csv(const std::string& bytes, const std::string& file) {
  const std::vector<workload::CsvRecord> records =
      workload::parse_csv(bytes, [&](std::size_t line, const std::string& what) {
        throw ImportFileError(file + ":" + std::to_string(line) + ": " + what);
      });
  if (records.empty()) throw ImportFileError(file + ": empty; expected llama-bench's CSV header");
  const auto& [header_line, header] = records.front();
  for (const std::string& key : required_keys()) {
    if (std::find(header.begin(), header.end(), key) == header.end()) {
      throw ImportFileError(file + ":" + std::to_string(header_line) + ": header: no column '" +
                            key + "' (`llama-bench -o csv` writes it)");
    }
  }
  std::vector<ImportedResult> out;
  for (std::size_t i = 1; i < records.size(); ++i) {
    const auto& [line, cells] = records[i];
    const std::string at = file + ":" + std::to_string(line);
    if (cells.size() != header.size()) {
      throw ImportFileError(at + ": " + std::to_string(cells.size()) + " fields; the header has " +
                            std::to_string(header.size()));
    }
    json::object row;
    for (std::size_t c = 0; c < header.size(); ++c) {
      row[header[c]] = csv_value(header[c], cells[c], at);
    }
    const Doc d(row, file, "$", kTool, line);
    out.push_back(result_of(d, row, "row " + std::to_string(i)));
  }
  return out;
}

}  // namespace

std::string llama_bench_test_name(std::int64_t n_prompt, std::int64_t n_gen, std::int64_t n_depth) {
  std::string name = n_gen == 0 ? "pp" + std::to_string(n_prompt)
                     : n_prompt == 0
                         ? "tg" + std::to_string(n_gen)
                         : "pp" + std::to_string(n_prompt) + "+tg" + std::to_string(n_gen);
  if (n_depth > 0) name += " @ d" + std::to_string(n_depth);
  return name;
}

std::vector<ImportedResult> read_llama_bench(const std::string& bytes,
                                             const std::string& file_name) {
  const std::size_t first = bytes.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) {
    throw ImportFileError(file_name + ": empty; expected llama-bench's JSON, JSONL or CSV output");
  }
  if (bytes[first] == '[') return read_json_array(bytes, file_name);
  if (bytes[first] == '{') return read_jsonl(bytes, file_name);
  return read_csv(bytes, file_name);
}

}  // namespace dyno::interop
