// Private: our own declarations of the slice of the NVML C ABI that dyno uses (no NVIDIA SDK at
// build time; facts from docs/telemetry notes §1). Every function returns an nvmlReturn_t (int),
// handles are opaque pointers, structs are pinned with static_asserts (x86-64 / aarch64 LP64).
#pragma once

#include <cstddef>
#include <cstdint>

namespace dyno::telemetry::nvml {

struct DeviceSt;           // opaque driver object
using Device = DeviceSt*;  // nvmlDevice_t
using Return = int;        // nvmlReturn_t

// nvmlReturn_t values (NVML_SUCCESS, NVML_ERROR_*).
inline constexpr Return kSuccess = 0;
inline constexpr Return kUninitialized = 1;
inline constexpr Return kInvalidArgument = 2;
inline constexpr Return kNotSupported = 3;
inline constexpr Return kNoPermission = 4;
inline constexpr Return kAlreadyInitialized = 5;
inline constexpr Return kNotFound = 6;
inline constexpr Return kInsufficientSize = 7;
inline constexpr Return kInsufficientPower = 8;
inline constexpr Return kDriverNotLoaded = 9;
inline constexpr Return kTimeout = 10;
inline constexpr Return kIrqIssue = 11;
inline constexpr Return kLibraryNotFound = 12;
inline constexpr Return kFunctionNotFound = 13;
inline constexpr Return kCorruptedInforom = 14;
inline constexpr Return kGpuIsLost = 15;
inline constexpr Return kResetRequired = 16;
inline constexpr Return kOperatingSystem = 17;
inline constexpr Return kLibRmVersionMismatch = 18;
inline constexpr Return kInUse = 19;
inline constexpr Return kMemory = 20;
inline constexpr Return kNoData = 21;
inline constexpr Return kUnknown = 999;

/// "NVML_ERROR_DRIVER_NOT_LOADED" etc.; "NVML_ERROR_<code>" for codes we do not name.
const char* return_name(Return code);

// Field ids for nvmlDeviceGetFieldValues (NVML_FI_DEV_*).
inline constexpr unsigned kFieldMemoryTemp = 82;
inline constexpr unsigned kFieldPowerAverage = 185;
inline constexpr unsigned kFieldPowerInstant = 186;
inline constexpr unsigned kPowerScopeGpu = 0;  // NVML_POWER_SCOPE_GPU

// nvmlValueType_t.
inline constexpr int kValueDouble = 0;
inline constexpr int kValueUnsignedInt = 1;
inline constexpr int kValueUnsignedLong = 2;
inline constexpr int kValueUnsignedLongLong = 3;
inline constexpr int kValueSignedLongLong = 4;
inline constexpr int kValueSignedInt = 5;
inline constexpr int kValueUnsignedShort = 6;

// nvmlClockType_t, nvmlTemperatureSensors_t.
inline constexpr int kClockGraphics = 0;
inline constexpr int kClockSm = 1;
inline constexpr int kClockMem = 2;
inline constexpr int kTemperatureGpu = 0;

// Buffer sizes (NVML_DEVICE_NAME_V2_BUFFER_SIZE, ..._UUID_V2_..., NVML_SYSTEM_DRIVER_VERSION_...).
inline constexpr unsigned kNameBufferSize = 96;
inline constexpr unsigned kUuidBufferSize = 96;
inline constexpr unsigned kDriverVersionBufferSize = 80;

/// usedGpuMemory value meaning "not available" (NVML_VALUE_NOT_AVAILABLE as unsigned long long).
inline constexpr unsigned long long kValueNotAvailable = ~0ULL;

union Value {  // nvmlValue_t
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  long long sllVal;
  int siVal;
  unsigned short usVal;
};

struct FieldValue {  // nvmlFieldValue_t
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;    // µs since the epoch
  long long latencyUsec;  // µs
  int valueType;          // nvmlValueType_t
  Return nvmlReturn;
  Value value;
};
static_assert(sizeof(FieldValue) == 40, "layout of nvmlFieldValue_t");
static_assert(offsetof(FieldValue, nvmlReturn) == 28, "layout of nvmlFieldValue_t");
static_assert(offsetof(FieldValue, value) == 32, "layout of nvmlFieldValue_t");

struct Memory {  // nvmlMemory_t (v1): bytes; used = reserved + allocated
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
static_assert(sizeof(Memory) == 24, "layout of nvmlMemory_t");

struct MemoryV2 {  // nvmlMemory_v2_t (declared and pinned; not used yet)
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
static_assert(sizeof(MemoryV2) == 40, "layout of nvmlMemory_v2_t");
/// NVML_STRUCT_VERSION(Memory, 2) = sizeof | (2 << 24).
inline constexpr unsigned kMemoryV2Version = static_cast<unsigned>(sizeof(MemoryV2)) | (2U << 24);
static_assert(kMemoryV2Version == 0x02000028U, "nvmlMemory_v2 version");

struct ProcessInfoV2 {  // nvmlProcessInfo_v2_t == nvmlProcessInfo_t taken by _v3 (and _v2)
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes, or kValueNotAvailable
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
static_assert(sizeof(ProcessInfoV2) == 24, "layout of nvmlProcessInfo_v2_t");

struct PciInfo {  // nvmlPciInfo_t
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];  // "domain:bus:device.function"
};
static_assert(sizeof(PciInfo) == 68, "layout of nvmlPciInfo_t");
static_assert(offsetof(PciInfo, busId) == 36, "layout of nvmlPciInfo_t");

struct Utilization {  // nvmlUtilization_t: % of time over the last sample period
  unsigned int gpu;
  unsigned int memory;
};
static_assert(sizeof(Utilization) == 8, "layout of nvmlUtilization_t");

/// The function table, filled by dlsym. Comments give the exported symbol names.
struct Api {
  // required
  Return (*init)() = nullptr;                                  // nvmlInit_v2
  Return (*shutdown)() = nullptr;                              // nvmlShutdown
  Return (*device_count)(unsigned int*) = nullptr;             // nvmlDeviceGetCount_v2
  Return (*handle_by_index)(unsigned int, Device*) = nullptr;  // nvmlDeviceGetHandleByIndex_v2
  // optional
  const char* (*error_string)(Return) = nullptr;                    // nvmlErrorString
  Return (*driver_version)(char*, unsigned int) = nullptr;          // nvmlSystemGetDriverVersion
  Return (*name)(Device, char*, unsigned int) = nullptr;            // nvmlDeviceGetName
  Return (*uuid)(Device, char*, unsigned int) = nullptr;            // nvmlDeviceGetUUID
  Return (*pci_info)(Device, PciInfo*) = nullptr;                   // nvmlDeviceGetPciInfo_v3
  Return (*memory_info)(Device, Memory*) = nullptr;                 // nvmlDeviceGetMemoryInfo
  Return (*total_energy)(Device, unsigned long long*) = nullptr;    // ...GetTotalEnergyConsumption
  Return (*power_usage)(Device, unsigned int*) = nullptr;           // nvmlDeviceGetPowerUsage
  Return (*field_values)(Device, int, FieldValue*) = nullptr;       // nvmlDeviceGetFieldValues
  Return (*enforced_power_limit)(Device, unsigned int*) = nullptr;  // ...GetEnforcedPowerLimit
  Return (*temperature)(Device, int, unsigned int*) = nullptr;      // nvmlDeviceGetTemperature
  Return (*clock_info)(Device, int, unsigned int*) = nullptr;       // nvmlDeviceGetClockInfo
  Return (*utilization)(Device, Utilization*) = nullptr;            // nvmlDeviceGetUtilizationRates
  /// nvmlDeviceGetCurrentClocksEventReasons, else nvmlDeviceGetCurrentClocksThrottleReasons.
  Return (*clocks_event_reasons)(Device, unsigned long long*) = nullptr;
  /// nvmlDeviceGetComputeRunningProcesses_v3, else _v2 (both take nvmlProcessInfo_v2_t).
  Return (*compute_processes)(Device, unsigned int*, ProcessInfoV2*) = nullptr;
};

}  // namespace dyno::telemetry::nvml
