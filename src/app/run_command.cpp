#include "app/run_command.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include "app/console.h"
#include "app/signals.h"
#include "dyno/build_info.h"
#include "load/runner.h"
#include "load/schedule.h"
#include "metrics/summary.h"
#include "record/record_json.h"
#include "record/run_id.h"
#include "record/run_writer.h"
#include "sim/profile.h"
#include "sim/server.h"
#include "transport/event_loop.h"
#include "transport/http_target.h"
#include "workload/request_stream.h"
#include "workload/synthetic.h"

namespace dyno::app {

namespace json = boost::json;

namespace {

double parse_duration_ms(const std::string& value, const std::string& key) {
  std::size_t pos = 0;
  double number = 0;
  try {
    number = std::stod(value, &pos);
  } catch (const std::exception&) {
    throw UsageError("--slo: " + key + "=" + value + " is not a number; write e.g. " + key +
                     "=500ms or " + key + "=2s");
  }
  const std::string unit = value.substr(pos);
  double ms = 0;
  if (unit.empty() || unit == "ms") {
    ms = number;
  } else if (unit == "s") {
    ms = number * 1000.0;
  } else {
    throw UsageError("--slo: unit '" + unit + "' in " + key + "=" + value + "; use ms or s");
  }
  if (!(ms > 0) || !std::isfinite(ms)) {
    throw UsageError("--slo: " + key + " must be a positive duration");
  }
  return ms;
}

double cpu_seconds_self() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

double peak_rss_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) * 1024.0;  // Linux reports KiB
}

std::string read_first_match(const char* path, const std::string& prefix) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) return {};
      std::string v = line.substr(colon + 1);
      const auto start = v.find_first_not_of(" \t");
      return start == std::string::npos ? std::string() : v.substr(start);
    }
  }
  return {};
}

json::object hardware_identity() {
  json::object hw;
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) == 0) {
    hw["host"] = host;
  } else {
    hw["host"] = nullptr;
  }
  const std::string cpu = read_first_match("/proc/cpuinfo", "model name");
  hw["cpu_model"] = cpu.empty() ? json::value(nullptr) : json::value(cpu);
  hw["cpu_cores"] = std::thread::hardware_concurrency();
  const std::string mem = read_first_match("/proc/meminfo", "MemTotal");
  if (!mem.empty()) {
    hw["ram_bytes"] = static_cast<std::int64_t>(std::stoll(mem)) * 1024;
  } else {
    hw["ram_bytes"] = nullptr;
  }
  hw["gpus"] = json::array();
  return hw;
}

json::object harness_identity() {
  json::object h;
  h["name"] = "dyno";
  h["version"] = build_info::kVersion;
  h["git_commit"] = build_info::kGitCommit;
  h["git_dirty"] = build_info::kGitDirty;
  h["build_type"] = build_info::kBuildType;
  try {
    h["executable_sha256"] = record::sha256_hex_file("/proc/self/exe");
  } catch (const record::RecordError&) {
    h["executable_sha256"] = nullptr;
  }
  return h;
}

json::value opt(std::optional<double> v) { return record::number_or_null(v); }

json::value opt_u(std::optional<std::uint64_t> v) {
  return v ? json::value(*v) : json::value(nullptr);
}

/// The API key, from the environment only (never a flag: flags end up in shell history and
/// process lists). Never written anywhere.
std::optional<std::string> api_key_from_env() {
  for (const char* name : {"DYNO_API_KEY", "OPENAI_API_KEY"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && v[0] != '\0') return std::string(v);
  }
  return std::nullopt;
}

struct Plan {
  workload::Api api = workload::Api::kChat;
  load::LoadConfig load;
  metrics::Slo slo;
  std::string load_text;
};

