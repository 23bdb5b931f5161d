// The run loop against a fake target (P14): exact control of when each request ends.
#include "load/runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <map>
#include <set>
#include <thread>

#include "transport/event_loop.h"

namespace {

using dyno::transport::EventLoop;
using dyno::transport::steady_now_ns;

struct FakePrepared : dyno::transport::PreparedRequest {
  std::string id;
};

/// Completes each request `latency_ns` after submit with `tokens` token events, or fails it.
class FakeTarget : public dyno::transport::Target {
 public:
  FakeTarget(EventLoop& loop, std::int64_t latency_ns, int tokens)
      : loop_(loop), latency_ns_(latency_ns), tokens_(tokens) {}

  std::unique_ptr<dyno::transport::PreparedRequest> prepare(
      const dyno::workload::Request& r) override {
    auto p = std::make_unique<FakePrepared>();
    p->id = r.id;
    return p;
  }

  void submit(const dyno::transport::PreparedRequest& req, std::uint64_t submission,
              dyno::transport::StreamObserver& obs) override {
    submitted_ids.push_back(static_cast<const FakePrepared&>(req).id);
    ++in_flight;
    max_in_flight = std::max(max_in_flight, in_flight);
    const std::int64_t start = steady_now_ns();
    obs.on_sent(start);
    const bool fail = fail_every > 0 && (submission + 1) % fail_every == 0;
    const std::uint64_t timer = loop_.call_at(start + latency_ns_, [this, &obs, fail, submission] {
      pending_.erase(submission);
      const std::int64_t now = steady_now_ns();
      obs.on_first_byte(now, fail ? 500 : 200);
      --in_flight;
      if (fail) {
        obs.on_error(now, dyno::transport::ErrorCategory::kHttpStatus, "500 boom", 500);
        return;
      }
      for (int i = 0; i < tokens_; ++i) obs.on_token_event(now + i, "tok", "");
      dyno::transport::Usage u;
      u.prompt_tokens = 10;
      u.completion_tokens = tokens_;
      obs.on_usage(u);
      obs.on_done(now + tokens_, {"length", ""});
    });
    pending_[submission] = {timer, &obs};
  }

  void cancel_all() override {
    auto pending = std::move(pending_);
    pending_.clear();
    for (auto& [sub, p] : pending) {
      loop_.cancel_timer(p.first);
      --in_flight;
      p.second->on_error(steady_now_ns(), dyno::transport::ErrorCategory::kCancelled, "cancelled",
                         std::nullopt);
    }
  }

  std::vector<std::string> submitted_ids;
  int in_flight = 0;
  int max_in_flight = 0;
  std::uint64_t fail_every = 0;

