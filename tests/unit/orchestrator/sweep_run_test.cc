// SweepRunner, the run of one sweep, on a thread of the test: a resumed sweep waits for its
// hosts on directory events (a worker that registers late), bounded by the injected clock, and
// a cancel ends that wait at once. Fake workers and a ManualClock (sweep_rig.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "common/fabric/cover.h"
#include "common/sync/mutex.h"
#include "tests/support/fabric_trees.h"
#include "tests/unit/orchestrator/sweep_rig.h"

namespace gdrmesh::testing {
namespace {

// A planned sweep, on the board and stored, as the queue resumes one after a restart: its plan
// is made again once its hosts are back.
std::shared_ptr<LiveSweep> resumedSweep(SweepRig& rig, RigCoordinator& c) {
  auto planned = c.runner.plan(rigAllPairs());
  EXPECT_TRUE(planned.ok()) << planned.status().toString();
  std::shared_ptr<LiveSweep> s = *planned;
  MutexLock lock(c.board.mu);
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
    MutexLock lock(c.board.mu);
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
    MutexLock lock(c.board.mu);
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

// Results whose inserts wait at a gate the test opens: the writer's last results are still
// being stored when the sweep's last test has ended.
class GatedResults final : public ResultRecords {
 public:
  explicit GatedResults(ResultRecords& inner) : inner_(inner) {}
  void open() {
    {
      MutexLock lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  Result<int64_t> insertResult(const TestResult& result) override {
    pass();
    return inner_.insertResult(result);
  }
  Result<std::vector<int64_t>> insertResults(const std::vector<TestResult>& results) override {
    pass();
    return inner_.insertResults(results);
  }
  Result<std::vector<TestResult>> queryResults(const ResultQuery& query) override {
    return inner_.queryResults(query);
  }
  Result<std::optional<TestResult>> getResult(const std::string& test_id) override {
    return inner_.getResult(test_id);
  }
  Result<uint64_t> countResults(const ResultQuery& query) override {
    return inner_.countResults(query);
  }
  Result<std::vector<TestResult>> queryHistory(const HistoryQuery& query) override {
    return inner_.queryHistory(query);
  }

 private:
  void pass() {
    UniqueLock lock(mu_);
    cv_.wait(lock.native(), [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return open_; });
  }
  ResultRecords& inner_;
  Mutex mu_;
  std::condition_variable cv_;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
};

// The judge reads the rows held in memory: the end and the verdict are shown while the writer
// still stores the last results (at 1,024 hosts one to two seconds of them, issue #19), and a
// query of the sweep's results waits until every one is stored.
TEST(SweepRun, TheVerdictIsShownBeforeTheLastResultsAreStoredAndTheirQueryWaitsForThem) {
  std::unique_ptr<GatedResults> gated;  // outlives the rig's writer
  SweepRig rig;
  gated = std::make_unique<GatedResults>(*rig.store);
  rig.writer = std::make_unique<ResultWriter>(*gated, rig.clock);
  RigCoordinator& c = rig.start();
  auto planned = c.runner.plan(rigAllPairs());
  ASSERT_TRUE(planned.ok());
  std::shared_ptr<LiveSweep> s = *planned;
  {
    MutexLock lock(c.board.mu);
    ASSERT_TRUE(rig.store->createSweep(c.runner.recordOf(*s)).ok());
    c.board.recent[s->id] = s;
  }
  std::optional<RunThread> run;
  run.emplace(c, s);
  // Before: the run flushed the writer first, so no end was shown while the store held the
  // results back.
  SweepProgress shown;
  ASSERT_TRUE(rig.drive([&] {
    auto p = c.reports.progress(s->id);
    if (p.ok()) shown = *p;
    return p.ok() && p->state == SweepState::kFinished;
  })) << "no end shown while the last results wait to be stored";
  EXPECT_EQ(shown.verdict, "PASS");
  EXPECT_TRUE(shown.report_pending);
  auto stored = rig.store->countResults([&] {
    ResultQuery q;
    q.run_id = s->id;
    return q;
  }());
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(*stored, 0U) << "the gate let results through before the end";
  // The report without results is read at once, from memory.
  auto verdicts = c.reports.report(s->id);
  ASSERT_TRUE(verdicts.ok()) << verdicts.status().toString();
  EXPECT_EQ(verdicts->verdicts.size(), 6U);
  // A query of its results waits for them, on the clock: 30 s without them is an error that
  // says why, not a short list.
  EXPECT_FALSE(c.board.awaitResultsStored(s->id, rig.clock.now()));
  std::atomic<bool> answered{false};
  Result<SweepReportData> with_results = internalError("not answered");
  SweepReportQuery q;
  q.with_results = true;
  std::thread reader([&] {
    with_results = c.reports.report(s->id, q);
    answered = true;
  });
  ASSERT_TRUE(rig.drive([&] { return answered.load(); }, 1.0));
  reader.join();
  ASSERT_FALSE(with_results.ok()) << with_results->results.size() << " results";
  EXPECT_EQ(with_results.status().code(), Code::kUnavailable);
  EXPECT_NE(with_results.status().message().find("still being written"), std::string::npos)
      << with_results.status().toString();
  // Once stored, every result is read.
  gated->open();
  ASSERT_TRUE(rig.drive([&] { return c.board.awaitResultsStored(s->id, rig.clock.now()); }));
  with_results = c.reports.report(s->id, q);
  ASSERT_TRUE(with_results.ok()) << with_results.status().toString();
  EXPECT_EQ(with_results->results.size(), 6U);
  EXPECT_EQ(rig.finish(c, s->id).state, SweepState::kFinished);
  run.reset();
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
    MutexLock lock(c.board.mu);
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

// A coordinator with a fabric: the rig's workers h0..h3 mapped to the HCAs of a two-leaf tree
// (fabric_hosts), every test's path stored both ways, and the report's notes telling the match and
// the coverage; then `cover` runs the cover planner's rounds.
std::shared_ptr<const SweepFabric> rigFabric() {
  return std::make_shared<const SweepFabric>(
      twoLevelTree(2, 2, 2),
      std::map<std::string, std::string>{
          {"h0", "h01"}, {"h1", "h02 mlx5_0"}, {"h2", "h03"}, {"h3", "h04"}},
      "tree.json");
}

std::vector<std::string> runRigSweep(SweepRig& rig, RigCoordinator& c, const SweepSpec& spec,
                                     std::string* id) {
  auto planned = c.runner.plan(spec);
  EXPECT_TRUE(planned.ok()) << planned.status().toString();
  if (!planned.ok()) return {};
  std::shared_ptr<LiveSweep> s = *planned;
  {
    MutexLock lock(c.board.mu);
    EXPECT_TRUE(rig.store->createSweep(c.runner.recordOf(*s)).ok());
    c.board.recent[s->id] = s;
  }
  *id = s->id;
  {
    RunThread run(c, s);
    EXPECT_EQ(rig.finish(c, s->id).state, SweepState::kFinished);
  }
  auto summary = rig.store->sweepReportSummary(s->id);
  EXPECT_TRUE(summary.ok() && summary->has_value());
  return summary.ok() && summary->has_value() ? (*summary)->notes : std::vector<std::string>{};
}

TEST(SweepRun, WithAFabricEveryTestsPathIsStoredAndTheReportTellsMatchAndCoverage) {
  SweepRig rig;
  SweepManagerOptions options;
  options.fabric = rigFabric();
  options.paths = rig.store.get();
  RigCoordinator& c = rig.start(options);
  std::string id;
  const std::vector<std::string> notes = runRigSweep(rig, c, rigAllPairs(), &id);
  auto results = rig.store->queryResults([&] {
    ResultQuery q;
    q.run_id = id;
    return q;
  }());
  ASSERT_TRUE(results.ok());
  ASSERT_FALSE(results->empty());
  for (const TestResult& r : *results) {
    auto hops = rig.store->testPath(r.test_id);
    ASSERT_TRUE(hops.ok());
    size_t forward = 0, reverse = 0;
    for (const auto& h : *hops) (h.direction == "forward" ? forward : reverse) += 1;
    // Same leaf: one switch; across the spines: three, both ways.
    EXPECT_GE(forward, 1U) << r.test_id;
    EXPECT_EQ(forward, reverse) << r.test_id;
  }
  auto all = rig.store->sweepPaths(id);
  ASSERT_TRUE(all.ok());
  EXPECT_FALSE(all->empty());
  auto has = [&](const std::string& prefix) {
    return std::any_of(notes.begin(), notes.end(),
                       [&](const std::string& n) { return n.rfind(prefix, 0) == 0; });
  };
  EXPECT_TRUE(has("fabric: 4 of 4 workers matched to HCAs"));
  EXPECT_TRUE(has("fabric coverage: "));
}

std::string allNotesOf(SweepRig& rig, const std::string& id) {
  auto summary = rig.store->sweepReportSummary(id);
  std::string out;
  if (summary.ok() && summary->has_value()) {
    for (const auto& n : (*summary)->notes) out += n + "\n";
  }
  return out;
}

// Paths are re-read when the fabric changes: a newer snapshot adopted while the sweep runs (a
// discovery through the coordinator) traces the tests that start after it through its tables;
// the tests that started before keep the snapshot they ran on, each stored path says which,
// and the report says the tables changed.
TEST(SweepRun, ASnapshotAdoptedDuringTheSweepTracesTheTestsStartedAfterIt) {
  SweepRig rig;
  SweepManagerOptions options;
  options.fabric = rigFabric();
  options.fabric_source = std::make_shared<FabricSource>(options.fabric);
  options.paths = rig.store.get();
  RigCoordinator& c = rig.start(options);
  SweepSpec spec = rigAllPairs();
  spec.max_concurrency = 1;  // one test at a time: some start after the snapshot changes
  auto planned = c.runner.plan(spec);
  ASSERT_TRUE(planned.ok()) << planned.status().toString();
  std::shared_ptr<LiveSweep> s = *planned;
  {
    MutexLock lock(c.board.mu);
    ASSERT_TRUE(rig.store->createSweep(c.runner.recordOf(*s)).ok());
    c.board.recent[s->id] = s;
  }
  std::set<std::string> started_before;  // test ids that started before the new snapshot
  {
    RunThread run(c, s);
    ASSERT_TRUE(rig.drive([&] {
      MutexLock lock(c.board.mu);
      return s->done.size() >= 1;
    }));
    {
      MutexLock lock(c.board.mu);
      for (const auto& [index, test_id] : s->in_flight) started_before.insert(test_id);
      // Ended ones too (their results may still be on their way to the store).
      for (size_t k = 0; k < s->rows.size(); ++k) {
        started_before.insert(std::string(s->rows.testId(s->rows[k])));
      }
    }
    ASSERT_TRUE(options.fabric_source->adopt(
        testing::rerouteLeafUplinks(testing::twoLevelTree(2, 2, 2), 2, 2), "@7"));
    EXPECT_EQ(rig.finish(c, s->id).state, SweepState::kFinished);
  }
  const std::shared_ptr<const SweepFabric> before = options.fabric;
  const std::shared_ptr<const SweepFabric> after = options.fabric_source->current();
  auto results = rig.store->queryResults([&] {
    ResultQuery q;
    q.run_id = s->id;
    return q;
  }());
  ASSERT_TRUE(results.ok());
  size_t old_tables = 0, new_tables = 0, crossed = 0;
  for (const TestResult& r : *results) {
    const bool was_before = started_before.count(r.test_id) > 0;
    const SweepFabric& want = was_before ? *before : *after;
    auto hops = rig.store->testPath(r.test_id);
    ASSERT_TRUE(hops.ok());
    ASSERT_FALSE(hops->empty()) << r.test_id << (was_before ? " (old tables)" : " (new tables)")
                                << "\n"
                                << allNotesOf(rig, s->id);
    // The path the test's own snapshot gives, hop by hop.
    JudgeRows one;
    one.add(r);
    const RowPaths p = want.paths(one, want.match(rig.workers.list()));
    ASSERT_TRUE(p.known[0]) << r.test_id;
    std::vector<fabric::Hop> expect = p.forward[0];
    expect.insert(expect.end(), p.reverse[0].begin(), p.reverse[0].end());
    ASSERT_EQ(hops->size(), expect.size()) << r.test_id;
    for (size_t h = 0; h < expect.size(); ++h) {
      EXPECT_EQ((*hops)[h].switch_name, expect[h].switch_name) << r.test_id << " hop " << h;
      EXPECT_EQ((*hops)[h].out_port, expect[h].out_port) << r.test_id << " hop " << h;
      EXPECT_EQ((*hops)[h].fabric, was_before ? "tree.json" : "@7") << r.test_id;
    }
    (was_before ? old_tables : new_tables) += 1;
    crossed += hops->size() > 2 ? 1 : 0;
  }
  EXPECT_GT(old_tables, 0u);
  EXPECT_GT(new_tables, 0u) << "some tests must start after the new snapshot";
  EXPECT_GT(crossed, 0u) << "some paths cross the spines, where the tables differ";
  auto summary = rig.store->sweepReportSummary(s->id);
  ASSERT_TRUE(summary.ok() && summary->has_value());
  const std::string want_note = "fabric: the tables changed during the sweep";
  const auto& notes = (*summary)->notes;
  auto note = std::find_if(notes.begin(), notes.end(),
                           [&](const std::string& n) { return n.rfind(want_note, 0) == 0; });
  ASSERT_NE(note, notes.end());
  EXPECT_NE(note->find(std::to_string(old_tables) + " tests through tree.json, " +
                       std::to_string(new_tables) + " tests through @7"),
            std::string::npos)
      << *note;
}

TEST(SweepRun, CoverNeedsAFabricAndRunsTheCoverPlannersRounds) {
  SweepRig rig;
  SweepSpec spec = rigAllPairs();
  spec.pattern = SweepPattern::kCover;
  {
    RigCoordinator& bare = rig.start();
    auto refused = bare.runner.plan(spec);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().toString().find("--fabric"), std::string::npos)
        << refused.status().toString();
  }
  SweepManagerOptions options;
  options.fabric = rigFabric();
  RigCoordinator& c = rig.start(options);
  std::string id;
  const std::vector<std::string> notes = runRigSweep(rig, c, spec, &id);
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
    return n.find("load 8 of 8 routable directed inter-switch links") != std::string::npos;
  })) << (notes.empty() ? "" : notes.front());
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
    return n.rfind("fabric coverage: 8 of 8 directed", 0) == 0;
  }));
}

