// amdgpu sysfs, RAPL powercap and host /proc samplers against fake trees (telemetry-notes §7.2).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "telemetry/fake_sysfs.h"
#include "telemetry/sampler.h"

namespace dyno::telemetry {
namespace {

using testing::FakeSysfs;

bool has(const DeviceIdentity& d, Capability c) { return d.capabilities.count(c) != 0; }

std::vector<Reading> sample(Sampler& s, std::uint32_t& errors) {
  std::vector<Reading> out;
  s.sample(out, errors);
  return out;
}

// ---------------------------------------------------------------------------------------------
// amdgpu

/// card<N> with an amdgpu driver link, PCI id in uevent, and hwmon<M> under its device dir.
std::string add_card(const FakeSysfs& fs, int card, int hwmon, const std::string& pci) {
  const std::string dev = "class/drm/card" + std::to_string(card) + "/device";
  fs.mkdir(dev);
  fs.symlink("../../../bus/pci/drivers/amdgpu", dev + "/driver");
  fs.write(dev + "/uevent", "DRIVER=amdgpu\nPCI_CLASS=30000\nPCI_SLOT_NAME=" + pci);
  fs.write(dev + "/vendor", "0x1002");
  const std::string hw = dev + "/hwmon/hwmon" + std::to_string(hwmon);
  fs.write(hw + "/name", "amdgpu");
  return hw;
}

TEST(Amdgpu, AverageOnly) {
  FakeSysfs fs;
  const std::string hw = add_card(fs, 0, 0, "0000:03:00.0");
  fs.write(hw + "/power1_average", 150'000'000);
  auto s = make_amdgpu_sampler(fs.root());
  const Probe p = s->probe();
  ASSERT_TRUE(p.available) << p.reason;
  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_TRUE(has(p.devices[0], Capability::kPowerAverage));
  EXPECT_FALSE(has(p.devices[0], Capability::kPowerInstant));
  EXPECT_FALSE(has(p.devices[0], Capability::kEnergyCounter));
  std::uint32_t errors = 0;
  const auto r = sample(*s, errors);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].power_average_w, 150.0);
  EXPECT_FALSE(r[0].power_instant_w);
  EXPECT_EQ(errors, 0u);
}

TEST(Amdgpu, TheDriverIsNamedWithItsVersionSoThatTwoDriversCompareUnequal) {
  FakeSysfs fs;
  const std::string hw = add_card(fs, 0, 0, "0000:03:00.0");
  fs.write(hw + "/power1_average", 150'000'000);
  fs.mkdir("module/amdgpu");
  fs.write("module/amdgpu/version", "6.7.0");  // a ROCm (DKMS) driver
  const Probe p = make_amdgpu_sampler(fs.root())->probe();
  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_EQ(p.devices[0].driver, "amdgpu 6.7.0");
}

TEST(Amdgpu, InputOnly) {
  FakeSysfs fs;
  const std::string hw = add_card(fs, 0, 0, "0000:03:00.0");
  fs.write(hw + "/power1_input", 612'500'000);
  auto s = make_amdgpu_sampler(fs.root());
  const Probe p = s->probe();
  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_TRUE(has(p.devices[0], Capability::kPowerInstant));
  EXPECT_FALSE(has(p.devices[0], Capability::kPowerAverage));
  std::uint32_t errors = 0;
  const auto r = sample(*s, errors);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].power_instant_w, 612.5);
  EXPECT_FALSE(r[0].power_average_w);
  EXPECT_EQ(errors, 0u);
}

