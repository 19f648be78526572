// waitUntil: a wait bounded by a timer on the injected clock, so tests move time by hand.
#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "common/clock.h"

namespace gdrmesh {
namespace {

TEST(ClockWaitUntil, ADeadlineOnAManualClockEndsTheWaitWhenTheClockMoves) {
  ManualClock clock;
  std::mutex mu;
  std::condition_variable cv;
  const Clock::TimePoint deadline = clock.after(3600);  // an hour: never reached in real time
  auto waited = std::async(std::launch::async, [&] {
    std::unique_lock<std::mutex> lock(mu);
    return waitUntil(clock, lock, cv, deadline, [] { return false; });
  });
  // Whether the waiter has armed its timer yet or not, moving past the deadline ends the wait.
  clock.advanceSeconds(3600);
  EXPECT_FALSE(waited.get());
  EXPECT_EQ(clock.pendingTimers(), 0u);
}

TEST(ClockWaitUntil, TheConditionEndsTheWaitAndCancelsTheTimer) {
  ManualClock clock;
  std::mutex mu;
  std::condition_variable cv;
  bool ready = false;
  std::promise<void> armed;
  auto waited = std::async(std::launch::async, [&] {
    std::unique_lock<std::mutex> lock(mu);
    armed.set_value();  // the wait starts before this lock is released
    return waitUntil(clock, lock, cv, clock.after(60), [&] { return ready; });
  });
  armed.get_future().wait();
  {
    std::lock_guard<std::mutex> lock(mu);
    ready = true;
  }
  cv.notify_all();
  EXPECT_TRUE(waited.get());
  EXPECT_EQ(clock.pendingTimers(), 0u) << "the timer of an ended wait stays armed";
}

TEST(ClockWaitUntil, APastDeadlineReturnsAtOnceWithTheCondition) {
  ManualClock clock;
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lock(mu);
  EXPECT_FALSE(waitUntil(clock, lock, cv, clock.now(), [] { return false; }));
  EXPECT_TRUE(waitUntil(clock, lock, cv, clock.now(), [] { return true; }));
  EXPECT_EQ(clock.pendingTimers(), 0u);
}

}  // namespace
}  // namespace gdrmesh
