#include "app/merge_clock.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <set>

#include "app/flag_values.h"
#include "error/error.h"

namespace dyno::app {

namespace {

bool one_boot(const std::vector<ShardClock>& shards) {
  const auto& boot = shards.front().clock.boot_id;
  return boot && std::all_of(shards.begin(), shards.end(),
                             [&](const ShardClock& s) { return s.clock.boot_id == boot; });
}

/// Why the shards' wall clocks cannot be corrected by measured offsets; "" when they can.
std::string unmeasured_reason(const std::vector<ShardClock>& shards) {
  std::string missing;
  std::set<std::string> ids;
  for (const ShardClock& s : shards) {
    if (!s.clock.reference) {
      missing += (missing.empty() ? "" : ", ") + std::to_string(s.k);
    } else {
      ids.insert(s.clock.reference->id);
    }
  }
  if (ids.empty()) {
    return "no shard measured its clock against a reference (dyno run --clock-ref)";
  }
  if (!missing.empty()) {
    return "shards " + missing + " did not measure their clocks (dyno run --clock-ref)";
  }
  if (ids.size() > 1) {
    std::string list;
    for (const std::string& id : ids) list += (list.empty() ? "" : ", ") + id;
    return "the shards measured against different clock references (ids " + list +
           "): offsets against different references do not compare";
  }
  return "";
}

std::int64_t magnitude(std::int64_t v) { return v < 0 ? -v : v; }

/// The largest two of `v` summed (the worst error between two shards).
std::int64_t worst_pair(std::vector<std::int64_t> v) {
  std::sort(v.rbegin(), v.rend());
  return v.empty() ? 0 : v[0] + (v.size() > 1 ? v[1] : 0);
}

/// The larger of the two bursts' uncertainties.
std::int64_t measured_uncertainty(const record::ClockReference& r) {
  return std::max(r.before.uncertainty_ns, r.after ? r.after->uncertainty_ns : 0);
}

std::string ms_text(std::int64_t ns) { return flags::number_text(static_cast<double>(ns) / 1e6); }

}  // namespace

record::MergedFrom align_shard_clocks(const std::vector<ShardClock>& shards,
                                      const std::string& method) {
  record::MergedFrom m;
  std::string reason = unmeasured_reason(shards);
  if (method == "auto") {
    m.clock_method = one_boot(shards) ? "steady_clock"
                     : reason.empty() ? "measured_offset"
                                      : "wall_clock";
  } else if (method == "measured_offset") {
    if (!reason.empty()) throw UsageError("--clock-method measured_offset: " + reason);
    m.clock_method = method;
  } else if (method == "wall_clock") {
    if (reason.empty()) reason = "--clock-method wall_clock left the measured offsets unused";
    m.clock_method = method;
  } else {
    throw UsageError("--clock-method " + method + ": give auto, measured_offset or wall_clock");
  }
  const bool steady = m.clock_method == "steady_clock";
  // Each shard's t0 on the common clock: its steady clock, the reference's clock, or its own
  // wall clock.
  std::vector<std::int64_t> t0;
  std::vector<std::int64_t> uncertainties;
  for (const ShardClock& s : shards) {
    const record::ClockSection& c = s.clock;
    const std::int64_t anchor_error = c.t0_unix_uncertainty_ns.value_or(0);
    if (steady) {
      t0.push_back(c.t0_steady_ns.value_or(0));
    } else if (m.clock_method == "measured_offset") {
      const record::ClockReference& r = *c.reference;
      t0.push_back(c.t0_unix_ns.value_or(0) - r.before.offset_ns);
      const std::int64_t drift = r.drift_ns().value_or(0);
      uncertainties.push_back(measured_uncertainty(r) + magnitude(drift) + anchor_error);
    } else {
      t0.push_back(c.t0_unix_ns.value_or(0));
      uncertainties.push_back(anchor_error);
    }
  }
  const std::int64_t base = *std::min_element(t0.begin(), t0.end());
  std::int64_t lo = INT64_MAX;
  std::int64_t hi = INT64_MIN;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    record::MergedShard ms{shards[i].run_id, shards[i].k, t0[i] - base, {}, {}, {}};
    if (m.clock_method == "measured_offset") {
      const record::ClockReference& r = *shards[i].clock.reference;
      ms.clock_offset_ns = r.before.offset_ns;
      ms.clock_uncertainty_ns = measured_uncertainty(r);
      ms.clock_drift_ns = r.drift_ns();
    }
    const std::int64_t start = shards[i].clock.measured_start_ns.value_or(0) + ms.offset_ns;
    lo = std::min(lo, start);
    hi = std::max(hi, start);
    m.shards.push_back(ms);
  }
  m.start_spread_ns = hi - lo;
  m.uncertainty_ns = steady ? 0 : worst_pair(uncertainties);
  if (m.clock_method == "measured_offset")
    m.clock_reference_id = shards.front().clock.reference->id;
  if (m.clock_method == "wall_clock") m.unmeasured_reason = reason;
  return m;
}

std::string clock_bound_excess(const record::MergedFrom& merged, std::int64_t bound_ns) {
  if (merged.clock_method != "measured_offset") return "";
  std::string text;
  for (const record::MergedShard& s : merged.shards) {
    std::string figures;
    const std::int64_t u = s.clock_uncertainty_ns.value_or(0);
    if (u > bound_ns) figures = "uncertainty " + ms_text(u) + " ms";
    if (s.clock_drift_ns && magnitude(*s.clock_drift_ns) > bound_ns) {
      figures += (figures.empty() ? "" : ", ") + std::string("drift ") +
                 ms_text(*s.clock_drift_ns) + " ms";
    }
    if (figures.empty()) continue;
    text += (text.empty() ? "" : "; ") + std::string("shard ") + std::to_string(s.k) + " (run " +
            s.run_id + "): " + figures;
  }
  return text.empty() ? "" : text + " (bound " + ms_text(bound_ns) + " ms)";
}

}  // namespace dyno::app
