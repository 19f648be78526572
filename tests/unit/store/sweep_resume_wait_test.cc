// A sweep resumed after a coordinator restart waits (on the clock, at most 30 s) for its hosts to
// register again; a registration is a WorkerDirectory event that ends the wait at once. The
// manager runs on a ManualClock that never moves here, so only the event can end the wait.
// Fake workers answer on a SystemClock; the test waits on waitForChange, never on a sleep.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "common/clock.h"
#include "coordinator/orchestrator/sweep_manager.h"
#include "coordinator/store/result_writer.h"
#include "coordinator/store/sqlite_store.h"
#include "tests/support/empty_sweep_codec.h"
#include "tests/support/fake_worker_channel.h"
#include "tests/support/temp_dir.h"

namespace gdrmesh::testing {
namespace {

Result<ClusterConfig> resumeWaitNoConfig(const std::string& /*yaml*/) {
  return ClusterConfig{};
}

TEST(SweepResumeWait, AHostThatRegistersLateEndsTheWaitWithoutTheClockMoving) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  auto opened = SqliteStore::open(dir.file("results.db"));
  ASSERT_TRUE(opened.ok()) << opened.status().toString();
  std::unique_ptr<SqliteStore> store = std::move(opened).value();
  ManualClock clock;   // the manager's: the 30 s resume bound never passes
  SystemClock fabric;  // the fake workers answer in real time
  ResultWriter writer(*store, fabric);
  FakeDirectory workers(fabric);
  workers.add("h0");
  workers.add("h1");
  workers.setOffline("h1");  // not back yet after the restart

  // What a coordinator killed mid-sweep leaves: a running sweep of two hosts.
  SweepRecord rec;
  rec.id = "s-resume";
  rec.state = "running";
  rec.pattern = "all-pairs";
  rec.spec_json = "{}";
  rec.plan_json = R"({"hosts":["h0","h1"],"plan_size":2})";
  rec.created_ms = clock.unixMs() - 1000;
  rec.started_ms = rec.created_ms;
  rec.tests_total = 2;
  ASSERT_TRUE(store->createSweep(rec).ok());

  EmptyCodec codec;
  SweepManagerOptions options;
  SweepManager manager(workers, clock, *store, *store, writer, codec, resumeWaitNoConfig, options);
  manager.resumeInterrupted();
  workers.setOnline("h1");  // registers again: before or during the wait, either ends it

  SweepProgress p;
  p.state = SweepState::kQueued;
  uint64_t version = 0;
  while (p.state == SweepState::kQueued || p.state == SweepState::kRunning) {
    // No deadline that could pass: the ManualClock does not move.
    auto next = manager.waitForChange(rec.id, version, clock.after(3600));
    ASSERT_TRUE(next.ok()) << next.status().toString();
    p = next->first;
    version = next->second;
  }
  EXPECT_EQ(p.state, SweepState::kFinished) << p.reason;
  writer.flush();
  ResultQuery q;
  q.run_id = rec.id;
  q.limit = 0;
  auto rows = store->queryResults(q);
  ASSERT_TRUE(rows.ok()) << rows.status().toString();
  ASSERT_FALSE(rows->empty());
  for (const TestResult& r : *rows) {
    EXPECT_EQ(r.reason.find("offline"), std::string::npos)
        << "a test ran before its host was back: " << r.reason;
  }
  manager.shutdown();
}

}  // namespace
}  // namespace gdrmesh::testing
