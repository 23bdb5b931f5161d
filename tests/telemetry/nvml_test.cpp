// NVML sampler against a fake libnvidia-ml.so.1 (tests/telemetry/fake_nvml/fake_nvml.c), loaded
// only through make_nvml_sampler(path). Time is scripted through FAKE_NVML_CLOCK.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "telemetry/nvml_api.h"
#include "telemetry/sampler.h"

namespace dyno::telemetry {
namespace {

namespace fs = std::filesystem;

// The layouts the sampler relies on (also pinned in nvml_api.h; repeated here so a change there
// cannot silently drop them).
static_assert(sizeof(nvml::FieldValue) == 40);
static_assert(offsetof(nvml::FieldValue, value) == 32);
static_assert(sizeof(nvml::Memory) == 24);
static_assert(sizeof(nvml::MemoryV2) == 40);
static_assert(nvml::kMemoryV2Version == 0x02000028U);
static_assert(sizeof(nvml::ProcessInfoV2) == 24);
static_assert(sizeof(nvml::PciInfo) == 68);
static_assert(sizeof(nvml::Utilization) == 8);

constexpr std::int64_t kGiB = 1LL << 30;

class NvmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kEnv) unsetenv(v);
    std::string tmpl = (fs::temp_directory_path() / "dyno_nvml_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    clock_ = dir_ / "clock";
    at(0);
    setenv("FAKE_NVML_CLOCK", clock_.c_str(), 1);
  }
  void TearDown() override {
    for (const char* v : kEnv) unsetenv(v);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  void trace(const std::string& csv) {
    const fs::path path = dir_ / "trace.csv";
    std::ofstream(path) << "t_ms,energy_mJ,power_instant_mW,power_average_mW,mem_used_B,temp_C,"
                           "sm_MHz,event\n"
                        << csv;
    setenv("FAKE_NVML_TRACE", path.c_str(), 1);
  }
  void at(long long t_ms) { std::ofstream(clock_, std::ios::trunc) << t_ms << "\n"; }

  static std::vector<Reading> sample(Sampler& s, std::uint32_t& errors) {
    std::vector<Reading> out;
    s.sample(out, errors);
    return out;
  }

  static constexpr const char* kEnv[] = {"FAKE_NVML_TRACE",      "FAKE_NVML_CLOCK",
                                         "FAKE_NVML_DEVICES",    "FAKE_NVML_PID",
                                         "FAKE_NVML_INIT_ERROR", "DYNO_NVML_LIBRARY"};
  fs::path dir_;
  fs::path clock_;
};

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST_F(NvmlTest, MissingLibraryIsUnavailableAndNamesTheLibrary) {
  const std::string path = (dir_ / "nowhere" / "libnvidia-ml.so.1").string();
  auto s = make_nvml_sampler(path);
  EXPECT_EQ(s->name(), "nvml");
  Probe p = s->probe();
  EXPECT_EQ(p.source, "nvml");
  EXPECT_FALSE(p.available);
  EXPECT_TRUE(contains(p.reason, path)) << p.reason;
  EXPECT_TRUE(contains(p.reason, "not found (no NVIDIA driver?)")) << p.reason;
  EXPECT_TRUE(p.devices.empty());
  std::uint32_t errors = 0;
  EXPECT_TRUE(sample(*s, errors).empty());
  EXPECT_EQ(errors, 0U);
}

TEST_F(NvmlTest, MissingRequiredSymbolIsUnavailableAndNamesTheSymbol) {
  Probe p = make_nvml_sampler(FAKE_NVML_NO_INIT_PATH)->probe();
  EXPECT_FALSE(p.available);
  EXPECT_TRUE(contains(p.reason, "nvmlInit_v2")) << p.reason;
  EXPECT_FALSE(contains(p.reason, "nvmlShutdown")) << p.reason;
}

TEST_F(NvmlTest, InitFailureNamesTheNvmlError) {
  setenv("FAKE_NVML_INIT_ERROR", "9", 1);
  Probe p = make_nvml_sampler(FAKE_NVML_PATH)->probe();
  EXPECT_FALSE(p.available);
  EXPECT_TRUE(contains(p.reason, "NVML_ERROR_DRIVER_NOT_LOADED")) << p.reason;
  EXPECT_TRUE(contains(p.reason, "Driver Not Loaded")) << p.reason;  // nvmlErrorString

  setenv("FAKE_NVML_INIT_ERROR", "4", 1);
  p = make_nvml_sampler(FAKE_NVML_PATH)->probe();
  EXPECT_FALSE(p.available);
  EXPECT_TRUE(contains(p.reason, "NVML_ERROR_NO_PERMISSION")) << p.reason;
}

TEST_F(NvmlTest, ZeroDevicesIsUnavailable) {
  setenv("FAKE_NVML_DEVICES", "0", 1);
  Probe p = make_nvml_sampler(FAKE_NVML_PATH)->probe();
  EXPECT_FALSE(p.available);
  EXPECT_TRUE(contains(p.reason, "0 devices")) << p.reason;
}

TEST_F(NvmlTest, IdentityAndCapabilitiesComeFromTheLibrary) {
  setenv("FAKE_NVML_DEVICES", "2", 1);
  auto s = make_nvml_sampler(FAKE_NVML_PATH);
  Probe p = s->probe();
  ASSERT_TRUE(p.available) << p.reason;
  EXPECT_TRUE(p.reason.empty());
  EXPECT_EQ(p.details["library"], FAKE_NVML_PATH);
  EXPECT_EQ(p.details["driver_version"], "999.99");
  EXPECT_EQ(p.details["processes_symbol"], "nvmlDeviceGetComputeRunningProcesses_v3");
  EXPECT_EQ(p.details["throttle_symbol"], "nvmlDeviceGetCurrentClocksEventReasons");
  EXPECT_EQ(p.details.count("missing_symbols"), 0U) << p.details["missing_symbols"];
  ASSERT_EQ(p.devices.size(), 2U);

  const DeviceIdentity& d = p.devices[0];
  EXPECT_EQ(d.vendor, "nvidia");
  EXPECT_EQ(d.kind, "gpu");
  EXPECT_EQ(d.index, 0);
  EXPECT_EQ(d.name, "Fake GPU 0");
  EXPECT_EQ(d.uuid, "GPU-00000000-0000-0000-0000-000000000000");
  EXPECT_EQ(d.pci_bus_id, "00000000:65:00.0");
  EXPECT_EQ(d.driver, "999.99");
  EXPECT_EQ(d.memory_total_bytes, 80 * kGiB);
  EXPECT_EQ(d.power_limit_w, 700.0);
  const std::set<Capability> expected = {
      Capability::kEnergyCounter, Capability::kPowerInstant,  Capability::kPowerAverage,
      Capability::kMemoryUsed,    Capability::kProcessMemory, Capability::kTempGpu,
      Capability::kTempMemory,    Capability::kClockSm,       Capability::kClockMemory,
      Capability::kUtilization,   Capability::kThrottle};
  EXPECT_EQ(d.capabilities, expected);
  EXPECT_EQ(d.details.at("power_average_source"), "field:POWER_AVERAGE(185)");
  EXPECT_EQ(p.devices[1].index, 1);
  EXPECT_EQ(p.devices[1].name, "Fake GPU 1");
  EXPECT_EQ(p.devices[1].pci_bus_id, "00000000:66:00.0");
  EXPECT_EQ(p.devices[1].capabilities, expected);

  // Default (untraced) values, all units converted.
  std::uint32_t errors = 0;
  std::vector<Reading> r = sample(*s, errors);
  EXPECT_EQ(errors, 0U);
  ASSERT_EQ(r.size(), 2U);
  EXPECT_EQ(r[0].device, 0U);
  EXPECT_EQ(r[1].device, 1U);
  EXPECT_EQ(r[0].energy_j, 1000.0);
  EXPECT_EQ(r[0].power_instant_w, 300.0);
  EXPECT_EQ(r[0].power_average_w, 290.0);
  EXPECT_EQ(r[0].memory_used_bytes, 10 * kGiB);
  EXPECT_EQ(r[0].temp_gpu_c, 55.0);
  EXPECT_EQ(r[0].temp_memory_c, 65.0);
  EXPECT_FALSE(r[0].temp_junction_c.has_value());
  EXPECT_EQ(r[0].clock_sm_mhz, 1980.0);
  EXPECT_EQ(r[0].clock_memory_mhz, 2619.0);
  EXPECT_EQ(r[0].utilization_pct, 87.0);
  EXPECT_EQ(r[0].throttle_reasons, 0x4U);
  EXPECT_FALSE(r[0].process_memory_bytes.has_value());  // no engine pid configured
}

TEST_F(NvmlTest, LibraryFromEnvironment) {
  setenv("DYNO_NVML_LIBRARY", FAKE_NVML_PATH, 1);
  Probe p = make_nvml_sampler()->probe();
  EXPECT_TRUE(p.available) << p.reason;
  EXPECT_EQ(p.details["library"], FAKE_NVML_PATH);
}

TEST_F(NvmlTest, EnergyCounterStepsInJoules) {
  // 300 W constant: +30 000 mJ per 100 ms, starting at 5 000 000 mJ.
  std::string csv;
  for (int k = 0; k <= 10; ++k) {
    csv += std::to_string(k * 100) + "," + std::to_string(5000000 + 30000 * k) +
           ",300000,300000,1073741824,60,1980,\n";
  }
  trace(csv);
  auto s = make_nvml_sampler(FAKE_NVML_PATH);
  ASSERT_TRUE(s->probe().available);
  std::uint32_t errors = 0;
  const std::vector<std::pair<long long, double>> expected = {
      {0, 5000.0}, {100, 5030.0}, {150, 5030.0}, {250, 5060.0}, {1000, 5300.0}, {5000, 5300.0}};
  for (const auto& [t, joules] : expected) {
    at(t);
    std::vector<Reading> r = sample(*s, errors);
    ASSERT_EQ(r.size(), 1U);
    EXPECT_EQ(r[0].energy_j, joules) << "t=" << t;
    EXPECT_EQ(r[0].power_instant_w, 300.0);
    EXPECT_EQ(r[0].memory_used_bytes, kGiB);
  }
  EXPECT_EQ(errors, 0U);
}

TEST_F(NvmlTest, InstantPowerFollowsSquareWaveAverageIsSeparate) {
  std::string csv;
  for (int k = 0; k < 8; ++k) {
    const int instant = k % 2 == 0 ? 100000 : 400000;
    csv += std::to_string(k * 100) + "," + std::to_string(1000 * k) + "," +
           std::to_string(instant) + ",250000,0,50,1500,\n";
  }
  trace(csv);
  auto s = make_nvml_sampler(FAKE_NVML_PATH);
  ASSERT_TRUE(s->probe().available);
  std::uint32_t errors = 0;
  for (int k = 0; k < 8; ++k) {
    at(k * 100 + 50);
    std::vector<Reading> r = sample(*s, errors);
    ASSERT_EQ(r.size(), 1U);
    EXPECT_EQ(r[0].power_instant_w, k % 2 == 0 ? 100.0 : 400.0) << "k=" << k;
    EXPECT_EQ(r[0].power_average_w, 250.0);
  }
  EXPECT_EQ(errors, 0U);
}

TEST_F(NvmlTest, CounterResetShowsAsDecrease) {
  trace(
      "0,9000000,300000,300000,0,50,1500,\n"
      "100,9030000,300000,300000,0,50,1500,\n"
      "200,1000,300000,300000,0,50,1500,reset\n"
      "300,31000,300000,300000,0,50,1500,\n");
  auto s = make_nvml_sampler(FAKE_NVML_PATH);
  ASSERT_TRUE(s->probe().available);
  std::uint32_t errors = 0;
  std::vector<double> energy;
  for (long long t : {0, 100, 200, 300}) {
    at(t);
    std::vector<Reading> r = sample(*s, errors);
    ASSERT_EQ(r.size(), 1U);
    ASSERT_TRUE(r[0].energy_j.has_value());
    energy.push_back(*r[0].energy_j);
  }
  EXPECT_EQ(energy, (std::vector<double>{9000.0, 9030.0, 1.0, 31.0}));
  EXPECT_EQ(errors, 0U);
}

TEST_F(NvmlTest, LostGpuGivesNulloptAndErrorsWithoutThrowing) {
  trace(
      "0,1000000,300000,300000,1073741824,50,1500,\n"
      "100,1030000,300000,300000,1073741824,50,1500,\n"
      "200,1060000,300000,300000,1073741824,50,1500,lost\n");
  setenv("FAKE_NVML_PID", "777", 1);
  auto s = make_nvml_sampler(FAKE_NVML_PATH);
  s->set_process_ids({777});
  ASSERT_TRUE(s->probe().available);
  std::uint32_t errors = 0;
  at(100);
  std::vector<Reading> r = sample(*s, errors);
  ASSERT_EQ(r.size(), 1U);
  EXPECT_EQ(errors, 0U);
  EXPECT_EQ(r[0].energy_j, 1030.0);
  EXPECT_EQ(r[0].process_memory_bytes, kGiB);

  for (long long t : {200, 300}) {
    at(t);
    errors = 0;
    EXPECT_NO_THROW(r = sample(*s, errors));
    ASSERT_EQ(r.size(), 1U) << "a lost device keeps returning readings";
    const Reading& x = r[0];
    EXPECT_FALSE(x.energy_j || x.power_instant_w || x.power_average_w || x.memory_used_bytes ||
                 x.process_memory_bytes || x.temp_gpu_c || x.temp_memory_c || x.clock_sm_mhz ||
                 x.clock_memory_mhz || x.utilization_pct || x.throttle_reasons)
        << "t=" << t;
    EXPECT_EQ(errors, 11U) << "one failed read per capability, t=" << t;
  }
}

TEST_F(NvmlTest, AllMetricsUnsupportedIsUnavailableNotZero) {
  auto s = make_nvml_sampler(FAKE_NVML_UNSUPPORTED_PATH);
  Probe p = s->probe();
  EXPECT_FALSE(p.available);
  EXPECT_EQ(p.reason, "NVML initialised but reports no supported metric");
  ASSERT_EQ(p.devices.size(), 1U);  // the device still appears, with no capability
  EXPECT_EQ(p.devices[0].name, "Fake GPU 0");
  EXPECT_TRUE(p.devices[0].capabilities.empty());
  EXPECT_FALSE(p.devices[0].power_limit_w.has_value());
  EXPECT_FALSE(p.devices[0].memory_total_bytes.has_value());
  std::uint32_t errors = 0;
  std::vector<Reading> r = sample(*s, errors);
  for (const Reading& x : r) {  // never zeros: nothing, or readings with every field absent
    EXPECT_FALSE(x.energy_j || x.power_instant_w || x.power_average_w || x.memory_used_bytes ||
                 x.temp_gpu_c || x.clock_sm_mhz || x.utilization_pct);
  }
  EXPECT_EQ(errors, 0U);
}

TEST_F(NvmlTest, EmptyTraceColumnRemovesOneCapability) {
  // No energy counter and no average power (pre-Volta-like); everything else present.
  trace("0,,200000,,0,50,1500,\n");
  auto s = make_nvml_sampler(FAKE_NVML_PATH);
  Probe p = s->probe();
  ASSERT_TRUE(p.available) << p.reason;
  const auto& caps = p.devices[0].capabilities;
  EXPECT_EQ(caps.count(Capability::kEnergyCounter), 0U);
  EXPECT_EQ(caps.count(Capability::kPowerAverage), 0U);
  EXPECT_EQ(caps.count(Capability::kPowerInstant), 1U);
  std::uint32_t errors = 0;
  std::vector<Reading> r = sample(*s, errors);
  ASSERT_EQ(r.size(), 1U);
  EXPECT_FALSE(r[0].energy_j.has_value());
  EXPECT_FALSE(r[0].power_average_w.has_value());
  EXPECT_EQ(r[0].power_instant_w, 200.0);
  EXPECT_EQ(errors, 0U) << "an absent capability is not an error";
}

TEST_F(NvmlTest, ProcessMemoryThroughV2FallbackForTheEnginePids) {
  setenv("FAKE_NVML_PID", "4321", 1);
  auto s = make_nvml_sampler(FAKE_NVML_NO_V3_PATH);
  Probe p = s->probe();
  ASSERT_TRUE(p.available) << p.reason;
  EXPECT_EQ(p.details["processes_symbol"], "nvmlDeviceGetComputeRunningProcesses_v2");
  EXPECT_EQ(p.devices[0].capabilities.count(Capability::kProcessMemory), 1U);
  std::uint32_t errors = 0;

  s->set_process_ids({1, 4321});
  std::vector<Reading> r = sample(*s, errors);
  ASSERT_EQ(r.size(), 1U);
  EXPECT_EQ(r[0].process_memory_bytes, kGiB);

  s->set_process_ids({99});  // the engine has nothing on this device: a real 0
  r = sample(*s, errors);
  EXPECT_EQ(r[0].process_memory_bytes, 0);
  EXPECT_EQ(errors, 0U);
}

TEST_F(NvmlTest, ProcessMemoryThroughV3) {
  setenv("FAKE_NVML_PID", "555", 1);
  auto s = make_nvml_sampler(FAKE_NVML_PATH);
  s->set_process_ids({555});
  ASSERT_TRUE(s->probe().available);
  std::uint32_t errors = 0;
  std::vector<Reading> r = sample(*s, errors);
  ASSERT_EQ(r.size(), 1U);
  EXPECT_EQ(r[0].process_memory_bytes, kGiB);
  EXPECT_EQ(errors, 0U);
}

TEST(NvmlApi, ReturnNames) {
  EXPECT_STREQ(nvml::return_name(nvml::kGpuIsLost), "NVML_ERROR_GPU_IS_LOST");
  EXPECT_STREQ(nvml::return_name(9), "NVML_ERROR_DRIVER_NOT_LOADED");
  EXPECT_STREQ(nvml::return_name(12345), "NVML_ERROR_(unnamed)");
}

}  // namespace
}  // namespace dyno::telemetry
