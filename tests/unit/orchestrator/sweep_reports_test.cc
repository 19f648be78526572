// SweepReports: queries over a sweep's stored rows (its row, verdicts, suspects, results), with
// no run involved, and the live state of a sweep on the board taking precedence while it runs.
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/sync/mutex.h"
#include "coordinator/orchestrator/sweep_report_rows.h"
#include "tests/unit/orchestrator/sweep_rig.h"

namespace gdrmesh::testing {
namespace {

constexpr const char* kId = "s-20261127T000000-0001";

// An ended sweep as the store keeps it: 5 verdicts (tests 1 and 3 FAIL), one suspect, a note,
// and 5 results.
void storeEndedSweep(SweepRig& rig) {
  SweepRecord rec;
  rec.id = kId;
  rec.state = "finished";
  rec.pattern = "all-pairs";
  rec.spec_json = "all-pairs";
  rec.plan_json = R"({"hosts":["h0","h1"],"plan_size":5,"parts":[5],"rounds":5,"seed":"7"})";
  rec.created_ms = 1000;
  rec.started_ms = 2000;
  rec.finished_ms = 12000;
  rec.tests_total = 5;
  rec.verdict = "FAIL";
  rec.verdicts_pass = 3;
  rec.verdicts_fail = 2;
  ASSERT_TRUE(rig.store->createSweep(rec).ok());
  std::vector<TestResult> results;
  for (int i = 0; i < 5; ++i) {
    TestResult r;
    r.test_id = "t-" + std::to_string(i);
    r.run_id = kId;
    r.plan_index = i;
    r.started_ms = 2000 + i;
    r.finished_ms = 2100 + i;
    r.initiator.worker = "h0";
    r.target.worker = "h1";
    r.message_size = 65536;
    r.status = i == 1 || i == 3 ? TestStatus::kFailed : TestStatus::kPassed;
    results.push_back(r);
  }
  ASSERT_TRUE(rig.store->insertResults(results).ok());
  Suspect suspect;
  suspect.kind = "link";
  suspect.name = "h1/mlx5_0";
  ASSERT_TRUE(storeSweepReport(*rig.store, kId, 5,
                               [](size_t i) {
                                 PairVerdict v;
                                 v.test_id = "t-" + std::to_string(i);
                                 v.src = "h0";
                                 v.dst = "h1";
                                 v.verdict =
                                     i == 1 || i == 3 ? VerdictKind::kFail : VerdictKind::kPass;
                                 return v;
                               },
                               {suspect}, {"a note"})
                  .ok());
}

TEST(SweepReports, PagesFailedVerdictsAndCountsThemInTheStore) {
  SweepRig rig(2);
  storeEndedSweep(rig);
  RigCoordinator& c = rig.start();
  SweepReportQuery q;
  q.verdicts = VerdictFilter::kFailed;
  q.page.offset = 1;
  q.page.limit = 1;
  auto d = c.reports.report(kId, q);
  ASSERT_TRUE(d.ok()) << d.status().toString();
  EXPECT_EQ(d->progress.state, SweepState::kFinished);
  EXPECT_EQ(d->progress.tests_done, 5u);
  EXPECT_EQ(d->progress.tests_failed, 2u);
  EXPECT_EQ(d->verdicts_matching, 2u);
  EXPECT_EQ(d->verdict_counts.pass, 3u);
  EXPECT_EQ(d->verdict_counts.fail, 2u);
  ASSERT_EQ(d->verdicts.size(), 1u);
  EXPECT_EQ(d->verdicts[0].test_id, "t-3");  // the second FAIL, in report order
  ASSERT_EQ(d->suspects.size(), 1u);
  EXPECT_EQ(d->suspects[0].name, "h1/mlx5_0");
  EXPECT_EQ(d->notes, std::vector<std::string>{"a note"});
  EXPECT_TRUE(d->results.empty());
  ASSERT_EQ(d->parts.size(), 1u);
}

TEST(SweepReports, PagesResultsWithACursor) {
  SweepRig rig(2);
  storeEndedSweep(rig);
  RigCoordinator& c = rig.start();
  SweepReportQuery q;
  q.with_results = true;
  q.results_limit = 3;
  q.verdicts = VerdictFilter::kNone;
  auto first = c.reports.report(kId, q);
  ASSERT_TRUE(first.ok()) << first.status().toString();
  ASSERT_EQ(first->results.size(), 3u);
  EXPECT_TRUE(first->verdicts.empty());
  ASSERT_FALSE(first->results_next.empty());
  q.results_after = first->results_next;
  auto second = c.reports.report(kId, q);
  ASSERT_TRUE(second.ok()) << second.status().toString();
  ASSERT_EQ(second->results.size(), 2u);
  EXPECT_EQ(second->results[0].plan_index, 3);
  EXPECT_TRUE(second->results_next.empty());
  q.results_after = "not-a-cursor";
  auto bad = c.reports.report(kId, q);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().fix().find("results_next"), std::string::npos);
}

TEST(SweepReports, AnUnknownSweepIsNotFoundWithAFix) {
  SweepRig rig(2);
  RigCoordinator& c = rig.start();
  auto p = c.reports.progress("s-nope");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Code::kNotFound);
  EXPECT_NE(p.status().fix().find("gdrmesh sweeps"), std::string::npos);
  EXPECT_FALSE(c.reports.report("s-nope").ok());
}

