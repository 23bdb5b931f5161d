// NVIDIA telemetry through NVML, loaded at run time with dlopen (never linked): see
// telemetry notes §1. A missing required symbol or a failed nvmlInit makes the source
// unavailable; a missing optional symbol or NOT_SUPPORTED removes one capability.
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "telemetry/nvml_api.h"
#include "telemetry/sampler.h"

namespace dyno::telemetry {
namespace nvml {

const char* return_name(Return code) {
  switch (code) {
    case kSuccess:
      return "NVML_SUCCESS";
    case kUninitialized:
      return "NVML_ERROR_UNINITIALIZED";
    case kInvalidArgument:
      return "NVML_ERROR_INVALID_ARGUMENT";
    case kNotSupported:
      return "NVML_ERROR_NOT_SUPPORTED";
    case kNoPermission:
      return "NVML_ERROR_NO_PERMISSION";
    case kAlreadyInitialized:
      return "NVML_ERROR_ALREADY_INITIALIZED";
    case kNotFound:
      return "NVML_ERROR_NOT_FOUND";
    case kInsufficientSize:
      return "NVML_ERROR_INSUFFICIENT_SIZE";
    case kInsufficientPower:
      return "NVML_ERROR_INSUFFICIENT_POWER";
    case kDriverNotLoaded:
      return "NVML_ERROR_DRIVER_NOT_LOADED";
    case kTimeout:
      return "NVML_ERROR_TIMEOUT";
    case kIrqIssue:
      return "NVML_ERROR_IRQ_ISSUE";
    case kLibraryNotFound:
      return "NVML_ERROR_LIBRARY_NOT_FOUND";
    case kFunctionNotFound:
      return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case kCorruptedInforom:
      return "NVML_ERROR_CORRUPTED_INFOROM";
    case kGpuIsLost:
      return "NVML_ERROR_GPU_IS_LOST";
    case kResetRequired:
      return "NVML_ERROR_RESET_REQUIRED";
    case kOperatingSystem:
      return "NVML_ERROR_OPERATING_SYSTEM";
    case kLibRmVersionMismatch:
      return "NVML_ERROR_LIB_RM_VERSION_MISMATCH";
    case kInUse:
      return "NVML_ERROR_IN_USE";
    case kMemory:
      return "NVML_ERROR_MEMORY";
    case kNoData:
      return "NVML_ERROR_NO_DATA";
    case kUnknown:
      return "NVML_ERROR_UNKNOWN";
    default:
      return "NVML_ERROR_(unnamed)";
  }
}

}  // namespace nvml

namespace {

using nvml::Return;

/// dlsym into a typed function pointer; nullptr when absent.
template <typename Fn>
void resolve(void* lib, const char* symbol, Fn& out) {
  void* p = dlsym(lib, symbol);
  out = reinterpret_cast<Fn>(p);
}

std::string c_string(const char* buffer, std::size_t size) {
  return std::string(buffer, strnlen(buffer, size));
}

std::optional<double> field_as_double(const nvml::FieldValue& v) {
  switch (v.valueType) {
    case nvml::kValueDouble:
      return v.value.dVal;
    case nvml::kValueUnsignedInt:
      return static_cast<double>(v.value.uiVal);
    case nvml::kValueUnsignedLong:
      return static_cast<double>(v.value.ulVal);
    case nvml::kValueUnsignedLongLong:
      return static_cast<double>(v.value.ullVal);
    case nvml::kValueSignedLongLong:
      return static_cast<double>(v.value.sllVal);
    case nvml::kValueSignedInt:
      return static_cast<double>(v.value.siVal);
    case nvml::kValueUnsignedShort:
      return static_cast<double>(v.value.usVal);
    default:
      return std::nullopt;
  }
}

class NvmlSampler final : public Sampler {
 public:
  explicit NvmlSampler(std::string library) : requested_library_(std::move(library)) {}
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;
  ~NvmlSampler() override { close(); }

  std::string name() const override { return "nvml"; }
  Probe probe() override;
  void sample(std::vector<Reading>& out, std::uint32_t& errors) override;
  void set_process_ids(const std::vector<int>& pids) override { pids_ = pids; }

