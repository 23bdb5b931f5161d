// The one sampler thread: reads every available source every period on the steady clock (the
// clock of the request traces) and keeps every sample. Telemetry never stops or slows the load:
// a failing read is counted and sampling goes on.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "telemetry/energy.h"
#include "telemetry/sampler.h"

namespace dyno::telemetry {

class Monitor {
 public:
  /// One row of telemetry.jsonl: a reading of one device of one source.
  struct Row {
    std::int64_t t_ns = 0;
    std::size_t source = 0;  ///< index into probes()
    Reading reading;
  };

  /// Gives every sampler the engine's PIDs, then probes them now (blocking); unavailable
  /// sources are kept with their reason.
  Monitor(std::vector<std::unique_ptr<Sampler>> samplers, std::int64_t period_ns,
          const std::vector<int>& engine_pids = {});
  ~Monitor();  ///< stops the thread
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  /// Starts the thread when at least one source is available (else does nothing).
  void start();
  void stop();

  const std::vector<Probe>& probes() const { return probes_; }
  bool active() const;
  std::int64_t period_ns() const { return period_ns_; }

  /// The readings of one device in time order (a copy; safe while sampling runs).
  std::vector<TimedReading> series(std::size_t source, std::size_t device) const;
  /// Every row with begin ≤ t ≤ end.
  std::vector<Row> rows_between(std::int64_t begin_ns, std::int64_t end_ns) const;
  /// Intervals (s) between successive sampling ticks that started in [begin, end].
  std::vector<double> tick_gaps_s(std::int64_t begin_ns, std::int64_t end_ns) const;
  std::uint64_t read_errors() const { return errors_.load(); }
  /// Blocks until a sample at or after `t_ns` exists (so a window ending at t_ns is covered and
  /// its end can be interpolated), at most three periods. No effect when inactive.
  void wait_past(std::int64_t t_ns) const;

 private:
  void thread_main();

  std::vector<std::unique_ptr<Sampler>> samplers_;
  std::vector<Probe> probes_;
  std::int64_t period_ns_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;  // stop requests, and new ticks for wait_past()
  bool stop_ = false;
  std::vector<Row> rows_;
  std::vector<std::int64_t> ticks_;
  std::atomic<std::uint64_t> errors_{0};
  std::thread thread_;
};

/// The samplers dyno uses on this host: NVML, amdgpu, RAPL and host, in that order.
std::vector<std::unique_ptr<Sampler>> default_samplers(const std::string& nvml_library,
                                                       const std::string& sysfs_root,
                                                       const std::string& proc_root);

}  // namespace dyno::telemetry