TEST(SweepReports, ListsStoredSweepsWithTheStoresCounts) {
  SweepRig rig(2);
  storeEndedSweep(rig);
  RigCoordinator& c = rig.start();
  auto list = c.reports.list(10);
  ASSERT_TRUE(list.ok()) << list.status().toString();
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].id, kId);
  EXPECT_EQ((*list)[0].tests_done, 5u);
  EXPECT_EQ((*list)[0].tests_failed, 2u);
  EXPECT_DOUBLE_EQ((*list)[0].elapsed_seconds, 10.0);
}

// Judged, its rows being stored (report_pending): its end shows at once, and its report is
// read from memory, the same verdicts in the same order as the rows will read back; once
// stored, from the store. Before (issue #19) it showed as running with no report until its
// rows were stored: 10-20 s at 1,024 hosts.
TEST(SweepReports, ASweepWhoseReportIsBeingStoredShowsItsEndAndItsReportFromMemory) {
  SweepRig rig(2);
  storeEndedSweep(rig);  // as an earlier end of it stored it: 3 PASS, 2 FAIL
  RigCoordinator& c = rig.start();
  auto live = std::make_shared<LiveSweep>();
  live->id = kId;
  live->state = SweepState::kFinished;
  live->verdict = "FAIL";
  live->report_pending = true;
  live->notes = {"live note"};
  // The live judge's view: 4 rows, only row 2 failing (unlike the stored report).
  for (int i = 0; i < 4; ++i) {
    TestResult r;
    r.test_id = "live-" + std::to_string(i);
    r.run_id = kId;
    r.plan_index = i;
    r.initiator.worker = "h0";
    r.target.worker = "h1";
    r.status = i == 2 ? TestStatus::kFailed : TestStatus::kPassed;
    live->rows.add(r);
    live->verdicts.kind.push_back(i == 2 ? VerdictKind::kFail : VerdictKind::kPass);
    live->verdicts.reasons_of.push_back(0);
  }
  live->verdict_counts = {3, 1, 0};
  Suspect suspect;
  suspect.kind = "host";
  suspect.name = "h1";
  live->suspects = {suspect};
  {
    MutexLock lock(c.board.mu);
    c.board.recent[kId] = live;
  }
  SweepReportQuery failed;
  failed.verdicts = VerdictFilter::kFailed;
  auto d = c.reports.report(kId, failed);
  ASSERT_TRUE(d.ok()) << d.status().toString();
  EXPECT_EQ(d->progress.state, SweepState::kFinished);
  EXPECT_TRUE(d->progress.report_pending);
  EXPECT_EQ(d->progress.verdict, "FAIL");
  ASSERT_EQ(d->verdicts.size(), 1u);
  EXPECT_EQ(d->verdicts[0].test_id, "live-2");
  EXPECT_EQ(d->verdicts_matching, 1u);
  EXPECT_EQ(d->verdict_counts.pass, 3u);
  ASSERT_EQ(d->suspects.size(), 1u);
  EXPECT_EQ(d->suspects[0].name, "h1");
  EXPECT_EQ(d->notes, std::vector<std::string>{"live note"});
  // Pages over every verdict, in report order.
  SweepReportQuery page;
  page.page.offset = 1;
  page.page.limit = 2;
  d = c.reports.report(kId, page);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->verdicts.size(), 2u);
  EXPECT_EQ(d->verdicts[0].test_id, "live-1");
  EXPECT_EQ(d->verdicts[1].test_id, "live-2");
  EXPECT_EQ(d->verdicts_matching, 4u);
  {
    MutexLock lock(c.board.mu);
    live->report_pending = false;
    live->rows = JudgeRows{};
    live->verdicts = JudgeVerdicts{};
  }
  d = c.reports.report(kId);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->progress.state, SweepState::kFinished);
  EXPECT_FALSE(d->progress.report_pending);
  EXPECT_EQ(d->verdicts.size(), 5u);  // the stored report's
}

}  // namespace
}  // namespace gdrmesh::testing
