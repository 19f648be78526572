#include "common/lifeline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

namespace gdrmesh {
namespace {

TEST(Lifeline, ABodyRunsWhileOpenAndNeverAfterClose) {
  Lifeline line;
  Lifeline::Ref ref = line.ref();
  int runs = 0;
  EXPECT_TRUE(ref.run([&] { ++runs; }));
  line.close();
  EXPECT_FALSE(ref.run([&] { ++runs; }));
  EXPECT_EQ(runs, 1);
}

TEST(Lifeline, ARefOutlivesItsOwnerAndDoesNothing) {
  auto line = std::make_unique<Lifeline>();
  Lifeline::Ref ref = line->ref();
  line.reset();  // the owner is gone; the ref keeps only the shared state
  bool ran = false;
  EXPECT_FALSE(ref.run([&] { ran = true; }));
  EXPECT_FALSE(ran);
}

// close() returns only after a body that is running has finished.
TEST(Lifeline, CloseWaitsForABodyRunningNow) {
  Lifeline line;
  Lifeline::Ref ref = line.ref();
  std::promise<void> inside;
  std::promise<void> go;
  std::shared_future<void> go_f = go.get_future().share();
  std::atomic<bool> body_done{false};
  std::thread caller([&] {
    ref.run([&] {
      inside.set_value();
      go_f.wait();
      body_done = true;
    });
  });
  inside.get_future().wait();
  std::promise<bool> done_at_close;
  auto closed = done_at_close.get_future();
  std::thread closer([&] {
    line.close();
    done_at_close.set_value(body_done.load());
  });
  // While the body is held, close() must not return (a bounded wait: a close that does not
  // wait returns at once and is caught here or by the value it records).
  EXPECT_EQ(closed.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  go.set_value();
  EXPECT_TRUE(closed.get());
  caller.join();
  closer.join();
}

}  // namespace
}  // namespace gdrmesh
