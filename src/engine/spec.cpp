#include "engine/spec.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "digest/digest.h"
#include "engine/toml.h"
#include "engine/toml_reader.h"
#include "error/registry.h"
#include "json/json_text.h"

namespace dyno::engine {

namespace json = boost::json;

namespace {

const Preset* find_preset(const std::string& name) { return registry::find(presets(), name); }

class Reader : public TomlReader<SpecError> {
 public:
  using TomlReader::TomlReader;

  std::optional<std::vector<std::string>> strings(const json::object& o, const std::string& key,
                                                  const std::string& path) const {
    const json::value* v = o.if_contains(key);
    if (v == nullptr) return std::nullopt;
    if (v->is_string()) {
      fail(path,
           "expected an array of strings, one per argument, e.g. [\"vllm\", \"serve\", "
           "\"{model}\"] (dyno runs no shell, so one string is not split)");
    }
    if (!v->is_array()) fail(path, "expected an array of strings");
    std::vector<std::string> out;
    for (const auto& e : v->as_array()) {
      if (e.is_string()) {
        out.emplace_back(e.as_string());
      } else if (e.is_int64() || e.is_double()) {
        out.push_back(json_text::compact(e));  // a bare number argument is its text
      } else {
        fail(path, "expected an array of strings; element " + json::serialize(e) +
                       " is neither a string nor a number");
      }
    }
    return out;
  }
};

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  for (std::size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) {
    s.replace(pos, from.size(), to);
  }
  return s;
}

std::string value_text(const json::value& v) {
  if (v.is_string()) return std::string(v.as_string());
  if (v.is_array()) {  // e.g. gpus = [0, 1] -> "0,1"
    std::string out;
    for (const auto& e : v.as_array()) {
      out += (out.empty() ? "" : ",") + value_text(e);
    }
    return out;
  }
  return json_text::compact(v);  // shortest round-trip numbers: 0.9, not 9E-1
}

}  // namespace

