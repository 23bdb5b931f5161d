// SIGINT/SIGTERM handling: the first signal asks the run to stop (finished requests are kept),
// a second one exits at once. The only global state of dyno (a lock-free atomic).
#pragma once

#include <atomic>

namespace dyno::app {

/// Installs the handlers; returns the flag the first signal sets.
const std::atomic<bool>& install_stop_signals();

}  // namespace dyno::app
