// A sweep with failures, run by SweepManager over fake workers and a real SQLite file: the
// verdicts and suspects it stored when it ended (judged from the compact rows it kept as
// results arrived) are exactly those that `sweep judge` recomputes from the stored results.
//
// The fakes answer on a SystemClock (their replies are milliseconds apart); the test waits on
// SweepManager::waitForChange, never on a sleep.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "coordinator/orchestrator/sweep_manager.h"
#include "coordinator/store/result_writer.h"
#include "coordinator/store/sqlite_store.h"
#include "tests/support/fake_worker_channel.h"
#include "tests/support/sweep_wait.h"
#include "tests/support/temp_dir.h"

namespace gdrmesh::testing {
namespace {

// Keeps the one sweep's spec (its config included) for the judge to read back.
class OneSpecCodec final : public SweepCodec {
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

// Any config text parses to a 50 Gb/s floor.
Result<ClusterConfig> floor50(const std::string& /*yaml*/) {
  ClusterConfig c;
  c.thresholds.bandwidth_gbps_min = 50;
  return c;
}

void expectSame(const PairVerdict& a, const PairVerdict& b) {
  EXPECT_EQ(a.test_id, b.test_id);
  EXPECT_EQ(a.src, b.src);
  EXPECT_EQ(a.dst, b.dst);
  EXPECT_EQ(a.message_size, b.message_size);
  EXPECT_EQ(a.verdict, b.verdict) << a.test_id;
  EXPECT_EQ(a.reasons, b.reasons) << a.test_id;
  EXPECT_DOUBLE_EQ(a.value, b.value);
  EXPECT_EQ(a.unit, b.unit);
  EXPECT_EQ(a.topo_class, b.topo_class);
  EXPECT_EQ(a.retest, b.retest) << a.test_id;
}

TEST(SweepJudge, TheLiveVerdictsAreThoseRecomputedFromTheStoredRows) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  auto opened = SqliteStore::open(dir.file("results.db"));
  ASSERT_TRUE(opened.ok()) << opened.status().toString();
  std::unique_ptr<SqliteStore> store = std::move(opened).value();
  SystemClock clock;
  ResultWriter writer(*store, clock);
  FakeDirectory workers(clock);
  for (int i = 0; i < 8; ++i) workers.add("h" + std::to_string(i));
  // h6 is slow as an initiator and corrupts what it receives; h7's runs fail outright. Both
  // fail with every partner; h0..h5 are known good and retest them.
  workers.fake("h6").behaviour.bandwidth_gbps = 10;
  workers.fake("h6").behaviour.wrong_bytes = 5;
  workers.fake("h7").behaviour.fail_run = unavailable("connection reset by peer");
  OneSpecCodec codec;
  SweepManagerOptions options;
  options.checkpoint_seconds = 0.05;
  options.executor.pair.lost_grace_seconds = 0.01;  // h7's run errors: no wait for a loss
  SweepManager manager(workers, clock, *store, *store, writer, codec, floor50, options);

  SweepSpec spec;
  spec.pattern = SweepPattern::kAllPairs;
  spec.test.message_size = 65536;
  spec.test.iterations = 10;
  spec.config_yaml = "thresholds: {bandwidth_gbps_min: 50}";
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
  EXPECT_EQ(p.verdict, "FAIL");
  EXPECT_GT(p.retests, 0u) << "the failures were retested with known-good partners";

  SweepReportQuery with_results;
  with_results.with_results = true;
  auto live = manager.report(id, with_results);
  ASSERT_TRUE(live.ok()) << live.status().toString();
  auto again = manager.judge(id, "", "");
  ASSERT_TRUE(again.ok()) << again.status().toString();

  // 28 pairs and the retests, every one stored and judged.
  ASSERT_EQ(live->results.size(), 28u + p.retests);
  ASSERT_EQ(live->verdicts.size(), live->results.size());
  ASSERT_EQ(again->verdicts.size(), live->verdicts.size());
  for (size_t i = 0; i < live->verdicts.size(); ++i) {
    expectSame(live->verdicts[i], again->verdicts[i]);
  }
  ASSERT_EQ(again->suspects.size(), live->suspects.size());
  for (size_t i = 0; i < live->suspects.size(); ++i) {
    EXPECT_EQ(again->suspects[i].kind, live->suspects[i].kind);
    EXPECT_EQ(again->suspects[i].name, live->suspects[i].name);
    EXPECT_DOUBLE_EQ(again->suspects[i].score, live->suspects[i].score);
    EXPECT_EQ(again->suspects[i].evidence, live->suspects[i].evidence);
  }
  EXPECT_EQ(again->progress.verdict, "FAIL");

