// An engine's process: started in its own process group with stdout and stderr going to a
// log file, watched by a thread that reaps it, stopped with a signal, a grace period and then
// SIGKILL to the whole group (engines such as vLLM start worker processes of their own).
//
// No orphans: the group is killed when this object is destroyed (also on dyno's errors, since
// destructors run during unwinding), the child gets PR_SET_PDEATHSIG(SIGKILL) so it dies if
// dyno is killed, and kill_all_engine_groups() is async-signal-safe for dyno's "second
// Ctrl-C, exit at once" handler.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "error/error.h"

namespace dyno::engine {

/// The engine could not be started (program missing, not executable, bad workdir).
class ProcessError : public Error {
 public:
  explicit ProcessError(const std::string& message) : Error(ErrorKind::input, message) {}
};

struct ExitStatus {
  std::optional<int> code;    ///< exit code when it exited
  std::optional<int> signal;  ///< signal number when a signal ended it
  std::int64_t at_ns = 0;     ///< steady time it was reaped
  /// "exited with code 1", "killed by signal 9 (SIGKILL)".
  std::string describe() const;
};

struct ProcessOptions {
  std::vector<std::string> argv;           ///< argv[0]: a path or a name looked up on PATH
  std::map<std::string, std::string> env;  ///< added to (or replacing in) dyno's environment
  std::optional<std::string> workdir;
  std::string log_path;  ///< stdout and stderr, appended
};

class EngineProcess {
 public:
  /// Starts it. Throws ProcessError naming the program and what to do.
  explicit EngineProcess(const ProcessOptions& options);
  /// Kills the group (SIGKILL) if it still runs, and reaps it.
  ~EngineProcess();
  EngineProcess(const EngineProcess&) = delete;
  EngineProcess& operator=(const EngineProcess&) = delete;

  int pid() const { return pid_; }
  /// The absolute path of the program that was started.
  const std::string& program() const { return program_; }
  /// Set once the process has ended (by itself or by stop()).
  std::optional<ExitStatus> exit_status() const;
  bool running() const { return !exit_status().has_value(); }
  /// Waits up to `timeout` for the process to end; true when it has.
  bool wait_for(std::chrono::milliseconds timeout) const;
  /// Called once, from the reaper thread, when the process ends (not when stop() ended it).
  void on_unexpected_exit(std::function<void(const ExitStatus&)> callback);

  struct StopResult {
    ExitStatus status;
    bool graceful = false;  ///< ended within the grace period after `signal`
    double stop_s = 0;      ///< signal → reaped
    bool was_running = true;
  };
  /// Sends `signal` to the process group, waits `grace_s`, then SIGKILLs the group.
  /// Idempotent: a second call returns the first result.
  StopResult stop(int signal, double grace_s);

 private:
  void reap();

  int pid_ = -1;
  std::string program_;
  std::thread reaper_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::optional<ExitStatus> status_;
  bool stopping_ = false;
  std::optional<StopResult> stop_result_;
  std::function<void(const ExitStatus&)> on_exit_;
};

/// SIGKILL to every engine process group still registered (async-signal-safe).
void kill_all_engine_groups();

/// Looks `name` up on PATH (`path_env`, ':'-separated); a name with '/' is taken as a path.
/// nullopt when there is no executable file of that name.
std::optional<std::string> find_program(const std::string& name, const std::string& path_env);

}  // namespace dyno::engine
