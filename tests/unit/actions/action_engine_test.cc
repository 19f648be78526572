#include "coordinator/actions/action_engine.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "coordinator/config/config_yaml.h"
#include "coordinator/store/sqlite_store.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/actions/fake_actuator.h"

namespace gdrmesh {
namespace {

using testing::FakeActuator;

Suspect hostSuspect(const std::string& name,
                    const std::string& evidence = "failed with 3 of 3 partners") {
  return Suspect{"host", name, 1.0, {evidence}};
}

// A finished sweep over h1..h<n>: every host not named by a suspect passed.
SweepEnding ending(const std::string& id, int n, std::vector<Suspect> suspects) {
  SweepEnding e;
  e.sweep_id = id;
  e.state = SweepState::kFinished;
  e.verdict = suspects.empty() ? "PASS" : "FAIL";
  for (int i = 1; i <= n; ++i) {
    e.hosts.push_back("h" + std::to_string(i));
    e.passing.insert("h" + std::to_string(i));
  }
  e.suspects = std::move(suspects);
  return e;
}

class ActionEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = SqliteStore::open(":memory:");
    ASSERT_TRUE(s.ok()) << s.status().toString();
    store = std::move(*s);
    for (int i = 1; i <= 8; ++i) actuator.nodes["h" + std::to_string(i)] = {};
  }
  ActionEngine engine(ActionOptions::Mode mode, double share = 0.5) {
    ActionOptions o;
    o.mode = mode;
    o.max_share = share;
    o.window_seconds = 300;
    return ActionEngine(o, actuator, *store, clock,
                        [this](const std::string& l) { log.push_back(l); });
  }
  std::vector<ActionRecord> records() {
    ActionQuery q;
    q.limit = 0;
    auto r = store->listActions(q);
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : std::vector<ActionRecord>{};
  }

  ManualClock clock;
  std::unique_ptr<SqliteStore> store;
  FakeActuator actuator;
  std::vector<std::string> log;
};

TEST_F(ActionEngineTest, OffDoesNothing) {
  auto e = engine(ActionOptions::Mode::kOff);
  EXPECT_TRUE(e.onSweepEnd(ending("s1", 4, {hostSuspect("h2")})).empty());
  EXPECT_TRUE(actuator.calls.empty());
  EXPECT_TRUE(records().empty());
}

TEST_F(ActionEngineTest, DryRunRecordsWhatItWouldDoAndTouchesNothing) {
  auto e = engine(ActionOptions::Mode::kDryRun);
  auto lines = e.onSweepEnd(ending("s1", 4, {hostSuspect("h2")}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("dry-run"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("would run: fake-drain h2"), std::string::npos) << lines[0];
  EXPECT_TRUE(actuator.calls.empty());
  auto r = records();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].node, "h2");
  EXPECT_EQ(r[0].action, "drain");
  EXPECT_EQ(r[0].outcome, "dry-run");
  EXPECT_EQ(r[0].reason, "gdrmesh: host suspect: failed with 3 of 3 partners (sweep s1)");
  EXPECT_EQ(log.size(), 1u);
  // The same suspect again: its dry-run drain is on record, no second one.
  EXPECT_TRUE(e.onSweepEnd(ending("s2", 4, {hostSuspect("h2")})).empty());
  // Once it passes, the dry-run shows the resume it would run.
  lines = e.onSweepEnd(ending("s3", 4, {}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("would run: fake-resume h2"), std::string::npos) << lines[0];
  EXPECT_TRUE(actuator.calls.empty());
}

TEST_F(ActionEngineTest, DrainsHostAndNicSuspectsButNotLinks) {
  auto e = engine(ActionOptions::Mode::kOn, 1.0);
  auto lines = e.onSweepEnd(ending("s1", 8,
                                   {hostSuspect("h2"), Suspect{"nic", "h3/mlx5_1", 0.9, {"x"}},
                                    Suspect{"link", "h4/mlx5_0<->h5/mlx5_0", 0.5, {"y"}}}));
  EXPECT_EQ(actuator.calls, (std::vector<std::string>{"mark h2", "mark h3"}));
  EXPECT_EQ(actuator.nodes["h3"].reason, "gdrmesh: nic suspect mlx5_1: x (sweep s1)");
  EXPECT_EQ(lines.size(), 2u);
  // Still suspects at the next sweep: already drained, nothing more.
  actuator.calls.clear();
  EXPECT_TRUE(e.onSweepEnd(ending("s2", 8, {hostSuspect("h2"), hostSuspect("h3")})).empty());
  EXPECT_TRUE(actuator.calls.empty());
}

TEST_F(ActionEngineTest, ResumesWhatItDrainedOnceItPasses) {
  auto e = engine(ActionOptions::Mode::kOn);
  e.onSweepEnd(ending("s1", 4, {hostSuspect("h2")}));
  ASSERT_TRUE(actuator.nodes["h2"].out);
  // A sweep that still names it (as a link end) does not resume it.
  e.onSweepEnd(ending("s2", 4, {Suspect{"link", "h1<->h2", 0.5, {"z"}}}));
  EXPECT_TRUE(actuator.nodes["h2"].out);
  // A sweep where it did not run (no PASS verdict) does not either.
  SweepEnding absent = ending("s3", 4, {});
  absent.passing.erase("h2");
  e.onSweepEnd(absent);
  EXPECT_TRUE(actuator.nodes["h2"].out);
  auto lines = e.onSweepEnd(ending("s4", 4, {}));
  EXPECT_FALSE(actuator.nodes["h2"].out);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("action resume h2: taken"), std::string::npos) << lines[0];
  auto r = records();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].action, "resume");
  EXPECT_EQ(r[0].outcome, "taken");
  EXPECT_EQ(r[0].sweep_id, "s4");
  // Nothing more to do once it is back.
  EXPECT_TRUE(e.onSweepEnd(ending("s5", 4, {})).empty());
}

