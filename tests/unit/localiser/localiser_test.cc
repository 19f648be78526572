// The localiser: a host slow with everyone ranks first; a single bad link is a link suspect,
// and retests with known-good partners clear its hosts.
#include "coordinator/orchestrator/localiser.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "coordinator/orchestrator/judge.h"

namespace gdrmesh {
namespace {

TestResult row(const std::string& id, const std::string& a, const std::string& b, double gbps) {
  TestResult r;
  r.test_id = id;
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

std::vector<std::string> hostNames(int n) {
  std::vector<std::string> out;
  for (int i = 1; i <= n; ++i) out.push_back("h" + std::to_string(i));
  return out;
}

// An all-pairs sweep over h1..h8 where `slow(a, b)` says which pairs run at 10 Gb/s.
template <typename Slow>
std::vector<TestResult> sweep(Slow slow) {
  const auto hosts = hostNames(8);
  std::vector<TestResult> rows;
  for (size_t i = 0; i < hosts.size(); ++i) {
    for (size_t j = i + 1; j < hosts.size(); ++j) {
      rows.push_back(row("t" + std::to_string(rows.size()), hosts[i], hosts[j],
                         slow(hosts[i], hosts[j]) ? 10 : 100));
    }
  }
  return rows;
}

ClusterConfig config() {
  ClusterConfig c;
  c.thresholds.bandwidth_gbps_min = 25;
  return c;
}

// Runs the planned retests with `gbps(retest)` and appends them to the rows.
template <typename Outcome>
std::vector<PairVerdict> withRetests(std::vector<TestResult>& rows,
                                     const std::vector<PlannedTest>& retests, Outcome gbps,
                                     JudgeContext& ctx) {
  for (size_t i = 0; i < retests.size(); ++i) {
    const PlannedTest& t = retests[i];
    TestResult r = row("r" + std::to_string(i), t.initiator.worker, t.target.worker, gbps(t));
    r.initiator.nic = t.initiator.device;
    r.target.nic = t.target.device;
    ctx.retests.insert(r.test_id);
    rows.push_back(r);
  }
  return judgeResults(rows, config(), ctx);
}

bool hasEvidence(const Suspect& s, const std::string& text) {
  return std::any_of(s.evidence.begin(), s.evidence.end(),
                     [&](const std::string& e) { return e.find(text) != std::string::npos; });
}

TEST(Localiser, AHostSlowWithEveryoneRanksFirstAndAloneAndStaysThereAfterRetest) {
  auto rows =
      sweep([](const std::string& a, const std::string& b) { return a == "h5" || b == "h5"; });
  JudgeContext ctx;
  auto verdicts = judgeResults(rows, config(), ctx);
  auto suspects = localise(rows, verdicts);
  ASSERT_FALSE(suspects.empty());
  EXPECT_EQ(suspects[0].kind, "host");
  EXPECT_EQ(suspects[0].name, "h5");
  EXPECT_DOUBLE_EQ(suspects[0].score, 1.0);
  EXPECT_TRUE(hasEvidence(suspects[0], "failed with 7 of 7 partners")) << suspects[0].evidence[0];
  EXPECT_EQ(suspects.size(), 1u) << suspects[1].name;  // its partners are not blamed

  // Only h5 needs a retest: every other host's failures are explained by h5.
  const auto retests = planRetests(rows, verdicts, hostNames(8), 10);
  ASSERT_EQ(retests.size(), 1u);
  EXPECT_TRUE(retests[0].retest);
  EXPECT_FALSE(retests[0].retest_of.empty());
  EXPECT_TRUE(retests[0].initiator.worker == "h5" || retests[0].target.worker == "h5");
  verdicts = withRetests(
      rows, retests, [](const PlannedTest&) { return 41.0 / 4; }, ctx);
  suspects = localise(rows, verdicts);
  ASSERT_FALSE(suspects.empty());
  EXPECT_EQ(suspects[0].name, "h5");
  EXPECT_TRUE(hasEvidence(suspects[0], "retest with known-good h2: bandwidth 10.2 Gb/s < 25"))
      << suspects[0].evidence.back();
}

TEST(Localiser, OneBadLinkIsALinkSuspectAndRetestsClearBothHosts) {
  auto rows = sweep([](const std::string& a, const std::string& b) {
    return (a == "h1" && b == "h2") || (a == "h2" && b == "h1");
  });
  JudgeContext ctx;
  auto verdicts = judgeResults(rows, config(), ctx);
  auto suspects = localise(rows, verdicts);
  ASSERT_FALSE(suspects.empty());
  EXPECT_EQ(suspects[0].kind, "link");
  EXPECT_EQ(suspects[0].name, "h1/mlx5_0<->h2/mlx5_0");
  for (size_t i = 1; i < suspects.size(); ++i) EXPECT_LT(suspects[i].score, suspects[0].score);

  const auto retests = planRetests(rows, verdicts, hostNames(8), 10);
  ASSERT_EQ(retests.size(), 2u);
  std::set<std::string> examined;
  for (const auto& t : retests) {
    EXPECT_EQ(t.retest_of, "t0");
    EXPECT_EQ(t.message_size, 65536u);
    EXPECT_EQ(t.initiator.device, "mlx5_0");
    EXPECT_EQ(t.target.device, "mlx5_0");
    // Each retest pairs one endpoint of the failing pair with someone else.
    const bool a = t.initiator.worker == "h1" || t.initiator.worker == "h2";
    const bool b = t.target.worker == "h1" || t.target.worker == "h2";
    EXPECT_NE(a, b);
    examined.insert(a ? t.initiator.worker : t.target.worker);
  }
  EXPECT_EQ(examined, (std::set<std::string>{"h1", "h2"}));
  // Both retests share no resource: they may run in one round.
  EXPECT_EQ(retests[0].round, 0);
  EXPECT_EQ(retests[1].round, 0);

  verdicts = withRetests(
      rows, retests, [](const PlannedTest&) { return 100.0; }, ctx);
  suspects = localise(rows, verdicts);
  ASSERT_EQ(suspects.size(), 1u) << suspects[1].name;
  EXPECT_EQ(suspects[0].kind, "link");
  EXPECT_DOUBLE_EQ(suspects[0].score, 1.0);
  EXPECT_TRUE(hasEvidence(suspects[0], "passed (the link, not the host)"));
}

TEST(Localiser, ANicFailingOnOneRailIsNamedInsteadOfItsHost) {
  std::vector<TestResult> rows;
  const auto hosts = hostNames(4);
  for (const std::string nic : {"mlx5_0", "mlx5_1"}) {
    for (size_t i = 0; i < hosts.size(); ++i) {
      for (size_t j = i + 1; j < hosts.size(); ++j) {
        const bool bad = nic == "mlx5_1" && (hosts[i] == "h3" || hosts[j] == "h3");
        TestResult r = row(nic + std::to_string(rows.size()), hosts[i], hosts[j], bad ? 5 : 100);
        r.initiator.nic = r.target.nic = nic;
        rows.push_back(r);
      }
    }
  }
  const auto verdicts = judgeResults(rows, config(), JudgeContext{});
  const auto suspects = localise(rows, verdicts);
  ASSERT_FALSE(suspects.empty());
  EXPECT_EQ(suspects[0].kind, "nic");
  EXPECT_EQ(suspects[0].name, "h3/mlx5_1");
  EXPECT_EQ(suspects.size(), 1u);
}

TEST(Localiser, DeterministicAndCapped) {
  auto rows = sweep([](const std::string& a, const std::string& b) {
    return (a == "h1" && b == "h2") || (a == "h3" && b == "h4");
  });
  const auto verdicts = judgeResults(rows, config(), JudgeContext{});
  const auto s1 = localise(rows, verdicts);
  const auto s2 = localise(rows, verdicts);
  ASSERT_EQ(s1.size(), s2.size());
  for (size_t i = 0; i < s1.size(); ++i) {
    EXPECT_EQ(s1[i].name, s2[i].name);
    EXPECT_EQ(s1[i].evidence, s2[i].evidence);
  }
  EXPECT_EQ(planRetests(rows, verdicts, hostNames(8), 3).size(), 3u);
  EXPECT_TRUE(planRetests(rows, verdicts, hostNames(8), 0).empty());
  EXPECT_TRUE(planRetests(rows, verdicts, {"h1", "h2", "h3", "h4"}, 10).empty());
}

}  // namespace
}  // namespace gdrmesh