std::span<const Preset> presets() {
  static const std::vector<Preset> all = {
      {.name = "vllm",
       .describe = "vLLM's OpenAI-compatible server (vllm serve)",
       .command = {"vllm", "serve", "{model}", "--host", "{host}", "--port", "{port}"},
       .ready_path = "/health",
       .ready_status = 200,
       .stop_signal = "SIGINT",
       .grace_s = 30.0,
       .identity_paths = {"/version", "/v1/models"},
       .args_as_env = false,
       .unknown_as_dashes = true,
       .rules = {{"tp", "--tensor-parallel-size", ""},
                 {"pp", "--pipeline-parallel-size", ""},
                 {"gpu_memory_utilization", "--gpu-memory-utilization", ""},
                 {"max_model_len", "--max-model-len", ""},
                 {"max_num_seqs", "--max-num-seqs", ""},
                 {"max_num_batched_tokens", "--max-num-batched-tokens", ""},
                 {"kv_cache_dtype", "--kv-cache-dtype", ""},
                 {"enable_prefix_caching", "--enable-prefix-caching", "--no-enable-prefix-caching"},
                 {"dtype", "--dtype", ""},
                 {"quantization", "--quantization", ""}},
       .env = {},
       .needs_model_file = false,
       .default_model = ""},
      {.name = "sglang",
       .describe = "SGLang's server (python3 -m sglang.launch_server), with its metrics",
       .command = {"python3", "-m", "sglang.launch_server", "--model-path", "{model}", "--host",
                   "{host}", "--port", "{port}", "--enable-metrics"},
       .ready_path = "/health",
       .ready_status = 200,
       .stop_signal = "SIGINT",
       .grace_s = 30.0,
       .identity_paths = {"/get_server_info", "/server_info", "/get_model_info", "/v1/models"},
       .args_as_env = false,
       .unknown_as_dashes = true,
       .rules = {{"tp", "--tp-size", ""},
                 {"pp", "--pp-size", ""},
                 {"gpu_memory_utilization", "--mem-fraction-static", ""},
                 {"max_model_len", "--context-length", ""},
                 {"max_num_seqs", "--max-running-requests", ""},
                 {"max_num_batched_tokens", "--chunked-prefill-size", ""},
                 {"kv_cache_dtype", "--kv-cache-dtype", ""},
                 {"enable_prefix_caching", "", "--disable-radix-cache"},
                 {"dtype", "--dtype", ""},
                 {"quantization", "--quantization", ""}},
       .env = {},
       .needs_model_file = false,
       .default_model = ""},
      {.name = "llamacpp",
       .describe = "llama.cpp's llama-server, with its metrics (needs model_file)",
       .command = {"llama-server", "-m", "{model_file}", "--alias", "{model}", "--host", "{host}",
                   "--port", "{port}", "--metrics"},
       .ready_path = "/health",
       .ready_status = 200,
       .stop_signal = "SIGINT",
       .grace_s = 10.0,
       .identity_paths = {"/props", "/v1/models"},
       .args_as_env = false,
       .unknown_as_dashes = true,
       .rules = {{"max_model_len", "--ctx-size", ""},
                 {"max_num_seqs", "--parallel", ""},
                 {"max_num_batched_tokens", "--batch-size", ""},
                 {"kv_cache_dtype", "--cache-type-k", ""},
                 {"n_gpu_layers", "--n-gpu-layers", ""},
                 {"enable_prefix_caching", "", "--no-cache-prompt"},
                 {"flash_attn", "--flash-attn", ""}},
       .env = {},
       .needs_model_file = true,
       .default_model = ""},
      {.name = "tgi",
       .describe = "Hugging Face text-generation-inference (text-generation-launcher)",
       .command = {"text-generation-launcher", "--model-id", "{model}", "--hostname", "{host}",
                   "--port", "{port}"},
       .ready_path = "/health",
       .ready_status = 200,
       .stop_signal = "SIGTERM",
       .grace_s = 30.0,
       .identity_paths = {"/info", "/v1/models"},
       .args_as_env = false,
       .unknown_as_dashes = true,
       .rules = {{"tp", "--num-shard", ""},
                 {"max_model_len", "--max-total-tokens", ""},
                 {"max_num_seqs", "--max-concurrent-requests", ""},
                 {"max_num_batched_tokens", "--max-batch-prefill-tokens", ""},
                 {"quantization", "--quantize", ""},
                 {"dtype", "--dtype", ""}},
       .env = {},
       .needs_model_file = false,
       .default_model = ""},
      {.name = "ollama",
       .describe = "Ollama (ollama serve); engine args become its environment variables",
       .command = {"ollama", "serve"},
       .ready_path = "/api/version",
       .ready_status = 200,
       .stop_signal = "SIGTERM",
       .grace_s = 10.0,
       .identity_paths = {"/api/version", "/v1/models"},
       .args_as_env = true,
       .unknown_as_dashes = false,
       .rules = {{"max_num_seqs", "OLLAMA_NUM_PARALLEL", ""},
                 {"max_model_len", "OLLAMA_CONTEXT_LENGTH", ""},
                 {"kv_cache_dtype", "OLLAMA_KV_CACHE_TYPE", ""},
                 {"flash_attn", "OLLAMA_FLASH_ATTENTION", ""},
                 {"max_loaded_models", "OLLAMA_MAX_LOADED_MODELS", ""},
                 {"keep_alive", "OLLAMA_KEEP_ALIVE", ""}},
       .env = {{"OLLAMA_HOST", "{host}:{port}"}},
       .needs_model_file = false,
       .default_model = ""},
      {.name = "sim",
       .describe = "dyno's simulated engine (dyno sim): runs anywhere, model dyno-sim",
       .command = {"{dyno}", "sim", "--host", "{host}", "--port", "{port}", "--model", "{model}"},
       .ready_path = "/health",
       .ready_status = 200,
       .stop_signal = "SIGINT",
       .grace_s = 5.0,
       .identity_paths = {"/version", "/v1/models"},
       .args_as_env = false,
       .unknown_as_dashes = true,
       .rules = {{"profile", "--profile", ""},
                 {"exit_after", "--exit-after", ""},
                 {"seed", "--seed", ""}},
       .env = {},
       .needs_model_file = false,
       .default_model = "dyno-sim"},
  };
  return all;
}

