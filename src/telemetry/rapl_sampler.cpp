// CPU package energy through the RAPL powercap interface (Intel, and AMD since Linux 5.8).
//
// Devices are the top-level package zones <root>/class/powercap/intel-rapl:N named package-N
// (or package-N-die-D). Subzones (intel-rapl:N:M: core, uncore, dram) are inside their package
// and are not summed; psys (platform) contains the packages and is ignored. The same package
// may also appear as intel-rapl-mmio:N: it is deduplicated by zone name, the MSR zone wins.
//
// energy_j is cumulative from the first sample (which reads 0 J), wrap-around corrected with
// max_energy_range_uj: energy windows only ever use differences of energy_j. A counter that
// wraps more than once between two samples cannot be detected (≈ 262 kJ per wrap, i.e. about
// 14 min at 300 W), so sample at least that often.
//
// Since Linux 5.10 energy_uj is readable by root only (PLATYPUS, CVE-2020-8694): readable zones
// are used, unreadable ones are listed in Probe::details["unreadable_zones"]; when none is
// readable the probe is unavailable with a reason saying so.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
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

using ReadResult = KernelFile;

ReadResult read_text(const fs::path& path) { return read_kernel_file(path); }

std::optional<std::uint64_t> parse_u64(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  std::uint64_t v = 0;
  const char* first = text->data();
  const char* last = first + text->size();
  const auto [p, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || p != last) return std::nullopt;
  return v;
}

/// "intel-rapl:3" → 3, "intel-rapl-mmio:0" → 0 for `prefix` "intel-rapl:" / "intel-rapl-mmio:";
/// subzones ("intel-rapl:0:1") and the control-type dir ("intel-rapl") give nullopt.
std::optional<int> zone_number(std::string_view name, std::string_view prefix) {
  if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) {
    return std::nullopt;
  }
  const std::string_view digits = name.substr(prefix.size());
  int n = 0;
  const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || p != digits.data() + digits.size()) return std::nullopt;
  return n;
}

struct Zone {
  fs::path path;
  std::string name;
  bool mmio = false;
  int number = 0;
  std::optional<std::uint64_t> max_range_uj;
  // Accumulation state (see the file comment).
  std::optional<std::uint64_t> prev_raw_uj;
  std::uint64_t accumulated_uj = 0;
  std::uint64_t wraps = 0;
};

class RaplSampler final : public Sampler {
 public:
  explicit RaplSampler(fs::path root) : root_(std::move(root)) {}

  std::string name() const override { return "rapl"; }

  Probe probe() override {
    zones_.clear();
    Probe result = guarded_probe(
        "rapl", "RAPL", [this](Probe& p) { probe_into(p); }, [this] { zones_.clear(); });
    probed_ = true;
    return result;
  }

  void sample(std::vector<Reading>& out, std::uint32_t& errors) override {
    try {
      if (!probed_) (void)probe();
      for (std::size_t i = 0; i < zones_.size(); ++i) out.push_back(read_zone(i, errors));
    } catch (...) {
      ++errors;  // allocation failure: the contract forbids throwing
    }
  }

  /// "wraps.<zone name>": wrap-arounds corrected so far, per zone.
  std::map<std::string, std::uint64_t> counters() const override {
    std::map<std::string, std::uint64_t> c;
    for (const Zone& z : zones_) c["wraps." + z.name] = z.wraps;
    return c;
  }

