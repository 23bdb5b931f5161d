// `dyno clock serve --listen HOST:PORT [--skew-ms X]`: a clock reference that the shards of one
// run measure their wall clocks against (`dyno run --clock-ref`; docs/scale.md "Clock
// offsets").
#pragma once

#include <optional>
#include <ostream>
#include <string>

namespace CLI {
class App;
}

namespace dyno::app {

struct ClockServeCommandOptions {
  std::string listen;
  double skew_ms = 0;  ///< served times are this far ahead (negative: behind): a rehearsal
};

/// Serves until SIGINT/SIGTERM; prints the bound address and the reference's id on `out` once
/// listening. Throws UsageError for a malformed --listen or --skew-ms, or an address it cannot
/// bind.
int clock_serve_command(const ClockServeCommandOptions& options, std::ostream& out);

/// Adds `serve` to `clock`, the `dyno clock` subcommand.
class ClockCli {
 public:
  explicit ClockCli(CLI::App& clock);
  bool parsed() const;
  int execute(std::ostream& out) const { return clock_serve_command(o_, out); }

 private:
  ClockServeCommandOptions o_;
  CLI::App* serve_ = nullptr;
};

}  // namespace dyno::app