TEST(Amdgpu, FullCardIdentityUnitsAndTimeSeries) {
  FakeSysfs fs;
  const std::string hw = add_card(fs, 0, 2, "0000:c1:00.0");
  const std::string dev = "class/drm/card0/device";
  fs.write(dev + "/product_name", "AMD Instinct MI210");
  fs.write(dev + "/unique_id", "b1c2d3e4f5a6b7c8");
  fs.write(dev + "/mem_info_vram_total", 68'702'699'520);
  fs.write(dev + "/mem_info_vram_used", 1'048'576);
  fs.write(dev + "/gpu_busy_percent", 37);
  fs.write(hw + "/power1_cap", 300'000'000);
  fs.write(hw + "/power1_input", 95'250'000);
  fs.write(hw + "/power1_average", 90'000'000);
  fs.write(hw + "/energy1_input", 5'000'000);
  fs.write(hw + "/temp1_input", 45'000);
  fs.write(hw + "/temp1_label", "edge");
  fs.write(hw + "/temp2_input", 52'500);
  fs.write(hw + "/temp2_label", "junction");
  fs.write(hw + "/temp3_input", 61'000);
  fs.write(hw + "/temp3_label", "mem");
  fs.write(hw + "/freq1_input", 1'700'000'000);
  fs.write(hw + "/freq1_label", "sclk");
  fs.write(hw + "/freq2_input", 1'600'000'000);
  fs.write(hw + "/freq2_label", "mclk");
  fs.mkdir("class/drm/card0-DP-1");  // connector: not a card
  fs.mkdir("class/drm/renderD128/device");

  auto s = make_amdgpu_sampler(fs.root());
  const Probe p = s->probe();
  EXPECT_EQ(p.source, "amdgpu");
  ASSERT_EQ(p.devices.size(), 1u);
  const DeviceIdentity& d = p.devices[0];
  EXPECT_EQ(d.vendor, "amd");
  EXPECT_EQ(d.kind, "gpu");
  EXPECT_EQ(d.name, "AMD Instinct MI210");
  EXPECT_EQ(d.uuid, "b1c2d3e4f5a6b7c8");
  EXPECT_EQ(d.pci_bus_id, "0000:c1:00.0");
  // No module version in this sysfs: the in-tree driver, named by the kernel's release.
  EXPECT_EQ(d.driver.rfind("amdgpu (kernel ", 0), 0u) << d.driver;
  EXPECT_EQ(d.memory_total_bytes, 68'702'699'520);
  EXPECT_EQ(d.power_limit_w, 300.0);
  for (const Capability c :
       {Capability::kEnergyCounter, Capability::kPowerInstant, Capability::kPowerAverage,
        Capability::kMemoryUsed, Capability::kTempGpu, Capability::kTempJunction,
        Capability::kTempMemory, Capability::kClockSm, Capability::kClockMemory,
        Capability::kUtilization}) {
    EXPECT_TRUE(has(d, c)) << to_string(c);
  }
  EXPECT_FALSE(has(d, Capability::kThrottle));
  EXPECT_FALSE(has(d, Capability::kProcessMemory));

  std::uint32_t errors = 0;
  auto r = sample(*s, errors);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].device, 0u);
  EXPECT_EQ(r[0].power_instant_w, 95.25);  // µW → W
  EXPECT_EQ(r[0].power_average_w, 90.0);
  EXPECT_EQ(r[0].energy_j, 5.0);     // µJ → J
  EXPECT_EQ(r[0].temp_gpu_c, 45.0);  // m°C → °C
  EXPECT_EQ(r[0].temp_junction_c, 52.5);
  EXPECT_EQ(r[0].temp_memory_c, 61.0);
  EXPECT_EQ(r[0].clock_sm_mhz, 1700.0);  // Hz → MHz
  EXPECT_EQ(r[0].clock_memory_mhz, 1600.0);
  EXPECT_EQ(r[0].memory_used_bytes, 1'048'576);
  EXPECT_EQ(r[0].utilization_pct, 37.0);
  EXPECT_EQ(errors, 0u);

  // Next step of the scripted series.
  fs.write(hw + "/power1_input", 400'000'000);
  fs.write(hw + "/energy1_input", 9'500'000);
  fs.write(dev + "/gpu_busy_percent", 100);
  r = sample(*s, errors);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].power_instant_w, 400.0);
  EXPECT_EQ(r[0].energy_j, 9.5);
  EXPECT_EQ(r[0].utilization_pct, 100.0);
  EXPECT_EQ(errors, 0u);
}

TEST(Amdgpu, OutOfOrderHwmonNumbersMapByParent) {
  FakeSysfs fs;
  const std::string hw0 = add_card(fs, 0, 3, "0000:03:00.0");
  const std::string hw1 = add_card(fs, 1, 1, "0000:83:00.0");
  fs.write(hw0 + "/power1_average", 100'000'000);
  fs.write(hw1 + "/power1_average", 200'000'000);
  fs.write("class/drm/card0/device/product_name", "card zero");
  auto s = make_amdgpu_sampler(fs.root());
  const Probe p = s->probe();
  ASSERT_EQ(p.devices.size(), 2u);
  EXPECT_EQ(p.devices[0].pci_bus_id, "0000:03:00.0");
  EXPECT_EQ(p.devices[0].name, "card zero");
  EXPECT_EQ(p.devices[1].pci_bus_id, "0000:83:00.0");
  EXPECT_EQ(p.devices[1].name, "AMD GPU 0000:83:00.0");
  EXPECT_NE(p.devices[0].details.at("hwmon_path").find("hwmon3"), std::string::npos);
  EXPECT_NE(p.devices[1].details.at("hwmon_path").find("hwmon1"), std::string::npos);
  std::uint32_t errors = 0;
  const auto r = sample(*s, errors);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].device, 0u);
  EXPECT_EQ(r[0].power_average_w, 100.0);
  EXPECT_EQ(r[1].device, 1u);
  EXPECT_EQ(r[1].power_average_w, 200.0);
}

TEST(Amdgpu, CardsOrderedByNumberAndOtherVendorsSkipped) {
  FakeSysfs fs;
  add_card(fs, 10, 0, "0000:10:00.0");
  add_card(fs, 2, 5, "0000:02:00.0");
  // An NVIDIA card in the same drm class; and a fake-tree card identified only by vendor.
  fs.write("class/drm/card1/device/uevent", "DRIVER=nvidia\nPCI_SLOT_NAME=0000:01:00.0");
  fs.write("class/drm/card3/device/vendor", "0x1002");
  auto s = make_amdgpu_sampler(fs.root());
  const Probe p = s->probe();
  ASSERT_EQ(p.devices.size(), 3u);
  EXPECT_EQ(p.devices[0].pci_bus_id, "0000:02:00.0");
  EXPECT_EQ(p.devices[1].details.at("card"), "card3");
  EXPECT_EQ(p.devices[1].name, "AMD GPU card3");
  EXPECT_EQ(p.devices[2].pci_bus_id, "0000:10:00.0");
  EXPECT_EQ(p.devices[2].index, 2);
}

TEST(Amdgpu, ApuWithEdgeOnlyHasNoJunctionOrMemoryTemperature) {
  FakeSysfs fs;
  const std::string hw = add_card(fs, 0, 0, "0000:c4:00.0");
  fs.write(hw + "/temp1_input", 38'000);
  fs.write(hw + "/temp1_label", "edge");
  fs.write(hw + "/power1_average", 15'000'000);
  auto s = make_amdgpu_sampler(fs.root());
  const Probe p = s->probe();
  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_TRUE(has(p.devices[0], Capability::kTempGpu));
  EXPECT_FALSE(has(p.devices[0], Capability::kTempJunction));
  EXPECT_FALSE(has(p.devices[0], Capability::kTempMemory));
  EXPECT_FALSE(p.devices[0].memory_total_bytes);
  EXPECT_FALSE(p.devices[0].power_limit_w);
  std::uint32_t errors = 0;
  const auto r = sample(*s, errors);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].temp_gpu_c, 38.0);
  EXPECT_FALSE(r[0].temp_junction_c);  // absent, not 0
  EXPECT_FALSE(r[0].temp_memory_c);
  EXPECT_FALSE(r[0].clock_sm_mhz);
  EXPECT_EQ(errors, 0u);
}

