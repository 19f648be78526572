// A sweep summed up for its reader: the parts it ran and the spread of its figures.
#include "coordinator/orchestrator/sweep_summary.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace gdrmesh {
namespace {

PairVerdict figure(const std::string& src, const std::string& dst, Op op, uint64_t size,
                   double value, const std::string& unit = "Gb/s") {
  PairVerdict v;
  v.src = src;
  v.dst = dst;
  v.op = op;
  v.mode = unit == "us" ? Mode::kLatency : Mode::kBandwidth;
  v.message_size = size;
  v.value = value;
  v.unit = unit;
  v.verdict = VerdictKind::kPass;
  return v;
}

// Every verdict PASS, and still the numbers: per (op, mode, size), min, median and max over the
// pairs, the worst pairs and the hosts with the worst medians.
TEST(SummariseFigures, SpreadWorstPairsAndHostsPerOpModeAndSize) {
  std::vector<PairVerdict> v = {
      figure("a/mlx5_0", "b/mlx5_0", Op::kWrite, 65536, 90),
      figure("a/mlx5_0", "c/mlx5_0", Op::kWrite, 65536, 50),
      figure("b/mlx5_0", "c/mlx5_0", Op::kWrite, 65536, 70),
      figure("a", "b", Op::kRead, 65536, 10),  // another op at the same size: its own group
      figure("a", "b", Op::kWrite, 2, 3.0, "us"),
      figure("a", "c", Op::kWrite, 2, 5.0, "us"),
  };
  PairVerdict retest = figure("c", "d", Op::kWrite, 65536, 1);
  retest.retest = true;  // a retest re-examines: not a figure of the sweep
  v.push_back(retest);
  PairVerdict none = figure("c", "d", Op::kWrite, 65536, 0);
  none.unit.clear();  // no figure (the test did not run)
  v.push_back(none);

  const auto s = summariseFigures(v, 2);
  ASSERT_EQ(s.size(), 3u);
  // (write, bw, 64KiB)
  EXPECT_EQ(s[0].op, Op::kWrite);
  EXPECT_EQ(s[0].mode, Mode::kBandwidth);
  EXPECT_EQ(s[0].message_size, 65536u);
  EXPECT_EQ(s[0].pairs, 3u);
  EXPECT_DOUBLE_EQ(s[0].min, 50);
  EXPECT_DOUBLE_EQ(s[0].median, 70);
  EXPECT_DOUBLE_EQ(s[0].max, 90);
  ASSERT_EQ(s[0].worst.size(), 2u);
  EXPECT_EQ(s[0].worst[0].dst, "c/mlx5_0");
  EXPECT_DOUBLE_EQ(s[0].worst[0].value, 50);
  EXPECT_DOUBLE_EQ(s[0].worst[1].value, 70);
  // Host medians: a {90, 50} = 70, b {90, 70} = 80, c {50, 70} = 60: c is the worst.
  ASSERT_EQ(s[0].worst_hosts.size(), 2u);
  EXPECT_EQ(s[0].worst_hosts[0].host, "c");
  EXPECT_DOUBLE_EQ(s[0].worst_hosts[0].median, 60);
  EXPECT_EQ(s[0].worst_hosts[1].host, "a");
  // (write, lat, 2 B): for latency the highest is the worst.
  EXPECT_EQ(s[1].mode, Mode::kLatency);
  EXPECT_EQ(s[1].unit, "us");
  EXPECT_DOUBLE_EQ(s[1].median, 4.0);
  EXPECT_DOUBLE_EQ(s[1].worst[0].value, 5.0);
  EXPECT_EQ(s[1].worst_hosts[0].host, "c");
  // (read, bw, 64KiB)
  EXPECT_EQ(s[2].op, Op::kRead);
  EXPECT_EQ(s[2].pairs, 1u);
  EXPECT_TRUE(summariseFigures({}).empty());
}

// An acceptance run's parts are its config's sweeps, narrowed by the run's hosts, with the
// plan's ranges when the counts were stored; a plain sweep is its own one part.
TEST(SweepParts, ConfigSweepsWithTheirPlanRanges) {
  SweepSpec run;
  run.pattern_from_config = true;
  run.hosts = {"h1", "h2"};
  run.config_yaml = "sweeps: ...";
  SweepSpec a;
  a.test.op = Op::kRead;
  SweepSpec b;
  b.pattern = SweepPattern::kLoopback;
  b.hosts = {"h9"};
  auto parts = sweepParts(run, {a, b}, {6, 2});
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].spec.test.op, Op::kRead);
  EXPECT_EQ(parts[0].spec.hosts, run.hosts);
  EXPECT_TRUE(parts[0].spec.config_yaml.empty());
  EXPECT_EQ(parts[1].spec.hosts, std::vector<std::string>{"h9"});  // its own hosts stay
  EXPECT_TRUE(parts[1].planned_known);
  EXPECT_EQ(parts[1].plan_begin, 6u);
  EXPECT_EQ(parts[1].planned, 2u);
  EXPECT_EQ(parts[1].index, 1u);
  // Counts that do not match the parts: ranges unknown.
  parts = sweepParts(run, {a, b}, {8});
  EXPECT_FALSE(parts[0].planned_known);

  SweepSpec plain;
  plain.pattern = SweepPattern::kRails;
  parts = sweepParts(plain, {a, b}, {12});
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].spec.pattern, SweepPattern::kRails);
  EXPECT_EQ(parts[0].planned, 12u);
}

