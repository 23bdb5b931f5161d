// The engine a command measures and how it is reached (flags --url, --engine, --plugin,
// --profile, --model, --model-file, --model-revision, --api, TLS, streaming and timeouts).
#pragma once

#include <optional>
#include <string>

namespace dyno::engine_session {

struct TargetOptions {
  std::optional<std::string> url;
  std::optional<std::string> engine_spec;  ///< --engine: launch the engine from this spec file
  std::optional<std::string> model;
  std::string api = "chat";
  std::string profile = "small-gpu";         ///< embedded sim profile (no --url)
  std::optional<std::string> plugin;         ///< an in-process engine plugin (.so) instead of --url
  std::optional<std::string> plugin_config;  ///< passed to the plugin's create() unchanged
  std::optional<std::string> model_file;     ///< GGUF file, or safetensors file / directory
  std::optional<std::string> model_revision;  ///< e.g. the Hugging Face commit of the weights
  bool no_stream = false;
  bool insecure = false;
  std::optional<std::string> ca_file;
  double connect_timeout_s = 10.0;
  std::optional<double> first_token_timeout_s;  ///< 0: none; unset: derived from each request
  std::optional<double> timeout_s;              ///< total; 0: none; unset: derived
  double idle_timeout_s = 60.0;                 ///< between token events; 0: none

  /// The simulated engine, started in this process: no --url, --engine or --plugin.
  bool embedded() const { return !url && !engine_spec && !plugin; }
};

}  // namespace dyno::engine_session
