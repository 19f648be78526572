// SweepManager::report over a real SQLite file, with the report stored as rows: a sweep with
// failures, retests and suspects reads back identically after a restart (a new store and
// manager on the same file), and a report stored as one JSON text by an older build (schema 8)
// reads as that build read it, once migration 10 has made rows of it.
//
// The fakes answer on a SystemClock; the test waits on SweepManager::waitForChange, never on a
// sleep.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "coordinator/orchestrator/sweep_manager.h"
#include "coordinator/store/result_writer.h"
#include "coordinator/store/sqlite_store.h"
#include "tests/support/empty_sweep_codec.h"
#include "tests/support/fake_worker_channel.h"
#include "tests/support/sweep_wait.h"
#include "tests/support/temp_dir.h"

namespace gdrmesh::testing {
namespace {

// Keeps the one sweep's spec (its config included) for every reader, across a restart.
class KeptSpecCodec final : public SweepCodec {
 public:
  std::string encode(const SweepSpec& spec) const override {
    std::lock_guard<std::mutex> lock(mu_);
    spec_ = spec;
    return "{}";
  }
  Result<SweepSpec> decode(const std::string& /*text*/) const override {
    std::lock_guard<std::mutex> lock(mu_);
    return spec_;
  }

 private:
  mutable std::mutex mu_;
  mutable SweepSpec spec_;
};

Result<ClusterConfig> floor50(const std::string& /*yaml*/) {
  ClusterConfig c;
  c.thresholds.bandwidth_gbps_min = 50;
  return c;
}

uint64_t bitsOf(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

void expectSameVerdicts(const std::vector<PairVerdict>& want, const std::vector<PairVerdict>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const PairVerdict& a = want[i];
    const PairVerdict& b = got[i];
    EXPECT_EQ(a.test_id, b.test_id) << i;
    EXPECT_EQ(a.src, b.src) << i;
    EXPECT_EQ(a.dst, b.dst) << i;
    EXPECT_EQ(a.message_size, b.message_size) << i;
    EXPECT_EQ(a.verdict, b.verdict) << i;
    EXPECT_EQ(a.reasons, b.reasons) << i;
    EXPECT_EQ(bitsOf(a.value), bitsOf(b.value)) << i;
    EXPECT_EQ(a.unit, b.unit) << i;
    EXPECT_EQ(a.topo_class, b.topo_class) << i;
    EXPECT_EQ(a.retest, b.retest) << i;
    EXPECT_EQ(a.op, b.op) << i;
    EXPECT_EQ(a.mode, b.mode) << i;
  }
}

// Everything a reader of the report sees but its results.
void expectSameReport(const SweepReportData& a, const SweepReportData& b) {
  EXPECT_EQ(a.progress.id, b.progress.id);
  EXPECT_EQ(a.progress.state, b.progress.state);
  EXPECT_EQ(a.progress.verdict, b.progress.verdict);
  EXPECT_EQ(a.progress.reason, b.progress.reason);
  EXPECT_EQ(a.progress.tests_total, b.progress.tests_total);
  EXPECT_EQ(a.progress.tests_done, b.progress.tests_done);
  EXPECT_EQ(a.progress.tests_failed, b.progress.tests_failed);
  EXPECT_EQ(a.progress.finished_ms, b.progress.finished_ms);
  EXPECT_EQ(a.verdict_counts.pass, b.verdict_counts.pass);
  EXPECT_EQ(a.verdict_counts.fail, b.verdict_counts.fail);
  EXPECT_EQ(a.verdict_counts.skip, b.verdict_counts.skip);
  EXPECT_EQ(a.verdicts_matching, b.verdicts_matching);
  expectSameVerdicts(a.verdicts, b.verdicts);
  ASSERT_EQ(a.suspects.size(), b.suspects.size());
  for (size_t i = 0; i < a.suspects.size(); ++i) {
    EXPECT_EQ(a.suspects[i].kind, b.suspects[i].kind);
    EXPECT_EQ(a.suspects[i].name, b.suspects[i].name);
    EXPECT_EQ(bitsOf(a.suspects[i].score), bitsOf(b.suspects[i].score));
    EXPECT_EQ(a.suspects[i].evidence, b.suspects[i].evidence);
  }
  EXPECT_EQ(a.notes, b.notes);
  ASSERT_EQ(a.figures.size(), b.figures.size());
  for (size_t i = 0; i < a.figures.size(); ++i) {
    EXPECT_EQ(a.figures[i].pairs, b.figures[i].pairs);
    EXPECT_EQ(bitsOf(a.figures[i].median), bitsOf(b.figures[i].median));
    EXPECT_EQ(bitsOf(a.figures[i].min), bitsOf(b.figures[i].min));
    ASSERT_EQ(a.figures[i].worst.size(), b.figures[i].worst.size());
    for (size_t k = 0; k < a.figures[i].worst.size(); ++k) {
      EXPECT_EQ(a.figures[i].worst[k].src, b.figures[i].worst[k].src);
      EXPECT_EQ(a.figures[i].worst[k].dst, b.figures[i].worst[k].dst);
    }
    ASSERT_EQ(a.figures[i].worst_hosts.size(), b.figures[i].worst_hosts.size());
    for (size_t k = 0; k < a.figures[i].worst_hosts.size(); ++k) {
      EXPECT_EQ(a.figures[i].worst_hosts[k].host, b.figures[i].worst_hosts[k].host);
    }
  }
  EXPECT_EQ(a.parts.size(), b.parts.size());
}

// The readers' three questions: every verdict, a page of the failing ones, none.
std::vector<SweepReportQuery> readerQueries() {
  SweepReportQuery all;
  SweepReportQuery failed_page;
  failed_page.verdicts = VerdictFilter::kFailed;
  failed_page.page = VerdictPage{1, 3};
  SweepReportQuery none;
  none.verdicts = VerdictFilter::kNone;
  return {all, failed_page, none};
}

TEST(SweepReportRows, TheReportAfterARestartReadsIdentically) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  KeptSpecCodec codec;
  SystemClock clock;
  FakeDirectory workers(clock);
  for (int i = 0; i < 8; ++i) workers.add("h" + std::to_string(i));
  // h6 is slow and corrupts; h7's runs fail: failing verdicts, retests and two suspects.
  workers.fake("h6").behaviour.bandwidth_gbps = 10;
  workers.fake("h6").behaviour.wrong_bytes = 5;
  workers.fake("h7").behaviour.fail_run = unavailable("connection reset by peer");
  SweepManagerOptions options;
  options.checkpoint_seconds = 0.05;
  options.executor.pair.lost_grace_seconds = 0.01;

