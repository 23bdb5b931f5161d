#include "app/signals.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <ctime>
#include <iostream>
#include <mutex>
#include <thread>

#include "engine/process.h"

namespace dyno::app {

namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_interrupts{0};
/// CLOCK_MONOTONIC of the last signal that counted; -1: none yet.
std::atomic<std::int64_t> g_last_ns{-1};
/// Write end of the closer thread's pipe; -1 until it runs.
std::atomic<int> g_wake_fd{-1};

std::mutex g_context_mu;
record::CloseContext g_context;

std::int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

extern "C" void on_stop_signal(int /*signo*/) {
  const int saved_errno = errno;
  const std::int64_t now = monotonic_ns();
  std::int64_t last = g_last_ns.load();
  // One interrupt may arrive as several signals (GNU timeout signals dyno and its group):
  // those within kSameInterruptNs of the last one that counted are the same interrupt.
  const bool same = last >= 0 && now - last < kSameInterruptNs;
  if (same || !g_last_ns.compare_exchange_strong(last, now)) {
    errno = saved_errno;
    return;
  }
  const int before = g_interrupts.fetch_add(1);
  if (before == 0) {
    g_stop.store(true);
    errno = saved_errno;
    return;
  }
  if (before >= 2) ::_exit(kExitInterrupted);  // a third: the closer is stuck; leave as is
  // A second interrupt: leave now. A launched engine goes with dyno; the closer thread closes
  // the open record as interrupted and exits (it cannot run here: it allocates and locks).
  static constexpr char kMsg[] = "\ndyno: second interrupt, exiting at once\n";
  dyno::engine::kill_all_engine_groups();  // async-signal-safe
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
  const int fd = g_wake_fd.load();
  const char byte = 1;
  if (fd < 0 || ::write(fd, &byte, 1) != 1) ::_exit(kExitInterrupted);
  errno = saved_errno;
}

/// Waits for the handler's byte, closes the open records, exits. Started once, detached.
void closer_main(int read_fd) {
  char byte = 0;
  while (::read(read_fd, &byte, 1) != 1) {
    if (errno != EINTR) ::_exit(kExitInterrupted);
  }
  record::CloseContext context;
  {
    std::lock_guard lock(g_context_mu);
    context = g_context;
  }
  record::close_open_records_at_once(context, std::cerr);
  std::cerr.flush();
  ::_exit(kExitInterrupted);
}

void start_closer() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return;  // the handler then exits without closing
  try {
    std::thread(closer_main, fds[0]).detach();
  } catch (const std::exception&) {
    ::close(fds[0]);
    ::close(fds[1]);
    return;
  }
  g_wake_fd.store(fds[1]);
}

}  // namespace

void ignore_sigpipe() {
  // A write to a closed pipe or socket then fails with EPIPE, which the writer handles, instead
  // of killing dyno (`dyno run --json | head -c1`, a reader of its stderr gone, `kill -PIPE`).
  struct sigaction sa {};
  sa.sa_handler = SIG_IGN;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPIPE, &sa, nullptr);
}

void set_close_context(const record::CloseContext& context) {
  std::lock_guard lock(g_context_mu);
  g_context = context;
}

const std::atomic<bool>& install_stop_signals() {
  static std::once_flag once;
  std::call_once(once, [] {
    start_closer();
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    // Every signal that asks a process to end, and that nobody sends by mistake, is an
    // interrupt: SIGHUP (the terminal or SSH session went away) and SIGUSR1/SIGUSR2 (kill -USR1,
    // schedulers' warnings) close the record as SIGINT and SIGTERM do, instead of killing dyno
    // with the record `running`.
    for (const int signo : kStopSignals) sigaction(signo, &sa, nullptr);
    ignore_sigpipe();
  });
  return g_stop;
}

}  // namespace dyno::app
