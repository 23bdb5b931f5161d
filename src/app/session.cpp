#include "app/session.h"

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <thread>

#include "app/console.h"
#include "app/energy_report.h"
#include "app/engine_launch.h"
#include "app/flag_values.h"
#include "app/server_gauges.h"
#include "app/server_metrics.h"
#include "app/server_timings.h"
#include "app/signals.h"
#include "dyno/build_info.h"
#include "engine/spec.h"
#include "record/model_identity.h"
#include "record/record_json.h"
#include "record/run_id.h"
#include "record/run_index.h"
#include "record/run_writer.h"
#include "sim/server.h"
#include "transport/event_loop.h"
#include "transport/timeouts.h"
#include "workload/request_stream.h"
#include "workload/scoring.h"
#include "workload/synthetic.h"

namespace dyno::app {

namespace json = boost::json;

namespace {

double cpu_seconds_self() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

double cpu_seconds_this_thread() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
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

/// The host's identity; `gpus` is filled from telemetry by the caller. Every field left null
/// (and an empty `gpus`) has its reason in `unknown`.
json::object hardware_identity() {
  json::object hw;
  json::object unknown;
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) == 0) {
    hw["host"] = host;
  } else {
    hw["host"] = nullptr;
    unknown["host"] = "gethostname failed";
  }
  const std::string cpu = read_first_match("/proc/cpuinfo", "model name");
  hw["cpu_model"] = cpu.empty() ? json::value(nullptr) : json::value(cpu);
  if (cpu.empty()) unknown["cpu_model"] = "/proc/cpuinfo has no 'model name' line";
  hw["cpu_cores"] = std::thread::hardware_concurrency();
  const std::string mem = read_first_match("/proc/meminfo", "MemTotal");
  if (!mem.empty()) {
    hw["ram_bytes"] = static_cast<std::int64_t>(std::stoll(mem)) * 1024;
  } else {
    hw["ram_bytes"] = nullptr;
    unknown["ram_bytes"] = "/proc/meminfo has no MemTotal line";
  }
  hw["gpus"] = json::array();
  hw["unknown"] = std::move(unknown);
  return hw;
}

/// Computed once per process: hashing the executable is not free.
const json::object& harness_identity() {
  static const json::object identity = [] {
    json::object h;
    h["name"] = "dyno";
    h["version"] = build_info::kVersion;
    h["git_commit"] = build_info::kGitCommit;
    h["git_dirty"] = build_info::kGitDirty;
    h["build_type"] = build_info::kBuildType;
    json::object unknown;
    if (std::string(build_info::kGitCommit) == "unknown") {
      unknown["git_commit"] = "dyno was built outside a git checkout";
    }
    try {
      h["executable_sha256"] = record::sha256_hex_file("/proc/self/exe");
    } catch (const record::RecordError& e) {
      h["executable_sha256"] = nullptr;
      unknown["executable_sha256"] = std::string("cannot read /proc/self/exe: ") + e.what();
    }
    if (!unknown.empty()) h["unknown"] = std::move(unknown);
    return h;
  }();
  return identity;
}

json::value opt(std::optional<double> v) { return record::number_or_null(v); }

json::value opt_u(std::optional<std::uint64_t> v) {
  return v ? json::value(*v) : json::value(nullptr);
}

std::chrono::milliseconds to_ms(double seconds) {
  // Capped at a year, so that any limit still fits the clock's nanoseconds.
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::min(seconds, 3.2e7) * 1e3));
}

/// Scores every ended request whose stream request has an expected answer (after the run, off
/// the hot path). A failed request is scored incorrect.
void score_traces(const std::vector<workload::Request>& requests,
                  std::vector<metrics::Trace>& traces) {
  for (auto& t : traces) {
    const workload::Request& r = requests[t.index % requests.size()];
    if (!r.expected || t.status == metrics::RequestStatus::kCancelled) continue;
    if (t.ok()) {
      const workload::Score score = workload::score_answer(*r.expected, t.output_text);
      t.correct = score.correct;
      t.extracted_answer = score.extracted;
      t.scorer = score.scorer;
    } else {
      t.correct = false;
      t.extracted_answer.clear();
      t.scorer = r.expected->scorer;
    }
  }
}

/// manifest load.timeouts_s: what the user set; a limit left unset is derived per request.
json::object timeouts_json(const RunOptions& o) {
  json::object t{{"connect", o.connect_timeout_s},
                 {"first_token", opt(o.first_token_timeout_s)},
                 {"total", opt(o.timeout_s)},
                 {"idle", o.idle_timeout_s}};
  if (!o.first_token_timeout_s || !o.timeout_s) t["derived_rule"] = transport::kDerivedTimeoutRule;
  return t;
}

/// Requests refused at connect (never served) after the engine last answered anything, in a cell
/// whose engine exited: the port closed as the process began to exit, before it was reaped.
/// They become cancelled ("not sent"); returns how many.
std::size_t mark_unsent_after_exit(std::vector<metrics::Trace>& traces) {
  std::int64_t last_answer = std::numeric_limits<std::int64_t>::min();
  for (const auto& t : traces) {
    if (t.first_byte_ns) last_answer = std::max(last_answer, *t.first_byte_ns);
  }
  std::size_t n = 0;
  for (auto& t : traces) {
    // (A connect failure may carry a sent_ns: a stale keep-alive connection took the bytes,
    // and the fresh connection the request was retried on was refused; nothing was served.)
    if (t.status != metrics::RequestStatus::kError ||
        t.error_category != transport::to_string(transport::ErrorCategory::kConnect) ||
        t.done_ns.value_or(last_answer) < last_answer) {
      continue;
    }
    t.status = metrics::RequestStatus::kCancelled;
    t.error_category = "cancelled";
    t.error_message = "not sent: the engine had exited (" + t.error_message + ")";
    ++n;
  }
  return n;
}