TEST(Amdgpu, FileDeletedMidRunGivesNulloptAndErrors) {
  FakeSysfs fs;
  const std::string hw = add_card(fs, 0, 0, "0000:03:00.0");
  fs.write(hw + "/power1_average", 100'000'000);
  fs.write(hw + "/temp1_input", 40'000);
  fs.write(hw + "/temp1_label", "edge");
  auto s = make_amdgpu_sampler(fs.root());
  ASSERT_TRUE(s->probe().available);
  std::uint32_t errors = 0;
  auto r = sample(*s, errors);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(errors, 0u);

  fs.remove(hw + "/power1_average");
  r = sample(*s, errors);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_FALSE(r[0].power_average_w);
  EXPECT_EQ(r[0].temp_gpu_c, 40.0);
  EXPECT_EQ(errors, 1u);

  // The whole device disappears: still one reading, every field nullopt, one error per field.
  fs.remove("class/drm/card0");
  r = sample(*s, errors);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_FALSE(r[0].power_average_w);
  EXPECT_FALSE(r[0].temp_gpu_c);
  EXPECT_EQ(errors, 3u);
}

TEST(Amdgpu, NoCardsIsUnavailableWithReason) {
  FakeSysfs fs;
  auto s = make_amdgpu_sampler(fs.root());
  const Probe p = s->probe();
  EXPECT_FALSE(p.available);
  EXPECT_NE(p.reason.find("no amdgpu device"), std::string::npos);
  std::uint32_t errors = 0;
  EXPECT_TRUE(sample(*s, errors).empty());
  EXPECT_EQ(errors, 0u);
}

// ---------------------------------------------------------------------------------------------
// RAPL

constexpr std::uint64_t kRange = 262'143'328'850;

void add_zone(const FakeSysfs& fs, const std::string& dir, const std::string& name,
              std::uint64_t energy_uj) {
  const std::string z = "class/powercap/" + dir;
  fs.write(z + "/name", name);
  fs.write(z + "/energy_uj", std::to_string(energy_uj));
  fs.write(z + "/max_energy_range_uj", std::to_string(kRange));
}

TEST(Rapl, TwoSocketsWithSubzonesPsysAndMmioDuplicate) {
  FakeSysfs fs;
  fs.mkdir("class/powercap/intel-rapl");  // the control-type dir
  add_zone(fs, "intel-rapl:0", "package-0", 1'000'000);
  add_zone(fs, "intel-rapl:0:0", "core", 500'000);
  add_zone(fs, "intel-rapl:0:1", "dram", 200'000);
  add_zone(fs, "intel-rapl:1", "package-1", 7'000'000);
  add_zone(fs, "intel-rapl:2", "psys", 90'000'000);
  add_zone(fs, "intel-rapl-mmio:0", "package-0", 1'000'000);
  auto s = make_rapl_sampler(fs.root());
  const Probe p = s->probe();
  ASSERT_TRUE(p.available) << p.reason;
  EXPECT_EQ(p.source, "rapl");
  ASSERT_EQ(p.devices.size(), 2u);
  EXPECT_EQ(p.devices[0].name, "package-0");
  EXPECT_EQ(p.devices[0].kind, "cpu-package");
  EXPECT_EQ(p.devices[0].driver, "intel_rapl_msr");  // the MSR zone wins over MMIO
  EXPECT_NE(p.devices[0].details.at("zone_path").find("intel-rapl:0"), std::string::npos);
  EXPECT_EQ(p.devices[0].details.at("max_energy_range_uj"), std::to_string(kRange));
  EXPECT_EQ(p.devices[1].name, "package-1");
  EXPECT_TRUE(has(p.devices[1], Capability::kEnergyCounter));
  EXPECT_EQ(p.details.at("ignored_duplicate_zones"), "intel-rapl-mmio:0");

  std::uint32_t errors = 0;
  auto r = sample(*s, errors);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].energy_j, 0.0);  // relative to the first sample
  EXPECT_EQ(r[1].energy_j, 0.0);

  fs.write("class/powercap/intel-rapl:0/energy_uj", 3'500'000);
  fs.write("class/powercap/intel-rapl-mmio:0/energy_uj", 3'500'000);
  fs.write("class/powercap/intel-rapl:1/energy_uj", 8'000'000);
  r = sample(*s, errors);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].energy_j, 2.5);
  EXPECT_EQ(r[1].energy_j, 1.0);
  double total = 0;
  for (const Reading& x : r) total += *x.energy_j;
  EXPECT_EQ(total, 3.5);  // the MMIO duplicate is not counted a second time
  EXPECT_EQ(errors, 0u);
}