// The rounds of a plan as sets of unordered pairs "a b" (a < b), round by round.
using PairRounds = std::vector<std::set<std::string>>;
std::string unorderedPair(const std::string& a, const std::string& b) {
  return a < b ? a + " " + b : b + " " + a;
}

// OpenSM's compute-node order (`fabric_ca_order:`) seeds a `cover` sweep's plan as it seeds
// `gdrmesh sweep plan --ca-order`: the sweep runs the rounds that planCover gives with the order
// (the HCAs as their workers), not the greedy's own, and its note names the file.
TEST(SweepRun, ACoverSweepPlansTheRoundsOfSweepPlanWithOpenSmsCaOrder) {
  SweepRig rig(16);
  const fabric::Fabric tree = twoLevelTree(4, 4, 4);  // h01..h16, four to a leaf
  std::map<std::string, std::string> hosts;           // worker h0 -> HCA host h01 ...
  std::map<std::string, std::string> worker_of;       // "h01 mlx5_0" -> h0
  for (int i = 0; i < 16; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "h%02d", i + 1);
    hosts["h" + std::to_string(i)] = name;
    worker_of[std::string(name) + " mlx5_0"] = "h" + std::to_string(i);
  }
  // The hosts in leaf order (LIDs of h01, h02, ... h16; the tree's LIDs are not): the seed pairs
  // h01 with h09, a leaf two over, where the greedy alone pairs neighbouring leaves.
  std::vector<uint16_t> order;
  for (int h = 1; h <= 16; ++h) order.push_back(static_cast<uint16_t>(100 - h));
  fabric::CoverOptions with_order;
  with_order.ca_order = order;
  auto want = fabric::planCover(tree, with_order);
  auto greedy = fabric::planCover(tree);
  ASSERT_TRUE(want.ok() && greedy.ok());
  auto asWorkers = [&](const fabric::CoverPlan& plan) {
    PairRounds out;
    for (const auto& round : plan.rounds) {
      out.emplace_back();
      for (const auto& p : round) out.back().insert(unorderedPair(worker_of[p.a], worker_of[p.b]));
    }
    return out;
  };
  const PairRounds expected = asWorkers(*want);
  ASSERT_NE(expected, asWorkers(*greedy)) << "the order must change the plan for this test";

  SweepManagerOptions options;
  options.fabric = std::make_shared<const SweepFabric>(tree, hosts, "tree.json");
  options.fabric_ca_order = order;
  options.fabric_ca_order_file = "opensm-ftree-ca-order.dump";
  RigCoordinator& c = rig.start(options);
  SweepSpec spec = rigAllPairs();
  spec.pattern = SweepPattern::kCover;
  auto planned = c.runner.plan(spec);
  ASSERT_TRUE(planned.ok()) << planned.status().toString();
  MutexLock lock(c.board.mu);
  const LiveSweep& s = **planned;
  PairRounds ran;
  for (size_t i = 0; i < s.plan.size(); ++i) {
    const auto round = static_cast<size_t>(s.plan.round(i));
    if (ran.size() <= round) ran.resize(round + 1);
    EXPECT_EQ(s.plan.initiator(i).device, "mlx5_0");
    ran[round].insert(unorderedPair(s.plan.initiator(i).worker, s.plan.target(i).worker));
  }
  EXPECT_EQ(ran, expected);
  EXPECT_TRUE(std::any_of(s.notes.begin(), s.notes.end(), [](const std::string& n) {
    return n.rfind("cover: ", 0) == 0 &&
           n.find("seeded with OpenSM's compute-node order opensm-ftree-ca-order.dump") !=
               std::string::npos;
  })) << (s.notes.empty() ? "" : s.notes.front());
}

