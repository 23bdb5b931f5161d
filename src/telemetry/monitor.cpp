#include "telemetry/monitor.h"

#include <algorithm>
#include <chrono>

namespace dyno::telemetry {

namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Monitor::Monitor(std::vector<std::unique_ptr<Sampler>> samplers, std::int64_t period_ns,
                 const std::vector<int>& engine_pids)
    : samplers_(std::move(samplers)), period_ns_(period_ns) {
  for (auto& s : samplers_) {
    if (!engine_pids.empty()) s->set_process_ids(engine_pids);
    probes_.push_back(s->probe());
  }
}

Monitor::~Monitor() { stop(); }

bool Monitor::active() const {
  return std::any_of(probes_.begin(), probes_.end(), [](const Probe& p) { return p.available; });
}

void Monitor::start() {
  if (!active() || thread_.joinable()) return;
  thread_ = std::thread([this] { thread_main(); });
}

void Monitor::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Monitor::thread_main() {
  std::int64_t next = now_ns();
  std::vector<Reading> readings;
  for (;;) {
    const std::int64_t t = now_ns();
    std::vector<Row> batch;
    {
      // Samplers are read outside the rows lock: a slow read never blocks a reader of rows.
      for (std::size_t i = 0; i < samplers_.size(); ++i) {
        if (!probes_[i].available) continue;
        readings.clear();
        std::uint32_t errors = 0;
        samplers_[i]->sample(readings, errors);
        errors_ += errors;
        for (auto& r : readings) batch.push_back(Row{t, i, r});
      }
    }
    std::unique_lock lock(mu_);
    ticks_.push_back(t);
    for (auto& row : batch) rows_.push_back(std::move(row));
    cv_.notify_all();
    // The next tick on the period grid; after an overrun, one period from now.
    next += period_ns_;
    if (next <= now_ns()) next = now_ns() + period_ns_;
    const auto deadline = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(next));
    if (cv_.wait_until(lock, deadline, [this] { return stop_; })) return;
  }
}

void Monitor::wait_past(std::int64_t t_ns) const {
  if (!thread_.joinable()) return;
  std::unique_lock lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(3 * period_ns_);
  cv_.wait_until(lock, deadline,
                 [&] { return stop_ || (!ticks_.empty() && ticks_.back() >= t_ns); });
}

std::vector<TimedReading> Monitor::series(std::size_t source, std::size_t device) const {
  std::lock_guard lock(mu_);
  std::vector<TimedReading> out;
  for (const auto& row : rows_) {
    if (row.source == source && row.reading.device == device) {
      out.push_back(TimedReading{row.t_ns, row.reading});
    }
  }
  return out;
}

std::vector<Monitor::Row> Monitor::rows_between(std::int64_t begin, std::int64_t end) const {
  std::lock_guard lock(mu_);
  std::vector<Row> out;
  for (const auto& row : rows_) {
    if (row.t_ns >= begin && row.t_ns <= end) out.push_back(row);
  }
  return out;
}

std::vector<double> Monitor::tick_gaps_s(std::int64_t begin, std::int64_t end) const {
  std::lock_guard lock(mu_);
  std::vector<double> gaps;
  for (std::size_t i = 1; i < ticks_.size(); ++i) {
    if (ticks_[i] < begin || ticks_[i] > end) continue;
    gaps.push_back(static_cast<double>(ticks_[i] - ticks_[i - 1]) * 1e-9);
  }
  return gaps;
}

std::vector<std::unique_ptr<Sampler>> default_samplers(const std::string& nvml_library,
                                                       const std::string& sysfs_root,
                                                       const std::string& proc_root) {
  std::vector<std::unique_ptr<Sampler>> s;
  s.push_back(make_nvml_sampler(nvml_library));
  s.push_back(make_amdgpu_sampler(sysfs_root));
  s.push_back(make_rapl_sampler(sysfs_root));
  s.push_back(make_host_sampler(proc_root));
  return s;
}

}  // namespace dyno::telemetry
