// `dyno run`: options as the user gave them, and the command that executes them.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "metrics/summary.h"

namespace dyno::app {

/// A usage error: bad flag value or combination. The message names the flag and what to do.
class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Exit codes (documented in the README and `dyno --help`).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;    ///< dyno itself could not work (I/O, internal)
inline constexpr int kExitUsage = 2;      ///< bad flags or input files
inline constexpr int kExitRunFailed = 3;  ///< run failed or exceeded the error budget
inline constexpr int kExitInterrupted = 130;

/// `dyno run` flags, as parsed (defaults applied by CLI11). Validated by run_command().
struct RunOptions {
  std::optional<std::string> url;
  std::optional<std::string> engine_spec;  ///< --engine: launch the engine from this spec file
  std::optional<std::string> model;
  std::string api = "chat";
  std::string profile = "small-gpu";         ///< embedded sim profile (no --url)
  std::optional<std::string> plugin;         ///< an in-process engine plugin (.so) instead of --url
  std::optional<std::string> plugin_config;  ///< passed to the plugin's create() unchanged
  std::optional<std::uint32_t> concurrency;
  std::optional<double> rate;
  std::string arrival = "poisson";
  double burstiness = 1.0;
  std::optional<std::uint64_t> requests;
  std::optional<double> duration_s;
  bool cycle = false;  ///< --cycle: -n may exceed the --stream's length (sent again from its start)
  std::uint64_t warmup = 0;
  std::optional<std::int64_t> max_tokens;
  double temperature = 0.0;
  std::uint64_t seed = 0;
  std::optional<std::string> stream_file;
  std::int64_t input_tokens = 256;
  std::int64_t output_tokens = 128;
  std::optional<std::string> slo;
  std::string runs_root = "runs";
  std::string label;
  bool json = false;
  bool no_stream = false;
  bool keep_outputs = false;
  bool no_chunk_times = false;
  double connect_timeout_s = 10.0;
  std::optional<double> first_token_timeout_s;  ///< 0: none; unset: derived from each request
  std::optional<double> timeout_s;              ///< total; 0: none; unset: derived
  double idle_timeout_s = 60.0;                 ///< between token events; 0: none
  double error_budget = 0.05;
  bool insecure = false;
  std::optional<std::string> ca_file;
  std::optional<std::string> model_file;      ///< GGUF file, or safetensors file / directory
  std::optional<std::string> model_revision;  ///< e.g. the Hugging Face commit of the weights
  std::string telemetry = "auto";             ///< auto: every available source; off: none
  double telemetry_period_ms = 100.0;         ///< sampler period
  double idle_baseline_s = 10.0;  ///< idle window before the first cell (power sources only)
  std::string nvml_library;       ///< "" = libnvidia-ml.so.1 (or $DYNO_NVML_LIBRARY)
  std::string sysfs_root = "/sys";
  std::string proc_root = "/proc";
  bool quiet = false;
  std::string color = "auto";
};

/// Parses "ttft=500ms,tpot=50ms,e2e=10s" (units ms or s; a bare number is milliseconds).
/// Throws UsageError naming --slo.
metrics::Slo parse_slo(const std::string& text);

/// Runs the benchmark; returns the exit code. Throws UsageError for bad options.
int run_command(const RunOptions& options);

/// `dyno doctor`: probes every telemetry source with the telemetry flags of `options` and
/// prints what this host offers and why a source is missing; exit 0.
int doctor_command(const RunOptions& options);

}  // namespace dyno::app
