#include "app/run_command.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <sstream>

#include "app/console.h"
#include "app/session.h"
#include "app/signals.h"
#include "load/runner.h"
#include "load/schedule.h"
#include "workload/request_stream.h"
#include "workload/synthetic.h"

namespace dyno::app {

namespace json = boost::json;

namespace {

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
  if (!(ms > 0) || !std::isfinite(ms)) {
    throw UsageError("--slo: " + key + " must be a positive duration");
  }
  return ms;
}

struct Plan {
  workload::Api api = workload::Api::kChat;
  load::LoadConfig load;
  metrics::Slo slo;
  std::string load_text;
};

Plan validate(const RunOptions& o) {
  Plan p;
  p.api = parse_api(o.api);
  if (o.rate && o.concurrency) {
    throw UsageError(
        "--rate and --concurrency exclude each other: --rate sends on an open-loop schedule, "
        "--concurrency keeps C requests in flight; pick one");
  }
  if (o.requests && *o.requests == 0) throw UsageError("--requests must be at least 1");
  if (o.duration_s && !(*o.duration_s > 0)) throw UsageError("--duration must be > 0 seconds");

  p.load.requests = o.requests;
  p.load.duration_s = o.duration_s;
  if (!o.requests && !o.duration_s) p.load.requests = 100;
  p.load.warmup = o.warmup;
  p.load.keep_event_times = !o.no_chunk_times;
  p.load.keep_output_text = o.keep_outputs;
  if (o.rate) {
    if (!(*o.rate > 0) || !std::isfinite(*o.rate)) throw UsageError("--rate must be > 0 req/s");
    load::ScheduleSpec spec;
    try {
      spec.arrival = load::parse_arrival(o.arrival);
    } catch (const std::invalid_argument&) {
      throw UsageError("--arrival: '" + o.arrival + "'; use poisson, constant or gamma");
    }
    if (!(o.burstiness > 0)) throw UsageError("--burstiness must be > 0 (1 = Poisson)");
    spec.rate_per_s = *o.rate;
    spec.burstiness = o.burstiness;
    spec.seed = o.seed;
    p.load.open_loop = true;
    p.load.schedule = spec;
    p.load.concurrency = 1;  // warm-up requests go one at a time in open loop
    std::ostringstream t;
    t << "open loop, " << *o.rate << " req/s, " << load::to_string(spec.arrival);
    if (spec.arrival == load::Arrival::kGamma) t << " (burstiness " << o.burstiness << ")";
    p.load_text = t.str();
  } else {
    p.load.concurrency = o.concurrency.value_or(8);
    if (p.load.concurrency == 0) throw UsageError("--concurrency must be at least 1");
    p.load_text = "closed loop, concurrency " + std::to_string(p.load.concurrency);
  }
  if (p.load.requests) p.load_text += ", " + std::to_string(*p.load.requests) + " requests";
  if (p.load.duration_s) p.load_text += ", " + fmt(*p.load.duration_s, 1) + " s";
  if (o.warmup > 0) p.load_text += ", warm-up " + std::to_string(o.warmup);
  if (o.slo) p.slo = parse_slo(*o.slo);
  return p;
}

}  // namespace

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

int run_command(const RunOptions& o) {
  validate_common(o);
  const Plan plan = validate(o);
  // Enough distinct synthetic prompts that a count-limited run never repeats one.
  const workload::RequestStream stream =
      build_stream(o, plan.api, o.warmup + plan.load.requests.value_or(1000));
  EngineSession engine(o, plan.api);

  CellSpec cell;
  cell.requests = stream.requests;
  cell.stream_source = stream.source;
  cell.load = plan.load;
  cell.slo = plan.slo;
  cell.slo_text = o.slo.value_or("");
  cell.load_text = plan.load_text;
  cell.protocol = json::object{{"name", "run"}, {"version", 1}};
  cell.label = o.label;
  cell.sampling = json::object{
      {"temperature", o.temperature},
      {"max_tokens", o.max_tokens ? json::value(*o.max_tokens) : json::value(nullptr)}};
  if (!o.stream_file) {
    cell.sampling["max_tokens"] = o.output_tokens;
    cell.sampling["ignore_eos"] = true;
  }
  const CellOutcome outcome = run_cell(engine, cell, o, install_stop_signals());
  return outcome.exit_code;
}

}  // namespace dyno::app
