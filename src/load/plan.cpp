#include "load/plan.h"

#include <boost/json.hpp>
#include <cctype>
#include <cmath>
#include <sstream>

#include "error/error.h"
#include "load/schedule.h"

namespace dyno::load {

namespace {

/// 30 days, the longest duration a flag takes (app/flag_values.h kMaxSeconds).
constexpr double kMaxSloSeconds = 30.0 * 24 * 3600;

double parse_duration_ms(const std::string& value, const std::string& key) {
  const auto invalid = [&](const std::string& why) {
    return UsageError("--slo: " + key + "=" + value + ": " + why + "; write e.g. " + key +
                      "=500ms or " + key + "=2s");
  };
  std::string number = value;
  double scale = 1.0;  // to ms
  if (number.ends_with("ms")) {
    number.resize(number.size() - 2);
  } else if (number.ends_with("s")) {
    number.resize(number.size() - 1);
    scale = 1000.0;
  } else if (!number.empty() && std::isalpha(static_cast<unsigned char>(number.back())) != 0) {
    throw UsageError("--slo: unit in " + key + "=" + value + "; use ms or s");
  }
  // JSON's number grammar is plain decimal: no hexadecimal, no leading zero, no nan or inf.
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(number, ec);
  if (ec || !v.is_number()) throw invalid("'" + number + "' is not a plain decimal number");
  const double ms = v.to_number<double>() * scale;
  if (!std::isfinite(ms) || ms > kMaxSloSeconds * 1000.0) throw invalid("is too large");
  if (ms < 1.0 * (1 - 1e-12)) throw invalid("is below 1 ms (an objective is from 1 ms to 30 days)");
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

metrics::Slo parse_slo(const std::string& text, SloValueReader read_ms) {
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
    const double ms = (read_ms != nullptr ? read_ms : parse_duration_ms)(item.substr(eq + 1), key);
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