 private:
  struct Device {
    nvml::Device handle = nullptr;
    std::set<Capability> caps;
    bool average_from_field = false;  ///< field 185, else nvmlDeviceGetPowerUsage
    bool lost = false;                ///< GPU_IS_LOST seen: sticky, every later read fails
  };

  Probe unavailable(Probe p, std::string reason) {
    p.available = false;
    p.reason = std::move(reason);
    close();
    devices_.clear();
    return p;
  }
  void close();
  std::string describe(Return rc) const;
  // The steps of probe(); each that can fail returns why the source is unavailable.
  std::optional<std::string> open_library(Probe& p);
  std::optional<std::string> resolve_required();
  void resolve_optional(Probe& p);
  std::optional<std::string> initialise();
  std::string read_driver_version(Probe& p) const;
  /// Probes each device into devices_ and p.devices; false when none has a capability.
  bool probe_devices(Probe& p, unsigned count, const std::string& driver);
  void probe_device(Device& d, DeviceIdentity& id);
  Return read_fields(const Device& d, const std::vector<unsigned>& ids,
                     std::vector<nvml::FieldValue>& values) const;
  /// Sum of usedGpuMemory over `pids_`; kSuccess with nullopt when nothing is attributable.
  Return read_process_memory(const Device& d, std::optional<std::int64_t>& bytes) const;