const char* final_status(const metrics::Summary& s, bool interrupted) {
  if (interrupted) return "interrupted";
  if (s.requests_ok == 0) return "failed";
  if (s.requests_failed > 0) return "partial";
  return "ok";
}

}  // namespace

std::optional<std::string> api_key_from_env() {
  for (const char* name : {"DYNO_API_KEY", "OPENAI_API_KEY"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && v[0] != '\0') return std::string(v);
  }
  return std::nullopt;
}

namespace {

/// Runs `git -C dir args` and returns its stdout (trimmed); nullopt when git fails.
std::optional<std::string> git_output(const std::string& dir, const std::string& args) {
  std::string quoted = "'";
  for (char c : dir) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  quoted += "'";
  const std::string cmd = "git -C " + quoted + " " + args + " 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return std::nullopt;
  std::string out;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (::pclose(p) != 0) return std::nullopt;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

/// The engine's source checkout (spec `checkout`): commit and whether tracked files differ
/// from it; unknown fields give their reason.
json::object source_identity(const std::optional<std::string>& checkout) {
  if (!checkout) {
    return json::object{{"commit", nullptr},
                        {"dirty", nullptr},
                        {"unknown", json::object{{"commit", "the engine spec names no checkout"}}}};
  }
  json::object out{{"checkout", std::filesystem::path(*checkout).filename().string()}};
  const auto commit = git_output(*checkout, "rev-parse HEAD");
  if (!commit || commit->empty()) {
    out["commit"] = nullptr;
    out["dirty"] = nullptr;
    out["unknown"] = json::object{
        {"commit", "'" + *checkout + "' is not a git checkout (or git is not installed)"}};
    return out;
  }
  out["commit"] = *commit;
  const auto status = git_output(*checkout, "status --porcelain --untracked-files=no");
  out["dirty"] = status ? json::value(!status->empty()) : json::value(nullptr);
  if (!status) out["unknown"] = json::object{{"dirty", "git status failed"}};
  return out;
}

/// The model's identity from --model-file / --model-revision; unknown fields give their reason.
json::object model_identity(const RunOptions& o, const std::string& model_id) {
  json::object m{
      {"id", model_id},
      {"revision", o.model_revision ? json::value(*o.model_revision) : json::value(nullptr)},
      {"fingerprint", nullptr}};
  json::object unknown;
  if (!o.model_revision) unknown["revision"] = "not given (--model-revision)";
  if (!o.model_file) {
    unknown["fingerprint"] = "no weights file given (--model-file)";
  } else {
    const std::filesystem::path path(*o.model_file);
    try {
      if (path.extension() == ".gguf") {
        const record::GgufInfo g = record::read_gguf(path);
        m["format"] = "gguf";
        m["fingerprint"] = g.fingerprint;
        m["architecture"] = g.architecture;
        m["parameter_count"] = g.parameter_count;
        m["quantization"] = g.quantization;
        m["context_length"] =
            g.context_length ? json::value(*g.context_length) : json::value(nullptr);
        m["tokenizer_model"] = g.tokenizer_model;
      } else {
        const record::SafetensorsInfo st = record::read_safetensors({path});
        m["format"] = "safetensors";
        m["fingerprint"] = st.fingerprint;
        m["parameter_count"] = st.parameter_count;
        json::object dtypes;
        for (const auto& [dtype, n] : st.dtypes) dtypes[dtype] = n;
        m["dtypes"] = std::move(dtypes);
        m["shards"] = st.files.size();
      }
      m["fingerprint_method"] =
          "sha256 over the header, metadata and tensor table (not the weights)";
    } catch (const record::ModelFileError& e) {
      throw UsageError(std::string("--model-file: ") + e.what());
    }
  }
  if (!unknown.empty()) m["unknown"] = std::move(unknown);
  return m;
}

}  // namespace

workload::Api parse_api(const std::string& api) {
  if (api == "chat") return workload::Api::kChat;
  if (api == "completions") return workload::Api::kCompletions;
  throw UsageError("--api: '" + api + "' is not an API; use chat or completions");
}

void validate_common(const RunOptions& o) {
  // Each numeric flag's range is checked as it is parsed (app/flag_values.h); these are the
  // checks of words and of flags together.
  parse_api(o.api);
  if (o.telemetry != "auto" && o.telemetry != "off") {
    throw UsageError("--telemetry: '" + o.telemetry + "'; use auto or off");
  }
  if (o.url && o.engine_spec) {
    throw UsageError(
        "--url and --engine exclude each other: measure a running server (--url) or "
        "let dyno launch one (--engine)");
  }
  if (o.url && !o.model) {
    throw UsageError(
        "--model is required with --url: name the model the server serves (see its /v1/models)");
  }
  if (o.plugin && o.url) {
    throw UsageError(
        "--plugin and --url exclude each other: --plugin runs an engine inside dyno, --url "
        "measures a server; pick one");
  }
  if (o.plugin && o.engine_spec) {
    throw UsageError(
        "--plugin and --engine exclude each other: --plugin runs an engine inside "
        "dyno, --engine launches one as a process; pick one");
  }
  if (o.plugin_config && !o.plugin) {
    throw UsageError("--plugin-config is the configuration of a --plugin; give --plugin too");
  }
}

namespace {

/// --plugin as given when that file exists; a bare file name is also looked up next to the dyno
/// binary (where the build puts libdyno_sim_plugin.so). A path without '/' gets "./", so dlopen
/// never searches the library path for it.
std::filesystem::path resolve_plugin_path(const std::string& given) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool bare = given.find('/') == std::string::npos;
  if (fs::exists(given, ec)) return bare ? fs::path(".") / given : fs::path(given);
  if (bare) {
    const fs::path beside = fs::read_symlink("/proc/self/exe", ec).parent_path() / given;
    if (!ec && fs::exists(beside, ec)) return beside;
  }
  return given;  // PluginEngine reports it missing
}

}  // namespace

