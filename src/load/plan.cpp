#include "load/plan.h"

#include <cmath>
#include <sstream>

#include "error/error.h"
#include "load/schedule.h"

namespace dyno::load {

namespace {

/// 30 days, the longest duration a flag takes (app/flag_values.h kMaxSeconds).
constexpr double kMaxSloSeconds = 30.0 * 24 * 3600;

double parse_duration_ms(const std::string& value, const std::string& key) {
  std::size_t pos = 0;
  double number = 0;
  try {
    number = std::stod(value, &pos);
  } catch (const std::exception&) {
    throw UsageError("--slo: " + key + "=" + value + " is not a number; write e.g. " + key +
                     "=500ms or " + key + "=2s");
  }
  const std::string unit = value.substr(pos);
  double ms = 0;
  if (unit.empty() || unit == "ms") {
    ms = number;
  } else if (unit == "s") {
    ms = number * 1000.0;
  } else {
    throw UsageError("--slo: unit '" + unit + "' in " + key + "=" + value + "; use ms or s");
  }
  if (!(ms > 0) || !std::isfinite(ms) || ms > kMaxSloSeconds * 1000.0) {
    throw UsageError("--slo: " + key + "=" + value +
                     " is not a duration greater than 0 and at most 2592000 s (30 days)");
  }
  return ms;
}

}  // namespace

LoadConfig plan_load(const LoadOptions& flags, const CellLoad& cell, Keep keep) {
  LoadConfig c;
  c.warmup = cell.warmup.value_or(flags.warmup);
  c.client_threads = flags.client_threads.value_or(default_client_threads());
  c.unreachable_after_s = flags.unreachable_after_s;
  c.keep_event_times = keep.event_times;
  c.keep_output_text = keep.output_text;
  c.requests = cell.requests;
  c.duration_s = cell.duration_s;
  if (cell.replay) {
    c.open_loop = true;
    c.replay = cell.replay;
    c.concurrency = 1;  // warm-up requests go one at a time
  } else if (cell.rate_per_s) {
    ScheduleSpec spec;
    spec.arrival = about("--arrival", [&] { return parse_arrival(flags.arrival); });
    spec.rate_per_s = *cell.rate_per_s;
    spec.burstiness = flags.burstiness;
    spec.seed = flags.seed;
    c.open_loop = true;
    c.schedule = spec;
    c.concurrency = 1;  // warm-up requests go one at a time in open loop
  } else {
    c.concurrency = cell.concurrency;
  }
  return c;
}

metrics::Slo parse_slo(const std::string& text) {
  metrics::Slo slo;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      throw UsageError("--slo: '" + item + "' has no '='; write e.g. ttft=500ms,tpot=50ms");
    }
    const std::string key = item.substr(0, eq);
    const double ms = parse_duration_ms(item.substr(eq + 1), key);
    if (key == "ttft") {
      slo.ttft_s = ms / 1000.0;
    } else if (key == "tpot") {
      slo.tpot_s = ms / 1000.0;
    } else if (key == "e2e") {
      slo.e2e_s = ms / 1000.0;
    } else {
      throw UsageError("--slo: unknown objective '" + key + "'; use ttft, tpot or e2e");
    }
  }
  if (!slo.any()) throw UsageError("--slo: give at least one of ttft=, tpot=, e2e=");
  return slo;
}

}  // namespace dyno::load