TEST(Rapl, MmioOnlyPackageIsUsed) {
  FakeSysfs fs;
  add_zone(fs, "intel-rapl-mmio:0", "package-0", 10);
  auto s = make_rapl_sampler(fs.root());
  const Probe p = s->probe();
  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_EQ(p.devices[0].driver, "intel_rapl_mmio");
}

TEST(Rapl, WrapMidWindowCorrectedExactly) {
  FakeSysfs fs;
  add_zone(fs, "intel-rapl:0", "package-0", kRange - 5000);
  auto s = make_rapl_sampler(fs.root());
  ASSERT_TRUE(s->probe().available);
  std::uint32_t errors = 0;
  EXPECT_EQ(sample(*s, errors)[0].energy_j, 0.0);
  fs.write("class/powercap/intel-rapl:0/energy_uj", std::to_string(kRange - 1000));
  EXPECT_EQ(sample(*s, errors)[0].energy_j, 0.004);
  fs.write("class/powercap/intel-rapl:0/energy_uj", 500);  // wrapped: +1000 + 500 µJ
  const auto r = sample(*s, errors);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_DOUBLE_EQ(*r[0].energy_j, 0.0055);
  EXPECT_EQ(errors, 0u);
  EXPECT_EQ(s->counters().at("wraps.package-0"), 1u);
}

