// SweepManager::report over a real SQLite file: an ended sweep's report is parsed once per
// stored revision and served from the cache after that; a new revision of the same sweep (same
// state and end time) is never served stale.
#include <gtest/gtest.h>

#include <memory>
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

PairVerdict verdict(const std::string& src, const std::string& dst, VerdictKind k) {
  PairVerdict v;
  v.test_id = "t-" + src + "-" + dst;
  v.src = src;
  v.dst = dst;
  v.message_size = 65536;
  v.verdict = k;
  v.value = 42.5;
  v.unit = "Gb/s";
  return v;
}

class SweepReportCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    auto s = SqliteStore::open(dir_.file("results.db"));
    ASSERT_TRUE(s.ok()) << s.status().toString();
    store_ = std::move(s).value();
    writer_ = std::make_unique<ResultWriter>(*store_, clock_);
    manager_ = std::make_unique<SweepManager>(directory_, clock_, *store_, *store_, *writer_,
                                              codec_, nullptr, SweepManagerOptions{});
  }
  void TearDown() override {
    if (manager_) manager_->shutdown();
  }

  SweepRecord finished(const std::vector<PairVerdict>& verdicts) {
    SweepRecord s;
    s.id = "s-cache";
    s.state = "finished";
    s.pattern = "all-pairs";
    s.spec_json = "{}";
    s.plan_json = "{}";
    s.report_json = sweepReportJson(verdicts, {}, {"note"});
    s.created_ms = 1000;
    s.started_ms = 1001;
    s.finished_ms = 2000;
    s.tests_total = static_cast<uint32_t>(verdicts.size());
    s.verdict = "PASS";
    return s;
  }

  TempDir dir_;
  ManualClock clock_;
  FakeDirectory directory_{clock_};
  EmptyCodec codec_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<ResultWriter> writer_;
  std::unique_ptr<SweepManager> manager_;
};

TEST_F(SweepReportCacheTest, ANewRevisionOfAnEndedSweepIsNeverServedStale) {
  SweepRecord rec = finished({verdict("a", "b", VerdictKind::kPass)});
  ASSERT_TRUE(store_->createSweep(rec).ok());
  auto first = manager_->report("s-cache");
  ASSERT_TRUE(first.ok()) << first.status().toString();
  ASSERT_EQ(first->verdicts.size(), 1u);
  EXPECT_EQ(first->verdicts[0].verdict, VerdictKind::kPass);
  EXPECT_EQ(first->notes, std::vector<std::string>{"note"});

  // Same state, same end time, a report of the same length: only the revision tells.
  rec.report_json = sweepReportJson({verdict("a", "b", VerdictKind::kFail)}, {}, {"note"});
  ASSERT_EQ(rec.report_json.size(),
            finished({verdict("a", "b", VerdictKind::kPass)}).report_json.size());
  ASSERT_TRUE(store_->updateSweep(rec).ok());
  auto second = manager_->report("s-cache");
  ASSERT_TRUE(second.ok()) << second.status().toString();
  ASSERT_EQ(second->verdicts.size(), 1u);
  EXPECT_EQ(second->verdicts[0].verdict, VerdictKind::kFail);

  // Served again (from the cache) with the same content.
  auto third = manager_->report("s-cache");
  ASSERT_TRUE(third.ok());
  ASSERT_EQ(third->verdicts.size(), 1u);
  EXPECT_EQ(third->verdicts[0].verdict, VerdictKind::kFail);
  EXPECT_EQ(third->progress.id, "s-cache");
}

TEST_F(SweepReportCacheTest, ASweepWithoutAReportHasNoVerdicts) {
  SweepRecord rec = finished({});
  rec.report_json.clear();
  rec.state = "interrupted";
  ASSERT_TRUE(store_->createSweep(rec).ok());
  auto r = manager_->report("s-cache");
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_TRUE(r->verdicts.empty());
  EXPECT_EQ(r->progress.state, SweepState::kInterrupted);
}

}  // namespace
}  // namespace gdrmesh::testing
