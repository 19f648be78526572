// The executor: resources, concurrency cap, retries, stuck pairs, cancel, against fakes.
#include "coordinator/orchestrator/executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "coordinator/orchestrator/resource_locks.h"
#include "tests/support/fake_worker_channel.h"

namespace gdrmesh {
namespace {

using testing::FakeDirectory;

std::vector<ExecutorTask> allPairs(int n) {
  std::vector<ExecutorTask> out;
  int idx = 0;
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      ExecutorTask t;
      t.index = idx++;
      t.spec.initiator.worker = "h" + std::to_string(i);
      t.spec.target.worker = "h" + std::to_string(j);
      t.spec.iterations = 10;
      t.resources = resourceKeys(t.spec);
      out.push_back(std::move(t));
    }
  }
  return out;
}

// Pairs of hosts h<a> -> h<b>, in this plan order.
std::vector<ExecutorTask> pairsOf(const std::vector<std::pair<int, int>>& pairs) {
  std::vector<ExecutorTask> out;
  for (const auto& p : pairs) {
    ExecutorTask t;
    t.index = static_cast<int>(out.size());
    t.spec.initiator.worker = "h" + std::to_string(p.first);
    t.spec.target.worker = "h" + std::to_string(p.second);
    t.spec.iterations = 10;
    t.resources = resourceKeys(t.spec);
    out.push_back(std::move(t));
  }
  return out;
}

// All six pairs of four hosts, two disjoint ones first.
std::vector<ExecutorTask> sixPairs() {
  return pairsOf({{0, 1}, {2, 3}, {0, 2}, {1, 3}, {0, 3}, {1, 2}});
}

// Starts the executor on the test's thread and moves the manual clock until on_done: every
// reply of the fake workers, and every test that one ends and starts, runs inside advance() on
// this thread. No second thread, no spinning.
struct Harness {
  ManualClock clock;
  FakeDirectory dir{clock};
  std::vector<TestResult> results;

  template <typename Tasks>
  size_t run(Executor& ex, Tasks tasks,
             std::function<void(int, const std::string&)> on_start = nullptr) {
    std::optional<size_t> not_run;
    int reports = 0;
    ExecutorCallbacks cb;
    cb.on_start = std::move(on_start);
    cb.on_result = [&](int, const TestResult& r) { results.push_back(r); };
    cb.on_done = [&](size_t n) {
      not_run = n;
      ++reports;
    };
    ex.start(std::move(tasks), cb);
    // Bounded by a day of manual time: a run that never ends fails here instead of hanging.
    for (int ms = 0; !not_run && ms < 86'400'000; ++ms) clock.advance(std::chrono::milliseconds(1));
    EXPECT_TRUE(not_run.has_value()) << "on_done never came";
    EXPECT_EQ(reports, 1) << "on_done exactly once";
    return not_run.value_or(~size_t{0});
  }
};

// Long command timeouts, for the tests that are not about timeouts.
ExecutorOptions patient() {
  ExecutorOptions o;
  o.pair.command_timeout_seconds = 600;
  return o;
}

TEST(ExecutorTest, NoHostIsInTwoTestsAtOnce) {
  Harness h;
  for (int i = 0; i < 8; ++i) h.dir.add("h" + std::to_string(i));
  Executor ex(h.dir, h.clock, patient());
  EXPECT_EQ(h.run(ex, allPairs(8)), 0u);
  EXPECT_EQ(h.results.size(), 28u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_LE(h.dir.fake("h" + std::to_string(i)).maxInFlight(), 1) << "h" << i;
    EXPECT_EQ(h.dir.fake("h" + std::to_string(i)).inFlight(), 0);
  }
  for (const auto& r : h.results) EXPECT_EQ(r.status, TestStatus::kPassed) << r.reason;
}