// reportFigures (the sweep's end, straight from its rows) gives what summing every verdictOf
// gives: the same groups, spread, worst pairs (ties in plan order) and worst hosts (ties by
// name), retests and rows without a figure left out, a non-finite value as 0.
TEST(ReportFigures, TheSameAsSummingEveryVerdict) {
  JudgeRows rows;
  int n = 0;
  auto add = [&](const std::string& a, const std::string& b, Mode mode, double value,
                 bool retest = false, bool figure = true) {
    TestResult r;
    r.test_id = "t" + std::to_string(n);
    r.plan_index = n++;
    r.initiator.worker = a;
    r.initiator.nic = a == "c" ? "" : "mlx5_0";
    r.target.worker = b;
    r.target.nic = "mlx5_1";
    r.message_size = mode == Mode::kLatency ? 8 : 65536;
    r.mode = mode;
    r.status = TestStatus::kPassed;
    if (figure && mode == Mode::kLatency) {
      r.measurement.has_latency = true;
      r.measurement.lat.median_us = value;
    } else if (figure) {
      r.measurement.has_bandwidth = true;
      r.measurement.bw.avg_gbps = value;
    }
    rows.add(r, retest);
  };
  add("a", "b", Mode::kBandwidth, 90);
  add("a", "c", Mode::kBandwidth, 50);
  add("b", "c", Mode::kBandwidth, 50);  // a tie with the row before: plan order decides
  add("c", "d", Mode::kBandwidth, 70);
  add("d", "a", Mode::kBandwidth, std::nan(""));
  add("a", "b", Mode::kBandwidth, 10, /*retest=*/true);
  add("b", "d", Mode::kBandwidth, 0, false, /*figure=*/false);
  add("a", "b", Mode::kLatency, 3.5);
  add("c", "d", Mode::kLatency, 2.5);
  JudgeVerdicts verdicts;
  for (size_t i = 0; i < rows.size(); ++i) {
    verdicts.kind.push_back(VerdictKind::kPass);
    verdicts.reasons_of.push_back(0);
  }
  FigureAccumulator acc;
  for (size_t i = 0; i < rows.size(); ++i) {
    PairVerdict v = verdictOf(rows, verdicts, i);
    if (!std::isfinite(v.value)) v.value = 0.0;
    acc.add(v);
  }
  const std::vector<FigureSummary> expected = acc.result();
  const std::vector<FigureSummary> got = reportFigures(rows);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(figuresJson(got), figuresJson(expected));
  EXPECT_EQ(got[0].worst.size(), 3u);
  EXPECT_EQ(got[0].worst[0].value, 0.0);  // the NaN, made finite
}

}  // namespace
}  // namespace gdrmesh
