// Per-sweep aggregates and retention on a real SQLite file, time on a ManualClock: raw rows
// older than the retention are deleted in batches, the aggregates and totals of every ended
// sweep are kept, and sweeps list / sweep totals / pair history still answer for old sweeps.
#include "coordinator/orchestrator/retention.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "coordinator/config/config_yaml.h"
#include "coordinator/store/sqlite_store.h"
#include "tests/support/temp_dir.h"

namespace gdrmesh::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kDayMs = 86'400'000;

TestResult row(const std::string& sweep, int plan_index, const std::string& src,
               const std::string& dst, uint64_t size, int64_t started_ms, TestStatus status,
               double gbps) {
  TestResult r;
  r.test_id = sweep + "-t" + std::to_string(plan_index) + "-" + std::to_string(started_ms);
  r.run_id = sweep;
  r.plan_index = plan_index;
  r.started_ms = started_ms;
  r.finished_ms = started_ms + 100;
  r.op = Op::kWrite;
  r.mode = Mode::kBandwidth;
  r.initiator.worker = src;
  r.target.worker = dst;
  r.message_size = size;
  r.status = status;
  if (status == TestStatus::kPassed || status == TestStatus::kFailed) {
    r.measurement.has_bandwidth = true;
    r.measurement.bw.avg_gbps = gbps;
  } else {
    r.reason = "no figure";
  }
  return r;
}

SweepRecord sweep(const std::string& id, int64_t created_ms, uint32_t tests_total,
                  const std::string& state = "finished") {
  SweepRecord s;
  s.id = id;
  s.state = state;
  s.pattern = "random";
  s.name = "nightly-bw";
  s.spec_json = "{}";
  s.plan_json = "{}";
  s.created_ms = created_ms;
  s.started_ms = created_ms + 1;
  s.finished_ms = created_ms + 60'000;
  s.tests_total = tests_total;
  s.verdict = "FAIL";
  return s;
}

class RetentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    auto s = SqliteStore::open(dir_.file("results.db"));
    ASSERT_TRUE(s.ok()) << s.status().toString();
    store_ = std::move(s).value();
  }

  // Sweep `id` at `t`: a->b three times at 1 MiB (100, 90, 80 Gb/s: one a retest beyond the
  // plan), a->b at 8 MiB FAILED (40 Gb/s), c->d SKIPPED: plan of 3, 5 rows.
  void storeSweep(const std::string& id, int64_t t, const std::string& state = "finished") {
    ASSERT_TRUE(store_->createSweep(sweep(id, t, 3, state)).ok());
    // Its report: one failing verdict (retention keeps reports).
    VerdictRecord v;
    v.test_id = id + "-1";
    v.src = "a";
    v.dst = "b";
    v.verdict = "FAIL";
    ASSERT_TRUE(store_->appendSweepVerdicts(id, {v}).ok());
    ASSERT_TRUE(store_->putSweepReportSummary(id, {}).ok());
    std::vector<TestResult> rows = {
        row(id, 0, "a", "b", 1 << 20, t + 10, TestStatus::kPassed, 100),
        row(id, 1, "a", "b", 8 << 20, t + 20, TestStatus::kFailed, 40),
        row(id, 2, "c", "d", 1 << 20, t + 30, TestStatus::kSkipped, 0),
        row(id, 3, "a", "b", 1 << 20, t + 40, TestStatus::kPassed, 90),  // retest
        row(id, 4, "a", "b", 1 << 20, t + 50, TestStatus::kPassed, 80),  // retest
    };
    auto ids = store_->insertResults(rows);
    ASSERT_TRUE(ids.ok()) << ids.status().toString();
  }

  size_t rawRows(const std::string& run_id) {
    ResultQuery q;
    q.run_id = run_id;
    q.limit = 0;
    auto rows = store_->queryResults(q);
    EXPECT_TRUE(rows.ok());
    return rows.ok() ? rows->size() : 0;
  }

  TempDir dir_;
  std::unique_ptr<SqliteStore> store_;
};

