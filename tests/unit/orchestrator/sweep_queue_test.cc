// SweepQueue: one sweep at a time, a queued sweep after the running one, cancel mid-round, and
// resume after a coordinator died at each phase of a sweep (planned, running, judging), over
// fake workers and a ManualClock (sweep_rig.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/sync/mutex.h"
#include "coordinator/orchestrator/sweep_report_rows.h"
#include "tests/unit/orchestrator/sweep_rig.h"

namespace gdrmesh::testing {
namespace {

TEST(SweepQueue, ASecondSweepIsRefusedUnlessQueuedAndThenRunsAfterTheFirst) {
  SweepRig rig;
  RigCoordinator& c = rig.start();
  auto first = c.queue.start(rigAllPairs());
  ASSERT_TRUE(first.ok()) << first.status().toString();

  auto refused = c.queue.start(rigAllPairs());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find(first->id), std::string::npos);

  SweepSpec queued_spec = rigAllPairs();
  queued_spec.queue = true;
  auto second = c.queue.start(queued_spec);
  ASSERT_TRUE(second.ok()) << second.status().toString();
  EXPECT_EQ(second->state, SweepState::kQueued);

  const SweepProgress a = rig.finish(c, first->id);
  const SweepProgress b = rig.finish(c, second->id);
  EXPECT_EQ(a.state, SweepState::kFinished) << a.reason;
  EXPECT_EQ(b.state, SweepState::kFinished) << b.reason;
  EXPECT_EQ(a.tests_done, 6u);
  EXPECT_EQ(b.tests_done, 6u);
  // One at a time: the queued sweep started once the first had ended.
  EXPECT_GE(b.started_ms, a.finished_ms);
  EXPECT_EQ(rig.testsRun().size(), 12u);
  EXPECT_FALSE(c.queue.busy());
}

TEST(SweepQueue, CancelMidRoundStopsStartingTestsAndEndsCancelled) {
  SweepRig rig;
  // A test's run takes a second of the clock: the first round ends while the rest wait.
  for (const char* w : {"h0", "h1", "h2", "h3"}) rig.workers.fake(w).behaviour.run_seconds = 1;
  RigCoordinator& c = rig.start();
  auto started = c.queue.start(rigAllPairs());
  ASSERT_TRUE(started.ok()) << started.status().toString();
  const std::string id = started->id;
  // The first round's tests end (inside advance(), on this thread), the next ones start.
  ASSERT_TRUE(rig.drive([&] { return c.reports.progress(id)->tests_done >= 1; }));
  const size_t sent_before_cancel = rig.testsRun().size();
  auto cancelled = c.queue.cancel(id);
  ASSERT_TRUE(cancelled.has_value());

  const SweepProgress p = rig.finish(c, id);
  EXPECT_EQ(p.state, SweepState::kCancelled);
  EXPECT_EQ(p.verdict, "FAIL");
  EXPECT_EQ(p.reason, "cancelled by request");
  // The tests in flight ended; no test started after the cancel.
  EXPECT_EQ(rig.testsRun().size(), sent_before_cancel);
  EXPECT_LT(p.tests_done, 6u);
  EXPECT_EQ(p.tests_done, sent_before_cancel);
  auto stored = rig.store->getSweep(id);
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->state, "cancelled");
  // A sweep that ended cannot be cancelled again.
  EXPECT_FALSE(c.queue.cancel(id).has_value());
}

TEST(SweepQueue, CancelOfAQueuedSweepTakesItOffTheQueue) {
  SweepRig rig;
  RigCoordinator& c = rig.start();
  auto first = c.queue.start(rigAllPairs());
  ASSERT_TRUE(first.ok());
  SweepSpec queued_spec = rigAllPairs();
  queued_spec.queue = true;
  auto second = c.queue.start(queued_spec);
  ASSERT_TRUE(second.ok());
  auto cancelled = c.queue.cancel(second->id);
  ASSERT_TRUE(cancelled.has_value());
  EXPECT_EQ(cancelled->state, SweepState::kCancelled);
  EXPECT_EQ(cancelled->reason, "cancelled before it started");
  EXPECT_EQ(rig.finish(c, first->id).state, SweepState::kFinished);
  EXPECT_EQ(rig.testsRun().size(), 6u);  // the cancelled one never ran
  auto stored = rig.store->getSweep(second->id);
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->state, "cancelled");
}

