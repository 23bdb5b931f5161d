#include "app/run_command.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <sstream>

#include "app/console.h"
#include "app/flag_values.h"
#include "app/run_cell.h"
#include "app/run_limits.h"
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
  if (!(ms > 0) || !std::isfinite(ms) || ms > flags::kMaxSeconds * 1000.0) {
    throw UsageError("--slo: " + key + "=" + value + " is not a duration greater than 0 and at " +
                     "most " + flags::number_text(flags::kMaxSeconds) + " s (30 days)");
  }
  return ms;
}

struct Plan {
  workload::Api api = workload::Api::kChat;
  load::LoadConfig load;
  metrics::Slo slo;
  std::string load_text;
  bool cycles = false;  ///< the load may send a request of the stream again
};

/// A --duration run of the synthetic stream without -n walks this many requests cyclically.
constexpr std::uint64_t kSyntheticCycle = 1000;

/// How many measured requests a run sends, and whether it may send a request again.
/// `stream_length`: the --stream's request count (nullopt: the synthetic stream, made as long
/// as the run needs; a --duration run without -n cycles its kSyntheticCycle requests).
/// Without --cycle a --stream's lines are each sent at most once, warm-ups first: -n defaults
/// to the lines the warm-ups leave, and a --duration run also stops when they are sent.
void plan_requests(const RunOptions& o, std::optional<std::uint64_t> stream_length, Plan& p) {
  p.load.requests = o.requests;
  p.load.duration_s = o.duration_s;
  if (!stream_length) {
    if (!o.requests && !o.duration_s) p.load.requests = 100;
    p.cycles = !p.load.requests;
    return;
  }
  const std::uint64_t lines = *stream_length;
  const std::string stream = "--stream " + *o.stream_file + " holds " + std::to_string(lines) +
                             " request" + (lines == 1 ? "" : "s");
  if (o.cycle) {
    if (!o.requests && !o.duration_s) p.load.requests = lines;
    p.cycles = true;
    return;
  }
  if (o.requests) {
    if (o.warmup + *o.requests > lines) {
      throw UsageError("-n " + std::to_string(*o.requests) +
                       (o.warmup > 0 ? " and --warmup " + std::to_string(o.warmup) + " ask for " +
                                           std::to_string(o.warmup + *o.requests) + " requests"
                                     : std::string(" asks for more requests")) +
                       " but " + stream +
                       "; lower -n, or give --cycle to send the stream again from its start");
    }
    return;
  }
  if (o.warmup >= lines) {
    throw UsageError("--warmup " + std::to_string(o.warmup) + " leaves no measured request: " +
                     stream + "; lower --warmup, or give -n and --cycle");
  }
  p.load.requests = lines - o.warmup;  // with --duration: whichever ends first
}

Plan validate(const RunOptions& o) {
  Plan p;
  p.api = parse_api(o.api);
  if (o.rate && o.concurrency) {
    throw UsageError(
        "--rate and --concurrency exclude each other: --rate sends on an open-loop schedule, "
        "--concurrency keeps C requests in flight; pick one");
  }
  if (o.cycle && !o.stream_file) {
    throw UsageError(
        "--cycle sends a --stream again from its start; without --stream the synthetic stream "
        "is as long as the run needs");
  }
  p.load.warmup = o.warmup;
  p.load.keep_event_times = !o.no_chunk_times;
  p.load.keep_output_text = o.keep_outputs;
  if (o.rate) {
    load::ScheduleSpec spec;
    try {
      spec.arrival = load::parse_arrival(o.arrival);
    } catch (const std::invalid_argument&) {
      throw UsageError("--arrival: '" + o.arrival + "'; use poisson, constant or gamma");
    }
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
    p.load_text = "closed loop, concurrency " + std::to_string(p.load.concurrency);
  }
  if (o.slo) p.slo = parse_slo(*o.slo);
  return p;
}

/// Checks what the request count decides, and completes the console's load line.
void finish_plan(const RunOptions& o, Plan& p) {
  // An open-loop schedule is made before the first request: bound its size.
  if (o.rate && !p.load.requests && *o.rate * *o.duration_s > flags::kMaxRequests) {
    throw UsageError("--rate " + flags::number_text(*o.rate) + " for --duration " +
                     flags::number_text(*o.duration_s) + " s would schedule about " +
                     flags::number_text(std::round(*o.rate * *o.duration_s)) +
                     " requests, more than the limit of " + std::to_string(flags::kMaxRequests) +
                     "; lower --rate or --duration, or give -n");
  }
  if (p.load.requests) p.load_text += ", " + std::to_string(*p.load.requests) + " requests";
  if (p.load.duration_s) p.load_text += ", " + fmt(*p.load.duration_s, 1) + " s";
  if (o.warmup > 0) p.load_text += ", warm-up " + std::to_string(o.warmup);
  if (o.stream_file && p.cycles) p.load_text += ", cycling the stream";
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
  set_close_context({o.telemetry, o.telemetry_period_ms});
  Plan plan = validate(o);
  workload::RequestStream stream;
  if (o.stream_file) {
    stream = build_stream(o, plan.api, 0);
    plan_requests(o, stream.requests.size(), plan);
  } else {
    plan_requests(o, std::nullopt, plan);
    // Enough distinct synthetic prompts that a count-limited run never repeats one.
    stream = build_stream(o, plan.api, o.warmup + plan.load.requests.value_or(kSyntheticCycle));
  }
  finish_plan(o, plan);
  if (o.rate) {
    warn_open_loop_descriptors(*o.rate, o);
  } else {
    check_descriptors(plan.load.concurrency, "-c " + std::to_string(plan.load.concurrency), o);
  }
  EngineSession engine(o, plan.api);

  CellSpec cell;
  cell.requests = stream.requests;
  cell.stream_source = stream.source;
  cell.stream_sha256 = stream.sha256;
  cell.stream_cycles = plan.cycles;
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
