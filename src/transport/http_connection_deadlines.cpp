// A connection's deadlines: one timer per connection, set to the earliest of connect, first
// token, total, idle and the drain grace after [DONE] (rearm), and what each does when it
// fires (on_timer); and the idle-close timer of a connection waiting in the pool.
#include <array>
#include <charconv>
#include <chrono>
#include <limits>
#include <string>

#include "transport/http_connection.h"

namespace dyno::transport::http {

namespace {

// After [DONE], how long to wait for the end of the body (to keep the connection) before
// reporting done and closing it.
constexpr std::int64_t kDrainGraceNs = 1'000'000'000;

std::string seconds_text(std::int64_t ns) {
  std::array<char, 32> buf{};
  const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(),
                                       static_cast<double>(ns) * 1e-9, std::chars_format::fixed, 3);
  return std::string(buf.data(), end) + " s";
}

}  // namespace

void Connection::arm_idle_close(std::int64_t after_ns) {
  const std::uint64_t timer_generation = ++timer_generation_;
  deadline_kind_ = Deadline::kIdleClose;
  timer_.expires_after(std::chrono::nanoseconds(after_ns));
  timer_.async_wait([self = shared_from_this(), timer_generation](const error_code& ec) {
    if (ec || timer_generation != self->timer_generation_ || self->in_flight()) return;
    self->close();
    if (self->pool_ != nullptr) self->pool_->drop(self.get());
  });
}

void Connection::rearm() {
  std::int64_t deadline = std::numeric_limits<std::int64_t>::max();
  Deadline kind = Deadline::kNone;
  const auto consider = [&](std::int64_t at, Deadline what) {
    if (at < deadline) {
      deadline = at;
      kind = what;
    }
  };
  const HttpTargetConfig& config = pool_->config();
  const DecodeProgress& progress = decoder_->progress();
  if (connecting_) {
    consider(connect_started_ns_ + std::chrono::nanoseconds(config.connect_timeout).count(),
             Deadline::kConnect);
  }
  if (sent_) {
    if (request_->first_token_ns > 0 && !progress.first_token && !progress.done) {
      consider(sent_ns_ + request_->first_token_ns, Deadline::kFirstToken);
    }
    if (request_->total_ns > 0) consider(sent_ns_ + request_->total_ns, Deadline::kTotal);
    if (config.idle_timeout && config.idle_timeout->count() > 0 && progress.first_token &&
        !progress.done) {
      consider(progress.last_token_ns + std::chrono::nanoseconds(*config.idle_timeout).count(),
               Deadline::kIdle);
    }
  }
  if (progress.done) consider(progress.done_ns + kDrainGraceNs, Deadline::kDrain);
  const std::uint64_t timer_generation = ++timer_generation_;
  if (kind == Deadline::kNone) {
    timer_.cancel();
    return;
  }
  deadline_kind_ = kind;
  timer_.expires_at(std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline)));
  timer_.async_wait([self = shared_from_this(), timer_generation](const error_code& ec) {
    self->on_timer(timer_generation, ec);
  });
}

void Connection::on_timer(std::uint64_t timer_generation, const error_code& ec) {
  if (ec || pool_ == nullptr || timer_generation != timer_generation_ || observer_ == nullptr) {
    return;
  }
  const HttpTargetConfig& config = pool_->config();
  const std::int64_t t_ns = steady_now_ns();
  const std::optional<int> status = status_ != 0 ? std::optional<int>(status_) : std::nullopt;
  const DecodeProgress& progress = decoder_->progress();
  switch (deadline_kind_) {
    case Deadline::kConnect:
      fail(t_ns, ErrorCategory::kTimeout,
           "connect timeout after " + std::to_string(config.connect_timeout.count()) +
               " ms (--connect-timeout)",
           std::nullopt, false);
      break;
    case Deadline::kFirstToken:
      fail(t_ns, ErrorCategory::kTimeout,
           "first-token timeout: no token " + seconds_text(request_->first_token_ns) +
               " after the request was sent (" + request_->first_token_source + ")",
           status, false);
      break;
    case Deadline::kTotal:
      if (progress.done) {
        complete(progress.done_ns, false);
      } else {
        fail(t_ns, ErrorCategory::kTimeout,
             "total timeout: not done " + seconds_text(request_->total_ns) +
                 " after the request was sent (" + request_->total_source + ")",
             status, false);
      }
      break;
    case Deadline::kIdle: {
      const std::int64_t idle_ns = std::chrono::nanoseconds(*config.idle_timeout).count();
      if (t_ns < progress.last_token_ns + idle_ns) {
        rearm();  // a token came since the timer was set: wait from that one
      } else {
        fail(t_ns, ErrorCategory::kTimeout,
             "idle timeout: no token for " + seconds_text(idle_ns) +
                 " after the last one (--idle-timeout)",
             status, false);
      }
      break;
    }
    case Deadline::kDrain:
      complete(progress.done_ns, false);
      break;
    case Deadline::kIdleClose:
    case Deadline::kNone:
      break;
  }
}

}  // namespace dyno::transport::http
