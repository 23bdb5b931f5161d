// The host: CPU utilisation from /proc/stat deltas, memory in use from /proc/meminfo
// (MemTotal − MemAvailable) and the engine processes' RSS (Σ VmRSS of /proc/<pid>/status).
//
// utilization_pct needs two samples: the first has none. It is the busy share of all CPUs
// between two samples: busy = user+nice+system+irq+softirq+steal, idle = idle+iowait (guest
// time is already inside user/nice). process_memory_bytes sums the PIDs still readable; a PID
// that cannot be read (exited) counts one error, and the field is nullopt when none was read.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "telemetry/kernel_file.h"
#include "telemetry/sampler.h"

namespace dyno::telemetry {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> read_text(const fs::path& path) {
  return read_kernel_file(path, /*strip=*/false).text;
}

/// Each line of `text`, in order, through `fn(line)`; stops when fn returns true.
template <typename Fn>
void for_each_line(std::string_view text, Fn&& fn) {
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (fn(line)) return;
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

/// The number after "Key:" in a "Key:   123 kB" line set (meminfo, status), in bytes when the
/// unit is kB.
std::optional<std::int64_t> kb_field(std::string_view text, std::string_view key) {
  std::optional<std::int64_t> value;
  for_each_line(text, [&](std::string_view line) {
    if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ':') {
      return false;
    }
    std::string_view rest = trim(line.substr(key.size() + 1));
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), v);
    if (ec != std::errc()) return true;
    rest = trim(rest.substr(static_cast<std::size_t>(p - rest.data())));
    value = rest == "kB" ? v * 1024 : v;
    return true;
  });
  return value;
}

struct CpuTimes {
  std::uint64_t busy = 0;
  std::uint64_t total = 0;
};

/// The aggregate "cpu " line of /proc/stat.
std::optional<CpuTimes> parse_stat(std::string_view text) {
  std::optional<CpuTimes> times;
  for_each_line(text, [&](std::string_view line) {
    if (line.substr(0, 4) != "cpu ") return false;
    std::string_view rest = line.substr(4);
    std::uint64_t f[8] = {};  // user nice system idle iowait irq softirq steal
    int count = 0;
    while (count < 8) {
      rest = trim(rest);
      if (rest.empty()) break;
      std::uint64_t v = 0;
      const auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), v);
      if (ec != std::errc()) break;
      f[count++] = v;
      rest = rest.substr(static_cast<std::size_t>(p - rest.data()));
    }
    if (count >= 4) {
      const std::uint64_t idle = f[3] + f[4];
      const std::uint64_t busy = f[0] + f[1] + f[2] + f[5] + f[6] + f[7];
      times = CpuTimes{busy, busy + idle};
    }
    return true;
  });
  return times;
}

/// "model name" (x86), else "Processor"/"cpu model"/"Hardware" (Arm, MIPS…), else "".
std::string cpu_model(std::string_view cpuinfo) {
  std::string model;
  std::string fallback;
  for_each_line(cpuinfo, [&](std::string_view line) {
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) return false;
    const std::string_view key = trim(line.substr(0, colon));
    const std::string_view value = trim(line.substr(colon + 1));
    if (value.empty()) return false;
    if (key == "model name") {
      model = std::string(value);
      return true;
    }
    if (fallback.empty() && (key == "Processor" || key == "cpu model" || key == "Hardware")) {
      fallback = std::string(value);
    }
    return false;
  });
  return model.empty() ? fallback : model;
}

int count_cpus(std::string_view stat) {
  int n = 0;
  for_each_line(stat, [&](std::string_view line) {
    if (line.size() > 3 && line.substr(0, 3) == "cpu" && line[3] >= '0' && line[3] <= '9') ++n;
    return false;
  });
  return n;
}

class HostSampler final : public Sampler {
 public:
  explicit HostSampler(fs::path root) : root_(std::move(root)) {}

  std::string name() const override { return "host"; }

  Probe probe() override {
    Probe result = guarded_probe(
        "host", "host", [this](Probe& p) { probe_into(p); }, [this] { available_ = false; });
    probed_ = true;
    return result;
  }