std::optional<int> signal_number(const std::string& name) {
  const std::string n = name.rfind("SIG", 0) == 0 ? name.substr(3) : name;
  static const std::map<std::string, int> table = {
      {"INT", SIGINT}, {"TERM", SIGTERM}, {"KILL", SIGKILL}, {"QUIT", SIGQUIT},
      {"HUP", SIGHUP}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}};
  const auto it = table.find(n);
  return it == table.end() ? std::nullopt : std::optional<int>(it->second);
}

namespace {

// The preset the spec names, if any; a name that is not a preset fails.
const Preset* read_preset(const Reader& r, const json::object& root, EngineSpec& spec) {
  spec.preset = r.str(root, "preset", "preset").value_or("");
  const Preset* preset = nullptr;
  if (!spec.preset.empty()) {
    preset = find_preset(spec.preset);
    if (preset == nullptr) {
      r.fail("preset", registry::unknown_message(presets(), "preset", spec.preset) +
                           " (or leave it out and write command and ready yourself)");
    }
  }
  return preset;
}

// The engine's name and the process to launch: command, args, env, workdir.
void read_process(const Reader& r, const json::object& root, const Preset* preset,
                  EngineSpec& spec) {
  const std::optional<std::string> name = r.str(root, "name", "name");
  if (!name || name->empty()) {
    r.fail("", "'name' is missing: give the engine a name, e.g. name = \"vllm-0.6\"");
  }
  spec.name = *name;

  if (auto cmd = r.strings(root, "command", "command")) {
    if (cmd->empty()) r.fail("command", "is empty; give the program and its arguments");
    spec.command = std::move(*cmd);
  } else if (preset != nullptr) {
    spec.command = preset->command;
  } else {
    r.fail("",
           "'command' is missing: give the launch command as an array, e.g. command = "
           "[\"vllm\", \"serve\", \"{model}\", \"--port\", \"{port}\"], or use a preset");
  }
  spec.args = r.strings(root, "args", "args").value_or(std::vector<std::string>{});
  if (const json::object* env = r.table(root, "env", "env")) {
    for (const auto& kv : *env) {
      const std::string key(kv.key());
      if (!kv.value().is_string() && !kv.value().is_number() && !kv.value().is_bool()) {
        r.fail("env." + key, "expected a string");
      }
      spec.env[key] = value_text(kv.value());
    }
  }
  spec.workdir = r.str(root, "workdir", "workdir");
}

// Where the engine listens (port, host, api_path) and what it serves (model and its files).
void read_endpoint(const Reader& r, const json::object& root, const Preset* preset,
                   EngineSpec& spec) {
  if (const json::value* port = root.if_contains("port")) {
    if (port->is_string() && port->as_string() == "auto") {
      spec.port = std::nullopt;
    } else if (port->is_int64() && port->as_int64() > 0 && port->as_int64() < 65536) {
      spec.port = static_cast<int>(port->as_int64());
    } else {
      r.fail("port", "expected a port number (1-65535) or \"auto\" (pick a free one)");
    }
  }
  spec.host = r.str(root, "host", "host").value_or("127.0.0.1");
  spec.api_path = r.str(root, "api_path", "api_path").value_or("/v1");
  if (spec.api_path.empty() || spec.api_path[0] != '/') {
    r.fail("api_path", "must start with '/', e.g. \"/v1\"");
  }
  spec.model_file = r.str(root, "model_file", "model_file");
  spec.model_revision = r.str(root, "model_revision", "model_revision");
  spec.checkout = r.str(root, "checkout", "checkout");
  spec.container_image = r.str(root, "container_image", "container_image");
  if (auto model = r.str(root, "model", "model")) {
    spec.model = *model;
  } else if (spec.model_file) {
    spec.model = std::filesystem::path(*spec.model_file).stem().string();
  } else if (preset != nullptr && !preset->default_model.empty()) {
    spec.model = preset->default_model;
  } else {
    r.fail("",
           "'model' is missing: the model name requests carry, e.g. model = "
           "\"meta-llama/Llama-3.1-8B-Instruct\"");
  }
  if (preset != nullptr && preset->needs_model_file && !spec.model_file) {
    r.fail("", "preset " + std::string(preset->name) +
                   " needs 'model_file' (the path of the weights the server loads)");
  }
}

// Readiness: the preset's probe, then [ready] over it; there must be a probe.
void read_ready(const Reader& r, const json::object& root, const Preset* preset, EngineSpec& spec) {
  if (preset != nullptr) {
    spec.ready.http_path = std::string(preset->ready_path);
    spec.ready.http_status = preset->ready_status;
  }
  if (const json::object* ready = r.table(root, "ready", "ready")) {
    r.only_keys(
        *ready,
        {"http_path", "http_status", "log_line", "timeout_s", "interval_s", "first_request"},
        "ready");
    if (auto p = r.str(*ready, "http_path", "ready.http_path")) {
      if (p->empty() || (*p)[0] != '/') r.fail("ready.http_path", "must start with '/'");
      spec.ready.http_path = *p;
    }
    if (auto s = r.integer(*ready, "http_status", "ready.http_status")) {
      if (*s < 100 || *s > 599) r.fail("ready.http_status", "expected an HTTP status (100-599)");
      spec.ready.http_status = static_cast<int>(*s);
    }
    if (auto l = r.str(*ready, "log_line", "ready.log_line")) {
      if (l->empty()) r.fail("ready.log_line", "is empty");
      spec.ready.log_line = *l;
      if (!ready->contains("http_path")) spec.ready.http_path.reset();
    }
    if (auto t = r.num(*ready, "timeout_s", "ready.timeout_s")) {
      if (!(*t > 0)) r.fail("ready.timeout_s", "must be > 0 seconds");
      spec.ready.timeout_s = *t;
    }
    if (auto t = r.num(*ready, "interval_s", "ready.interval_s")) {
      if (!(*t >= 0.01 && *t <= 60)) r.fail("ready.interval_s", "must be 0.01-60 seconds");
      spec.ready.interval_s = *t;
    }
    if (auto b = r.boolean(*ready, "first_request", "ready.first_request")) {
      spec.ready.first_request = *b;
    }
  }
  if (!spec.ready.http_path && !spec.ready.log_line) {
    r.fail("",
           "no readiness probe: add [ready] with http_path = \"/health\" (and http_status) "
           "or log_line = \"<text the engine logs when it is up>\"");
  }
}

// Stopping: the preset's signal and grace, then [stop] over them.
void read_stop(const Reader& r, const json::object& root, const Preset* preset, EngineSpec& spec) {
  if (preset != nullptr) {
    spec.stop_signal = preset->stop_signal;
    spec.stop_grace_s = preset->grace_s;
  }
  if (const json::object* stop = r.table(root, "stop", "stop")) {
    r.only_keys(*stop, {"signal", "grace_s"}, "stop");
    if (auto s = r.str(*stop, "signal", "stop.signal")) {
      if (!signal_number(*s)) {
        r.fail("stop.signal", "unknown signal '" + *s +
                                  "'; use SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGUSR1 or SIGUSR2");
      }
      spec.stop_signal = *s;
    }
    if (auto g = r.num(*stop, "grace_s", "stop.grace_s")) {
      if (!(*g >= 0 && *g <= 3600)) r.fail("stop.grace_s", "must be 0-3600 seconds");
      spec.stop_grace_s = *g;
    }
  }
}

// [topology]: the keys dyno knows are checked by type; any other key (how a model is split,
// offloaded or linked, in the engine's own words) is recorded as given, a value or an array of
// values, never a table.
void read_topology(const Reader& r, const json::object& topo) {
  for (const char* k : {"tp", "pp", "dp", "ep", "nodes"}) {  // parallel degrees, node count
    if (auto n = r.integer(topo, k, std::string("topology.") + k); n && *n < 1) {
      r.fail(std::string("topology.") + k, "must be at least 1");
    }
  }
  if (const json::value* g = topo.if_contains("gpus")) {  // which GPUs, or how many
    bool ok = g->is_array() || (g->is_int64() && g->as_int64() >= 1);
    if (g->is_array()) {
      for (const auto& e : g->as_array()) ok = ok && e.is_int64() && e.as_int64() >= 0;
    }
    if (!ok) {
      r.fail("topology.gpus",
             "expected an array of GPU indices, e.g. [0, 1], or a count of GPUs (1 or more)");
    }
  }
  if (const json::value* v = topo.if_contains("p2p")) {  // whether, or how, GPUs talk directly
    const bool ok = v->is_bool() || (v->is_string() && !v->as_string().empty());
    if (!ok) r.fail("topology.p2p", "expected a boolean or a link kind, e.g. \"nvlink\"");
  }
  for (const char* k : {"link", "split"}) {  // e.g. link = "nvlink", split = "row"
    if (const json::value* v = topo.if_contains(k); v != nullptr && !v->is_string()) {
      r.fail(std::string("topology.") + k, "expected a string, e.g. \"nvlink\"");
    }
  }
  if (const json::value* v = topo.if_contains("offload")) {  // layers on the GPU, or a word
    const bool ok = (v->is_int64() && v->as_int64() >= 0) || v->is_string();
    if (!ok) r.fail("topology.offload", "expected a number of layers (0 or more) or a string");
  }
  for (const auto& kv : topo) {
    const json::value& v = kv.value();
    bool ok = !v.is_object();
    if (v.is_array()) {
      for (const auto& e : v.as_array()) ok = ok && !e.is_object() && !e.is_array();
    }
    if (!ok) {
      r.fail("topology." + std::string(kv.key()),
             "expected a value (string, number, boolean) or an array of values, not a table");
    }
  }
}

// The engine's own arguments, its topology and the endpoints that identify it.
void read_engine_config(const Reader& r, const json::object& root, const Preset* preset,
                        EngineSpec& spec) {
  if (const json::object* ea = r.table(root, "engine_args", "engine_args")) {
    for (const auto& kv : *ea) {
      if (kv.value().is_object()) {
        r.fail("engine_args." + std::string(kv.key()),
               "expected a value (string, number, boolean or array), not a table");
      }
    }
    spec.engine_args = *ea;
  }
  spec.engine_args_as_flags =
      r.boolean(root, "engine_args_as_flags", "engine_args_as_flags").value_or(preset != nullptr);
  if (const json::object* topo = r.table(root, "topology", "topology")) {
    read_topology(r, *topo);
    spec.topology = *topo;
  }
  if (const json::object* extra = r.table(root, "extra_body", "extra_body")) {
    spec.extra_body = *extra;
  }
  if (const json::object* id = r.table(root, "identity", "identity")) {
    r.only_keys(*id, {"paths"}, "identity");
    spec.identity_paths =
        r.strings(*id, "paths", "identity.paths").value_or(std::vector<std::string>{});
  } else if (preset != nullptr) {
    spec.identity_paths = preset->identity_paths;
  } else {
    spec.identity_paths = {"/version", "/v1/models"};
  }
}

}  // namespace