 private:
  void probe_into(Probe& result) {
    const fs::path powercap = root_ / "class" / "powercap";
    result.details["sysfs_root"] = root_.string();
    std::vector<Zone> candidates;
    std::error_code ec;
    for (fs::directory_iterator it(powercap, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string base = it->path().filename().string();
      Zone z;
      if (const auto n = zone_number(base, "intel-rapl:")) {
        z.number = *n;
      } else if (const auto m = zone_number(base, "intel-rapl-mmio:")) {
        z.number = *m;
        z.mmio = true;
      } else {
        continue;
      }
      const auto zone_name = read_text(it->path() / "name").text;
      if (!zone_name || zone_name->rfind("package-", 0) != 0) continue;  // psys, dram…
      z.path = it->path();
      z.name = *zone_name;
      candidates.push_back(std::move(z));
    }
    // MSR zones first (by number), then MMIO ones; a name already taken is a duplicate.
    std::sort(candidates.begin(), candidates.end(), [](const Zone& a, const Zone& b) {
      if (a.mmio != b.mmio) return !a.mmio;
      return a.number < b.number;
    });
    std::vector<Zone> unique;
    std::string duplicates;
    for (Zone& z : candidates) {
      const bool dup = std::any_of(unique.begin(), unique.end(),
                                   [&](const Zone& u) { return u.name == z.name; });
      if (dup) {
        duplicates += (duplicates.empty() ? "" : ",") + z.path.filename().string();
      } else {
        unique.push_back(std::move(z));
      }
    }
    if (!duplicates.empty()) result.details["ignored_duplicate_zones"] = duplicates;

    if (unique.empty()) {
      result.available = false;
      result.reason = "no RAPL package zone (intel-rapl:N named package-N) under " +
                      powercap.string() + ": the kernel exposes no powercap RAPL interface here";
      return;
    }

    std::string unreadable;
    std::string first_denied;
    std::string first_failure;
    for (Zone& z : unique) {
      const fs::path energy = z.path / "energy_uj";
      const ReadResult r = read_text(energy);
      if (!parse_u64(r.text)) {
        unreadable += (unreadable.empty() ? "" : ",") + z.path.filename().string();
        if (r.error == EACCES || r.error == EPERM) {
          if (first_denied.empty()) first_denied = energy.string();
        } else if (first_failure.empty()) {
          first_failure = energy.string() + ": " +
                          (r.error != 0 ? std::generic_category().message(r.error)
                                        : std::string("not a number"));
        }
        continue;
      }
      z.max_range_uj = parse_u64(read_text(z.path / "max_energy_range_uj").text);
      DeviceIdentity id;
      id.vendor = "cpu";  // the intel-rapl powercap tree serves Intel and AMD CPUs alike
      id.kind = "cpu-package";
      id.index = static_cast<int>(result.devices.size());
      id.name = z.name;
      id.driver = z.mmio ? "intel_rapl_mmio" : "intel_rapl_msr";
      id.capabilities.insert(Capability::kEnergyCounter);
      id.details["zone_path"] = z.path.string();
      id.details["max_energy_range_uj"] =
          z.max_range_uj ? std::to_string(*z.max_range_uj) : std::string("unknown");
      id.details["energy_origin"] = "first sample (energy_j is relative; use differences)";
      result.devices.push_back(std::move(id));
      zones_.push_back(std::move(z));
    }
    if (!unreadable.empty()) result.details["unreadable_zones"] = unreadable;

    result.available = !zones_.empty();
    if (result.available) return;
    if (!first_denied.empty()) {
      result.reason = "permission denied reading " + first_denied +
                      ": run as root, or grant read access (the file is root-only since Linux "
                      "5.10 because of the PLATYPUS attack)";
    } else {
      result.reason = "cannot read RAPL energy counter " + first_failure;
    }
  }

  Reading read_zone(std::size_t index, std::uint32_t& errors) {
    Zone& z = zones_[index];
    Reading r;
    r.device = index;
    const auto raw = parse_u64(read_text(z.path / "energy_uj").text);
    if (!raw) {
      ++errors;
      return r;
    }
    if (z.prev_raw_uj) {
      const std::uint64_t prev = *z.prev_raw_uj;
      if (*raw >= prev) {
        z.accumulated_uj += *raw - prev;
      } else if (z.max_range_uj && prev <= *z.max_range_uj) {
        z.accumulated_uj += *z.max_range_uj - prev + *raw;  // wrapped past the range once
        ++z.wraps;
      } else {
        // Went backwards with no known range: count what is certain (the new value since 0).
        z.accumulated_uj += *raw;
        ++z.wraps;
      }
    }
    z.prev_raw_uj = raw;
    r.energy_j = static_cast<double>(z.accumulated_uj) / 1e6;
    return r;
  }

  fs::path root_;
  bool probed_ = false;
  std::vector<Zone> zones_;
};

}  // namespace

std::unique_ptr<Sampler> make_rapl_sampler(const std::filesystem::path& sysfs_root) {
  return std::make_unique<RaplSampler>(sysfs_root);
}

}  // namespace dyno::telemetry
