// The store contract, continued: in-flight markers of single tests (TestMarkers), per-sweep
// aggregates, totals and pair history (SweepAggregates), retention (ResultRetention) and actions
// on nodes (ActionStore), for every implementation the suite is instantiated against.
#include <gmock/gmock.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/unit/store/store_contract_test.h"

namespace gdrmesh::testing {
namespace {

using ::testing::HasSubstr;

// A result of sweep `run` with plan index `index` and a bandwidth figure (when `gbps` >= 0).
TestResult sweepRow(const std::string& id, const std::string& run, int index,
                    const std::string& src, const std::string& dst, int64_t started_ms,
                    TestStatus status, double gbps) {
  TestResult r = makeResult(id, src, dst, started_ms, status, run);
  r.plan_index = index;
  r.mode = Mode::kBandwidth;
  r.message_size = 1 << 20;
  if (gbps >= 0) {
    r.measurement.has_bandwidth = true;
    r.measurement.bw.avg_gbps = gbps;
  }
  return r;
}

ActionRecord action(const std::string& node, const std::string& sweep, int64_t at) {
  ActionRecord a;
  a.recorded_ms = at;
  a.sweep_id = sweep;
  a.node = node;
  a.action = "drain";
  a.outcome = "dry-run";
  a.actuator = "slurm";
  a.reason = "gdrmesh: suspect (sweep " + sweep + ")";
  a.detail = "scontrol update nodename=" + node + " state=drain";
  return a;
}

TEST_P(ResultStoreContractTest, TestMarkersListStartedTestsWithoutAResult) {
  TestResult started = makeResult("t-run", "a", "b", 5);
  started.run_id = "r-1";
  started.op = Op::kRead;
  started.mode = Mode::kLatency;
  started.transport = TransportKind::kSimulated;
  started.message_size = 4096;
  started.iterations = 77;
  started.num_qps = 3;
  started.initiator.host = "host-a";
  started.target.host = "host-b";
  started.reason = "not kept";
  ASSERT_TRUE(store().markTestStarted(started).ok());
  ASSERT_TRUE(store().markTestStarted(makeResult("t-done", "c", "d", 6)).ok());
  ASSERT_TRUE(store().markTestStarted(makeResult("t-early", "c", "d", 1)).ok());
  ASSERT_TRUE(store().insertResult(makeResult("t-done", "c", "d", 6)).ok());
  auto open = store().unfinishedTests();
  ASSERT_TRUE(open.ok()) << open.status().toString();
  ASSERT_EQ(open->size(), 2u) << "a marked test with a result row is not unfinished";
  EXPECT_EQ((*open)[0].test_id, "t-early");  // oldest first
  const TestResult& got = (*open)[1];
  EXPECT_EQ(got.test_id, "t-run");
  EXPECT_EQ(got.run_id, "r-1");
  EXPECT_EQ(got.started_ms, 5);
  EXPECT_EQ(got.op, Op::kRead);
  EXPECT_EQ(got.mode, Mode::kLatency);
  EXPECT_EQ(got.transport, TransportKind::kSimulated);
  EXPECT_EQ(got.message_size, 4096u);
  EXPECT_EQ(got.iterations, 77u);
  EXPECT_EQ(got.num_qps, 3u);
  EXPECT_EQ(got.initiator.worker, "a");
  EXPECT_EQ(got.initiator.host, "host-a");
  EXPECT_EQ(got.target.worker, "b");
  EXPECT_EQ(got.target.host, "host-b");
  EXPECT_EQ(got.reason, "") << "only the test's name is kept";
  // Marking again replaces; clearing removes; clearing an unknown id is fine.
  started.started_ms = 0;
  ASSERT_TRUE(store().markTestStarted(started).ok());
  open = store().unfinishedTests();
  ASSERT_TRUE(open.ok());
  ASSERT_EQ(open->size(), 2u);
  EXPECT_EQ((*open)[0].test_id, "t-run");
  ASSERT_TRUE(store().clearTestStarted("t-run").ok());
  ASSERT_TRUE(store().clearTestStarted("t-early").ok());
  ASSERT_TRUE(store().clearTestStarted("t-never-marked").ok());
  open = store().unfinishedTests();
  ASSERT_TRUE(open.ok());
  EXPECT_TRUE(open->empty());
  EXPECT_EQ(store().markTestStarted(TestResult{}).code(), Code::kInvalidArgument);
}

TEST_P(ResultStoreContractTest, DeleteResultsBeforeDeletesTheOldestInBatches) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(store().insertResult(makeResult("t" + std::to_string(i), "a", "b", 10 * i)).ok());
  }
  auto n = store().deleteResultsBefore(35, 2);  // t0..t3 are older; two at a time
  ASSERT_TRUE(n.ok()) << n.status().toString();
  EXPECT_EQ(*n, 2u);
  EXPECT_FALSE(store().getResult("t0")->has_value()) << "the oldest go first";
  EXPECT_TRUE(store().getResult("t2")->has_value());
  n = store().deleteResultsBefore(35, 2);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 2u);
  n = store().deleteResultsBefore(35, 2);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u) << "none older is left";
  EXPECT_TRUE(store().getResult("t4")->has_value());
  EXPECT_EQ(store().deleteResultsBefore(35, 0).status().code(), Code::kInvalidArgument);
}

