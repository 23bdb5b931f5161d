#include "engine_session/engine_session.h"

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <sstream>
#include <thread>

#include "digest/digest.h"
#include "dyno/build_info.h"
#include "engine/launch.h"
#include "engine/server_gauges.h"
#include "engine/server_metrics.h"
#include "engine/server_timings.h"
#include "engine/spec.h"
#include "record/model_identity.h"
#include "record/record_json.h"
#include "record/run_id.h"
#include "record/run_writer.h"
#include "sim/server.h"
#include "store/run_index.h"
#include "telemetry/energy_report.h"
#include "transport/event_loop.h"
#include "transport/timeouts.h"
#include "workload/request_stream.h"
#include "workload/scoring.h"
#include "workload/synthetic.h"

namespace dyno::engine_session {

namespace json = boost::json;

namespace {

std::chrono::milliseconds to_ms(double seconds) {
  // Capped at a year, so that any limit still fits the clock's nanoseconds.
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::min(seconds, 3.2e7) * 1e3));
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
record::ModelIdentity model_identity_of(const TargetOptions& o, const std::string& model_id) {
  record::ModelIdentity m;
  m.id = model_id;
  m.revision = o.model_revision;
  record::TextMap unknown;
  if (!o.model_revision) unknown.set("revision", "not given (--model-revision)");
  if (!o.model_file) {
    unknown.set("fingerprint", "no weights file given (--model-file)");
  } else {
    const std::filesystem::path path(*o.model_file);
    about("--model-file", [&] {
      if (path.extension() == ".gguf") {
        const record::GgufInfo g = record::read_gguf(path);
        m.format = "gguf";
        m.fingerprint = g.fingerprint;
        m.architecture = g.architecture;
        m.parameter_count = g.parameter_count;
        m.quantization = g.quantization;
        m.context_length = g.context_length;
        m.tokenizer_model = g.tokenizer_model;
      } else {
        const record::SafetensorsInfo st = record::read_safetensors({path});
        m.format = "safetensors";
        m.fingerprint = st.fingerprint;
        m.parameter_count = st.parameter_count;
        m.dtypes.emplace(st.dtypes.begin(), st.dtypes.end());
        m.shards = st.files.size();
      }
      m.fingerprint_method = "sha256 over the header, metadata and tensor table (not the weights)";
    });
  }
  if (!unknown.empty()) m.unknown = std::move(unknown);
  return m;
}

}  // namespace

workload::Api parse_api(const std::string& api) {
  if (api == "chat") return workload::Api::kChat;
  if (api == "completions") return workload::Api::kCompletions;
  throw UsageError("--api: '" + api + "' is not an API; use chat or completions");
}

