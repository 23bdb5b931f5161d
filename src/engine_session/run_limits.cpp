#include "engine_session/run_limits.h"

#include <sys/resource.h>

#include <cmath>
#include <iostream>
#include <limits>

namespace dyno::engine_session {

namespace {

std::string explain(std::uint64_t connections, const TargetOptions& o) {
  std::string text = std::to_string(connections) + " connections";
  if (o.embedded()) {
    text += ", " + std::to_string(connections) + " for the embedded simulated engine's end";
  }
  return text + ", " + std::to_string(kDescriptorMargin) + " for files, telemetry and the loop";
}

}  // namespace

std::uint64_t descriptors_needed(std::uint64_t connections, const TargetOptions& o) {
  if (o.plugin) return kDescriptorMargin;  // in-process: no socket per request
  return connections * (o.embedded() ? 2 : 1) + kDescriptorMargin;
}

std::uint64_t descriptor_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) {
    return std::numeric_limits<std::uint64_t>::max();
  }
  return static_cast<std::uint64_t>(lim.rlim_cur);
}

void check_descriptors(std::uint64_t connections, const std::string& flag, const TargetOptions& o) {
  const std::uint64_t needed = descriptors_needed(connections, o);
  const std::uint64_t limit = descriptor_limit();
  if (needed <= limit) return;
  throw UsageError(flag + " needs about " + std::to_string(needed) + " file descriptors (" +
                   explain(connections, o) + ") but ulimit -n allows " + std::to_string(limit) +
                   " (its hard limit); raise it (e.g. `ulimit -n " + std::to_string(needed) +
                   "` in the shell that starts dyno, or LimitNOFILE= for a service) or lower " +
                   flag.substr(0, flag.find(' ')));
}

void warn_open_loop_descriptors(double rate, const TargetOptions& o) {
  // A slow request: the --timeout given, else (unset or 0: no limit) a minute.
  const double slow_s = o.timeout_s && *o.timeout_s > 0 ? *o.timeout_s : 60.0;
  const auto in_flight = static_cast<std::uint64_t>(std::ceil(rate * slow_s));
  const std::uint64_t needed = descriptors_needed(in_flight, o);
  const std::uint64_t limit = descriptor_limit();
  if (needed <= limit) return;
  std::cerr << "dyno: warning: at " << rate << " req/s, requests taking " << slow_s
            << " s would hold " << in_flight << " connections and need about " << needed
            << " file descriptors, but ulimit -n allows " << limit
            << "; requests past it fail to connect. Raise the limit (ulimit -n) if requests "
               "will be that slow\n";
}

}  // namespace dyno::engine_session