 private:
  EventLoop& loop_;
  std::int64_t latency_ns_;
  int tokens_;
  std::map<std::uint64_t, std::pair<std::uint64_t, dyno::transport::StreamObserver*>> pending_;
};

std::vector<dyno::workload::Request> stream(int n) {
  std::vector<dyno::workload::Request> v;
  for (int i = 0; i < n; ++i) {
    dyno::workload::Request r;
    r.id = "r" + std::to_string(i);
    r.messages = {{"user", "hi"}};
    v.push_back(r);
  }
  return v;
}

constexpr std::int64_t kMs = 1'000'000;

TEST(Runner, ClosedLoopKeepsConcurrencyAndRunsWarmupFirst) {
  EventLoop loop;
  FakeTarget target(loop, 5 * kMs, 3);
  dyno::load::LoadConfig cfg;
  cfg.concurrency = 4;
  cfg.requests = 20;
  cfg.warmup = 3;
  std::vector<std::string> finished_phases;
  dyno::load::RunHooks hooks;
  hooks.on_finished = [&](const dyno::metrics::Trace& t) { finished_phases.push_back(t.phase); };
  const auto result = dyno::load::run_load(loop, target, stream(7), cfg, hooks);
  ASSERT_EQ(result.traces.size(), 23u);
  EXPECT_EQ(target.max_in_flight, 4);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(finished_phases[i], "warmup");
  for (std::size_t i = 3; i < finished_phases.size(); ++i)
    EXPECT_EQ(finished_phases[i], "measured");
  // Submissions walk the stream cyclically.
  EXPECT_EQ(target.submitted_ids[0], "r0");
  EXPECT_EQ(target.submitted_ids[7], "r0");
  EXPECT_EQ(target.submitted_ids[8], "r1");
  for (const auto& t : result.traces) {
    EXPECT_TRUE(t.ok());
    EXPECT_EQ(t.output_tokens, 3);
    EXPECT_EQ(t.token_count_source, dyno::metrics::TokenCountSource::kUsage);
    EXPECT_EQ(t.event_times_ns.size(), 3u);
    ASSERT_TRUE(t.sent_ns && t.scheduled_ns && t.done_ns);
    EXPECT_GE(*t.sent_ns, *t.scheduled_ns);
  }
  // Measured requests start only after the warm-up ended.
  EXPECT_GE(*result.traces[3].sent_ns, *result.traces[2].done_ns);
  EXPECT_GE(result.measured_start_ns, *result.traces[2].done_ns);
  EXPECT_FALSE(result.loop_lag_s.empty());
}

TEST(Runner, DurationStopsSendingAndDrains) {
  EventLoop loop;
  FakeTarget target(loop, 20 * kMs, 1);
  dyno::load::LoadConfig cfg;
  cfg.concurrency = 2;
  cfg.duration_s = 0.2;
  const auto start = steady_now_ns();
  const auto result = dyno::load::run_load(loop, target, stream(3), cfg, {});
  const double elapsed = static_cast<double>(steady_now_ns() - start) * 1e-9;
  EXPECT_GE(elapsed, 0.2);
  EXPECT_LT(elapsed, 1.0);
  EXPECT_GE(result.traces.size(), 10u);  // 2 streams × ~10 rounds of 20 ms
  EXPECT_LE(result.traces.size(), 24u);
  for (const auto& t : result.traces) EXPECT_TRUE(t.ok());
  EXPECT_EQ(target.in_flight, 0);
}

TEST(Runner, OpenLoopSendsAtScheduledTimes) {
  EventLoop loop;
  FakeTarget target(loop, 50 * kMs, 2);  // long requests: sends must not wait for them
  dyno::load::LoadConfig cfg;
  cfg.open_loop = true;
  cfg.requests = 10;
  dyno::load::ScheduleSpec spec;
  spec.arrival = dyno::load::Arrival::kConstant;
  spec.rate_per_s = 100;
  cfg.schedule = spec;
  const auto result = dyno::load::run_load(loop, target, stream(4), cfg, {});
  ASSERT_EQ(result.traces.size(), 10u);
  EXPECT_GT(target.max_in_flight, 3);
  for (std::size_t i = 1; i < result.traces.size(); ++i) {
    EXPECT_EQ(*result.traces[i].scheduled_ns - *result.traces[i - 1].scheduled_ns, 10 * kMs);
  }
  for (const auto& t : result.traces) {
    EXPECT_GE(*t.sent_ns, *t.scheduled_ns);
    EXPECT_LT(*t.sent_ns - *t.scheduled_ns, 20 * kMs);  // tolerant: busy machine
  }
}

TEST(Runner, FailuresAreDataAndStopFlagCancelsInFlight) {
  EventLoop loop;
  FakeTarget target(loop, 30 * kMs, 1);
  target.fail_every = 3;
  dyno::load::LoadConfig cfg;
  cfg.concurrency = 3;
  cfg.duration_s = 30;
  std::atomic<bool> stop{false};
  dyno::load::RunHooks hooks;
  hooks.stop_requested = &stop;
  int finished = 0;
  hooks.on_finished = [&](const dyno::metrics::Trace&) {
    if (++finished == 9) stop = true;
  };
  const auto result = dyno::load::run_load(loop, target, stream(5), cfg, hooks);
  EXPECT_TRUE(result.interrupted);
  int ok = 0, failed = 0, cancelled = 0;
  for (const auto& t : result.traces) {
    if (t.ok()) ++ok;
    if (t.status == dyno::metrics::RequestStatus::kError) {
      ++failed;
      EXPECT_EQ(t.error_category, "http_status");
      EXPECT_EQ(t.http_status, 500);
    }
    if (t.status == dyno::metrics::RequestStatus::kCancelled) ++cancelled;
  }
  EXPECT_GE(ok + failed, 9);
  EXPECT_GT(failed, 0);
  EXPECT_EQ(target.in_flight, 0);
  EXPECT_EQ(static_cast<std::size_t>(ok + failed + cancelled), result.traces.size());
}

/// A target whose submit costs `cost_ns` of the loop's time (a client at its limit).
class SlowSubmitTarget : public FakeTarget {
 public:
  SlowSubmitTarget(EventLoop& loop, std::int64_t latency_ns, std::int64_t cost_ns)
      : FakeTarget(loop, latency_ns, 1), cost_ns_(cost_ns) {}
  void submit(const dyno::transport::PreparedRequest& req, std::uint64_t submission,
              dyno::transport::StreamObserver& obs) override {
    const std::int64_t until = steady_now_ns() + cost_ns_;
    while (steady_now_ns() < until) {
    }
    FakeTarget::submit(req, submission, obs);
  }

