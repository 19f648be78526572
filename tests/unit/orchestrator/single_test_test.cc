// `gdrmesh test` as a one-pair run (single_test.h): validation and lookup errors, the marker
// while it runs, the store through the ResultWriter (spooled and held when refused), and the
// resources it shares with a sweep's executor. Fake workers, the MemoryStore and a ManualClock
// moved by this thread: every reply, end and start runs inside advance() here.
#include "coordinator/orchestrator/single_test.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/sync/mutex.h"
#include "coordinator/orchestrator/executor.h"
#include "coordinator/orchestrator/test_runs.h"
#include "coordinator/store/result_spool.h"
#include "tests/support/empty_sweep_codec.h"
#include "tests/support/fabric_trees.h"
#include "tests/support/fake_worker_channel.h"
#include "tests/support/memory_store.h"
#include "tests/support/sweep_wait.h"
#include "tests/support/temp_dir.h"

namespace gdrmesh {
namespace {

using testing::FakeDirectory;
using testing::MemoryStore;

// The MemoryStore's results, refused as a full disk is while `full`.
class FillableRecords final : public ResultRecords {
 public:
  explicit FillableRecords(MemoryStore& store) : store_(store) {}
  std::atomic<bool> full{false};
  Result<int64_t> insertResult(const TestResult& r) override {
    if (full.load()) return diskFull();
    return store_.insertResult(r);
  }
  Result<std::vector<int64_t>> insertResults(const std::vector<TestResult>& rs) override {
    if (full.load()) return diskFull();
    return store_.insertResults(rs);
  }
  Result<std::vector<TestResult>> queryResults(const ResultQuery& q) override {
    return store_.queryResults(q);
  }
  Result<std::optional<TestResult>> getResult(const std::string& id) override {
    return store_.getResult(id);
  }
  Result<uint64_t> countResults(const ResultQuery& q) override { return store_.countResults(q); }
  Result<std::vector<TestResult>> queryHistory(const HistoryQuery& q) override {
    return store_.queryHistory(q);
  }

 private:
  static Status diskFull() {
    return Status(Code::kResourceExhausted, "database disk is full: test.db", "free space");
  }
  MemoryStore& store_;
};

struct SingleRig {
  SingleRig() {
    EXPECT_TRUE(dir.ok());
    workers.add("h0");
    workers.add("h1");
  }
  // Starts a test of `spec` and moves the clock until it ends; the end, or the start's error.
  Result<SingleTestEnd> runToEnd(const PairTestSpec& spec) {
    std::optional<SingleTestEnd> end;
    Status st = tests.start(spec, [&](SingleTestEnd e) { end = std::move(e); });
    if (!st.ok()) return st;
    for (int ms = 0; !end && ms < 3'600'000; ++ms) clock.advance(std::chrono::milliseconds(1));
    if (!end) return internalError("the test never ended");
    return std::move(*end);
  }
  std::unique_ptr<ResultWriter> makeWriter() {
    ResultWriter::Options o;
    o.spool = &spool;
    return std::make_unique<ResultWriter>(records, clock, o);
  }
  size_t markers() {
    auto open = store.unfinishedTests();
    EXPECT_TRUE(open.ok());
    return open.ok() ? open->size() : 0;
  }