// A slot holds indexes only: a test's spec is made when it starts (and again for a retry), so
// a sweep of 500k tests never holds 500k specs.
TEST(ExecutorTest, BuildsEachSpecOnlyWhenItsTestStarts) {
  Harness h;
  for (int i = 0; i < 6; ++i) h.dir.add("h" + std::to_string(i));
  const auto plan = allPairs(6);
  std::atomic<int> built{0};
  ExecutorTasks tasks;
  tasks.count = plan.size();
  tasks.index = [&](size_t i) { return plan[i].index; };
  tasks.spec = [&](size_t i) {
    ++built;
    return plan[i].spec;
  };
  tasks.resources = [&](size_t i) { return plan[i].resources; };
  ExecutorOptions o = patient();
  o.max_concurrency = 1;
  Executor ex(h.dir, h.clock, o);
  int started = 0;
  std::vector<int> built_at_start;
  EXPECT_EQ(h.run(ex, tasks,
                  [&](int, const std::string&) {
                    ++started;
                    built_at_start.push_back(built.load());
                  }),
            0u);
  ASSERT_EQ(h.results.size(), plan.size());
  EXPECT_EQ(built.load(), static_cast<int>(plan.size()));
  // One at a time: when the k-th test starts, exactly k specs exist.
  for (size_t k = 0; k < built_at_start.size(); ++k)
    EXPECT_EQ(built_at_start[k], static_cast<int>(k + 1)) << k;
  std::set<int> indexes;
  for (const auto& r : h.results) indexes.insert(r.plan_index);
  EXPECT_EQ(indexes.size(), plan.size());
}

TEST(ExecutorTest, ConcurrencyCapIsHonoured) {
  Harness h;
  for (int i = 0; i < 8; ++i) h.dir.add("h" + std::to_string(i));
  ExecutorOptions o = patient();
  o.max_concurrency = 1;
  Executor ex(h.dir, h.clock, o);
  EXPECT_EQ(h.run(ex, allPairs(4)), 0u);
  int total = 0;
  for (int i = 0; i < 4; ++i) total += h.dir.fake("h" + std::to_string(i)).maxInFlight();
  EXPECT_LE(total, 4);
  EXPECT_EQ(h.results.size(), 6u);
}

TEST(ExecutorTest, AStuckPairDoesNotStallTheOthers) {
  Harness h;
  for (int i = 0; i < 6; ++i) h.dir.add("h" + std::to_string(i));
  h.dir.fake("h5").behaviour.mute = true;
  ExecutorOptions o;
  o.retries = 0;
  Executor ex(h.dir, h.clock, o);
  EXPECT_EQ(h.run(ex, allPairs(6)), 0u);
  ASSERT_EQ(h.results.size(), 15u);
  int failed = 0;
  for (const auto& r : h.results) {
    const bool touches = r.initiator.worker == "h5" || r.target.worker == "h5";
    EXPECT_EQ(r.status == TestStatus::kFailed, touches)
        << r.initiator.worker << "->" << r.target.worker << ": " << r.reason;
    failed += r.status == TestStatus::kFailed;
  }
  EXPECT_EQ(failed, 5);
}

TEST(ExecutorTest, TransientFailuresAreRetriedIntegrityFailuresNot) {
  Harness h;
  h.dir.add("h0");
  h.dir.add("h1");
  h.dir.fake("h1").behaviour.wrong_bytes = 3;
  ExecutorOptions o;
  o.retries = 2;
  Executor ex(h.dir, h.clock, o);
  EXPECT_EQ(h.run(ex, allPairs(2)), 0u);
  ASSERT_EQ(h.results.size(), 1u);
  EXPECT_EQ(h.results[0].status, TestStatus::kFailed);
  EXPECT_NE(h.results[0].reason.find("data integrity"), std::string::npos) << h.results[0].reason;
  EXPECT_EQ(ex.progress().retried, 0u) << "an integrity failure must never be retried";

  Harness h2;
  h2.dir.add("h0");
  h2.dir.add("h1");
  h2.dir.fake("h1").behaviour.mute = true;
  Executor ex2(h2.dir, h2.clock, o);
  EXPECT_EQ(h2.run(ex2, allPairs(2)), 0u);
  EXPECT_EQ(ex2.progress().retried, 2u) << "a deadline is transient: retried twice";
}

TEST(ExecutorTest, OfflineWorkerGivesResultsNotAHang) {
  Harness h;
  for (int i = 0; i < 4; ++i) h.dir.add("h" + std::to_string(i));
  h.dir.setOffline("h2");
  ExecutorOptions o;
  o.retries = 0;
  Executor ex(h.dir, h.clock, o);
  EXPECT_EQ(h.run(ex, allPairs(4)), 0u);
  int offline = 0;
  for (const auto& r : h.results) {
    offline += r.reason.find("worker h2 is offline") != std::string::npos;
  }
  EXPECT_EQ(offline, 3);
}

