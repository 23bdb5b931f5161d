// SIGINT/SIGTERM (and SIGHUP, SIGUSR1, SIGUSR2) handling: the first interrupt asks the run to stop
// (finished requests are kept, the record is finished as usual); a second one exits at once, and
// the record it leaves open is still closed as `interrupted` (record/close_at_once.h). Signals
// closer together than kSameInterruptNs are one interrupt: GNU `timeout` signals dyno and its
// process group, so dyno gets its SIGTERM twice. The only global state of dyno (lock-free atomics,
// and the context the closer reads).
#pragma once

#include <atomic>
#include <csignal>
#include <cstdint>

#include "app/run_command.h"
#include "record/close_at_once.h"

namespace dyno::app {

/// Signals within this window of the last one that counted are the same interrupt.
inline constexpr std::int64_t kSameInterruptNs = 500'000'000;

/// The signals that interrupt a run: SIGINT, SIGTERM, SIGHUP (a closed terminal or dropped SSH
/// session), SIGUSR1 and SIGUSR2.
inline constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};

/// Installs the handlers of kStopSignals (once; later calls return the same flag), ignores
/// SIGPIPE, and starts the thread that closes the record on an at-once exit. Returns the flag
/// the first interrupt sets.
const std::atomic<bool>& install_stop_signals();

/// SIGPIPE ignored: a write to a closed pipe fails (EPIPE) instead of killing dyno. Every
/// command does this first (main).
void ignore_sigpipe();

/// What a record closed by an at-once exit says of telemetry (each command sets its flags).
void set_close_context(const record::CloseContext& context);

}  // namespace dyno::app