EngineSession::EngineSession(const RunOptions& options, workload::Api api) {
  RunOptions o = options;
  std::string url_text;
  if (o.plugin) {
    // An in-process engine: loaded and created once for the whole command.
    const std::filesystem::path path = resolve_plugin_path(*o.plugin);
    plugin_config_ = o.plugin_config.value_or("");
    try {
      plugin_ = std::make_unique<transport::PluginEngine>(path.string(), plugin_config_);
    } catch (const transport::PluginError& e) {
      throw UsageError(std::string("--plugin: ") + e.what());
    }
    plugin_file_ = path.filename().string();
    plugin_sha256_ = record::sha256_hex_file(path);
    const transport::PluginIdentity& id = plugin_->identity();
    if (o.model) {
      model_ = *o.model;
    } else if (id.model_id) {
      model_ = *id.model_id;
    } else {
      throw UsageError("--model is required: the plugin's engine (" + id.engine_name +
                       ") does not say which model it serves");
    }
    metrics_missing_ = true;  // no /metrics to scrape in-process
  } else if (o.engine_spec) {
    engine::EngineSpec spec;
    try {
      spec = engine::load_spec(*o.engine_spec);
    } catch (const engine::SpecError& e) {
      throw UsageError(std::string("--engine: ") + e.what());
    }
    // The spec's model file and revision identify the model unless the flags say otherwise.
    if (!o.model_file && spec.model_file) o.model_file = spec.model_file;
    if (!o.model_revision && spec.model_revision) o.model_revision = spec.model_revision;
    source_ = source_identity(spec.checkout);
    launched_ = std::make_unique<LaunchedEngine>(std::move(spec), api, api_key_from_env(),
                                                 install_stop_signals());
    url_text = launched_->base_url();
    model_ = o.model.value_or(launched_->spec().model);
  } else if (o.url) {
    url_text = *o.url;
    model_ = *o.model;
  } else {
    try {
      profile_ = sim::resolve_profile(o.profile);
    } catch (const sim::ProfileError& e) {
      throw UsageError(std::string("--profile: ") + e.what());
    }
    sim::ServerOptions so;
    so.profile = *profile_;
    so.seed = o.seed;
    embedded_ = std::make_unique<sim::Server>(so);
    url_text = "http://127.0.0.1:" + std::to_string(embedded_->start()) + "/v1";
    model_ = o.model.value_or(profile_->model_name);
  }
  try {
    if (!plugin_) config_.url = transport::BaseUrl::parse(url_text);
  } catch (const transport::UrlError& e) {
    throw UsageError(std::string("--url: ") + e.what());
  }
  config_.model = model_;
  config_.api = api;
  config_.stream = !o.no_stream;
  config_.api_key = api_key_from_env();
  config_.keep_output_text = o.keep_outputs;
  config_.tls_verify = !o.insecure;
  config_.ca_file = o.ca_file;
  config_.connect_timeout = to_ms(o.connect_timeout_s);
  if (o.first_token_timeout_s) config_.first_token_timeout = to_ms(*o.first_token_timeout_s);
  if (o.timeout_s) config_.total_timeout = to_ms(*o.timeout_s);
  config_.derive_timeouts = true;  // a request without a limit gets one from its size
  if (o.idle_timeout_s > 0) config_.idle_timeout = to_ms(o.idle_timeout_s);
  model_json_ = model_identity(o, model_);
  if (o.url) {  // what the server says it is (name, version, model), from its own endpoints
    reported_ = query_engine_identity(url_text, known_identity_paths(), config_.api_key,
                                      config_.tls_verify, config_.ca_file);
  }
  start_telemetry(o);
  if (config_.ca_file) {  // fail on a bad CA file now, before any record exists
    transport::EventLoop probe_loop;
    try {
      transport::HttpTarget probe(probe_loop, config_);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--ca-file: ") + e.what());
    }
  }
}

