// The end of a sweep is seen once it is judged, with its report: while the final report is
// being stored, followers, progress and lists show the end (report_pending), and the report
// they fetch holds every verdict, read from memory; the stored row says the sweep ended only
// once its rows are stored. Before (issue #19) the end was hidden until the rows were stored:
// 10-20 s at 1,024 hosts. (Found at 1024 hosts before that: a follower read "finished" while
// the 100 MB report was still being written and the CLI printed a report without verdicts;
// the report from memory keeps that fixed.)
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

TEST(SweepEndVisibility, TheEndIsSeenOnceJudgedWithItsReportFromMemoryThenStored) {
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

  // Every test has run and the report's write has begun: the end is seen, with its report.
  ASSERT_TRUE(gated.waitHeld(std::chrono::seconds(60))) << "the final report was never written";
  auto during = manager.progress(id);
  ASSERT_TRUE(during.ok()) << during.status().toString();
  EXPECT_EQ(during->state, SweepState::kFinished) << during->reason;
  EXPECT_TRUE(during->report_pending);
  EXPECT_EQ(during->tests_done, 6u);
  EXPECT_EQ(during->verdict, "PASS");
  EXPECT_GT(during->finished_ms, 0);
  auto woken = manager.waitForChange(id, 0, clock.now() + std::chrono::milliseconds(1));
  ASSERT_TRUE(woken.ok());
  EXPECT_EQ(woken->first.state, SweepState::kFinished);
  auto listed = manager.list(10);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].state, SweepState::kFinished);
  auto early = manager.report(id);
  ASSERT_TRUE(early.ok()) << early.status().toString();
  EXPECT_EQ(early->verdicts.size(), 6u);
  EXPECT_EQ(early->verdict_counts.pass, 6u);
  // Not durable yet: the stored row still says running (a restart judges it again).
  auto row = store->getSweep(id);
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->state, "running");

  // Stored: report_pending turns false, and the same report reads from the store.
  gated.release();
  auto ended =
      waitForSweepEnd(manager, id, woken->first, woken->second, clock, std::chrono::seconds(60));
  ASSERT_TRUE(ended.ok()) << ended.status().toString() << " after its report was stored";
  const SweepProgress& p = *ended;
  EXPECT_EQ(p.state, SweepState::kFinished) << p.reason;
  EXPECT_FALSE(p.report_pending);
  EXPECT_EQ(p.verdict, "PASS");
  auto report = manager.report(id);
  ASSERT_TRUE(report.ok()) << report.status().toString();
  ASSERT_EQ(report->verdicts.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(report->verdicts[i].test_id, early->verdicts[i].test_id);
  row = store->getSweep(id);
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->state, "finished");
  manager.shutdown();
}

}  // namespace
}  // namespace gdrmesh::testing
