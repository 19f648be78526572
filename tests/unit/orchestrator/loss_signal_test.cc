// LossSignal: the loss of a worker as a one-shot event with RAII subscriptions.
#include "coordinator/orchestrator/loss_signal.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gdrmesh {
namespace {

TEST(LossSignal, FiresEachSubscriberOnceWithTheReason) {
  LossSignal s;
  std::vector<std::string> heard;
  auto a = s.subscribe([&](const std::string& r) { heard.push_back("a " + r); });
  auto b = s.subscribe([&](const std::string& r) { heard.push_back("b " + r); });
  EXPECT_EQ(s.subscribers(), 2u);
  EXPECT_TRUE(s.fire("(disconnected)"));
  EXPECT_FALSE(s.fire("(again)"));
  EXPECT_EQ(heard, (std::vector<std::string>{"a (disconnected)", "b (disconnected)"}));
  EXPECT_EQ(s.subscribers(), 0u);
  EXPECT_TRUE(s.fired());
}

TEST(LossSignal, ASubscriberAfterTheLossHearsOfItInline) {
  LossSignal s;
  s.fire("(no heartbeat for 500 ms)");
  std::string heard;
  auto sub = s.subscribe([&](const std::string& r) { heard = r; });
  EXPECT_EQ(heard, "(no heartbeat for 500 ms)");
}

TEST(LossSignal, AnUnsubscribedCallbackIsNeverCalled) {
  LossSignal s;
  int calls = 0;
  auto sub = s.subscribe([&](const std::string&) { ++calls; });
  sub.reset();
  EXPECT_EQ(s.subscribers(), 0u);
  s.fire("(disconnected)");
  EXPECT_EQ(calls, 0);
}

// A callback that ends its test drops its own subscription (and its sibling's) from inside.
TEST(LossSignal, ACallbackMayDropSubscriptionsFromInside) {
  LossSignal s;
  std::unique_ptr<LossSubscription> first, second;
  int calls = 0;
  first = s.subscribe([&](const std::string&) {
    ++calls;
    first.reset();
    second.reset();  // not yet called: now never
  });
  second = s.subscribe([&](const std::string&) { ++calls; });
  s.fire("(disconnected)");
  EXPECT_EQ(calls, 1);
}

TEST(LossSignal, ASubscriptionMayOutliveItsSignal) {
  std::unique_ptr<LossSubscription> sub;
  {
    LossSignal s;
    sub = s.subscribe([](const std::string&) {});
  }
  sub.reset();  // no crash, no wait
  SUCCEED();
}

// Dropped on another thread while its callback runs: the drop returns only after the callback
// has, so nothing the callback uses is gone under it.
TEST(LossSignal, DroppingWaitsForACallbackRunningElsewhere) {
  LossSignal s;
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> seq{0};
  int callback_returned = 0, drop_returned = 0;
  auto sub = s.subscribe([&](const std::string&) {
    entered.set_value();
    released.wait();
    callback_returned = ++seq;
  });
  std::thread firing([&] { s.fire("(disconnected)"); });
  entered.get_future().wait();
  std::thread dropping([&] {
    sub.reset();
    drop_returned = ++seq;
  });
  // The drop must not return while the callback is held. (A bounded look, not a sync point:
  // the order recorded below is what decides.)
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  release.set_value();
  firing.join();
  dropping.join();
  EXPECT_EQ(callback_returned, 1);
  EXPECT_EQ(drop_returned, 2);
}

// subscribe() racing fire(): every subscriber hears of the loss exactly once.
TEST(LossSignal, ASubscriberRacingTheLossHearsOfItOnce) {
  for (int round = 0; round < 200; ++round) {
    LossSignal s;
    std::atomic<int> calls{0};
    std::vector<std::unique_ptr<LossSubscription>> subs;
    std::thread firing([&] { s.fire("(disconnected)"); });
    for (int i = 0; i < 8; ++i) subs.push_back(s.subscribe([&](const std::string&) { ++calls; }));
    firing.join();
    EXPECT_EQ(calls.load(), 8) << "round " << round;
  }
}

}  // namespace
}  // namespace gdrmesh
