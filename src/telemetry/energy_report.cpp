#include "telemetry/energy_report.h"

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <iostream>
#include <sstream>
#include <thread>

#include "json/json_text.h"
#include "metrics/stats.h"
#include "record/record_json.h"

namespace dyno::telemetry {

namespace json = boost::json;

namespace {

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

json::value num(std::optional<double> v) { return record::number_or_null(v); }
json::value inum(std::optional<std::int64_t> v) {
  return v ? json::value(*v) : json::value(nullptr);
}

bool is_gpu(const DeviceIdentity& d) { return d.kind == "gpu"; }
bool is_cpu_package(const DeviceIdentity& d) { return d.kind == "cpu-package"; }

bool reports_power(const DeviceIdentity& d) {
  return d.capabilities.count(Capability::kEnergyCounter) > 0 ||
         d.capabilities.count(Capability::kPowerInstant) > 0 ||
         d.capabilities.count(Capability::kPowerAverage) > 0;
}

/// The device as the record names it (manifest hardware.gpus[] and telemetry's devices).
record::DeviceEntry device_entry(const DeviceIdentity& d) {
  const auto text = [](const std::string& s) {
    return s.empty() ? std::nullopt : std::optional<std::string>(s);
  };
  record::DeviceEntry e;
  e.vendor = d.vendor;
  e.kind = d.kind;
  e.index = static_cast<std::uint64_t>(d.index);
  e.name = text(d.name);
  e.uuid = text(d.uuid);
  e.pci_bus_id = text(d.pci_bus_id);
  e.driver = text(d.driver);
  e.memory_total_bytes = d.memory_total_bytes;
  e.power_limit_w = d.power_limit_w;
  for (Capability c : d.capabilities) e.capabilities.emplace_back(to_string(c));
  if (!d.details.empty()) {
    e.details.emplace();
    for (const auto& [k, v] : d.details) e.details->set(k, v);
  }
  return e;
}

json::object identity_json(const DeviceIdentity& d) {
  return record::device_to_json(device_entry(d));
}

/// Every (source, device) pair of the available sources.
template <typename F>
void for_each_device(const Monitor& m, F f) {
  const auto& probes = m.probes();
  for (std::size_t s = 0; s < probes.size(); ++s) {
    if (!probes[s].available) continue;
    for (std::size_t d = 0; d < probes[s].devices.size(); ++d)
      f(s, d, probes[s], probes[s].devices[d]);
  }
}

}  // namespace

std::optional<double> IdleBaseline::power_w_for(std::size_t source, std::size_t device) const {
  for (const auto& [key, w] : power_w) {
    if (key.first == source && key.second == device) return w;
  }
  return std::nullopt;
}

bool has_power_source(const Monitor& monitor) {
  bool any = false;
  for_each_device(monitor, [&](std::size_t, std::size_t, const Probe&, const DeviceIdentity& d) {
    any = any || reports_power(d);
  });
  return any;
}

IdleBaseline measure_idle(const Monitor& monitor, double seconds) {
  IdleBaseline idle;
  // The window must start at or after a sample, so its start can be interpolated.
  monitor.wait_past(steady_ns());
  idle.begin_ns = steady_ns();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  idle.end_ns = steady_ns();
  monitor.wait_past(idle.end_ns);
  for_each_device(monitor,
                  [&](std::size_t s, std::size_t d, const Probe&, const DeviceIdentity& dev) {
                    if (!reports_power(dev)) return;
                    const auto f = window_figures(monitor.series(s, d), idle.begin_ns, idle.end_ns);
                    if (f.power_mean_w) idle.power_w.push_back({{s, d}, *f.power_mean_w});
                  });
  return idle;
}

json::object energy_section(const Monitor& monitor, const IdleBaseline* idle, std::int64_t begin,
                            std::int64_t end, std::int64_t output_tokens,
                            const VramSnapshot& vram_after_load,
                            std::vector<metrics::Warning>& warnings) {
  const double window_s = static_cast<double>(end - begin) * 1e-9;
  monitor.wait_past(end);
  json::array devices;
  std::optional<double> gpu_energy, cpu_energy, gpu_idle, cpu_idle;
  std::optional<std::int64_t> vram_peak;
  std::vector<std::string> disagreeing, too_short;
  std::vector<std::vector<TimedReading>> gpu_series, cpu_series;  // what each scope sums
  for_each_device(monitor, [&](std::size_t s, std::size_t d, const Probe& probe,
                               const DeviceIdentity& dev) {
    const auto f = window_figures(monitor.series(s, d), begin, end);
    const std::optional<double> idle_w = idle ? idle->power_w_for(s, d) : std::nullopt;
    const std::string label = probe.source + ":" + std::to_string(dev.index);
    json::array flags;
    for (const auto& flag : f.flags) {
      flags.push_back(json::value(flag));
      if (flag == "energy_sources_disagree") disagreeing.push_back(label);
      if (flag == "window_too_short") too_short.push_back(label);
    }
    if (f.energy_j && (is_gpu(dev) || is_cpu_package(dev))) {
      (is_gpu(dev) ? gpu_series : cpu_series).push_back(monitor.series(s, d));
    }
    if (f.energy_j) {
      auto& total = is_gpu(dev) ? gpu_energy : cpu_energy;
      if (is_gpu(dev) || is_cpu_package(dev)) total = total.value_or(0) + *f.energy_j;
      if (idle_w) {
        auto& idle_total = is_gpu(dev) ? gpu_idle : cpu_idle;
        if (is_gpu(dev) || is_cpu_package(dev)) idle_total = idle_total.value_or(0) + *idle_w;
      }
    }
    if (is_gpu(dev) && f.memory_used_peak_bytes) {
      vram_peak = vram_peak.value_or(0) + *f.memory_used_peak_bytes;
    }
    devices.push_back(json::object{
        {"source", probe.source},
        {"device", dev.index},
        {"kind", dev.kind},
        {"name", dev.name},
        {"energy_j", num(f.energy_j)},
        {"energy_source",
         f.energy_source.empty() ? json::value(nullptr) : json::value(f.energy_source)},
        {"energy_counter_j", num(f.energy_counter_j)},
        {"energy_integral_j", num(f.energy_integral_j)},
        {"integral_source",
         f.integral_source.empty() ? json::value(nullptr) : json::value(f.integral_source)},
        {"disagreement", num(f.disagreement)},
        {"counter_period_s", num(f.counter_period_s)},
        {"flags", std::move(flags)},
        {"power_mean_w", num(f.power_mean_w)},
        {"power_p95_w", num(f.power_p95_w)},
        {"power_peak_w", num(f.power_peak_w)},
        {"idle_power_w", num(idle_w)},
        {"temperature_p95_c", num(f.temp_p95_c)},
        {"temperature_max_c", num(f.temp_max_c)},
        {"temperature_junction_max_c", num(f.temp_junction_max_c)},
        {"temperature_memory_max_c", num(f.temp_memory_max_c)},
        {"clock_sm_median_mhz", num(f.clock_sm_median_mhz)},
        {"clock_memory_median_mhz", num(f.clock_memory_median_mhz)},
        {"utilization_mean_pct", num(f.utilization_mean_pct)},
        {"memory_used_peak_bytes", inum(f.memory_used_peak_bytes)},
        {"process_memory_peak_bytes", inum(f.process_memory_peak_bytes)},
        {"throttle_reasons_seen",
         f.throttle_reasons_seen ? json::value(*f.throttle_reasons_seen) : json::value(nullptr)},
        {"samples", f.samples}});
  });
  // The figures of merit use GPU energy when a GPU reports it (the seeds' "gpu-board" scope),
  // else the CPU packages' (a CPU engine); the scope is recorded beside them.
  const bool gpu = gpu_energy.has_value();
  const std::optional<double> energy = gpu ? gpu_energy : cpu_energy;
  const std::optional<double> idle_w = gpu ? gpu_idle : cpu_idle;
  const std::optional<double> power_peak =
      energy ? summed_power_peak(gpu ? gpu_series : cpu_series, begin, end) : std::nullopt;
  std::optional<double> per_j, j_per_token, net;
  if (energy && output_tokens > 0) {
    if (*energy > 0) per_j = static_cast<double>(output_tokens) / *energy;
    j_per_token = *energy / static_cast<double>(output_tokens);
    net = net_joules_per_token(energy, idle_w, window_s, output_tokens);
  }
  if (!disagreeing.empty()) {
    std::string who;
    for (const auto& d : disagreeing) who += (who.empty() ? "" : ", ") + d;
    warnings.push_back(
        {metrics::WarningCode::kEnergySourcesDisagree,
         "the energy counter and the integral of power differ by more than 15 % on " + who +
             "; the counter's figure is kept",
         "compare energy_counter_j and energy_integral_j per device; a power "
         "reading averaged over 1 s lags short windows, so lengthen the run"});
  }
  if (!too_short.empty()) {
    std::string who;
    for (const auto& d : too_short) who += (who.empty() ? "" : ", ") + d;
    warnings.push_back(
        {metrics::WarningCode::kWindowTooShort,
         "the measured window is shorter than 10 updates of the energy counter on " + who,
         "raise --requests or --duration so the window spans many counter updates"});
  }
  return json::object{
      {"window", "service"},
      {"window_s", window_s},
      {"scope", energy ? json::value(gpu ? "gpu" : "cpu-package") : json::value(nullptr)},
      {"energy_j", num(energy)},
      {"gpu_energy_j", num(gpu_energy)},
      {"cpu_package_energy_j", num(cpu_energy)},
      {"output_tokens", output_tokens},
      {"output_tokens_per_j", num(per_j)},
      {"joules_per_output_token", num(j_per_token)},
      {"idle_power_w", num(idle_w)},
      {"power_peak_w", num(power_peak)},
      {"idle_subtracted_joules_per_output_token", num(net)},
      {"vram_peak_bytes", inum(vram_peak)},
      {"vram_after_load_bytes", inum(vram_after_load.used_total())},
      {"vram_after_load", vram_snapshot_json(vram_after_load)},
      {"devices", std::move(devices)}};
}

json::object telemetry_manifest(const Monitor* monitor, const std::string& mode,
                                double requested_period_ms, const IdleBaseline* idle,
                                std::int64_t begin, std::int64_t end) {
  json::object t{{"mode", mode}, {"period_ms", json::object{{"requested", requested_period_ms}}}};
  json::array backends;
  if (monitor != nullptr) {
    for (const auto& p : monitor->probes()) {
      json::array devices;
      for (const auto& d : p.devices) devices.push_back(identity_json(d));
      json::object details;
      for (const auto& [k, v] : p.details) details[k] = v;
      backends.push_back(
          json::object{{"source", p.source},
                       {"available", p.available},
                       {"reason", p.reason.empty() ? json::value(nullptr) : json::value(p.reason)},
                       {"details", std::move(details)},
                       {"devices", std::move(devices)}});
    }
    auto gaps = monitor->tick_gaps_s(begin, end);
    double sum = 0;
    for (double g : gaps) sum += g;
    auto& period = t["period_ms"].as_object();
    period["achieved_mean"] = gaps.empty()
                                  ? json::value(nullptr)
                                  : json::value(sum / static_cast<double>(gaps.size()) * 1e3);
    std::sort(gaps.begin(), gaps.end());
    const auto p99 = metrics::percentile_sorted(gaps, 99);
    period["achieved_p99"] = p99 ? json::value(*p99 * 1e3) : json::value(nullptr);
    t["read_errors"] = monitor->read_errors();
  }
  t["backends"] = std::move(backends);
  if (idle != nullptr) {
    json::array powers;
    for (const auto& [key, w] : idle->power_w) {
      powers.push_back(
          json::object{{"source", monitor->probes()[key.first].source},
                       {"device", monitor->probes()[key.first].devices[key.second].index},
                       {"power_w", w}});
    }
    t["idle_baseline"] =
        json::object{{"duration_s", static_cast<double>(idle->end_ns - idle->begin_ns) * 1e-9},
                     {"devices", std::move(powers)}};
  } else {
    t["idle_baseline"] = nullptr;
  }
  return t;
}

std::vector<record::DeviceEntry> gpu_identities(const Monitor& monitor) {
  std::vector<record::DeviceEntry> gpus;
  for_each_device(monitor, [&](std::size_t, std::size_t, const Probe&, const DeviceIdentity& d) {
    if (is_gpu(d)) gpus.push_back(device_entry(d));
  });
  return gpus;
}

std::string telemetry_jsonl(const Monitor& monitor, std::int64_t begin, std::int64_t end,
                            std::int64_t t0) {
  std::string out;
  const auto& probes = monitor.probes();
  for (const auto& row : monitor.rows_between(begin, end)) {
    const auto& r = row.reading;
    json::object o{{"t_ns", row.t_ns - t0},
                   {"source", probes[row.source].source},
                   {"device", probes[row.source].devices[r.device].index}};
    const auto put = [&o](const char* k, auto v) {
      if (v) o[k] = *v;
    };
    put("energy_j", r.energy_j);
    put("power_instant_w", r.power_instant_w);
    put("power_average_w", r.power_average_w);
    put("memory_used_bytes", r.memory_used_bytes);
    put("process_memory_bytes", r.process_memory_bytes);
    put("temperature_c", r.temp_gpu_c);
    put("temperature_junction_c", r.temp_junction_c);
    put("temperature_memory_c", r.temp_memory_c);
    put("clock_sm_mhz", r.clock_sm_mhz);
    put("clock_memory_mhz", r.clock_memory_mhz);
    put("utilization_pct", r.utilization_pct);
    put("throttle_reasons", r.throttle_reasons);
    out += json_text::compact(o);
    out += '\n';
  }
  return out;
}

std::optional<std::int64_t> VramSnapshot::used_total() const {
  std::optional<std::int64_t> total;
  for (const auto& d : devices) {
    if (d.used_bytes) total = total.value_or(0) + *d.used_bytes;
  }
  return total;
}

VramSnapshot vram_snapshot(const Monitor& monitor) {
  VramSnapshot snap;
  for_each_device(monitor,
                  [&](std::size_t s, std::size_t d, const Probe& probe, const DeviceIdentity& dev) {
                    if (!is_gpu(dev)) return;
                    VramDevice v{probe.source, dev.index, dev.name, std::nullopt, std::nullopt};
                    const auto series = monitor.series(s, d);
                    for (auto it = series.rbegin(); it != series.rend(); ++it) {
                      if (!v.used_bytes) v.used_bytes = it->reading.memory_used_bytes;
                      if (!v.engine_process_bytes) {
                        v.engine_process_bytes = it->reading.process_memory_bytes;
                      }
                      if (v.used_bytes && v.engine_process_bytes) break;
                    }
                    snap.devices.push_back(std::move(v));
                  });
  return snap;
}

json::value vram_snapshot_json(const VramSnapshot& snapshot) {
  if (snapshot.devices.empty()) return nullptr;
  json::array devices;
  std::optional<std::int64_t> engine_total;
  for (const auto& d : snapshot.devices) {
    if (d.engine_process_bytes) engine_total = engine_total.value_or(0) + *d.engine_process_bytes;
    devices.push_back(json::object{{"source", d.source},
                                   {"device", d.device},
                                   {"name", d.name},
                                   {"used_bytes", inum(d.used_bytes)},
                                   {"engine_process_bytes", inum(d.engine_process_bytes)}});
  }
  return json::object{
      {"snapshot", "after_load"},
      {"kinds",
       json::object{{"used_bytes", "in use on the device by every process"},
                    {"engine_process_bytes", "held by the engine's processes (what it reserved)"}}},
      {"devices", std::move(devices)},
      {"used_bytes_total", inum(snapshot.used_total())},
      {"engine_process_bytes_total", inum(engine_total)}};
}

std::string doctor_text(const Monitor& monitor) {
  std::ostringstream out;
  out << "telemetry sources on this host:\n";
  for (const auto& p : monitor.probes()) {
    out << "  " << p.source << ": " << (p.available ? "available" : "unavailable");
    if (!p.reason.empty()) out << " — " << p.reason;
    out << "\n";
    for (const auto& [k, v] : p.details) out << "      " << k << ": " << v << "\n";
    for (const auto& d : p.devices) {
      out << "    [" << d.index << "] " << d.kind << " " << (d.name.empty() ? "(unnamed)" : d.name);
      if (!d.uuid.empty()) out << " " << d.uuid;
      out << "\n      capabilities:";
      if (d.capabilities.empty()) out << " none";
      for (Capability c : d.capabilities) out << " " << to_string(c);
      out << "\n";
    }
  }
  out << (has_power_source(monitor)
              ? "energy: measured (see docs/metrics.md, Energy and power)\n"
              : "energy: no power or energy source, so energy figures will be absent (never 0)\n");
  return out.str();
}

}  // namespace dyno::telemetry
