// The run loop's sessions (load/runner.h): a session's turns one after another, each sent its
// think time after the previous answer, with the conversation so far.
#include <cmath>

#include "load/run_loop.h"

namespace dyno::load {

bool Run::start_session(bool warmup, std::optional<std::int64_t> scheduled_abs,
                        std::optional<std::size_t> plan) {
  if (!budget_left(warmup)) return false;
  std::size_t p = 0;
  if (plan) {
    p = *plan;  // a replay names the session
  } else {
    if (!config_.cycle && next_session_ >= sessions_.size()) return false;
    p = next_session_++ % sessions_.size();
  }
  const std::uint64_t ordinal = result_.sessions_started++;
  ActiveSession& s = active_[ordinal];
  s.plan = p;
  s.ordinal = ordinal;
  s.warmup = warmup;
  // Closed loop, and the warm-up of either loop: the session holds a slot of the concurrency.
  s.holds_slot = warmup || !config_.open_loop;
  send_turn(s, scheduled_abs);
  return true;
}

void Run::send_turn(ActiveSession& s, std::optional<std::int64_t> scheduled_abs) {
  const workload::SessionPlan& plan = sessions_[s.plan];
  const std::size_t pos = plan.turns[s.next];
  std::unique_ptr<transport::PreparedRequest> wire =
      target_.prepare(s.conversation.request_for(requests_[pos]));
  metrics::Trace& t = new_trace(s.warmup ? "warmup" : "measured", scheduled_abs, pos);
  t.session = plan.id;
  t.session_run = s.ordinal;
  t.turn = static_cast<std::int64_t>(s.next);
  t.session_turns = static_cast<std::int64_t>(plan.turns.size());
  ++s.next;
  RequestObserver& obs = observers_.emplace_back(*this, t.index, t);
  const transport::PreparedRequest& sent = *(turn_wire_[t.index] = std::move(wire));
  target_.submit(sent, t.index, obs);
}

void Run::take_answer(metrics::Trace& t) {
  if (t.session_run) {
    // The target may still hold the wire form until this callback returns: it is freed at the
    // next request's end (Run::finished), never from a posted task that could outlive the run.
    if (auto node = turn_wire_.extract(t.index)) retired_wire_.push_back(std::move(node.mapped()));
    const auto it = active_.find(*t.session_run);
    if (t.ok() && it != active_.end()) {
      // The answer as streamed back is the next turn's assistant message.
      it->second.conversation.answered(config_.keep_output_text ? t.output_text
                                                                : std::move(t.output_text));
    }
  }
  if (!config_.keep_output_text) t.output_text.clear();
}

void Run::after_turn(const metrics::Trace& t) {
  const auto it = t.session_run ? active_.find(*t.session_run) : active_.end();
  if (it != active_.end()) {
    ActiveSession& s = it->second;
    const workload::SessionPlan& plan = sessions_[s.plan];
    const bool refused = !t.ok() && refused_before_serving(t);
    if (!refused) refused_in_a_row_ = 0;
    if (!t.ok() || s.next >= plan.turns.size() || !budget_left(s.warmup)) {
      end_session(s.ordinal, refused);  // done, failed (it stops with its error), or cut
    } else {
      const workload::Request& next = requests_[plan.turns[s.next]];
      const double think_ms = next.turn->think_ms.value_or(0.0);
      // The pause runs from the answer's end as stamped (the trace's done time).
      const std::int64_t now = transport::steady_now_ns();
      const std::int64_t ended = t.done_ns ? result_.t0_steady_ns + *t.done_ns : now;
      const std::int64_t due = ended + static_cast<std::int64_t>(std::llround(think_ms * 1e6));
      const bool past_duration =
          !s.warmup && config_.duration_s &&
          due >= measured_start_abs_ + static_cast<std::int64_t>(*config_.duration_s * 1e9);
      if (past_duration) {
        end_session(s.ordinal);  // its next turn would come after the run's end
      } else if (due <= now) {
        send_turn(s, due);
      } else {
        ++think_waits_;
        s.think_timer = loop_.call_at(due, [this, ordinal = s.ordinal, due] {
          --think_waits_;
          const auto found = active_.find(ordinal);
          if (found != active_.end()) {
            found->second.think_timer = 0;
            if (budget_left(found->second.warmup)) {
              send_turn(found->second, due);  // scheduled: when the user sends it
            } else {
              end_session(ordinal);
            }
          }
          settle();
        });
      }
    }
  }
  settle();
}

void Run::settle() {
  // The warm-up's last turn ended and no warm-up session waits to send: measure.
  if (warmup_phase_ && !stopping_ && !engine_has_exited() && in_flight_ == 0 && think_waits_ == 0) {
    return start_measured();
  }
  maybe_end();
}

void Run::end_session(std::uint64_t ordinal, bool refused) {
  auto node = active_.extract(ordinal);
  if (node.empty()) return;
  ActiveSession& s = node.mapped();
  if (s.think_timer != 0) {
    loop_.cancel_timer(s.think_timer);
    --think_waits_;
  }
  if (!s.holds_slot) return;
  if (s.warmup) {
    if (warmup_phase_) start_session(true, std::nullopt);
  } else if (!config_.open_loop && refused) {
    pause_slot([this] {
      if (!stopping_) start_session(false, std::nullopt);
    });
  } else if (!config_.open_loop) {
    start_session(false, std::nullopt);
  }
}

void Run::cut_waiting_sessions() {
  for (auto it = active_.begin(); it != active_.end();) {
    if (it->second.think_timer != 0) {
      loop_.cancel_timer(it->second.think_timer);
      --think_waits_;
      it = active_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace dyno::load
