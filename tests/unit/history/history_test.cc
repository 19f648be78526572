// HistoryQueries: the comparison's classification and order (pure), and the queries on a real
// SQLite file with a fake worker directory: unknown workers, totals, one result, unknown sweeps.
#include "coordinator/orchestrator/history.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "common/clock.h"
#include "coordinator/store/sqlite_store.h"
#include "tests/support/fake_worker_channel.h"
#include "tests/support/temp_dir.h"

namespace gdrmesh::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TestResult row(const std::string& id, const std::string& src, const std::string& dst, uint64_t size,
               double value, Mode mode = Mode::kBandwidth, TestStatus status = TestStatus::kPassed,
               const std::string& run = "") {
  TestResult r;
  r.test_id = id;
  r.run_id = run;
  r.initiator.worker = src;
  r.target.worker = dst;
  r.initiator.reg_path = r.target.reg_path = RegPath::kHost;
  r.message_size = size;
  r.mode = mode;
  r.status = status;
  if (status == TestStatus::kPassed || value > 0) {
    if (mode == Mode::kLatency) {
      r.measurement.has_latency = true;
      r.measurement.lat.median_us = value;
    } else {
      r.measurement.has_bandwidth = true;
      r.measurement.bw.avg_gbps = value;
    }
  }
  if (status != TestStatus::kPassed) r.reason = "link down on " + dst;
  return r;
}

const ComparisonRow* find(const SweepComparison& c, const std::string& src, const std::string& dst,
                          uint64_t size) {
  for (const auto& r : c.rows) {
    if (r.src == src && r.dst == dst && r.message_size == size) return &r;
  }
  return nullptr;
}

TEST(CompareSweepResults, ClassifiesEachKeyAndSortsTheWorstFirst) {
  const std::vector<TestResult> a = {
      row("a1", "h1", "h2", 4096, 100),                                        // -> 80: worse
      row("a2", "h1", "h3", 4096, 100),                                        // -> 103: same
      row("a3", "h1", "h4", 4096, 100),                                        // -> 120: better
      row("a4", "h1", "h5", 4096, 100),                                        // -> FAILED
      row("a5", "h1", "h6", 4096, 10, Mode::kLatency),                         // -> 12 us: worse
      row("a6", "h1", "h7", 4096, 10, Mode::kLatency),                         // -> 8 us: better
      row("a7", "h1", "h8", 4096, 0, Mode::kBandwidth, TestStatus::kFailed),   // -> passed
      row("a8", "h1", "h9", 4096, 100),                                        // not in B
      row("a9", "h2", "h1", 4096, 0, Mode::kBandwidth, TestStatus::kSkipped),  // still skipped
      row("a10", "h1", "h2", 65536, 100),                                      // -> 50: worse
  };
  const std::vector<TestResult> b = {
      row("b1", "h1", "h2", 4096, 80),
      row("b2", "h1", "h3", 4096, 103),
      row("b3", "h1", "h4", 4096, 120),
      row("b4", "h1", "h5", 4096, 0, Mode::kBandwidth, TestStatus::kFailed),
      row("b5", "h1", "h6", 4096, 12, Mode::kLatency),
      row("b6", "h1", "h7", 4096, 8, Mode::kLatency),
      row("b7", "h1", "h8", 4096, 90),
      row("b9", "h2", "h1", 4096, 0, Mode::kBandwidth, TestStatus::kSkipped),
      row("b10", "h1", "h2", 65536, 50),
      row("b11", "h3", "h1", 4096, 70),  // not in A
  };
  const SweepComparison c = compareSweepResults("sA", a, "sB", b, 5.0);
  EXPECT_EQ(c.a, "sA");
  EXPECT_EQ(c.b, "sB");
  EXPECT_EQ(c.worse, 4u);
  EXPECT_EQ(c.better, 3u);
  EXPECT_EQ(c.unchanged, 2u);
  EXPECT_EQ(c.added, 1u);
  EXPECT_EQ(c.missing, 1u);
  ASSERT_EQ(c.rows.size(), 11u);

  // Worst first: the status regression, then -50%, -20%, +20% latency; then missing, new,
  // better (largest improvement first), unchanged.
  std::vector<std::string> order;
  for (const auto& r : c.rows) order.push_back(r.b_test_id.empty() ? r.a_test_id : r.b_test_id);
  EXPECT_THAT(order,
              ElementsAre("b4", "b10", "b1", "b5", "a8", "b11", "b3", "b6", "b7", "b2", "b9"));

  const ComparisonRow* worse = find(c, "h1", "h2", 4096);
  ASSERT_NE(worse, nullptr);
  EXPECT_EQ(worse->change, ChangeKind::kWorse);
  ASSERT_TRUE(worse->change_pct.has_value());
  EXPECT_DOUBLE_EQ(*worse->change_pct, -20.0);
  EXPECT_EQ(worse->unit, "Gb/s");
  EXPECT_DOUBLE_EQ(*worse->a, 100);
  EXPECT_DOUBLE_EQ(*worse->b, 80);

  const ComparisonRow* lat = find(c, "h1", "h6", 4096);
  ASSERT_NE(lat, nullptr);
  EXPECT_EQ(lat->unit, "us");
  EXPECT_EQ(lat->change, ChangeKind::kWorse) << "latency up is worse";
  const ComparisonRow* faster = find(c, "h1", "h7", 4096);
  ASSERT_NE(faster, nullptr);
  EXPECT_EQ(faster->change, ChangeKind::kBetter) << "latency down is better";

  EXPECT_EQ(c.rows[0].change, ChangeKind::kWorse);
  EXPECT_EQ(c.rows[0].a_status, TestStatus::kPassed);
  EXPECT_EQ(c.rows[0].b_status, TestStatus::kFailed);
  EXPECT_THAT(c.rows[0].reason, HasSubstr("PASSED -> FAILED"));
  EXPECT_THAT(c.rows[0].reason, HasSubstr("link down on h5"));
  EXPECT_EQ(c.rows[4].change, ChangeKind::kMissing);
  EXPECT_FALSE(c.rows[4].b_status.has_value());
  EXPECT_EQ(c.rows[5].change, ChangeKind::kNew);
  EXPECT_FALSE(c.rows[5].a.has_value());
}

