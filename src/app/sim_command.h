// `dyno sim`: serves the simulated engine in the foreground.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace dyno::app {

struct SimOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8000;
  std::string profile = "small-gpu";
  std::optional<std::string> model;
  std::uint64_t seed = 0;
  std::optional<std::string> truth;
  std::optional<std::uint64_t> exit_after;
  std::uint32_t fault_500 = 0;
  std::uint32_t fault_429 = 0;
  std::uint32_t fault_malformed = 0;
  std::uint32_t fault_cut = 0;
  std::uint32_t fault_stall = 0;
  std::uint32_t fault_error = 0;
  std::string fault_error_form = "data";
  std::uint32_t fault_unfinished = 0;
  std::string fault_unfinished_end = "done";
  std::uint32_t fault_after_tokens = 2;
  bool show_profile = false;
};

/// Adds `dyno sim`'s options (serving, faults) to `cmd`.
void add_sim_options(CLI::App& cmd, SimOptions& options);

/// Serves until SIGINT/SIGTERM (or --exit-after); returns the exit code.
int sim_command(const SimOptions& options);

}  // namespace dyno::app
