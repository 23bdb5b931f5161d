// Engine spec files: how to start an engine, know it is ready, identify it and stop it.
// TOML (docs/engines.md), validated with errors that name the file, line and key. Presets
// (vllm, sglang, llamacpp, tgi, ollama, sim) fill the launch command, the readiness probe,
// the identity endpoints, the stop signal and how declared engine_args become flags.
#pragma once

#include <boost/json/object.hpp>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "error/error.h"

namespace dyno::engine {

/// A spec that cannot be used: `what()` names the file, line and key, and what to do.
class SpecError : public Error {
 public:
  explicit SpecError(const std::string& message) : Error(ErrorKind::input, message) {}
};

struct ReadyProbe {
  std::optional<std::string> http_path;  ///< GET this path at the server root...
  int http_status = 200;                 ///< ...until it answers this status
  std::optional<std::string> log_line;   ///< or: until the log contains this text
  double timeout_s = 600.0;              ///< launch → ready, else the launch fails
  double interval_s = 0.25;              ///< between probes
  bool first_request = true;             ///< then send one 1-token request (counts in ready_s)
};

struct EngineSpec {
  std::string file;         ///< the spec's path (as given)
  std::string file_sha256;  ///< of the spec file's bytes
  std::string name;
  std::string preset;                ///< "" when none
  std::vector<std::string> command;  ///< argv with placeholders ({port}, {host}, ...)
  std::vector<std::string> args;     ///< appended after the command and engine_args
  std::map<std::string, std::string> env;
  std::optional<std::string> workdir;
  std::optional<int> port;  ///< nullopt: pick a free loopback port
  std::string host = "127.0.0.1";
  std::string api_path = "/v1";                ///< the OpenAI base path
  std::string model;                           ///< the model name requests carry
  std::optional<std::string> model_file;       ///< local weights (fingerprinted; {model_file})
  std::optional<std::string> model_revision;   ///< e.g. the HF commit
  std::optional<std::string> checkout;         ///< the engine's source checkout (git commit)
  std::optional<std::string> container_image;  ///< declared, recorded
  ReadyProbe ready;
  std::string stop_signal = "SIGINT";
  double stop_grace_s = 30.0;
  boost::json::object engine_args;  ///< declared; become flags when engine_args_as_flags
  bool engine_args_as_flags = true;
  boost::json::object topology;             ///< tp, pp, gpus, p2p (declared; tp/pp become flags)
  std::vector<std::string> identity_paths;  ///< GET these for the engine's own identity
  /// [extra_body]: request fields of the user's own for this engine (e.g. llama.cpp's
  /// cache_prompt), merged into every request body under --extra-body's (docs/engines.md).
  boost::json::object extra_body;
};

/// How a preset turns a declared engine arg (an engine_args key, or topology's tp and pp) into
/// a command-line flag, or an environment variable when the preset takes its args so.
struct ArgRule {
  std::string_view key;         ///< the engine_args / topology key
  std::string_view flag;        ///< its flag (args_as_env: the variable's name); "" = none
  std::string_view false_flag;  ///< booleans: the flag that says false ("" = omit the flag)
};

/// An entry of the preset registry (error/registry.h): an engine dyno knows how to launch, what
/// a spec's `preset = "<name>"` fills in (docs/engines.md "Presets").
struct Preset {
  std::string_view name;                    ///< as a spec names it: "vllm"
  std::string_view describe;                ///< one line: the engine and how it is started
  std::vector<std::string> command;         ///< the launch argv, placeholders ({model}, {port}…)
  std::string_view ready_path;              ///< readiness: GET this path…
  int ready_status = 200;                   ///< …until it answers this status
  std::string_view stop_signal;             ///< sent to stop it…
  double grace_s = 30.0;                    ///< …then SIGKILL after this many seconds
  std::vector<std::string> identity_paths;  ///< endpoints the engine describes itself at
  bool args_as_env = false;                 ///< engine args are environment variables (ollama)
  bool unknown_as_dashes = true;            ///< an arg without a rule becomes --key-with-dashes
  std::vector<ArgRule> rules;               ///< engine args with a name of the engine's own
  std::map<std::string, std::string> env;   ///< environment the launch adds ({host}, {port} filled)
  bool needs_model_file = false;            ///< the spec must give model_file ({model_file})
  std::string_view default_model;  ///< the model name when the spec gives none ("": required)
};

/// The built-in presets, in the order docs/engines.md lists them.
std::span<const Preset> presets();

/// Reads and validates a spec file. Throws SpecError.
EngineSpec load_spec(const std::string& path);
/// The same from text (`source` names it in errors).
EngineSpec parse_spec(const std::string& text, const std::string& source);

/// Values the launch fills in for placeholders.
struct LaunchValues {
  int port = 0;
  std::string dyno_path;  ///< this dyno binary ({dyno})
};

/// The launch: argv (placeholders filled; engine_args and topology turned into flags as the
/// preset says; extra args last) and the environment additions. Throws SpecError for an
/// engine_arg the preset cannot express.
struct LaunchLine {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
};
LaunchLine launch_line(const EngineSpec& spec, const LaunchValues& values);

/// Signal number of "SIGINT", "SIGTERM", "SIGKILL", "SIGQUIT", "SIGHUP", "SIGUSR1", "SIGUSR2"
/// (or without the SIG prefix); nullopt otherwise.
std::optional<int> signal_number(const std::string& name);

}  // namespace dyno::engine
