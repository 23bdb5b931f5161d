// AMD GPUs through the amdgpu sysfs / hwmon interface (no library needed).
//
// Layout (telemetry-notes §2.3): D = <root>/class/drm/cardN/device; hwmon dir D/hwmon/hwmonM,
// found under the card's own device dir (never by assuming M == N). Units in sysfs: power µW,
// temperatures m°C, clocks Hz, VRAM bytes, energy µJ; readings are converted to W, °C, MHz,
// bytes and J. Capabilities are decided at probe() by what is readable; a read that fails
// later leaves its field nullopt and counts one error.
#include <fcntl.h>
#include <sys/utsname.h>
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

/// Reads a small sysfs/proc file; nullopt on any failure. Trailing whitespace is stripped.
std::optional<std::string> read_text(const fs::path& path) { return read_kernel_file(path).text; }

std::optional<std::int64_t> parse_int(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    base = 16;
  }
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<std::int64_t> read_int(const fs::path& path) {
  const auto text = read_text(path);
  if (!text) return std::nullopt;
  return parse_int(*text);
}

/// Value of KEY= in a uevent file, or "".
std::string uevent_value(const fs::path& uevent, std::string_view key) {
  const auto text = read_text(uevent);
  if (!text) return {};
  std::string_view rest = *text;
  while (!rest.empty()) {
    const auto nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == '=') {
      return std::string(line.substr(key.size() + 1));
    }
  }
  return {};
}

/// N for a name "<prefix>N" made only of the prefix and digits, else nullopt.
std::optional<int> numbered(std::string_view name, std::string_view prefix) {
  if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) {
    return std::nullopt;
  }
  const std::string_view digits = name.substr(prefix.size());
  int n = 0;
  const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || p != digits.data() + digits.size()) return std::nullopt;
  return n;
}

/// The amdgpu driver with its version, so that runs on different drivers compare unequal
/// (the fairness check `driver`): "amdgpu 6.7.0" from <sysfs>/module/amdgpu/version (an
/// out-of-tree ROCm/DKMS driver sets it), else the kernel's in-tree driver, named by the
/// kernel's release: "amdgpu (kernel 6.1.0-18-amd64)".
std::string amdgpu_driver(const fs::path& root) {
  if (const auto v = read_text(root / "module" / "amdgpu" / "version"); v && !v->empty()) {
    return "amdgpu " + *v;
  }
  utsname u{};
  if (::uname(&u) == 0) return std::string("amdgpu (kernel ") + u.release + ")";
  return "amdgpu";
}

bool is_amdgpu(const fs::path& device) {
  std::error_code ec;
  const fs::path driver = device / "driver";
  if (fs::is_symlink(driver, ec)) {
    const fs::path target = fs::read_symlink(driver, ec);
    if (!ec) return target.filename() == "amdgpu";
  }
  const std::string drv = uevent_value(device / "uevent", "DRIVER");
  if (!drv.empty()) return drv == "amdgpu";
  const auto vendor = read_int(device / "vendor");
  return vendor && *vendor == 0x1002;
}

/// One temperature / clock channel: which reading field it feeds and its hwmon file.
struct Channel {
  Capability capability;
  fs::path file;
};

struct Card {
  fs::path device;  ///< <root>/class/drm/cardN/device
  fs::path hwmon;   ///< empty when the card has no hwmon dir
  std::set<Capability> caps;
  std::vector<Channel> temps;   ///< kTempGpu / kTempJunction / kTempMemory
  std::vector<Channel> clocks;  ///< kClockSm / kClockMemory
};

/// The first hwmon dir (lowest number) under the device: hwmon numbering is global and has no
/// relation to the card number, so it is only ever looked up under the card's own device dir.
fs::path find_hwmon(const fs::path& device) {
  std::error_code ec;
  std::optional<int> best;
  fs::path best_path;
  for (fs::directory_iterator it(device / "hwmon", ec), end; !ec && it != end; it.increment(ec)) {
    const auto n = numbered(it->path().filename().string(), "hwmon");
    if (n && (!best || *n < *best)) {
      best = n;
      best_path = it->path();
    }
  }
  return best_path;
}

