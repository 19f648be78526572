// The judge: each rule fires with a reason naming rule, figure and threshold; stricter side
// wins; verdicts do not depend on the order in which rows arrive.
#include "coordinator/orchestrator/judge.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace gdrmesh {
namespace {

TestResult bw(const std::string& id, const std::string& a, const std::string& b, double gbps,
              MemoryKind memory = MemoryKind::kHost) {
  TestResult r;
  r.test_id = id;
  r.status = TestStatus::kPassed;
  r.message_size = 65536;
  r.initiator.worker = a;
  r.initiator.nic = "mlx5_0";
  r.target.worker = b;
  r.target.nic = "mlx5_0";
  r.initiator.memory = r.target.memory = memory;
  r.measurement.has_bandwidth = true;
  r.measurement.bw.avg_gbps = gbps;
  return r;
}

TestResult lat(const std::string& id, const std::string& a, const std::string& b, double us) {
  TestResult r = bw(id, a, b, 0);
  r.mode = Mode::kLatency;
  r.measurement.has_bandwidth = false;
  r.measurement.has_latency = true;
  r.measurement.lat.median_us = us;
  return r;
}

bool hasReason(const PairVerdict& v, const std::string& text) {
  return std::any_of(v.reasons.begin(), v.reasons.end(),
                     [&](const std::string& r) { return r.find(text) != std::string::npos; });
}

TEST(Judge, StatusRowsBecomeFailOrSkipWithTheRowsReason) {
  TestResult failed = bw("t1", "h1", "h2", 0);
  failed.status = TestStatus::kFailed;
  failed.reason = "worker lost: h2";
  TestResult error = failed;
  error.test_id = "t2";
  error.status = TestStatus::kError;
  TestResult skipped = failed;
  skipped.test_id = "t3";
  skipped.status = TestStatus::kSkipped;
  skipped.reason = "no GPU on h2";
  const auto v = judgeResults({failed, error, skipped}, ClusterConfig{}, JudgeContext{});
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].verdict, VerdictKind::kFail);
  EXPECT_EQ(v[0].reasons, std::vector<std::string>{"status FAILED: worker lost: h2"});
  EXPECT_EQ(v[1].verdict, VerdictKind::kFail);
  EXPECT_EQ(v[2].verdict, VerdictKind::kSkip);
  EXPECT_EQ(v[2].reasons, std::vector<std::string>{"status SKIPPED: no GPU on h2"});
  EXPECT_EQ(v[0].src, "h1/mlx5_0");
}

TEST(Judge, AbsoluteBandwidthAndLatency) {
  ClusterConfig c;
  c.thresholds.bandwidth_gbps_min = 25;
  c.thresholds.latency_us_max = 4;
  const auto v =
      judgeResults({bw("a", "h1", "h2", 18.2), bw("b", "h3", "h4", 30), lat("c", "h1", "h2", 5.2)},
                   c, JudgeContext{});
  EXPECT_EQ(v[0].verdict, VerdictKind::kFail);
  EXPECT_EQ(v[0].reasons,
            std::vector<std::string>{"bandwidth 18.2 Gb/s < 25 Gb/s (bandwidth_gbps_min)"});
  EXPECT_EQ(v[0].unit, "Gb/s");
  EXPECT_DOUBLE_EQ(v[0].value, 18.2);
  EXPECT_EQ(v[1].verdict, VerdictKind::kPass);
  EXPECT_TRUE(v[1].reasons.empty());
  EXPECT_EQ(v[2].verdict, VerdictKind::kFail);
  EXPECT_EQ(v[2].reasons, std::vector<std::string>{"latency 5.20 us > 4 us (latency_us_max)"});
  EXPECT_EQ(v[2].unit, "us");
}

