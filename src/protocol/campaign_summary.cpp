#include "protocol/campaign_summary.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <map>
#include <optional>

#include "metrics/registry.h"

namespace dyno::protocol {

namespace json = boost::json;

namespace {

json::value num(std::optional<double> v) { return v ? json::value(*v) : json::value(nullptr); }

void keep_max(std::optional<double>& acc, std::optional<double> v) {
  if (v) acc = acc ? std::max(*acc, *v) : *v;
}

void keep_sum(std::optional<double>& acc, std::optional<double> v) {
  if (v) acc = acc.value_or(0) + *v;
}

void add_count(std::optional<std::int64_t>& acc, std::optional<std::int64_t> v) {
  if (v) acc = acc.value_or(0) + *v;
}

json::value count(std::optional<std::int64_t> v) {
  return v ? json::value(*v) : json::value(nullptr);
}

/// The smallest and largest of a figure over the windows (a median per window cannot be
/// combined into one median).
struct Range {
  std::optional<double> lo, hi;
  void add(std::optional<double> v) {
    if (!v) return;
    lo = lo ? std::min(*lo, *v) : *v;
    hi = hi ? std::max(*hi, *v) : *v;
  }
  json::value to_json() const {
    if (!lo) return nullptr;
    return json::object{{"min", *lo}, {"max", *hi}};
  }
};

/// One device over the session.
struct DeviceRollup {
  std::string source;
  std::int64_t device = 0;
  std::string name;
  std::size_t windows = 0;
  std::optional<std::int64_t> samples;
  std::optional<double> energy_j, power_peak_w, temp_max, temp_junction_max, temp_memory_max,
      memory_used_peak;
  Range clock_sm, clock_memory;

  void add(const record::EnergyDevice& d) {
    ++windows;
    add_count(samples, d.samples);
    keep_sum(energy_j, d.energy_j);
    keep_max(power_peak_w, d.power_peak_w);
    keep_max(temp_max, d.temperature_max_c);
    keep_max(temp_junction_max, d.temperature_junction_max_c);
    keep_max(temp_memory_max, d.temperature_memory_max_c);
    keep_max(memory_used_peak, d.memory_used_peak_bytes);
    clock_sm.add(d.clock_sm_median_mhz);
    clock_memory.add(d.clock_memory_median_mhz);
  }

