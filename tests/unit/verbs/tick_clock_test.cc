// The latency loop's clock: the TSC only where the kernel keeps time with it, and its ticks
// converted with the rate measured over the span against CLOCK_MONOTONIC.
#include "worker/transport/verbs/tick_clock.h"

#include <gtest/gtest.h>

namespace gdrmesh::verbs {
namespace {

TEST(TickClock, TheTscOnlyWhereTheKernelKeepsTimeWithIt) {
#if defined(__x86_64__)
  EXPECT_TRUE(tscUsable("tsc\n"));
  EXPECT_TRUE(tscUsable("tsc"));
#else
  EXPECT_FALSE(tscUsable("tsc\n"));
#endif
  EXPECT_FALSE(tscUsable("hpet\n"));
  EXPECT_FALSE(tscUsable("kvm-clock\n"));
  EXPECT_FALSE(tscUsable("tsc-early\n"));  // not yet judged stable
  EXPECT_FALSE(tscUsable(""));             // no sysfs: the monotonic clock
}

TEST(TickClock, MonotonicTicksAreNanoseconds) {
  TickClock c(false);
  EXPECT_FALSE(c.usesTsc());
  c.begin();
  const uint64_t a = c.ticks();
  const uint64_t b = c.ticks();
  c.end();
  EXPECT_LE(a, b);
  EXPECT_DOUBLE_EQ(c.nsPerTick(), 1.0);
}

// The same span measured in converted ticks and in nanoseconds agrees (both are read around
// it; how long it is does not matter, so a loaded machine cannot fail this).
TEST(TickClock, ConvertedTicksMatchTheMonotonicClock) {
#if defined(__x86_64__)
  TickClock c(true);
  ASSERT_TRUE(c.usesTsc());
  c.begin();
  const uint64_t t0 = c.ticks();
  const uint64_t n0 = nowNs();
  while (nowNs() - n0 < 2'000'000) {
  }
  const uint64_t n1 = nowNs();
  const uint64_t t1 = c.ticks();
  c.end();
  ASSERT_GT(t1, t0);
  const double ns = static_cast<double>(t1 - t0) * c.nsPerTick();
  EXPECT_NEAR(ns, static_cast<double>(n1 - n0), 0.01 * static_cast<double>(n1 - n0));
#else
  GTEST_SKIP() << "the TSC is an x86-64 counter";
#endif
}

TEST(TickClock, AnEmptySpanFallsBackToOne) {
  TickClock c(true);
  EXPECT_DOUBLE_EQ(c.nsPerTick(), 1.0);  // neither begin() nor end()
}

}  // namespace
}  // namespace gdrmesh::verbs