  testing::TempDir dir;
  ManualClock clock;
  FakeDirectory workers{clock};
  MemoryStore store;
  FillableRecords records{store};
  ResultSpool spool{dir.file("results.db.spool")};
  std::unique_ptr<ResultWriter> writer = makeWriter();
  ResourceLocks locks;
  SingleTests tests{SingleTestDeps{workers, clock, store, *writer, locks}, SingleTestOptions{}};
};

PairTestSpec pairOf(const std::string& a, const std::string& b) {
  PairTestSpec spec;
  spec.initiator.worker = a;
  spec.target.worker = b;
  spec.iterations = 10;
  return spec;
}

TEST(SingleTestTest, AnUnknownWorkerIsAnErrorNamingTheSideAndTheFix) {
  SingleRig rig;
  auto r = rig.runToEnd(pairOf("h0", "nope"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_NE(r.status().message().find("target: unknown worker 'nope' (known: h0, h1)"),
            std::string::npos)
      << r.status().toString();
  EXPECT_NE(r.status().fix().find("--name nope"), std::string::npos) << r.status().fix();
  EXPECT_TRUE(rig.workers.fake("h0").log().empty()) << "nothing was sent";
  EXPECT_EQ(rig.markers(), 0u);
}

TEST(SingleTestTest, AnOfflineWorkerIsAnErrorNamingItsState) {
  SingleRig rig;
  rig.workers.setOffline("h0");
  auto r = rig.runToEnd(pairOf("h0", "h1"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("initiator: worker 'h0' is offline"), std::string::npos)
      << r.status().toString();
  EXPECT_NE(r.status().fix().find("gdrmesh workers"), std::string::npos) << r.status().fix();
  EXPECT_TRUE(rig.workers.fake("h1").log().empty());
}

TEST(SingleTestTest, ItsMarkerIsStoredWhileItRunsAndClearedOnceItsResultIsStored) {
  SingleRig rig;
  std::optional<SingleTestEnd> end;
  ASSERT_TRUE(
      rig.tests.start(pairOf("h0", "h1"), [&](SingleTestEnd e) { end = std::move(e); }).ok());
  ASSERT_FALSE(end.has_value()) << "start() returns while the test runs";
  auto open = rig.store.unfinishedTests();
  ASSERT_TRUE(open.ok());
  ASSERT_EQ(open->size(), 1u) << "the marker is in the store from the start";
  while (!end) rig.clock.advance(std::chrono::milliseconds(1));
  EXPECT_EQ(end->result.test_id, (*open)[0].test_id);
  EXPECT_TRUE(end->marked);
  EXPECT_EQ(end->result.status, TestStatus::kPassed) << end->result.reason;
  EXPECT_EQ(rig.markers(), 1u) << "ended but not stored: the marker stays";
  SingleTestOutcome out = rig.tests.store(std::move(*end));
  EXPECT_TRUE(out.store_error.ok()) << out.store_error.toString();
  EXPECT_GT(out.result.id, 0);
  EXPECT_EQ(rig.markers(), 0u);
  auto stored = rig.store.getResult(out.result.test_id);
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->plan_index, -1) << "not a sweep's test";
}

// The store refuses (disk full): the answer says the result is durable in the spool, it is
// held (listed) and its marker kept; once the store takes writes again it is stored, before
// the next result, and its marker goes.
TEST(SingleTestTest, ARefusedResultIsSpooledHeldAndStoredOnceTheStoreTakesWritesAgain) {
  SingleRig rig;
  rig.records.full = true;
  auto first = rig.runToEnd(pairOf("h0", "h1"));
  ASSERT_TRUE(first.ok()) << first.status().toString();
  SingleTestOutcome held = rig.tests.store(std::move(*first));
  EXPECT_EQ(held.store_error.code(), Code::kResourceExhausted);
  EXPECT_NE(held.store_error.message().find("durable in the spool"), std::string::npos)
      << held.store_error.toString();
  ASSERT_EQ(rig.writer->held().size(), 1u);
  EXPECT_EQ(rig.writer->held()[0].test_id, held.result.test_id);
  EXPECT_EQ(rig.markers(), 1u) << "the marker stays until the result is stored";

  rig.records.full = false;
  auto second = rig.runToEnd(pairOf("h1", "h0"));
  ASSERT_TRUE(second.ok()) << second.status().toString();
  SingleTestOutcome stored = rig.tests.store(std::move(*second));
  EXPECT_TRUE(stored.store_error.ok()) << stored.store_error.toString();
  EXPECT_TRUE(rig.writer->held().empty());
  auto rows = rig.store.queryResults(ResultQuery());
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ(rig.markers(), 0u);
  auto one = rig.store.getResult(held.result.test_id);
  ASSERT_TRUE(one.ok() && one->has_value()) << "the held result is stored";
}

// A `gdrmesh test` on hosts a sweep's test holds waits for it (the coordinator's shared
// ResourceLocks), then runs: the two never share a NIC. Before, RunTest ran the pair test
// directly, beside the sweep's.
TEST(SingleTestTest, ATestOnANicARunningSweepHoldsWaitsForIt) {
  SingleRig rig;
  ExecutorOptions so;
  so.locks = &rig.locks;
  Executor sweep(rig.workers, rig.clock, so);
  std::vector<std::string> order;
  bool sweep_done = false;
  ExecutorCallbacks cb;
  cb.on_result = [&](int, const TestResult&) { order.push_back("sweep ended"); };
  cb.on_done = [&](size_t) { sweep_done = true; };
  ExecutorTask t;
  t.spec = pairOf("h0", "h1");
  t.spec.initiator.device = t.spec.target.device = "mlx5_0";
  t.resources = resourceKeys(t.spec);
  sweep.start(std::vector<ExecutorTask>{t}, cb);
  ASSERT_EQ(rig.locks.held(), 1u);

  std::optional<SingleTestEnd> end;
  ASSERT_TRUE(rig.tests
                  .start(pairOf("h1", "h0"),
                         [&](SingleTestEnd e) {
                           order.push_back("test ended");
                           end = std::move(e);
                         })
                  .ok());
  EXPECT_EQ(rig.locks.waiting(), 1u) << "the test waits for h0 and h1";
  EXPECT_EQ(rig.markers(), 0u) << "it has not started";
  while (!end || !sweep_done) rig.clock.advance(std::chrono::milliseconds(1));
  EXPECT_EQ(order, (std::vector<std::string>{"sweep ended", "test ended"}));
  EXPECT_EQ(end->result.status, TestStatus::kPassed) << end->result.reason;
  EXPECT_EQ(rig.workers.fake("h0").maxInFlight(), 1) << "h0 was in two tests at once";
  EXPECT_EQ(rig.workers.fake("h1").maxInFlight(), 1) << "h1 was in two tests at once";
  (void)rig.tests.store(std::move(*end));
  EXPECT_EQ(rig.locks.held(), 0u);
}

// Issue #19: the coordinator's wiring (TestRuns, as CoordinatorServer holds it) gives its sweeps
// and `gdrmesh test` ONE ResourceLocks. A one-pair test on the hosts a running sweep's test
// holds waits for it and never runs beside it; with a ResourceLocks of its own each, h0 and h1
// were in two tests at once.
TEST(TestRunsTest, AGdrmeshTestWaitsForTheRunningSweepsTestOnItsHosts) {
  ManualClock clock;
  FakeDirectory workers{clock};
  workers.add("h0");
  workers.add("h1");
  MemoryStore store;
  ResultWriter writer(store, clock);
  testing::EmptyCodec codec;
  auto runs =
      std::make_unique<TestRuns>(TestRunsDeps{workers, clock, store, store, writer, codec, nullptr},
                                 SingleTestOptions{}, SweepManagerOptions{});
  // Waits, with the clock standing still, for what another thread does (bounded by real time:
  // a safety net, not a timing).
  auto await = [](const std::function<bool()>& done) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!done() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    return done();
  };
  auto started = runs->sweeps().start(testing::plainAllPairs());
  ASSERT_TRUE(started.ok()) << started.status().toString();
  // The sweep's thread starts its first test (h0 and h1, one test a round): it holds them.
  ASSERT_TRUE(await([&] { return runs->locks().held() == 1; }));

  Mutex mu;
  std::optional<SingleTestEnd> end;
  auto ended = [&] {
    MutexLock lock(mu);
    return end.has_value();
  };
  ASSERT_TRUE(runs->single()
                  .start(pairOf("h1", "h0"),
                         [&](SingleTestEnd e) {
                           MutexLock lock(mu);
                           end = std::move(e);
                         })
                  .ok());
  EXPECT_EQ(runs->locks().waiting(), 1u) << "the test waits for the sweep's test on h0 and h1";
  for (int ms = 0; !ended() && ms < 600'000; ++ms) clock.advance(std::chrono::milliseconds(1));
  ASSERT_TRUE(ended());
  {
    MutexLock lock(mu);
    EXPECT_EQ(end->result.status, TestStatus::kPassed) << end->result.reason;
    (void)runs->single().store(std::move(*end));
  }
  EXPECT_EQ(workers.fake("h0").maxInFlight(), 1) << "h0 was in two tests at once";
  EXPECT_EQ(workers.fake("h1").maxInFlight(), 1) << "h1 was in two tests at once";

  // The sweep stops with time moving: its tests in flight and the writer's batch wait on the
  // clock.
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    runs.reset();
    stopped = true;
  });
  (void)await([&] {
    clock.advance(std::chrono::milliseconds(10));
    return stopped.load();
  });
  stopper.join();
}

// With the coordinator's fabric, a single test's path is stored both ways, hop by hop, as a
// sweep's tests' are, traced through the snapshot current when it started: a newer one adopted
// while it runs applies to the next test (whose path moves with the new tables), and each path
// says which snapshot it came from.
TEST(SingleTestTest, WithAFabricItsPathIsStoredBothWaysFromTheSnapshotItStartedOn) {
  SingleRig rig;
  // h0 is h01 on leaf01 port 1, h1 is h03 on leaf02 port 1; LID 97 (h03) goes up by port 4
  // (spine02) in the first tables, by port 3 (spine01) once rerouted.
  const std::map<std::string, std::string> hosts{{"h0", "h01"}, {"h1", "h03"}};
  FabricSource source(
      std::make_shared<const SweepFabric>(testing::twoLevelTree(2, 2, 2), hosts, "tree.json"));
  SingleTests tests{SingleTestDeps{rig.workers, rig.clock, rig.store, *rig.writer, rig.locks,
                                   &source, &rig.store},
                    SingleTestOptions{}};
  auto runOne = [&](bool adopt_meanwhile) {
    std::optional<SingleTestEnd> end;
    EXPECT_TRUE(tests.start(pairOf("h0", "h1"), [&](SingleTestEnd e) { end = std::move(e); }).ok());
    if (adopt_meanwhile) {
      EXPECT_TRUE(
          source.adopt(testing::rerouteLeafUplinks(testing::twoLevelTree(2, 2, 2), 2, 2), "@7"));
    }
    while (!end) rig.clock.advance(std::chrono::milliseconds(1));
    return tests.store(std::move(*end));
  };
  auto hopsOf = [&](const std::string& test_id) {
    auto hops = rig.store.testPath(test_id);
    EXPECT_TRUE(hops.ok());
    return hops.ok() ? *hops : std::vector<PathHopRecord>{};
  };

  const SingleTestOutcome first = runOne(/*adopt_meanwhile=*/true);
  ASSERT_TRUE(first.store_error.ok()) << first.store_error.toString();
  EXPECT_EQ(first.path_note, "");
  EXPECT_EQ(first.path_hops, 6u) << "leaf, spine, leaf; both ways";
  const std::vector<PathHopRecord> a = hopsOf(first.result.test_id);
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(a[0].direction, "forward");
  EXPECT_EQ(a[0].switch_name, "leaf01");
  EXPECT_EQ(a[0].in_port, 1);
  EXPECT_EQ(a[0].out_port, 4) << "the tables it started on: up to spine02";
  EXPECT_EQ(a[1].switch_name, "spine02");
  EXPECT_EQ(a[2].switch_name, "leaf02");
  EXPECT_EQ(a[2].out_port, 1);
  EXPECT_EQ(a[3].direction, "reverse");
  EXPECT_EQ(a[3].switch_name, "leaf02");
  EXPECT_EQ(a[5].switch_name, "leaf01");
  EXPECT_EQ(a[5].out_port, 1);
  for (const auto& h : a) {
    EXPECT_EQ(h.fabric, "tree.json");
    EXPECT_EQ(h.sweep_id, "") << "not a sweep's test";
  }

  const SingleTestOutcome second = runOne(/*adopt_meanwhile=*/false);
  const std::vector<PathHopRecord> b = hopsOf(second.result.test_id);
  ASSERT_EQ(b.size(), 6u);
  EXPECT_EQ(b[0].out_port, 3) << "the adopted tables: up to spine01";
  EXPECT_EQ(b[1].switch_name, "spine01");
  for (const auto& h : b) EXPECT_EQ(h.fabric, "@7");
}

// Without a fabric nothing is traced; with one, a worker that has no HCA in it is said, not
// stored.
TEST(SingleTestTest, APairWithoutAnHcaHasNoPathAndSaysWhy) {
  SingleRig rig;
  FabricSource source(std::make_shared<const SweepFabric>(
      testing::twoLevelTree(2, 2, 2), std::map<std::string, std::string>{{"h0", "h01"}},
      "tree.json"));
  SingleTests tests{SingleTestDeps{rig.workers, rig.clock, rig.store, *rig.writer, rig.locks,
                                   &source, &rig.store},
                    SingleTestOptions{}};
  std::optional<SingleTestEnd> end;
  ASSERT_TRUE(tests.start(pairOf("h0", "h1"), [&](SingleTestEnd e) { end = std::move(e); }).ok());
  while (!end) rig.clock.advance(std::chrono::milliseconds(1));
  const SingleTestOutcome out = tests.store(std::move(*end));
  EXPECT_EQ(out.path_hops, 0u);
  EXPECT_NE(out.path_note.find("has no HCA in tree.json"), std::string::npos) << out.path_note;
  auto hops = rig.store.testPath(out.result.test_id);
  ASSERT_TRUE(hops.ok());
  EXPECT_TRUE(hops->empty());
  // A snapshot without tables is not adopted: paths need them.
  fabric::Fabric no_lfts = testing::twoLevelTree(2, 2, 2);
  for (auto& sw : no_lfts.switches) sw.lft.clear();
  EXPECT_FALSE(source.adopt(no_lfts, "@8"));
  EXPECT_EQ(source.current()->source(), "tree.json");
}

}  // namespace
}  // namespace gdrmesh