// A pair's rows need not lie together: the aggregate gathers them wherever they were stored
// (the SQLite store streams them ordered by pair), and a plan index tested twice counts once.
TEST_P(ResultStoreContractTest, AggregatesGatherAPairsRowsStoredApart) {
  ASSERT_TRUE(sweeps().createSweep(makeSweep("s-1", 100, "finished")).ok());
  ASSERT_TRUE(store()
                  .insertResults({
                      sweepRow("r0", "s-1", 0, "a", "b", 110, TestStatus::kPassed, 80),
                      sweepRow("r1", "s-1", 1, "c", "d", 120, TestStatus::kPassed, 50),
                      sweepRow("r2", "s-1", 2, "a", "b", 130, TestStatus::kPassed, 100),
                      sweepRow("r3", "s-1", 3, "b", "a", 135, TestStatus::kPassed, 70),
                      sweepRow("r4", "s-1", 0, "a", "b", 140, TestStatus::kPassed, 90),
                  })
                  .ok());
  ASSERT_TRUE(sweeps().aggregateSweep("s-1", 4).ok());
  auto aggs = sweeps().sweepAggregates("s-1");
  ASSERT_TRUE(aggs.ok()) << aggs.status().toString();
  ASSERT_EQ(aggs->size(), 3u) << "a->b, b->a and c->d";
  std::map<std::string, PairAggregate> by_pair;
  for (const PairAggregate& a : *aggs) by_pair[a.src + ">" + a.dst] = a;
  ASSERT_EQ(by_pair.count("a>b"), 1u);
  EXPECT_EQ(by_pair["a>b"].tests, 3u);
  EXPECT_DOUBLE_EQ(by_pair["a>b"].value_median, 90);
  EXPECT_DOUBLE_EQ(by_pair["a>b"].value_min, 80);
  EXPECT_DOUBLE_EQ(by_pair["a>b"].value_max, 100);
  EXPECT_EQ(by_pair["a>b"].started_ms, 110);
  EXPECT_EQ(by_pair["b>a"].tests, 1u);
  EXPECT_EQ(by_pair["c>d"].tests, 1u);
  auto totals = sweeps().sweepTotals("s-1", 4);
  ASSERT_TRUE(totals.ok());
  EXPECT_TRUE(totals->from_aggregates);
  EXPECT_EQ(totals->tests_done, 4u) << "plan index 0 tested twice counts once";
  EXPECT_EQ(totals->results, 5u);
}

