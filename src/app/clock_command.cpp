#include "app/clock_command.h"

#include <CLI/CLI.hpp>
#include <cmath>

#include "app/exit_codes.h"
#include "app/flag_values.h"
#include "app/signals.h"
#include "transport/clock_probe.h"

namespace dyno::app {

/// The largest --skew-ms: a rehearsal of badly set clocks (two days: past the one day that
/// `dyno run --clock-ref` refuses), not a time machine.
inline constexpr double kMaxSkewMs = 172'800'000.0;

int clock_serve_command(const ClockServeCommandOptions& o, std::ostream& out) {
  if (!std::isfinite(o.skew_ms) || std::fabs(o.skew_ms) > kMaxSkewMs) {
    throw UsageError("--skew-ms " + flags::number_text(o.skew_ms) +
                     ": give a number of ms from -172800000 to 172800000 (two days)");
  }
  transport::ClockServeOptions so;
  so.listen = o.listen;
  so.skew_ns = static_cast<std::int64_t>(std::llround(o.skew_ms * 1e6));
  transport::serve_clock(so, out, install_stop_signals());
  return kExitOk;
}

ClockCli::ClockCli(CLI::App& clock) {
  clock.require_subcommand(1);
  serve_ = clock.add_subcommand(
      "serve",
      "serve this host's wall clock on UDP as the reference that the shards of a run measure "
      "their clocks against (dyno run --clock-ref; docs/scale.md)");
  serve_->add_option("--listen", o_.listen, "HOST:PORT to answer on (UDP), e.g. 0.0.0.0:7123")
      ->required();
  serve_
      ->add_option("--skew-ms", o_.skew_ms,
                   "serve a clock this many ms ahead of this host's (negative: behind), to "
                   "rehearse a merge of hosts whose clocks disagree")
      ->capture_default_str();
}

bool ClockCli::parsed() const { return serve_->parsed(); }

}  // namespace dyno::app