/// Maps hwmon temperature channels by their labels (edge / junction / mem). A channel without a
/// label file is taken by number (temp1 edge, temp2 junction, temp3 mem), as amdgpu numbers them.
std::vector<Channel> find_temps(const fs::path& hwmon) {
  std::vector<Channel> temps;
  for (int i = 1; i <= 8; ++i) {
    const std::string stem = "temp" + std::to_string(i);
    const fs::path input = hwmon / (stem + "_input");
    if (!read_int(input)) continue;
    std::optional<Capability> cap;
    if (const auto label = read_text(hwmon / (stem + "_label"))) {
      if (*label == "edge") cap = Capability::kTempGpu;
      if (*label == "junction") cap = Capability::kTempJunction;
      if (*label == "mem") cap = Capability::kTempMemory;
    } else if (i == 1) {
      cap = Capability::kTempGpu;
    } else if (i == 2) {
      cap = Capability::kTempJunction;
    } else if (i == 3) {
      cap = Capability::kTempMemory;
    }
    if (!cap) continue;
    const bool taken = std::any_of(temps.begin(), temps.end(),
                                   [&](const Channel& c) { return c.capability == *cap; });
    if (!taken) temps.push_back({*cap, input});
  }
  return temps;
}

/// freq1 = sclk (shader clock), freq2 = mclk (memory clock); labels win when present.
std::vector<Channel> find_clocks(const fs::path& hwmon) {
  std::vector<Channel> clocks;
  for (int i = 1; i <= 2; ++i) {
    const std::string stem = "freq" + std::to_string(i);
    const fs::path input = hwmon / (stem + "_input");
    if (!read_int(input)) continue;
    Capability cap = i == 1 ? Capability::kClockSm : Capability::kClockMemory;
    if (const auto label = read_text(hwmon / (stem + "_label"))) {
      if (*label == "sclk")
        cap = Capability::kClockSm;
      else if (*label == "mclk")
        cap = Capability::kClockMemory;
      else
        continue;
    }
    const bool taken = std::any_of(clocks.begin(), clocks.end(),
                                   [&](const Channel& c) { return c.capability == cap; });
    if (!taken) clocks.push_back({cap, input});
  }
  return clocks;
}

std::string pci_bus_id(const fs::path& device) {
  std::string id = uevent_value(device / "uevent", "PCI_SLOT_NAME");
  if (!id.empty()) return id;
  std::error_code ec;
  if (fs::is_symlink(device, ec)) {
    const fs::path target = fs::read_symlink(device, ec);
    if (!ec) return target.filename().string();
  }
  const fs::path canonical = fs::weakly_canonical(device, ec);
  if (!ec && canonical.filename() != "device") return canonical.filename().string();
  return {};
}

class AmdgpuSampler final : public Sampler {
 public:
  explicit AmdgpuSampler(fs::path root) : root_(std::move(root)) {}

  std::string name() const override { return "amdgpu"; }

  Probe probe() override {
    cards_.clear();
    bool failed = false;
    Probe result = guarded_probe(
        "amdgpu", "amdgpu", [this](Probe& p) { probe_into(p); },
        [this, &failed] {
          cards_.clear();
          failed = true;
        });
    probed_ = true;
    if (failed) return result;
    result.available = !cards_.empty();
    if (!result.available) {
      result.reason = "no amdgpu device found under " + (root_ / "class" / "drm").string();
    }
    return result;
  }

  void sample(std::vector<Reading>& out, std::uint32_t& errors) override {
    try {
      if (!probed_) (void)probe();
      for (std::size_t i = 0; i < cards_.size(); ++i) out.push_back(read_card(i, errors));
    } catch (...) {
      ++errors;  // allocation failure: the contract forbids throwing
    }
  }

 private:
  void probe_into(Probe& result) {
    const fs::path drm = root_ / "class" / "drm";
    result.details["sysfs_root"] = root_.string();
    std::vector<std::pair<int, fs::path>> found;
    std::error_code ec;
    for (fs::directory_iterator it(drm, ec), end; !ec && it != end; it.increment(ec)) {
      // cardN only: cardN-DP-1 connectors and renderD* nodes do not match.
      const auto n = numbered(it->path().filename().string(), "card");
      if (!n) continue;
      const fs::path device = it->path() / "device";
      std::error_code dec;
      if (!fs::is_directory(device, dec) || !is_amdgpu(device)) continue;
      found.emplace_back(*n, it->path());
    }
    std::sort(found.begin(), found.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });

