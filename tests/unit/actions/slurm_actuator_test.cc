#include "coordinator/actions/slurm_actuator.h"

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

namespace gdrmesh {
namespace {

// Records every argv and answers from a queue of outputs.
class RecordingRunner final : public CommandRunner {
 public:
  using CommandRunner::run;
  std::vector<std::vector<std::string>> argvs;
  std::deque<CommandOutput> answers;
  Result<CommandOutput> run(const std::vector<std::string>& argv, double /*timeout*/,
                            const std::string& /*input*/) override {
    argvs.push_back(argv);
    if (answers.empty()) return CommandOutput{0, "", ""};
    CommandOutput o = answers.front();
    answers.pop_front();
    return o;
  }
};

// As Slurm 22.05 prints it (trimmed of fields that do not matter here).
const char* const kDrainedLine =
    "NodeName=n2 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUEfctv=1 CPUTot=1 CPULoad=0.11 "
    "AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=localhost "
    "NodeHostName=localhost Port=17002 Version=22.05.8 OS=Linux 6.1.0 RealMemory=1 AllocMem=0 "
    "FreeMem=N/A Sockets=1 Boards=1 State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 "
    "Owner=N/A MCS_label=N/A Partitions=debug BootTime=2026-11-27T00:00:00 "
    "SlurmdStartTime=2026-11-27T01:00:00 LastBusyTime=2026-11-27T01:00:00 CfgTRES=cpu=1 "
    "AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 "
    "ExtSensorsTemp=n/s Reason=gdrmesh: host suspect: failed with 3 of 3 partners (sweep "
    "s-20261127T010000-1a2b) [root@2026-11-27T01:05:00]\n";

TEST(SlurmNodeLineTest, ParsesStateAndReasonWithSpaces) {
  auto n = parseSlurmNodeLine(kDrainedLine);
  ASSERT_TRUE(n.ok()) << n.status().toString();
  EXPECT_EQ(n->name, "n2");
  EXPECT_EQ(n->state, "IDLE+DRAIN");
  EXPECT_EQ(n->reason,
            "gdrmesh: host suspect: failed with 3 of 3 partners (sweep s-20261127T010000-1a2b)");
  EXPECT_EQ(slurmMarkOf(*n).owner, MarkOwner::kGdrmesh);
}

TEST(SlurmNodeLineTest, OwnerOfEachState) {
  EXPECT_EQ(slurmMarkOf({"n1", "IDLE", ""}).owner, MarkOwner::kNone);
  EXPECT_EQ(slurmMarkOf({"n1", "MIXED", ""}).owner, MarkOwner::kNone);
  EXPECT_EQ(slurmMarkOf({"n1", "IDLE+DRAIN", "maintenance"}).owner, MarkOwner::kOther);
  EXPECT_EQ(slurmMarkOf({"n1", "DOWN", "Not responding"}).owner, MarkOwner::kOther);
  EXPECT_EQ(slurmMarkOf({"n1", "ALLOCATED+DRAIN", "gdrmesh: x (sweep s)"}).owner,
            MarkOwner::kGdrmesh);
  // Reason fields that follow Reason= in other versions end it.
  auto n = parseSlurmNodeLine(
      "NodeName=n1 State=DRAIN Reason=ops: cable (ticket 7) [ops@t] "
      "Comment=x");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->reason, "ops: cable (ticket 7)");
  EXPECT_FALSE(parseSlurmNodeLine("garbage").ok());
}

TEST(SlurmActuatorTest, RunsScontrolWithAnArgv) {
  RecordingRunner runner;
  SlurmActuator slurm(runner, "/usr/bin/scontrol", 5);
  MarkRequest req{"n2", "host suspect: failed with 3 of 3 partners", "s-1"};
  ASSERT_TRUE(slurm.mark(req).ok());
  ASSERT_TRUE(slurm.clear("n2").ok());
  runner.answers.push_back({0, kDrainedLine, ""});
  auto m = slurm.inspect("n2");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->owner, MarkOwner::kGdrmesh);
  ASSERT_EQ(runner.argvs.size(), 3u);
  EXPECT_EQ(runner.argvs[0],
            (std::vector<std::string>{
                "/usr/bin/scontrol", "update", "NodeName=n2", "State=DRAIN",
                "Reason=gdrmesh: host suspect: failed with 3 of 3 partners (sweep s-1)"}));
  EXPECT_EQ(runner.argvs[1], (std::vector<std::string>{"/usr/bin/scontrol", "update", "NodeName=n2",
                                                       "State=RESUME"}));
  EXPECT_EQ(runner.argvs[2],
            (std::vector<std::string>{"/usr/bin/scontrol", "show", "node", "-o", "n2"}));
  EXPECT_EQ(slurm.describeClear("n2"), "/usr/bin/scontrol update NodeName=n2 State=RESUME");
}

TEST(SlurmActuatorTest, ErrorsNameTheCommandAndTheFix) {
  RecordingRunner runner;
  SlurmActuator slurm(runner, "scontrol", 5);
  runner.answers.push_back({1, "", "Node n9 not found\n"});
  auto m = slurm.inspect("n9");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("Node n9 not found"), std::string::npos);
  EXPECT_NE(m.status().fix().find("--name"), std::string::npos);
  runner.answers.push_back({1, "", "Invalid user id\n"});
  Status st = slurm.mark({"n1", "r", "s"});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("Invalid user id"), std::string::npos);
  EXPECT_NE(st.fix().find("Operator"), std::string::npos);
}

}  // namespace
}  // namespace gdrmesh