TEST_F(ActionEngineTest, NeverTouchesANodeSomeoneElseDrained) {
  auto e = engine(ActionOptions::Mode::kOn);
  actuator.nodes["h2"] = {true, "maintenance: new DIMM"};
  auto lines = e.onSweepEnd(ending("s1", 4, {hostSuspect("h2")}));
  EXPECT_TRUE(actuator.calls.empty());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("skipped"), std::string::npos);
  // It passes later: still someone else's, never resumed.
  e.onSweepEnd(ending("s2", 4, {}));
  EXPECT_TRUE(actuator.calls.empty());
  EXPECT_EQ(actuator.nodes["h2"].reason, "maintenance: new DIMM");
}

TEST_F(ActionEngineTest, LeavesANodeWhoseDrainChangedHands) {
  auto e = engine(ActionOptions::Mode::kOn);
  e.onSweepEnd(ending("s1", 4, {hostSuspect("h2")}));
  actuator.nodes["h2"].reason = "hw ticket 1234";  // an operator took it over
  actuator.calls.clear();
  auto lines = e.onSweepEnd(ending("s2", 4, {}));
  EXPECT_TRUE(actuator.calls.empty());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("resume h2: skipped"), std::string::npos) << lines[0];
  // Forgotten: no further attempts.
  EXPECT_TRUE(e.onSweepEnd(ending("s3", 4, {})).empty());
}

TEST_F(ActionEngineTest, CircuitBreakerRefusesASweepBeyondTheShare) {
  auto e = engine(ActionOptions::Mode::kOn);  // 50 % of 4 hosts: 2
  auto lines =
      e.onSweepEnd(ending("s1", 4, {hostSuspect("h1"), hostSuspect("h2"), hostSuspect("h3")}));
  EXPECT_TRUE(actuator.calls.empty());
  ASSERT_EQ(lines.size(), 3u);
  for (const auto& l : lines) EXPECT_NE(l.find("refused"), std::string::npos) << l;
  EXPECT_NE(lines[0].find("circuit breaker: 3 nodes drained within 300 s would exceed max_share "
                          "50 % of the cluster's 4 hosts (at most 2"),
            std::string::npos)
      << lines[0];
  for (const auto& r : records()) EXPECT_EQ(r.outcome, "refused");
}

