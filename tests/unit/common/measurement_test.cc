// Tests of common/measurement.h: latency statistics and bandwidth figures on known inputs.
#include "common/measurement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace gdrmesh {
namespace {

TEST(LatencyTest, EmptyInputGivesNoSamplesAndZeros) {
  LatencyStats s = computeLatency({});
  EXPECT_EQ(s.samples, 0u);
  EXPECT_EQ(s.min_us, 0);
  EXPECT_EQ(s.max_us, 0);
  EXPECT_EQ(s.median_us, 0);
  EXPECT_EQ(s.mean_us, 0);
  EXPECT_EQ(s.stdev_us, 0);
  EXPECT_EQ(s.p99_us, 0);
  EXPECT_EQ(s.p999_us, 0);
}

TEST(LatencyTest, OddCountUnsortedInput) {
  LatencyStats s = computeLatency({5.0, 1.0, 3.0});
  EXPECT_EQ(s.samples, 3u);
  EXPECT_DOUBLE_EQ(s.min_us, 1.0);
  EXPECT_DOUBLE_EQ(s.max_us, 5.0);
  EXPECT_DOUBLE_EQ(s.median_us, 3.0);
  EXPECT_DOUBLE_EQ(s.mean_us, 3.0);
  EXPECT_NEAR(s.stdev_us, std::sqrt(8.0 / 3.0), 1e-12);  // population, not sample (sqrt(4))
  EXPECT_DOUBLE_EQ(s.p99_us, 5.0);
  EXPECT_DOUBLE_EQ(s.p999_us, 5.0);
}

TEST(LatencyTest, EvenCountMedianIsTheMeanOfTheMiddleTwo) {
  LatencyStats s = computeLatency({4.0, 1.0, 3.0, 2.0});
  EXPECT_DOUBLE_EQ(s.median_us, 2.5);
  EXPECT_DOUBLE_EQ(s.mean_us, 2.5);
  EXPECT_NEAR(s.stdev_us, std::sqrt(1.25), 1e-12);
  EXPECT_DOUBLE_EQ(s.min_us, 1.0);
  EXPECT_DOUBLE_EQ(s.max_us, 4.0);
}

TEST(LatencyTest, SingleSample) {
  LatencyStats s = computeLatency({7.5});
  EXPECT_EQ(s.samples, 1u);
  EXPECT_DOUBLE_EQ(s.min_us, 7.5);
  EXPECT_DOUBLE_EQ(s.median_us, 7.5);
  EXPECT_DOUBLE_EQ(s.p99_us, 7.5);
  EXPECT_DOUBLE_EQ(s.p999_us, 7.5);
  EXPECT_DOUBLE_EQ(s.max_us, 7.5);
  EXPECT_DOUBLE_EQ(s.stdev_us, 0.0);
}

TEST(LatencyTest, NearestRankPercentilesOnOneToThousandShuffled) {
  std::vector<double> v;
  for (int i = 1; i <= 1000; ++i) v.push_back(i);
  std::mt19937 rng(1);
  std::shuffle(v.begin(), v.end(), rng);
  LatencyStats s = computeLatency(v);
  EXPECT_EQ(s.samples, 1000u);
  EXPECT_DOUBLE_EQ(s.min_us, 1);
  EXPECT_DOUBLE_EQ(s.max_us, 1000);
  EXPECT_DOUBLE_EQ(s.median_us, 500.5);
  EXPECT_DOUBLE_EQ(s.mean_us, 500.5);
  EXPECT_NEAR(s.stdev_us, std::sqrt((1000.0 * 1000.0 - 1.0) / 12.0), 1e-9);
  EXPECT_DOUBLE_EQ(s.p99_us, 990);   // 990th of 1000
  EXPECT_DOUBLE_EQ(s.p999_us, 999);  // 999th of 1000
}

TEST(LatencyTest, NearestRankMatchesIntegerDefinitionForEveryCount) {
  // Rank = ceil(q * n) computed exactly with integers; samples are 1..n so value == rank.
  for (uint64_t n = 1; n <= 2500; ++n) {
    std::vector<double> v;
    v.reserve(n);
    for (uint64_t i = n; i >= 1; --i) v.push_back(static_cast<double>(i));
    LatencyStats s = computeLatency(v);
    const uint64_t r99 = (99 * n + 99) / 100;
    const uint64_t r999 = (999 * n + 999) / 1000;
    ASSERT_DOUBLE_EQ(s.p99_us, static_cast<double>(r99)) << "n=" << n;
    ASSERT_DOUBLE_EQ(s.p999_us, static_cast<double>(r999)) << "n=" << n;
    ASSERT_LE(s.min_us, s.median_us);
    ASSERT_LE(s.median_us, s.p99_us);
    ASSERT_LE(s.p99_us, s.p999_us);
    ASSERT_LE(s.p999_us, s.max_us);
  }
}

TEST(LatencyTest, StdevIsStableForLargeOffsets) {
  const double base = 1e9;
  LatencyStats s = computeLatency({base + 1, base + 2, base + 3});
  EXPECT_NEAR(s.stdev_us, std::sqrt(2.0 / 3.0), 1e-6);
  EXPECT_DOUBLE_EQ(s.mean_us, base + 2);
}

TEST(BandwidthTest, AverageAndPeakOnSyntheticTimestamps) {
  // A fast burst of three messages, then one slow one. 1000 B each.
  const std::vector<uint64_t> posted{0, 10, 20, 1000};
  const std::vector<uint64_t> completed{100, 110, 120, 2000};
  BandwidthStats b = computeBandwidth(1000, posted, completed, 3);
  EXPECT_EQ(b.bytes, 4000u);
  EXPECT_EQ(b.messages, 4u);
  EXPECT_DOUBLE_EQ(b.seconds, 2000e-9);
  EXPECT_NEAR(b.avg_gbps, 16.0, 1e-9);  // 4000 B * 8 / 2000 ns
  EXPECT_NEAR(b.avgGBps(), 2.0, 1e-9);
  EXPECT_NEAR(b.msg_rate_mpps, 2.0, 1e-9);  // 4 messages in 2 us
  // Best window of 3: posts at 0, completions by 120 -> 40 ns per 1000 B message.
  EXPECT_DOUBLE_EQ(b.peak_gbps, 200.0);
  EXPECT_DOUBLE_EQ(b.peakGBps(), 25.0);
  EXPECT_GE(b.peak_gbps, b.avg_gbps);
}

TEST(BandwidthTest, WindowIsClampedToOneAndToN) {
  const std::vector<uint64_t> posted{0, 10, 20, 1000};
  const std::vector<uint64_t> completed{100, 110, 120, 2000};
  // window 0 -> 1: single-message times are 100, 100, 100, 1000 ns; best 100 ns -> 80 Gb/s.
  EXPECT_DOUBLE_EQ(computeBandwidth(1000, posted, completed, 0).peak_gbps, 80.0);
  EXPECT_DOUBLE_EQ(computeBandwidth(1000, posted, completed, 1).peak_gbps, 80.0);
  // window > n -> n: the whole run, which is the average.
  BandwidthStats b = computeBandwidth(1000, posted, completed, 1000);
  EXPECT_DOUBLE_EQ(b.peak_gbps, b.avg_gbps);
  EXPECT_NEAR(b.peak_gbps, 16.0, 1e-9);
}

TEST(BandwidthTest, PeakNeverBelowAverage) {
  // Evenly spaced, fully serialised messages: every window is as slow as the whole run.
  std::vector<uint64_t> posted, completed;
  for (uint64_t i = 0; i < 50; ++i) {
    posted.push_back(i * 100);
    completed.push_back(i * 100 + 100);
  }
  BandwidthStats b = computeBandwidth(4096, posted, completed, 8);
  EXPECT_GT(b.avg_gbps, 0);
  EXPECT_GE(b.peak_gbps, b.avg_gbps);
  EXPECT_NEAR(b.avg_gbps, 4096.0 * 8 / 100.0, 1e-6);
}

TEST(BandwidthTest, EmptyAndMismatchedInputs) {
  BandwidthStats e = computeBandwidth(1000, {}, {}, 4);
  EXPECT_EQ(e.bytes, 0u);
  EXPECT_EQ(e.messages, 0u);
  EXPECT_EQ(e.avg_gbps, 0);
  EXPECT_EQ(e.peak_gbps, 0);
  // Only messages with both timestamps count.
  BandwidthStats m = computeBandwidth(1000, {0, 10, 20}, {100, 110}, 4);
  EXPECT_EQ(m.messages, 2u);
  EXPECT_EQ(m.bytes, 2000u);
  EXPECT_DOUBLE_EQ(m.seconds, 110e-9);
}

TEST(BandwidthTest, FromTotalsUnits) {
  // 1e9 bytes in 1 s = 8 Gb/s = 1 GB/s (decimal units).
  BandwidthStats b = bandwidthFromTotals(1000000000ULL, 1000, 1.0);
  EXPECT_DOUBLE_EQ(b.avg_gbps, 8.0);
  EXPECT_DOUBLE_EQ(b.avgGBps(), 1.0);
  EXPECT_DOUBLE_EQ(b.peak_gbps, 8.0);
  EXPECT_NEAR(b.msg_rate_mpps, 0.001, 1e-15);
  EXPECT_EQ(b.bytes, 1000000000ULL);
  EXPECT_EQ(b.messages, 1000u);
  // Binary sizes are not mixed in: 2^30 B in 1 s is 8.589934592 Gb/s.
  EXPECT_DOUBLE_EQ(bandwidthFromTotals(1ULL << 30, 1, 1.0).avg_gbps, 8.589934592);
}

TEST(BandwidthTest, FromTotalsZeroSecondsDoesNotDivide) {
  BandwidthStats b = bandwidthFromTotals(100, 1, 0.0);
  EXPECT_EQ(b.avg_gbps, 0);
  EXPECT_EQ(b.msg_rate_mpps, 0);
  EXPECT_FALSE(std::isnan(b.peak_gbps));
}

}  // namespace
}  // namespace gdrmesh