 private:
  std::int64_t cost_ns_;
};

// Issue 32 (3): a schedule faster than the loop can send fell behind, and one wake-up of the
// arrival timer then sent every arrival due (seconds of submits) without looking at the stop
// flag. Due arrivals now go in bounded batches, each wake-up checking the flag.
TEST(Runner, AStopIsAnsweredPromptlyWhileTheLoopIsBehindAFastSchedule) {
  EventLoop loop;
  SlowSubmitTarget target(loop, 10'000 * kMs, 20'000);  // 20 us a submit: 50,000 req/s at most
  dyno::load::LoadConfig cfg;
  cfg.open_loop = true;
  cfg.requests = 200'000;  // 0.2 s of schedule at 1,000,000 req/s: 4 s of submits
  dyno::load::ScheduleSpec spec;
  spec.arrival = dyno::load::Arrival::kConstant;
  spec.rate_per_s = 1e6;
  cfg.schedule = spec;
  std::atomic<bool> stop{false};
  dyno::load::RunHooks hooks;
  hooks.stop_requested = &stop;
  std::atomic<std::int64_t> stopped_at{0};
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stopped_at = steady_now_ns();
    stop = true;
  });
  const auto result = dyno::load::run_load(loop, target, stream(4), cfg, hooks);
  const std::int64_t returned = steady_now_ns();
  stopper.join();
  EXPECT_TRUE(result.interrupted);
  EXPECT_LT(result.traces.size(), 200'000u);
  // Answered within a second (a busy 2-core machine); before, the loop went on for seconds.
  EXPECT_LT(returned - stopped_at.load(), 1000 * kMs);
  EXPECT_EQ(target.in_flight, 0);
}

TEST(Runner, RejectsAnEmptyStreamOrNoLimit) {
  EventLoop loop;
  FakeTarget target(loop, kMs, 1);
  dyno::load::LoadConfig cfg;
  cfg.requests = 1;
  EXPECT_THROW(dyno::load::run_load(loop, target, {}, cfg, {}), std::invalid_argument);
  cfg.requests.reset();
  EXPECT_THROW(dyno::load::run_load(loop, target, stream(1), cfg, {}), std::invalid_argument);
}

}  // namespace