Plan validate(const RunOptions& o) {
  Plan p;
  if (o.api == "chat") {
    p.api = workload::Api::kChat;
  } else if (o.api == "completions") {
    p.api = workload::Api::kCompletions;
  } else {
    throw UsageError("--api: '" + o.api + "' is not an API; use chat or completions");
  }
  if (o.rate && o.concurrency) {
    throw UsageError(
        "--rate and --concurrency exclude each other: --rate sends on an open-loop schedule, "
        "--concurrency keeps C requests in flight; pick one");
  }
  if (o.requests && *o.requests == 0) throw UsageError("--requests must be at least 1");
  if (o.duration_s && !(*o.duration_s > 0)) throw UsageError("--duration must be > 0 seconds");
  if (o.max_tokens && *o.max_tokens < 1) throw UsageError("--max-tokens must be at least 1");
  if (o.temperature < 0) throw UsageError("--temperature must be >= 0");
  if (o.input_tokens < 1) throw UsageError("--input-tokens must be at least 1");
  if (o.output_tokens < 1) throw UsageError("--output-tokens must be at least 1");
  if (o.error_budget < 0 || o.error_budget > 1) {
    throw UsageError("--error-budget is a fraction between 0 and 1 (e.g. 0.05)");
  }
  if (o.connect_timeout_s <= 0) throw UsageError("--connect-timeout must be > 0 seconds");
  if (o.first_token_timeout_s && *o.first_token_timeout_s <= 0) {
    throw UsageError("--first-token-timeout must be > 0 seconds");
  }
  if (o.timeout_s && *o.timeout_s <= 0) throw UsageError("--timeout must be > 0 seconds");
  if (o.url && !o.model) {
    throw UsageError(
        "--model is required with --url: name the model the server serves "
        "(see its /v1/models)");
  }

  p.load.requests = o.requests;
  p.load.duration_s = o.duration_s;
  if (!o.requests && !o.duration_s) p.load.requests = 100;
  p.load.warmup = o.warmup;
  p.load.keep_event_times = !o.no_chunk_times;
  p.load.keep_output_text = o.keep_outputs;
  if (o.rate) {
    if (!(*o.rate > 0) || !std::isfinite(*o.rate)) throw UsageError("--rate must be > 0 req/s");
    load::ScheduleSpec spec;
    try {
      spec.arrival = load::parse_arrival(o.arrival);
    } catch (const std::invalid_argument&) {
      throw UsageError("--arrival: '" + o.arrival + "'; use poisson, constant or gamma");
    }
    if (!(o.burstiness > 0)) throw UsageError("--burstiness must be > 0 (1 = Poisson)");
    spec.rate_per_s = *o.rate;
    spec.burstiness = o.burstiness;
    spec.seed = o.seed;
    p.load.open_loop = true;
    p.load.schedule = spec;
    p.load.concurrency = 1;  // warm-up requests go one at a time in open loop
    std::ostringstream t;
    t << "open loop, " << *o.rate << " req/s, " << load::to_string(spec.arrival);
    if (spec.arrival == load::Arrival::kGamma) t << " (burstiness " << o.burstiness << ")";
    p.load_text = t.str();
  } else {
    p.load.concurrency = o.concurrency.value_or(8);
    if (p.load.concurrency == 0) throw UsageError("--concurrency must be at least 1");
    p.load_text = "closed loop, concurrency " + std::to_string(p.load.concurrency);
  }
  if (p.load.requests) p.load_text += ", " + std::to_string(*p.load.requests) + " requests";
  if (p.load.duration_s) p.load_text += ", " + fmt(*p.load.duration_s, 1) + " s";
  if (o.warmup > 0) p.load_text += ", warm-up " + std::to_string(o.warmup);
  if (o.slo) p.slo = parse_slo(*o.slo);
  return p;
}