  // What was compared holds failures of each kind, retests among them, and the two culprits
  // ranked first.
  size_t fail = 0, pass = 0, retests = 0, status = 0, integrity = 0, floor = 0;
  for (const auto& v : live->verdicts) {
    fail += v.verdict == VerdictKind::kFail;
    pass += v.verdict == VerdictKind::kPass;
    retests += v.retest;
    for (const auto& r : v.reasons) {
      status += r.rfind("status ", 0) == 0;
      integrity += r.rfind("integrity: ", 0) == 0;
      floor += r.find("(bandwidth_gbps_min)") != std::string::npos;
    }
  }
  EXPECT_GT(fail, 0u);
  EXPECT_GT(pass, 0u);
  EXPECT_EQ(retests, p.retests);
  EXPECT_GT(status, 0u);
  EXPECT_GT(integrity + floor, 0u);
  ASSERT_GE(live->suspects.size(), 2u);
  EXPECT_EQ(live->suspects[0].kind, "host");
  EXPECT_EQ(live->suspects[1].kind, "host");
  EXPECT_TRUE((live->suspects[0].name == "h6" && live->suspects[1].name == "h7") ||
              (live->suspects[0].name == "h7" && live->suspects[1].name == "h6"))
      << live->suspects[0].name << " " << live->suspects[1].name;

  // Readers page: the counts cover every verdict whatever the page; pages of 3 results and
  // of 2 failing verdicts, walked to the end, give the same rows in the same order as one
  // whole read; the judge pages the same way.
  EXPECT_EQ(live->verdict_counts.fail, fail);
  EXPECT_EQ(live->verdict_counts.pass, pass);
  EXPECT_EQ(live->verdicts_matching, live->verdicts.size());
  EXPECT_TRUE(live->results_next.empty());
  std::vector<TestResult> paged_results;
  std::vector<PairVerdict> paged_failing;
  SweepReportQuery q;
  q.with_results = true;
  q.results_limit = 3;
  q.verdicts = VerdictFilter::kFailed;
  q.page.limit = 2;
  for (int pages = 0;; ++pages) {
    ASSERT_LT(pages, 100) << "paging does not end";
    auto page = manager.report(id, q);
    ASSERT_TRUE(page.ok()) << page.status().toString();
    EXPECT_EQ(page->verdict_counts.fail, fail);
    EXPECT_EQ(page->verdict_counts.pass, pass);
    EXPECT_EQ(page->verdicts_matching, fail);
    EXPECT_LE(page->results.size(), 3u);
    EXPECT_LE(page->verdicts.size(), 2u);
    paged_results.insert(paged_results.end(), page->results.begin(), page->results.end());
    paged_failing.insert(paged_failing.end(), page->verdicts.begin(), page->verdicts.end());
    q.page.offset += page->verdicts.size();
    q.results_after = page->results_next;
    if (q.results_after.empty() && q.page.offset >= page->verdicts_matching) break;
    if (q.results_after.empty()) q.with_results = false;
  }
  ASSERT_EQ(paged_results.size(), live->results.size());
  for (size_t i = 0; i < paged_results.size(); ++i) {
    EXPECT_EQ(paged_results[i].test_id, live->results[i].test_id) << i;
  }
  std::vector<PairVerdict> live_failing;
  for (const auto& v : live->verdicts) {
    if (v.verdict == VerdictKind::kFail) live_failing.push_back(v);
  }
  ASSERT_EQ(paged_failing.size(), live_failing.size());
  for (size_t i = 0; i < live_failing.size(); ++i) expectSame(paged_failing[i], live_failing[i]);
  ASSERT_GE(live_failing.size(), 2u);
  auto judged_page = manager.judge(id, "", "", VerdictFilter::kFailed, VerdictPage{1, 2});
  ASSERT_TRUE(judged_page.ok()) << judged_page.status().toString();
  EXPECT_TRUE(judged_page->results.empty()) << "the judge's report carries no results";
  EXPECT_EQ(judged_page->verdicts_matching, fail);
  ASSERT_EQ(judged_page->verdicts.size(), std::min<size_t>(2, fail - 1));
  expectSame(judged_page->verdicts[0], live_failing[1]);
  q = SweepReportQuery{};
  q.with_results = true;
  q.results_after = "12";
  auto bad = manager.report(id, q);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("results_after"), std::string::npos);