TEST(Judge, LineRateUsesTheLowerPortAndIsSilentWhenUnknown) {
  ClusterConfig c;
  c.thresholds.line_rate_fraction_min = 0.9;
  JudgeContext ctx;
  ctx.port_rate_gbps = {{"h1/mlx5_0", 400}, {"h2/mlx5_0", 200}};
  const auto v = judgeResults({bw("a", "h1", "h2", 170), bw("b", "h1", "h3", 10)}, c, ctx);
  EXPECT_EQ(v[0].verdict, VerdictKind::kFail);
  EXPECT_EQ(v[0].reasons, std::vector<std::string>{"bandwidth 170.0 Gb/s is 0.85 of line rate "
                                                   "200 Gb/s < 0.9 (line_rate_fraction_min)"});
  EXPECT_EQ(v[1].verdict, VerdictKind::kPass);  // h3's rate unknown: rule not applied
  EXPECT_TRUE(v[1].reasons.empty());
}

TEST(Judge, LineRateFromWorkerInventory) {
  WorkerStatus w;
  w.name = "h1";
  w.labels = {{"rack", "a"}};
  Nic nic;
  nic.name = "mlx5_0";
  NicPort down, up;
  down.state = "DOWN";
  down.rate_gbps = 100;
  up.state = "ACTIVE";
  up.rate_gbps = 200;
  nic.ports = {down, up};
  w.inventory.nics = {nic};
  const JudgeContext ctx = judgeContextFrom({w});
  EXPECT_EQ(ctx.portRate("h1", "mlx5_0"), 200);
  EXPECT_EQ(ctx.portRate("h1", "mlx5_9"), 0);
  EXPECT_EQ(ctx.labels.at("h1").at("rack"), "a");
}

TEST(Judge, BestPairAndLowestLatencyWithinTheSameKind) {
  ClusterConfig c;
  c.thresholds.best_pair_fraction_min = 0.93;
  c.thresholds.lowest_latency_factor_max = 2.1;
  TestResult other_size = bw("d", "h5", "h6", 400);
  other_size.message_size = 8 << 20;  // another group: does not raise the bar
  const auto v = judgeResults({bw("a", "h1", "h2", 100), bw("b", "h3", "h4", 80), other_size,
                               lat("l1", "h1", "h2", 2.0), lat("l2", "h3", "h4", 5.0)},
                              c, JudgeContext{});
  EXPECT_EQ(v[0].verdict, VerdictKind::kPass);
  EXPECT_EQ(v[1].verdict, VerdictKind::kFail);
  EXPECT_EQ(v[1].reasons,
            std::vector<std::string>{"bandwidth 80.0 Gb/s is 0.80 of the best pair's 100.0 Gb/s "
                                     "(h1/mlx5_0->h2/mlx5_0) < 0.93 (best_pair_fraction_min)"});
  EXPECT_EQ(v[2].verdict, VerdictKind::kPass);
  EXPECT_EQ(v[3].verdict, VerdictKind::kPass);
  EXPECT_EQ(v[4].verdict, VerdictKind::kFail);
  EXPECT_TRUE(hasReason(v[4],
                        "latency 5.00 us is 2.50x the lowest 2.00 us (h1/mlx5_0->h2/mlx5_0)"
                        " > 2.1x (lowest_latency_factor_max)"));
}

TEST(Judge, GpuAgainstHostOnTheSameNicsNamesTheTopology) {
  ClusterConfig c;
  c.thresholds.gpu_host_ratio_min = 0.5;
  TestResult gpu = bw("g", "h1", "h2", 2.0, MemoryKind::kCuda);
  gpu.initiator.topo_class = gpu.target.topo_class = "SYS";
  TestResult host = bw("h", "h2", "h1", 10.0);  // the reverse direction counts too
  const auto v = judgeResults({gpu, host}, c, JudgeContext{});
  EXPECT_EQ(v[0].verdict, VerdictKind::kFail);
  EXPECT_EQ(v[0].reasons, std::vector<std::string>{"GPU 2.0 Gb/s is 0.20 of host 10.0 Gb/s on the "
                                                   "same NICs (topology SYS) < 0.5 "
                                                   "(gpu_host_ratio_min)"});
  EXPECT_EQ(v[0].topo_class, "SYS");
  EXPECT_EQ(v[1].verdict, VerdictKind::kPass);
}