TEST(Rapl, UnreadableEnergyGivesPermissionReason) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores file modes";
  FakeSysfs fs;
  add_zone(fs, "intel-rapl:0", "package-0", 1);
  fs.chmod("class/powercap/intel-rapl:0/energy_uj", 0);
  auto s = make_rapl_sampler(fs.root());
  const Probe p = s->probe();
  EXPECT_FALSE(p.available);
  EXPECT_TRUE(p.devices.empty());
  EXPECT_NE(p.reason.find("permission denied reading"), std::string::npos) << p.reason;
  EXPECT_NE(p.reason.find("intel-rapl:0/energy_uj"), std::string::npos) << p.reason;
  EXPECT_NE(p.reason.find("PLATYPUS"), std::string::npos) << p.reason;
  std::uint32_t errors = 0;
  EXPECT_TRUE(sample(*s, errors).empty());
}

TEST(Rapl, ReadableZonesUsedUnreadableListed) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores file modes";
  FakeSysfs fs;
  add_zone(fs, "intel-rapl:0", "package-0", 1);
  add_zone(fs, "intel-rapl:1", "package-1", 1);
  fs.chmod("class/powercap/intel-rapl:1/energy_uj", 0);
  auto s = make_rapl_sampler(fs.root());
  const Probe p = s->probe();
  ASSERT_TRUE(p.available);
  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_EQ(p.devices[0].name, "package-0");
  EXPECT_EQ(p.details.at("unreadable_zones"), "intel-rapl:1");
}

TEST(Rapl, NoZonesAndVanishedCounter) {
  FakeSysfs fs;
  auto none = make_rapl_sampler(fs.root());
  const Probe p = none->probe();
  EXPECT_FALSE(p.available);
  EXPECT_NE(p.reason.find("no RAPL package zone"), std::string::npos);

  add_zone(fs, "intel-rapl:0", "package-0", 100);
  auto s = make_rapl_sampler(fs.root());
  ASSERT_TRUE(s->probe().available);
  std::uint32_t errors = 0;
  EXPECT_EQ(sample(*s, errors)[0].energy_j, 0.0);
  fs.remove("class/powercap/intel-rapl:0/energy_uj");
  const auto r = sample(*s, errors);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_FALSE(r[0].energy_j);
  EXPECT_EQ(errors, 1u);
}

// ---------------------------------------------------------------------------------------------
// host