EngineSpec parse_spec(const std::string& text, const std::string& source) {
  TomlDocument doc;
  try {
    doc = parse_toml(text, source);
  } catch (const TomlError& e) {
    throw SpecError(e.what());
  }
  const Reader r(doc, source);
  const json::object& root = doc.root;
  r.only_keys(root, {"name",        "preset",
                     "command",     "args",
                     "env",         "workdir",
                     "port",        "host",
                     "api_path",    "model",
                     "model_file",  "model_revision",
                     "checkout",    "container_image",
                     "ready",       "stop",
                     "engine_args", "engine_args_as_flags",
                     "topology",    "identity",
                     "extra_body"},
              "");
  EngineSpec spec;
  spec.file = source;
  spec.file_sha256 = digest::sha256_hex(text);
  const Preset* preset = read_preset(r, root, spec);
  read_process(r, root, preset, spec);
  read_endpoint(r, root, preset, spec);
  read_ready(r, root, preset, spec);
  read_stop(r, root, preset, spec);
  read_engine_config(r, root, preset, spec);
  // Catch an engine_arg the preset cannot express now, not at launch.
  launch_line(spec, LaunchValues{1, "dyno"});
  return spec;
}

EngineSpec load_spec(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SpecError(path + ": cannot read the engine spec (does the file exist?)");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_spec(ss.str(), path);
}