TEST_P(ResultStoreContractTest, AggregatesAndTotalsOutliveTheRawRows) {
  ASSERT_TRUE(sweeps().createSweep(makeSweep("s-1", 100, "finished")).ok());
  const std::vector<TestResult> rows = {
      sweepRow("r0", "s-1", 0, "a", "b", 110, TestStatus::kPassed, 80),
      sweepRow("r1", "s-1", 1, "a", "b", 120, TestStatus::kPassed, 100),
      sweepRow("r2", "s-1", 2, "a", "b", 130, TestStatus::kFailed, 90),
      sweepRow("r3", "s-1", 3, "c", "d", 140, TestStatus::kSkipped, -1),  // a retest (3 >= 3)
  };
  ASSERT_TRUE(store().insertResults(rows).ok());
  // Before aggregation: counted from the raw rows.
  auto totals = sweeps().sweepTotals("s-1", 3);
  ASSERT_TRUE(totals.ok()) << totals.status().toString();
  EXPECT_FALSE(totals->from_aggregates);
  EXPECT_EQ(totals->tests_done, 3u);
  EXPECT_EQ(totals->tests_failed, 1u);
  EXPECT_EQ(totals->tests_skipped, 1u);
  EXPECT_EQ(totals->results, 4u);
  auto pending = sweeps().sweepsWithoutAggregates(1000, 0);
  ASSERT_TRUE(pending.ok());
  ASSERT_EQ(pending->size(), 1u);
  EXPECT_EQ(pending->front().id, "s-1");

  ASSERT_TRUE(sweeps().aggregateSweep("s-1", 3).ok());
  auto aggs = sweeps().sweepAggregates("s-1");
  ASSERT_TRUE(aggs.ok()) << aggs.status().toString();
  ASSERT_EQ(aggs->size(), 2u);
  const PairAggregate& ab = (*aggs)[0];
  EXPECT_EQ(ab.sweep_id, "s-1");
  EXPECT_EQ(ab.src, "a");
  EXPECT_EQ(ab.dst, "b");
  EXPECT_EQ(ab.tests, 3u);
  EXPECT_EQ(ab.passed, 2u);
  EXPECT_EQ(ab.failed, 1u);
  EXPECT_EQ(ab.status, TestStatus::kFailed) << "the worst status of the group";
  EXPECT_EQ(ab.started_ms, 110);
  EXPECT_DOUBLE_EQ(ab.value_median, 90);
  EXPECT_DOUBLE_EQ(ab.value_min, 80);
  EXPECT_DOUBLE_EQ(ab.value_max, 100);
  EXPECT_EQ(ab.unit, "Gb/s");
  EXPECT_EQ((*aggs)[1].skipped, 1u);
  EXPECT_TRUE(std::isnan((*aggs)[1].value_median)) << "no test of the group had a figure";
  pending = sweeps().sweepsWithoutAggregates(1000, 0);
  ASSERT_TRUE(pending.ok());
  EXPECT_TRUE(pending->empty());

  // The raw rows go; what was computed stays, and aggregating again keeps it.
  auto deleted = store().deleteResultsBefore(1000, 100);
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, 4u);
  ASSERT_TRUE(sweeps().aggregateSweep("s-1", 3).ok());
  totals = sweeps().sweepTotals("s-1", 3);
  ASSERT_TRUE(totals.ok());
  EXPECT_TRUE(totals->from_aggregates);
  EXPECT_EQ(totals->tests_done, 3u);
  EXPECT_EQ(totals->results, 4u);
  EXPECT_EQ(sweeps().sweepAggregates("s-1")->size(), 2u);
  EXPECT_EQ(sweeps().aggregateSweep("s-nope", 3).code(), Code::kNotFound);
  EXPECT_EQ(sweeps().aggregateSweep("", 3).code(), Code::kInvalidArgument);
}

TEST_P(ResultStoreContractTest, SweepsWithoutAggregatesAreEndedOldOnesOldestFirst) {
  ASSERT_TRUE(sweeps().createSweep(makeSweep("s-old", 10, "finished")).ok());
  ASSERT_TRUE(sweeps().createSweep(makeSweep("s-older", 5, "cancelled")).ok());
  ASSERT_TRUE(sweeps().createSweep(makeSweep("s-running", 6, "running")).ok());
  ASSERT_TRUE(sweeps().createSweep(makeSweep("s-new", 500, "finished")).ok());
  auto got = sweeps().sweepsWithoutAggregates(100, 0);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].id, "s-older");
  EXPECT_EQ((*got)[1].id, "s-old");
  got = sweeps().sweepsWithoutAggregates(100, 1);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->size(), 1u);
  // A sweep without raw rows counts as aggregated once aggregated (zero totals).
  ASSERT_TRUE(sweeps().aggregateSweep("s-older", 0).ok());
  auto totals = sweeps().sweepTotals("s-older", 0);
  ASSERT_TRUE(totals.ok());
  EXPECT_TRUE(totals->from_aggregates);
  EXPECT_EQ(totals->results, 0u);
  got = sweeps().sweepsWithoutAggregates(100, 0);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ(got->front().id, "s-old");
}