// A sweep as a coordinator that died left it: the row of a finished reference sweep (same
// spec, same seed, so the same plan) under a new id in state `state`, with copies of the
// reference's results at `finished` plan indexes and in-flight markers at `in_flight` ones.
std::string crashedSweep(SweepRig& rig, RigCoordinator& ref, const std::string& state,
                         const std::set<int>& finished, const std::set<int>& in_flight) {
  auto started = ref.queue.start(rigAllPairs());
  EXPECT_TRUE(started.ok()) << started.status().toString();
  EXPECT_EQ(rig.finish(ref, started->id).state, SweepState::kFinished);
  auto rec = rig.store->getSweep(started->id);
  EXPECT_TRUE(rec.ok() && rec->has_value());
  SweepRecord crashed = **rec;
  crashed.id = started->id + "-crashed";
  crashed.state = state;
  crashed.finished_ms = 0;
  crashed.verdict.clear();
  crashed.reason.clear();
  crashed.verdicts_pass = crashed.verdicts_fail = crashed.verdicts_skip = 0;
  if (state == "queued") crashed.started_ms = 0;
  EXPECT_TRUE(rig.store->createSweep(crashed).ok());
  ResultQuery q;
  q.run_id = started->id;
  q.limit = 0;
  auto results = rig.store->queryResults(q);
  EXPECT_TRUE(results.ok());
  std::vector<TestResult> copies;
  for (TestResult r : *results) {
    if (in_flight.count(r.plan_index)) {
      SweepTestStart m;
      m.plan_index = r.plan_index;
      m.test_id = "crashed-" + r.test_id;
      m.started_ms = r.started_ms;
      m.initiator_worker = r.initiator.worker;
      m.target_worker = r.target.worker;
      m.message_size = r.message_size;
      EXPECT_TRUE(rig.store->markSweepTestStarted(crashed.id, m).ok());
    }
    if (!finished.count(r.plan_index)) continue;
    r.id = 0;
    r.run_id = crashed.id;
    r.test_id = "crashed-" + r.test_id;
    copies.push_back(r);
  }
  if (!copies.empty()) {
    EXPECT_TRUE(rig.store->insertResults(copies).ok());
  }
  return crashed.id;
}

// The results of sweep `id` by plan index (-1: the interrupted tests' ERROR rows).
std::multiset<int> planIndexesOf(SweepRig& rig, const std::string& id) {
  ResultQuery q;
  q.run_id = id;
  q.limit = 0;
  auto results = rig.store->queryResults(q);
  EXPECT_TRUE(results.ok());
  std::multiset<int> out;
  for (const auto& r : *results) out.insert(r.plan_index);
  return out;
}

TEST(SweepQueue, ResumesASweepThatWasOnlyPlanned) {
  SweepRig rig;
  const std::string id = crashedSweep(rig, rig.start(), "queued", {}, {});
  const size_t sent = rig.testsRun().size();
  RigCoordinator& restarted = rig.start();
  restarted.queue.resumeInterrupted();
  const SweepProgress p = rig.finish(restarted, id);
  EXPECT_EQ(p.state, SweepState::kFinished) << p.reason;
  EXPECT_EQ(p.verdict, "PASS");
  EXPECT_EQ(p.tests_done, 6u);
  EXPECT_EQ(rig.testsRun().size(), sent + 6);
  EXPECT_EQ(planIndexesOf(rig, id), (std::multiset<int>{0, 1, 2, 3, 4, 5}));
}

// On SQLite: what a database file keeps of a crashed run is what the restart resumes.
TEST(SweepQueue, ResumesARunningSweepRunningOnlyWhatDidNotFinish) {
  SweepRig rig(4, RigStore::kSqlite);
  // Tests 0 and 1 finished; 2 was in flight when the coordinator died; 3..5 never started.
  const std::string id = crashedSweep(rig, rig.start(), "running", {0, 1}, {2});
  const size_t sent = rig.testsRun().size();
  RigCoordinator& restarted = rig.start();
  restarted.queue.resumeInterrupted();
  const SweepProgress p = rig.finish(restarted, id);
  EXPECT_EQ(p.state, SweepState::kFinished) << p.reason;
  EXPECT_EQ(p.verdict, "PASS");
  EXPECT_EQ(p.tests_done, 6u);
  // Nothing runs twice: the four unfinished tests ran, once each.
  EXPECT_EQ(rig.testsRun().size(), sent + 4);
  // The one in flight is recorded as interrupted (plan index -1) and has its result now.
  EXPECT_EQ(planIndexesOf(rig, id), (std::multiset<int>{-1, 0, 1, 2, 3, 4, 5}));
  ResultQuery q;
  q.run_id = id;
  q.limit = 0;
  auto rows = rig.store->queryResults(q);
  ASSERT_TRUE(rows.ok());
  auto err =
      std::find_if(rows->begin(), rows->end(), [](const auto& r) { return r.plan_index < 0; });
  ASSERT_NE(err, rows->end());
  EXPECT_EQ(err->status, TestStatus::kError);
  EXPECT_EQ(err->reason.rfind("interrupted:", 0), 0u) << err->reason;
}

