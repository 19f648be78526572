// The compact rows of the judge: a row keeps every field the judge, localiser and retest
// planning read, names are interned once, and the judge, localiser and planRetests over rows
// give exactly the answers of their forms over full results.
#include "coordinator/orchestrator/judge_row.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "coordinator/orchestrator/judge.h"
#include "coordinator/orchestrator/localiser.h"

namespace gdrmesh {
namespace {

TestResult row(const std::string& id, const std::string& a, const std::string& b, double gbps) {
  TestResult r;
  r.test_id = id;
  r.run_id = "s-1";
  r.status = TestStatus::kPassed;
  r.message_size = 65536;
  r.initiator.worker = a;
  r.initiator.nic = "mlx5_0";
  r.target.worker = b;
  r.target.nic = "mlx5_0";
  r.measurement.has_bandwidth = true;
  r.measurement.bw.avg_gbps = gbps;
  return r;
}

TEST(StringTable, InternsEachStringOnceAndEmptyIsZero) {
  StringTable t;
  EXPECT_EQ(t.intern(""), 0u);
  const uint32_t a = t.intern("h1");
  const uint32_t b = t.intern("h2");
  EXPECT_NE(a, b);
  EXPECT_EQ(t.intern("h1"), a);
  EXPECT_EQ(t.str(a), "h1");
  EXPECT_EQ(t.find("h2"), b);
  EXPECT_FALSE(t.find("h3").has_value());
  EXPECT_EQ(t.size(), 3u);
}

TEST(StringTable, ACopyOutlivesItsOriginal) {
  auto original = std::make_unique<StringTable>();
  const uint32_t id = original->intern("a name longer than the small string buffer");
  StringTable copy = *original;
  original.reset();
  EXPECT_EQ(copy.str(id), "a name longer than the small string buffer");
  EXPECT_EQ(copy.find("a name longer than the small string buffer"), id);
  EXPECT_EQ(copy.intern("a name longer than the small string buffer"), id);
}

TEST(JudgeRows, KeepWhatTheJudgeReads) {
  TestResult r = row("t-20261123-213000-0001", "h1", "h2", 42.5);
  r.plan_index = 7;
  r.finished_ms = 1234;
  r.op = Op::kRead;
  r.mode = Mode::kLatency;
  r.status = TestStatus::kFailed;
  r.reason = "worker lost: h2";
  r.measurement.has_latency = true;
  r.measurement.lat.median_us = 3.25;
  r.integrity.checked = true;
  r.integrity.bytes_checked = 4096;
  r.integrity.wrong_bytes = 3;
  r.initiator.memory = MemoryKind::kCuda;
  r.initiator.gpu = 2;
  r.initiator.reg_path = RegPath::kDmabuf;
  r.initiator.topo_class = "PIX";
  r.target.nic = "";

  JudgeRows rows;
  EXPECT_EQ(rows.add(r, true), 0u);
  const JudgeRow& j = rows[0];
  EXPECT_EQ(rows.testId(j), "t-20261123-213000-0001");
  EXPECT_EQ(rows.str(j.reason), "worker lost: h2");
  EXPECT_EQ(j.plan_index, 7);
  EXPECT_EQ(j.finished_ms, 1234);
  EXPECT_EQ(j.op, Op::kRead);
  EXPECT_EQ(j.mode, Mode::kLatency);
  EXPECT_EQ(j.status, TestStatus::kFailed);
  EXPECT_TRUE(j.has_bandwidth);
  EXPECT_TRUE(j.has_latency);
  EXPECT_DOUBLE_EQ(j.bw_avg_gbps, 42.5);
  EXPECT_DOUBLE_EQ(j.lat_median_us, 3.25);
  EXPECT_TRUE(j.integrity_checked);
  EXPECT_EQ(j.bytes_checked, 4096u);
  EXPECT_EQ(j.wrong_bytes, 3u);
  EXPECT_EQ(j.message_size, 65536u);
  EXPECT_TRUE(j.retest);
  EXPECT_EQ(rows.str(j.initiator.worker), "h1");
  EXPECT_EQ(rows.str(j.initiator.nic), "mlx5_0");
  EXPECT_EQ(rows.str(j.initiator.topo_class), "PIX");
  EXPECT_EQ(j.initiator.gpu, 2);
  EXPECT_EQ(j.initiator.memory, MemoryKind::kCuda);
  EXPECT_EQ(j.initiator.reg_path, RegPath::kDmabuf);
  EXPECT_EQ(j.target.nic, 0u) << "no NIC is the empty string";
  EXPECT_EQ(rows.endpointName(j.initiator), "h1/mlx5_0");
  EXPECT_EQ(rows.endpointName(j.target), "h2");
  EXPECT_EQ(rows.topologyOf(j), "PIX");
  EXPECT_TRUE(j.usesCuda());
  EXPECT_TRUE(j.ran());
}

TEST(JudgeRows, NamesAreInternedOncePerSweep) {
  JudgeRows rows;
  rows.add(row("t1", "h1", "h2", 10));
  rows.add(row("t2", "h2", "h1", 10));
  rows.add(row("t3", "h1", "h2", 10));
  EXPECT_EQ(rows[0].initiator.worker, rows[1].target.worker);
  EXPECT_EQ(rows[0].initiator.nic, rows[2].target.nic);
  // "", "h1", "mlx5_0", "h2": four strings for three rows (reasons and topology are "").
  EXPECT_EQ(rows.strings().size(), 4u);
  EXPECT_EQ(rows.testId(rows[1]), "t2");
}

TEST(JudgeRows, SortByPlanIndexKeepsEachRowWhole) {
  JudgeRows rows;
  TestResult a = row("t-b", "h1", "h2", 10);
  a.plan_index = 2;
  TestResult b = row("t-a", "h3", "h4", 20);
  b.plan_index = 0;
  TestResult c = row("t-c", "h5", "h6", 30);
  c.plan_index = 2;
  TestResult d = row("t-a2", "h7", "h8", 40);
  d.plan_index = 2;
  for (const auto& r : {a, b, c, d}) rows.add(r);
  rows.sortByPlanIndex();
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows.testId(rows[0]), "t-a");
  EXPECT_DOUBLE_EQ(rows[0].bw_avg_gbps, 20);
  EXPECT_EQ(rows.str(rows[0].initiator.worker), "h3");
  EXPECT_EQ(rows.testId(rows[1]), "t-a2");
  EXPECT_EQ(rows.testId(rows[2]), "t-b");
  EXPECT_EQ(rows.str(rows[2].target.worker), "h2");
  EXPECT_EQ(rows.testId(rows[3]), "t-c");
  EXPECT_DOUBLE_EQ(rows[3].bw_avg_gbps, 30);
}

// The rows in plan order whatever order they came in: dense indexes (placed by counting), sparse
// ones (a comparison sort), repeated indexes ordered by test id, rows without an index first;
// each the order a stable sort by (plan index, test id) gives, every row whole.
TEST(JudgeRows, SortByPlanIndexIsTheStableOrderOfIndexThenTestId) {
  for (const int64_t stride : {1, 100000}) {
    std::vector<TestResult> results;
    for (int i = 0; i < 300; ++i) {
      TestResult r = row("t-" + std::to_string((i * 7919) % 1000), "h" + std::to_string(i % 13),
                         "h" + std::to_string(i % 17 + 20), i);
      r.plan_index = static_cast<int32_t>(((i * 37) % 101 - 1) * stride);  // repeats; -1 some
      if (r.plan_index < 0) r.plan_index = -1;
      results.push_back(r);
    }
    std::vector<TestResult> want = results;
    std::stable_sort(want.begin(), want.end(), [](const TestResult& x, const TestResult& y) {
      return std::tie(x.plan_index, x.test_id) < std::tie(y.plan_index, y.test_id);
    });
    JudgeRows rows;
    for (const auto& r : results) rows.add(r);
    rows.sortByPlanIndex();
    ASSERT_EQ(rows.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) {
      EXPECT_EQ(rows.testId(rows[k]), want[k].test_id) << "stride " << stride << " row " << k;
      EXPECT_EQ(rows[k].plan_index, want[k].plan_index);
      EXPECT_DOUBLE_EQ(rows[k].bw_avg_gbps, want[k].measurement.bw.avg_gbps);
      EXPECT_EQ(rows.str(rows[k].initiator.worker), want[k].initiator.worker);
    }
    rows.sortByPlanIndex();  // sorted already: unchanged
    for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(rows.testId(rows[k]), want[k].test_id);
  }
}

void expectSame(const PairVerdict& a, const PairVerdict& b) {
  EXPECT_EQ(a.test_id, b.test_id);
  EXPECT_EQ(a.src, b.src);
  EXPECT_EQ(a.dst, b.dst);
  EXPECT_EQ(a.message_size, b.message_size);
  EXPECT_EQ(a.verdict, b.verdict) << a.test_id;
  EXPECT_EQ(a.reasons, b.reasons);
  EXPECT_DOUBLE_EQ(a.value, b.value);
  EXPECT_EQ(a.unit, b.unit);
  EXPECT_EQ(a.topo_class, b.topo_class);
  EXPECT_EQ(a.retest, b.retest);
}

// Every rule fires somewhere: status, integrity, absolute, best pair, line rate, GPU/host,
// latency, and regression against a baseline whose names come in another order.
TEST(JudgeRows, JudgeOverRowsIsTheJudgeOverResults) {
  std::vector<TestResult> results;
  results.push_back(row("t1", "h1", "h2", 100));
  results.push_back(row("t2", "h3", "h4", 40));
  TestResult gpu = row("t3", "h1", "h2", 30);
  gpu.initiator.memory = MemoryKind::kCuda;
  gpu.initiator.topo_class = "SYS";
  gpu.target.memory = MemoryKind::kCuda;
  gpu.target.topo_class = "PIX";
  results.push_back(gpu);
  TestResult failed = row("t4", "h5", "h6", 0);
  failed.status = TestStatus::kFailed;
  failed.reason = "connect: timed out";
  results.push_back(failed);
  TestResult corrupt = row("t5", "h6", "h1", 99);
  corrupt.integrity.checked = true;
  corrupt.integrity.bytes_checked = 65536;
  corrupt.integrity.wrong_bytes = 12;
  results.push_back(corrupt);
  TestResult latency = row("t6", "h2", "h3", 0);
  latency.mode = Mode::kLatency;
  latency.measurement.has_bandwidth = false;
  latency.measurement.has_latency = true;
  latency.measurement.lat.median_us = 9;
  results.push_back(latency);
  TestResult fast = latency;
  fast.test_id = "t7";
  fast.initiator.worker = "h4";
  fast.measurement.lat.median_us = 2;
  results.push_back(fast);
  TestResult empty = row("t8", "h7", "h8", 0);
  empty.measurement.has_bandwidth = false;
  results.push_back(empty);

  ClusterConfig config;
  config.thresholds.bandwidth_gbps_min = 35;
  config.thresholds.best_pair_fraction_min = 0.5;
  config.thresholds.line_rate_fraction_min = 0.5;
  config.thresholds.gpu_host_ratio_min = 0.8;
  config.thresholds.lowest_latency_factor_max = 2;
  config.thresholds.regression_tolerance = 0.1;
  JudgeContext ctx;
  ctx.port_rate_gbps["h3/mlx5_0"] = 100;
  ctx.port_rate_gbps["h4/mlx5_0"] = 200;
  TestResult old = row("b1", "h3", "h4", 80);
  TestResult unseen = row("b2", "h9", "h10", 80);
  ctx.baseline = {unseen, old};
  ctx.retests = {"t7"};

  const auto want = judgeResults(results, config, ctx);

  JudgeRows rows;
  for (const auto& r : results) rows.add(r, ctx.retests.count(r.test_id) > 0);
  JudgeRows baseline;  // its own table: "h9" and "h10" come first
  for (const auto& b : ctx.baseline) baseline.add(b);
  JudgeContext cluster = ctx;
  cluster.baseline.clear();
  cluster.retests.clear();
  const JudgeVerdicts got = judgeRows(rows, config, cluster, baseline);
  ASSERT_EQ(got.size(), want.size());
  const auto made = verdictsOf(rows, got);
  for (size_t i = 0; i < want.size(); ++i) expectSame(made[i], want[i]);

  // The rules did fire (else this comparison would prove little).
  EXPECT_EQ(want[0].verdict, VerdictKind::kPass);
  EXPECT_NE(want[1].reasons.size(), 0u);
  bool regression = false, gpu_host = false, line = false;
  for (const auto& r : want[1].reasons) {
    regression = regression || r.find("below baseline 80.0 Gb/s (b1)") != std::string::npos;
    line = line || r.find("line_rate_fraction_min") != std::string::npos;
  }
  for (const auto& r : want[2].reasons) {
    gpu_host = gpu_host || r.find("topology SYS/PIX") != std::string::npos;
  }
  EXPECT_TRUE(regression);
  EXPECT_TRUE(line);
  EXPECT_TRUE(gpu_host);
  EXPECT_EQ(want[3].reasons, std::vector<std::string>{"status FAILED: connect: timed out"});
  EXPECT_EQ(want[4].verdict, VerdictKind::kFail);
  EXPECT_EQ(want[5].verdict, VerdictKind::kFail);
  EXPECT_EQ(want[5].unit, "us");
  EXPECT_TRUE(want[6].retest);
  EXPECT_EQ(want[7].verdict, VerdictKind::kSkip);
  EXPECT_EQ(got.firstReason(0), "");
  EXPECT_EQ(got.firstReason(3), "status FAILED: connect: timed out");
}

// h5 fails with everyone, h1<->h2 fails alone: the localiser and the retest plan over rows are
// those over results.
TEST(JudgeRows, LocaliserAndRetestsOverRowsAreThoseOverResults) {
  std::vector<TestResult> results;
  int n = 0;
  for (int i = 0; i < 6; ++i) {
    for (int j = i + 1; j < 6; ++j) {
      const std::string a = "h" + std::to_string(i), b = "h" + std::to_string(j);
      const bool slow = i == 5 || j == 5 || (i == 1 && j == 2);
      TestResult r = row("t" + std::to_string(n), a, b, slow ? 10 : 100);
      r.plan_index = n++;
      results.push_back(r);
    }
  }
  ClusterConfig config;
  config.thresholds.bandwidth_gbps_min = 50;
  const auto verdicts = judgeResults(results, config, JudgeContext{});
  const auto want_suspects = localise(results, verdicts);
  const std::vector<std::string> hosts{"h0", "h1", "h2", "h3", "h4", "h5"};
  const auto want_retests = planRetests(results, verdicts, hosts, 10);

  JudgeRows rows;
  for (const auto& r : results) rows.add(r);
  const JudgeVerdicts v = judgeRows(rows, config, JudgeContext{}, JudgeRows{});
  const auto suspects = localise(rows, v);
  const auto retests = planRetests(rows, v, hosts, 10);

  ASSERT_FALSE(want_suspects.empty());
  ASSERT_EQ(suspects.size(), want_suspects.size());
  for (size_t i = 0; i < suspects.size(); ++i) {
    EXPECT_EQ(suspects[i].kind, want_suspects[i].kind);
    EXPECT_EQ(suspects[i].name, want_suspects[i].name);
    EXPECT_DOUBLE_EQ(suspects[i].score, want_suspects[i].score);
    EXPECT_EQ(suspects[i].evidence, want_suspects[i].evidence);
  }
  EXPECT_EQ(suspects[0].name, "h5");
  ASSERT_FALSE(want_retests.empty());
  ASSERT_EQ(retests.size(), want_retests.size());
  for (size_t i = 0; i < retests.size(); ++i) {
    EXPECT_EQ(retests[i].initiator.worker, want_retests[i].initiator.worker);
    EXPECT_EQ(retests[i].initiator.device, want_retests[i].initiator.device);
    EXPECT_EQ(retests[i].target.worker, want_retests[i].target.worker);
    EXPECT_EQ(retests[i].target.device, want_retests[i].target.device);
    EXPECT_EQ(retests[i].retest_of, want_retests[i].retest_of);
    EXPECT_EQ(retests[i].round, want_retests[i].round);
  }
}

}  // namespace
}  // namespace gdrmesh
