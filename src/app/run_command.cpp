#include "app/run_command.h"

#include <boost/json.hpp>
#include <iostream>
#include <optional>
#include <string>
#include <utility>

#include "app/cell_report.h"
#include "app/flag_values.h"
#include "app/signals.h"
#include "engine_session/cell_plan.h"
#include "engine_session/clock_reference.h"
#include "engine_session/run_limits.h"
#include "engine_session/stream.h"
#include "load/plan.h"
#include "workload/request_stream.h"

namespace dyno::app {

namespace json = boost::json;

int run_command(const RunOptions& o) { return run_one_cell(o).exit_code; }

engine_session::CellOutcome run_one_cell(const RunOptions& o, bool print_summary) {
  engine_session::validate_target(o.target, o.telemetry);
  set_close_context({o.telemetry.mode, o.telemetry.period_ms});
  const workload::Api api = engine_session::parse_api(o.target.api);
  // The load flags are checked before the stream is read (load::plan), and planned again with
  // the stream's requests: its length bounds -n and --warmup, its at_ms make a replay.
  load::StreamFacts facts{o.stream.file, o.stream.cycle, nullptr};
  load::LoadPlan plan = load::plan(o.load, {}, facts);
  (void)engine_session::checked_extra_body(o.stream, api, !o.target.no_stream);
  workload::RequestStream stream;
  if (o.stream.file) {
    stream = engine_session::build_stream(o.stream, api, o.load.seed, 0);
    facts.requests = &stream.requests;
    plan = load::plan(o.load, {}, facts);
  } else {
    // Enough distinct synthetic prompts that a count-limited run never repeats one.
    stream = engine_session::build_stream(o.stream, api, o.load.seed, plan.synthetic_requests);
  }
  const std::uint32_t concurrency = plan.config.concurrency;
  if (o.load.rate) {
    engine_session::warn_open_loop_descriptors(*o.load.rate, o.target);
  } else {
    engine_session::check_descriptors(concurrency, "-c " + std::to_string(concurrency), o.target);
  }
  const std::atomic<bool>& stop = install_stop_signals();
  engine_session::EngineSession engine(o.target, o.telemetry, o.load.seed, api, stop);
  std::optional<record::ClockReference> clock_reference;
  if (o.load.clock_ref) {
    // Before the load (and before --start-at's wait); run_cell measures again after it.
    clock_reference = engine_session::clock_reference_before(*o.load.clock_ref);
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

  // The shared flags become the cell as every protocol's cells get them
  // (engine_session/cell_plan.h).
  engine_session::CellSpec cell = engine_session::cell_from_flags(plan, o.stream, o.record);
  cell.stream_source = stream.source;
  cell.stream_sha256 = stream.sha256;
  cell.requests = std::move(stream.requests);  // not a copy: a request costs ~0.5 KiB
  cell.protocol = record::ProtocolRef{};       // {name "run", version 1}
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
  return run_and_show(engine, cell, o, stop, print_summary);
}

}  // namespace dyno::app