// --shard K/N (docs/scale.md): the shards together send what the whole run sends, each
// submission once, with the same request.
TEST(Runner, ClosedLoopShardsSplitTheSubmissionsOfTheWholeRun) {
  EXPECT_EQ(dyno::load::shard_count(10, {0, 3}), 4u);
  EXPECT_EQ(dyno::load::shard_count(10, {2, 3}), 3u);
  EXPECT_EQ(dyno::load::shard_count(1, {1, 2}), 0u);
  EXPECT_EQ(dyno::load::shard_concurrency(5, {0, 2}), 3u);
  EXPECT_EQ(dyno::load::shard_concurrency(5, {1, 2}), 2u);
  std::multiset<std::string> warmup, measured;
  std::uint32_t concurrency = 0;
  for (std::uint32_t k = 0; k < 3; ++k) {
    EventLoop loop;
    FakeTarget target(loop, 2 * kMs, 1);
    dyno::load::LoadConfig cfg;
    cfg.concurrency = 4;
    cfg.requests = 20;
    cfg.warmup = 3;
    cfg.shard = dyno::load::Shard{k, 3};
    concurrency += dyno::load::shard_share(cfg).concurrency;
    const auto result = dyno::load::run_load(loop, target, stream(7), cfg, {});
    EXPECT_LE(target.max_in_flight, k == 0 ? 2 : 1);
    for (std::size_t j = 0; j < result.traces.size(); ++j) {
      const auto& t = result.traces[j];
      const std::size_t i = k + j * 3;  // the whole run's submission number
      EXPECT_EQ(t.request_id, "r" + std::to_string(i % 7));
      EXPECT_EQ(t.phase, i < 3 ? "warmup" : "measured");
      (t.phase == "warmup" ? warmup : measured).insert(t.request_id);
    }
  }
  EXPECT_EQ(concurrency, 4u);
  EventLoop loop;
  FakeTarget target(loop, 2 * kMs, 1);
  dyno::load::LoadConfig cfg;
  cfg.concurrency = 4;
  cfg.requests = 20;
  cfg.warmup = 3;
  std::multiset<std::string> whole_warmup, whole_measured;
  for (const auto& t : dyno::load::run_load(loop, target, stream(7), cfg, {}).traces) {
    (t.phase == "warmup" ? whole_warmup : whole_measured).insert(t.request_id);
  }
  EXPECT_EQ(warmup, whole_warmup);
  EXPECT_EQ(measured, whole_measured);
}

TEST(Runner, OpenLoopShardsSendEveryNthArrivalOfTheSameSchedule) {
  dyno::load::ScheduleSpec spec;
  spec.rate_per_s = 200;
  spec.seed = 5;
  const std::vector<std::int64_t> whole = dyno::load::make_schedule(spec, 12, std::nullopt);
  for (std::uint32_t k = 0; k < 2; ++k) {
    EventLoop loop;
    FakeTarget target(loop, 2 * kMs, 1);
    dyno::load::LoadConfig cfg;
    cfg.open_loop = true;
    cfg.requests = 12;
    cfg.schedule = spec;
    cfg.shard = dyno::load::Shard{k, 2};
    const auto result = dyno::load::run_load(loop, target, stream(5), cfg, {});
    ASSERT_EQ(result.traces.size(), 6u);
    for (std::size_t j = 0; j < 6; ++j) {
      const std::size_t i = k + 2 * j;
      EXPECT_EQ(*result.traces[j].scheduled_ns - result.measured_start_ns, whole[i]);
      EXPECT_EQ(result.traces[j].request_id, "r" + std::to_string(i % 5));
    }
  }
}

