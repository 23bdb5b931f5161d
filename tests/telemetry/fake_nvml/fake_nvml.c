/* A fake libnvidia-ml.so.1 for dyno's NVML tests. Test-only; loaded through
 * make_nvml_sampler(path), never LD_PRELOADed. Our own declarations (no NVIDIA header).
 *
 * Environment (read at nvmlInit_v2):
 *   FAKE_NVML_TRACE   CSV "t_ms,energy_mJ,power_instant_mW,power_average_mW,mem_used_B,temp_C,
 *                     sm_MHz,event"; an optional header line (not starting with a digit) is
 *                     skipped; an empty cell makes that metric NOT_SUPPORTED; event is "",
 *                     "reset" (informational: the row's energy is the restarted counter) or
 *                     "lost" (every device call returns GPU_IS_LOST from then on).
 *   FAKE_NVML_CLOCK   path of a file holding the current t_ms (read on every call); unset or
 *                     unreadable: CLOCK_MONOTONIC since nvmlInit_v2. The answer is the last row
 *                     with t_ms <= now (the first row before that).
 *   FAKE_NVML_DEVICES device count (default 1; 0 allowed).
 *   FAKE_NVML_PID     pid of the one compute process (1 GiB); default 4242.
 *   FAKE_NVML_INIT_ERROR  nvmlInit_v2 returns this code (e.g. 9 DRIVER_NOT_LOADED).
 *
 * Variants (compile definitions):
 *   FAKE_NVML_NO_PROCESSES_V3   export nvmlDeviceGetComputeRunningProcesses_v2 only
 *   FAKE_NVML_ALL_UNSUPPORTED   every metric returns NOT_SUPPORTED (Jetson-like)
 *   FAKE_NVML_NO_INIT           no nvmlInit_v2 symbol (required symbol missing)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

enum {
  OK = 0,
  ERR_UNINITIALIZED = 1,
  ERR_INVALID_ARGUMENT = 2,
  ERR_NOT_SUPPORTED = 3,
  ERR_INSUFFICIENT_SIZE = 7,
  ERR_GPU_IS_LOST = 15
};

typedef struct fake_device {
  unsigned index;
} fake_device;
typedef fake_device* device_t;

typedef struct {
  unsigned field_id;
  unsigned scope_id;
  long long timestamp;
  long long latency_usec;
  int value_type;
  int ret;
  union {
    double d;
    unsigned ui;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
    int si;
    unsigned short us;
  } value;
} field_value_t;
_Static_assert(sizeof(field_value_t) == 40, "nvmlFieldValue_t");

typedef struct {
  unsigned long long total, free, used;
} memory_t;

typedef struct {
  unsigned pid;
  unsigned long long used_gpu_memory;
  unsigned gpu_instance_id, compute_instance_id;
} process_info_t;
_Static_assert(sizeof(process_info_t) == 24, "nvmlProcessInfo_v2_t");

typedef struct {
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
} pci_info_t;
_Static_assert(sizeof(pci_info_t) == 68, "nvmlPciInfo_t");

typedef struct {
  unsigned gpu, memory;
} utilization_t;

/* One trace row; a metric < 0 is "absent" (NOT_SUPPORTED). */
typedef struct {
  long long t_ms;
  long long energy_mj, instant_mw, average_mw, mem_used, temp_c, sm_mhz;
  int lost;
} row_t;

#define MAX_DEVICES 16
static fake_device g_devices[MAX_DEVICES];
static unsigned g_device_count = 1;
static row_t* g_rows = NULL;
static size_t g_nrows = 0;
static int g_initialised = 0;
static int g_lost = 0; /* sticky */
static unsigned g_pid = 4242;
static struct timespec g_t0;

static const row_t k_default_row = {0, 1000000, 300000, 290000, 10LL << 30, 55, 1980, 0};

static long long parse_cell(const char* s, size_t n) {
  char buf[64];
  if (n == 0 || n >= sizeof buf) return -1;
  memcpy(buf, s, n);
  buf[n] = '\0';
  return strtoll(buf, NULL, 10);
}