TEST(CompareSweepResults, ToleranceIsInclusiveAndZeroFiguresHaveNoPercentage) {
  const std::vector<TestResult> a = {row("a1", "h1", "h2", 1, 100), row("a2", "h1", "h3", 1, 0)};
  const std::vector<TestResult> b = {row("b1", "h1", "h2", 1, 95), row("b2", "h1", "h3", 1, 10)};
  SweepComparison c = compareSweepResults("a", a, "b", b, 5.0);
  EXPECT_EQ(c.unchanged, 2u) << "exactly -5% is within a 5% tolerance";
  c = compareSweepResults("a", a, "b", b, 4.9);
  EXPECT_EQ(c.worse, 1u);
  for (const auto& r : c.rows) {
    if (r.src == "h1" && r.dst == "h3") {
      EXPECT_FALSE(r.change_pct.has_value()) << "A's figure is 0: no percentage";
      EXPECT_EQ(r.change, ChangeKind::kUnchanged);
    }
  }
}

TEST(CompareSweepResults, TheLaterResultOfAKeyCounts) {
  TestResult first = row("a1", "h1", "h2", 1, 0, Mode::kBandwidth, TestStatus::kError);
  first.started_ms = 10;
  TestResult retry = row("a2", "h1", "h2", 1, 100);
  retry.started_ms = 20;
  const SweepComparison c =
      compareSweepResults("a", {retry, first}, "b", {row("b1", "h1", "h2", 1, 100)}, 5.0);
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].a_test_id, "a2");
  EXPECT_EQ(c.rows[0].change, ChangeKind::kUnchanged);
}

TEST(CompareSweepResults, NicsArePartOfThePair) {
  TestResult a = row("a1", "h1", "h2", 1, 100);
  a.initiator.nic = "mlx5_0";
  TestResult b = row("b1", "h1", "h2", 1, 100);
  b.initiator.nic = "mlx5_1";
  const SweepComparison c = compareSweepResults("a", {a}, "b", {b}, 5.0);
  EXPECT_EQ(c.added, 1u);
  EXPECT_EQ(c.missing, 1u);
  EXPECT_EQ(c.rows[0].src, "h1/mlx5_0");
}

// ---------------------------------------------------------------------------------------------
// On a real SQLite file.

class HistoryQueriesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    auto s = SqliteStore::open(dir_.file("results.db"));
    ASSERT_TRUE(s.ok()) << s.status().toString();
    store_ = std::move(s).value();
    workers_.add("h1");
    workers_.add("h2");
    queries_ = std::make_unique<HistoryQueries>(*store_, *store_, workers_);
  }
  void insert(TestResult r, int64_t started_ms) {
    r.started_ms = started_ms;
    ASSERT_TRUE(store_->insertResult(r).ok()) << r.test_id;
  }
  void sweep(const std::string& id, uint32_t planned) {
    SweepRecord s;
    s.id = id;
    s.state = "finished";
    s.tests_total = planned;
    ASSERT_TRUE(store_->createSweep(s).ok());
  }

  TempDir dir_;
  ManualClock clock_;
  FakeDirectory workers_{clock_};
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<HistoryQueries> queries_;
};

