// Running a scheduler's command (sbatch, squeue, scontrol, sacct, scancel) or a cell's batch
// script, and reading what it printed. No shell: argv as given, the program found on PATH.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "error/error.h"

namespace dyno::cluster {

/// A scheduler command that could not be run or failed (kind engine: exit 1).
class SchedulerError : public Error {
 public:
  explicit SchedulerError(const std::string& message) : Error(ErrorKind::engine, message) {}
};

struct CommandResult {
  int exit_code = -1;  ///< 127: not found; 128+N: killed by signal N
  std::string out;     ///< stdout (at most 1 MiB kept)
  std::string err;     ///< stderr (at most 1 MiB kept)
};

/// Runs `argv` and waits for it; stdout and stderr are captured. Never throws for the
/// command's own failure (see exit_code); throws SchedulerError when it cannot be started.
CommandResult run_captured(const std::vector<std::string>& argv);

/// Runs `argv` with stdout and stderr appended to `log` and waits for it; its exit code.
int run_logged(const std::vector<std::string>& argv, const std::filesystem::path& log);

/// `argv` as one line for a person to read or paste (single-quoted where needed).
std::string shell_line(const std::vector<std::string>& argv);

/// `s` single-quoted for bash (' inside becomes '\'').
std::string shell_quote(const std::string& s);

}  // namespace dyno::cluster
