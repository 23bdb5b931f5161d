#include "app/signals.h"

#include <unistd.h>

#include <csignal>

#include "engine/process.h"

namespace dyno::app {

namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_signals{0};

extern "C" void on_stop_signal(int /*signo*/) {
  if (g_signals.fetch_add(1) >= 1) {
    // Second signal: leave now. requests.jsonl already holds every finished request.
    static constexpr char kMsg[] = "\ndyno: second interrupt, exiting at once\n";
    dyno::engine::kill_all_engine_groups();  // a launched engine goes with dyno (async-signal-safe)
    [[maybe_unused]] const auto n = ::write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
    ::_exit(130);
  }
  g_stop.store(true);
}

}  // namespace

const std::atomic<bool>& install_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  return g_stop;
}

}  // namespace dyno::app
