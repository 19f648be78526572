// The outlier detector: a host slow with every partner stands out without any threshold; noise
// and one noisy pair do not; a NIC stands for its host; the verdict follows the documented
// default.
#include "coordinator/orchestrator/outliers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "coordinator/orchestrator/judge.h"
#include "coordinator/orchestrator/localiser.h"

namespace gdrmesh {
namespace {

std::string hostName(int i) {
  return "h" + std::to_string(i);
}

TestResult row(const std::string& id, const std::string& a, const std::string& b, double gbps,
               const std::string& nic = "mlx5_0") {
  TestResult r;
  r.test_id = id;
  r.status = TestStatus::kPassed;
  r.message_size = 65536;
  r.initiator.worker = a;
  r.initiator.nic = nic;
  r.target.worker = b;
  r.target.nic = nic;
  r.measurement.has_bandwidth = true;
  r.measurement.bw.avg_gbps = gbps;
  return r;
}

// An all-pairs sweep over h1..hN: the figure of each pair from `gbps(a, b)`.
JudgeRows allPairs(int n, const std::function<double(int, int)>& gbps) {
  JudgeRows rows;
  int id = 0;
  for (int i = 1; i <= n; ++i) {
    for (int j = i + 1; j <= n; ++j) {
      rows.add(row("t" + std::to_string(id++), hostName(i), hostName(j), gbps(i, j)));
    }
  }
  return rows;
}

bool hasEvidence(const Suspect& s, const std::string& text) {
  return std::any_of(s.evidence.begin(), s.evidence.end(),
                     [&](const std::string& e) { return e.find(text) != std::string::npos; });
}

// The case: 64 hosts, one at 40 %, no threshold: before, PASS and no suspect.
TEST(Outliers, AHostAt40PercentAmong64IsFoundWithoutAThresholdAndFailsTheSweep) {
  const JudgeRows rows = allPairs(64, [](int a, int b) {
    return (a == 17 || b == 17) ? 40.0 : 100.0 + (a * 7 + b * 13) % 5 * 0.1;
  });
  const OutlierFindings f = findOutliers(rows, OutlierOptions{});
  ASSERT_EQ(f.suspects.size(), 1u) << f.suspects[1].name;
  EXPECT_EQ(f.suspects[0].kind, "host");
  EXPECT_EQ(f.suspects[0].name, "h17");
  EXPECT_DOUBLE_EQ(f.suspects[0].score, 1.0);
  EXPECT_TRUE(hasEvidence(f.suspects[0], "median 40.0 Gb/s over 63 partners, cluster median 100."))
      << f.suspects[0].evidence[0];
  EXPECT_TRUE(hasEvidence(f.suspects[0], "(64 hosts)"));
  EXPECT_TRUE(hasEvidence(f.suspects[0], "60% below (64KiB write)"));
  EXPECT_TRUE(f.repeat.empty());  // its pairs are explained by it

  const JudgeVerdicts verdicts = judgeRows(rows, ClusterConfig{}, JudgeContext{}, JudgeRows{});
  SweepVerdict v = sweepVerdict(rows, verdicts, f, ClusterConfig{}, {});
  EXPECT_FALSE(v.pass);
  EXPECT_NE(v.reason.find("outlier host h17: median 40.0 Gb/s"), std::string::npos) << v.reason;
  EXPECT_NE(v.reason.find("no threshold is configured"), std::string::npos) << v.reason;

  // Thresholds, where configured, decide: the outlier is a suspect and a note.
  ClusterConfig with;
  with.thresholds.bandwidth_gbps_min = 10;
  v = sweepVerdict(rows, judgeRows(rows, with, JudgeContext{}, JudgeRows{}), f, with, {});
  EXPECT_TRUE(v.pass);
  ASSERT_EQ(v.notes.size(), 1u);
  EXPECT_NE(v.notes[0].find("a suspect, not the verdict"), std::string::npos) << v.notes[0];
  with.outliers.fail = OutlierOptions::Fail::kAlways;
  EXPECT_FALSE(
      sweepVerdict(rows, judgeRows(rows, with, JudgeContext{}, JudgeRows{}), f, with, {}).pass);
  ClusterConfig never;
  never.outliers.fail = OutlierOptions::Fail::kNever;
  EXPECT_TRUE(sweepVerdict(rows, verdicts, f, never, {}).pass);
  OutlierOptions off;
  off.detect = false;
  EXPECT_TRUE(findOutliers(rows, off).suspects.empty());
}

// +-5 % noise on every test, 200 seeded sweeps of 12 hosts: nobody is called an outlier.
TEST(Outliers, RealisticNoiseMakesNoSuspect) {
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> noise(0.95, 1.05);
    const JudgeRows rows = allPairs(12, [&](int, int) { return 100.0 * noise(rng); });
    const OutlierFindings f = findOutliers(rows, OutlierOptions{});
    EXPECT_TRUE(f.suspects.empty())
        << "seed " << seed << ": " << f.suspects[0].name << " " << f.suspects[0].evidence[0];
    EXPECT_TRUE(f.repeat.empty()) << "seed " << seed;
  }
}

// One noisy sample (0.16 of the rest): repeated, not a suspect; a note once the repeat is fine;
// a link suspect when the repeat is as low.
TEST(Outliers, OneLowPairIsRepeatedAndIsALinkOnlyWhenTheRepeatIsLowToo) {
  auto low = [](int a, int b) { return a == 2 && b == 5 ? 16.0 : 100.0; };
  JudgeRows rows = allPairs(8, low);
  OutlierFindings f = findOutliers(rows, OutlierOptions{});
  EXPECT_TRUE(f.suspects.empty()) << f.suspects[0].name;
  ASSERT_EQ(f.repeat.size(), 1u);
  EXPECT_EQ(rows.testId(rows[f.repeat[0]]), "t9");  // h2->h5

  JudgeRows noisy = rows;
  noisy.add(row("r0", "h5", "h2", 99.0), true);  // the repeat, either direction
  f = findOutliers(noisy, OutlierOptions{});
  EXPECT_TRUE(f.suspects.empty()) << f.suspects[0].name;
  EXPECT_TRUE(f.repeat.empty());
  ASSERT_EQ(f.notes.size(), 1u);
  EXPECT_NE(f.notes[0].find("h2/mlx5_0->h5/mlx5_0 (64KiB write): 16.0 Gb/s on the sweep's test, "
                            "99.0 Gb/s on its repeat: noise, not a link"),
            std::string::npos)
      << f.notes[0];

  JudgeRows bad = rows;
  bad.add(row("r0", "h2", "h5", 17.0), true);
  f = findOutliers(bad, OutlierOptions{});
  ASSERT_EQ(f.suspects.size(), 1u);
  EXPECT_EQ(f.suspects[0].kind, "link");
  EXPECT_EQ(f.suspects[0].name, "h2/mlx5_0<->h5/mlx5_0");
  EXPECT_TRUE(hasEvidence(f.suspects[0], "16.0 Gb/s on the sweep's test, 17.0 Gb/s on its repeat"))
      << f.suspects[0].evidence[0];
}

// Hosts with two NICs each (rails): one NIC at 40 % is the suspect, not its host.
TEST(Outliers, ASlowNicOfSeveralIsNamedInsteadOfItsHost) {
  JudgeRows rows;
  int id = 0;
  for (const std::string nic : {"mlx5_0", "mlx5_1"}) {
    for (int i = 1; i <= 8; ++i) {
      for (int j = i + 1; j <= 8; ++j) {
        const bool slow = nic == "mlx5_1" && (i == 3 || j == 3);
        rows.add(row("t" + std::to_string(id++), hostName(i), hostName(j), slow ? 40 : 100, nic));
      }
    }
  }
  const OutlierFindings f = findOutliers(rows, OutlierOptions{});
  ASSERT_EQ(f.suspects.size(), 1u) << f.suspects[1].name;
  EXPECT_EQ(f.suspects[0].kind, "nic");
  EXPECT_EQ(f.suspects[0].name, "h3/mlx5_1");
  EXPECT_TRUE(hasEvidence(f.suspects[0], "median 40.0 Gb/s over 7 partners"))
      << f.suspects[0].evidence[0];
}

TEST(Outliers, TwoBadHostsAtOnceAreBothFound) {
  const JudgeRows rows = allPairs(12, [](int a, int b) {
    double f = 100;
    if (a == 4 || b == 4) f *= 0.5;
    if (a == 9 || b == 9) f *= 0.7;
    return f;
  });
  const OutlierFindings f = findOutliers(rows, OutlierOptions{});
  ASSERT_EQ(f.suspects.size(), 2u);
  EXPECT_EQ(f.suspects[0].name, "h4");  // the slower first
  EXPECT_EQ(f.suspects[1].name, "h9");
  EXPECT_GT(f.suspects[0].score, f.suspects[1].score);
}

// Too few hosts to call anyone an outlier (a median of 3 partners, a MAD of 4 hosts).
TEST(Outliers, FourHostsAreTooFewToJudge) {
  const JudgeRows rows = allPairs(4, [](int a, int b) { return a == 1 || b == 1 ? 10.0 : 100.0; });
  EXPECT_TRUE(findOutliers(rows, OutlierOptions{}).suspects.empty());
  OutlierOptions o;
  o.min_partners = 3;
  o.min_hosts = 4;
  const auto f = findOutliers(rows, o);
  ASSERT_EQ(f.suspects.size(), 1u);
  EXPECT_EQ(f.suspects[0].name, "h1");
}

// Latency: higher is worse.
TEST(Outliers, AHostWithHighLatencyIsAnOutlier) {
  JudgeRows rows;
  int id = 0;
  for (int i = 1; i <= 8; ++i) {
    for (int j = i + 1; j <= 8; ++j) {
      TestResult r = row("t" + std::to_string(id++), hostName(i), hostName(j), 0);
      r.measurement.has_bandwidth = false;
      r.measurement.has_latency = true;
      r.measurement.lat.median_us = i == 6 || j == 6 ? 5.0 : 2.0;
      r.mode = Mode::kLatency;
      rows.add(r);
    }
  }
  const OutlierFindings f = findOutliers(rows, OutlierOptions{});
  ASSERT_EQ(f.suspects.size(), 1u);
  EXPECT_EQ(f.suspects[0].name, "h6");
  EXPECT_TRUE(hasEvidence(f.suspects[0], "median 5.00 us over 7 partners, cluster median 2.00 us"))
      << f.suspects[0].evidence[0];
}

// A status failure is never forgiven, even when its repeat passed; a threshold one is.
TEST(Outliers, OnlyAThresholdFailureWhoseRepeatPassedIsNoise) {
  ClusterConfig c;
  c.thresholds.bandwidth_gbps_min = 25;
  JudgeRows rows = allPairs(6, [](int a, int b) { return a == 1 && b == 2 ? 10.0 : 100.0; });
  rows.add(row("r0", "h1", "h2", 100.0), true);
  JudgeVerdicts v = judgeRows(rows, c, JudgeContext{}, JudgeRows{});
  const Localisation located = localiseSweep(rows, v);
  ASSERT_EQ(located.noise_rows, std::vector<size_t>{0});
  EXPECT_TRUE(sweepVerdict(rows, v, OutlierFindings{}, c, located.noise_rows).pass);
  EXPECT_FALSE(sweepVerdict(rows, v, OutlierFindings{}, c, {}).pass);

  JudgeRows broken;
  for (int i = 1; i <= 6; ++i) {
    for (int j = i + 1; j <= 6; ++j) {
      TestResult r = row(hostName(i) + hostName(j), hostName(i), hostName(j), 100);
      if (i == 1 && j == 2) r.status = TestStatus::kFailed;
      broken.add(r);
    }
  }
  broken.add(row("r0", "h1", "h2", 100.0), true);
  v = judgeRows(broken, c, JudgeContext{}, JudgeRows{});
  EXPECT_FALSE(sweepVerdict(broken, v, OutlierFindings{}, c, {0}).pass);
}

}  // namespace
}  // namespace gdrmesh