TEST_F(HistoryQueriesTest, UnknownWorkersAreNamedWithTheKnownOnes) {
  HistoryQuery q;
  q.src = "h1";
  q.dst = "nope";
  auto r = queries_->history(q);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("unknown worker 'nope'"));
  EXPECT_THAT(r.status().message(), HasSubstr("known: h1, h2"));
  EXPECT_THAT(r.status().fix(), HasSubstr("gdrmesh workers"));

  q.src = "nix";
  r = queries_->history(q);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("unknown workers 'nix', 'nope'"));

  ResultQuery rq;
  rq.worker = "nope";
  auto page = queries_->results(rq);
  ASSERT_FALSE(page.ok());
  EXPECT_EQ(page.status().code(), Code::kNotFound);
  EXPECT_THAT(page.status().message(), HasSubstr("'nope'"));
}

TEST_F(HistoryQueriesTest, AWorkerKnownOnlyFromStoredResultsIsKnown) {
  insert(row("t1", "sim-7", "h1", 1, 10), 100);  // e.g. a simulated worker, gone since
  HistoryQuery q;
  q.src = "sim-7";
  q.dst = "h1";
  auto r = queries_->history(q);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ(r->front().test_id, "t1");
  ResultQuery rq;
  rq.worker = "h2";  // registered, no results: an empty page, not an error
  auto page = queries_->results(rq);
  ASSERT_TRUE(page.ok()) << page.status().toString();
  EXPECT_TRUE(page->rows.empty());
  EXPECT_EQ(page->total, 0u);
}

TEST_F(HistoryQueriesTest, ResultsCarryTheirTotal) {
  for (int i = 0; i < 7; ++i) insert(row("t" + std::to_string(i), "h1", "h2", 1, 10), i);
  ResultQuery q;
  q.limit = 3;
  auto page = queries_->results(q);
  ASSERT_TRUE(page.ok()) << page.status().toString();
  EXPECT_EQ(page->rows.size(), 3u);
  EXPECT_EQ(page->total, 7u);
  q.limit = 0;
  page = queries_->results(q);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->rows.size(), 7u);
}

TEST_F(HistoryQueriesTest, UntilMustBeAfterSince) {
  HistoryQuery q;
  q.src = "h1";
  q.dst = "h2";
  q.since_ms = 100;
  q.until_ms = 100;
  auto r = queries_->history(q);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("--until"));
}

TEST_F(HistoryQueriesTest, OneResultByIdOrNotFound) {
  insert(row("t-42", "h1", "h2", 1, 10), 5);
  auto r = queries_->result("t-42");
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->test_id, "t-42");
  EXPECT_DOUBLE_EQ(r->measurement.bw.avg_gbps, 10);
  auto missing = queries_->result("t-43");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("t-43"));
}

TEST_F(HistoryQueriesTest, CompareReadsBothSweepsAndLeavesRetestsOut) {
  sweep("sA", 2);
  sweep("sB", 2);
  TestResult a0 = row("a0", "h1", "h2", 1, 100, Mode::kBandwidth, TestStatus::kPassed, "sA");
  a0.plan_index = 0;
  TestResult a1 = row("a1", "h2", "h1", 1, 100, Mode::kBandwidth, TestStatus::kPassed, "sA");
  a1.plan_index = 1;
  TestResult b0 = row("b0", "h1", "h2", 1, 50, Mode::kBandwidth, TestStatus::kPassed, "sB");
  b0.plan_index = 0;
  TestResult b1 = row("b1", "h2", "h1", 1, 101, Mode::kBandwidth, TestStatus::kPassed, "sB");
  b1.plan_index = 1;
  TestResult retest = row("b2", "h1", "h3", 1, 1, Mode::kBandwidth, TestStatus::kPassed, "sB");
  retest.plan_index = 2;  // after the plan: a localisation retest
  insert(a0, 1);
  insert(a1, 2);
  insert(b0, 3);
  insert(b1, 4);
  insert(retest, 5);
  auto c = queries_->compare("sA", "sB", 5.0);
  ASSERT_TRUE(c.ok()) << c.status().toString();
  EXPECT_EQ(c->rows.size(), 2u);
  EXPECT_EQ(c->worse, 1u);
  EXPECT_EQ(c->unchanged, 1u);
  EXPECT_EQ(c->added, 0u) << "the retest is not a new pair of sweep B";
  EXPECT_EQ(c->rows[0].b_test_id, "b0");

  auto unknown = queries_->compare("sA", "s-missing", 5.0);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), Code::kNotFound);
  EXPECT_THAT(unknown.status().message(), HasSubstr("s-missing"));
  auto bad = queries_->compare("sA", "sB", -1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("--tolerance"));
}

}  // namespace
}  // namespace gdrmesh::testing