TEST(Judge, RegressionAgainstTheNewestBaselineOfTheSamePair) {
  ClusterConfig c;
  c.thresholds.regression_tolerance = 0.1;
  JudgeContext ctx;
  TestResult old = bw("base-old", "h1", "h2", 50);
  old.finished_ms = 1;
  TestResult recent = bw("base-new", "h1", "h2", 100);
  recent.finished_ms = 2;
  ctx.baseline = {recent, old, bw("base-other", "h3", "h4", 1000)};
  const auto v = judgeResults({bw("a", "h1", "h2", 80), bw("b", "h5", "h6", 1)}, c, ctx);
  EXPECT_EQ(v[0].verdict, VerdictKind::kFail);
  EXPECT_EQ(v[0].reasons,
            std::vector<std::string>{"bandwidth 80.0 Gb/s is 20% below baseline 100.0 Gb/s "
                                     "(base-new) > 10% (regression_tolerance)"});
  EXPECT_EQ(v[1].verdict, VerdictKind::kPass);  // no baseline for this pair
}

TEST(Judge, TheStricterSideWins) {
  ClusterConfig c;
  c.thresholds.bandwidth_gbps_min = 10;
  HostClass fast;
  fast.name = "fast";
  fast.match = "fast*";
  fast.thresholds.bandwidth_gbps_min = 300;
  c.host_classes = {fast};
  const auto v = judgeResults({bw("a", "slow1", "fast1", 200), bw("b", "slow1", "slow2", 200)}, c,
                              JudgeContext{});
  EXPECT_EQ(v[0].verdict, VerdictKind::kFail);
  EXPECT_TRUE(hasReason(v[0], "< 300 Gb/s (bandwidth_gbps_min)"));
  EXPECT_EQ(v[1].verdict, VerdictKind::kPass);
}

TEST(Judge, IntegrityAndFigurelessRows) {
  TestResult corrupt = bw("a", "h1", "h2", 100);
  corrupt.integrity.checked = true;
  corrupt.integrity.bytes_checked = 4096;
  corrupt.integrity.wrong_bytes = 7;
  TestResult empty = bw("b", "h1", "h2", 0);
  empty.measurement.has_bandwidth = false;
  const auto v = judgeResults({corrupt, empty}, ClusterConfig{}, JudgeContext{});
  EXPECT_EQ(v[0].verdict, VerdictKind::kFail);
  EXPECT_TRUE(hasReason(v[0], "integrity: 7 wrong bytes of 4096 checked"));
  EXPECT_EQ(v[1].verdict, VerdictKind::kSkip);
}

TEST(Judge, SameRowsInAnyOrderGiveTheSameVerdicts) {
  ClusterConfig c;
  c.thresholds.best_pair_fraction_min = 0.93;
  std::vector<TestResult> rows;
  for (int i = 0; i < 12; ++i) {
    rows.push_back(bw("t" + std::to_string(i), "h" + std::to_string(i), "h" + std::to_string(i + 1),
                      i % 3 == 0 ? 100 : 90 + i));
  }
  JudgeContext ctx;
  ctx.retests = {"t4"};
  const auto first = judgeResults(rows, c, ctx);
  std::vector<TestResult> reversed(rows.rbegin(), rows.rend());
  auto second = judgeResults(reversed, c, ctx);
  std::reverse(second.begin(), second.end());
  ASSERT_EQ(first.size(), second.size());
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].test_id, second[i].test_id);
    EXPECT_EQ(first[i].verdict, second[i].verdict);
    EXPECT_EQ(first[i].reasons, second[i].reasons);
  }
  EXPECT_TRUE(first[4].retest);
  EXPECT_FALSE(first[3].retest);
}

}  // namespace
}  // namespace gdrmesh
