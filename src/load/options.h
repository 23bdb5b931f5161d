// The load as the user asked for it (flags -c, --rate, --arrival, --burstiness, -n, --duration,
// --warmup, --seed, --slo, --error-budget…); load::plan (load/plan.h) makes each cell's load.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>

namespace dyno::load {

struct LoadOptions {
  std::optional<std::uint32_t> concurrency;
  std::optional<double> rate;
  std::string arrival = "poisson";
  double burstiness = 1.0;
  std::optional<std::uint64_t> requests;
  std::optional<double> duration_s;
  std::uint64_t warmup = 0;
  std::uint64_t seed = 0;  ///< the arrival schedule's, the synthetic stream's, the sim's
  std::optional<std::string> schedule;     ///< "timestamps": replay the stream's at_ms
  double time_scale = 1.0;                 ///< replay: offsets × this
  std::optional<std::string> time_window;  ///< replay: "FROM,TO" of trace time
  std::optional<std::string> slo;
  double error_budget = 0.05;
  /// --unreachable-after: seconds of connect failures in a row, with no answer, after which the
  /// target is taken for gone (LoadConfig::unreachable_after_s); 0: never.
  double unreachable_after_s = 10.0;
  /// --client-threads: event loops the client's connections are shared out over (unset: the
  /// machine's spare cores, default_client_threads()).
  std::optional<unsigned> client_threads;
  std::optional<std::string> shard;      ///< --shard K/N (dyno run only; load/shard.h)
  std::optional<std::string> start_at;   ///< --start-at TIME (dyno run only)
  std::optional<std::string> clock_ref;  ///< --clock-ref HOST:PORT (dyno run --shard only)
};

/// Half the machine's hardware threads (the engine may share the host), at least 1, at most 8.
inline unsigned default_client_threads() {
  return std::clamp(std::thread::hardware_concurrency() / 2, 1u, 8u);
}

}  // namespace dyno::load
