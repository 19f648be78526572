// The localiser: a host slow with everyone ranks first; a single bad link is a link suspect,
// and retests with known-good partners clear its hosts.
#include "coordinator/orchestrator/localiser.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "coordinator/orchestrator/judge.h"
#include "coordinator/orchestrator/outliers.h"

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
  ASSERT_EQ(retests.size(), 3u);
  // First the pair itself again, then each endpoint with a known-good partner.
  EXPECT_EQ(retests[0].initiator.worker, "h1");
  EXPECT_EQ(retests[0].target.worker, "h2");
  std::set<std::string> examined;
  for (const auto& t : retests) {
    EXPECT_EQ(t.retest_of, "t0");
    EXPECT_EQ(t.message_size, 65536u);
    EXPECT_EQ(t.initiator.device, "mlx5_0");
    EXPECT_EQ(t.target.device, "mlx5_0");
    if (&t == &retests[0]) continue;
    // Each endpoint retest pairs one endpoint of the failing pair with someone else.
    const bool a = t.initiator.worker == "h1" || t.initiator.worker == "h2";
    const bool b = t.target.worker == "h1" || t.target.worker == "h2";
    EXPECT_NE(a, b);
    examined.insert(a ? t.initiator.worker : t.target.worker);
  }
  EXPECT_EQ(examined, (std::set<std::string>{"h1", "h2"}));
  // The endpoint retests share no resource: they may run in one round (after the repeat,
  // which holds both of theirs).
  EXPECT_EQ(retests[0].round, 0);
  EXPECT_EQ(retests[1].round, 1);
  EXPECT_EQ(retests[2].round, 1);

  // The repeat fails again; the endpoints pass with others.
  auto is_repeat = [](const PlannedTest& t) {
    return (t.initiator.worker == "h1" && t.target.worker == "h2") ||
           (t.initiator.worker == "h2" && t.target.worker == "h1");
  };
  verdicts = withRetests(
      rows, retests, [&](const PlannedTest& t) { return is_repeat(t) ? 10.0 : 100.0; }, ctx);
  suspects = localise(rows, verdicts);
  ASSERT_EQ(suspects.size(), 1u) << suspects[1].name;
  EXPECT_EQ(suspects[0].kind, "link");
  EXPECT_DOUBLE_EQ(suspects[0].score, 1.0);
  EXPECT_TRUE(hasEvidence(suspects[0], "passed (the link, not the host)"));
  EXPECT_TRUE(hasEvidence(suspects[0], "repeat: bandwidth 10.0 Gb/s < 25 Gb/s"))
      << suspects[0].evidence.back();
}

// One noisy sample: the pair fails once and passes on its repeat. Before the repeat it was a
// "link" suspect; now it is noise, a note, and the sweep's verdict does not count it.
TEST(Localiser, APairThatPassesOnItsRepeatIsNoiseNotALink) {
  auto rows = sweep([](const std::string& a, const std::string& b) {
    return (a == "h3" && b == "h4") || (a == "h4" && b == "h3");
  });
  JudgeContext ctx;
  auto verdicts = judgeResults(rows, config(), ctx);
  const auto retests = planRetests(rows, verdicts, hostNames(8), 10);
  ASSERT_FALSE(retests.empty());
  verdicts = withRetests(
      rows, retests, [](const PlannedTest&) { return 100.0; }, ctx);
  JudgeRows judge_rows;
  for (const auto& r : rows) judge_rows.add(r, ctx.retests.count(r.test_id) > 0);
  const JudgeVerdicts jv = judgeRows(judge_rows, config(), ctx, JudgeRows{});
  const Localisation located = localiseSweep(judge_rows, jv);
  EXPECT_TRUE(located.suspects.empty())
      << located.suspects[0].kind << " " << located.suspects[0].name;
  ASSERT_FALSE(located.notes.empty());
  EXPECT_NE(located.notes[0].find("h3/mlx5_0->h4/mlx5_0: bandwidth 10.0 Gb/s < 25 Gb/s"),
            std::string::npos)
      << located.notes[0];
  EXPECT_NE(located.notes[0].find("passed on its repeat: noise, not a link"), std::string::npos);
  ClusterConfig c = config();
  const SweepVerdict v = sweepVerdict(judge_rows, jv, OutlierFindings{}, c, located.noise_rows);
  EXPECT_TRUE(v.pass);
  ASSERT_EQ(v.notes.size(), 1u);
  EXPECT_NE(v.notes[0].find("counted as noise"), std::string::npos) << v.notes[0];
}

