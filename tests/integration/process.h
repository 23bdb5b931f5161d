// Child processes for integration tests: spawn `dyno`, read its output, signal it.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace dyno::testing {

/// A child process with stdout/stderr captured to files (no pipe can fill up and block it).
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::string& out_path,
        const std::string& err_path, const std::map<std::string, std::string>& extra_env = {})
      : out_path_(out_path), err_path_(err_path) {
    std::vector<std::string> env_store;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string kv = *e;
      const std::string key = kv.substr(0, kv.find('='));
      if (extra_env.count(key) == 0) env_store.push_back(kv);
    }
    for (const auto& [k, v] : extra_env) env_store.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (auto& s : env_store) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = argv;
    std::vector<char*> cargv;
    for (auto& a : args) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    // fork + exec rather than posix_spawn, to set a parent-death signal: a test binary that
    // crashes (or is killed by ctest's timeout) takes its `dyno sim` and daemons with it. A
    // close-on-exec pipe carries the child's errno when exec fails.
    int report[2];
    if (::pipe2(report, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ < 0) {
      ::close(report[0]);
      ::close(report[1]);
      throw std::runtime_error("fork failed for " + argv[0]);
    }
    if (pid_ == 0) {  // only async-signal-safe calls from here to exec
      ::close(report[0]);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
      const int in = ::open("/dev/null", O_RDONLY);
      const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (in < 0 || out < 0 || err < 0 || ::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 ||
          ::dup2(err, 2) < 0) {
        const int e = errno;
        (void)!::write(report[1], &e, sizeof e);
        ::_exit(127);
      }
      for (const int fd : {in, out, err}) {
        if (fd > 2) ::close(fd);
      }
      ::execve(cargv[0], cargv.data(), envp.data());
      const int e = errno;
      (void)!::write(report[1], &e, sizeof e);
      ::_exit(127);
    }
    ::close(report[1]);
    int child_errno = 0;
    ssize_t n = 0;
    do {
      n = ::read(report[0], &child_errno, sizeof child_errno);
    } while (n < 0 && errno == EINTR);
    ::close(report[0]);
    if (n > 0) {
      int st = 0;
      ::waitpid(pid_, &st, 0);
      reaped_ = true;
      throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(child_errno));
    }
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  void signal(int sig) { ::kill(pid_, sig); }
  pid_t pid() const { return pid_; }

  /// Waits for exit; returns the exit code (128 + signal if killed by one). -1 on timeout.
  int wait(std::chrono::seconds timeout = std::chrono::seconds(300)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int st = 0;
      const pid_t r = ::wait4(pid_, &st, WNOHANG, &usage_);
      if (r == pid_) {
        reaped_ = true;
        if (WIFEXITED(st)) return WEXITSTATUS(st);
        if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }

  /// The exited child's resource use (all its threads: CPU, peak RSS), once wait() reaped it.
  const struct rusage& usage() const { return usage_; }
  double cpu_seconds() const {
    auto s = [](const timeval& t) {
      return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
    };
    return s(usage_.ru_utime) + s(usage_.ru_stime);
  }

  std::string out() const { return slurp(out_path_); }
  std::string err() const { return slurp(err_path_); }

  /// Polls stdout until it contains `needle` (or the timeout passes); returns stdout.
  std::string wait_for_output(const std::string& needle,
                              std::chrono::seconds timeout = std::chrono::seconds(20)) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      std::string s = out();
      if (s.find(needle) != std::string::npos) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    throw std::runtime_error("timed out waiting for '" + needle + "'; stdout: " + out() +
                             " stderr: " + err());
  }

  static std::string slurp(const std::string& path) {
    std::string s;
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      char buf[8192];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
      std::fclose(f);
    }
    return s;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  struct rusage usage_ {};
  std::string out_path_;
  std::string err_path_;
};

}  // namespace dyno::testing