TEST_F(RetentionTest, AggregateSweepGroupsByPairOpModeAndSize) {
  const int64_t t = 1'790'000'000'000;
  storeSweep("s-1", t);
  ASSERT_TRUE(store_->aggregateSweep("s-1", 3).ok());

  auto aggs = store_->sweepAggregates("s-1");
  ASSERT_TRUE(aggs.ok()) << aggs.status().toString();
  ASSERT_EQ(aggs->size(), 3u);
  const PairAggregate& ab1 = (*aggs)[0];  // a->b 1 MiB
  EXPECT_EQ(ab1.src, "a");
  EXPECT_EQ(ab1.dst, "b");
  EXPECT_EQ(ab1.message_size, 1u << 20);
  EXPECT_EQ(ab1.tests, 3u);
  EXPECT_EQ(ab1.passed, 3u);
  EXPECT_EQ(ab1.status, TestStatus::kPassed);
  EXPECT_DOUBLE_EQ(ab1.value_median, 90);
  EXPECT_DOUBLE_EQ(ab1.value_min, 80);
  EXPECT_DOUBLE_EQ(ab1.value_max, 100);
  EXPECT_EQ(ab1.unit, "Gb/s");
  EXPECT_EQ(ab1.started_ms, t + 10);
  const PairAggregate& ab8 = (*aggs)[1];
  EXPECT_EQ(ab8.message_size, 8u << 20);
  EXPECT_EQ(ab8.status, TestStatus::kFailed);
  EXPECT_EQ(ab8.failed, 1u);
  EXPECT_DOUBLE_EQ(ab8.value_median, 40);
  const PairAggregate& cd = (*aggs)[2];
  EXPECT_EQ(cd.src, "c");
  EXPECT_EQ(cd.status, TestStatus::kSkipped);
  EXPECT_TRUE(std::isnan(cd.value_median));  // no test had a figure

  auto totals = store_->sweepTotals("s-1", 3);
  ASSERT_TRUE(totals.ok());
  EXPECT_TRUE(totals->from_aggregates);
  EXPECT_EQ(totals->tests_done, 3u);  // plan indexes 0..2; the retests are beyond the plan
  EXPECT_EQ(totals->tests_failed, 1u);
  EXPECT_EQ(totals->tests_skipped, 1u);
  EXPECT_EQ(totals->results, 5u);

  // Aggregating again replaces (no duplicates); an unknown sweep is kNotFound.
  ASSERT_TRUE(store_->aggregateSweep("s-1", 3).ok());
  EXPECT_EQ(store_->sweepAggregates("s-1")->size(), 3u);
  Status unknown = store_->aggregateSweep("s-nope", 3);
  EXPECT_EQ(unknown.code(), Code::kNotFound);
  EXPECT_THAT(unknown.message(), HasSubstr("s-nope"));
}

TEST_F(RetentionTest, TotalsAreCountedFromRawRowsBeforeAggregation) {
  storeSweep("s-1", 1'790'000'000'000, "running");
  auto totals = store_->sweepTotals("s-1", 3);
  ASSERT_TRUE(totals.ok()) << totals.status().toString();
  EXPECT_FALSE(totals->from_aggregates);
  EXPECT_EQ(totals->tests_done, 3u);
  EXPECT_EQ(totals->tests_failed, 1u);
  EXPECT_EQ(totals->tests_skipped, 1u);
  EXPECT_EQ(totals->results, 5u);
}

