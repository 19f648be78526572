// SweepRunner, the run of one sweep, on a thread of the test: a resumed sweep waits for its
// hosts on directory events (a worker that registers late), bounded by the injected clock, and
// a cancel ends that wait at once. Fake workers and a ManualClock (sweep_rig.h).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "tests/unit/orchestrator/sweep_rig.h"

namespace gdrmesh::testing {
namespace {

// A planned sweep, on the board and stored, as the queue resumes one after a restart: its plan
// is made again once its hosts are back.
std::shared_ptr<LiveSweep> resumedSweep(SweepRig& rig, RigCoordinator& c) {
  auto planned = c.runner.plan(rigAllPairs());
  EXPECT_TRUE(planned.ok()) << planned.status().toString();
  std::shared_ptr<LiveSweep> s = *planned;
  std::lock_guard<std::mutex> lock(c.board.mu);
  s->resumed = true;
  s->needs_plan = true;
  s->stored_total = static_cast<uint32_t>(s->plan.size());
  EXPECT_TRUE(rig.store->createSweep(c.runner.recordOf(*s)).ok());
  c.board.recent[s->id] = s;
  return s;
}

// Runs `s` on its own thread; join() waits for its end.
class RunThread {
 public:
  RunThread(RigCoordinator& c, std::shared_ptr<LiveSweep> s)
      : thread_([&c, s = std::move(s), this] {
          c.runner.run(s);
          ended_ = true;
        }) {}
  ~RunThread() { thread_.join(); }
  bool ended() const { return ended_; }

 private:
  std::atomic<bool> ended_{false};
  std::thread thread_;
};

TEST(SweepRun, AResumedSweepWaitsForAWorkerThatRegistersLate) {
  SweepRig rig;
  RigCoordinator& c = rig.start();
  auto s = resumedSweep(rig, c);
  rig.workers.setOffline("h3");  // not back yet after the restart
  RunThread run(c, s);
  // Ten seconds of the clock: the run waits for h3 and starts no test meanwhile.
  const auto t0 = rig.clock.now();
  ASSERT_TRUE(rig.drive([&] { return rig.clock.now() - t0 >= std::chrono::seconds(10); }, 0.5));
  EXPECT_TRUE(rig.testsRun().empty());
  EXPECT_FALSE(run.ended());

  rig.workers.setOnline("h3");  // the registration is the event that ends the wait
  // The tests start with the clock standing still: the wait ended on the registration, not on
  // its 30 seconds.
  ASSERT_TRUE(rig.await([&] { return !rig.testsRun().empty(); }));
  const SweepProgress p = rig.finish(c, s->id);
  EXPECT_EQ(p.state, SweepState::kFinished) << p.reason;
  EXPECT_EQ(p.tests_done, 6u);
  EXPECT_EQ(p.tests_failed, 0u);  // h3's tests ran on h3, none ended as "offline"
  EXPECT_EQ(p.verdict, "PASS");
}

TEST(SweepRun, AWorkerThatNeverRegistersFailsItsTestsOnceTheClockRunsOut) {
  SweepRig rig;
  RigCoordinator& c = rig.start();
  auto s = resumedSweep(rig, c);
  rig.workers.setOffline("h3");
  const auto t0 = rig.clock.now();
  RunThread run(c, s);
  const SweepProgress p = rig.finish(c, s->id);
  EXPECT_EQ(p.state, SweepState::kFinished) << p.reason;
  EXPECT_EQ(p.tests_done, 6u);
  EXPECT_EQ(p.tests_failed, 3u);  // the three pairs with h3 end as FAILED, never vanish
  EXPECT_EQ(p.verdict, "FAIL");
  // The wait was the clock's 30 seconds (resume_wait_seconds), not real time.
  EXPECT_GE(rig.clock.now() - t0, std::chrono::seconds(30));
}

TEST(SweepRun, ACancelEndsTheWaitForHostsAtOnce) {
  SweepRig rig;
  RigCoordinator& c = rig.start();
  auto s = resumedSweep(rig, c);
  rig.workers.setOffline("h3");
  RunThread run(c, s);
  {
    std::lock_guard<std::mutex> lock(c.board.mu);
    s->cancel_requested = true;
    s->reason = "cancelled by request";
    c.board.cv.notify_all();
  }
  // The run ends with the clock standing still: the cancel ended the wait, and no test starts
  // (before the fix every test ran: the executor's run() cleared the cancel).
  ASSERT_TRUE(rig.await([&] { return run.ended(); }));
  const SweepProgress p = *c.reports.progress(s->id);
  EXPECT_EQ(p.state, SweepState::kCancelled);
  EXPECT_EQ(p.tests_done, 0u);
  EXPECT_TRUE(rig.testsRun().empty());
}

TEST(SweepRun, AShutdownDuringTheWaitForHostsEndsInterruptedWithoutATest) {
  SweepRig rig;
  RigCoordinator& c = rig.start();
  auto s = resumedSweep(rig, c);
  rig.workers.setOffline("h3");
  RunThread run(c, s);
  {
    std::lock_guard<std::mutex> lock(c.board.mu);
    c.board.stopping = true;  // what SweepQueue::shutdown() sets
    c.board.cv.notify_all();
  }
  ASSERT_TRUE(rig.await([&] { return run.ended(); }));
  // Interrupted, or still queued when the board stopped before the run began: either way the
  // sweep resumes at the next start, and no test ran.
  const SweepProgress p = *c.reports.progress(s->id);
  EXPECT_TRUE(p.state == SweepState::kInterrupted || p.state == SweepState::kQueued)
      << toString(p.state);
  EXPECT_EQ(p.tests_done, 0u);
  EXPECT_TRUE(rig.testsRun().empty());
}

TEST(SweepRun, ProgressIsStoredOnTheClocksTicksWhileTestsRun) {
  SweepRig rig;
  for (const char* w : {"h0", "h1", "h2", "h3"}) rig.workers.fake(w).behaviour.run_seconds = 5;
  SweepManagerOptions options;
  options.checkpoint_seconds = 1;
  RigCoordinator& c = rig.start(options);
  auto planned = c.runner.plan(rigAllPairs());
  ASSERT_TRUE(planned.ok());
  std::shared_ptr<LiveSweep> s = *planned;
  {
    std::lock_guard<std::mutex> lock(c.board.mu);
    ASSERT_TRUE(rig.store->createSweep(c.runner.recordOf(*s)).ok());
    c.board.recent[s->id] = s;
  }
  RunThread run(c, s);
  // Tests in flight are marked started in the store by a tick (what a restart reads).
  ASSERT_TRUE(rig.drive([&] {
    auto in_flight = rig.store->unfinishedSweepTests(s->id);
    return in_flight.ok() && !in_flight->empty();
  }));
  auto stored = rig.store->getSweep(s->id);
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->state, "running");
  EXPECT_EQ(rig.finish(c, s->id).state, SweepState::kFinished);
  auto done = rig.store->unfinishedSweepTests(s->id);
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(done->empty());
}

}  // namespace
}  // namespace gdrmesh::testing
