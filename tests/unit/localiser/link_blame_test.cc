// Link blame (coordinator/orchestrator/link_blame.h) over paths read from the LFTs of a
// hand-built fat tree (tests/support/fabric_trees.h: LIDs not in leaf order): slow pairs that
// share an inter-switch link blame that link; a host slow with every partner stays a host.
#include "coordinator/orchestrator/link_blame.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

#include "coordinator/orchestrator/judge.h"
#include "coordinator/orchestrator/localiser.h"
#include "coordinator/orchestrator/planner.h"
#include "coordinator/orchestrator/sweep_fabric.h"
#include "tests/support/fabric_trees.h"

namespace gdrmesh {
namespace {

TestResult blameRow(const std::string& id, const std::string& a, const std::string& b,
                    double gbps) {
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

std::string hostName(int i) {
  char n[16];
  std::snprintf(n, sizeof n, "h%02d", i);
  return n;
}

std::vector<WorkerStatus> workersOf(int n) {
  std::vector<WorkerStatus> out;
  for (int i = 1; i <= n; ++i) {
    WorkerStatus w;
    w.name = hostName(i);
    w.state = "online";
    out.push_back(w);
  }
  return out;
}

// 4 leaves x 4 hosts, 2 spines: 16 hosts, 16 directed inter-switch links.
struct BlameRig {
  SweepFabric fab{testing::twoLevelTree(4, 4, 2), {}, "tree.json"};
  fabric::HostMatch match = fab.match(workersOf(16));
  JudgeRows rows;
  JudgeVerdicts verdicts;
  RowPaths paths;

  // All pairs once (initiator the lower), at 10 Gb/s where `slow` says so, else 100; judged
  // against 25 Gb/s.
  void sweep(const std::function<bool(int, int)>& slow) {
    int n = 0;
    for (int i = 1; i <= 16; ++i) {
      for (int j = i + 1; j <= 16; ++j) {
        rows.add(
            blameRow("t" + std::to_string(n++), hostName(i), hostName(j), slow(i, j) ? 10 : 100));
      }
    }
    ClusterConfig config;
    config.thresholds.bandwidth_gbps_min = 25;
    verdicts = judgeRows(rows, config, JudgeContext{}, JudgeRows{});
    paths = fab.paths(rows, match);
  }
  // Whether the data of a test from host i to host j crosses switch `sw`'s port `port`, either
  // way: traced here with fabric::tracePath, independently of the code under test.
  bool crosses(int i, int j, const std::string& sw, int port) const {
    auto a = fabric::findEndpoint(fab.fabric(), hostName(i) + " mlx5_0");
    auto b = fabric::findEndpoint(fab.fabric(), hostName(j) + " mlx5_0");
    auto hops = fabric::tracePath(fab.fabric(), *a, *b);
    for (const auto& h : *hops) {
      if (h.switch_name == sw && (h.out_port == port || h.in_port == port)) return true;
    }
    return false;
  }
};

// Rows of one pair share its paths (traced once), the reverse pair's are the mirror, a worker
// with no HCA is left out uncounted, and a pair the tables cannot route counts every row of it.
TEST(FabricPaths, RowsOfAPairShareItsPathsAndUntracedRowsAreCounted) {
  fabric::Fabric tree = testing::twoLevelTree(4, 4, 2);
  for (auto& sw : tree.switches) {
    if (sw.name.rfind("spine", 0) == 0) sw.lft[84] = fabric::kNoRoute;  // h16 (LID 100 - 16)
  }
  const SweepFabric fab(std::move(tree), {}, "tree.json");
  std::vector<WorkerStatus> workers = workersOf(16);
  const fabric::HostMatch match = fab.match(workers);
  JudgeRows rows;
  rows.add(blameRow("t0", "h01", "h05", 100));
  rows.add(blameRow("t1", "h01", "h05", 100));  // the same pair again
  rows.add(blameRow("t2", "h05", "h01", 100));  // the reverse pair
  rows.add(blameRow("t3", "h01", "h99", 100));  // no such worker: not matched
  rows.add(blameRow("t4", "h01", "h16", 100));  // no route down to h16
  rows.add(blameRow("t5", "h01", "h16", 100));
  const RowPaths paths = fab.paths(rows, match);
  auto same = [](const std::vector<fabric::Hop>& x, const std::vector<fabric::Hop>& y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (x[i].switch_guid != y[i].switch_guid || x[i].in_port != y[i].in_port ||
          x[i].out_port != y[i].out_port) {
        return false;
      }
    }
    return true;
  };
  ASSERT_TRUE(paths.known[0] && paths.known[1] && paths.known[2]);
  EXPECT_EQ(paths.forward[0].size(), 3U);  // leaf01, a spine, leaf02
  EXPECT_TRUE(same(paths.forward[0], paths.forward[1]));
  EXPECT_TRUE(same(paths.reverse[0], paths.reverse[1]));
  EXPECT_EQ(paths.forward_links[0], paths.forward_links[1]);
  EXPECT_TRUE(same(paths.forward[2], paths.reverse[0]));
  EXPECT_TRUE(same(paths.reverse[2], paths.forward[0]));
  EXPECT_FALSE(paths.known[3]);
  EXPECT_FALSE(paths.known[4]);
  EXPECT_FALSE(paths.known[5]);
  EXPECT_EQ(paths.untraced, 2U);
  EXPECT_NE(paths.first_error.find("h01 -> h16"), std::string::npos) << paths.first_error;
  EXPECT_NE(paths.first_error.find("no LFT route for LID 84"), std::string::npos)
      << paths.first_error;
}

TEST(LinkBlame, SlowPairsSharingALinkBlameThatLinkAboveTheirHosts) {
  BlameRig rig;
  rig.sweep([&](int i, int j) { return rig.crosses(i, j, "leaf01", 5); });
  ASSERT_EQ(rig.paths.untraced, 0U);
  size_t slow = 0;
  for (VerdictKind k : rig.verdicts.kind) slow += k == VerdictKind::kFail ? 1 : 0;
  ASSERT_GE(slow, 4U);

  const auto blamed = blameLinks(rig.rows, rig.verdicts, rig.paths, rig.fab);
  ASSERT_EQ(blamed.size(), 1U);
  const Suspect& link = blamed[0].suspect;
  EXPECT_EQ(link.kind, "link");
  EXPECT_EQ(link.name, "leaf01[5] -> spine01[1]");
  ASSERT_GE(link.evidence.size(), 3U);
  EXPECT_EQ(link.evidence[0], std::to_string(slow) + " of " + std::to_string(slow) +
                                  " slow or failed pairs crossed leaf01[5] -> spine01[1]");
  EXPECT_NE(link.evidence[2].find("leaf01 port 5 (0x0000000000001001)"), std::string::npos);
  EXPECT_NE(link.evidence[2].find("spine01 port 1 (0x0000000000002001)"), std::string::npos);

  // The localiser's own suspects (hosts of leaf01 fail with several partners) rank below it.
  Localisation located = localiseSweep(rig.rows, rig.verdicts);
  const auto ranked = withLinkBlame(located.suspects, blamed, rig.rows, rig.verdicts);
  ASSERT_FALSE(ranked.empty());
  EXPECT_EQ(ranked[0].kind, "link");
  EXPECT_EQ(ranked[0].name, "leaf01[5] -> spine01[1]");
  for (size_t k = 1; k < ranked.size(); ++k) EXPECT_LT(ranked[k].score, ranked[0].score);
}

TEST(LinkBlame, AHostSlowWithEveryPartnerIsNoLink) {
  BlameRig rig;
  rig.sweep([](int i, int j) { return i == 6 || j == 6; });
  EXPECT_TRUE(blameLinks(rig.rows, rig.verdicts, rig.paths, rig.fab).empty());
  Localisation located = localiseSweep(rig.rows, rig.verdicts);
  const auto ranked = withLinkBlame(located.suspects, {}, rig.rows, rig.verdicts);
  ASSERT_FALSE(ranked.empty());
  EXPECT_EQ(ranked[0].kind, "host");
  EXPECT_EQ(ranked[0].name, "h06");
}

TEST(LinkBlame, ABadCableBothWaysIsNamedAsACable) {
  BlameRig rig;
  // Data over leaf03's port 6 in either direction: up from leaf03 (h09..h12 initiating) and
  // down into it (h01..h08 initiating to leaf03's hosts).
  rig.sweep([&](int i, int j) { return rig.crosses(i, j, "leaf03", 6); });
  const auto blamed = blameLinks(rig.rows, rig.verdicts, rig.paths, rig.fab);
  ASSERT_EQ(blamed.size(), 1U);
  EXPECT_EQ(blamed[0].suspect.name, "leaf03[6] <-> spine02[3]");
  EXPECT_EQ(blamed[0].links.size(), 2U);
}

TEST(SweepFabric, CoverageCountsTheLinksTestsCrossedAndListsTheRest) {
  BlameRig rig;
  rig.sweep([](int, int) { return false; });
  FabricCoverage all = rig.fab.coverage(rig.rows, rig.paths);
  EXPECT_EQ(all.directed_links, 16U);
  EXPECT_TRUE(all.never.empty());
  EXPECT_EQ(all.tests_traced, 120U);

  // Tests inside leaf01 only: no inter-switch link is crossed.
  BlameRig local;
  local.rows.add(blameRow("x1", "h01", "h02", 100));
  local.rows.add(blameRow("x2", "h03", "h04", 100));
  local.paths = local.fab.paths(local.rows, local.match);
  FabricCoverage none = local.fab.coverage(local.rows, local.paths);
  EXPECT_EQ(none.never.size(), 16U);
  const auto notes = local.fab.coverageNotes(none, 2);
  ASSERT_EQ(notes.size(), 2U);
  EXPECT_EQ(notes[0].rfind("fabric coverage: 0 of 16 directed inter-switch links", 0), 0U);
  EXPECT_NE(notes[1].find("and 14 more"), std::string::npos);
}

TEST(SweepFabric, HopRecordsAreBothDirectionsFromTheLfts) {
  BlameRig rig;
  rig.rows.add(blameRow("t1", "h01", "h16", 100));
  rig.rows.add(blameRow("t2", "h01", "nobody", 100));  // no HCA: no path, no rows
  rig.paths = rig.fab.paths(rig.rows, rig.match);
  const auto hops = rig.fab.hopRecords(rig.rows, rig.paths, "s1");
  // h01 (leaf01) -> h16 (LID 84, even: spine01) -> leaf04; back: h01's LID 99 is odd: spine02.
  ASSERT_EQ(hops.size(), 6U);
  EXPECT_EQ(hops[0].direction, "forward");
  EXPECT_EQ(hops[0].switch_name, "leaf01");
  EXPECT_EQ(hops[0].in_port, 1);
  EXPECT_EQ(hops[0].out_port, 5);
  EXPECT_EQ(hops[1].switch_name, "spine01");
  EXPECT_EQ(hops[2].switch_name, "leaf04");
  EXPECT_EQ(hops[2].out_port, 4);
  EXPECT_EQ(hops[3].direction, "reverse");
  EXPECT_EQ(hops[3].switch_name, "leaf04");
  EXPECT_EQ(hops[3].out_port, 6);
  EXPECT_EQ(hops[4].switch_name, "spine02");
  for (const auto& h : hops) EXPECT_EQ(h.test_id, "t1");
}

TEST(SweepFabric, CoverRoundsPlanIntoDisjointRoundsThatLoadEveryLink) {
  BlameRig rig;
  SweepSpec spec;
  spec.pattern = SweepPattern::kCover;
  std::vector<std::string> notes;
  // Without rounds the planner says what is missing.
  EXPECT_EQ(planSweep(spec, workersOf(16)).status().code(), Code::kFailedPrecondition);
  ASSERT_TRUE(rig.fab.coverRounds(workersOf(16), &spec, &notes).ok());
  ASSERT_FALSE(spec.cover_rounds.empty());
  ASSERT_FALSE(notes.empty());
  EXPECT_EQ(notes[0].rfind("cover: ", 0), 0U) << notes[0];
  auto plan = planSweep(spec, workersOf(16));
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  EXPECT_EQ(plan->rounds, static_cast<int>(spec.cover_rounds.size()));
  EXPECT_LT(plan->rounds, 15);  // all-pairs needs 15
  std::map<int, std::set<std::string>> busy;
  JudgeRows rows;
  for (const PlannedTest& t : plan->tests) {
    EXPECT_TRUE(busy[t.round].insert(t.initiator.worker).second) << t.initiator.worker;
    EXPECT_TRUE(busy[t.round].insert(t.target.worker).second) << t.target.worker;
    EXPECT_EQ(t.initiator.device, "mlx5_0");
    rows.add(blameRow("c" + std::to_string(rows.size()), t.initiator.worker, t.target.worker, 100));
  }
  // Traced independently of the cover planner: the planned tests cross every directed
  // inter-switch link (this tree routes every one of them).
  const FabricCoverage c = rig.fab.coverage(rows, rig.fab.paths(rows, rig.match));
  EXPECT_TRUE(c.never.empty()) << rig.fab.coverageNotes(c).back();

  // Workers the fabric does not know leave their pairs out, with a note.
  SweepSpec some;
  std::vector<std::string> some_notes;
  ASSERT_TRUE(rig.fab.coverRounds(workersOf(8), &some, &some_notes).ok());
  ASSERT_EQ(some_notes.size(), 2U);
  EXPECT_NE(some_notes[1].find("left out"), std::string::npos);
}

// Figures, not a timing assertion: how long tracing and blaming take for an all-pairs sweep
// of 256 hosts (32,640 tests) on this machine.
TEST(SweepFabric, FiguresForAllPairsOf256Hosts) {
  SweepFabric fab(testing::twoLevelTree(16, 16, 16), {}, "tree.json");
  const fabric::HostMatch match = fab.match([] {
    std::vector<WorkerStatus> out;
    for (int i = 1; i <= 256; ++i) {
      WorkerStatus w;
      w.name = hostName(i);
      out.push_back(w);
    }
    return out;
  }());
  JudgeRows rows;
  for (int i = 1; i <= 256; ++i) {
    for (int j = i + 1; j <= 256; ++j) {
      rows.add(blameRow("t" + std::to_string(rows.size()), hostName(i), hostName(j), 100));
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  const RowPaths paths = fab.paths(rows, match);
  const auto t1 = std::chrono::steady_clock::now();
  JudgeVerdicts v;
  v.kind.assign(rows.size(), VerdictKind::kPass);
  const auto blamed = blameLinks(rows, v, paths, fab);
  const FabricCoverage c = fab.coverage(rows, paths);
  const auto t2 = std::chrono::steady_clock::now();
  EXPECT_EQ(paths.untraced, 0U);
  EXPECT_TRUE(blamed.empty());
  EXPECT_TRUE(c.never.empty());
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  std::printf(
      "[ figures  ] 256 hosts, %zu tests: traced both ways in %.0f ms, blame and coverage "
      "in %.0f ms\n",
      rows.size(), ms(t0, t1), ms(t1, t2));
}

}  // namespace
}  // namespace gdrmesh