LaunchLine launch_line(const EngineSpec& spec, const LaunchValues& values) {
  const Preset* preset = spec.preset.empty() ? nullptr : find_preset(spec.preset);
  const auto fill = [&](std::string s) {
    s = replace_all(std::move(s), "{port}", std::to_string(values.port));
    s = replace_all(std::move(s), "{host}", spec.host);
    s = replace_all(std::move(s), "{model}", spec.model);
    s = replace_all(std::move(s), "{model_file}", spec.model_file.value_or(""));
    s = replace_all(std::move(s), "{dyno}", values.dyno_path);
    return s;
  };
  LaunchLine line;
  for (const auto& a : spec.command) line.argv.push_back(fill(a));
  if (preset != nullptr) {
    for (const auto& [k, v] : preset->env) line.env[k] = fill(v);
  }
  const auto add = [&](const std::string& key, const json::value& v, const std::string& where) {
    const ArgRule* rule = nullptr;
    if (preset != nullptr) {
      for (const auto& rr : preset->rules) {
        if (key == rr.key) rule = &rr;
      }
    }
    std::string flag;
    std::string false_flag;
    if (rule != nullptr) {
      flag = rule->flag;
      false_flag = rule->false_flag;
    } else if (preset == nullptr || preset->unknown_as_dashes) {
      flag = "--" + key;
      std::replace(flag.begin(), flag.end(), '_', '-');
    } else {
      throw SpecError(spec.file + ": " + where + "." + key + ": preset " + spec.preset +
                      " has no known setting for it; set it through [env] or args, or set "
                      "engine_args_as_flags = false to only declare it");
    }
    if (preset != nullptr && preset->args_as_env) {
      if (!flag.empty()) line.env[flag] = v.is_bool() ? (v.as_bool() ? "1" : "0") : value_text(v);
      return;
    }
    if (v.is_bool()) {
      if (v.as_bool() && !flag.empty()) line.argv.push_back(flag);
      if (!v.as_bool() && !false_flag.empty()) line.argv.push_back(false_flag);
      return;
    }
    if (flag.empty()) return;  // only a false form exists (e.g. sglang prefix caching)
    line.argv.push_back(flag);
    line.argv.push_back(value_text(v));
  };
  if (spec.engine_args_as_flags) {
    for (const auto& kv : spec.engine_args) add(std::string(kv.key()), kv.value(), "engine_args");
    for (const char* k : {"tp", "pp"}) {
      if (const json::value* v = spec.topology.if_contains(k)) {
        const ArgRule* rule = nullptr;
        if (preset != nullptr) {
          for (const auto& rr : preset->rules) {
            if (std::string(k) == rr.key) rule = &rr;
          }
        }
        if (rule != nullptr) add(k, *v, "topology");
      }
    }
  }
  // A list of indices picks the GPUs; a count (`gpus = 2`) says how many, not which.
  if (const json::value* gpus = spec.topology.if_contains("gpus");
      gpus != nullptr && gpus->is_array() && spec.env.count("CUDA_VISIBLE_DEVICES") == 0) {
    line.env["CUDA_VISIBLE_DEVICES"] = value_text(*gpus);
  }
  for (const auto& a : spec.args) line.argv.push_back(fill(a));
  for (const auto& [k, v] : spec.env) line.env[k] = fill(v);
  return line;
}

}  // namespace dyno::engine