TEST_F(RetentionTest, DeletesOldRowsInBatchesAndKeepsAggregatesForever) {
  ManualClock clock(1'790'000'000'000);
  const int64_t now = clock.unixMs();
  // An old sweep never aggregated (written by an older coordinator), a recent one, a running
  // one that is old, and an ad-hoc result (no sweep) that is old.
  storeSweep("s-old", now - 40 * kDayMs);
  storeSweep("s-new", now - 1 * kDayMs);
  ASSERT_TRUE(
      store_->insertResult(row("", -1, "a", "b", 4096, now - 50 * kDayMs, TestStatus::kPassed, 5))
          .ok());
  ASSERT_EQ(rawRows("s-old"), 5u);

  RetentionOptions options;
  options.days = 30;
  options.interval_seconds = 3600;
  options.batch_rows = 2;  // 6 old rows: batches of 2, 2, 2 and one that finds none
  Retention retention(clock, *store_, *store_, options);
  retention.start();  // the first pass runs now, on the retention thread
  retention.waitForPasses(1);
  RetentionPass p = retention.lastPass();
  ASSERT_TRUE(p.status.ok()) << p.status.toString();
  EXPECT_EQ(p.cutoff_ms, now - 30 * kDayMs);
  EXPECT_EQ(p.sweeps_aggregated, 1u);  // s-old; s-new is newer than the cutoff
  EXPECT_EQ(p.rows_deleted, 6u);
  EXPECT_EQ(p.batches, 4u);

  // Raw rows: old ones gone, recent ones kept.
  EXPECT_EQ(rawRows("s-old"), 0u);
  EXPECT_EQ(rawRows("s-new"), 5u);
  ResultQuery all;
  all.limit = 0;
  EXPECT_EQ(store_->queryResults(all)->size(), 5u);

  // The old sweep still answers: its row and report, its totals, its per-pair figures.
  auto list = store_->listSweeps(0, "");
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[1].id, "s-old");
  auto old = store_->getSweep("s-old");
  ASSERT_TRUE(old.ok() && old->has_value());
  auto report = store_->sweepReportSummary("s-old");
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->has_value());
  VerdictQuery verdicts;
  verdicts.sweep_id = "s-old";
  auto kept = store_->countSweepVerdicts(verdicts);
  ASSERT_TRUE(kept.ok()) << kept.status().toString();
  EXPECT_EQ(*kept, 1u);
  auto totals = store_->sweepTotals("s-old", 3);
  ASSERT_TRUE(totals.ok());
  EXPECT_TRUE(totals->from_aggregates);
  EXPECT_EQ(totals->tests_done, 3u);
  EXPECT_EQ(totals->tests_failed, 1u);
  auto aggs = store_->sweepAggregates("s-old");
  ASSERT_TRUE(aggs.ok());
  EXPECT_EQ(aggs->size(), 3u);
  // Re-aggregating a sweep whose rows are gone keeps what was computed.
  ASSERT_TRUE(store_->aggregateSweep("s-old", 3).ok());
  EXPECT_EQ(store_->sweepAggregates("s-old")->size(), 3u);
  EXPECT_EQ(store_->sweepTotals("s-old", 3)->tests_done, 3u);

  // Pair history over the aggregates: only s-old is aggregated so far.
  auto hist = store_->pairHistory("a", "b", 0, 0);
  ASSERT_TRUE(hist.ok()) << hist.status().toString();
  ASSERT_EQ(hist->size(), 2u);  // 1 MiB and 8 MiB
  EXPECT_EQ((*hist)[0].sweep_id, "s-old");

  // The next pass comes on the clock, an interval later: nothing more is old enough.
  clock.advanceSeconds(3600);
  retention.waitForPasses(2);
  EXPECT_EQ(retention.lastPass().rows_deleted, 0u);
  EXPECT_EQ(rawRows("s-new"), 5u);

  // A month later the recent sweep ages out too: aggregated (as the coordinator does when a
  // sweep ends), then its rows go.
  // The pass the 30-day jump fires may read the clock mid-jump; the one after reads it past.
  ASSERT_TRUE(store_->aggregateSweep("s-new", 3).ok());
  // Passes fired during the 30-day jump may read the clock mid-jump; each later one (an
  // interval on) reads it past the jump. Bounded: at most 5 more intervals.
  clock.advanceSeconds(30.0 * 86400);
  retention.waitForPasses(3);
  uint64_t deleted = 0;
  for (int i = 0; i < 5 && rawRows("s-new") != 0; ++i) {
    const uint64_t before = retention.passes();
    clock.advanceSeconds(3600);
    retention.waitForPasses(before + 1);
    deleted += retention.lastPass().rows_deleted;
    EXPECT_EQ(retention.lastPass().sweeps_aggregated, 0u);
  }
  EXPECT_LE(deleted, 5u);
  EXPECT_EQ(rawRows("s-new"), 0u);
  hist = store_->pairHistory("a", "b", 0, 0);
  ASSERT_TRUE(hist.ok());
  ASSERT_EQ(hist->size(), 4u);
  EXPECT_EQ((*hist)[0].sweep_id, "s-new");  // newest first
  EXPECT_EQ((*hist)[3].sweep_id, "s-old");
  // Keyset paging: the page after the first two.
  auto page = store_->pairHistory("a", "b", (*hist)[1].started_ms, 2);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->size(), 2u);
  EXPECT_EQ((*page)[0].sweep_id, "s-old");
  retention.stop();
}