TEST_P(ResultStoreContractTest, PairHistoryIsNewestFirstOverAggregatedSweepsWithPaging) {
  for (int i = 0; i < 3; ++i) {
    const std::string id = "s-" + std::to_string(i);
    ASSERT_TRUE(sweeps().createSweep(makeSweep(id, 100 * i, "finished")).ok());
    ASSERT_TRUE(store()
                    .insertResult(sweepRow("r-" + std::to_string(i), id, 0, "a", "b", 100 * i + 1,
                                           TestStatus::kPassed, 50 + i))
                    .ok());
    ASSERT_TRUE(store()
                    .insertResult(sweepRow("q-" + std::to_string(i), id, 1, "b", "a", 100 * i + 2,
                                           TestStatus::kPassed, 10))
                    .ok());
    ASSERT_TRUE(sweeps().aggregateSweep(id, 2).ok());
  }
  auto hist = sweeps().pairHistory("a", "b", 0, 0);
  ASSERT_TRUE(hist.ok()) << hist.status().toString();
  ASSERT_EQ(hist->size(), 3u) << "a -> b only";
  EXPECT_EQ((*hist)[0].sweep_id, "s-2");
  EXPECT_EQ((*hist)[2].sweep_id, "s-0");
  EXPECT_DOUBLE_EQ((*hist)[0].value_median, 52);
  auto page = sweeps().pairHistory("a", "b", (*hist)[0].started_ms, 1);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->size(), 1u);
  EXPECT_EQ(page->front().sweep_id, "s-1");
  EXPECT_EQ(sweeps().pairHistory("", "b", 0, 0).status().code(), Code::kInvalidArgument);
  auto none = sweeps().pairHistory("a", "z", 0, 0);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_P(ResultStoreContractTest, ActionsAreListedNewestFirstWithFilters) {
  std::vector<int64_t> ids;
  for (const ActionRecord& a :
       {action("n1", "s-1", 10), action("n2", "s-1", 20), action("n1", "s-2", 30)}) {
    auto id = actions().recordAction(a);
    ASSERT_TRUE(id.ok()) << id.status().toString();
    ids.push_back(*id);
  }
  EXPECT_LT(ids[0], ids[1]);
  EXPECT_LT(ids[1], ids[2]);
  auto all = actions().listActions(ActionQuery{0, "", "", 0});
  ASSERT_TRUE(all.ok()) << all.status().toString();
  ASSERT_EQ(all->size(), 3u);
  const ActionRecord want = action("n1", "s-2", 30);
  const ActionRecord& got = (*all)[0];
  EXPECT_EQ(got.id, ids[2]);
  EXPECT_EQ(got.recorded_ms, 30);
  EXPECT_EQ(got.sweep_id, want.sweep_id);
  EXPECT_EQ(got.node, want.node);
  EXPECT_EQ(got.action, want.action);
  EXPECT_EQ(got.outcome, want.outcome);
  EXPECT_EQ(got.actuator, want.actuator);
  EXPECT_EQ(got.reason, want.reason);
  EXPECT_EQ(got.detail, want.detail);
  auto n1 = actions().listActions(ActionQuery{0, "n1", "", 0});
  ASSERT_TRUE(n1.ok());
  EXPECT_EQ(n1->size(), 2u);
  auto s1 = actions().listActions(ActionQuery{1, "", "s-1", 0});
  ASSERT_TRUE(s1.ok());
  ASSERT_EQ(s1->size(), 1u);
  EXPECT_EQ(s1->front().node, "n2");
  auto recent = actions().listActions(ActionQuery{0, "", "", 20});
  ASSERT_TRUE(recent.ok());
  EXPECT_EQ(recent->size(), 2u);
  ActionRecord bad = action("", "s-1", 1);
  EXPECT_EQ(actions().recordAction(bad).status().code(), Code::kInvalidArgument);
}

}  // namespace
// What the hooks last announced: empty at first, replaced whole, kept as given.
TEST_P(ResultStoreContractTest, HookSuspectsAreReplacedWhole) {
  auto none = hookState().hookSuspects();
  ASSERT_TRUE(none.ok()) << none.status().toString();
  EXPECT_TRUE(none->empty());
  ASSERT_TRUE(hookState().setHookSuspects({"host n1", "nic n2/mlx5_0", "link 'a' b"}).ok());
  ASSERT_TRUE(hookState().setHookSuspects({"host n3", "nic n2/mlx5_0"}).ok());
  auto kept = hookState().hookSuspects();
  ASSERT_TRUE(kept.ok()) << kept.status().toString();
  EXPECT_EQ(*kept, (std::set<std::string>{"host n3", "nic n2/mlx5_0"}));
  ASSERT_TRUE(hookState().setHookSuspects({}).ok());
  auto cleared = hookState().hookSuspects();
  ASSERT_TRUE(cleared.ok());
  EXPECT_TRUE(cleared->empty());
}

}  // namespace gdrmesh::testing