  // The list shows the failing verdicts beside the tests' counts (the sweep FAILs, as its
  // verdicts say); and a coordinator started again on the same file (issue #22: every earlier
  // sweep was listed 0/N with 0 failed) lists the same counts as the one that ran it.
  auto listed = manager.list(10);
  ASSERT_TRUE(listed.ok()) << listed.status().toString();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].verdict_counts.fail, fail);
  EXPECT_EQ((*listed)[0].verdict_counts.pass, pass);
  manager.shutdown();
  SweepManager restarted(workers, clock, *store, *store, writer, codec, floor50, options);
  auto after = restarted.list(10);
  ASSERT_TRUE(after.ok()) << after.status().toString();
  ASSERT_EQ(after->size(), 1u);
  const SweepProgress& a = (*after)[0];
  EXPECT_EQ(a.id, id);
  EXPECT_EQ(a.tests_total, p.tests_total);
  EXPECT_EQ(a.tests_done, p.tests_done);
  EXPECT_GT(a.tests_done, 0u);
  EXPECT_EQ(a.tests_failed, p.tests_failed);
  EXPECT_GT(a.tests_failed, 0u);
  EXPECT_EQ(a.tests_skipped, p.tests_skipped);
  EXPECT_EQ(a.verdict, "FAIL");
  EXPECT_EQ(a.verdict_counts.fail, fail);
  EXPECT_EQ(a.verdict_counts.pass, pass);
  restarted.shutdown();
}

// An acceptance sweep of two parts, a write over known-good hosts then a read with a slow host:
// the retests of the failing reads are reads (the template of the test they re-examine), not
// the config's first sweep (a retest of a read ran as a write and "passed").
Result<ClusterConfig> writeThenRead(const std::string& /*yaml*/) {
  ClusterConfig c;
  c.thresholds.bandwidth_gbps_min = 50;
  SweepSpec w;
  w.pattern = SweepPattern::kAllPairs;
  w.test.op = Op::kWrite;
  w.test.message_size = 4096;
  w.test.iterations = 10;
  w.hosts = {"h0", "h1", "h2", "h3", "h4", "h5"};
  SweepSpec r = w;
  r.test.op = Op::kRead;
  r.test.message_size = 65536;
  r.hosts.push_back("h6");
  c.sweeps = {w, r};
  return c;
}

TEST(SweepJudge, ARetestRunsTheTemplateOfTheTestItReExamines) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  auto opened = SqliteStore::open(dir.file("results.db"));
  ASSERT_TRUE(opened.ok()) << opened.status().toString();
  std::unique_ptr<SqliteStore> store = std::move(opened).value();
  SystemClock clock;
  ResultWriter writer(*store, clock);
  FakeDirectory workers(clock);
  for (int i = 0; i < 7; ++i) workers.add("h" + std::to_string(i));
  workers.fake("h6").behaviour.bandwidth_gbps = 10;
  OneSpecCodec codec;
  SweepManagerOptions options;
  options.checkpoint_seconds = 0.05;
  SweepManager manager(workers, clock, *store, *store, writer, codec, writeThenRead, options);

  SweepSpec spec;
  spec.pattern_from_config = true;
  spec.config_yaml = "sweeps: [write, read]";
  spec.retries = 0;
  spec.localise = true;
  auto started = manager.start(spec);
  ASSERT_TRUE(started.ok()) << started.status().toString();
  const std::string id = started->id;
  auto ended = waitForSweepEnd(manager, id, *started, 0, clock, std::chrono::seconds(120));
  ASSERT_TRUE(ended.ok()) << ended.status().toString();
  const SweepProgress p = *ended;
  ASSERT_EQ(p.state, SweepState::kFinished) << p.reason;
  ASSERT_GT(p.retests, 0u) << "h6's slow reads were retested";
  SweepReportQuery with_results;
  with_results.with_results = true;
  auto live = manager.report(id, with_results);
  ASSERT_TRUE(live.ok()) << live.status().toString();
  ASSERT_EQ(live->verdicts.size(), live->results.size());
  size_t retests = 0;
  for (size_t i = 0; i < live->results.size(); ++i) {
    if (!live->verdicts[i].retest) continue;
    ++retests;
    EXPECT_EQ(live->results[i].op, Op::kRead) << live->results[i].test_id;
    EXPECT_EQ(live->results[i].message_size, 65536u) << live->results[i].test_id;
  }
  EXPECT_EQ(retests, p.retests);
}

}  // namespace
}  // namespace gdrmesh::testing