workload::RequestStream build_stream(const RunOptions& o, const Plan& p) {
  workload::RequestStream stream;
  if (o.stream_file) {
    try {
      stream = workload::read_stream_file(*o.stream_file);
    } catch (const workload::StreamError& e) {
      throw UsageError(std::string("--stream: ") + e.what());
    }
    if (stream.requests.empty()) {
      throw UsageError("--stream: " + *o.stream_file + " holds no request");
    }
    for (const auto& r : stream.requests) {
      if ((p.api == workload::Api::kChat) != r.is_chat()) {
        throw UsageError("--stream: request '" + r.id + "' is a " +
                         (r.is_chat() ? "chat" : "completion") + " request but --api is " + o.api +
                         "; use --api " + (r.is_chat() ? "chat" : "completions"));
      }
    }
  } else {
    workload::SyntheticOptions syn;
    syn.api = p.api;
    syn.input_tokens = o.input_tokens;
    syn.output_tokens = o.output_tokens;
    syn.seed = o.seed;
    // Enough distinct prompts that a count-limited run never repeats one.
    syn.count = std::max<std::uint64_t>(1, o.warmup + p.load.requests.value_or(1000));
    stream = workload::make_synthetic_stream(syn);
  }
  // Flags fill what the stream leaves unset; the stream's own values win.
  for (auto& r : stream.requests) {
    if (!r.sampling.max_tokens && o.max_tokens) r.sampling.max_tokens = o.max_tokens;
    if (!r.sampling.temperature) r.sampling.temperature = o.temperature;
  }
  stream.sha256 = workload::stream_sha256(stream.requests);
  return stream;
}

const char* final_status(const metrics::Summary& s, bool interrupted) {
  if (interrupted) return "interrupted";
  if (s.requests_ok == 0) return "failed";
  if (s.requests_failed > 0) return "partial";
  return "ok";
}

}  // namespace

metrics::Slo parse_slo(const std::string& text) {
  metrics::Slo slo;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      throw UsageError("--slo: '" + item + "' has no '='; write e.g. ttft=500ms,tpot=50ms");
    }
    const std::string key = item.substr(0, eq);
    const double ms = parse_duration_ms(item.substr(eq + 1), key);
    if (key == "ttft") {
      slo.ttft_s = ms / 1000.0;
    } else if (key == "tpot") {
      slo.tpot_s = ms / 1000.0;
    } else if (key == "e2e") {
      slo.e2e_s = ms / 1000.0;
    } else {
      throw UsageError("--slo: unknown objective '" + key + "'; use ttft, tpot or e2e");
    }
  }
  if (!slo.any()) throw UsageError("--slo: give at least one of ttft=, tpot=, e2e=");
  return slo;
}