  std::string id;
  std::vector<SweepReportData> before;
  {
    auto opened = SqliteStore::open(dir.file("results.db"));
    ASSERT_TRUE(opened.ok()) << opened.status().toString();
    std::unique_ptr<SqliteStore> store = std::move(opened).value();
    ResultWriter writer(*store, clock);
    SweepManager manager(workers, clock, *store, *store, writer, codec, floor50, options);
    SweepSpec spec = plainAllPairs();
    spec.config_yaml = "thresholds: {bandwidth_gbps_min: 50}";
    spec.localise = true;
    auto started = manager.start(spec);
    ASSERT_TRUE(started.ok()) << started.status().toString();
    id = started->id;
    auto ended = waitForSweepEnd(manager, id, *started, 0, clock, std::chrono::seconds(120));
    ASSERT_TRUE(ended.ok()) << ended.status().toString();
    ASSERT_EQ(ended->state, SweepState::kFinished) << ended->reason;
    ASSERT_GT(ended->retests, 0u);
    for (const SweepReportQuery& q : readerQueries()) {
      auto r = manager.report(id, q);
      ASSERT_TRUE(r.ok()) << r.status().toString();
      before.push_back(std::move(*r));
    }
    manager.shutdown();
  }
  // What was stored is worth comparing: failures, retests, suspects, figures, notes or not.
  ASSERT_EQ(before[0].verdicts.size(), 28u + before[0].progress.retests);
  ASSERT_GT(before[0].verdict_counts.fail, 3u);
  ASSERT_EQ(before[1].verdicts.size(), 3u);
  EXPECT_EQ(before[1].verdicts_matching, before[0].verdict_counts.fail);
  EXPECT_TRUE(before[2].verdicts.empty());
  ASSERT_GE(before[0].suspects.size(), 2u);
  ASSERT_FALSE(before[0].figures.empty());

