#include "engine/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

extern char** environ;

namespace dyno::engine {

namespace {

// Process groups to kill from a signal handler: a fixed array of atomics (no allocation).
constexpr std::size_t kMaxGroups = 16;
std::array<std::atomic<int>, kMaxGroups> g_groups{};

void register_group(int pgid) {
  for (auto& slot : g_groups) {
    int expected = 0;
    if (slot.compare_exchange_strong(expected, pgid)) return;
  }
}

void unregister_group(int pgid) {
  for (auto& slot : g_groups) {
    int expected = pgid;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGKILL:
      return "SIGKILL";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGHUP:
      return "SIGHUP";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    default:
      return "signal";
  }
}

bool executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

void kill_all_engine_groups() {
  for (auto& slot : g_groups) {
    const int pg = slot.load();
    if (pg > 0) ::kill(-pg, SIGKILL);
  }
}

std::string ExitStatus::describe() const {
  if (code) return "exited with code " + std::to_string(*code);
  if (signal) {
    return "killed by signal " + std::to_string(*signal) + " (" + signal_name(*signal) + ")";
  }
  return "running";
}

std::optional<std::string> find_program(const std::string& name, const std::string& path_env) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    if (!executable_file(name)) return std::nullopt;
    return std::filesystem::absolute(name).lexically_normal().string();
  }
  std::size_t start = 0;
  while (start <= path_env.size()) {
    const auto end = path_env.find(':', start);
    std::string dir =
        path_env.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    if (executable_file(candidate)) {
      return std::filesystem::absolute(candidate).lexically_normal().string();
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return std::nullopt;
}

EngineProcess::EngineProcess(const ProcessOptions& o) {
  if (o.argv.empty()) throw ProcessError("the engine command is empty");
  // The environment the engine gets: dyno's, with the spec's additions.
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : o.env) env[k] = v;
  const std::string path_env =
      env.count("PATH") != 0 ? env["PATH"] : "/usr/local/bin:/usr/bin:/bin";
  std::string arg0 = o.argv[0];
  if (o.workdir && arg0.find('/') != std::string::npos && arg0[0] != '/') {
    arg0 = (std::filesystem::path(*o.workdir) / arg0).string();  // relative to its workdir
  }
  const std::optional<std::string> program = find_program(arg0, path_env);
  if (!program) {
    throw ProcessError(arg0.find('/') != std::string::npos
                           ? "engine command '" + arg0 + "' does not exist or is not executable"
                           : "engine command '" + arg0 + "' was not found on PATH (" + path_env +
                                 "); install it, or give its full path in the spec's command");
  }
  program_ = *program;
  if (o.workdir) {
    std::error_code ec;
    if (!std::filesystem::is_directory(*o.workdir, ec)) {
      throw ProcessError("engine workdir '" + *o.workdir + "' is not a directory");
    }
  }
  const int log_fd = ::open(o.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    throw ProcessError("cannot open the engine log " + o.log_path + ": " + std::strerror(errno));
  }
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);

  // Everything the child needs is built before fork (only async-signal-safe calls after it).
  std::vector<std::string> args = o.argv;
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::vector<std::string> env_store;
  for (const auto& [k, v] : env) env_store.push_back(k + "=" + v);
  std::vector<char*> cenv;
  for (auto& s : env_store) cenv.push_back(s.data());
  cenv.push_back(nullptr);
  const std::string workdir = o.workdir.value_or("");
  const pid_t parent = ::getpid();
  static constexpr char kExecFailed[] = "dyno: could not execute the engine command\n";
  static constexpr char kChdirFailed[] = "dyno: could not change to the engine workdir\n";

  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    if (null_fd >= 0) ::close(null_fd);
    throw ProcessError(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::syscall(SYS_close_range, 3U, ~0U, 0U);  // no socket or file of dyno's leaks into it
    // The default dispositions (dyno's handlers do not survive exec; ignored ones would).
    struct sigaction sa {};
    sa.sa_handler = SIG_DFL;
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGPIPE, &sa, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (!workdir.empty() && ::chdir(workdir.c_str()) != 0) {
      [[maybe_unused]] auto n = ::write(2, kChdirFailed, sizeof kChdirFailed - 1);
      ::_exit(127);
    }
    ::execve(program_.c_str(), cargv.data(), cenv.data());
    [[maybe_unused]] auto n = ::write(2, kExecFailed, sizeof kExecFailed - 1);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also from the parent, so the group exists before we signal it
  ::close(log_fd);
  if (null_fd >= 0) ::close(null_fd);
  pid_ = pid;
  register_group(pid_);
  reaper_ = std::thread([this] { reap(); });
}

void EngineProcess::reap() {
  int st = 0;
  while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
  }
  ExitStatus s;
  if (WIFEXITED(st)) s.code = WEXITSTATUS(st);
  if (WIFSIGNALED(st)) s.signal = WTERMSIG(st);
  s.at_ns = steady_ns();
  std::function<void(const ExitStatus&)> callback;
  {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = s;
    if (!stopping_) callback = on_exit_;
  }
  cv_.notify_all();
  if (callback) callback(s);
}

EngineProcess::~EngineProcess() {
  stop(SIGKILL, 0);
  if (reaper_.joinable()) reaper_.join();
  unregister_group(pid_);
}

std::optional<ExitStatus> EngineProcess::exit_status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

bool EngineProcess::wait_for(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return status_.has_value(); });
}

void EngineProcess::on_unexpected_exit(std::function<void(const ExitStatus&)> callback) {
  std::optional<ExitStatus> already;
  {
    std::lock_guard<std::mutex> lock(mu_);
    on_exit_ = callback;
    if (status_ && !stopping_) already = status_;
  }
  if (already && callback) callback(*already);
}

EngineProcess::StopResult EngineProcess::stop(int signal, double grace_s) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_result_) return *stop_result_;
    stopping_ = true;
  }
  StopResult r;
  const std::int64_t t0 = steady_ns();
  r.was_running = running();
  if (r.was_running) {
    ::kill(-pid_, signal);
    r.graceful = wait_for(std::chrono::milliseconds(static_cast<std::int64_t>(grace_s * 1000)));
  }
  // The leader may be gone while workers it started still run: the group is killed either way.
  ::kill(-pid_, SIGKILL);
  if (!wait_for(std::chrono::seconds(60))) {
    // Unkillable for a minute (a process stuck in the kernel, e.g. in a GPU driver call).
    r.status.at_ns = steady_ns();
  } else {
    r.status = *exit_status();
  }
  r.stop_s = static_cast<double>(steady_ns() - t0) * 1e-9;
  std::lock_guard<std::mutex> lock(mu_);
  stop_result_ = r;
  return r;
}

}  // namespace dyno::engine
