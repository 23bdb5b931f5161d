#include "transport/event_loop.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace dyno::transport {
namespace {

TEST(EventLoop, TimersRunInTimeOrderAndRunWaitsForThem) {
  EventLoop loop;
  std::vector<int> order;
  const std::int64_t now = steady_now_ns();
  loop.call_at(now + 30'000'000, [&] { order.push_back(3); });
  loop.call_at(now + 10'000'000, [&] { order.push_back(1); });
  loop.call_at(now - 1'000'000, [&] { order.push_back(0); });  // already due
  const auto cancelled = loop.call_at(now + 20'000'000, [&] { order.push_back(2); });
  loop.cancel_timer(cancelled);
  loop.cancel_timer(cancelled);  // no effect the second time
  loop.post([&] { order.push_back(-1); });
  loop.run();  // returns only once every pending timer ran
  EXPECT_EQ(order, (std::vector<int>{-1, 0, 1, 3}));
  EXPECT_GE(steady_now_ns() - now, 30'000'000);
}

TEST(EventLoop, TimerIdsAreNeverReusedAndCancelFromACallbackWorks) {
  EventLoop loop;
  const std::int64_t now = steady_now_ns();
  bool second_ran = false;
  std::uint64_t second = 0;
  const auto first = loop.call_at(now, [&] { loop.cancel_timer(second); });
  second = loop.call_at(now + 5'000'000, [&] { second_ran = true; });
  EXPECT_NE(first, second);
  loop.run();
  EXPECT_FALSE(second_ran);
  const auto third = loop.call_at(now, [] {});
  EXPECT_GT(third, second);
  loop.run();
}

TEST(EventLoop, StopAndPostFromAnotherThread) {
  EventLoop loop;
  const auto far = loop.call_at(steady_now_ns() + 60'000'000'000, [] {});
  bool posted = false;
  std::thread other([&] {
    loop.post_threadsafe([&] { posted = true; });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    loop.stop();
  });
  loop.run();  // the 60 s timer would keep it running; stop() ends it
  other.join();
  EXPECT_TRUE(posted);
  loop.cancel_timer(far);
  loop.run();  // runnable again after stop(); nothing left, returns at once
}

TEST(EventLoop, SteadyNowIsMonotonic) {
  const std::int64_t a = steady_now_ns();
  const std::int64_t b = steady_now_ns();
  EXPECT_LE(a, b);
  EXPECT_GT(a, 0);
}

}  // namespace
}  // namespace dyno::transport