TEST_F(RetentionTest, RunningSweepsAreNotAggregatedEarly) {
  ManualClock clock(1'790'000'000'000);
  storeSweep("s-run", clock.unixMs() - 40 * kDayMs, "running");
  auto pending = store_->sweepsWithoutAggregates(clock.unixMs(), 0);
  ASSERT_TRUE(pending.ok());
  EXPECT_TRUE(pending->empty());
  storeSweep("s-done", clock.unixMs() - 40 * kDayMs);
  pending = store_->sweepsWithoutAggregates(clock.unixMs(), 0);
  ASSERT_TRUE(pending.ok());
  ASSERT_EQ(pending->size(), 1u);
  EXPECT_EQ((*pending)[0].id, "s-done");
}

TEST_F(RetentionTest, BadSettingsNameTheFieldAndTheFix) {
  RetentionOptions o;
  o.days = 40000;
  Status st = validateRetention(o);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("retention days"));
  EXPECT_FALSE(st.fix().empty());
  o = RetentionOptions{};
  o.batch_rows = 0;
  EXPECT_THAT(validateRetention(o).message(), HasSubstr("batch"));
  EXPECT_EQ(store_->deleteResultsBefore(0, 0).status().code(), Code::kInvalidArgument);

  ManualClock clock;
  Retention off(clock, *store_, *store_, RetentionOptions{});
  off.start();  // days 0: nothing is scheduled
  EXPECT_EQ(clock.pendingTimers(), 0u);
  EXPECT_FALSE(off.runOnce().status.ok());
}

TEST_F(RetentionTest, DropsOldFabricSnapshotDocumentsAndKeepsTheNewest) {
  ManualClock clock(1'790'000'000'000);
  const int64_t now = clock.unixMs();
  auto snapshot = [](int64_t taken_ms) {
    FabricSnapshotRecord r;
    r.taken_ms = taken_ms;
    r.worker = "h1";
    r.outcome = "ok";
    r.links = 32;
    r.snapshot_json = R"({"format":"gdrmesh-fabric/1"})";
    return r;
  };
  auto old1 = store_->recordFabricSnapshot(snapshot(now - 50 * kDayMs), {});
  auto old2 = store_->recordFabricSnapshot(snapshot(now - 40 * kDayMs), {});
  auto fresh = store_->recordFabricSnapshot(snapshot(now - 1 * kDayMs), {});
  ASSERT_TRUE(old1.ok() && old2.ok() && fresh.ok());
  RetentionOptions options;
  options.days = 30;
  options.batch_rows = 1;
  // Without the fabric history, retention leaves the snapshots alone.
  Retention without(clock, *store_, *store_, options);
  EXPECT_EQ(without.runOnce().fabric_documents_dropped, 0u);
  Retention retention(clock, *store_, *store_, options, store_.get());
  RetentionPass p = retention.runOnce();
  ASSERT_TRUE(p.status.ok()) << p.status.toString();
  EXPECT_EQ(p.fabric_documents_dropped, 2u);
  EXPECT_TRUE((*store_->getFabricSnapshot(*old1))->snapshot_json.empty());
  EXPECT_TRUE((*store_->getFabricSnapshot(*old2))->snapshot_json.empty());
  EXPECT_EQ((*store_->getFabricSnapshot(*old2))->links, 32u);
  EXPECT_FALSE((*store_->getFabricSnapshot(*fresh))->snapshot_json.empty());
}

TEST(RetentionConfigTest, ParsesTheRetentionSection) {
  auto c = parseClusterConfig("retention:\n  days: 90\n  interval: 30m\n  batch: 500\n", "g.yaml");
  ASSERT_TRUE(c.ok()) << c.status().toString();
  EXPECT_TRUE(c->retention_set);
  EXPECT_EQ(c->retention.days, 90u);
  EXPECT_DOUBLE_EQ(c->retention.interval_seconds, 1800);
  EXPECT_EQ(c->retention.batch_rows, 500u);
  auto bad = parseClusterConfig("retention:\n  dayz: 90\n", "g.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().toString(), HasSubstr("retention.dayz"));
  bad = parseClusterConfig("retention:\n  days: -1\n", "g.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().toString(), HasSubstr("retention.days"));
}

}  // namespace
}  // namespace gdrmesh::testing
