#include "app/protocol_commands.h"

#include <CLI/CLI.hpp>
#include <memory>

#include "app/capacity_command.h"
#include "app/flag_values.h"
#include "app/measure_flags.h"
#include "app/protocols.h"

namespace dyno::app {

namespace {

void add_repeat_flags(CLI::App& cmd, RepeatOptions& r) {
  cmd.add_option("--repeat", r.repeat, "run every cell K times (all kept; one selected)")
      ->transform(flags::integer(1, flags::kMaxRepeat))
      ->capture_default_str();
  cmd.add_option("--select", r.select,
                 "the metric whose median repetition is selected (default: the protocol's)");
}

/// What the user declares of the campaign: recorded verbatim in the campaign file.
void add_declared_flags(CLI::App& cmd, protocol::CampaignDeclared& d) {
  cmd.add_option("--campaign-name", d.name,
                 "the campaign's own name (letters, digits, '.', '_', '-'; at most 64)");
  cmd.add_option("--notes", d.notes, "a free-text note kept in the campaign file (repeatable)")
      ->allow_extra_args(false);
  cmd.add_option("--campaign-status", d.status,
                 "a status of your own for the campaign file (dyno's own is `status`)");
  cmd.add_option("--hardware-label", d.hardware_label,
                 "a short label for the hardware, e.g. 2x3090-nvlink");
  cmd.add_option("--evidence", d.evidence,
                 "a path or URL the campaign cites (repeatable; recorded as given, never read)")
      ->allow_extra_args(false);
}

void add_sweep_flags(CLI::App& cmd, SweepOptions& o) {
  cmd.add_option("--concurrencies", o.concurrencies, "closed-loop cells, e.g. 1,2,4,8")
      ->capture_default_str();
  cmd.add_option("--rates", o.rates, "open-loop cells instead, in req/s, e.g. 2,4,8");
  cmd.add_option("--min-requests", o.min_requests,
                 "each cell sends max(min-requests, per-slot x C) requests")
      ->transform(flags::integer(0, flags::kMaxRequests))
      ->capture_default_str();
  cmd.add_option("--per-slot", o.per_slot, "requests per concurrency slot (k)")
      ->transform(flags::integer(1, flags::kMaxRequests))
      ->capture_default_str();
  cmd.add_option("--rate-duration", o.rate_duration_s, "open-loop cells: seconds each cell sends")
      ->transform(flags::seconds())
      ->capture_default_str();
  add_repeat_flags(cmd, o.rep);
  add_declared_flags(cmd, o.declared);
}

void add_ladder_flags(CLI::App& cmd, LadderOptions& o) {
  cmd.add_option("--depths", o.depths, "decode cells: context depths in tokens")
      ->capture_default_str();
  cmd.add_option("--prefill-sizes", o.prefill_sizes,
                 "prefill-only cells: prompt sizes in tokens ('' for none)")
      ->capture_default_str();
  cmd.add_option("--decode-tokens", o.decode_tokens, "output tokens of a decode cell")
      ->transform(flags::integer(2, flags::kMaxTokens))
      ->capture_default_str();
  cmd.add_option("--prefill-decode-tokens", o.prefill_decode_tokens,
                 "output tokens of a prefill cell (its figure stays the prefill rate)")
      ->transform(flags::integer(1, flags::kMaxTokens))
      ->capture_default_str();
  add_repeat_flags(cmd, o.rep);
  add_declared_flags(cmd, o.declared);
}

void add_speed_flags(CLI::App& cmd, SpeedOptions& o) {
  cmd.add_option("--passes", o.passes,
                 "named passes, e.g. fr,en,fr2 (prompts tagged pass=<name> in --stream)")
      ->capture_default_str();
  cmd.add_option("--burst", o.concurrency, "requests of the aggregate burst")
      ->transform(flags::integer(1, flags::kMaxConcurrency))
      ->capture_default_str();
  add_repeat_flags(cmd, o.rep);
  add_declared_flags(cmd, o.declared);
}

void add_real_flags(CLI::App& cmd, RealOptions& o) {
  add_repeat_flags(cmd, o.rep);
  add_declared_flags(cmd, o.declared);
}

void add_capacity_flags(CLI::App& cmd, CapacityOptions& o) {
  if (CLI::Option* slo = cmd.get_option_no_throw("--slo"))
    slo->description(
        "the objectives every probe is judged by (required): ttft_pN, tpot_pN or e2e_pN = a "
        "duration, errors = a share, e.g. ttft_p90=500ms,tpot_p90=50ms,errors=1%");
  cmd.add_option("--by", o.by, "what the search varies: concurrency (users) or rate (req/s)")
      ->capture_default_str();
  cmd.add_option("--min", o.min, "the lowest load probed (default 1 user, 0.5 req/s)")
      ->transform(flags::number(flags::kMinRate, flags::kMaxRate));
  cmd.add_option("--max", o.max, "the highest load probed (default 256 users, 64 req/s)")
      ->transform(flags::number(flags::kMinRate, flags::kMaxRate));
  cmd.add_option("--resolution", o.resolution,
                 "stop bisecting this close: a number in the unit (2) or a share (10%) "
                 "(default 1 user, 10% of a rate)");
  cmd.add_option("--repeat-boundary", o.repeat_boundary,
                 "runs of each boundary cell (and of a probe the bounds leave unclear)")
      ->transform(flags::integer(1, flags::kMaxRepeat))
      ->capture_default_str();
  cmd.add_option("--min-requests", o.min_requests,
                 "each probe sends max(min-requests, per-slot x C) requests")
      ->transform(flags::integer(1, flags::kMaxRequests))
      ->capture_default_str();
  cmd.add_option("--per-slot", o.per_slot, "requests per concurrency slot (k)")
      ->transform(flags::integer(1, flags::kMaxRequests))
      ->capture_default_str();
  cmd.add_option("--rate-duration", o.rate_duration_s, "--by rate: seconds each probe sends")
      ->transform(flags::seconds())
      ->capture_default_str();
  cmd.add_option("--confidence", o.confidence,
                 "the confidence of the bounds a percentile objective is judged with")
      ->transform(flags::number(0.5, 1.0, true, true))
      ->capture_default_str();
  cmd.add_option("--predict-with", o.predict_with,
                 "a fitted sim profile (dyno sim fit) that seeds the bracket; the campaign "
                 "reports predicted against measured capacity");
  cmd.add_option("--gpu-hour-cost", o.gpu_hour_cost,
                 "dollars per GPU-hour: $/Mtok at the capacity point")
      ->transform(flags::number(0, 1e9));
  cmd.add_option("--resume", o.resume,
                 "continue the capacity campaign of this id (auto: the newest unfinished one "
                 "with this --label)");
  add_declared_flags(cmd, o.declared);
}

int run_capacity(const RunOptions& o, const CapacityOptions& c) { return capacity_command(o, c); }

/// A protocol's flags as parsed: the shared measuring flags and its own.
template <class P>
struct ProtocolFlags {
  RunOptions common;
  P protocol;
};

/// A protocol's entry: the shared flags, then `AddFlags` (void(CLI::App&, P&)); it runs
/// `Run` (int(const RunOptions&, const P&)) as every measuring command starts.
template <class P, auto AddFlags, auto Run>
CommandRun protocol(CLI::App& cmd) {
  auto o = std::make_shared<ProtocolFlags<P>>();
  add_common_flags(cmd, o->common);
  AddFlags(cmd, o->protocol);
  return [o](CommandIo) { return Run(start_measuring(o->common), o->protocol); };
}

}  // namespace

std::span<const Command> protocols() {
  static constexpr Command kProtocols[] = {
      {.name = "sweep",
       .describe = "protocol: one cell per concurrency (or rate), each held long enough",
       .add = protocol<SweepOptions, add_sweep_flags, sweep_command>},
      {.name = "ladder",
       .describe = "protocol: decode speed at context depths and prefill speed at prompt sizes",
       .add = protocol<LadderOptions, add_ladder_flags, ladder_command>},
      {.name = "speed",
       .describe = "protocol: a solo streamed request and a burst, for each named pass of prompts",
       .add = protocol<SpeedOptions, add_speed_flags, speed_command>},
      {.name = "capacity",
       .describe = "the largest load at which every SLO holds (--slo ttft_p90=500ms,...)",
       .add = protocol<CapacityOptions, add_capacity_flags, run_capacity>},
      {.name = "real",
       .describe = "protocol: real prompts with long outputs, per-case figures (needs --stream)",
       .add = protocol<RealOptions, add_real_flags, real_command>},
  };
  return kProtocols;
}

}  // namespace dyno::app