// `bisection`: refused without a fabric (naming --fabric and fabric:); with one, the halves are
// the two leaves (2 pairs over the spines), and the report sets the round's summed bandwidth
// against the bound: leaf01's 2 up-links at 4x HDR = 425 Gb/s.
TEST(SweepRun, BisectionNeedsAFabricAndReportsTheRoundAgainstTheBound) {
  SweepRig rig;
  SweepSpec spec = rigAllPairs();
  spec.pattern = SweepPattern::kBisection;
  {
    RigCoordinator& bare = rig.start();
    auto refused = bare.runner.plan(spec);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().toString().find("--fabric"), std::string::npos)
        << refused.status().toString();
    EXPECT_NE(refused.status().toString().find("fabric:"), std::string::npos);
  }
  SweepManagerOptions options;
  options.fabric = rigFabric();
  RigCoordinator& c = rig.start(options);
  std::string id;
  const std::vector<std::string> notes = runRigSweep(rig, c, spec, &id);
  auto results = rig.store->queryResults([&] {
    ResultQuery q;
    q.run_id = id;
    return q;
  }());
  ASSERT_TRUE(results.ok());
  ASSERT_EQ(results->size(), 2U);
  double sum = 0;
  for (const TestResult& r : *results) {
    sum += r.measurement.bw.avg_gbps;
    // Across the cut: one end on each leaf (h0, h1 on the first; h2, h3 on the second).
    EXPECT_NE(r.initiator.worker < "h2", r.target.worker < "h2") << r.test_id;
  }
  ASSERT_GT(sum, 0);
  const std::string want = SweepFabric::bisectionNote(0, 2, sum, 425, false);
  EXPECT_NE(want.find("round 1: 2 tests across the cut"), std::string::npos) << want;
  EXPECT_TRUE(std::find(notes.begin(), notes.end(), want) != notes.end()) << want;
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
    return n.rfind("bisection: 2 pairs across the top level", 0) == 0 &&
           n.find("bisection bandwidth 425.0 Gb/s per direction") != std::string::npos;
  }));
  // The note's arithmetic: a fraction of the bound, twice the bound for bidirectional tests.
  EXPECT_NE(SweepFabric::bisectionNote(0, 2, 212.5, 425, false)
                .find("50.0 % of the fabric's "
                      "bisection bandwidth 425.0"),
            std::string::npos);
  EXPECT_NE(SweepFabric::bisectionNote(1, 2, 212.5, 425, true).find("round 2: 2 tests"),
            std::string::npos);
  EXPECT_NE(SweepFabric::bisectionNote(1, 2, 212.5, 425, true)
                .find("25.0 % of the fabric's "
                      "bisection bandwidth 850.0"),
            std::string::npos);
}

}  // namespace
}  // namespace gdrmesh::testing
