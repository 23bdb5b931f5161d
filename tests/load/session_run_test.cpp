// Sessions and replays in the run loop, against a fake target that answers each turn with a
// text derived from what it was sent (so feeding back can be checked exactly).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <set>

#include "load/runner.h"
#include "transport/event_loop.h"
#include "workload/sessions.h"

namespace {

using dyno::transport::EventLoop;
using dyno::transport::steady_now_ns;
using dyno::workload::Request;

constexpr std::int64_t kMs = 1'000'000;

struct Sent : dyno::transport::PreparedRequest {
  Request request;
};

/// Answers every request after `latency_ns` with the text "answer to <id>" in two events (or
/// fails the ids in `fail`); keeps every request it was sent.
class EchoTarget : public dyno::transport::Target {
 public:
  EchoTarget(EventLoop& loop, std::int64_t latency_ns) : loop_(loop), latency_ns_(latency_ns) {}

  std::unique_ptr<dyno::transport::PreparedRequest> prepare(const Request& r) override {
    auto p = std::make_unique<Sent>();
    p->request = r;
    return p;
  }

  void submit(const dyno::transport::PreparedRequest& req, std::uint64_t submission,
              dyno::transport::StreamObserver& obs) override {
    const Request& r = static_cast<const Sent&>(req).request;
    sent.push_back(r);
    sent_at[r.id] = steady_now_ns();
    ++in_flight;
    max_in_flight = std::max(max_in_flight, in_flight);
    obs.on_sent(steady_now_ns());
    const bool failing = fail.count(r.id) != 0;
    const std::string id = r.id;
    const std::uint64_t timer = loop_.call_at(steady_now_ns() + latency_ns_, [=, this, &obs] {
      pending_.erase(submission);
      --in_flight;
      const std::int64_t now = steady_now_ns();
      if (refuse) {
        obs.on_error(now, dyno::transport::ErrorCategory::kConnect,
                     "connect to 127.0.0.1:1 failed: refused", std::nullopt);
        return;
      }
      obs.on_first_byte(now, failing ? 500 : 200);
      if (failing) {
        obs.on_error(now, dyno::transport::ErrorCategory::kHttpStatus, "500", 500);
        return;
      }
      obs.on_token_event(now, "answer to ", "");
      obs.on_token_event(now + 1, id + " \"q\"\n", "");
      dyno::transport::Usage u;
      u.prompt_tokens = 10;
      u.completion_tokens = 2;
      obs.on_usage(u);
      obs.on_done(now + 2, {"length", ""});
      done_at[id] = now + 2;
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

  std::vector<Request> sent;
  std::map<std::string, std::int64_t> sent_at, done_at;
  std::set<std::string> fail;
  bool refuse = false;  ///< every connection refused (a server that is gone)
  int in_flight = 0;
  int max_in_flight = 0;

 private:
  EventLoop& loop_;
  std::int64_t latency_ns_;
  std::map<std::uint64_t, std::pair<std::uint64_t, dyno::transport::StreamObserver*>> pending_;
};

/// `sessions` sessions "s0", "s1", … of `turns` turns; turn k of session s has id "s<s>t<k>".
std::vector<Request> session_stream(int sessions, int turns, double think_ms = 0) {
  std::vector<Request> v;
  for (int t = 0; t < turns; ++t) {
    for (int s = 0; s < sessions; ++s) {
      Request r;
      r.id = "s" + std::to_string(s) + "t" + std::to_string(t);
      r.messages = {{"user", "question " + r.id}};
      r.turn = dyno::workload::Turn{"s" + std::to_string(s), t, std::nullopt, "", ""};
      if (t > 0) r.turn->think_ms = think_ms;
      v.push_back(r);
    }
  }
  return v;
}

const Request* sent_request(const EchoTarget& target, const std::string& id) {
  for (const auto& r : target.sent) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

TEST(SessionRun, EachTurnCarriesTheConversationWithTheActualAnswers) {
  EventLoop loop;
  EchoTarget target(loop, 2 * kMs);
  dyno::load::LoadConfig cfg;
  cfg.concurrency = 2;
  cfg.requests = 9;
  cfg.cycle = false;
  const auto result = dyno::load::run_load(loop, target, session_stream(3, 3), cfg, {});
  ASSERT_EQ(result.traces.size(), 9u);
  EXPECT_EQ(result.sessions_started, 3u);
  EXPECT_LE(target.max_in_flight, 2);  // C sessions, each one turn at a time
  const Request* third = sent_request(target, "s1t2");
  ASSERT_NE(third, nullptr);
  ASSERT_EQ(third->messages.size(), 5u);
  EXPECT_EQ(third->messages[0].content, "question s1t0");
  EXPECT_EQ(third->messages[1].role, "assistant");
  EXPECT_EQ(third->messages[1].content, "answer to s1t0 \"q\"\n");  // verbatim, as streamed
  EXPECT_EQ(third->messages[2].content, "question s1t1");
  EXPECT_EQ(third->messages[3].content, "answer to s1t1 \"q\"\n");
  EXPECT_EQ(third->messages[4].content, "question s1t2");
  for (const auto& t : result.traces) {
    EXPECT_TRUE(t.ok());
    ASSERT_TRUE(t.turn && t.session_run && t.session_turns);
    EXPECT_EQ(t.request_id, t.session + "t" + std::to_string(*t.turn));
    EXPECT_EQ(*t.session_turns, 3);
    EXPECT_TRUE(t.output_text.empty());  // not kept: used only to feed the next turn
  }
  // A session's turns never overlap: turn n+1 is sent after turn n ended.
  for (int s = 0; s < 3; ++s) {
    for (int k = 1; k < 3; ++k) {
      const std::string prev = "s" + std::to_string(s) + "t" + std::to_string(k - 1);
      const std::string cur = "s" + std::to_string(s) + "t" + std::to_string(k);
      EXPECT_GE(target.sent_at[cur], target.done_at[prev]);
    }
  }
}

TEST(SessionRun, ThinkTimeSeparatesAnAnswerFromTheNextTurn) {
  EventLoop loop;
  EchoTarget target(loop, 1 * kMs);
  dyno::load::LoadConfig cfg;
  cfg.concurrency = 1;
  cfg.requests = 3;
  cfg.keep_output_text = true;
  const auto result = dyno::load::run_load(loop, target, session_stream(1, 3, 40), cfg, {});
  ASSERT_EQ(result.traces.size(), 3u);
  for (std::size_t i = 1; i < 3; ++i) {
    const auto& prev = result.traces[i - 1];
    const auto& t = result.traces[i];
    // Scheduled exactly think_ms after the previous answer ended; sent then, not before.
    EXPECT_EQ(*t.scheduled_ns, *prev.done_ns + 40 * kMs);
    EXPECT_GE(*t.sent_ns, *t.scheduled_ns);
    EXPECT_LT(*t.sent_ns - *t.scheduled_ns, 30 * kMs);  // tolerant: a busy machine
  }
  EXPECT_EQ(result.traces[0].output_text, "answer to s0t0 \"q\"\n");  // kept when asked
}

TEST(SessionRun, AFailedTurnEndsItsSessionAndTheCountCutsTheLast) {
  EventLoop loop;
  EchoTarget target(loop, 1 * kMs);
  target.fail.insert("s0t1");
  dyno::load::LoadConfig cfg;
  cfg.concurrency = 1;
  cfg.requests = 4;
  const auto result = dyno::load::run_load(loop, target, session_stream(3, 3), cfg, {});
  std::vector<std::string> ids;
  for (const auto& r : target.sent) ids.push_back(r.id);
  // s0 stops at its failed turn; s1 runs whole; s2 is cut when 4 turns were sent.
  EXPECT_EQ(ids, (std::vector<std::string>{"s0t0", "s0t1", "s1t0", "s1t1"}));
  EXPECT_EQ(result.traces[1].status, dyno::metrics::RequestStatus::kError);
}

TEST(SessionRun, WarmupTurnsComeFirstAndTheMeasuredPhaseStartsAFreshSession) {
  EventLoop loop;
  EchoTarget target(loop, 1 * kMs);
  dyno::load::LoadConfig cfg;
  cfg.concurrency = 1;
  cfg.warmup = 2;
  cfg.requests = 3;
  cfg.cycle = false;
  const auto result = dyno::load::run_load(loop, target, session_stream(2, 3), cfg, {});
  std::vector<std::string> ids;
  for (const auto& r : target.sent) ids.push_back(r.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"s0t0", "s0t1", "s1t0", "s1t1", "s1t2"}));
  EXPECT_EQ(result.traces[1].phase, "warmup");
  EXPECT_EQ(result.traces[2].phase, "measured");
  EXPECT_EQ(*result.traces[2].session_run, 1u);
  // Without cycling, a session runs once: the run ends when the sessions are spent.
  dyno::load::LoadConfig once;
  once.concurrency = 2;
  once.requests = 100;
  once.cycle = false;
  EventLoop loop2;
  EchoTarget target2(loop2, 1 * kMs);
  EXPECT_EQ(dyno::load::run_load(loop2, target2, session_stream(2, 2), once, {}).traces.size(), 4u);
}

TEST(SessionRun, OpenLoopStartsSessionsAtArrivals) {
  EventLoop loop;
  EchoTarget target(loop, 30 * kMs);
  dyno::load::LoadConfig cfg;
  cfg.open_loop = true;
  cfg.requests = 6;
  dyno::load::ScheduleSpec spec;
  spec.arrival = dyno::load::Arrival::kConstant;
  spec.rate_per_s = 100;
  cfg.schedule = spec;
  const auto result = dyno::load::run_load(loop, target, session_stream(3, 2), cfg, {});
  ASSERT_EQ(result.traces.size(), 6u);
  EXPECT_EQ(result.sessions_started, 3u);
  EXPECT_EQ(target.max_in_flight, 3);  // every session's first turn in flight at once
}

TEST(SessionRun, AnInterruptDuringAThinkEndsTheRunAtOnce) {
  EventLoop loop;
  EchoTarget target(loop, 1 * kMs);
  dyno::load::LoadConfig cfg;
  cfg.concurrency = 1;
  cfg.requests = 3;
  std::atomic<bool> stop{false};
  dyno::load::RunHooks hooks;
  hooks.stop_requested = &stop;
  hooks.on_finished = [&](const dyno::metrics::Trace&) { stop = true; };
  const auto start = steady_now_ns();
  const auto result = dyno::load::run_load(loop, target, session_stream(1, 3, 60'000), cfg, hooks);
  EXPECT_LT(steady_now_ns() - start, 5'000 * kMs);  // not the minute of thinking
  EXPECT_TRUE(result.interrupted);
  EXPECT_EQ(result.traces.size(), 1u);
}

std::vector<Request> timed_stream(const std::vector<double>& at_ms) {
  std::vector<Request> v;
  for (std::size_t i = 0; i < at_ms.size(); ++i) {
    Request r;
    r.id = "q" + std::to_string(i);
    r.messages = {{"user", "x"}};
    r.at_ms = at_ms[i];
    v.push_back(r);
  }
  return v;
}

std::vector<std::int64_t> sent_offsets(const dyno::load::LoadResult& result) {
  std::vector<std::int64_t> out;
  for (const auto& t : result.traces) out.push_back(*t.scheduled_ns - result.measured_start_ns);
  return out;
}

TEST(Replay, SendsEachRequestAtItsScaledTimeInsideTheWindow) {
  const auto stream = timed_stream({60, 0, 30, 90});  // not in time order in the file
  {
    EventLoop loop;
    EchoTarget target(loop, 1 * kMs);
    dyno::load::LoadConfig cfg;
    cfg.open_loop = true;
    cfg.requests = 4;
    cfg.replay = dyno::load::Replay{};
    const auto result = dyno::load::run_load(loop, target, stream, cfg, {});
    EXPECT_EQ(sent_offsets(result), (std::vector<std::int64_t>{0, 30 * kMs, 60 * kMs, 90 * kMs}));
    std::vector<std::string> ids;
    for (const auto& t : result.traces) {
      ids.push_back(t.request_id);
      EXPECT_LT(*t.sent_ns - *t.scheduled_ns, 20 * kMs);
    }
    EXPECT_EQ(ids, (std::vector<std::string>{"q1", "q2", "q0", "q3"}));
  }
  {
    EventLoop loop;
    EchoTarget target(loop, 1 * kMs);
    dyno::load::LoadConfig cfg;
    cfg.open_loop = true;
    cfg.requests = 4;
    cfg.replay = dyno::load::Replay{0.5, 30.0, 90.0};  // [30, 90) twice as fast
    const auto result = dyno::load::run_load(loop, target, stream, cfg, {});
    EXPECT_EQ(sent_offsets(result), (std::vector<std::int64_t>{0, 15 * kMs}));
  }
  {
    EventLoop loop;
    EchoTarget target(loop, 1 * kMs);
    dyno::load::LoadConfig cfg;
    cfg.open_loop = true;
    cfg.requests = 4;
    cfg.replay = dyno::load::Replay{};
    auto missing = stream;
    missing[2].at_ms.reset();
    EXPECT_THROW(dyno::load::run_load(loop, target, missing, cfg, {}), std::invalid_argument);
  }
}

/// A closed loop of sessions against a server that refuses every connection: each slot waits
/// (20 ms doubling to 1 s) before its next session, so the port is not hammered while the
/// unreachable window runs; the run ends unreachable.
TEST(SessionRun, RefusedSessionsPauseTheirSlotAndTheRunEndsUnreachable) {
  EventLoop loop;
  EchoTarget target(loop, 1 * kMs);
  target.refuse = true;
  dyno::load::LoadConfig cfg;
  cfg.concurrency = 4;
  cfg.requests = 100000;
  cfg.cycle = true;
  cfg.unreachable_after_s = 0.5;
  const auto t0 = steady_now_ns();
  const auto result = dyno::load::run_load(loop, target, session_stream(3, 3), cfg, {});
  const double took = static_cast<double>(steady_now_ns() - t0) * 1e-9;
  ASSERT_TRUE(result.unreachable.has_value());
  EXPECT_LT(took, 5.0);
  // Without the pause, 4 slots at 1 ms each would have started ~2,000 sessions in 0.5 s.
  EXPECT_LT(target.sent.size(), 100u);
}

}  // namespace
