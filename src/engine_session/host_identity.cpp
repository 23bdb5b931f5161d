#include "engine_session/host_identity.h"

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cmath>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "digest/digest.h"
#include "dyno/build_info.h"
#include "record/digest_cache.h"
#include "record/run_writer.h"
#include "telemetry/energy_report.h"

namespace dyno::engine_session {

namespace json = boost::json;

double cpu_seconds_self() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

double cpu_seconds_this_thread() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double peak_rss_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) * 1024.0;  // Linux reports KiB
}

namespace {

std::string read_first_match(const char* path, const std::string& prefix) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) return {};
      std::string v = line.substr(colon + 1);
      const auto start = v.find_first_not_of(" \t");
      return start == std::string::npos ? std::string() : v.substr(start);
    }
  }
  return {};
}

}  // namespace

/// A short line naming the hardware, e.g. "2× NVIDIA H200 (141 GiB) · AMD EPYC 9654 · 192
/// cores" or "no GPU seen · Intel Xeon · 2 cores": GPUs grouped by name and memory, in order.
std::string hardware_label(const record::HardwareIdentity& hw) {
  std::vector<std::pair<std::string, int>> groups;
  for (const record::DeviceEntry& g : hw.gpus) {
    std::string name = g.name.value_or("GPU");
    if (g.memory_total_bytes) {
      const double gib = static_cast<double>(*g.memory_total_bytes) / (1024.0 * 1024.0 * 1024.0);
      name += " (" + std::to_string(static_cast<long long>(std::lround(gib))) + " GiB)";
    }
    if (!groups.empty() && groups.back().first == name) {
      ++groups.back().second;
    } else {
      groups.emplace_back(name, 1);
    }
  }
  std::string label;
  for (const auto& [name, n] : groups) {
    label += (label.empty() ? "" : " + ") + (n > 1 ? std::to_string(n) + "\u00d7 " : "") + name;
  }
  if (label.empty()) label = "no GPU seen";
  if (hw.cpu_model) label += " \u00b7 " + *hw.cpu_model;
  return label + " \u00b7 " + std::to_string(hw.cpu_cores.value_or(0)) + " cores";
}

/// The host's identity; `gpus` is filled from telemetry. Every field left null (and an empty
/// `gpus`) has its reason in `unknown`.
record::HardwareIdentity hardware_identity(const telemetry::Monitor* monitor) {
  record::HardwareIdentity hw;
  record::TextMap unknown;
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) == 0) {
    hw.host = host;
  } else {
    unknown.set("host", "gethostname failed");
  }
  const std::string cpu = read_first_match("/proc/cpuinfo", "model name");
  if (!cpu.empty()) hw.cpu_model = cpu;
  if (cpu.empty()) unknown.set("cpu_model", "/proc/cpuinfo has no 'model name' line");
  hw.cpu_cores = std::thread::hardware_concurrency();
  const std::string mem = read_first_match("/proc/meminfo", "MemTotal");
  if (!mem.empty()) {
    hw.ram_bytes = static_cast<std::int64_t>(std::stoll(mem)) * 1024;
  } else {
    unknown.set("ram_bytes", "/proc/meminfo has no MemTotal line");
  }
  if (monitor != nullptr) hw.gpus = telemetry::gpu_identities(*monitor);
  if (hw.gpus.empty()) {
    unknown.set(
        "gpus",
        monitor == nullptr
            ? "telemetry off (--telemetry off): GPUs are identified by their telemetry source"
            : "no GPU telemetry source is available on this host (NVML, amdgpu; see dyno doctor)");
  }
  hw.unknown = std::move(unknown);
  hw.label = hardware_label(hw);
  return hw;
}

/// Computed once per process: hashing the executable is not free.
const record::HarnessIdentity& harness_identity() {
  static const record::HarnessIdentity identity = [] {
    record::HarnessIdentity h;
    h.name = "dyno";
    h.version = build_info::kVersion;
    h.git_commit = build_info::kGitCommit;
    h.git_dirty = build_info::kGitDirty;
    h.build_type = build_info::kBuildType;
    record::TextMap unknown;
    if (std::string(build_info::kGitCommit) == "unknown") {
      unknown.set("git_commit", "dyno was built outside a git checkout");
    }
    try {
      // Remembered across runs by the file's identity (record/digest_cache.h).
      h.executable_sha256 =
          record::cached_sha256_hex_file("/proc/self/exe", record::default_cache_dir());
    } catch (const digest::FileError& e) {
      unknown.set("executable_sha256", e.what());  // "cannot read /proc/self/exe: <reason>"
    }
    if (!unknown.empty()) h.unknown = std::move(unknown);
    return h;
  }();
  return identity;
}

}  // namespace dyno::engine_session
