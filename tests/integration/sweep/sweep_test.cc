// Cluster sweeps through real processes: a coordinator, four workers on the software
// transport, the CLI, and the real SQLite file. Nothing is mocked.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <set>

#include "tests/integration/cluster/local_cluster.h"

namespace gdrmesh::testing {
namespace {

class SweepTest : public ::testing::Test {
 protected:
  void startFour() {
    c_.startCoordinator();
    for (const char* w : {"w1", "w2", "w3", "w4"}) c_.startWorker(w);
  }
  std::string lastSweepId() {
    auto rows = c_.query("SELECT id FROM sweeps ORDER BY created_ms DESC LIMIT 1");
    return rows.empty() ? "" : rows[0]["id"];
  }
  LocalCluster c_;
};

TEST_F(SweepTest, AllPairsOverFourWorkersIsStoredAndPasses) {
  startFour();
  auto r = c_.cli({"sweep", "run", "--pattern", "all-pairs", "--size", "64KiB", "--iters", "20"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string id = lastSweepId();
  ASSERT_FALSE(id.empty());
  auto rows =
      c_.query("SELECT status, transport, plan_index FROM results WHERE run_id = '" + id + "'");
  ASSERT_EQ(rows.size(), 6u) << "4 hosts: 6 unordered pairs";
  std::set<std::string> indexes;
  for (auto& row : rows) {
    EXPECT_EQ(row["status"], "PASSED");
    EXPECT_EQ(row["transport"], "emulated");
    indexes.insert(row["plan_index"]);
  }
  EXPECT_EQ(indexes.size(), 6u) << "each planned test exactly once";
  auto sweep = c_.query("SELECT state, verdict FROM sweeps WHERE id = '" + id + "'");
  ASSERT_EQ(sweep.size(), 1u);
  EXPECT_EQ(sweep[0]["state"], "finished");
  EXPECT_EQ(sweep[0]["verdict"], "PASS");
}

TEST_F(SweepTest, AcceptWritesJUnitAndFailsOnAThreshold) {
  startFour();
  const std::string cfg = c_.dir() + "/cluster.yaml";
  std::ofstream(cfg) << "sweeps:\n  - pattern: all-pairs\n    size: 64KiB\n    iters: 50\n"
                        "thresholds:\n  bandwidth_gbps_min: 100000\n";
  const std::string junit = c_.dir() + "/junit.xml";
  auto r = c_.cli({"accept", "--config", cfg, "--junit", junit});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::string xml = readFile(junit);
  EXPECT_NE(xml.find("<testsuite"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure"), std::string::npos) << xml;
  EXPECT_NE(xml.find("bandwidth_gbps_min"), std::string::npos) << xml;

  // The smallest config from the issue, with a threshold the loopback transport meets.
  std::ofstream(cfg) << "sweeps:\n  - pattern: all-pairs\n    size: 64KiB\n    iters: 50\n"
                        "thresholds:\n  bandwidth_gbps_min: 0.001\n";
  r = c_.cli({"accept", "--config", cfg, "--junit", junit});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST_F(SweepTest, ASecondSweepIsRefusedWhileOneRuns) {
  startFour();
  auto first = c_.cli(
      {"sweep", "run", "--pattern", "all-pairs", "--size", "1MiB", "--iters", "3000", "--detach"});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  auto second = c_.cli({"sweep", "run", "--pattern", "all-pairs", "--detach"});
  EXPECT_EQ(second.exit_code, 2) << second.out << second.err;
  EXPECT_NE(second.err.find("another sweep is running"), std::string::npos) << second.err;
  auto cancel = c_.cli({"sweep", "cancel", lastSweepId()});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.out << cancel.err;
}

TEST_F(SweepTest, ASweepSurvivesACoordinatorKill) {
  startFour();
  const int port = c_.port();
  auto r = c_.cli({"sweep", "run", "--pattern", "all-pairs", "--sizes",
                   "64KiB,128KiB,256KiB,512KiB,1MiB,2MiB", "--iters", "400", "--detach"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string id = lastSweepId();
  ASSERT_FALSE(id.empty());
  // Kill -9 once some results are stored.
  bool some = false;
  for (int i = 0; i < 600 && !some; ++i) {
    some = !c_.query("SELECT 1 FROM results WHERE run_id = '" + id + "' LIMIT 1").empty();
    if (!some) ::usleep(20000);  // polling the real database file, bounded
  }
  ASSERT_TRUE(some) << "no result stored";
  c_.stopCoordinator(SIGKILL);
  const auto before = c_.query("SELECT test_id FROM results WHERE run_id = '" + id + "'");
  c_.startCoordinator({}, port);
  ASSERT_TRUE(c_.waitFor(
      [](const nlohmann::json& w) {
        int online = 0;
        for (const auto& x : w) online += x.contains("state") && x["state"] == "online" ? 1 : 0;
        return online == 4;
      },
      std::chrono::milliseconds(45000)))
      << "workers did not reconnect";
  auto f = c_.cli({"sweep", "follow", id});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  // Every result stored before the kill is still there; every planned test has exactly one
  // result under its plan index; tests cut off by the kill have an ERROR row of their own.
  for (const auto& row : before) {
    EXPECT_EQ(c_.query("SELECT 1 FROM results WHERE test_id = '" + row.at("test_id") + "'").size(),
              1u);
  }
  auto planned = c_.query("SELECT plan_index, COUNT(*) AS n FROM results WHERE run_id = '" + id +
                          "' AND plan_index >= 0 GROUP BY plan_index");
  EXPECT_EQ(planned.size(), 36u) << "6 pairs x 6 sizes";
  for (auto& row : planned) EXPECT_EQ(row["n"], "1") << "plan index " << row["plan_index"];
  auto sweep = c_.query("SELECT state FROM sweeps WHERE id = '" + id + "'");
  ASSERT_EQ(sweep.size(), 1u);
  EXPECT_EQ(sweep[0]["state"], "finished");
}

TEST_F(SweepTest, TestingAnOfflineWorkerNamesItsState) {
  c_.startCoordinator();
  c_.startWorker("a");
  c_.startWorker("b");
  c_.killWorker("b");
  ASSERT_TRUE(c_.waitFor([](const nlohmann::json& w) {
    for (const auto& x : w) {
      if (x.contains("name") && x["name"] == "b") {
        return x.contains("state") && x["state"] == "offline";
      }
    }
    return false;
  }));
  auto r = c_.cli({"test", "a", "b"});
  EXPECT_NE(r.exit_code, 4) << "an offline worker is not an unreachable coordinator";
  EXPECT_NE(r.err.find("offline"), std::string::npos) << r.err;
}

TEST_F(SweepTest, LoopbackOnOneWorkerPasses) {
  c_.startCoordinator();
  c_.startWorker("solo");
  auto r = c_.cli({"test", "solo", "solo", "--iters", "20"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST_F(SweepTest, ASecondCoordinatorOnTheSamePortIsRefused) {
  c_.startCoordinator();
  LocalCluster other;
  auto r = other.cli(
      {"coordinator", "--listen", c_.address(), "--db", other.dbPath(), "--insecure"}, false);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("cannot listen"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gdrmesh::testing