    const std::string driver = amdgpu_driver(root_);
    for (const auto& [number, card_dir] : found) {
      Card card;
      card.device = card_dir / "device";
      card.hwmon = find_hwmon(card.device);
      DeviceIdentity id;
      id.vendor = "amd";
      id.kind = "gpu";
      id.index = static_cast<int>(result.devices.size());
      id.driver = driver;
      id.pci_bus_id = pci_bus_id(card.device);
      const auto product = read_text(card.device / "product_name");
      id.name =
          product && !product->empty()
              ? *product
              : "AMD GPU " + (id.pci_bus_id.empty() ? card_dir.filename().string() : id.pci_bus_id);
      if (const auto uid = read_text(card.device / "unique_id")) id.uuid = *uid;
      id.memory_total_bytes = read_int(card.device / "mem_info_vram_total");
      id.details["card"] = card_dir.filename().string();
      id.details["sysfs_path"] = card.device.string();
      if (const auto serial = read_text(card.device / "serial_number")) {
        id.details["serial_number"] = *serial;
      }

      if (read_int(card.device / "gpu_busy_percent")) card.caps.insert(Capability::kUtilization);
      if (read_int(card.device / "mem_info_vram_used")) card.caps.insert(Capability::kMemoryUsed);
      if (!card.hwmon.empty()) {
        id.details["hwmon_path"] = card.hwmon.string();
        if (const auto cap = read_int(card.hwmon / "power1_cap")) {
          id.power_limit_w = static_cast<double>(*cap) / 1e6;
        }
        if (const auto label = read_text(card.hwmon / "power1_label")) {
          id.details["power1_label"] = *label;  // slowPPT / fastPPT on parts with two limits
        }
        if (read_int(card.hwmon / "power1_input")) card.caps.insert(Capability::kPowerInstant);
        if (read_int(card.hwmon / "power1_average")) card.caps.insert(Capability::kPowerAverage);
        if (read_int(card.hwmon / "energy1_input")) card.caps.insert(Capability::kEnergyCounter);
        card.temps = find_temps(card.hwmon);
        card.clocks = find_clocks(card.hwmon);
        for (const auto& c : card.temps) card.caps.insert(c.capability);
        for (const auto& c : card.clocks) card.caps.insert(c.capability);
      } else {
        id.details["hwmon_path"] = "";  // no hwmon: no power, temperatures or clocks
      }
      id.capabilities = card.caps;
      result.devices.push_back(std::move(id));
      cards_.push_back(std::move(card));
    }
  }

  Reading read_card(std::size_t index, std::uint32_t& errors) const {
    const Card& card = cards_[index];
    Reading r;
    r.device = index;
    const auto has = [&](Capability c) { return card.caps.count(c) != 0; };
    const auto get = [&](const fs::path& file) {
      auto v = read_int(file);
      if (!v) ++errors;
      return v;
    };
    const auto scaled = [&](const fs::path& file, double divisor) -> std::optional<double> {
      const auto v = get(file);
      if (!v) return std::nullopt;
      return static_cast<double>(*v) / divisor;
    };
    if (has(Capability::kEnergyCounter)) r.energy_j = scaled(card.hwmon / "energy1_input", 1e6);
    if (has(Capability::kPowerInstant)) {
      r.power_instant_w = scaled(card.hwmon / "power1_input", 1e6);
    }
    if (has(Capability::kPowerAverage)) {
      r.power_average_w = scaled(card.hwmon / "power1_average", 1e6);
    }
    if (has(Capability::kMemoryUsed)) r.memory_used_bytes = get(card.device / "mem_info_vram_used");
    if (has(Capability::kUtilization)) {
      r.utilization_pct = scaled(card.device / "gpu_busy_percent", 1.0);
    }
    for (const Channel& c : card.temps) {
      const auto v = scaled(c.file, 1e3);
      if (c.capability == Capability::kTempGpu) r.temp_gpu_c = v;
      if (c.capability == Capability::kTempJunction) r.temp_junction_c = v;
      if (c.capability == Capability::kTempMemory) r.temp_memory_c = v;
    }
    for (const Channel& c : card.clocks) {
      const auto v = scaled(c.file, 1e6);
      if (c.capability == Capability::kClockSm) r.clock_sm_mhz = v;
      if (c.capability == Capability::kClockMemory) r.clock_memory_mhz = v;
    }
    return r;
  }

  fs::path root_;
  bool probed_ = false;
  std::vector<Card> cards_;
};

}  // namespace

std::unique_ptr<Sampler> make_amdgpu_sampler(const std::filesystem::path& sysfs_root) {
  return std::make_unique<AmdgpuSampler>(sysfs_root);
}

}  // namespace dyno::telemetry
