// manifest.json's sections whose shape another module owns, read typed (docs/record.md,
// docs/schema/manifest.schema.json): `engine` (written by the engine session and the imports:
// engine_session/engine_session.cpp, interop/result_import.cpp), `telemetry` (telemetry/
// energy_report.cpp) and `workload.sampling` (the cell's flags: engine_session/run_cell.cpp). Their
// owners write them as JSON (a sim profile, an engine's arguments and what a server says about
// itself are open by design); every reader outside record/ reads them here, and
// manifest_from_json checks each one when manifest.json is read, so a malformed section fails
// there, naming the file and the key, not later in a board. Open-by-design members stay JSON.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "record/manifest_sections.h"

namespace dyno::record {

/// engine.reached: how dyno reached the engine (never the host or its credentials).
struct EngineReached {
  std::string kind;                         ///< embedded-sim | http | launched | plugin | import
  std::optional<std::string> scheme;        ///< http | https (not plugin, import)
  std::optional<std::string> path;          ///< the URL's base path (not plugin, import)
  std::optional<std::string> file;          ///< plugin: the file's name (never its path)
  std::optional<std::string> sha256;        ///< plugin: the file's digest
  std::optional<std::int64_t> abi_version;  ///< plugin
};

/// engine.identity: what a plugin engine's describe() said (docs/plugins.md).
struct PluginIdentityRef {
  std::string engine_name;
  std::optional<std::string> engine_version, model_id, model_fingerprint;
  boost::json::value args;  ///< open by design
};

/// engine.reported: what the engine says about itself at its identity endpoints.
struct EngineReported {
  std::optional<std::string> name, version, model_id, model_revision;
  boost::json::object sources;  ///< the endpoints' answers, secrets scrubbed (open by design)
  TextMap unavailable;          ///< the endpoints that did not answer, and why
  std::optional<std::string> reason;
};

/// engine.launch.ready and .stop: when the launched engine counted as ready; how it stops.
struct LaunchReady {
  std::optional<std::string> http_path;
  std::int64_t http_status = 0;
  std::optional<std::string> log_line;
  double timeout_s = 0;
  bool first_request = false;
};
struct LaunchStop {
  std::string signal;
  double grace_s = 0;
};

/// engine.launch: how dyno launched the engine from a spec file (docs/engines.md).
struct EngineLaunchRef {
  std::string launch_id, spec_file, spec_sha256;
  std::optional<std::string> preset;  ///< vllm | sglang | llamacpp | tgi | ollama | sim
  std::vector<std::string> argv;      ///< secrets scrubbed
  TextMap env;                        ///< the spec's additions, secrets scrubbed
  std::optional<std::string> workdir, container_image;
  /// The port it listened on; nullopt in a published record, where it is scrubbed
  /// ("<scrubbed:port>", docs/store.md).
  std::optional<std::int64_t> port;
  std::string launched_at;  ///< ISO 8601 UTC
  double ready_s = 0, probe_ready_s = 0;
  std::optional<double> first_request_s;
  LaunchReady ready;
  LaunchStop stop;
  std::uint64_t cell_index = 0;
  bool shared_by_cells = false;
  std::string log;  ///< evidence/engine.log
};

/// engine.source: the engine's source checkout named by its spec.
struct EngineSourceRef {
  std::optional<std::string> checkout;
  std::optional<std::string> commit;  ///< null: unknown (see unknown)
  std::optional<bool> dirty;          ///< a tracked file modified; null: unknown
  TextMap unknown;                    ///< why commit or dirty is null
};

/// manifest.json's `engine` (engine.exit is Manifest::engine_exit).
struct EngineSection {
  std::optional<std::string> name;  ///< null: the server did not say (a --url run)
  std::optional<std::string> version;
  EngineReached reached;
  std::optional<PluginIdentityRef> identity;  ///< --plugin only
  std::optional<boost::json::object>
      sim_profile;                   ///< the simulated engine's profile (sim/ owns it)
  boost::json::object engine_args;   ///< as given (open by design)
  std::optional<bool> api_key_used;  ///< null only in an imported record
  TextMap unknown;                   ///< an import: why a field is null
  std::optional<EngineReported> reported;
  std::optional<EngineLaunchRef> launch;        ///< a launched engine only
  std::optional<boost::json::object> topology;  ///< tp, pp, gpus… as the spec declares them
  std::optional<EngineSourceRef> source;        ///< a launched engine's spec with a checkout

  /// sim_profile.name: the embedded simulated engine's profile (nullopt for any other engine).
  std::optional<std::string> sim_profile_name() const;
};

/// telemetry.period_ms: the sampling period asked for and achieved.
struct TelemetryPeriod {
  double requested = 0;
  std::optional<double> achieved_mean, achieved_p99;
};

/// telemetry.backends[]: one telemetry source and what it found, or why it is unavailable.
struct TelemetryBackend {
  std::string source;  ///< nvml | amdgpu | rapl | host | …
  bool available = false;
  std::optional<std::string> reason;
  TextMap details;  ///< library path, versions (open by design)
  std::vector<DeviceEntry> devices;
};

/// telemetry.idle_baseline.devices[]: a device's power before the load.
struct IdleDevicePower {
  std::string source;
  std::int64_t device = 0;
  double power_w = 0;
};
struct IdleBaseline {
  double duration_s = 0;
  std::vector<IdleDevicePower> devices;
};

/// manifest.json's `telemetry` (docs/telemetry.md), written once the run has ended.
struct TelemetrySection {
  std::string mode;  ///< auto | off
  TelemetryPeriod period_ms;
  std::optional<std::uint64_t> read_errors;
  std::vector<TelemetryBackend> backends;
  std::optional<IdleBaseline> idle_baseline;  ///< null: none measured
};

/// workload.sampling: what the flags set (each request's own values win); empty in an
/// imported record (its file does not say).
struct SamplingSection {
  std::optional<double> temperature;
  std::optional<std::optional<std::uint64_t>> max_tokens;  ///< absent, null (no cap) or a cap
  std::optional<bool> ignore_eos;
  std::optional<bool> stream;
};

/// The readers. `path` names the section in errors ("manifest.json: engine.reached.kind is not
/// a string", a std::runtime_error).
EngineSection engine_section_from_json(const boost::json::object& engine,
                                       const std::string& path = "engine");
TelemetrySection telemetry_section_from_json(const boost::json::object& telemetry,
                                             const std::string& path = "telemetry");
SamplingSection sampling_section_from_json(const boost::json::object& sampling,
                                           const std::string& path = "workload.sampling");

/// A manifest's `telemetry` (Manifest::telemetry) read typed; nullopt before the run ended.
std::optional<TelemetrySection> telemetry_section_of(
    const std::optional<boost::json::object>& telemetry);

}  // namespace dyno::record