TEST(ExecutorTest, ResourceKeysNameNicsGpusOrTheWholeHost) {
  EndpointSelector s;
  s.worker = "h1";
  EXPECT_EQ(resourceKeys(s), (std::vector<std::string>{"h1/*"}));
  s.device = "mlx5_1";
  s.memory = MemoryKind::kCuda;
  s.gpu = 3;
  EXPECT_EQ(resourceKeys(s), (std::vector<std::string>{"h1/mlx5_1", "h1/gpu:3"}));
}

// start() returns once the first tests are started; the end is an event, not a return.
TEST(ExecutorTest, StartReturnsAtOnceAndOnDoneReportsTheEnd) {
  ManualClock clock;
  FakeDirectory dir(clock);
  for (int i = 0; i < 4; ++i) dir.add("h" + std::to_string(i));
  Executor ex(dir, clock, patient());
  size_t results = 0;
  std::optional<size_t> not_run;
  ExecutorCallbacks cb;
  cb.on_result = [&](int, const TestResult&) { ++results; };
  cb.on_done = [&](size_t n) { not_run = n; };
  ex.start(sixPairs(), cb);
  EXPECT_FALSE(not_run.has_value()) << "nothing has ended before the clock moves";
  EXPECT_EQ(results, 0u);
  EXPECT_EQ(ex.progress().running, 2u) << "two disjoint pairs started at once (4 hosts)";
  while (!not_run) clock.advance(std::chrono::milliseconds(1));
  EXPECT_EQ(*not_run, 0u);
  EXPECT_EQ(results, 6u);
  EXPECT_EQ(ex.progress().done, 6u);
}

TEST(ExecutorTest, CancelBeforeStartEndsInsideStartWithNothingRun) {
  ManualClock clock;
  FakeDirectory dir(clock);
  for (int i = 0; i < 3; ++i) dir.add("h" + std::to_string(i));
  Executor ex(dir, clock, patient());
  ex.cancel();
  std::optional<size_t> not_run;
  ExecutorCallbacks cb;
  cb.on_done = [&](size_t n) { not_run = n; };
  ex.start(allPairs(3), cb);
  ASSERT_TRUE(not_run.has_value()) << "a cancelled executor ends inside start()";
  EXPECT_EQ(*not_run, 3u);
  EXPECT_EQ(dir.fake("h0").log().size(), 0u) << "no command was sent";
}

// A cancel mid-run starts nothing more; the tests in flight end, then on_done, once.
TEST(ExecutorTest, CancelMidRunDrainsTheTestsInFlightThenReportsOnce) {
  Harness h;
  for (int i = 0; i < 4; ++i) h.dir.add("h" + std::to_string(i));
  Executor ex(h.dir, h.clock, patient());
  auto tasks = sixPairs();
  // Cancelled as the first test starts: it and its disjoint partner were dispatched already.
  bool cancelled = false;
  EXPECT_EQ(h.run(ex, tasks,
                  [&](int, const std::string&) {
                    if (!cancelled) {
                      cancelled = true;
                      ex.cancel();
                    }
                  }),
            4u);
  EXPECT_EQ(h.results.size(), 2u) << "the two tests in flight reported, nothing started after";
  for (int i = 0; i < 4; ++i) EXPECT_EQ(h.dir.fake("h" + std::to_string(i)).inFlight(), 0);
}

// The owner may drop the executor from inside on_done (a one-pair run does).
TEST(ExecutorTest, MayBeDestroyedFromInsideOnDone) {
  ManualClock clock;
  FakeDirectory dir(clock);
  dir.add("h0");
  dir.add("h1");
  auto ex = std::make_unique<Executor>(dir, clock, patient());
  bool done = false;
  ExecutorCallbacks cb;
  cb.on_done = [&](size_t) {
    ex.reset();  // ASan: any touch of the executor after this is a use after free
    done = true;
  };
  ex->start(allPairs(2), cb);
  while (!done) clock.advance(std::chrono::milliseconds(1));
  EXPECT_EQ(ex, nullptr);
}