// Issue #21: the breaker's share is of the cluster, not of the sweep. A sweep over 4 of 8 hosts
// may drain 3 of them (at most 4), and a 1-host sweep (one node's check) its one host; counted
// by the sweep's hosts, both were refused.
TEST_F(ActionEngineTest, CircuitBreakerCountsTheClustersHostsNotTheSweeps) {
  auto e = engine(ActionOptions::Mode::kOn);
  SweepEnding part = ending("s1", 4, {hostSuspect("h1"), hostSuspect("h2"), hostSuspect("h3")});
  part.cluster_hosts = 8;
  auto lines = e.onSweepEnd(part);
  ASSERT_EQ(lines.size(), 3u);
  for (const auto& l : lines) EXPECT_NE(l.find(": taken"), std::string::npos) << l;
  EXPECT_TRUE(actuator.nodes["h3"].out);

  SweepEnding one = ending("s2", 1, {});
  one.hosts = {"h5"};
  one.passing.clear();
  one.suspects = {hostSuspect("h5")};
  one.verdict = "FAIL";
  one.cluster_hosts = 8;
  lines = e.onSweepEnd(one);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find(": taken"), std::string::npos) << lines[0];  // 4 of at most 4

  // The fifth within the window is one too many for 8 hosts at 50 %.
  SweepEnding sixth = ending("s3", 1, {});
  sixth.hosts = {"h6"};
  sixth.passing.clear();
  sixth.suspects = {hostSuspect("h6")};
  sixth.cluster_hosts = 8;
  lines = e.onSweepEnd(sixth);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("refused"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("of the cluster's 8 hosts (at most 4; 4 already)"), std::string::npos)
      << lines[0];
}