  // A restart: a new store and manager on the same file.
  auto reopened = SqliteStore::open(dir.file("results.db"));
  ASSERT_TRUE(reopened.ok()) << reopened.status().toString();
  std::unique_ptr<SqliteStore> store = std::move(reopened).value();
  ResultWriter writer(*store, clock);
  SweepManager manager(workers, clock, *store, *store, writer, codec, floor50, options);
  manager.resumeInterrupted();  // nothing to resume: the sweep ended
  const auto queries = readerQueries();
  for (size_t i = 0; i < queries.size(); ++i) {
    auto after = manager.report(id, queries[i]);
    ASSERT_TRUE(after.ok()) << after.status().toString();
    SCOPED_TRACE("query " + std::to_string(i));
    expectSameReport(before[i], *after);
  }
  manager.shutdown();
}

// A report as the coordinator stored it before migration 10: one JSON text in sweep_reports,
// the keys of a whole-document dump (nlohmann, keys sorted). One verdict has a figure that was
// not finite (written as null), one is a retest of another kind.
const char* const kOldReport =
    R"j({"notes":["unequal NIC counts: h3 has 1","excluded ✓ h9"],)j"
    R"j("suspects":[{"evidence":["failed with 2 of 2 partners"],"kind":"host","name":"h1",)j"
    R"j("score":0.8333333333333334},{"evidence":[],"kind":"link","name":"h0/mlx5_0<->h1",)j"
    R"j("score":0.5}],"verdicts":[)j"
    R"j({"dst":"h1","mode":"bw","op":"write","reasons":[],"retest":false,"size":65536,)j"
    R"j("src":"h0/mlx5_0","test_id":"t-0","topo_class":"","unit":"Gb/s","value":97.25,)j"
    R"j("verdict":"PASS"},)j"
    R"j({"dst":"h1","mode":"bw","op":"write","reasons":["bandwidth 10 Gb/s < 50 Gb/s )j"
    R"j((bandwidth_gbps_min)","integrity: 5 wrong bytes \"at 0x10\""],"retest":false,)j"
    R"j("size":65536,"src":"h2/mlx5_0","test_id":"t-1","topo_class":"PIX","unit":"Gb/s",)j"
    R"j("value":10.0,"verdict":"FAIL"},)j"
    R"j({"dst":"h2/mlx5_0","mode":"lat","op":"read","reasons":["status FAILED: lost"],)j"
    R"j("retest":true,"size":8388608,"src":"h1","test_id":"t-2","topo_class":"","unit":"us",)j"
    R"j("value":null,"verdict":"FAIL"},)j"
    R"j({"dst":"h0/mlx5_0","mode":"bw","op":"write_imm","reasons":["skipped: no GPU"],)j"
    R"j("retest":false,"size":0,"src":"h2/mlx5_0","test_id":"t-3","topo_class":"","unit":"",)j"
    R"j("value":0.0,"verdict":"SKIP"}]})j";

int execRaw(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open(path.c_str(), &db);
  if (rc == SQLITE_OK) rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  sqlite3_close(db);
  return rc;
}

