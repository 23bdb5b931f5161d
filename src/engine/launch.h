// An engine dyno starts from a spec file (`--engine spec.toml`) for one command: launched,
// waited for (ready_s), identified, watched for a crash, and stopped at the end — also on
// Ctrl-C and on dyno's own errors (the destructor stops it). Every cell of a protocol is
// served by the same launch.
#pragma once

#include <atomic>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/process.h"
#include "engine/spec.h"
#include "error/error.h"
#include "workload/request.h"

namespace dyno::engine {

/// What the engine says about itself: GET of each of `paths` at the server root (JSON bodies
/// kept, secrets scrubbed), with `version`, `model_id`, `model_revision` and the engine `name`
/// derived from the known shapes (vLLM /version, SGLang /get_server_info, llama.cpp /props,
/// TGI /info, Ollama /api/version, OpenAI /v1/models). Never throws; unreachable paths are
/// listed with the reason.
boost::json::object query_engine_identity(const std::string& base_url,
                                          const std::vector<std::string>& paths,
                                          const std::optional<std::string>& api_key,
                                          bool tls_verify = true,
                                          const std::optional<std::string>& ca_file = {});

/// The identity paths tried for an engine reached by --url (every known engine's).
std::vector<std::string> known_identity_paths();

/// A launch line as it may be written down: argv and the environment additions through the
/// record's secret rules (scrub::redact_secrets: values of secret-named flags and variables,
/// URL credentials), and the secret values that removed, for redacting the engine's log.
struct ScrubbedLaunch {
  boost::json::array argv;
  boost::json::object env;
  std::vector<std::string> secrets;  ///< longest first; none shorter than 4 characters
};
ScrubbedLaunch scrub_launch_line(const LaunchLine& line);

/// Whether a log line is an access-log line of a request dyno itself makes besides the load
/// (GET /metrics, /health, the readiness path, identity endpoints, POST /tokenize and
/// /apply-template), in the shapes engines log them: `request: GET /metrics 127.0.0.1 200`
/// (llama.cpp), `"GET /metrics HTTP/1.1" 200 OK` (uvicorn: vLLM, SGLang).
bool is_probe_access_line(std::string_view line, const std::optional<std::string>& ready_path);

/// `text` with every occurrence of each of `secrets` replaced by the secret marker.
std::string redact_values(std::string text, const std::vector<std::string>& secrets);

/// An engine launched from a spec did not start or become ready (kind engine, exit 1): no free
/// port, no log file, or it exited, timed out or was interrupted before it was ready.
class LaunchError : public Error {
 public:
  explicit LaunchError(const std::string& message) : Error(ErrorKind::engine, message) {}
};

class LaunchedEngine {
 public:
  /// Launches and waits until ready: the probe passes, then (unless the spec says not) one
  /// 1-token request succeeds. Throws UsageError for a command that cannot start, and
  /// LaunchError (with the log's tail) when the engine exits or is not ready within the
  /// timeout, or when `stop` is set meanwhile — with the engine stopped and reaped.
  LaunchedEngine(EngineSpec spec, workload::Api api, std::optional<std::string> api_key,
                 const std::atomic<bool>& stop);
  ~LaunchedEngine();
  LaunchedEngine(const LaunchedEngine&) = delete;
  LaunchedEngine& operator=(const LaunchedEngine&) = delete;

  const EngineSpec& spec() const { return spec_; }
  std::string base_url() const;
  int pid() const { return process_->pid(); }
  /// Set (from the reaper thread) when the engine's process ends by itself.
  const std::atomic<bool>& exited_flag() const { return exited_; }
  /// How the engine's process ended, when it ended by itself (not through stop()).
  std::optional<ExitStatus> unexpected_exit() const;
  /// Waits up to `timeout` for the process to end by itself (after requests found its port
  /// closed, it may still be shutting down); true when it has ended.
  bool wait_for_exit(std::chrono::milliseconds timeout) const;

  /// manifest.engine.launch: spec file and sha256, preset, the launch line and environment
  /// additions (secrets scrubbed), workdir, port, ready_s and its parts, probe, stop policy,
  /// launch id, cells served so far. `cell_index` numbers the cell within this launch.
  boost::json::object launch_json(std::uint64_t cell_index) const;
  /// What the engine reported about itself (query_engine_identity) once ready.
  const boost::json::object& reported() const { return reported_; }

  /// Bytes of log written so far (a cell's slice starts and ends at such offsets).
  std::uint64_t log_size() const;
  /// A cell's evidence/engine.log: the launch part (up to readiness), then the cell's slice,
  /// with secrets of the launch line redacted.
  std::string cell_log(std::uint64_t begin, std::uint64_t end) const;
  /// The last `lines` lines of the log (secrets redacted), leaving out the engine's access-log
  /// lines of dyno's own probes (is_probe_access_line), which would otherwise fill it.
  struct LogTail {
    std::string text;
    std::size_t probe_lines_skipped = 0;
  };
  LogTail log_tail(int lines) const;

  /// Stops it (signal, grace, SIGKILL to the group). Idempotent.
  EngineProcess::StopResult stop();

 private:
  std::string read_log(std::uint64_t begin, std::uint64_t end) const;

  EngineSpec spec_;
  LaunchLine line_;
  ScrubbedLaunch scrubbed_;
  std::vector<std::string> secrets_;
  int port_ = 0;
  std::string launch_id_;
  std::filesystem::path log_path_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> exited_{false};  // before process_: the reaper thread may set it until then
  std::unique_ptr<EngineProcess> process_;
  std::string launched_at_;
  double probe_ready_s_ = 0;
  double ready_s_ = 0;
  std::optional<double> first_request_s_;
  std::uint64_t ready_log_offset_ = 0;
  boost::json::object reported_;
};

}  // namespace dyno::engine