int run_command(const RunOptions& o) {
  const Plan plan = validate(o);
  const ConsoleStyle style = detect_style(o.color, o.quiet);
  workload::RequestStream stream = build_stream(o, plan);

  // The engine: an HTTP server the user names, or the embedded simulated engine.
  std::unique_ptr<sim::Server> embedded;
  std::optional<sim::Profile> sim_profile;
  std::string url_text;
  std::string model;
  if (o.url) {
    url_text = *o.url;
    model = *o.model;
  } else {
    try {
      sim_profile = sim::resolve_profile(o.profile);
    } catch (const sim::ProfileError& e) {
      throw UsageError(std::string("--profile: ") + e.what());
    }
    sim::ServerOptions so;
    so.profile = *sim_profile;
    so.seed = o.seed;
    embedded = std::make_unique<sim::Server>(so);
    const std::uint16_t port = embedded->start();
    url_text = "http://127.0.0.1:" + std::to_string(port) + "/v1";
    model = o.model.value_or(sim_profile->model_name);
  }

  transport::HttpTargetConfig tc;
  try {
    tc.url = transport::BaseUrl::parse(url_text);
  } catch (const transport::UrlError& e) {
    throw UsageError(std::string("--url: ") + e.what());
  }
  tc.model = model;
  tc.api = plan.api;
  tc.stream = !o.no_stream;
  tc.api_key = api_key_from_env();
  tc.keep_output_text = o.keep_outputs;
  tc.tls_verify = !o.insecure;
  tc.ca_file = o.ca_file;
  tc.connect_timeout =
      std::chrono::milliseconds(static_cast<std::int64_t>(o.connect_timeout_s * 1e3));
  if (o.first_token_timeout_s) {
    tc.first_token_timeout =
        std::chrono::milliseconds(static_cast<std::int64_t>(*o.first_token_timeout_s * 1e3));
  }
  if (o.timeout_s) {
    tc.total_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(*o.timeout_s * 1e3));
  }

  const auto started = std::chrono::system_clock::now();
  const std::string run_id = record::make_run_id(started, o.label);
  tc.request_id_prefix = run_id + "-";
  // The target is built before the record, so a bad --ca-file leaves no empty run behind.
  transport::EventLoop loop;
  std::optional<transport::HttpTarget> target_storage;
  try {
    target_storage.emplace(loop, tc);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--ca-file: ") + e.what());
  }
  transport::HttpTarget& target = *target_storage;
  record::RunWriter writer(o.runs_root, run_id, !o.no_chunk_times);

  // manifest.json: written first (status "running"), rewritten when the run ends.
  json::object manifest;
  manifest["schema_version"] = record::kSchemaVersion;
  manifest["run_id"] = run_id;
  manifest["label"] = o.label.empty() ? json::value(nullptr) : json::value(o.label);
  manifest["campaign"] = nullptr;
  manifest["status"] = "running";
  manifest["started_at"] = record::iso8601_utc(started);
  manifest["ended_at"] = nullptr;
  manifest["harness"] = harness_identity();
  json::object engine;
  if (embedded) {
    engine["name"] = "dyno-sim";
    engine["version"] = build_info::kVersion;
    engine["reached"] =
        json::object{{"kind", "embedded-sim"}, {"scheme", "http"}, {"path", tc.url.base_path}};
    engine["sim_profile"] = json::parse(sim::profile_to_json(*sim_profile));
  } else {
    engine["name"] = nullptr;
    engine["version"] = nullptr;
    engine["reached"] = json::object{
        {"kind", "http"}, {"scheme", tc.url.tls ? "https" : "http"}, {"path", tc.url.base_path}};
  }
  engine["engine_args"] = json::object();
  engine["api_key_used"] = tc.api_key.has_value();
  manifest["engine"] = std::move(engine);
  manifest["model"] = json::object{{"id", model}, {"revision", nullptr}, {"fingerprint", nullptr}};
  manifest["hardware"] = hardware_identity();
  json::object sampling{
      {"temperature", o.temperature},
      {"max_tokens", o.max_tokens ? json::value(*o.max_tokens) : json::value(nullptr)},
      {"stream", tc.stream}};
  if (!o.stream_file) {
    sampling["max_tokens"] = o.output_tokens;
    sampling["ignore_eos"] = true;
  }
  manifest["workload"] =
      json::object{{"protocol", json::object{{"name", "run"}, {"version", 1}}},
                   {"api", o.api},
                   {"request_stream", json::object{{"source", stream.source},
                                                   {"sha256", stream.sha256},
                                                   {"count", stream.requests.size()}}},
                   {"sampling", std::move(sampling)},
                   {"warmup_requests", o.warmup}};
  json::object load_obj{
      {"mode", plan.load.open_loop ? "open" : "closed"},
      {"concurrency",
       plan.load.open_loop ? json::value(nullptr) : json::value(plan.load.concurrency)},
      {"rate_per_s", opt(o.rate)},
      {"arrival", plan.load.open_loop ? json::value(o.arrival) : json::value(nullptr)},
      {"burstiness", plan.load.open_loop ? json::value(o.burstiness) : json::value(nullptr)},
      {"seed", o.seed},
      {"requests", opt_u(plan.load.requests)},
      {"duration_s", opt(plan.load.duration_s)},
      {"timeouts_s", json::object{{"connect", o.connect_timeout_s},
                                  {"first_token", opt(o.first_token_timeout_s)},
                                  {"total", opt(o.timeout_s)}}}};
  manifest["load"] = std::move(load_obj);
  manifest["slo"] = json::object{{"ttft_s", opt(plan.slo.ttft_s)},
                                 {"tpot_s", opt(plan.slo.tpot_s)},
                                 {"e2e_s", opt(plan.slo.e2e_s)}};
  manifest["telemetry"] = json::object{{"backends", json::array()}};
  manifest["warnings"] = json::array();
  manifest["scrubbed_fields"] = json::array();
  manifest["evidence"] = json::array();
  writer.write_json("manifest.json", manifest);

  // The run.
  const std::atomic<bool>& stop_flag = install_stop_signals();
  ProgressBar bar(style.progress);
  std::int64_t measured_start_abs = 0;
  load::RunHooks hooks;
  hooks.on_finished = [&writer](const metrics::Trace& t) { writer.append_request(t); };
  hooks.on_progress = [&bar, &measured_start_abs](const load::Progress& p) {
    if (measured_start_abs == 0 && !p.warmup) measured_start_abs = transport::steady_now_ns();
    const double elapsed =
        measured_start_abs == 0
            ? 0.0
            : static_cast<double>(transport::steady_now_ns() - measured_start_abs) * 1e-9;
    bar.update(p, elapsed);
  };
  hooks.stop_requested = &stop_flag;

  const double cpu_before = cpu_seconds_self();
  load::LoadResult result = load::run_load(loop, target, stream.requests, plan.load, hooks);
  const double cpu_after = cpu_seconds_self();
  bar.finish();
  if (embedded) embedded->stop();

  metrics::SummaryOptions so;
  if (!plan.load.open_loop) so.declared_concurrency = plan.load.concurrency;
  so.open_loop = plan.load.open_loop;
  so.slo = plan.slo;
  // The embedded engine runs on a thread of this process: its CPU is not the client's.
  so.client.cpu_s =
      std::max(0.0, cpu_after - cpu_before - (embedded ? embedded->cpu_seconds() : 0.0));
  so.client.peak_rss_bytes = peak_rss_bytes();
  so.client.loop_lag_s = result.loop_lag_s;
  const metrics::Summary summary = metrics::summarize_run(result.traces, so);
  const std::string status = final_status(summary, result.interrupted);

  json::object summary_json{
      {"schema_version", record::kSchemaVersion}, {"run_id", run_id}, {"status", status}};
  for (auto& kv : record::summary_to_json(summary)) summary_json[kv.key()] = kv.value();
  summary_json["client"].as_object()["connections_opened"] = target.connections_opened();
  if (embedded)
    summary_json["client"].as_object()["note"] =
        "cpu_s and peak_rss_bytes are of the dyno process, which also ran the embedded simulated "
        "engine on its own thread";

  writer.write_json("summary.json", summary_json);
  json::array warnings;
  for (const auto& w : summary.warnings) {
    warnings.push_back(json::object{{"code", w.code}, {"message", w.message}, {"hint", w.hint}});
  }
  manifest["warnings"] = std::move(warnings);
  manifest["status"] = status;
  manifest["ended_at"] = record::iso8601_utc(std::chrono::system_clock::now());
  manifest["clock"] = json::object{{"source", "steady_clock (CLOCK_MONOTONIC)"},
                                   {"t0_steady_ns", result.t0_steady_ns},
                                   {"measured_start_ns", result.measured_start_ns}};
  writer.write_json("manifest.json", manifest);
  writer.finalize(result.traces);

  RunHeadline head;
  head.run_id = run_id;
  head.engine =
      embedded ? "dyno-sim (embedded, profile " + sim_profile->name + ")" : tc.url.to_string();
  head.model = model;
  head.api = o.api + (tc.stream ? ", streamed" : ", not streamed");
  head.load = plan.load_text;
  head.status = status;
  head.record_dir = writer.dir().string();
  if (plan.slo.any()) head.slo_text = *o.slo;
  if (o.json) {
    summary_json["record_dir"] = writer.dir().string();
    std::cout << record::pretty_json(summary_json);
  } else {
    std::cout << render_summary(head, summary, style.color);
  }
  std::cout.flush();
  std::cerr << render_warnings(summary.warnings,
                               detect_style(o.color, true).color && ::isatty(STDERR_FILENO) != 0);

  if (result.interrupted) return kExitInterrupted;
  if (status == std::string("failed")) return kExitRunFailed;
  if (summary.error_rate && *summary.error_rate > o.error_budget) {
    std::cerr << "dyno: error rate " << fmt(*summary.error_rate * 100.0, 1)
              << " % exceeds the error budget of " << fmt(o.error_budget * 100.0, 1)
              << " % (--error-budget)\n";
    return kExitRunFailed;
  }
  return kExitOk;
}

}  // namespace dyno::app