TEST(SweepReportRows, AReportStoredAsJsonByAnOlderBuildReadsAsItDid) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("results.db");
  {
    // The database of a build at schema 8, with its sweep rows and their reports.
    const std::vector<SqliteMigration> v8(sqliteSchemaMigrations().begin(),
                                          sqliteSchemaMigrations().begin() + 8);
    SqliteStoreOptions old_build;
    old_build.migrations = &v8;
    auto old = SqliteStore::open(path, old_build);
    ASSERT_TRUE(old.ok()) << old.status().toString();
    ASSERT_EQ(execRaw(path,
                      "INSERT INTO sweeps (id, state, pattern, name, spec_json, plan_json, "
                      "created_ms, started_ms, finished_ms, tests_total, reason, verdict, "
                      "verdicts_pass, verdicts_fail, verdicts_skip) VALUES ('s-old', 'finished', "
                      "'all-pairs', '', '{}', '{}', 10, 11, 12, 4, '', 'FAIL', 1, 2, 1), "
                      "('s-bad', 'finished', 'all-pairs', '', '{}', '{}', 20, 21, 22, 1, '', "
                      "'PASS', 0, 0, 0)"),
              SQLITE_OK);
    ASSERT_EQ(execRaw(path,
                      "INSERT INTO sweep_reports (sweep_id, revision, report_json) VALUES "
                      "('s-old', 3, '" +
                          std::string(kOldReport) + "'), ('s-bad', 1, 'not json')"),
              SQLITE_OK);
  }
  auto opened = SqliteStore::open(path);
  ASSERT_TRUE(opened.ok()) << opened.status().toString();
  std::unique_ptr<SqliteStore> store = std::move(opened).value();
  SystemClock clock;
  ResultWriter writer(*store, clock);
  FakeDirectory workers(clock);
  EmptyCodec codec;
  SweepManager manager(workers, clock, *store, *store, writer, codec, nullptr,
                       SweepManagerOptions{});

  auto r = manager.report("s-old");
  ASSERT_TRUE(r.ok()) << r.status().toString();
  ASSERT_EQ(r->verdicts.size(), 4u);
  const PairVerdict& fail = r->verdicts[1];
  EXPECT_EQ(fail.test_id, "t-1");
  EXPECT_EQ(fail.src, "h2/mlx5_0");
  EXPECT_EQ(fail.dst, "h1");
  EXPECT_EQ(fail.verdict, VerdictKind::kFail);
  EXPECT_EQ(fail.reasons, (std::vector<std::string>{"bandwidth 10 Gb/s < 50 Gb/s "
                                                    "(bandwidth_gbps_min)",
                                                    "integrity: 5 wrong bytes \"at 0x10\""}));
  EXPECT_EQ(fail.value, 10.0);
  EXPECT_EQ(fail.topo_class, "PIX");
  const PairVerdict& retest = r->verdicts[2];
  EXPECT_TRUE(retest.retest);
  EXPECT_EQ(retest.op, Op::kRead);
  EXPECT_EQ(retest.mode, Mode::kLatency);
  EXPECT_EQ(retest.message_size, 8388608u);
  EXPECT_EQ(retest.value, 0.0);  // null, as the JSON reader read it
  EXPECT_EQ(r->verdicts[3].op, Op::kWriteImm);
  EXPECT_EQ(r->verdicts[3].verdict, VerdictKind::kSkip);
  EXPECT_TRUE(r->verdicts[0].reasons.empty());
  EXPECT_EQ(r->verdict_counts.fail, 2u);
  EXPECT_EQ(r->verdicts_matching, 4u);
  ASSERT_EQ(r->suspects.size(), 2u);
  EXPECT_EQ(r->suspects[0].name, "h1");
  EXPECT_EQ(r->suspects[0].score, 0.8333333333333334);
  EXPECT_EQ(r->suspects[0].evidence, std::vector<std::string>{"failed with 2 of 2 partners"});
  EXPECT_TRUE(r->suspects[1].evidence.empty());
  EXPECT_EQ(r->notes, (std::vector<std::string>{"unequal NIC counts: h3 has 1", "excluded ✓ h9"}));
  // The figures are summed up from the converted rows (retests and figureless verdicts left
  // out), then kept: a second read gives the same from the stored document.
  ASSERT_EQ(r->figures.size(), 1u);
  EXPECT_EQ(r->figures[0].pairs, 2u);
  EXPECT_EQ(r->figures[0].min, 10.0);
  EXPECT_EQ(r->figures[0].max, 97.25);
  auto summary = store->sweepReportSummary("s-old");
  ASSERT_TRUE(summary.ok() && summary->has_value());
  EXPECT_NE((*summary)->figures_json, "");
  auto again = manager.report("s-old");
  ASSERT_TRUE(again.ok());
  expectSameReport(*r, *again);

  // A failing page; the rows by pair and by host.
  SweepReportQuery failed;
  failed.verdicts = VerdictFilter::kFailed;
  failed.page = VerdictPage{1, 5};
  auto page = manager.report("s-old", failed);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->verdicts.size(), 1u);
  EXPECT_EQ(page->verdicts[0].test_id, "t-2");
  VerdictQuery pair;
  pair.sweep_id = "s-old";
  pair.src_host = "h2";
  pair.dst_host = "h0";
  auto rows = store->sweepVerdicts(pair);
  ASSERT_TRUE(rows.ok() && rows->size() == 1u);
  EXPECT_EQ((*rows)[0].test_id, "t-3");

  // Text that was not a report read as an empty one, and still does.
  auto bad = manager.report("s-bad");
  ASSERT_TRUE(bad.ok()) << bad.status().toString();
  EXPECT_TRUE(bad->verdicts.empty());
  EXPECT_TRUE(bad->suspects.empty());
  EXPECT_TRUE(bad->figures.empty());
  manager.shutdown();
}

TEST(SweepReportRows, ASweepWithoutAReportHasNoVerdicts) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  auto opened = SqliteStore::open(dir.file("results.db"));
  ASSERT_TRUE(opened.ok()) << opened.status().toString();
  std::unique_ptr<SqliteStore> store = std::move(opened).value();
  SweepRecord rec;
  rec.id = "s-none";
  rec.state = "interrupted";
  rec.pattern = "all-pairs";
  rec.created_ms = 1000;
  ASSERT_TRUE(store->createSweep(rec).ok());
  // Verdict rows without the summary are a report being written, not a report.
  VerdictRecord v;
  v.test_id = "t";
  v.verdict = "FAIL";
  ASSERT_TRUE(store->appendSweepVerdicts("s-none", {v}).ok());
  SystemClock clock;
  ResultWriter writer(*store, clock);
  FakeDirectory workers(clock);
  EmptyCodec codec;
  SweepManager manager(workers, clock, *store, *store, writer, codec, nullptr,
                       SweepManagerOptions{});
  auto r = manager.report("s-none");
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_TRUE(r->verdicts.empty());
  EXPECT_EQ(r->verdicts_matching, 0u);
  EXPECT_EQ(r->progress.state, SweepState::kInterrupted);
  manager.shutdown();
}

}  // namespace
}  // namespace gdrmesh::testing
