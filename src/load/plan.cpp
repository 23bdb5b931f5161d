#include "load/plan.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <utility>

#include "error/error.h"
#include "load/flag_numbers.h"
#include "load/schedule.h"
#include "load/shard.h"

namespace dyno::load {

namespace {

/// "a, b or c" of the non-empty names.
std::string either(const std::vector<std::string>& names) {
  std::vector<std::string> given;
  for (const auto& n : names) {
    if (!n.empty()) given.push_back(n);
  }
  std::string out;
  for (std::size_t i = 0; i < given.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == given.size() ? " or " : ", ") + given[i];
  }
  return out;
}

std::string fixed1(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

/// One objective's value ("500ms", "2s", "50": ms unless s) in milliseconds.
double slo_value_ms(const std::string& value, const std::string& key) {
  const auto [number, unit] = split_unit(value);
  if (!unit.empty() && unit != "ms" && unit != "s") {
    throw UsageError("--slo: unit '" + unit + "' in " + key + "=" + value + "; use ms or s");
  }
  const double scale = unit == "s" ? 1.0 : 0.001;  // to seconds
  try {
    const double seconds = parse_number(number, 0, kMaxSeconds / scale) * scale;
    if (seconds < kMinSeconds * (1 - 1e-12)) {
      throw FlagValueError("is below 1 ms (an objective is from 1 ms to 30 days)");
    }
    return seconds * 1000.0;
  } catch (const FlagValueError& e) {
    throw UsageError("--slo: " + key + "=" + value + ": " + e.what() + "; write e.g. " + key +
                     "=500ms or " + key + "=2s");
  }
}

/// One end of --time-window: a number of seconds, or with a unit ms, s, m or h; in ms.
double window_end_ms(const std::string& text, const std::string& value) {
  const auto [number, unit] = split_unit(text);
  const double scale = unit.empty() || unit == "s" ? 1000.0
                       : unit == "ms"              ? 1.0
                       : unit == "m"               ? 60'000.0
                       : unit == "h"               ? 3'600'000.0
                                                   : -1.0;
  try {
    if (scale < 0) throw FlagValueError("unit '" + unit + "'; use ms, s, m or h");
    // At most 1e13 ms (the largest at_ms a stream may hold, workload::kMaxAtMs).
    return parse_number(number, 0, 1e13 / scale) * scale;
  } catch (const FlagValueError& e) {
    throw UsageError("--time-window " + value + ": '" + text + "': " + e.what() +
                     "; write e.g. 600,1200 (seconds) or 10m,20m");
  }
}

/// --schedule timestamps and its --time-scale / --time-window.
Replay parse_replay(const LoadOptions& o) {
  Replay r;
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
std::uint64_t replayed_requests(const std::vector<workload::Request>& requests, const Replay& r,
                                const std::string& file) {
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
void check_replay_span(const std::vector<workload::Request>& requests, const Replay& r,
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
  if (offset_s > kMaxSeconds) {
    throw UsageError("--schedule timestamps: request '" + requests[pos].id + "' of --stream " +
                     file + " has at_ms " + number_text(at) + ": the replay would send it " +
                     number_text(std::round(offset_s)) + " s after it starts, past the limit of " +
                     number_text(kMaxSeconds) +
                     " s (30 days); narrow --time-window, lower --time-scale or give -n");
  }
}

/// The load's shape from the flags and the cell: a replay, an open loop or a closed loop.
void plan_shape(const LoadOptions& o, const CellLoad& cell, const StreamFacts& stream,
                LoadPlan& p) {
  LoadConfig& c = p.config;
  if (o.rate && o.concurrency) {
    throw UsageError(
        "--rate and --concurrency exclude each other: --rate sends on an open-loop schedule, "
        "--concurrency keeps C requests in flight; pick one");
  }
  if (stream.cycle && !stream.file) {
    throw UsageError(
        "--cycle sends a --stream again from its start; without --stream the synthetic stream "
        "is as long as the run needs");
  }
  const std::optional<double> rate = cell.rate_per_s ? cell.rate_per_s : o.rate;
  const bool replay_flags = o.time_window || o.time_scale != 1.0;
  if (o.schedule) {
    if (o.rate || o.concurrency) {
      throw UsageError(
          "--schedule timestamps sends each request at the stream's time; it excludes --rate "
          "and --concurrency");
    }
    if (!stream.file) {
      throw UsageError(
          "--schedule timestamps replays a --stream whose requests carry at_ms "
          "(dyno stream import mooncake|azure|burstgpt writes one)");
    }
    c.open_loop = true;
    c.replay = parse_replay(o);
    c.concurrency = 1;  // warm-up requests go one at a time
    p.text = "replay of the stream's timestamps, time scale " + number_text(o.time_scale);
    if (o.time_window) p.text += ", window " + *o.time_window;
  } else if (replay_flags) {
    throw UsageError("--time-scale and --time-window shape a replay; give --schedule timestamps");
  } else if (rate) {
    ScheduleSpec spec;
    spec.arrival = about("--arrival", [&] { return parse_arrival(o.arrival); });
    spec.rate_per_s = *rate;
    spec.burstiness = o.burstiness;
    spec.seed = o.seed;
    c.open_loop = true;
    c.schedule = spec;
    c.concurrency = 1;  // warm-up requests go one at a time in open loop
    std::ostringstream t;
    t << "open loop, " << *rate << " req/s, " << to_string(spec.arrival);
    if (spec.arrival == Arrival::kGamma) t << " (burstiness " << o.burstiness << ")";
    p.text = t.str();
  } else {
    c.concurrency = cell.concurrency.value_or(o.concurrency.value_or(8));
    p.text = "closed loop, concurrency " + std::to_string(c.concurrency);
  }
  // --arrival names a schedule even where this cell has none: a typo fails in every command
  // alike, not only where a cell happens to be open-loop.
  (void)about("--arrival", [&] { return parse_arrival(o.arrival); });
}

/// --shard and --start-at (docs/scale.md, "Load from several client hosts").
void plan_shard(const LoadOptions& o, LoadPlan& p) {
  if (o.start_at && !o.shard) {
    throw UsageError(
        "--start-at starts the shards of one run together; give --shard K/N too "
        "(--shard 0/1 for a single process)");
  }
  if (o.clock_ref && !o.shard) {
    throw UsageError(
        "--clock-ref measures this host's clock for merging the shards of one run; give "
        "--shard K/N too");
  }
  if (!o.shard) return;
  LoadConfig& c = p.config;
  const Shard shard = resolve_shard(*o.shard);
  const std::string shard_text = std::to_string(shard.k) + "/" + std::to_string(shard.n);
  if (!c.open_loop && c.concurrency < shard.n) {
    throw UsageError("--shard " + shard_text + ": -c " + std::to_string(c.concurrency) +
                     " cannot be split over " + std::to_string(shard.n) +
                     " shards (each keeps at least one request in flight); raise -c to at "
                     "least N");
  }
  c.shard = shard;
  if (o.start_at) {
    c.start_at_unix_ns = parse_start_at(*o.start_at, std::chrono::system_clock::now());
  }
  p.text += ", shard " + shard_text;
  if (!c.open_loop) {
    p.text += " (concurrency " + std::to_string(shard_concurrency(c.concurrency, shard)) + " here)";
  }
}

/// How many measured requests the load sends, and whether it may send a request again.
/// `stream_length`: the --stream's request count (nullopt: the synthetic stream, made as long
/// as the load needs; a --duration without -n cycles its kSyntheticCycle requests). Without
/// --cycle a --stream's lines are each sent at most once, warm-ups first: -n defaults to the
/// lines the warm-ups leave, and a --duration run also stops when they are sent.
void plan_requests(std::optional<std::uint64_t> requests, std::optional<double> duration_s,
                   std::optional<std::uint64_t> stream_length, const StreamFacts& stream,
                   LoadPlan& p) {
  LoadConfig& c = p.config;
  c.requests = requests;
  c.duration_s = duration_s;
  if (!stream_length) {
    if (!requests && !duration_s) c.requests = 100;
    p.cycles = !c.requests;
    return;
  }
  const std::uint64_t lines = *stream_length;
  const std::string holds = "--stream " + stream.file.value_or("") + " holds " +
                            std::to_string(lines) + " request" + (lines == 1 ? "" : "s");
  if (stream.cycle) {
    if (!requests && !duration_s) c.requests = lines;
    p.cycles = true;
    return;
  }
  if (requests) {
    if (c.warmup + *requests > lines) {
      throw UsageError("-n " + std::to_string(*requests) +
                       (c.warmup > 0 ? " and --warmup " + std::to_string(c.warmup) + " ask for " +
                                           std::to_string(c.warmup + *requests) + " requests"
                                     : std::string(" asks for more requests")) +
                       " but " + holds +
                       "; lower -n, or give --cycle to send the stream again from its start");
    }
    return;
  }
  if (c.warmup >= lines) {
    throw UsageError("--warmup " + std::to_string(c.warmup) + " leaves no measured request: " +
                     holds + "; lower --warmup, or give -n and --cycle");
  }
  c.requests = lines - c.warmup;  // with --duration: whichever ends first
}

/// An open-loop schedule is made before the first request, and every request's trace is held
/// until the record is written: both are bounded, before anything is built or written.
void check_open_loop(const CellFlagNames& names, const LoadPlan& p) {
  const LoadConfig& c = p.config;
  if (!c.schedule) return;
  const double rate = c.schedule->rate_per_s;
  const std::string rate_text = names.rate + " " + number_text(rate);
  const double by_count = c.requests ? static_cast<double>(*c.requests) : HUGE_VAL;
  const double by_duration = c.duration_s ? std::ceil(rate * *c.duration_s) : HUGE_VAL;
  const double planned = std::min(by_count, by_duration);
  if (planned > static_cast<double>(kMaxOpenLoopArrivals)) {
    const std::string over =
        by_duration <= by_count ? " for " + names.duration + " " + number_text(*c.duration_s) + " s"
                                : " for " + std::to_string(*c.requests) + " requests";
    throw UsageError(rate_text + over + " would schedule about " +
                     number_text(std::round(planned)) + " requests, more than the limit of " +
                     std::to_string(kMaxOpenLoopArrivals) +
                     " for an open loop (each request's trace is held in memory until the "
                     "record is written); lower " +
                     either({names.rate, names.duration, names.requests}));
  }
  if (!c.duration_s && c.requests && static_cast<double>(*c.requests) / rate > kMaxSeconds) {
    throw UsageError(rate_text + " would take about " +
                     number_text(std::round(static_cast<double>(*c.requests) / rate)) +
                     " s to send " + std::to_string(*c.requests) + " requests, past the limit of " +
                     number_text(kMaxSeconds) + " s (30 days); raise " + names.rate +
                     (names.requests.empty() ? "" : ", lower " + names.requests) + " or give " +
                     names.duration);
  }
}

/// The rest of the console's load line: what the request count decides.
void finish_text(const StreamFacts& stream, LoadPlan& p) {
  const LoadConfig& c = p.config;
  if (c.requests) p.text += ", " + std::to_string(*c.requests) + " requests";
  if (c.duration_s) p.text += ", " + fixed1(*c.duration_s) + " s";
  if (c.warmup > 0) p.text += ", warm-up " + std::to_string(c.warmup);
  if (stream.file && p.cycles) p.text += ", cycling the stream";
}

}  // namespace

LoadPlan plan(const LoadOptions& flags, const CellLoad& cell, const StreamFacts& stream) {
  LoadPlan p;
  LoadConfig& c = p.config;
  c.warmup = cell.warmup.value_or(flags.warmup);
  c.client_threads = flags.client_threads.value_or(default_client_threads());
  c.unreachable_after_s = flags.unreachable_after_s;
  p.seed = flags.seed;
  p.error_budget = flags.error_budget;
  plan_shape(flags, cell, stream, p);
  if (flags.slo) {
    p.slo = parse_slo(*flags.slo);
    p.slo_text = *flags.slo;
  }
  plan_shard(flags, p);

  const std::optional<std::uint64_t> requests = cell.requests ? cell.requests : flags.requests;
  const std::optional<double> duration_s = cell.duration_s ? cell.duration_s : flags.duration_s;
  if (c.replay) {
    if (stream.requests != nullptr) {
      // A replay sends what its window holds, each request once.
      const std::string file = stream.file.value_or("");
      const std::uint64_t in_window = replayed_requests(*stream.requests, *c.replay, file);
      if (stream.cycle) throw UsageError("--cycle: a replay sends each request once");
      if (requests) {
        c.requests = std::min(*requests, in_window);
      } else if (!duration_s) {
        c.requests = in_window;
      }
      c.duration_s = duration_s;
      if (!duration_s) check_replay_span(*stream.requests, *c.replay, requests, file);
    }
  } else if (!stream.file) {
    plan_requests(requests, duration_s, std::nullopt, stream, p);
    check_open_loop(cell.names, p);
    p.synthetic_requests = c.warmup + c.requests.value_or(kSyntheticCycle);
  } else if (stream.requests != nullptr) {
    plan_requests(requests, duration_s, stream.requests->size(), stream, p);
    check_open_loop(cell.names, p);
  }
  if (c.shard && stream.requests != nullptr &&
      std::any_of(stream.requests->begin(), stream.requests->end(),
                  [](const workload::Request& r) { return r.turn.has_value(); })) {
    throw UsageError("--shard splits a stream of single requests; --stream " +
                     stream.file.value_or("") +
                     " holds sessions (multi-turn), which it does not "
                     "split");
  }
  finish_text(stream, p);
  c.cycle = p.cycles;
  return p;
}

double slo_seconds(const std::string& value, const std::string& key) {
  return slo_value_ms(value, key) / 1000.0;
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
    const double ms = slo_value_ms(item.substr(eq + 1), key);
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