TEST_F(ActionEngineTest, CircuitBreakerCountsTheWindowThroughTheClock) {
  auto e = engine(ActionOptions::Mode::kOn);
  e.onSweepEnd(ending("s1", 4, {hostSuspect("h1"), hostSuspect("h2")}));
  EXPECT_EQ(actuator.calls.size(), 2u);
  clock.advanceSeconds(299);
  // h1 and h2 are still suspects (drained already); h3 is new.
  auto lines =
      e.onSweepEnd(ending("s2", 4, {hostSuspect("h1"), hostSuspect("h2"), hostSuspect("h3")}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("refused"), std::string::npos) << lines[0];
  EXPECT_FALSE(actuator.nodes["h3"].out);
  clock.advanceSeconds(2);  // the first drains leave the window
  lines = e.onSweepEnd(ending("s3", 4, {hostSuspect("h1"), hostSuspect("h2"), hostSuspect("h3")}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("taken"), std::string::npos) << lines[0];
  EXPECT_TRUE(actuator.nodes["h3"].out);
}

TEST_F(ActionEngineTest, NoActionOnThresholdSuspectsOrUnfinishedSweeps) {
  auto e = engine(ActionOptions::Mode::kOn, 1.0);
  auto fleet =
      ending("s1", 4, {Suspect{"threshold", "bandwidth_gbps_min", 1, {"all"}}, hostSuspect("h2")});
  e.onSweepEnd(fleet);
  auto cancelled = ending("s2", 4, {hostSuspect("h2")});
  cancelled.state = SweepState::kCancelled;
  EXPECT_TRUE(e.onSweepEnd(cancelled).empty());
  EXPECT_TRUE(actuator.calls.empty());
  EXPECT_TRUE(records().empty());
}

TEST_F(ActionEngineTest, FailuresAreRecorded) {
  auto e = engine(ActionOptions::Mode::kOn);
  actuator.fail_marks = true;
  auto lines = e.onSweepEnd(ending("s1", 4, {hostSuspect("h2")}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("failed"), std::string::npos);
  // A node the actuator does not know.
  actuator.fail_marks = false;
  actuator.nodes.erase("h3");
  lines = e.onSweepEnd(ending("s2", 4, {hostSuspect("h3")}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("cannot read the node"), std::string::npos) << lines[0];
  auto r = records();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].outcome, "failed");
  EXPECT_EQ(r[1].outcome, "failed");
}

TEST_F(ActionEngineTest, ARestartedCoordinatorStillResumesWhatItDrained) {
  {
    auto first = engine(ActionOptions::Mode::kOn);
    first.onSweepEnd(ending("s1", 4, {hostSuspect("h2")}));
  }
  ASSERT_TRUE(actuator.nodes["h2"].out);
  auto second = engine(ActionOptions::Mode::kOn);  // a new engine over the same records
  auto lines = second.onSweepEnd(ending("s2", 4, {}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("action resume h2: taken"), std::string::npos) << lines[0];
  EXPECT_FALSE(actuator.nodes["h2"].out);
}

TEST_F(ActionEngineTest, DryRunRecordsNeitherHoldNorCountOnceTurnedOn) {
  {
    auto dry = engine(ActionOptions::Mode::kDryRun);
    dry.onSweepEnd(ending("s1", 4, {hostSuspect("h1"), hostSuspect("h2")}));
  }
  auto on = engine(ActionOptions::Mode::kOn);
  // The dry-run drains do not fill the breaker's window, and h1 (no longer a suspect) is not
  // "resumed": it was never drained.
  auto lines = on.onSweepEnd(ending("s2", 4, {hostSuspect("h2"), hostSuspect("h3")}));
  EXPECT_EQ(actuator.calls, (std::vector<std::string>{"mark h2", "mark h3"}));
  EXPECT_EQ(lines.size(), 2u);
}

TEST(ActionStoreTest, RecordsSurviveAReopen) {
  gdrmesh::testing::TempDir dir;
  {
    auto s = SqliteStore::open(dir.file("a.db"));
    ASSERT_TRUE(s.ok());
    ActionRecord r;
    r.recorded_ms = 5;
    r.sweep_id = "s1";
    r.node = "n1";
    r.action = "drain";
    r.outcome = "taken";
    r.actuator = "slurm";
    r.reason = "gdrmesh: x (sweep s1)";
    r.detail = "scontrol update ...";
    ASSERT_TRUE((*s)->recordAction(r).ok());
    r.node = "n2";
    r.recorded_ms = 9;
    ASSERT_TRUE((*s)->recordAction(r).ok());
    ActionRecord bad;
    EXPECT_FALSE((*s)->recordAction(bad).ok());
  }
  auto s = SqliteStore::open(dir.file("a.db"));
  ASSERT_TRUE(s.ok());
  ActionQuery q;
  auto all = (*s)->listActions(q);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].node, "n2");  // newest first
  EXPECT_EQ((*all)[1].reason, "gdrmesh: x (sweep s1)");
  q.node = "n1";
  EXPECT_EQ((*s)->listActions(q)->size(), 1u);
  q.node.clear();
  q.since_ms = 6;
  EXPECT_EQ((*s)->listActions(q)->size(), 1u);
}

// `log:` (the coordinator's log format and level; the command line overrides it).
TEST(LogConfigTest, ParsesFormatAndLevelAndNamesABadOne) {
  auto c = parseClusterConfig("log:\n  format: json\n  level: warn\n", "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status().toString();
  ASSERT_TRUE(c->log_format.has_value());
  EXPECT_EQ(*c->log_format, LogFormat::kJson);
  ASSERT_TRUE(c->log_level.has_value());
  EXPECT_EQ(*c->log_level, LogLevel::kWarn);
  auto none = parseClusterConfig("retention:\n  days: 3\n", "c.yaml");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->log_format.has_value());
  auto bad = parseClusterConfig("log:\n  format: xml\n", "c.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().toString().find("log.format"), std::string::npos)
      << bad.status().toString();
  bad = parseClusterConfig("log:\n  level: loud\n", "c.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().toString().find("debug, info, warn, error"), std::string::npos)
      << bad.status().toString();
}

TEST(ActionConfigTest, ParsesAndNamesBadFields) {
  auto c = parseClusterConfig(
      "actions:\n  mode: dry-run\n  max_share: 0.25\n  window: 10m\n  scontrol: /usr/bin/scontrol\n"
      "hooks:\n  - command: [/bin/echo, hi]\n  - url: http://127.0.0.1:9/x\n    token_file: /t\n"
      "    attempts: 5\n",
      "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status().toString();
  EXPECT_EQ(c->actions.mode, ActionOptions::Mode::kDryRun);
  EXPECT_DOUBLE_EQ(c->actions.max_share, 0.25);
  EXPECT_DOUBLE_EQ(c->actions.window_seconds, 600);
  EXPECT_EQ(c->actions.scontrol, "/usr/bin/scontrol");
  ASSERT_EQ(c->hooks.size(), 2u);
  EXPECT_EQ(c->hooks[0].command, (std::vector<std::string>{"/bin/echo", "hi"}));
  EXPECT_EQ(c->hooks[1].attempts, 5);
  // Off by default.
  EXPECT_EQ(parseClusterConfig("{}", "c")->actions.mode, ActionOptions::Mode::kOff);
  auto bad = parseClusterConfig("actions:\n  mode: yes\n", "c.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("actions.mode"), std::string::npos);
  bad = parseClusterConfig("actions:\n  max_share: 2\n", "c.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("actions.max_share"), std::string::npos);
  bad = parseClusterConfig("hooks:\n  - command: notify --all\n", "c.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("hooks[0].command"), std::string::npos);
}

}  // namespace
}  // namespace gdrmesh
