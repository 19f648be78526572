// A progress checkpoint still being written when a sweep's tests end. The checkpoint runs on the
// clock's thread every second; the end of the tests used to cancel the next one and return at
// once, so a checkpoint already in flight then (a) locked a mutex of a stack frame that was gone
// ("std::system_error: Invalid argument", once in 27 Soft-RoCE sweeps) and (b) stored its
// stale "running" record after the final one. Now the end of the tests waits for it.
//
// The store holds the first checkpoint written from the clock's thread; the fake workers answer
// on a ManualClock that the test moves, so every test ends while it is held. Waits are on the
// store's condition variable or on waitForChange, never a sleep.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
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

// Holds the first progress checkpoint (no report) written from a thread other than the one that
// wrote the sweep's first record (the sweep's own thread), and logs the order in which writes
// reach the real store.
class CheckpointGate final : public ForwardingSweepStore {
 public:
  explicit CheckpointGate(SweepStore& inner) : ForwardingSweepStore(inner) {}

  bool waitHeld(std::chrono::seconds limit) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return held_; });
  }
  // True when the final record's write begins within `limit`.
  bool waitFinalBegun(std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return final_begun_; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  std::vector<std::string> order() const {
    std::lock_guard<std::mutex> lock(mu_);
    return order_;
  }

  Status updateSweep(const SweepRecord& sweep) override {
    const bool final = sweep.state != "running" && sweep.state != "queued";
    bool gate = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (final) {
        final_begun_ = true;
        cv_.notify_all();
      } else if (sweep_thread_ == std::thread::id()) {
        sweep_thread_ = std::this_thread::get_id();
      } else if (!held_ && std::this_thread::get_id() != sweep_thread_) {
        gate = true;
        held_ = true;
        cv_.notify_all();
        cv_.wait(lock, [&] { return released_; });
      }
    }
    Status st = inner_.updateSweep(sweep);
    std::lock_guard<std::mutex> lock(mu_);
    order_.push_back(final ? "final" : gate ? "held checkpoint" : "checkpoint");
    return st;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::thread::id sweep_thread_;
  bool held_ = false;
  bool released_ = false;
  bool final_begun_ = false;
  std::vector<std::string> order_;
};

TEST(SweepCheckpointRace, TheTestsEndOnlyAfterACheckpointInFlightIsStored) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  auto opened = SqliteStore::open(dir.file("results.db"));
  ASSERT_TRUE(opened.ok()) << opened.status().toString();
  std::unique_ptr<SqliteStore> store = std::move(opened).value();
  CheckpointGate gate(*store);
  SystemClock clock;
  ResultWriter writer(*store, clock);  // the manager's: checkpoints and deadlines
  ManualClock fabric;  // the fake workers': their answers come when the test moves it
  FakeDirectory workers(fabric);
  for (int i = 0; i < 4; ++i) workers.add("h" + std::to_string(i));
  EmptyCodec codec;
  SweepManagerOptions options;
  options.checkpoint_seconds = 0.01;
  SweepManager manager(workers, clock, gate, *store, writer, codec, nullptr, options);

  auto started = manager.start(plainAllPairs());
  ASSERT_TRUE(started.ok()) << started.status().toString();
  const std::string id = started->id;

  // A checkpoint from the clock's thread is in flight, and held.
  ASSERT_TRUE(gate.waitHeld(std::chrono::seconds(60))) << "no checkpoint came from the clock";

  // Every test ends meanwhile (the fake workers' answers, 0.1 s of their time per step).
  SweepProgress p;
  uint64_t version = 0;
  for (int step = 0; step < 10000; ++step) {
    fabric.advanceSeconds(0.1);
    auto now = manager.waitForChange(id, version, clock.now());
    ASSERT_TRUE(now.ok()) << now.status().toString();
    p = now->first;
    version = now->second;
    if (p.tests_done == 6) break;
  }
  ASSERT_EQ(p.tests_done, 6u) << "the tests did not end";

  // The end waits for the checkpoint in flight: no final record while it is held (before the
  // fix the final record was written at once, then overwritten by the stale checkpoint).
  EXPECT_FALSE(gate.waitFinalBegun(std::chrono::milliseconds(500)))
      << "the sweep ended with a checkpoint still in flight";
  gate.release();

  auto ended = waitForSweepEnd(manager, id, p, version, clock, std::chrono::seconds(60));
  ASSERT_TRUE(ended.ok()) << ended.status().toString();
  p = *ended;
  EXPECT_EQ(p.state, SweepState::kFinished) << p.reason;
  EXPECT_EQ(p.verdict, "PASS");

  // The held checkpoint reached the store before the final record, which is the one kept.
  const std::vector<std::string> order = gate.order();
  ASSERT_FALSE(order.empty());
  EXPECT_EQ(order.back(), "final");
  int held_at = -1;
  int final_at = -1;
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] == "held checkpoint") held_at = static_cast<int>(i);
    if (order[i] == "final") final_at = static_cast<int>(i);
  }
  EXPECT_GE(held_at, 0);
  EXPECT_LT(held_at, final_at);
  auto stored = store->getSweep(id);
  ASSERT_TRUE(stored.ok()) << stored.status().toString();
  ASSERT_TRUE(stored->has_value());
  EXPECT_EQ((*stored)->state, "finished");
  auto report = store->sweepReportSummary(id);
  ASSERT_TRUE(report.ok()) << report.status().toString();
  EXPECT_TRUE(report->has_value());
  manager.shutdown();
}

}  // namespace
}  // namespace gdrmesh::testing
