// The engine under test for one command (one engine serves every cell of a protocol): the
// server at --url, one dyno launches from --engine, a --plugin in-process, or the embedded
// simulated engine; its identity for the manifest, its /metrics, its telemetry.
#pragma once

#include <atomic>
#include <boost/json/object.hpp>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine_session/options.h"
#include "error/error.h"
#include "load/runner.h"
#include "metrics/summary.h"
#include "record/manifest_sections.h"
#include "sim/profile.h"
#include "telemetry/energy_report.h"
#include "telemetry/options.h"
#include "transport/http_target.h"
#include "transport/plugin_target.h"
#include "transport/tokenize_client.h"
#include "workload/request.h"

namespace dyno::sim {
class Server;
}

namespace dyno::engine {
class LaunchedEngine;
}

namespace dyno::engine_session {

/// The API key, from DYNO_API_KEY or OPENAI_API_KEY only (never a flag: flags end up in shell
/// history and process lists). It is never written anywhere.
std::optional<std::string> api_key_from_env();

/// Parses --api; throws UsageError.
workload::Api parse_api(const std::string& api);

/// Checks the target and telemetry flags together (--url, --engine and --plugin exclude each
/// other, --model with --url…); throws UsageError naming the flag.
void validate_target(const TargetOptions& target, const telemetry::TelemetryOptions& telemetry);

/// The engine a command measures: the server at --url, an engine plugin loaded in-process
/// (--plugin), or the simulated engine started in-process (on its own thread) for the whole
/// command.
class EngineSession {
 public:
  /// Throws UsageError (or the module's error, with the flag in front) for a bad --url,
  /// --profile, --ca-file, --plugin, --engine or --model-file. `seed` seeds the simulated
  /// engine; `stop` (the command's stop flag) ends the wait for a launched engine.
  EngineSession(const TargetOptions& target, const telemetry::TelemetryOptions& telemetry,
                std::uint64_t seed, workload::Api api, const std::atomic<bool>& stop);
  ~EngineSession();
  EngineSession(const EngineSession&) = delete;
  EngineSession& operator=(const EngineSession&) = delete;

  const transport::HttpTargetConfig& target_config() const { return config_; }
  /// The flags the engine was made from (timeouts as the user set them: manifest
  /// load.timeouts_s) and the telemetry asked for.
  const TargetOptions& options() const { return options_; }
  const telemetry::TelemetryOptions& telemetry_options() const { return telemetry_; }
  const std::string& model() const { return model_; }
  workload::Api api() const { return config_.api; }
  /// The manifest's `engine` object (no host, no key) for cell `cell_index` of this engine.
  boost::json::object engine_json(std::uint64_t cell_index = 0) const;
  /// The manifest's `model`: id, revision and the fingerprint of --model-file (GGUF: header +
  /// metadata + tensor table; safetensors: every shard's JSON header), each unknown field with
  /// its reason.
  const record::ModelIdentity& model_identity() const { return model_identity_; }
  /// GET /metrics of the engine (Prometheus text); nullopt when it has none (remembered, so a
  /// missing endpoint costs one request per command) or the request failed.
  std::optional<std::string> scrape_metrics();
  /// One line for the console, e.g. "dyno-sim (embedded, profile small-gpu)".
  std::string display() const;
  /// CPU seconds the embedded engine's thread used so far (0 without one). Known after stop.
  sim::Server* embedded() { return embedded_.get(); }
  /// The engine dyno launched from --engine (nullptr otherwise).
  engine::LaunchedEngine* launched() { return launched_.get(); }
  /// Numbers the cells run against this engine (0, 1, ...): manifest.engine.launch.cell_index.
  std::uint64_t begin_cell() { return cells_++; }
  /// The in-process engine of --plugin (nullptr otherwise).
  transport::PluginEngine* plugin() const { return plugin_.get(); }

  /// Telemetry of the whole command (nullptr with --telemetry off); started once the engine is
  /// up, with an idle baseline before the first cell when a source reports power.
  const telemetry::Monitor* monitor() const { return monitor_.get(); }
  const telemetry::IdleBaseline* idle() const { return idle_ ? &*idle_ : nullptr; }
  const telemetry::VramSnapshot& vram_after_load() const { return vram_after_load_; }

 private:
  void start_telemetry();

  TargetOptions options_;
  telemetry::TelemetryOptions telemetry_;

  std::unique_ptr<sim::Server> embedded_;
  std::unique_ptr<engine::LaunchedEngine> launched_;
  boost::json::object reported_;  ///< what an engine reached by --url says about itself
  boost::json::object source_;    ///< the engine's source checkout (spec `checkout`)
  std::uint64_t cells_ = 0;
  std::unique_ptr<transport::PluginEngine> plugin_;
  std::string plugin_config_;
  std::string plugin_file_;  ///< file name only: the record never holds the host's paths
  std::string plugin_sha256_;
  record::ModelIdentity model_identity_;
  std::unique_ptr<transport::TokenizeClient> metrics_client_;
  bool metrics_missing_ = false;
  std::unique_ptr<telemetry::Monitor> monitor_;
  std::optional<telemetry::IdleBaseline> idle_;
  telemetry::VramSnapshot vram_after_load_;
  std::optional<sim::Profile> profile_;
  transport::HttpTargetConfig config_;
  std::string model_;
};

/// Counts a request's prompt tokens with the engine's own tokenizer (its /tokenize endpoint;
/// chat prompts through its chat template). One keep-alive connection, blocking calls: for
/// preparing workloads before a run, never during one.
class PromptCounter {
 public:
  PromptCounter(const EngineSession& engine, double timeout_s);
  /// Throws transport::TokenizeError when the target has no usable /tokenize, UsageError when
  /// it cannot count chat prompts (use --api completions then).
  std::int64_t operator()(const workload::Request& request);
  const char* flavor();
  /// Closes the tokenizer connection until the next count (before a cell runs).
  void disconnect() { client_.disconnect(); }

 private:
  transport::TokenizeClient client_;
};

}  // namespace dyno::engine_session