void validate_target(const TargetOptions& o, const telemetry::TelemetryOptions& t) {
  // Each numeric flag's range is checked as it is parsed (app/flag_values.h); these are the
  // checks of words and of flags together.
  parse_api(o.api);
  if (t.mode != "auto" && t.mode != "off") {
    throw UsageError("--telemetry: '" + t.mode + "'; use auto or off");
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

EngineSession::EngineSession(const TargetOptions& target,
                             const telemetry::TelemetryOptions& telemetry, std::uint64_t seed,
                             workload::Api api, const std::atomic<bool>& stop)
    : options_(target), telemetry_(telemetry) {
  TargetOptions& o = options_;
  std::string url_text;
  if (o.plugin) {
    // An in-process engine: loaded and created once for the whole command.
    const std::filesystem::path path = resolve_plugin_path(*o.plugin);
    plugin_config_ = o.plugin_config.value_or("");
    plugin_ = about("--plugin", [&] {
      return std::make_unique<transport::PluginEngine>(path.string(), plugin_config_);
    });
    plugin_file_ = path.filename().string();
    plugin_sha256_ = digest::sha256_hex_file(path);
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
    engine::EngineSpec spec = about("--engine", [&] { return engine::load_spec(*o.engine_spec); });
    // --model and --model-file replace the spec's (the engine is launched with them: a
    // campaign plan's models run on one arm's spec). The spec's model file and revision
    // identify the model unless the flags say otherwise.
    if (o.model) spec.model = *o.model;
    if (o.model_file) spec.model_file = o.model_file;
    if (!o.model_file && spec.model_file) o.model_file = spec.model_file;
    if (!o.model_revision && spec.model_revision) o.model_revision = spec.model_revision;
    source_ = source_identity(spec.checkout);
    launched_ =
        std::make_unique<engine::LaunchedEngine>(std::move(spec), api, api_key_from_env(), stop);
    url_text = launched_->base_url();
    model_ = o.model.value_or(launched_->spec().model);
  } else if (o.url) {
    url_text = *o.url;
    model_ = *o.model;
  } else {
    profile_ = about("--profile", [&] { return sim::resolve_profile(o.profile); });
    sim::ServerOptions so;
    so.profile = *profile_;
    so.seed = seed;
    embedded_ = std::make_unique<sim::Server>(so);
    url_text = "http://127.0.0.1:" + std::to_string(embedded_->start()) + "/v1";
    model_ = o.model.value_or(profile_->model_name);
  }
  if (!plugin_) config_.url = about("--url", [&] { return transport::BaseUrl::parse(url_text); });
  config_.model = model_;
  config_.api = api;
  config_.stream = !o.no_stream;
  config_.api_key = api_key_from_env();
  config_.tls_verify = !o.insecure;
  config_.ca_file = o.ca_file;
  config_.connect_timeout = to_ms(o.connect_timeout_s);
  if (o.first_token_timeout_s) config_.first_token_timeout = to_ms(*o.first_token_timeout_s);
  if (o.timeout_s) config_.total_timeout = to_ms(*o.timeout_s);
  config_.derive_timeouts = true;  // a request without a limit gets one from its size
  if (o.idle_timeout_s > 0) config_.idle_timeout = to_ms(o.idle_timeout_s);
  model_identity_ = model_identity_of(o, model_);
  if (o.url) {  // what the server says it is (name, version, model), from its own endpoints
    reported_ = engine::query_engine_identity(url_text, engine::known_identity_paths(),
                                              config_.api_key, config_.tls_verify, config_.ca_file);
  }
  start_telemetry();
  if (config_.ca_file) {  // fail on a bad CA file now, before any record exists
    transport::EventLoop probe_loop;
    about("--ca-file", [&] { transport::HttpTarget probe(probe_loop, config_); });
  }
}

void EngineSession::start_telemetry() {
  const telemetry::TelemetryOptions& o = telemetry_;
  if (o.off()) return;
  // The engine's processes: this one when the simulated engine runs in it.
  std::vector<int> pids;
  if (embedded_ || plugin_) pids.push_back(static_cast<int>(::getpid()));
  if (launched_) pids.push_back(launched_->pid());
  monitor_ = std::make_unique<telemetry::Monitor>(
      telemetry::default_samplers(o.nvml_library, o.sysfs_root, o.proc_root),
      static_cast<std::int64_t>(o.period_ms * 1e6), pids);
  monitor_->start();
  if (!monitor_->active()) return;
  // Idle baseline: after the engine is ready, before any request (warm-up included).
  if (telemetry::has_power_source(*monitor_) && o.idle_baseline_s > 0) {
    std::cerr << "dyno: measuring the idle baseline for " << o.idle_baseline_s
              << " s (--idle-baseline)\n";
    idle_ = telemetry::measure_idle(*monitor_, o.idle_baseline_s);
  } else if (!telemetry::gpu_identities(*monitor_).empty()) {
    // A couple of samples, for the VRAM snapshot after load.
    std::this_thread::sleep_for(std::chrono::nanoseconds(monitor_->period_ns() * 2));
  }
  vram_after_load_ = telemetry::vram_snapshot(*monitor_);
}

EngineSession::~EngineSession() {
  if (monitor_) monitor_->stop();
  if (embedded_) embedded_->stop();
  if (launched_) {
    const auto r = launched_->stop();
    if (r.was_running) {
      std::ostringstream took;
      took << std::fixed << std::setprecision(1) << r.stop_s;
      std::cerr << "dyno: engine " << launched_->spec().name << " stopped ("
                << (r.graceful ? launched_->spec().stop_signal
                               : std::string("SIGKILL after ") + launched_->spec().stop_signal)
                << ", " << took.str() << " s)\n";
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

}  // namespace dyno::engine_session
