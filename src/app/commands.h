// dyno's subcommands as one table (docs/extending.md "A command"): each command an entry with
// its name, its one-line description (the line `dyno --help` shows), and the function that adds
// its options to CLI11 and gives back what runs it once parsed. main() adds the table to the
// app, parses, and runs the command that was given; groups (`stream`, …) add a table of their
// own the same way.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}

namespace dyno::app {

/// Where a command prints (main: std::cout and std::cerr).
struct CommandIo {
  std::ostream& out;
  std::ostream& err;
};

/// Runs a parsed command; returns its exit code (app/exit_codes.h). Owns the options CLI11
/// filled in.
using CommandRun = std::function<int(CommandIo)>;

/// An entry of the command table (error/registry.h).
struct Command {
  std::string_view name;      ///< the subcommand: "run"
  std::string_view describe;  ///< its line in `dyno --help`
  /// Adds the command's options (and subcommands) to `cmd`, the subcommand made with name and
  /// describe; returns what runs it once the command line chose it.
  CommandRun (*add)(CLI::App& cmd);
};

/// Every top-level command, in the order `dyno --help` lists them.
std::span<const Command> commands();

/// A command added to an app: its subcommand and what runs it.
struct AddedCommand {
  const Command* command = nullptr;
  CLI::App* cmd = nullptr;
  CommandRun run;
};

/// Adds each entry of `table` to `app` as a subcommand, in order.
std::vector<AddedCommand> add_commands(CLI::App& app, std::span<const Command> table);

/// Runs the command the parse chose among `added`; nullopt when none was chosen.
std::optional<int> run_chosen(const std::vector<AddedCommand>& added, CommandIo io);

/// The usual entry's `add`: the options as a value of type Options, filled in by `AddOptions`
/// (void(CLI::App&, Options&)) and run by `Run` (int(const Options&, CommandIo)).
template <class Options, auto AddOptions, auto Run>
CommandRun with_options(CLI::App& cmd) {
  auto options = std::make_shared<Options>();
  AddOptions(cmd, *options);
  return [options](CommandIo io) { return Run(*options, io); };
}

}  // namespace dyno::app