__attribute__((unused)) static void load_trace(const char* path) {
  FILE* f = fopen(path, "r");
  char line[512];
  size_t cap = 0;
  if (f == NULL) return;
  while (fgets(line, sizeof line, f) != NULL) {
    const char* cells[8];
    size_t lens[8];
    size_t ncells = 0;
    char* p = line;
    row_t r;
    if (line[0] < '0' || line[0] > '9') continue; /* header or blank */
    line[strcspn(line, "\r\n")] = '\0';
    while (ncells < 8) {
      char* comma = strchr(p, ',');
      cells[ncells] = p;
      lens[ncells] = comma != NULL ? (size_t)(comma - p) : strlen(p);
      ++ncells;
      if (comma == NULL) break;
      p = comma + 1;
    }
    while (ncells < 8) {
      cells[ncells] = "";
      lens[ncells] = 0;
      ++ncells;
    }
    r.t_ms = parse_cell(cells[0], lens[0]);
    r.energy_mj = parse_cell(cells[1], lens[1]);
    r.instant_mw = parse_cell(cells[2], lens[2]);
    r.average_mw = parse_cell(cells[3], lens[3]);
    r.mem_used = parse_cell(cells[4], lens[4]);
    r.temp_c = parse_cell(cells[5], lens[5]);
    r.sm_mhz = parse_cell(cells[6], lens[6]);
    r.lost = lens[7] == 4 && strncmp(cells[7], "lost", 4) == 0;
    if (g_nrows == cap) {
      size_t ncap = cap == 0 ? 64 : cap * 2;
      row_t* grown = (row_t*)realloc(g_rows, ncap * sizeof(row_t));
      if (grown == NULL) break;
      g_rows = grown;
      cap = ncap;
    }
    g_rows[g_nrows++] = r;
  }
  fclose(f);
}