void EngineSession::start_telemetry(const RunOptions& o) {
  if (o.telemetry == "off") return;
  // The engine's processes: this one when the simulated engine runs in it.
  std::vector<int> pids;
  if (embedded_ || plugin_) pids.push_back(static_cast<int>(::getpid()));
  if (launched_) pids.push_back(launched_->pid());
  monitor_ = std::make_unique<telemetry::Monitor>(
      telemetry::default_samplers(o.nvml_library, o.sysfs_root, o.proc_root),
      static_cast<std::int64_t>(o.telemetry_period_ms * 1e6), pids);
  monitor_->start();
  if (!monitor_->active()) return;
  // Idle baseline: after the engine is ready, before any request (warm-up included).
  if (has_power_source(*monitor_) && o.idle_baseline_s > 0) {
    std::cerr << "dyno: measuring the idle baseline for " << o.idle_baseline_s
              << " s (--idle-baseline)\n";
    idle_ = measure_idle(*monitor_, o.idle_baseline_s);
  } else if (!gpu_identities(*monitor_).empty()) {
    // A couple of samples, for the VRAM snapshot after load.
    std::this_thread::sleep_for(std::chrono::nanoseconds(monitor_->period_ns() * 2));
  }
  vram_after_load_ = vram_used_now(*monitor_);
}

EngineSession::~EngineSession() {
  if (monitor_) monitor_->stop();
  if (embedded_) embedded_->stop();
  if (launched_) {
    const auto r = launched_->stop();
    if (r.was_running) {
      std::cerr << "dyno: engine " << launched_->spec().name << " stopped ("
                << (r.graceful ? launched_->spec().stop_signal
                               : std::string("SIGKILL after ") + launched_->spec().stop_signal)
                << ", " << fmt(r.stop_s, 1) << " s)\n";
    }
  }
}

json::object EngineSession::engine_json(std::uint64_t cell_index) const {
  json::object engine;
  if (launched_) {
    const engine::EngineSpec& spec = launched_->spec();
    const json::object& rep = launched_->reported();
    engine["name"] = spec.name;
    engine["version"] = rep.contains("version") ? rep.at("version") : json::value(nullptr);
    engine["reached"] =
        json::object{{"kind", "launched"}, {"scheme", "http"}, {"path", config_.url.base_path}};
    engine["launch"] = launched_->launch_json(cell_index);
    engine["engine_args"] = spec.engine_args;
    engine["topology"] = spec.topology;
    engine["source"] = source_;
    engine["reported"] = rep;
  } else if (embedded_) {
    engine["name"] = "dyno-sim";
    engine["version"] = build_info::kVersion;
    engine["reached"] =
        json::object{{"kind", "embedded-sim"}, {"scheme", "http"}, {"path", config_.url.base_path}};
    engine["sim_profile"] = json::parse(sim::profile_to_json(*profile_));
  } else if (plugin_) {
    const transport::PluginIdentity& id = plugin_->identity();
    const auto text = [](const std::optional<std::string>& v) {
      return v ? json::value(*v) : json::value(nullptr);
    };
    engine["name"] = id.engine_name;
    engine["version"] = text(id.engine_version);
    engine["reached"] = json::object{
        {"kind", "plugin"}, {"file", plugin_file_}, {"sha256", plugin_sha256_}, {"abi_version", 1}};
    engine["identity"] =
        json::object{{"engine_name", id.engine_name},
                     {"engine_version", text(id.engine_version)},
                     {"model_id", text(id.model_id)},
                     {"model_fingerprint", text(id.model_fingerprint)},
                     {"args", id.args_json ? json::parse(*id.args_json) : json::value(nullptr)}};
    engine["engine_args"] = json::object{{"plugin_config", plugin_config_}};
    engine["api_key_used"] = false;
    return engine;
  } else {
    const auto reported = [this](const char* k) {
      return reported_.contains(k) ? reported_.at(k) : json::value(nullptr);
    };
    engine["name"] = reported("name");
    engine["version"] = reported("version");
    engine["reached"] = json::object{{"kind", "http"},
                                     {"scheme", config_.url.tls ? "https" : "http"},
                                     {"path", config_.url.base_path}};
    engine["reported"] = reported_;
  }
  if (!engine.contains("engine_args")) engine["engine_args"] = json::object();
  engine["api_key_used"] = config_.api_key.has_value();
  return engine;
}

namespace {

transport::TokenizeClientOptions tokenize_options(const EngineSession& engine, double timeout_s) {
  transport::TokenizeClientOptions co;
  co.timeout = to_ms(timeout_s);
  co.tls_verify = engine.target_config().tls_verify;
  co.ca_file = engine.target_config().ca_file;
  return co;
}

}  // namespace

namespace {

/// The URL whose /tokenize counts prompts; an in-process plugin has none.
const transport::BaseUrl& tokenize_url(const EngineSession& engine) {
  if (engine.plugin() != nullptr) {
    throw UsageError(
        "the in-process engine (--plugin) has no /tokenize, so prompt lengths cannot be "
        "measured with its tokenizer");
  }
  return engine.target_config().url;
}

}  // namespace

PromptCounter::PromptCounter(const EngineSession& engine, double timeout_s)
    : client_(tokenize_url(engine), engine.model(), engine.target_config().api_key,
              tokenize_options(engine, timeout_s)) {}

std::int64_t PromptCounter::operator()(const workload::Request& r) {
  if (!r.is_chat()) return client_.count_text(*r.prompt);
  const std::optional<std::int64_t> n = client_.count_chat(r.messages);
  if (!n) {
    throw UsageError(std::string("--api chat: the target's tokenizer (") +
                     transport::flavor_name(client_.flavor()) +
                     ") cannot count chat prompts; use --api completions");
  }
  return *n;
}

