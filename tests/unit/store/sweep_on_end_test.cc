// SweepManagerOptions::on_end, the one call at a sweep's end that coordinator/actions hangs on:
// called once per ended sweep with its id, state, hosts, suspects and the hosts that passed,
// before the report is stored, and the lines it returns are notes of the stored report (what
// `gdrmesh sweep show` prints). Fake workers on a SystemClock; the test waits on
// SweepManager::waitForChange, never on a sleep.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "coordinator/orchestrator/sweep_manager.h"
#include "coordinator/store/result_writer.h"
#include "coordinator/store/sqlite_store.h"
#include "tests/support/empty_sweep_codec.h"
#include "tests/support/fake_worker_channel.h"
#include "tests/support/temp_dir.h"

namespace gdrmesh::testing {
namespace {

Result<ClusterConfig> onEndNoConfig(const std::string& /*yaml*/) {
  return ClusterConfig{};
}

TEST(SweepOnEnd, TellsTheEndOnceAndItsLinesBecomeNotesOfTheReport) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  auto opened = SqliteStore::open(dir.file("results.db"));
  ASSERT_TRUE(opened.ok()) << opened.status().toString();
  std::unique_ptr<SqliteStore> store = std::move(opened).value();
  SystemClock clock;
  ResultWriter writer(*store, clock);
  FakeDirectory workers(clock);
  for (int i = 0; i < 5; ++i) workers.add("h" + std::to_string(i));
  workers.fake("h4").behaviour.fail_run = unavailable("connection reset by peer");
  EmptyCodec codec;
  std::mutex mu;
  std::vector<SweepEnding> ends;
  SweepManagerOptions options;
  options.checkpoint_seconds = 0.05;
  options.executor.pair.lost_grace_seconds = 0.01;
  options.on_end = [&](const SweepEnding& end) {
    std::lock_guard<std::mutex> lock(mu);
    ends.push_back(end);
    return std::vector<std::string>{"action drain h4: taken (fake)"};
  };
  SweepManager manager(workers, clock, *store, *store, writer, codec, onEndNoConfig, options);

  SweepSpec spec;
  spec.pattern = SweepPattern::kAllPairs;
  spec.test.message_size = 65536;
  spec.test.iterations = 10;
  spec.retries = 0;
  spec.localise = true;
  auto started = manager.start(spec);
  ASSERT_TRUE(started.ok()) << started.status().toString();
  const std::string id = started->id;
  SweepProgress p = *started;
  uint64_t version = 0;
  const auto give_up = clock.now() + std::chrono::seconds(120);
  while (p.state == SweepState::kQueued || p.state == SweepState::kRunning || p.report_pending) {
    ASSERT_LT(clock.now(), give_up) << "the sweep did not end";
    auto next = manager.waitForChange(id, version, clock.now() + std::chrono::seconds(1));
    ASSERT_TRUE(next.ok()) << next.status().toString();
    p = next->first;
    version = next->second;
  }
  ASSERT_EQ(p.state, SweepState::kFinished) << p.reason;

  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(ends.size(), 1u);
  const SweepEnding& e = ends[0];
  EXPECT_EQ(e.sweep_id, id);
  EXPECT_EQ(e.state, SweepState::kFinished);
  EXPECT_EQ(e.verdict, "FAIL");
  EXPECT_EQ(e.hosts.size(), 5u);
  EXPECT_EQ(e.cluster_hosts, 5u);  // every worker the directory knows: the breaker's base
  ASSERT_FALSE(e.suspects.empty());
  EXPECT_EQ(e.suspects[0].kind, "host");
  EXPECT_EQ(e.suspects[0].name, "h4");
  // Hosts with a PASS verdict (h4 has some too, in pairs its failing run did not spoil); the
  // suspects are what rule a host out (ActionEngine::passedOf).
  for (const std::string h : {"h0", "h1", "h2", "h3"}) EXPECT_EQ(e.passing.count(h), 1u) << h;

  auto report = manager.report(id);
  ASSERT_TRUE(report.ok()) << report.status().toString();
  bool noted = false;
  for (const auto& n : report->notes) noted = noted || n == "action drain h4: taken (fake)";
  EXPECT_TRUE(noted) << "the action lines are notes of the stored report";
  auto stored = store->sweepReportSummary(id);
  ASSERT_TRUE(stored.ok()) << stored.status().toString();
  ASSERT_TRUE(stored->has_value()) << "no stored report";
  const auto& notes = (*stored)->notes;
  EXPECT_NE(std::find(notes.begin(), notes.end(), "action drain h4: taken (fake)"), notes.end())
      << "the action lines are stored with the report";
}

}  // namespace
}  // namespace gdrmesh::testing
