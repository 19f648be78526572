// The executor: resources, concurrency cap, retries, stuck pairs, cancel, against fakes.
#include "coordinator/orchestrator/executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <set>
#include <thread>

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

// Runs the executor on its own thread while the test thread moves the manual clock.
struct Harness {
  ManualClock clock;
  FakeDirectory dir{clock};
  std::vector<TestResult> results;
  std::mutex mu;

  template <typename Tasks>
  size_t run(Executor& ex, Tasks tasks, double max_seconds = 3600,
             std::function<void(int, const std::string&)> on_start = nullptr) {
    std::atomic<bool> done{false};
    size_t not_run = 0;
    ExecutorCallbacks cb;
    cb.on_start = std::move(on_start);
    cb.on_result = [&](int, const TestResult& r) {
      std::lock_guard<std::mutex> lock(mu);
      results.push_back(r);
    };
    std::thread t([&] {
      not_run = ex.run(std::move(tasks), cb);
      done = true;
    });
    for (double s = 0; !done && s < max_seconds; s += 0.001) {
      // Time stands still while the executor's own thread starts tests (its first wave):
      // moving it then would expire a deadline taken before the fake scheduled its reply.
      while (!done && ex.progress().starting > 0) std::this_thread::yield();
      clock.advanceSeconds(0.001);
      if (clock.pendingTimers() == 0) std::this_thread::yield();
    }
    t.join();
    return not_run;
  }
};

// Options for tests that are not about timeouts. The harness moves the manual clock while the
// executor's thread starts tests; a start descheduled between taking its deadline and the
// fake scheduling its reply (seen on a loaded CI machine under ASan) would otherwise time out
// and be retried while its first session is still open.
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
  EXPECT_EQ(h.run(ex, tasks, 3600,
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

}  // namespace
}  // namespace gdrmesh