const char* PromptCounter::flavor() { return transport::flavor_name(client_.flavor()); }

std::optional<std::string> EngineSession::scrape_metrics() {
  if (metrics_missing_) return std::nullopt;
  try {
    if (!metrics_client_) {
      metrics_client_ = std::make_unique<transport::TokenizeClient>(
          config_.url, model_, config_.api_key, tokenize_options(*this, 10.0));
    }
    auto text = metrics_client_->get_text("/metrics");
    // Two scrapes per cell, far apart: no idle connection is held on the server meanwhile.
    metrics_client_->disconnect();
    if (!text) metrics_missing_ = true;
    return text;
  } catch (const std::exception&) {
    metrics_missing_ = true;  // an engine without a usable /metrics is not an error
    return std::nullopt;
  }
}

std::string EngineSession::display() const {
  if (launched_) return launched_->spec().name + " (launched, " + config_.url.to_string() + ")";
  if (plugin_) {
    const transport::PluginIdentity& id = plugin_->identity();
    return id.engine_name + (id.engine_version ? " " + *id.engine_version : std::string()) +
           " (plugin " + plugin_file_ + ")";
  }
  return embedded_ ? "dyno-sim (embedded, profile " + profile_->name + ")"
                   : config_.url.to_string();
}

void fill_sampling_defaults(std::vector<workload::Request>& requests, const RunOptions& o) {
  for (auto& r : requests) {
    if (!r.sampling.max_tokens && o.max_tokens) r.sampling.max_tokens = o.max_tokens;
    if (!r.sampling.temperature) r.sampling.temperature = o.temperature;
  }
}

workload::RequestStream stream_as_given(const RunOptions& o, workload::Api api,
                                        std::uint64_t synthetic_count) {
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
      if ((api == workload::Api::kChat) != r.is_chat()) {
        throw UsageError("--stream: request '" + r.id + "' is a " +
                         (r.is_chat() ? "chat" : "completion") + " request but --api is " + o.api +
                         "; use --api " + (r.is_chat() ? "chat" : "completions"));
      }
    }
  } else {
    workload::SyntheticOptions syn;
    syn.api = api;
    syn.input_tokens = o.input_tokens;
    syn.output_tokens = o.output_tokens;
    syn.seed = o.seed;
    syn.count = std::max<std::uint64_t>(1, synthetic_count);
    // Both factors are bounded by their flags; their product is the memory the prompts take.
    const std::uint64_t tokens = syn.count * static_cast<std::uint64_t>(o.input_tokens);
    if (tokens > flags::kMaxSyntheticTokens) {
      throw UsageError("the synthetic stream would hold " + std::to_string(syn.count) +
                       " requests x --input-tokens " + std::to_string(o.input_tokens) + " = " +
                       std::to_string(tokens) + " prompt tokens, more than the limit of " +
                       std::to_string(flags::kMaxSyntheticTokens) +
                       "; lower -n (or --warmup, --min-requests) or --input-tokens, or give a "
                       "--stream");
    }
    stream = workload::make_synthetic_stream(syn);
  }
  return stream;  // sha256: the canonical hash of the requests as given
}

workload::RequestStream build_stream(const RunOptions& o, workload::Api api,
                                     std::uint64_t synthetic_count) {
  workload::RequestStream stream = stream_as_given(o, api, synthetic_count);
  // Flags fill what the stream leaves unset (the stream's own values win); `sha256` stays the
  // hash of the requests as given, the one `stream make` and `stream import` print. What the
  // flags set is the manifest's workload.sampling.
  fill_sampling_defaults(stream.requests, o);
  return stream;
}

