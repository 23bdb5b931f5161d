#include "app/run_command.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <sstream>
#include <utility>

#include "app/cell_report.h"
#include "app/console.h"
#include "app/flag_values.h"
#include "app/signals.h"
#include "load/plan.h"
#include "load/runner.h"
#include "load/schedule.h"
#include "load/shard.h"
#include "session/cell_plan.h"
#include "session/clock_reference.h"
#include "session/run_limits.h"
#include "session/stream.h"
#include "workload/request_stream.h"
#include "workload/synthetic.h"

namespace dyno::app {

namespace json = boost::json;

namespace {

/// One end of --time-window: a number of seconds, or with a unit ms, s, m or h; in ms.
double window_end_ms(const std::string& text, const std::string& value) {
  const auto [number, unit] = flags::split_unit(text);
  const double scale = unit.empty() || unit == "s" ? 1000.0
                       : unit == "ms"              ? 1.0
                       : unit == "m"               ? 60'000.0
                       : unit == "h"               ? 3'600'000.0
                                                   : -1.0;
  try {
    if (scale < 0) throw flags::FlagValueError("unit '" + unit + "'; use ms, s, m or h");
    // At most 1e13 ms (the largest at_ms a stream may hold, workload::kMaxAtMs).
    return flags::parse_number(number, 0, 1e13 / scale) * scale;
  } catch (const flags::FlagValueError& e) {
    throw UsageError("--time-window " + value + ": '" + text + "': " + e.what() +
                     "; write e.g. 600,1200 (seconds) or 10m,20m");
  }
}

/// --schedule timestamps and its --time-scale / --time-window.
load::Replay parse_replay(const load::LoadOptions& o) {
  load::Replay r;
  r.time_scale = o.time_scale;
  if (o.time_window) {
    const std::string& w = *o.time_window;
    const auto comma = w.find(',');
    if (comma == std::string::npos) {
      throw UsageError("--time-window " + w + ": give FROM,TO (TO may be left out: FROM,)");
    }
    r.from_ms = window_end_ms(w.substr(0, comma), w);
    if (comma + 1 < w.size()) r.to_ms = window_end_ms(w.substr(comma + 1), w);
    if (r.to_ms && *r.to_ms <= r.from_ms) {
      throw UsageError("--time-window " + w + ": TO must be after FROM");
    }
  }
  return r;
}

/// The stream's requests (or sessions) a replay sends; UsageError naming a request without
/// at_ms (on a session's first turn), or when the window holds none.
std::uint64_t replayed_requests(const std::vector<workload::Request>& requests,
                                const load::Replay& r, const std::string& file) {
  std::uint64_t n = 0;
  std::map<std::string, bool> session_in_window;
  for (const workload::Request& q : requests) {
    if (q.turn && q.turn->index > 0) {
      n += session_in_window[q.turn->session] ? 1 : 0;
      continue;
    }
    if (!q.at_ms) {
      throw UsageError("--schedule timestamps: request '" + q.id + "' of --stream " + file +
                       " has no at_ms; a replay needs at_ms on every request (on the first "
                       "turn of every session)");
    }
    const bool in = r.in_window(*q.at_ms);
    if (q.turn) session_in_window[q.turn->session] = in;
    n += in ? 1 : 0;
  }
  if (n == 0) {
    throw UsageError("--time-window: no request of --stream " + file +
                     " has its at_ms in the window");
  }
  return n;
}

/// A replay's last send time, (at_ms − FROM) × time scale, must lie within the longest run
/// (30 days, as every duration): checked before the record is opened. `limit`: -n (a stream of
/// single requests sends the window's first N by at_ms).
void check_replay_span(const std::vector<workload::Request>& requests, const load::Replay& r,
                       std::optional<std::uint64_t> limit, const std::string& file) {
  std::vector<std::pair<double, std::size_t>> sent;
  bool sessions = false;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const workload::Request& q = requests[i];
    if (q.turn) sessions = true;
    if ((q.turn && q.turn->index > 0) || !q.at_ms || !r.in_window(*q.at_ms)) continue;
    sent.emplace_back(*q.at_ms, i);
  }
  std::stable_sort(sent.begin(), sent.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  if (!sessions && limit && sent.size() > *limit) sent.resize(*limit);
  if (sent.empty()) return;
  const auto& [at, pos] = sent.back();
  const double offset_s = (at - r.from_ms) * r.time_scale / 1000.0;
  if (offset_s > flags::kMaxSeconds) {
    throw UsageError("--schedule timestamps: request '" + requests[pos].id + "' of --stream " +
                     file + " has at_ms " + flags::number_text(at) + ": the replay would send it " +
                     flags::number_text(std::round(offset_s)) +
                     " s after it starts, past the limit of " +
                     flags::number_text(flags::kMaxSeconds) +
                     " s (30 days); narrow --time-window, lower --time-scale or give -n");
  }
}

struct Plan {
  workload::Api api = workload::Api::kChat;
  load::CellLoad shape;  ///< the cell's load; the shared flags are applied by load::plan_load
  std::optional<load::Shard> shard;
  std::optional<std::int64_t> start_at_unix_ns;
  std::string load_text;
  bool cycles = false;  ///< the load may send a request of the stream again
  bool open_loop() const { return shape.rate_per_s || shape.replay; }
};

/// A --duration run of the synthetic stream without -n walks this many requests cyclically.
constexpr std::uint64_t kSyntheticCycle = 1000;

/// How many measured requests a run sends, and whether it may send a request again.
/// `stream_length`: the --stream's request count (nullopt: the synthetic stream, made as long
/// as the run needs; a --duration run without -n cycles its kSyntheticCycle requests).
/// Without --cycle a --stream's lines are each sent at most once, warm-ups first: -n defaults
/// to the lines the warm-ups leave, and a --duration run also stops when they are sent.
void plan_requests(const RunOptions& o, std::optional<std::uint64_t> stream_length, Plan& p) {
  p.shape.requests = o.load.requests;
  p.shape.duration_s = o.load.duration_s;
  if (!stream_length) {
    if (!o.load.requests && !o.load.duration_s) p.shape.requests = 100;
    p.cycles = !p.shape.requests;
    return;
  }
  const std::uint64_t lines = *stream_length;
  const std::string stream = "--stream " + *o.stream.file + " holds " + std::to_string(lines) +
                             " request" + (lines == 1 ? "" : "s");
  if (o.stream.cycle) {
    if (!o.load.requests && !o.load.duration_s) p.shape.requests = lines;
    p.cycles = true;
    return;
  }
  if (o.load.requests) {
    if (o.load.warmup + *o.load.requests > lines) {
      throw UsageError(
          "-n " + std::to_string(*o.load.requests) +
          (o.load.warmup > 0 ? " and --warmup " + std::to_string(o.load.warmup) + " ask for " +
                                   std::to_string(o.load.warmup + *o.load.requests) + " requests"
                             : std::string(" asks for more requests")) +
          " but " + stream + "; lower -n, or give --cycle to send the stream again from its start");
    }
    return;
  }
  if (o.load.warmup >= lines) {
    throw UsageError("--warmup " + std::to_string(o.load.warmup) + " leaves no measured request: " +
                     stream + "; lower --warmup, or give -n and --cycle");
  }
  p.shape.requests = lines - o.load.warmup;  // with --duration: whichever ends first
}

/// --shard and --start-at (docs/scale.md, "Load from several client hosts").
void plan_shard(const RunOptions& o, Plan& p) {
  if (o.load.start_at && !o.load.shard) {
    throw UsageError(
        "--start-at starts the shards of one run together; give --shard K/N too "
        "(--shard 0/1 for a single process)");
  }
  if (o.load.clock_ref && !o.load.shard) {
    throw UsageError(
        "--clock-ref measures this host's clock for merging the shards of one run; give "
        "--shard K/N too");
  }
  if (!o.load.shard) return;
  const load::Shard shard = load::resolve_shard(*o.load.shard);
  const std::string shard_text = std::to_string(shard.k) + "/" + std::to_string(shard.n);
  if (!p.open_loop() && p.shape.concurrency < shard.n) {
    throw UsageError("--shard " + shard_text + ": -c " + std::to_string(p.shape.concurrency) +
                     " cannot be split over " + std::to_string(shard.n) +
                     " shards (each keeps at least one request in flight); raise -c to at "
                     "least N");
  }
  p.shard = shard;
  if (o.load.start_at) {
    p.start_at_unix_ns = load::parse_start_at(*o.load.start_at, std::chrono::system_clock::now());
  }
  p.load_text += ", shard " + std::to_string(shard.k) + "/" + std::to_string(shard.n);
  if (!p.open_loop()) {
    p.load_text += " (concurrency " +
                   std::to_string(load::shard_concurrency(p.shape.concurrency, shard)) + " here)";
  }
}

Plan validate(const RunOptions& o) {
  Plan p;
  p.api = session::parse_api(o.target.api);
  if (o.load.rate && o.load.concurrency) {
    throw UsageError(
        "--rate and --concurrency exclude each other: --rate sends on an open-loop schedule, "
        "--concurrency keeps C requests in flight; pick one");
  }
  if (o.stream.cycle && !o.stream.file) {
    throw UsageError(
        "--cycle sends a --stream again from its start; without --stream the synthetic stream "
        "is as long as the run needs");
  }
  const bool replay_flags = o.load.time_window || o.load.time_scale != 1.0;
  if (o.load.schedule) {
    if (o.load.rate || o.load.concurrency) {
      throw UsageError(
          "--schedule timestamps sends each request at the stream's time; it excludes --rate "
          "and --concurrency");
    }
    if (!o.stream.file) {
      throw UsageError(
          "--schedule timestamps replays a --stream whose requests carry at_ms "
          "(dyno stream import mooncake|azure|burstgpt writes one)");
    }
    p.shape.replay = parse_replay(o.load);
    p.load_text =
        "replay of the stream's timestamps, time scale " + flags::number_text(o.load.time_scale);
    if (o.load.time_window) p.load_text += ", window " + *o.load.time_window;
  } else if (replay_flags) {
    throw UsageError("--time-scale and --time-window shape a replay; give --schedule timestamps");
  } else if (o.load.rate) {
    const load::Arrival arrival =
        about("--arrival", [&] { return load::parse_arrival(o.load.arrival); });
    p.shape.rate_per_s = *o.load.rate;
    std::ostringstream t;
    t << "open loop, " << *o.load.rate << " req/s, " << load::to_string(arrival);
    if (arrival == load::Arrival::kGamma) t << " (burstiness " << o.load.burstiness << ")";
    p.load_text = t.str();
  } else {
    p.shape.concurrency = o.load.concurrency.value_or(8);
    p.load_text = "closed loop, concurrency " + std::to_string(p.shape.concurrency);
  }
  if (o.load.slo) flags::check_slo(*o.load.slo);  // a bad --slo fails before the engine starts
  (void)session::checked_extra_body(o.stream, p.api, !o.target.no_stream);
  plan_shard(o, p);
  return p;
}

/// An open-loop schedule is made before the first request, and every request's trace is held
/// until the record is written: both are bounded, before anything is built or written.
void check_open_loop(const RunOptions& o, const Plan& p) {
  if (o.load.rate) {
    const double rate = *o.load.rate;
    const std::string rate_text = "--rate " + flags::number_text(rate);
    const double by_count = p.shape.requests ? static_cast<double>(*p.shape.requests) : HUGE_VAL;
    const double by_duration = o.load.duration_s ? std::ceil(rate * *o.load.duration_s) : HUGE_VAL;
    const double planned = std::min(by_count, by_duration);
    if (planned > static_cast<double>(flags::kMaxOpenLoopArrivals)) {
      const std::string over =
          by_duration <= by_count
              ? " for --duration " + flags::number_text(*o.load.duration_s) + " s"
              : " for " + std::to_string(*p.shape.requests) + " requests";
      throw UsageError(
          rate_text + over + " would schedule about " + flags::number_text(std::round(planned)) +
          " requests, more than the limit of " + std::to_string(flags::kMaxOpenLoopArrivals) +
          " for an open loop (each request's trace is held in memory until the "
          "record is written); lower --rate, --duration or -n");
    }
    if (!o.load.duration_s && p.shape.requests &&
        static_cast<double>(*p.shape.requests) / rate > flags::kMaxSeconds) {
      throw UsageError(
          rate_text + " would take about " +
          flags::number_text(std::round(static_cast<double>(*p.shape.requests) / rate)) +
          " s to send " + std::to_string(*p.shape.requests) + " requests, past the limit of " +
          flags::number_text(flags::kMaxSeconds) +
          " s (30 days); raise --rate, lower -n or give --duration");
    }
  }
}

/// Checks what the request count decides, and completes the console's load line.
void finish_plan(const RunOptions& o, Plan& p) {
  if (p.shape.requests) p.load_text += ", " + std::to_string(*p.shape.requests) + " requests";
  if (p.shape.duration_s) p.load_text += ", " + fmt(*p.shape.duration_s, 1) + " s";
  if (o.load.warmup > 0) p.load_text += ", warm-up " + std::to_string(o.load.warmup);
  if (o.stream.file && p.cycles) p.load_text += ", cycling the stream";
}

}  // namespace

int run_command(const RunOptions& o) {
  session::validate_target(o.target, o.telemetry);
  set_close_context({o.telemetry.mode, o.telemetry.period_ms});
  Plan plan = validate(o);
  workload::RequestStream stream;
  if (o.stream.file) {
    stream = session::build_stream(o.stream, plan.api, o.load.seed, 0);
    if (plan.shape.replay) {
      // A replay sends what its window holds, each request once.
      const std::uint64_t in_window =
          replayed_requests(stream.requests, *plan.shape.replay, *o.stream.file);
      if (o.stream.cycle) throw UsageError("--cycle: a replay sends each request once");
      if (!o.load.requests && !o.load.duration_s) plan.shape.requests = in_window;
      if (o.load.requests) plan.shape.requests = std::min(*o.load.requests, in_window);
      if (o.load.duration_s) plan.shape.duration_s = o.load.duration_s;
      if (!o.load.duration_s) {
        check_replay_span(stream.requests, *plan.shape.replay, o.load.requests, *o.stream.file);
      }
    } else {
      plan_requests(o, stream.requests.size(), plan);
      check_open_loop(o, plan);
    }
  } else {
    plan_requests(o, std::nullopt, plan);
    check_open_loop(o, plan);
    // Enough distinct synthetic prompts that a count-limited run never repeats one.
    stream = session::build_stream(o.stream, plan.api, o.load.seed,
                                   o.load.warmup + plan.shape.requests.value_or(kSyntheticCycle));
  }
  finish_plan(o, plan);
  if (plan.shard && std::any_of(stream.requests.begin(), stream.requests.end(),
                                [](const workload::Request& r) { return r.turn.has_value(); })) {
    throw UsageError("--shard splits a stream of single requests; --stream " +
                     o.stream.file.value_or("") +
                     " holds sessions (multi-turn), which it does not "
                     "split");
  }
  if (o.load.rate) {
    session::warn_open_loop_descriptors(*o.load.rate, o.target);
  } else {
    session::check_descriptors(plan.shape.concurrency,
                               "-c " + std::to_string(plan.shape.concurrency), o.target);
  }
  const std::atomic<bool>& stop = install_stop_signals();
  session::EngineSession engine(o.target, o.telemetry, o.load.seed, plan.api, stop);
  std::optional<record::ClockReference> clock_reference;
  if (o.load.clock_ref) {
    // Before the load (and before --start-at's wait); run_cell measures again after it.
    clock_reference = session::clock_reference_before(*o.load.clock_ref);
    if (!o.console.quiet) {
      std::cerr << "clock: this host's wall clock is "
                << flags::number_text(static_cast<double>(clock_reference->before.offset_ns) / 1e6)
                << " ms ± "
                << flags::number_text(static_cast<double>(clock_reference->before.uncertainty_ns) /
                                      1e6)
                << " ms off reference " << clock_reference->id << " ("
                << clock_reference->before.samples << " of " << clock_reference->before.probes
                << " probes answered)\n";
    }
  }

  // The shared flags become the cell as every protocol's cells get them (session/cell_plan.h).
  session::CellSpec cell = session::cell_from_flags(o.load, o.stream, o.record, plan.shape);
  cell.load.shard = plan.shard;
  cell.load.start_at_unix_ns = plan.start_at_unix_ns;
  cell.requests = stream.requests;
  cell.stream_source = stream.source;
  cell.stream_sha256 = stream.sha256;
  cell.stream_cycles = plan.cycles;
  cell.load_text = plan.load_text;
  cell.protocol = json::object{{"name", "run"}, {"version", 1}};
  cell.clock_reference = clock_reference;
  cell.sampling =
      json::object{{"temperature", o.stream.temperature},
                   {"max_tokens", o.stream.max_tokens ? json::value(*o.stream.max_tokens)
                                                      : json::value(nullptr)}};
  if (!o.stream.file) {
    cell.sampling["max_tokens"] = o.stream.output_tokens;
    cell.sampling["ignore_eos"] = true;
    cell.requested_input_tokens = o.stream.input_tokens;  // about one token a word
  }
  return run_and_show(engine, cell, o, stop).exit_code;
}

}  // namespace dyno::app