  std::string requested_library_;
  std::string library_;
  void* lib_ = nullptr;
  bool initialised_ = false;
  nvml::Api api_;
  std::vector<Device> devices_;
  std::vector<int> pids_;
  bool probed_ = false;
  Probe probe_;
};

void NvmlSampler::close() {
  if (initialised_ && api_.shutdown != nullptr) api_.shutdown();
  initialised_ = false;
  if (lib_ != nullptr) dlclose(lib_);
  lib_ = nullptr;
  api_ = nvml::Api{};
}

std::string NvmlSampler::describe(Return rc) const {
  std::string s = nvml::return_name(rc);
  s += " (" + std::to_string(rc);
  if (api_.error_string != nullptr) {
    const char* text = api_.error_string(rc);
    if (text != nullptr && *text != '\0') s += ": " + std::string(text);
  }
  s += ")";
  return s;
}

Return NvmlSampler::read_fields(const Device& d, const std::vector<unsigned>& ids,
                                std::vector<nvml::FieldValue>& values) const {
  values.assign(ids.size(), nvml::FieldValue{});
  for (std::size_t i = 0; i < ids.size(); ++i) {
    values[i].fieldId = ids[i];
    values[i].scopeId = nvml::kPowerScopeGpu;
  }
  return api_.field_values(d.handle, static_cast<int>(values.size()), values.data());
}

Return NvmlSampler::read_process_memory(const Device& d, std::optional<std::int64_t>& bytes) const {
  bytes.reset();
  std::vector<nvml::ProcessInfoV2> infos;
  unsigned count = 0;
  Return rc = api_.compute_processes(d.handle, &count, nullptr);
  // The list can grow between the two calls: retry a few times with slack.
  for (int attempt = 0; rc == nvml::kInsufficientSize && attempt < 4; ++attempt) {
    infos.assign(static_cast<std::size_t>(count) + 8, nvml::ProcessInfoV2{});
    count = static_cast<unsigned>(infos.size());
    rc = api_.compute_processes(d.handle, &count, infos.data());
  }
  if (rc != nvml::kSuccess) return rc;
  if (pids_.empty()) return nvml::kSuccess;  // nothing to attribute: absent, not an error
  infos.resize(std::min<std::size_t>(count, infos.size()));
  std::int64_t sum = 0;
  bool any_unknown = false;
  for (const auto& info : infos) {
    bool ours = false;
    for (int pid : pids_) ours = ours || static_cast<unsigned>(pid) == info.pid;
    if (!ours) continue;
    if (info.usedGpuMemory == nvml::kValueNotAvailable) {
      any_unknown = true;
      continue;
    }
    sum += static_cast<std::int64_t>(info.usedGpuMemory);
  }
  if (!any_unknown) bytes = sum;  // none of ours on the device ⇒ 0 B, a real figure
  return nvml::kSuccess;
}

void NvmlSampler::probe_device(Device& d, DeviceIdentity& id) {
  std::string probe_errors;
  auto note = [&](const char* what, Return rc) {
    if (rc == nvml::kSuccess || rc == nvml::kNotSupported) return;
    if (!probe_errors.empty()) probe_errors += "; ";
    probe_errors += std::string(what) + ": " + nvml::return_name(rc);
  };
  auto try_cap = [&](Capability cap, Return rc) {
    note(to_string(cap), rc);
    if (rc == nvml::kSuccess) d.caps.insert(cap);
  };

  if (api_.name != nullptr) {
    char buf[nvml::kNameBufferSize] = {};
    if (api_.name(d.handle, buf, sizeof buf) == nvml::kSuccess) id.name = c_string(buf, sizeof buf);
  }
  if (api_.uuid != nullptr) {
    char buf[nvml::kUuidBufferSize] = {};
    if (api_.uuid(d.handle, buf, sizeof buf) == nvml::kSuccess) id.uuid = c_string(buf, sizeof buf);
  }
  if (api_.pci_info != nullptr) {
    nvml::PciInfo pci{};
    if (api_.pci_info(d.handle, &pci) == nvml::kSuccess) {
      id.pci_bus_id = c_string(pci.busId, sizeof pci.busId);
    }
  }
  if (api_.enforced_power_limit != nullptr) {
    unsigned mw = 0;
    if (api_.enforced_power_limit(d.handle, &mw) == nvml::kSuccess) {
      id.power_limit_w = static_cast<double>(mw) / 1000.0;
    }
  }
  if (api_.memory_info != nullptr) {
    nvml::Memory mem{};
    Return rc = api_.memory_info(d.handle, &mem);
    try_cap(Capability::kMemoryUsed, rc);
    if (rc == nvml::kSuccess) id.memory_total_bytes = static_cast<std::int64_t>(mem.total);
  }
  if (api_.total_energy != nullptr) {
    unsigned long long mj = 0;
    try_cap(Capability::kEnergyCounter, api_.total_energy(d.handle, &mj));
  }
  if (api_.field_values != nullptr) {
    std::vector<nvml::FieldValue> values;
    const std::vector<unsigned> ids = {nvml::kFieldPowerInstant, nvml::kFieldPowerAverage,
                                       nvml::kFieldMemoryTemp};
    Return rc = read_fields(d, ids, values);
    note("nvmlDeviceGetFieldValues", rc);
    if (rc == nvml::kSuccess) {
      try_cap(Capability::kPowerInstant, values[0].nvmlReturn);
      if (values[1].nvmlReturn == nvml::kSuccess) {
        d.caps.insert(Capability::kPowerAverage);
        d.average_from_field = true;
      }
      try_cap(Capability::kTempMemory, values[2].nvmlReturn);
    }
  }
  if (!d.average_from_field && api_.power_usage != nullptr) {
    unsigned mw = 0;
    try_cap(Capability::kPowerAverage, api_.power_usage(d.handle, &mw));
  }
  if (d.caps.count(Capability::kPowerAverage) != 0) {
    id.details["power_average_source"] =
        d.average_from_field ? "field:POWER_AVERAGE(185)" : "nvmlDeviceGetPowerUsage";
  }
  if (api_.temperature != nullptr) {
    unsigned c = 0;
    try_cap(Capability::kTempGpu, api_.temperature(d.handle, nvml::kTemperatureGpu, &c));
  }
  if (api_.clock_info != nullptr) {
    unsigned mhz = 0;
    try_cap(Capability::kClockSm, api_.clock_info(d.handle, nvml::kClockSm, &mhz));
    try_cap(Capability::kClockMemory, api_.clock_info(d.handle, nvml::kClockMem, &mhz));
  }
  if (api_.utilization != nullptr) {
    nvml::Utilization u{};
    try_cap(Capability::kUtilization, api_.utilization(d.handle, &u));
  }
  if (api_.clocks_event_reasons != nullptr) {
    unsigned long long mask = 0;
    try_cap(Capability::kThrottle, api_.clocks_event_reasons(d.handle, &mask));
  }
  if (api_.compute_processes != nullptr) {
    unsigned count = 0;
    Return rc = api_.compute_processes(d.handle, &count, nullptr);
    if (rc == nvml::kInsufficientSize) rc = nvml::kSuccess;  // processes exist: supported
    try_cap(Capability::kProcessMemory, rc);
  }
  id.details["power_scope"] = "gpu";
  if (!probe_errors.empty()) id.details["probe_errors"] = probe_errors;
}

std::optional<std::string> NvmlSampler::open_library(Probe& p) {
  library_ = requested_library_;
  if (library_.empty()) {
    const char* env = std::getenv("DYNO_NVML_LIBRARY");
    library_ = (env != nullptr && *env != '\0') ? env : "libnvidia-ml.so.1";
  }
  p.details["library"] = library_;

  dlerror();
  lib_ = dlopen(library_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib_ == nullptr) {
    const char* err = dlerror();
    return library_ + " not found (no NVIDIA driver?): " + (err != nullptr ? err : "dlopen failed");
  }
  return std::nullopt;
}

std::optional<std::string> NvmlSampler::resolve_required() {
  resolve(lib_, "nvmlInit_v2", api_.init);
  resolve(lib_, "nvmlShutdown", api_.shutdown);
  resolve(lib_, "nvmlDeviceGetCount_v2", api_.device_count);
  resolve(lib_, "nvmlDeviceGetHandleByIndex_v2", api_.handle_by_index);
  std::string missing_required;
  auto require = [&](const void* fn, const char* symbol) {
    if (fn != nullptr) return;
    if (!missing_required.empty()) missing_required += ", ";
    missing_required += symbol;
  };
  require(reinterpret_cast<const void*>(api_.init), "nvmlInit_v2");
  require(reinterpret_cast<const void*>(api_.shutdown), "nvmlShutdown");
  require(reinterpret_cast<const void*>(api_.device_count), "nvmlDeviceGetCount_v2");
  require(reinterpret_cast<const void*>(api_.handle_by_index), "nvmlDeviceGetHandleByIndex_v2");
  if (!missing_required.empty()) {
    return library_ + " lacks required NVML symbol(s) " + missing_required +
           " (driver too old or not NVML?)";
  }
  return std::nullopt;
}

void NvmlSampler::resolve_optional(Probe& p) {
  std::string missing;
  auto optional = [&](const char* symbol, auto& fn) {
    resolve(lib_, symbol, fn);
    if (fn == nullptr) missing += (missing.empty() ? "" : ",") + std::string(symbol);
  };
  optional("nvmlErrorString", api_.error_string);
  optional("nvmlSystemGetDriverVersion", api_.driver_version);
  optional("nvmlDeviceGetName", api_.name);
  optional("nvmlDeviceGetUUID", api_.uuid);
  optional("nvmlDeviceGetPciInfo_v3", api_.pci_info);
  optional("nvmlDeviceGetMemoryInfo", api_.memory_info);
  optional("nvmlDeviceGetTotalEnergyConsumption", api_.total_energy);
  optional("nvmlDeviceGetPowerUsage", api_.power_usage);
  optional("nvmlDeviceGetFieldValues", api_.field_values);
  optional("nvmlDeviceGetEnforcedPowerLimit", api_.enforced_power_limit);
  optional("nvmlDeviceGetTemperature", api_.temperature);
  optional("nvmlDeviceGetClockInfo", api_.clock_info);
  optional("nvmlDeviceGetUtilizationRates", api_.utilization);
  resolve(lib_, "nvmlDeviceGetCurrentClocksEventReasons", api_.clocks_event_reasons);
  p.details["throttle_symbol"] = "nvmlDeviceGetCurrentClocksEventReasons";
  if (api_.clocks_event_reasons == nullptr) {
    optional("nvmlDeviceGetCurrentClocksThrottleReasons", api_.clocks_event_reasons);
    p.details["throttle_symbol"] = "nvmlDeviceGetCurrentClocksThrottleReasons";
  }
  resolve(lib_, "nvmlDeviceGetComputeRunningProcesses_v3", api_.compute_processes);
  p.details["processes_symbol"] = "nvmlDeviceGetComputeRunningProcesses_v3";
  if (api_.compute_processes == nullptr) {
    optional("nvmlDeviceGetComputeRunningProcesses_v2", api_.compute_processes);
    p.details["processes_symbol"] = "nvmlDeviceGetComputeRunningProcesses_v2";
  }
  if (api_.clocks_event_reasons == nullptr) p.details.erase("throttle_symbol");
  if (api_.compute_processes == nullptr) p.details.erase("processes_symbol");
  if (!missing.empty()) p.details["missing_symbols"] = missing;
}

std::optional<std::string> NvmlSampler::initialise() {
  const Return rc = api_.init();
  if (rc != nvml::kSuccess) {
    std::string hint;
    if (rc == nvml::kDriverNotLoaded) hint = " - is the NVIDIA kernel driver loaded?";
    if (rc == nvml::kNoPermission) hint = " - no permission to the NVIDIA device files";
    if (rc == nvml::kLibRmVersionMismatch) hint = " - driver/library version mismatch: reboot?";
    return "nvmlInit_v2 failed: " + describe(rc) + hint;
  }
  initialised_ = true;
  return std::nullopt;
}

std::string NvmlSampler::read_driver_version(Probe& p) const {
  std::string driver;
  if (api_.driver_version != nullptr) {
    char buf[nvml::kDriverVersionBufferSize] = {};
    if (api_.driver_version(buf, sizeof buf) == nvml::kSuccess) {
      driver = c_string(buf, sizeof buf);
      p.details["driver_version"] = driver;
    }
  }
  return driver;
}

bool NvmlSampler::probe_devices(Probe& p, unsigned count, const std::string& driver) {
  bool any_capability = false;
  for (unsigned i = 0; i < count; ++i) {
    Device d;
    DeviceIdentity id;
    id.vendor = "nvidia";
    id.kind = "gpu";
    id.index = static_cast<int>(i);
    id.driver = driver;
    const Return rc = api_.handle_by_index(i, &d.handle);
    if (rc != nvml::kSuccess) {
      d.handle = nullptr;
      id.details["error"] = "nvmlDeviceGetHandleByIndex_v2 failed: " + describe(rc);
    } else {
      probe_device(d, id);
    }
    id.capabilities = d.caps;
    any_capability = any_capability || !d.caps.empty();
    devices_.push_back(std::move(d));
    p.devices.push_back(std::move(id));
  }
  return any_capability;
}

Probe NvmlSampler::probe() {
  if (probed_) return probe_;
  probed_ = true;
  Probe p;
  p.source = "nvml";
  if (auto failure = open_library(p)) return probe_ = unavailable(p, *failure);
  if (auto failure = resolve_required()) return probe_ = unavailable(p, *failure);
  resolve_optional(p);
  if (auto failure = initialise()) return probe_ = unavailable(p, *failure);
  const std::string driver = read_driver_version(p);

  unsigned count = 0;
  const Return rc = api_.device_count(&count);
  if (rc != nvml::kSuccess) {
    return probe_ = unavailable(p, "nvmlDeviceGetCount_v2 failed: " + describe(rc));
  }
  if (count == 0) return probe_ = unavailable(p, "NVML initialised but reports 0 devices");
  if (!probe_devices(p, count, driver)) {
    return probe_ = unavailable(p, "NVML initialised but reports no supported metric");
  }
  p.available = true;
  return probe_ = p;
}

void NvmlSampler::sample(std::vector<Reading>& out, std::uint32_t& errors) {
  if (!initialised_) return;
  std::vector<nvml::FieldValue> values;
  std::vector<unsigned> ids;
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    Device& d = devices_[i];
    Reading r;
    r.device = i;
    // One read of one capability: skipped when absent, failed when lost or on any error.
    auto read = [&](Capability cap, auto&& fn) {
      if (d.handle == nullptr || d.caps.count(cap) == 0) return;
      if (d.lost) {
        ++errors;
        return;
      }
      Return rc = fn();
      if (rc == nvml::kSuccess) return;
      ++errors;
      if (rc == nvml::kGpuIsLost) d.lost = true;
    };

    read(Capability::kEnergyCounter, [&] {
      unsigned long long mj = 0;
      Return rc = api_.total_energy(d.handle, &mj);
      if (rc == nvml::kSuccess) r.energy_j = static_cast<double>(mj) / 1000.0;
      return rc;
    });

    // Field batch: POWER_INSTANT, POWER_AVERAGE (when the field is the source), MEMORY_TEMP.
    ids.clear();
    std::vector<std::pair<Capability, std::optional<double>*>> wanted;
    auto want = [&](Capability cap, unsigned field, std::optional<double>* dest) {
      if (d.caps.count(cap) == 0) return;
      ids.push_back(field);
      wanted.emplace_back(cap, dest);
    };
    want(Capability::kPowerInstant, nvml::kFieldPowerInstant, &r.power_instant_w);
    if (d.average_from_field) {
      want(Capability::kPowerAverage, nvml::kFieldPowerAverage, &r.power_average_w);
    }
    want(Capability::kTempMemory, nvml::kFieldMemoryTemp, &r.temp_memory_c);
    if (!ids.empty() && d.handle != nullptr) {
      Return rc = d.lost ? nvml::kGpuIsLost : read_fields(d, ids, values);
      for (std::size_t k = 0; k < wanted.size(); ++k) {
        Return vrc = rc == nvml::kSuccess ? values[k].nvmlReturn : rc;
        std::optional<double> v = vrc == nvml::kSuccess ? field_as_double(values[k]) : std::nullopt;
        if (!v) {
          ++errors;
          if (vrc == nvml::kGpuIsLost) d.lost = true;
          continue;
        }
        // Power fields are mW, the memory temperature °C.
        *wanted[k].second = wanted[k].first == Capability::kTempMemory ? *v : *v / 1000.0;
      }
    }

    if (!d.average_from_field) {
      read(Capability::kPowerAverage, [&] {
        unsigned mw = 0;
        Return rc = api_.power_usage(d.handle, &mw);
        if (rc == nvml::kSuccess) r.power_average_w = static_cast<double>(mw) / 1000.0;
        return rc;
      });
    }
    read(Capability::kMemoryUsed, [&] {
      nvml::Memory mem{};
      Return rc = api_.memory_info(d.handle, &mem);
      if (rc == nvml::kSuccess) r.memory_used_bytes = static_cast<std::int64_t>(mem.used);
      return rc;
    });
    read(Capability::kProcessMemory,
         [&] { return read_process_memory(d, r.process_memory_bytes); });
    read(Capability::kTempGpu, [&] {
      unsigned c = 0;
      Return rc = api_.temperature(d.handle, nvml::kTemperatureGpu, &c);
      if (rc == nvml::kSuccess) r.temp_gpu_c = static_cast<double>(c);
      return rc;
    });
    read(Capability::kClockSm, [&] {
      unsigned mhz = 0;
      Return rc = api_.clock_info(d.handle, nvml::kClockSm, &mhz);
      if (rc == nvml::kSuccess) r.clock_sm_mhz = static_cast<double>(mhz);
      return rc;
    });
    read(Capability::kClockMemory, [&] {
      unsigned mhz = 0;
      Return rc = api_.clock_info(d.handle, nvml::kClockMem, &mhz);
      if (rc == nvml::kSuccess) r.clock_memory_mhz = static_cast<double>(mhz);
      return rc;
    });
    read(Capability::kUtilization, [&] {
      nvml::Utilization u{};
      Return rc = api_.utilization(d.handle, &u);
      if (rc == nvml::kSuccess) r.utilization_pct = static_cast<double>(u.gpu);
      return rc;
    });
    read(Capability::kThrottle, [&] {
      unsigned long long mask = 0;
      Return rc = api_.clocks_event_reasons(d.handle, &mask);
      if (rc == nvml::kSuccess) r.throttle_reasons = static_cast<std::uint64_t>(mask);
      return rc;
    });
    out.push_back(r);
  }
}

}  // namespace

std::unique_ptr<Sampler> make_nvml_sampler(const std::string& library) {
  return std::make_unique<NvmlSampler>(library);
}

}  // namespace dyno::telemetry