  json::object to_json() const {
    return json::object{{"source", source},
                        {"device", device},
                        {"name", name},
                        {"windows", windows},
                        {"samples", count(samples)},
                        {"energy_j", num(energy_j)},
                        {"power_peak_w", num(power_peak_w)},
                        {"temperature_max_c", num(temp_max)},
                        {"temperature_junction_max_c", num(temp_junction_max)},
                        {"temperature_memory_max_c", num(temp_memory_max)},
                        {"memory_used_peak_bytes", num(memory_used_peak)},
                        {"clock_sm_median_mhz", clock_sm.to_json()},
                        {"clock_memory_median_mhz", clock_memory.to_json()}};
  }
};

/// The energy section of a repetition's summary when telemetry measured its window.
std::optional<record::EnergySection> measured_energy(const CellRep& r) {
  std::optional<record::EnergySection> e = r.outcome->summary_file.energy_section();
  if (e && !e->measured()) e.reset();
  return e;
}

}  // namespace

void put_headline(json::object& headline, const std::vector<std::string>& key,
                  json::value figures) {
  json::object* at = &headline;
  for (std::size_t i = 0; i + 1 < key.size(); ++i) {
    json::value& next = (*at)[key[i]];
    if (!next.is_object()) next = json::object{};
    at = &next.as_object();
  }
  (*at)[key.back()] = std::move(figures);
}

json::object engine_session_telemetry(const std::vector<CellRep>& reps) {
  std::size_t windows = 0, with_energy = 0;
  double covered_s = 0, energy_window_s = 0;
  std::optional<double> energy, output_tokens, power_peak, vram_peak;
  std::string scope;
  std::vector<DeviceRollup> devices;
  std::map<std::string, std::size_t> sources;  // energy source → device windows in scope
  std::optional<std::int64_t> samples;
  std::optional<double> requested_ms;
  bool one_request = true;  // every window asked for the same period
  Range achieved_ms;
  for (const CellRep& r : reps) {
    const std::optional<record::EnergySection> e = measured_energy(r);
    if (!e) continue;
    ++windows;
    if (const auto& t = r.outcome->telemetry) {
      if (requested_ms && *requested_ms != t->period_ms.requested) one_request = false;
      requested_ms = t->period_ms.requested;
      achieved_ms.add(t->period_ms.achieved_mean);
    }
    for (const record::EnergyDevice& d : e->devices) {
      if (!e->in_scope(d)) continue;
      if (d.energy_source) ++sources[*d.energy_source];
      add_count(samples, d.samples);
    }
    const double w = e->window_s.value_or(0);
    covered_s += w;
    if (e->energy_j) {
      ++with_energy;
      energy_window_s += w;
      keep_sum(energy, e->energy_j);
      keep_sum(output_tokens, e->output_tokens);
      keep_max(power_peak, e->power_peak_w);
      if (scope.empty()) scope = e->scope.value_or("");
    }
    keep_max(vram_peak, e->vram_peak_bytes);
    for (const record::EnergyDevice& d : e->devices) {
      const std::int64_t index = d.device.value_or(0);
      auto it = std::find_if(devices.begin(), devices.end(), [&](const DeviceRollup& x) {
        return x.source == d.source && x.device == index;
      });
      if (it == devices.end()) {
        it = devices.insert(devices.end(), DeviceRollup{});
        it->source = d.source;
        it->device = index;
        it->name = d.name;
      }
      it->add(d);
    }
  }
  if (windows == 0) {
    return json::object{
        {"windows", 0},
        {"reason", "no cell measured telemetry (--telemetry off, or no telemetry source)"}};
  }
  json::array devs;
  for (const auto& d : devices) devs.push_back(d.to_json());
  std::optional<double> per_j, mean_w;
  if (energy && *energy > 0 && output_tokens) per_j = *output_tokens / *energy;
  mean_w = metrics::mean_power_w(energy, energy_window_s);
  json::object by_source;
  for (const auto& [source, n] : sources) by_source[source] = n;
  json::value energy_source = nullptr;
  if (sources.size() == 1) energy_source = json::value(sources.begin()->first);
  if (sources.size() > 1) energy_source = "mixed";
  return json::object{
      {"over",
       "the service window of every repetition of every cell: warm-up, loading, the idle "
       "baseline and the time between cells are not covered"},
      {"windows", windows},
      {"covered_s", covered_s},
      {"windows_with_energy", with_energy},
      {"energy_covered_s", energy_window_s},
      {"scope", scope.empty() ? json::value(nullptr) : json::value(scope)},
      {"energy_source", std::move(energy_source)},
      {"energy_sources", std::move(by_source)},
      {"sampling",
       json::object{{"period_ms_requested", one_request ? num(requested_ms) : json::value(nullptr)},
                    {"period_ms_achieved_mean", achieved_ms.to_json()},
                    {"samples", count(samples)}}},
      {"energy_j", num(energy)},
      {"output_tokens", num(output_tokens)},
      {"output_tokens_per_j", num(per_j)},
      {"power_mean_w", num(mean_w)},
      {"power_peak_w", num(power_peak)},
      {"power_sources_disagree", metrics::power_sources_disagree(mean_w, power_peak)},
      {"vram_peak_bytes", num(vram_peak)},
      {"devices", std::move(devs)}};
}

json::array energy_flags(const std::vector<CellRep>& reps) {
  json::array out;
  for (const CellRep& r : reps) {
    const std::optional<record::EnergySection> e = measured_energy(r);
    if (!e) continue;
    for (const record::EnergyDevice& d : e->devices) {
      const std::string device =
          d.source + ":" + (d.device ? std::to_string(*d.device) : std::string("?"));
      for (const std::string& f : d.flags) {
        out.push_back(json::object{
            {"cell", r.cell}, {"run_id", r.outcome->run_id}, {"device", device}, {"flag", f}});
      }
    }
    // The window's mean power (its energy counter) above the peak of its power samples: the
    // two sources disagree; both figures given.
    if (e->power_sources_disagree()) {
      out.push_back(json::object{{"cell", r.cell},
                                 {"run_id", r.outcome->run_id},
                                 {"device", "scope:" + e->scope.value_or("?")},
                                 {"flag", "power_mean_above_peak"},
                                 {"power_mean_w", num(e->mean_power_w())},
                                 {"power_peak_w", num(e->peak_power_w())}});
    }
  }
  return out;
}

json::array cell_warnings(const std::vector<CellRep>& reps) {
  json::array out;
  for (const CellRep& r : reps) {
    for (const auto& w : r.outcome->summary.warnings) {
      out.push_back(json::object{{"cell", r.cell},
                                 {"run_id", r.outcome->run_id},
                                 {"code", metrics::to_string(w.code)},
                                 {"message", w.message}});
    }
  }
  return out;
}

json::array cell_caveats(const std::vector<CellRep>& reps) {
  json::array out;
  std::map<std::string, std::size_t> at;  // code → its index in `out`
  for (const CellRep& r : reps) {
    const auto& caveats = r.outcome->summary_file.caveats;
    if (!caveats) continue;
    for (const metrics::Caveat& c : *caveats) {
      const std::string& code = c.code;
      if (code.empty()) continue;
      auto it = at.find(code);
      if (it == at.end()) {
        it = at.emplace(code, out.size()).first;
        out.push_back(json::object{{"code", code}, {"cells", json::array{}}});
      }
      // Each run's own text: its numbers are that run's.
      out[it->second].as_object()["cells"].as_array().push_back(
          json::object{{"cell", r.cell}, {"run_id", r.outcome->run_id}, {"text", c.text}});
    }
  }
  return out;
}

}  // namespace dyno::protocol