// A host that fails now and then with many partners (flap:) ranks above the links it is part
// of. Before: its failing pairs were two links at 1.00 and the host at 0.03.
TEST(Localiser, AHostFailingNowAndThenWithManyPartnersIsTheSuspectNotItsLinks) {
  std::vector<TestResult> rows;
  const auto hosts = hostNames(12);
  for (size_t i = 0; i < hosts.size(); ++i) {
    for (size_t j = i + 1; j < hosts.size(); ++j) {
      TestResult r = row("t" + std::to_string(rows.size()), hosts[i], hosts[j], 100);
      // h7 fails with 3 of its 11 partners.
      const bool flap = (hosts[i] == "h7" || hosts[j] == "h7") &&
                        (hosts[i] == "h1" || hosts[i] == "h3" || hosts[j] == "h9");
      if (flap) {
        r.status = TestStatus::kFailed;
        r.reason = "simulated link flap on h7";
        r.measurement.has_bandwidth = false;
      }
      rows.push_back(r);
    }
  }
  const auto verdicts = judgeResults(rows, ClusterConfig{}, JudgeContext{});
  const auto suspects = localise(rows, verdicts);
  ASSERT_FALSE(suspects.empty());
  EXPECT_EQ(suspects[0].kind, "host");
  EXPECT_EQ(suspects[0].name, "h7");
  EXPECT_TRUE(hasEvidence(suspects[0], "failed with 3 of 11 partners"));
  for (const auto& s : suspects) EXPECT_NE(s.kind, "link") << s.name;
  // The host is examined with known-good partners; its pairs are not repeated as links.
  const auto retests = planRetests(rows, verdicts, hosts, 10);
  ASSERT_EQ(retests.size(), 1u);
  EXPECT_TRUE(retests[0].initiator.worker == "h7" || retests[0].target.worker == "h7");
}

// Every pair below one threshold: the threshold or the fleet, not six tied hosts.
TEST(Localiser, EveryPairFailingOneThresholdIsSaidSoInsteadOfRankingTiedHosts) {
  std::vector<TestResult> rows;
  const auto hosts = hostNames(6);
  for (size_t i = 0; i < hosts.size(); ++i) {
    for (size_t j = i + 1; j < hosts.size(); ++j) {
      rows.push_back(row("t" + std::to_string(rows.size()), hosts[i], hosts[j], 20));
    }
  }
  const auto verdicts = judgeResults(rows, config(), JudgeContext{});
  const auto suspects = localise(rows, verdicts);
  ASSERT_EQ(suspects.size(), 1u) << suspects[1].kind << " " << suspects[1].name;
  EXPECT_EQ(suspects[0].kind, "threshold");
  EXPECT_EQ(suspects[0].name, "bandwidth_gbps_min");
  EXPECT_TRUE(hasEvidence(suspects[0],
                          "all 15 tests fail bandwidth_gbps_min (e.g. h1/mlx5_0->"
                          "h2/mlx5_0: bandwidth 20.0 Gb/s < 25 Gb/s "
                          "(bandwidth_gbps_min)): the threshold or the fleet, not "
                          "one host"))
      << suspects[0].evidence[0];
  // Nobody is known-good: nothing to retest, no pair to repeat.
  EXPECT_TRUE(planRetests(rows, verdicts, hosts, 10).empty());
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
  // No known-good partner among these: only the two failing pairs are repeated.
  const auto repeats = planRetests(rows, verdicts, {"h1", "h2", "h3", "h4"}, 10);
  ASSERT_EQ(repeats.size(), 2u);
  EXPECT_EQ(repeats[0].initiator.worker + repeats[0].target.worker, "h1h2");
  EXPECT_EQ(repeats[1].initiator.worker + repeats[1].target.worker, "h3h4");
}

}  // namespace
}  // namespace gdrmesh