  void sample(std::vector<Reading>& out, std::uint32_t& errors) override {
    try {
      if (!probed_) (void)probe();
      if (!available_) return;
      out.push_back(read_host(errors));
    } catch (...) {
      ++errors;  // allocation failure: the contract forbids throwing
    }
  }

  void set_process_ids(const std::vector<int>& pids) override { pids_ = pids; }

 private:
  void probe_into(Probe& result) {
    result.details["proc_root"] = root_.string();
    DeviceIdentity id;
    id.vendor = "host";
    id.kind = "host";
    id.index = 0;
    if (const auto cpuinfo = read_text(root_ / "cpuinfo")) id.name = cpu_model(*cpuinfo);
    if (id.name.empty()) id.name = "host CPU";
    const auto stat = read_text(root_ / "stat");
    stat_ok_ = stat && parse_stat(*stat);
    if (stat_ok_) {
      id.capabilities.insert(Capability::kUtilization);
      id.details["logical_cpus"] = std::to_string(count_cpus(*stat));
    }
    const auto meminfo = read_text(root_ / "meminfo");
    if (meminfo) id.memory_total_bytes = kb_field(*meminfo, "MemTotal");
    meminfo_ok_ = meminfo && id.memory_total_bytes && kb_field(*meminfo, "MemAvailable");
    if (meminfo_ok_) id.capabilities.insert(Capability::kMemoryUsed);
    if (!pids_.empty()) {
      id.capabilities.insert(Capability::kProcessMemory);
      std::string list;
      for (const int pid : pids_) list += (list.empty() ? "" : ",") + std::to_string(pid);
      id.details["pids"] = list;
    }
    available_ = stat_ok_ || meminfo_ok_ || !pids_.empty();
    result.available = available_;
    if (available_) {
      result.devices.push_back(std::move(id));
    } else {
      result.reason = "cannot read " + (root_ / "stat").string() + " or " +
                      (root_ / "meminfo").string() + ": is procfs mounted?";
    }
  }

  Reading read_host(std::uint32_t& errors) {
    Reading r;
    r.device = 0;
    if (stat_ok_) {
      const auto stat = read_text(root_ / "stat");
      const auto times = stat ? parse_stat(*stat) : std::nullopt;
      if (!times) {
        ++errors;
      } else {
        if (prev_ && times->total > prev_->total && times->busy >= prev_->busy) {
          const auto d_total = static_cast<double>(times->total - prev_->total);
          const auto d_busy = static_cast<double>(times->busy - prev_->busy);
          r.utilization_pct = 100.0 * d_busy / d_total;
        }
        prev_ = times;
      }
    }
    if (meminfo_ok_) {
      const auto meminfo = read_text(root_ / "meminfo");
      const auto total = meminfo ? kb_field(*meminfo, "MemTotal") : std::nullopt;
      const auto avail = meminfo ? kb_field(*meminfo, "MemAvailable") : std::nullopt;
      if (total && avail) {
        r.memory_used_bytes = *total - *avail;
      } else {
        ++errors;
      }
    }
    if (!pids_.empty()) {
      std::int64_t sum = 0;
      bool any = false;
      for (const int pid : pids_) {
        const auto status = read_text(root_ / std::to_string(pid) / "status");
        const auto rss = status ? kb_field(*status, "VmRSS") : std::nullopt;
        if (rss) {
          sum += *rss;
          any = true;
        } else {
          ++errors;  // exited, or a kernel thread without an RSS
        }
      }
      if (any) r.process_memory_bytes = sum;
    }
    return r;
  }

  fs::path root_;
  bool probed_ = false;
  bool available_ = false;
  bool stat_ok_ = false;
  bool meminfo_ok_ = false;
  std::vector<int> pids_;
  std::optional<CpuTimes> prev_;
};

}  // namespace

std::unique_ptr<Sampler> make_host_sampler(const std::filesystem::path& proc_root) {
  return std::make_unique<HostSampler>(proc_root);
}

}  // namespace dyno::telemetry