CellOutcome run_cell(EngineSession& engine, const CellSpec& cell, const RunOptions& o,
                     const std::atomic<bool>& stop) {
  const ConsoleStyle style = detect_style(o.color, o.quiet);
  CellOutcome out;
  const auto started = std::chrono::system_clock::now();
  out.run_id = record::make_run_id(started, cell.label);
  // Answers that will be scored are kept, with or without --keep-outputs (an audit re-scores
  // them from the record).
  load::LoadConfig load_config = cell.load;
  const bool scored =
      std::any_of(cell.requests.begin(), cell.requests.end(),
                  [](const workload::Request& r) { return r.expected.has_value(); });
  if (scored) load_config.keep_output_text = true;
  transport::HttpTargetConfig tc = engine.target_config();
  tc.request_id_prefix = out.run_id + "-";
  tc.keep_output_text = load_config.keep_output_text;
  // Never hold more idle connections than the load can use (a closed loop needs C at most).
  if (!load_config.open_loop) tc.max_idle_connections = load_config.concurrency;
  transport::EventLoop loop;
  // The engine's target: HTTP (a server or the embedded sim), or the in-process plugin.
  std::unique_ptr<transport::HttpTarget> http_target;
  std::unique_ptr<transport::PluginTarget> plugin_target;
  if (engine.plugin() != nullptr) {
    transport::PluginTargetConfig pc;
    pc.model = engine.model();
    pc.api = tc.api;
    pc.stream = tc.stream;
    pc.request_id_prefix = tc.request_id_prefix;
    pc.first_token_timeout = tc.first_token_timeout;
    pc.total_timeout = tc.total_timeout;
    plugin_target = std::make_unique<transport::PluginTarget>(loop, *engine.plugin(), pc);
  } else {
    http_target = std::make_unique<transport::HttpTarget>(loop, tc);
  }
  transport::Target& target =
      plugin_target ? static_cast<transport::Target&>(*plugin_target) : *http_target;
  record::RunWriter writer(o.runs_root, out.run_id, load_config.keep_event_times);
  if (tc.api_key) writer.set_secrets({*tc.api_key});  // never on disk, even when echoed
  out.dir = writer.dir();

  const std::string stream_sha =
      cell.stream_sha256.empty() ? workload::stream_sha256(cell.requests) : cell.stream_sha256;
  json::object manifest;
  manifest["schema_version"] = record::kSchemaVersion;
  manifest["run_id"] = out.run_id;
  manifest["label"] = cell.label.empty() ? json::value(nullptr) : json::value(cell.label);
  manifest["campaign"] = cell.campaign ? json::value(*cell.campaign) : json::value(nullptr);
  manifest["status"] = "running";
  manifest["started_at"] = record::iso8601_utc(started);
  manifest["ended_at"] = nullptr;
  manifest["harness"] = harness_identity();
  const std::uint64_t cell_index = engine.begin_cell();
  manifest["engine"] = engine.engine_json(cell_index);
  manifest["model"] = engine.model_json();
  manifest["hardware"] = hardware_identity();
  json::object sampling = cell.sampling;
  sampling["stream"] = tc.stream;
  manifest["workload"] =
      json::object{{"protocol", cell.protocol},
                   {"api", engine.api() == workload::Api::kChat ? "chat" : "completions"},
                   {"request_stream", json::object{{"source", cell.stream_source},
                                                   {"sha256", stream_sha},
                                                   {"count", cell.requests.size()},
                                                   {"cycle", cell.stream_cycles}}},
                   {"sampling", std::move(sampling)},
                   {"warmup_requests", cell.load.warmup}};
  const auto& sched = cell.load.schedule;
  manifest["load"] = json::object{
      {"mode", cell.load.open_loop ? "open" : "closed"},
      {"concurrency",
       cell.load.open_loop ? json::value(nullptr) : json::value(cell.load.concurrency)},
      {"rate_per_s", sched ? json::value(sched->rate_per_s) : json::value(nullptr)},
      {"arrival", sched ? json::value(load::to_string(sched->arrival)) : json::value(nullptr)},
      {"burstiness", sched ? json::value(sched->burstiness) : json::value(nullptr)},
      {"seed", o.seed},
      {"requests", opt_u(cell.load.requests)},
      {"duration_s", opt(cell.load.duration_s)},
      {"timeouts_s", timeouts_json(o)}};
  manifest["slo"] = json::object{{"ttft_s", opt(cell.slo.ttft_s)},
                                 {"tpot_s", opt(cell.slo.tpot_s)},
                                 {"e2e_s", opt(cell.slo.e2e_s)}};
  {
    json::object& hw = manifest["hardware"].as_object();
    if (engine.monitor() != nullptr) hw["gpus"] = gpu_identities(*engine.monitor());
    if (hw["gpus"].as_array().empty()) {
      hw["unknown"].as_object()["gpus"] =
          engine.monitor() == nullptr
              ? "telemetry off (--telemetry off): GPUs are identified by their telemetry source"
              : "no GPU telemetry source is available on this host (NVML, amdgpu; see dyno "
                "doctor)";
    }
  }
  manifest["warnings"] = json::array();
  manifest["scrubbed_fields"] = json::array();
  manifest["evidence"] = json::array();
  writer.write_json("manifest.json", manifest);

  // Server-side counters: a /metrics snapshot before and after the cell (evidence/).
  const std::optional<std::string> metrics_before = engine.scrape_metrics();
  // ...and its gauges (running, waiting, KV-cache use) sampled on the telemetry period.
  std::unique_ptr<GaugeSampler> gauges;
  if (metrics_before && o.telemetry != "off") {
    gauges = std::make_unique<GaugeSampler>(tc.url, tc.api_key, tc.tls_verify, tc.ca_file,
                                            static_cast<std::int64_t>(o.telemetry_period_ms * 1e6));
    gauges->start();
  }

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
  hooks.stop_requested = &stop;
  LaunchedEngine* launched = engine.launched();
  const std::uint64_t log_begin = launched != nullptr ? launched->log_size() : 0;
  if (launched != nullptr) hooks.engine_exited = &launched->exited_flag();

  const double sim_cpu_before = engine.embedded() ? engine.embedded()->cpu_seconds() : 0.0;
  const double cpu_before = cpu_seconds_self();
  const double loop_cpu_before = cpu_seconds_this_thread();
  load::LoadResult result = load::run_load(loop, target, cell.requests, load_config, hooks);
  const double cpu_after = cpu_seconds_self();
  if (gauges) gauges->stop();
  const double loop_cpu = cpu_seconds_this_thread() - loop_cpu_before;
  const double sim_cpu =
      engine.embedded() ? engine.embedded()->cpu_seconds() - sim_cpu_before : 0.0;
  bar.finish();

  std::optional<engine::ExitStatus> crash;
  if (launched != nullptr) {
    // Requests that found the engine's port closed may have raced its exit: give a process
    // that is shutting down a moment to be reaped before calling the cell's status.
    const bool lost_engine =
        std::any_of(result.traces.begin(), result.traces.end(), [](const metrics::Trace& t) {
          return t.error_category == "connect" || t.error_category == "stream_truncated";
        });
    if (lost_engine) launched->wait_for_exit(std::chrono::milliseconds(3000));
    crash = launched->unexpected_exit();
    // Requests that could not even connect because the engine had exited were never sent:
    // they are not failures of the engine's serving, so they leave the figures (cancelled).
    if (crash) mark_unsent_after_exit(result.traces);
  }

  if (scored) score_traces(cell.requests, result.traces);

  metrics::SummaryOptions so;
  if (!cell.load.open_loop) so.declared_concurrency = cell.load.concurrency;
  so.open_loop = cell.load.open_loop;
  so.slo = cell.slo;
  // The embedded engine runs on a thread of this process: its CPU is not the client's.
  so.client.cpu_s = std::max(0.0, cpu_after - cpu_before - sim_cpu);
  // An in-process plugin's threads are not the client's either, and their CPU time is not
  // known apart: the client is the event-loop thread (this one).
  if (plugin_target) so.client.cpu_s = loop_cpu;
  so.client.peak_rss_bytes = peak_rss_bytes();
  so.client.loop_lag_s = result.loop_lag_s;
  out.summary = metrics::summarize_run(result.traces, so);
  const ServerTimingFigures server_timings = server_timing_figures(result.traces);
  if (auto w = prefill_gap_warning(server_timings)) out.summary.warnings.push_back(std::move(*w));

  // Energy over the service window W (earliest sent to latest done of the measured requests).
  std::optional<std::int64_t> w_begin, w_end;
  std::int64_t output_tokens = 0;
  for (const auto& t : result.traces) {
    if (!t.measured() || t.status == metrics::RequestStatus::kCancelled) continue;
    if (t.sent_ns) w_begin = std::min(w_begin.value_or(*t.sent_ns), *t.sent_ns);
    if (t.done_ns) w_end = std::max(w_end.value_or(*t.done_ns), *t.done_ns);
    if (t.ok()) output_tokens += t.output_tokens.value_or(0);
  }
  const std::int64_t t0 = result.t0_steady_ns;
  const std::int64_t cell_end = transport::steady_now_ns();
  json::object energy;
  const telemetry::Monitor* monitor = engine.monitor();
  if (monitor != nullptr && monitor->active() && w_begin && w_end) {
    energy = energy_section(*monitor, engine.idle(), t0 + *w_begin, t0 + *w_end, output_tokens,
                            engine.vram_after_load(), out.summary.warnings);
    writer.write_text("telemetry.jsonl", telemetry_jsonl(*monitor, t0, cell_end, t0));
  } else {
    energy = json::object{
        {"energy_j", nullptr},
        {"reason", monitor == nullptr ? "telemetry off (--telemetry off)"
                   : !monitor->active()
                       ? "no telemetry source is available on this host (see dyno doctor)"
                       : "no measured request"}};
  }
  manifest["telemetry"] =
      telemetry_manifest(monitor, o.telemetry, o.telemetry_period_ms, engine.idle(), t0, cell_end);
  out.interrupted = result.interrupted;
  out.status = final_status(out.summary, result.interrupted);
  if (crash) {
    out.engine_crashed = true;
    out.status = "engine_crashed";
  }
  json::object summary_json{
      {"schema_version", record::kSchemaVersion}, {"run_id", out.run_id}, {"status", out.status}};
  for (auto& kv : record::summary_to_json(out.summary)) summary_json[kv.key()] = kv.value();
  summary_json["client"].as_object()["connections_opened"] =
      http_target ? http_target->connections_opened() : 0;
  summary_json["energy"] = std::move(energy);
  json::array evidence;
  if (metrics_before) {
    if (const std::optional<std::string> metrics_after = engine.scrape_metrics()) {
      for (const auto& [name, text] : {std::pair{"evidence/metrics_before.txt", &*metrics_before},
                                       std::pair{"evidence/metrics_after.txt", &*metrics_after}}) {
        writer.write_text(name, *text);
        evidence.push_back(json::object{{"path", name}, {"sha256", record::sha256_hex(*text)}});
      }
      summary_json["server"] = server_section(*metrics_before, *metrics_after);
    }
  }
  if (gauges && gauges->scrapes() > 0) {
    const std::string series = gauges->evidence_jsonl(result.t0_steady_ns);
    writer.write_text("evidence/metrics_gauges.jsonl", series);
    evidence.push_back(json::object{{"path", "evidence/metrics_gauges.jsonl"},
                                    {"sha256", record::sha256_hex(series)}});
    if (summary_json.contains("server")) {
      summary_json["server"].as_object()["gauges"] = gauges->summary_json();
    }
  }
  if (!summary_json.contains("server")) {
    summary_json["server"] = json::object{
        {"source", nullptr},
        {"reason", !metrics_before ? "the engine exposes no /metrics"
                   : crash         ? "no /metrics snapshot after the cell: the engine had exited"
                                   : "the /metrics snapshot after the cell failed"}};
  }
  if (launched != nullptr) {
    const std::string log = launched->cell_log(log_begin, launched->log_size());
    writer.write_text("evidence/engine.log", log);
    evidence.push_back(
        json::object{{"path", "evidence/engine.log"}, {"sha256", record::sha256_hex(log)}});
  }
  if (crash) {
    const LaunchedEngine::LogTail tail = launched->log_tail(40);
    manifest["engine"].as_object()["exit"] =
        json::object{{"description", crash->describe()},
                     {"code", crash->code ? json::value(*crash->code) : json::value(nullptr)},
                     {"signal", crash->signal ? json::value(*crash->signal) : json::value(nullptr)},
                     {"at_ns", crash->at_ns - result.t0_steady_ns},
                     {"log_tail", tail.text},
                     {"log_tail_probe_lines_skipped", tail.probe_lines_skipped}};
  }
  // The engine's per-response timings (llama.cpp), beside the /metrics figures above.
  summary_json["server"].as_object()["timings"] = server_timings_json(server_timings);
  manifest["evidence"] = std::move(evidence);
  if (plugin_target) {
    summary_json["client"].as_object()["note"] =
        "the engine ran in this process (--plugin): cpu_s is the event-loop thread's CPU time "
        "only; peak_rss_bytes is of the whole process";
  }
  if (engine.embedded()) {
    summary_json["client"].as_object()["note"] =
        "the simulated engine ran in this process on its own thread: cpu_s excludes that "
        "thread's CPU time; peak_rss_bytes is of the whole process";
  }
  writer.write_json("summary.json", summary_json);
  json::array warnings;
  for (const auto& w : out.summary.warnings) {
    warnings.push_back(json::object{{"code", w.code}, {"message", w.message}, {"hint", w.hint}});
  }
  manifest["warnings"] = std::move(warnings);
  manifest["status"] = out.status;
  manifest["ended_at"] = record::iso8601_utc(std::chrono::system_clock::now());
  manifest["clock"] = json::object{{"source", "steady_clock (CLOCK_MONOTONIC)"},
                                   {"t0_steady_ns", result.t0_steady_ns},
                                   {"measured_start_ns", result.measured_start_ns}};
  if (plugin_target) {
    // Which clock stamped the token events and request ends (docs/plugins.md).
    const transport::PluginStampCounts stamps = plugin_target->stamps();
    manifest["clock"].as_object()["event_stamps"] = json::object{
        {"engine", stamps.engine}, {"receive", stamps.receive}, {"rejected", stamps.rejected}};
  }
  writer.write_json("manifest.json", manifest);
  writer.finalize(result.traces);
  if (auto w = writer.invalid_utf8_warning()) out.summary.warnings.push_back(std::move(*w));
  record::index_finished_run(o.runs_root, writer.dir(), std::cerr);  // a warning if it fails
  out.traces = std::move(result.traces);

  if (cell.print_summary) {
    RunHeadline head;
    head.run_id = out.run_id;
    head.engine = engine.display();
    head.model = engine.model();
    head.api = o.api + (tc.stream ? ", streamed" : ", not streamed");
    head.load = cell.load_text;
    head.status = out.status;
    head.record_dir = writer.dir().string();
    head.slo_text = cell.slo_text;
    head.server_timings = server_timings;
    if (const auto* rate =
            summary_json.at("server").as_object().if_contains("spec_decode_acceptance_rate");
        rate != nullptr && rate->is_number()) {
      head.metrics_acceptance_rate = rate->to_number<double>();
    }
    const auto& e = summary_json.at("energy").as_object();
    if (const auto* j = e.if_contains("energy_j"); j != nullptr && !j->is_null()) {
      const auto n = [&e](const char* k) -> std::optional<double> {
        const auto* v = e.if_contains(k);
        return v != nullptr && v->is_number() ? std::optional<double>(v->to_number<double>())
                                              : std::nullopt;
      };
      head.energy = fmt(n("energy_j"), 1) + " J (" + std::string(e.at("scope").as_string()) +
                    ") · " + fmt(n("output_tokens_per_j"), 3) + " tok/J · " +
                    fmt(n("joules_per_output_token"), 3) + " J/token gross, " +
                    fmt(n("idle_subtracted_joules_per_output_token"), 3) + " net of idle";
    }
    if (o.json) {
      json::object printed = summary_json;
      printed["record_dir"] = writer.dir().string();
      std::cout << record::pretty_json(printed);
    } else {
      std::cout << render_summary(head, out.summary, style.color);
    }
    std::cout.flush();
  }
  std::cerr << render_warnings(out.summary.warnings,
                               detect_style(o.color, true).color && ::isatty(STDERR_FILENO) != 0);
  out.summary_json = std::move(summary_json);

  if (crash) {
    std::cerr << "dyno: engine " << launched->spec().name << " " << crash->describe()
              << " during the run; the record keeps every finished request and the log's tail\n";
    out.exit_code = kExitRunFailed;
  } else if (out.interrupted) {
    out.exit_code = kExitInterrupted;
  } else if (out.status == std::string("failed")) {
    out.exit_code = kExitRunFailed;
  } else if (out.summary.error_rate && *out.summary.error_rate > o.error_budget) {
    std::cerr << "dyno: error rate " << fmt(*out.summary.error_rate * 100.0, 1)
              << " % exceeds the error budget of " << fmt(o.error_budget * 100.0, 1)
              << " % (--error-budget)\n";
    out.exit_code = kExitRunFailed;
  }
  return out;
}

}  // namespace dyno::app