// Two runs sharing the coordinator's ResourceLocks (a sweep and a `gdrmesh test`): the second
// run's test on the same hosts waits for the first's to end, then runs.
TEST(ExecutorTest, RunsSharingResourceLocksNeverShareAHost) {
  ManualClock clock;
  FakeDirectory dir(clock);
  dir.add("h0");
  dir.add("h1");
  ResourceLocks locks;
  ExecutorOptions o = patient();
  o.locks = &locks;
  Executor first(dir, clock, o), second(dir, clock, o);
  std::vector<std::string> order;
  int ended = 0;
  auto callbacks = [&](const std::string& name) {
    ExecutorCallbacks cb;
    cb.on_start = [&order, name](int, const std::string&) { order.push_back(name + " start"); };
    cb.on_result = [&order, name](int, const TestResult& r) {
      order.push_back(name + " " + toString(r.status));
    };
    cb.on_done = [&ended](size_t) { ++ended; };
    return cb;
  };
  first.start(allPairs(2), callbacks("first"));
  second.start(allPairs(2), callbacks("second"));
  EXPECT_EQ(locks.waiting(), 1u) << "the second run's test waits for h0 and h1";
  EXPECT_EQ(second.progress().running, 1u) << "dispatched, waiting for its resources";
  while (ended < 2) clock.advance(std::chrono::milliseconds(1));
  EXPECT_EQ(order, (std::vector<std::string>{"first start", "first PASSED", "second start",
                                             "second PASSED"}));
  EXPECT_EQ(dir.fake("h0").maxInFlight(), 1);
  EXPECT_EQ(dir.fake("h1").maxInFlight(), 1);
  EXPECT_EQ(locks.held(), 0u);
}

// A run cancelled while its test waits for another run's resources ends at once: the request
// is taken back, and the other run goes on.
TEST(ExecutorTest, CancelTakesBackATestWaitingForSharedLocks) {
  ManualClock clock;
  FakeDirectory dir(clock);
  dir.add("h0");
  dir.add("h1");
  ResourceLocks locks;
  ExecutorOptions o = patient();
  o.locks = &locks;
  Executor first(dir, clock, o), second(dir, clock, o);
  std::optional<size_t> first_done, second_done;
  ExecutorCallbacks a, b;
  a.on_done = [&](size_t n) { first_done = n; };
  b.on_done = [&](size_t n) { second_done = n; };
  first.start(allPairs(2), a);
  second.start(allPairs(2), b);
  ASSERT_EQ(locks.waiting(), 1u);
  second.cancel();
  ASSERT_TRUE(second_done.has_value()) << "nothing of it was running: it ends inside cancel()";
  EXPECT_EQ(*second_done, 1u);
  EXPECT_EQ(locks.waiting(), 0u);
  while (!first_done) clock.advance(std::chrono::milliseconds(1));
  EXPECT_EQ(*first_done, 0u);
  EXPECT_EQ(locks.held(), 0u);
}

TEST(ResourceLocksTest, AWholeHostConflictsWithEachOfItsNicsAndWaitsInOrder) {
  ResourceLocks locks;
  std::vector<std::string> granted;
  const auto t1 = locks.newTicket(), t2 = locks.newTicket(), t3 = locks.newTicket(),
             t4 = locks.newTicket();
  EXPECT_TRUE(locks.acquire(t1, {"h1/mlx5_0", "h2/mlx5_0"}, [] {}));
  EXPECT_FALSE(locks.acquire(t2, {"h1/*"}, [&] { granted.push_back("whole h1"); }));
  // Free now, but behind the earlier request for the whole of h1: first come, first served.
  EXPECT_FALSE(locks.acquire(t3, {"h1/mlx5_1"}, [&] { granted.push_back("h1/mlx5_1"); }));
  EXPECT_TRUE(locks.acquire(t4, {"h3/mlx5_0", "h3/gpu:0"}, [] {})) << "no conflict: h3";
  locks.release(t1);
  EXPECT_EQ(granted, (std::vector<std::string>{"whole h1"}));
  locks.release(t2);
  EXPECT_EQ(granted, (std::vector<std::string>{"whole h1", "h1/mlx5_1"}));
  EXPECT_FALSE(locks.withdraw(t3)) << "granted already: released, not withdrawn";
  locks.release(t3);
  locks.release(t4);
  EXPECT_EQ(locks.held(), 0u);
  EXPECT_EQ(locks.waiting(), 0u);
}

}  // namespace
}  // namespace gdrmesh
