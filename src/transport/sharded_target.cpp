#include "transport/sharded_target.h"

#include <pthread.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <ctime>
#include <future>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

namespace dyno::transport {

namespace asio = boost::asio;
using WorkGuard = asio::executor_work_guard<asio::io_context::executor_type>;

struct ShardedTarget::Shard {
  Shard(const HttpTargetConfig& config)
      : target(loop, config), guard(asio::make_work_guard(loop.context())) {}
  EventLoop loop;
  HttpTarget target;
  std::optional<WorkGuard> guard;  // the shard's loop runs until the target goes
  std::thread thread;
  clockid_t cpu_clock{};
  bool has_clock = false;
  std::size_t in_flight = 0;  // home thread only: submitted, end not yet handled at home
};

struct ShardedTarget::HomeWork {
  explicit HomeWork(EventLoop& home) : guard(asio::make_work_guard(home.context())) {}
  WorkGuard guard;
};

// Stands between the shard's HttpTarget and the run's observer (see the header).
class ShardedTarget::Relay final : public StreamObserver {
 public:
  Relay(ShardedTarget& owner, Shard& shard, StreamObserver& observer)
      : owner_(owner), shard_(shard), observer_(observer) {}
  Shard& shard() { return shard_; }

  void on_sent(std::int64_t t_ns) override { observer_.on_sent(t_ns); }
  void on_first_byte(std::int64_t t_ns, int http_status) override {
    observer_.on_first_byte(t_ns, http_status);
  }
  void on_token_event(std::int64_t t_ns, std::string_view content,
                      std::string_view reasoning) override {
    observer_.on_token_event(t_ns, content, reasoning);
  }
  void on_usage(const Usage& usage) override { observer_.on_usage(usage); }
  void on_done(std::int64_t t_ns, const DoneInfo& info) override {
    owner_.home_.post_threadsafe([this, t_ns, info] {
      StreamObserver& observer = observer_;
      owner_.finished(this);  // before the observer: it may submit again from on_done
      observer.on_done(t_ns, info);
    });
  }
  void on_error(std::int64_t t_ns, ErrorCategory category, std::string_view message,
                std::optional<int> http_status) override {
    owner_.home_.post_threadsafe([this, t_ns, category, text = std::string(message), http_status] {
      StreamObserver& observer = observer_;
      owner_.finished(this);
      observer.on_error(t_ns, category, text, http_status);
    });
  }

 private:
  ShardedTarget& owner_;
  Shard& shard_;
  StreamObserver& observer_;
};

namespace {

// Runs `fn` on `loop`'s thread and waits for it.
template <typename Fn>
auto run_on(EventLoop& loop, Fn fn) {
  std::packaged_task<decltype(fn())()> task(std::move(fn));
  auto done = task.get_future();
  loop.post_threadsafe([&task] { task(); });
  return done.get();
}

}  // namespace

ShardedTarget::ShardedTarget(EventLoop& home, const HttpTargetConfig& config, unsigned shards)
    : home_(home), preparer_(home, config) {
  if (shards < 1) throw std::invalid_argument("--client-threads must be at least 1");
  for (unsigned i = 0; i < shards; ++i) {
    auto shard = std::make_unique<Shard>(config);
    Shard* s = shard.get();
    s->thread = std::thread([s] { s->loop.run(); });
    s->has_clock = ::pthread_getcpuclockid(s->thread.native_handle(), &s->cpu_clock) == 0;
    shards_.push_back(std::move(shard));
  }
}

ShardedTarget::~ShardedTarget() {
  for (auto& s : shards_) {
    s->loop.post_threadsafe([shard = s.get()] { shard->guard.reset(); });
    s->loop.stop();
  }
  for (auto& s : shards_) {
    if (s->thread.joinable()) s->thread.join();
  }
}

std::unique_ptr<PreparedRequest> ShardedTarget::prepare(const workload::Request& request) {
  return preparer_.prepare(request);
}

void ShardedTarget::submit(const PreparedRequest& request, std::uint64_t submission,
                           StreamObserver& observer) {
  Shard* best = shards_.front().get();
  for (auto& s : shards_) {
    if (s->in_flight < best->in_flight) best = s.get();
  }
  auto relay = std::make_unique<Relay>(*this, *best, observer);
  Relay* r = relay.get();
  relays_.emplace(r, std::move(relay));
  ++best->in_flight;
  if (!home_work_) home_work_ = std::make_unique<HomeWork>(home_);
  best->loop.post_threadsafe(
      [best, &request, submission, r] { best->target.submit(request, submission, *r); });
}

void ShardedTarget::finished(Relay* relay) {
  --relay->shard().in_flight;
  relays_.erase(relay);
  if (relays_.empty()) home_work_.reset();
}

void ShardedTarget::cancel_all() {
  for (auto& s : shards_) {
    run_on(s->loop, [shard = s.get()] { shard->target.cancel_all(); });
  }
}

std::uint64_t ShardedTarget::connections_opened() {
  std::uint64_t n = 0;
  for (auto& s : shards_) {
    n += run_on(s->loop, [shard = s.get()] { return shard->target.connections_opened(); });
  }
  return n;
}

double ShardedTarget::shards_cpu_s() const {
  double total = 0.0;
  for (const auto& s : shards_) {
    timespec ts{};
    if (s->has_clock && ::clock_gettime(s->cpu_clock, &ts) == 0) {
      total += static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
    }
  }
  return total;
}

}  // namespace dyno::transport