namespace {

/// Every request fails at connect (a port nobody listens on) after `latency_ns`, until
/// `answer_after_ns` from its construction (0: never), when it starts answering again.
class RefusingTarget : public dyno::transport::Target {
 public:
  RefusingTarget(EventLoop& loop, std::int64_t latency_ns, std::int64_t answer_after_ns = 0)
      : loop_(loop),
        latency_ns_(latency_ns),
        born_(steady_now_ns()),
        answer_after_(answer_after_ns) {}
  std::unique_ptr<dyno::transport::PreparedRequest> prepare(
      const dyno::workload::Request& r) override {
    auto p = std::make_unique<FakePrepared>();
    p->id = r.id;
    return p;
  }
  void submit(const dyno::transport::PreparedRequest&, std::uint64_t submission,
              dyno::transport::StreamObserver& obs) override {
    ++submitted;
    const std::int64_t start = steady_now_ns();
    const bool back = answer_after_ > 0 && start - born_ >= answer_after_;
    if (back) obs.on_sent(start);
    pending_[submission] = {
        loop_.call_at(start + latency_ns_,
                      [this, &obs, back, submission] {
                        pending_.erase(submission);
                        const std::int64_t now = steady_now_ns();
                        if (!back) {
                          obs.on_error(now, dyno::transport::ErrorCategory::kConnect,
                                       "connect to 127.0.0.1:1 failed: refused", std::nullopt);
                          return;
                        }
                        obs.on_first_byte(now, 200);
                        obs.on_token_event(now, "tok", "");
                        obs.on_done(now, {"length", ""});
                      }),
        &obs};
  }
  void cancel_all() override {
    auto pending = std::move(pending_);
    pending_.clear();
    for (auto& [sub, p] : pending) {
      loop_.cancel_timer(p.first);
      p.second->on_error(steady_now_ns(), dyno::transport::ErrorCategory::kCancelled, "cancelled",
                         std::nullopt);
    }
  }
  int submitted = 0;

 private:
  EventLoop& loop_;
  std::int64_t latency_ns_;
  std::int64_t born_;
  std::int64_t answer_after_;
  std::map<std::uint64_t, std::pair<std::uint64_t, dyno::transport::StreamObserver*>> pending_;
};

/// A target that is gone: sending stops once connects have failed for unreachable_after_s with
/// no answer; refused slots pause (20 ms doubling to 1 s) rather than spin.
TEST(Runner, ATargetThatRefusesEveryConnectEndsTheRunUnreachable) {
  EventLoop loop;
  RefusingTarget target(loop, 1 * kMs);
  dyno::load::LoadConfig cfg;
  cfg.concurrency = 4;
  cfg.requests = 100000;
  cfg.unreachable_after_s = 0.5;
  const auto t0 = steady_now_ns();
  const auto result = dyno::load::run_load(loop, target, stream(3), cfg, {});
  const double took = static_cast<double>(steady_now_ns() - t0) * 1e-9;
  ASSERT_TRUE(result.unreachable.has_value());
  EXPECT_GE(result.unreachable->for_s, 0.5);
  EXPECT_LT(took, 5.0);
  EXPECT_GE(result.unreachable->failures, 4u);
  EXPECT_EQ(result.unreachable->last_message, "connect to 127.0.0.1:1 failed: refused");
  // Without the pause, 4 slots at 1 ms each would have tried ~2,000 times in 0.5 s.
  EXPECT_LT(target.submitted, 100);
  EXPECT_EQ(result.traces.size(), static_cast<std::size_t>(target.submitted));
}

/// A target that comes back within the window is not cut off.
TEST(Runner, ATargetThatComesBackWithinTheWindowIsNotCutOff) {
  EventLoop loop;
  RefusingTarget target(loop, 1 * kMs, 300 * kMs);
  dyno::load::LoadConfig cfg;
  cfg.concurrency = 2;
  cfg.duration_s = 1.5;
  cfg.unreachable_after_s = 1.0;
  const auto result = dyno::load::run_load(loop, target, stream(3), cfg, {});
  EXPECT_FALSE(result.unreachable.has_value());
  std::size_t ok = 0;
  for (const auto& t : result.traces) ok += t.ok() ? 1 : 0;
  EXPECT_GT(ok, 0u);
}

/// 0 turns the check off: the run ends by its own limits.
TEST(Runner, UnreachableAfterZeroNeverGivesUp) {
  EventLoop loop;
  RefusingTarget target(loop, 1 * kMs);
  dyno::load::LoadConfig cfg;
  cfg.concurrency = 1;
  cfg.duration_s = 0.3;
  cfg.unreachable_after_s = 0;
  const auto result = dyno::load::run_load(loop, target, stream(3), cfg, {});
  EXPECT_FALSE(result.unreachable.has_value());
  EXPECT_FALSE(result.traces.empty());
}

}  // namespace