TEST(Host, UtilisationFromStatDeltasMemoryAndRss) {
  FakeSysfs fs;
  fs.write("cpuinfo",
           "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Test CPU\n"
           "\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) Test CPU\n");
  // user nice system idle iowait irq softirq steal guest guest_nice
  fs.write("stat",
           "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0 0 0\n"
           "cpu1 50 0 25 400 25 0 0 0 0 0\nintr 1234\n");
  fs.write("meminfo",
           "MemTotal:       16384 kB\nMemFree:         1024 kB\nMemAvailable:    4096 kB\n");
  fs.write("101/status", "Name:\tengine\nVmPeak:\t 9000 kB\nVmRSS:\t    2048 kB\nThreads:\t4\n");
  fs.write("202/status", "Name:\tworker\nVmRSS:\t    1024 kB\n");

  auto s = make_host_sampler(fs.root());
  s->set_process_ids({101, 202});
  const Probe p = s->probe();
  ASSERT_TRUE(p.available) << p.reason;
  ASSERT_EQ(p.devices.size(), 1u);
  const DeviceIdentity& d = p.devices[0];
  EXPECT_EQ(d.vendor, "host");
  EXPECT_EQ(d.kind, "host");
  EXPECT_EQ(d.name, "Intel(R) Xeon(R) Test CPU");
  EXPECT_EQ(d.memory_total_bytes, 16384 * 1024);
  EXPECT_EQ(d.details.at("logical_cpus"), "2");
  EXPECT_TRUE(has(d, Capability::kUtilization));
  EXPECT_TRUE(has(d, Capability::kMemoryUsed));
  EXPECT_TRUE(has(d, Capability::kProcessMemory));

  std::uint32_t errors = 0;
  auto r = sample(*s, errors);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_FALSE(r[0].utilization_pct);  // the first sample has no delta
  EXPECT_EQ(r[0].memory_used_bytes, (16384 - 4096) * 1024);
  EXPECT_EQ(r[0].process_memory_bytes, (2048 + 1024) * 1024);

  // +300 busy (user 200, system 100), +100 idle → 75 %.
  fs.write("stat", "cpu  300 0 150 850 100 0 0 0 0 0\n");
  fs.write("202/status", "Name:\tworker\nVmRSS:\t    3072 kB\n");
  r = sample(*s, errors);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_DOUBLE_EQ(*r[0].utilization_pct, 75.0);
  EXPECT_EQ(r[0].process_memory_bytes, (2048 + 3072) * 1024);
  EXPECT_EQ(errors, 0u);

  // One process exits: its RSS is gone and counted as one failed read.
  fs.remove("202");
  r = sample(*s, errors);
  EXPECT_EQ(r[0].process_memory_bytes, 2048 * 1024);
  EXPECT_EQ(errors, 1u);
}

TEST(Host, NoPidsNoProcessMemory) {
  FakeSysfs fs;
  fs.write("stat", "cpu  1 2 3 4 5 6 7 8 0 0\n");
  fs.write("meminfo", "MemTotal: 100 kB\nMemAvailable: 40 kB\n");
  auto s = make_host_sampler(fs.root());
  const Probe p = s->probe();
  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_FALSE(has(p.devices[0], Capability::kProcessMemory));
  EXPECT_EQ(p.devices[0].name, "host CPU");  // no cpuinfo
  std::uint32_t errors = 0;
  const auto r = sample(*s, errors);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_FALSE(r[0].process_memory_bytes);
  EXPECT_EQ(r[0].memory_used_bytes, 60 * 1024);
  EXPECT_EQ(errors, 0u);
}

TEST(Host, RealProcWorks) {
  auto s = make_host_sampler();
  s->set_process_ids({static_cast<int>(::getpid())});
  const Probe p = s->probe();
  ASSERT_TRUE(p.available) << p.reason;
  std::uint32_t errors = 0;
  const auto r = sample(*s, errors);
  ASSERT_EQ(r.size(), 1u);
  ASSERT_TRUE(r[0].process_memory_bytes);
  EXPECT_GT(*r[0].process_memory_bytes, 0);
  EXPECT_EQ(errors, 0u);
}

}  // namespace
}  // namespace dyno::telemetry
