// dyno: a dynamometer for LLM inference engines. The commands are a table (app/commands.h);
// this is the only place that prints `error:` and picks an exit code (P9).
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "app/commands.h"
#include "app/console.h"
#include "app/exit_codes.h"
#include "app/signals.h"
#include "dyno/build_info.h"
#include "record/run_writer.h"

namespace {

constexpr const char* kExitCodes =
    "Exit codes: 0 ok; 1 dyno could not work (I/O, internal error); 2 usage error (bad flag or "
    "input file); 3 the run failed or exceeded its error budget; 130 interrupted.";

/// One connection per in-flight stream: thousands of streams need thousands of descriptors,
/// more than the usual soft limit of 1024. Raise the soft limit to the hard one.
void raise_fd_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
}

}  // namespace

int main(int argc, char** argv) {
  raise_fd_limit();
  CLI::App app{"dyno — a dynamometer for LLM inference engines.\n" + std::string(kExitCodes)};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("dyno ") + dyno::build_info::kVersion + " (" +
                                        dyno::build_info::kGitCommit + ")");
  const auto commands = dyno::app::add_commands(app, dyno::app::commands());

  dyno::app::ignore_sigpipe();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: " << dyno::app::terminal_text(e.what()) << "\n(see dyno --help)\n";
    return dyno::app::kExitUsage;
  }

  try {
    return dyno::app::run_chosen(commands, {std::cout, std::cerr}).value_or(dyno::app::kExitUsage);
  } catch (const dyno::Error& e) {  // messages may quote a server or a file
    const bool record = dynamic_cast<const dyno::record::RecordError*>(&e) != nullptr;
    std::cerr << "error: " << (record ? "run record: " : "") << dyno::app::terminal_text(e.what())
              << "\n";
    return dyno::app::exit_code_for(e.kind());
  } catch (const std::exception& e) {
    std::cerr << "error: " << dyno::app::terminal_text(e.what()) << "\n";
    return dyno::app::kExitFailure;
  }
}
