// The end of a sweep is seen only with its report: while the final report is being stored,
// followers, progress and lists still show the sweep running; once it is stored they see the
// end, and the report they fetch holds every verdict. Found at 1024 hosts: a follower woken by
// the 100 ms progress tick read "finished" while the 100 MB report was still being written,
// and the CLI printed a report without verdicts.
//
// A store decorator holds the final report's write until the test has looked; the fakes
// answer on a SystemClock; every wait is on a latch or on waitForChange, never a sleep.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "coordinator/orchestrator/sweep_manager.h"
#include "coordinator/store/result_writer.h"
#include "coordinator/store/sqlite_store.h"
#include "tests/support/empty_sweep_codec.h"
#include "tests/support/fake_worker_channel.h"
#include "tests/support/forwarding_sweep_store.h"
#include "tests/support/sweep_wait.h"
#include "tests/support/temp_dir.h"

namespace gdrmesh::testing {
namespace {

// Forwards to a real store; the write of the sweep's report (its first step, clearSweepReport)
// waits until release().
class GatedSweepStore final : public ForwardingSweepStore {
 public:
  explicit GatedSweepStore(SweepStore& inner) : ForwardingSweepStore(inner) {}

  // Blocks until the final report's write has begun (and is held).
  bool waitHeld(std::chrono::seconds limit) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return held_; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

  Status clearSweepReport(const std::string& sweep_id) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      held_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return released_; });
    }
    return inner_.clearSweepReport(sweep_id);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
  bool released_ = false;
};

TEST(SweepEndVisibility, TheEndIsSeenOnlyWithItsStoredReport) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  auto opened = SqliteStore::open(dir.file("results.db"));
  ASSERT_TRUE(opened.ok()) << opened.status().toString();
  std::unique_ptr<SqliteStore> store = std::move(opened).value();
  GatedSweepStore gated(*store);
  SystemClock clock;
  ResultWriter writer(*store, clock);
  FakeDirectory workers(clock);
  for (int i = 0; i < 4; ++i) workers.add("h" + std::to_string(i));
  EmptyCodec codec;
  SweepManager manager(workers, clock, gated, *store, writer, codec, nullptr,
                       SweepManagerOptions{});

  auto started = manager.start(plainAllPairs());
  ASSERT_TRUE(started.ok()) << started.status().toString();
  const std::string id = started->id;

  // Every test has run and the report's write has begun: still running to everyone.
  ASSERT_TRUE(gated.waitHeld(std::chrono::seconds(60))) << "the final report was never written";
  auto during = manager.progress(id);
  ASSERT_TRUE(during.ok()) << during.status().toString();
  EXPECT_EQ(during->state, SweepState::kRunning);
  EXPECT_EQ(during->tests_done, 6u);
  EXPECT_EQ(during->verdict, "");
  EXPECT_EQ(during->finished_ms, 0);
  auto woken = manager.waitForChange(id, 0, clock.now() + std::chrono::milliseconds(1));
  ASSERT_TRUE(woken.ok());
  EXPECT_EQ(woken->first.state, SweepState::kRunning);
  auto listed = manager.list(10);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].state, SweepState::kRunning);

  // Stored: the end is seen, and the report holds the six verdicts.
  gated.release();
  auto ended =
      waitForSweepEnd(manager, id, woken->first, woken->second, clock, std::chrono::seconds(60));
  ASSERT_TRUE(ended.ok()) << ended.status().toString() << " after its report was stored";
  const SweepProgress& p = *ended;
  EXPECT_EQ(p.state, SweepState::kFinished) << p.reason;
  EXPECT_EQ(p.verdict, "PASS");
  EXPECT_GT(p.finished_ms, 0);
  auto report = manager.report(id);
  ASSERT_TRUE(report.ok()) << report.status().toString();
  EXPECT_EQ(report->verdicts.size(), 6u);
  manager.shutdown();
}

}  // namespace
}  // namespace gdrmesh::testing
