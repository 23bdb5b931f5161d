// EventTimes: the delta-coded store of a request's event times (metrics/event_times.h).
#include "metrics/event_times.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

using dyno::metrics::EventTimes;

TEST(EventTimes, RoundTripsAnySequenceIncludingExtremesAndBackwardSteps) {
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  std::vector<std::int64_t> times = {0, 1, kMax, kMin, -1, 0, kMin, kMax, 42, 41, 41};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 10000; ++i) times.push_back(static_cast<std::int64_t>(rng()));
  const EventTimes e(times);
  EXPECT_EQ(e.size(), times.size());
  EXPECT_EQ(e.front(), times.front());
  EXPECT_EQ(e.back(), times.back());
  EXPECT_EQ(e.to_vector(), times);
  EXPECT_TRUE(e == times);
  std::size_t n = 0;
  for (auto it = e.begin(); it != e.end(); ++it) EXPECT_EQ(*it, times[n++]);
  EXPECT_EQ(n, times.size());
}

TEST(EventTimes, EmptyAndCleared) {
  EventTimes e;
  EXPECT_TRUE(e.empty());
  EXPECT_EQ(e.begin(), e.end());
  e = {5, 6};
  EXPECT_EQ(e.to_vector(), (std::vector<std::int64_t>{5, 6}));
  e.clear();
  EXPECT_TRUE(e.empty());
  EXPECT_EQ(e.encoded_bytes(), 0u);
  e.push_back(9);  // after clear, the first time is coded from 0 again
  EXPECT_EQ(e.to_vector(), (std::vector<std::int64_t>{9}));
  EXPECT_EQ(e.front(), 9);
}

TEST(EventTimes, ShiftMovesEveryTime) {
  EventTimes e = {100, 250, 240, 1'000'000};
  e.shift(-300);
  EXPECT_EQ(e.to_vector(), (std::vector<std::int64_t>{-200, -50, -60, 999'700}));
  EXPECT_EQ(e.front(), -200);
  EXPECT_EQ(e.back(), 999'700);
  EXPECT_EQ(e, (EventTimes{-200, -50, -60, 999'700}));
}

TEST(EventTimes, SubMillisecondGapsTakeThreeBytesEach) {
  // A 20,000-event answer 100 s into a run, one event every 0.7 ms: 3 bytes per gap, not 8.
  EventTimes e;
  std::int64_t t = 100'000'000'000;
  for (int i = 0; i < 20000; ++i) {
    e.push_back(t);
    t += 700'000 + (i % 7) * 1000;
  }
  EXPECT_LE(e.encoded_bytes(), 6u + 3u * 19999u);
  EXPECT_GT(e.encoded_bytes(), 2u * 19999u);
}