static long long now_ms(void) {
  const char* clock_path = getenv("FAKE_NVML_CLOCK");
  struct timespec ts;
  if (clock_path != NULL && *clock_path != '\0') {
    FILE* f = fopen(clock_path, "r");
    if (f != NULL) {
      long long t = 0;
      int n = fscanf(f, "%lld", &t);
      fclose(f);
      if (n == 1) return t;
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (ts.tv_sec - g_t0.tv_sec) * 1000LL + (ts.tv_nsec - g_t0.tv_nsec) / 1000000LL;
}

/* The row in force now; sets the sticky lost flag. */
static const row_t* current(void) {
  const row_t* r;
  size_t i;
  long long t;
  if (g_nrows == 0) return &k_default_row;
  t = now_ms();
  r = &g_rows[0];
  for (i = 0; i < g_nrows && g_rows[i].t_ms <= t; ++i) r = &g_rows[i];
  for (i = 0; i < g_nrows && g_rows[i].t_ms <= t; ++i) {
    if (g_rows[i].lost) g_lost = 1;
  }
  return r;
}

/* Common prologue of every device call: 0 to go on, else the code to return. */
static int check(device_t dev) {
  if (!g_initialised) return ERR_UNINITIALIZED;
  if (dev == NULL || dev < g_devices || dev >= g_devices + g_device_count) {
    return ERR_INVALID_ARGUMENT;
  }
  (void)current();
  if (g_lost) return ERR_GPU_IS_LOST;
  return OK;
}

#ifdef FAKE_NVML_ALL_UNSUPPORTED
#define METRIC_GUARD() return ERR_NOT_SUPPORTED
#else
#define METRIC_GUARD() (void)0
#endif

#define CHECK_DEV(dev)          \
  do {                          \
    int rc_ = check(dev);       \
    if (rc_ != OK) return rc_;  \
  } while (0)

__attribute__((unused)) static int env_int(const char* name, int fallback) {
  const char* v = getenv(name);
  return v != NULL && *v != '\0' ? atoi(v) : fallback;
}

#ifndef FAKE_NVML_NO_INIT
EXPORT int nvmlInit_v2(void) {
  const char* trace = getenv("FAKE_NVML_TRACE");
  int err = env_int("FAKE_NVML_INIT_ERROR", 0);
  unsigned i;
  if (err != 0) return err;
  free(g_rows);
  g_rows = NULL;
  g_nrows = 0;
  g_lost = 0;
  clock_gettime(CLOCK_MONOTONIC, &g_t0);
  if (trace != NULL && *trace != '\0') load_trace(trace);
  g_device_count = (unsigned)env_int("FAKE_NVML_DEVICES", 1);
  if (g_device_count > MAX_DEVICES) g_device_count = MAX_DEVICES;
  for (i = 0; i < MAX_DEVICES; ++i) g_devices[i].index = i;
  g_pid = (unsigned)env_int("FAKE_NVML_PID", 4242);
  g_initialised = 1;
  return OK;
}
#endif

EXPORT int nvmlShutdown(void) {
  if (!g_initialised) return ERR_UNINITIALIZED;
  g_initialised = 0;
  free(g_rows);
  g_rows = NULL;
  g_nrows = 0;
  return OK;
}

EXPORT const char* nvmlErrorString(int rc) {
  switch (rc) {
    case OK: return "Success";
    case ERR_NOT_SUPPORTED: return "Not Supported";
    case 4: return "Insufficient Permissions";
    case ERR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case 9: return "Driver Not Loaded";
    case ERR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
  }
}

EXPORT int nvmlSystemGetDriverVersion(char* out, unsigned len) {
  if (!g_initialised) return ERR_UNINITIALIZED;
  if (out == NULL || len < 7) return ERR_INSUFFICIENT_SIZE;
  snprintf(out, len, "999.99");
  return OK;
}

EXPORT int nvmlDeviceGetCount_v2(unsigned* count) {
  if (!g_initialised) return ERR_UNINITIALIZED;
  if (count == NULL) return ERR_INVALID_ARGUMENT;
  *count = g_device_count;
  return OK;
}

EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned index, device_t* dev) {
  if (!g_initialised) return ERR_UNINITIALIZED;
  if (dev == NULL || index >= g_device_count) return ERR_INVALID_ARGUMENT;
  *dev = &g_devices[index];
  return OK;
}

EXPORT int nvmlDeviceGetName(device_t dev, char* out, unsigned len) {
  CHECK_DEV(dev);
  snprintf(out, len, "Fake GPU %u", dev->index);
  return OK;
}

EXPORT int nvmlDeviceGetUUID(device_t dev, char* out, unsigned len) {
  CHECK_DEV(dev);
  snprintf(out, len, "GPU-00000000-0000-0000-0000-%012u", dev->index);
  return OK;
}

EXPORT int nvmlDeviceGetPciInfo_v3(device_t dev, pci_info_t* pci) {
  CHECK_DEV(dev);
  memset(pci, 0, sizeof *pci);
  pci->bus = 0x65u + dev->index;
  pci->pci_device_id = 0x233010deu;
  snprintf(pci->bus_id_legacy, sizeof pci->bus_id_legacy, "0000:%02x:00.0", pci->bus);
  snprintf(pci->bus_id, sizeof pci->bus_id, "00000000:%02x:00.0", pci->bus);
  return OK;
}

EXPORT int nvmlDeviceGetEnforcedPowerLimit(device_t dev, unsigned* mw) {
  CHECK_DEV(dev);
  METRIC_GUARD();
  *mw = 700000u;
  return OK;
}

EXPORT int nvmlDeviceGetMemoryInfo(device_t dev, memory_t* mem) {
  const row_t* r;
  CHECK_DEV(dev);
  METRIC_GUARD();
  r = current();
  if (r->mem_used < 0) return ERR_NOT_SUPPORTED;
  mem->total = 80ULL << 30;
  mem->used = (unsigned long long)r->mem_used;
  mem->free = mem->total - mem->used;
  return OK;
}

EXPORT int nvmlDeviceGetTotalEnergyConsumption(device_t dev, unsigned long long* mj) {
  const row_t* r;
  CHECK_DEV(dev);
  METRIC_GUARD();
  r = current();
  if (r->energy_mj < 0) return ERR_NOT_SUPPORTED;
  *mj = (unsigned long long)r->energy_mj;
  return OK;
}

EXPORT int nvmlDeviceGetPowerUsage(device_t dev, unsigned* mw) {
  const row_t* r;
  CHECK_DEV(dev);
  METRIC_GUARD();
  r = current();
  if (r->average_mw < 0) return ERR_NOT_SUPPORTED;
  *mw = (unsigned)r->average_mw;
  return OK;
}

EXPORT int nvmlDeviceGetFieldValues(device_t dev, int n, field_value_t* values) {
  const row_t* r;
  int i;
  CHECK_DEV(dev);
  if (n < 0 || (n > 0 && values == NULL)) return ERR_INVALID_ARGUMENT;
  r = current();
  (void)r; /* unused in the all-unsupported variant */
  for (i = 0; i < n; ++i) {
    long long v = -1;
    field_value_t* fv = &values[i];
#ifndef FAKE_NVML_ALL_UNSUPPORTED
    if (fv->field_id == 186) v = r->instant_mw;
    if (fv->field_id == 185) v = r->average_mw;
    if (fv->field_id == 82) v = r->temp_c < 0 ? -1 : r->temp_c + 10;
#endif
    fv->timestamp = now_ms() * 1000;
    fv->latency_usec = 1;
    fv->value_type = 1; /* unsigned int */
    if (v < 0) {
      fv->ret = ERR_NOT_SUPPORTED;
      fv->value.ull = 0;
    } else {
      fv->ret = OK;
      fv->value.ull = 0;
      fv->value.ui = (unsigned)v;
    }
  }
  return OK;
}

EXPORT int nvmlDeviceGetTemperature(device_t dev, int sensor, unsigned* c) {
  const row_t* r;
  CHECK_DEV(dev);
  METRIC_GUARD();
  if (sensor != 0) return ERR_INVALID_ARGUMENT;
  r = current();
  if (r->temp_c < 0) return ERR_NOT_SUPPORTED;
  *c = (unsigned)r->temp_c;
  return OK;
}

EXPORT int nvmlDeviceGetClockInfo(device_t dev, int type, unsigned* mhz) {
  const row_t* r;
  CHECK_DEV(dev);
  METRIC_GUARD();
  r = current();
  if (type == 1) {
    if (r->sm_mhz < 0) return ERR_NOT_SUPPORTED;
    *mhz = (unsigned)r->sm_mhz;
    return OK;
  }
  if (type == 2) {
    *mhz = 2619u;
    return OK;
  }
  return ERR_NOT_SUPPORTED;
}

EXPORT int nvmlDeviceGetUtilizationRates(device_t dev, utilization_t* u) {
  CHECK_DEV(dev);
  METRIC_GUARD();
  u->gpu = 87u;
  u->memory = 42u;
  return OK;
}

EXPORT int nvmlDeviceGetCurrentClocksEventReasons(device_t dev, unsigned long long* mask) {
  CHECK_DEV(dev);
  METRIC_GUARD();
  *mask = 0x4ULL; /* SwPowerCap */
  return OK;
}

EXPORT int nvmlDeviceGetCurrentClocksThrottleReasons(device_t dev, unsigned long long* mask) {
  return nvmlDeviceGetCurrentClocksEventReasons(dev, mask);
}

static int running_processes(device_t dev, unsigned* count, process_info_t* infos) {
  CHECK_DEV(dev);
  METRIC_GUARD();
  if (count == NULL) return ERR_INVALID_ARGUMENT;
  if (*count < 1 || infos == NULL) {
    *count = 1;
    return ERR_INSUFFICIENT_SIZE;
  }
  *count = 1;
  infos[0].pid = g_pid;
  infos[0].used_gpu_memory = 1ULL << 30;
  infos[0].gpu_instance_id = 0xFFFFFFFFu;
  infos[0].compute_instance_id = 0xFFFFFFFFu;
  return OK;
}

#ifndef FAKE_NVML_NO_PROCESSES_V3
EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(device_t dev, unsigned* count,
                                                   process_info_t* infos) {
  return running_processes(dev, count, infos);
}
#endif

EXPORT int nvmlDeviceGetComputeRunningProcesses_v2(device_t dev, unsigned* count,
                                                   process_info_t* infos) {
  return running_processes(dev, count, infos);
}