TEST(SweepQueue, ResumesASweepThatDiedWhileJudgingWithoutRunningATest) {
  SweepRig rig;
  RigCoordinator& ref = rig.start();
  const std::string id = crashedSweep(rig, ref, "running", {0, 1, 2, 3, 4, 5}, {});
  // A report stored by an earlier end of it is replaced by the one its resumed run stores.
  PairVerdict stale;
  stale.test_id = "stale";
  stale.verdict = VerdictKind::kFail;
  ASSERT_TRUE(storeSweepReport(*rig.store, id, 1, [&](size_t) { return stale; }, {}, {}).ok());
  const size_t sent = rig.testsRun().size();
  RigCoordinator& restarted = rig.start();
  restarted.queue.resumeInterrupted();
  const SweepProgress p = rig.finish(restarted, id);
  EXPECT_EQ(p.state, SweepState::kFinished) << p.reason;
  EXPECT_EQ(p.verdict, "PASS");
  EXPECT_EQ(p.tests_done, 6u);
  EXPECT_EQ(rig.testsRun().size(), sent);  // every result was stored: none runs again
  auto report = restarted.reports.report(id);
  ASSERT_TRUE(report.ok()) << report.status().toString();
  EXPECT_EQ(report->verdict_counts.pass, 6u);
  EXPECT_EQ(report->verdict_counts.fail, 0u);
  ASSERT_EQ(report->verdicts.size(), 6u);
  for (const auto& v : report->verdicts) EXPECT_NE(v.test_id, "stale");
}

TEST(SweepQueue, AResumedSweepWhosePlanChangedEndsInterrupted) {
  SweepRig rig;
  const std::string id = crashedSweep(rig, rig.start(), "running", {0}, {});
  rig.workers.add("h4");  // the plan stays on the hosts it was made for
  auto rec = rig.store->getSweep(id);
  ASSERT_TRUE(rec.ok() && rec->has_value());
  SweepRecord changed = **rec;
  changed.plan_json = R"({"hosts":["h0","h1","h2","h3"],"plan_size":5,"rounds":3,"seed":"7"})";
  ASSERT_TRUE(rig.store->updateSweep(changed).ok());
  const size_t sent = rig.testsRun().size();
  RigCoordinator& restarted = rig.start();
  restarted.queue.resumeInterrupted();
  const SweepProgress p = rig.finish(restarted, id);
  EXPECT_EQ(p.state, SweepState::kInterrupted);
  EXPECT_NE(p.reason.find("not the 5 it was made with"), std::string::npos) << p.reason;
  EXPECT_EQ(rig.testsRun().size(), sent);
}

// On SQLite, as the one above.
TEST(SweepQueue, ASweepStoppedByAShutdownResumesAtTheNextStart) {
  SweepRig rig(4, RigStore::kSqlite);
  for (const char* w : {"h0", "h1", "h2", "h3"}) rig.workers.fake(w).behaviour.run_seconds = 1;
  RigCoordinator& first = rig.start();
  auto started = first.queue.start(rigAllPairs());
  ASSERT_TRUE(started.ok()) << started.status().toString();
  const std::string id = started->id;
  ASSERT_TRUE(rig.drive([&] { return first.reports.progress(id)->tests_done >= 1; }));
  // The shutdown lets the tests in flight end (on the clock) and stores the sweep.
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    first.queue.shutdown();
    stopped = true;
  });
  // The clock stands still until the shutdown is seen: steps taken before it would end the
  // tests still waiting (seen on a loaded machine: all six done, the sweep "finished").
  ASSERT_TRUE(rig.await([&] {
    MutexLock lock(first.board.mu);
    return first.board.stopping;
  }));
  ASSERT_TRUE(rig.drive([&] { return stopped.load(); }));
  stopper.join();
  auto stored = rig.store->getSweep(id);
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->state, "interrupted");
  EXPECT_NE((*stored)->reason.find("resumes at the next start"), std::string::npos);
  const uint32_t done_before = first.reports.progress(id)->tests_done;
  EXPECT_LT(done_before, 6u);

  RigCoordinator& second = rig.start();
  second.queue.resumeInterrupted();
  const SweepProgress p = rig.finish(second, id);
  EXPECT_EQ(p.state, SweepState::kFinished) << p.reason;
  EXPECT_EQ(p.tests_done, 6u);
  EXPECT_EQ(rig.testsRun().size(), 6u);  // nothing ran twice
}

}  // namespace
}  // namespace gdrmesh::testing
