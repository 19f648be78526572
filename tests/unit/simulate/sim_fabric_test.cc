// Simulated workers behind a fabric (worker/simulate/sim_fabric.h): names from the snapshot's
// hosts, and a bad switch port that slows exactly the tests whose data path crosses it, traced
// from the LFTs of a hand-built tree (LIDs not in leaf order).
#include "worker/simulate/sim_fabric.h"

#include <gtest/gtest.h>

#include "tests/support/fabric_trees.h"
#include "worker/simulate/sim_config.h"
#include "worker/simulate/sim_model.h"

namespace gdrmesh {
namespace {

TEST(SimFabric, PortFaultSpecsParseAndNameWhatIsWrong) {
  auto f = parseSimFault("port:leaf01[5]:0.25");
  ASSERT_TRUE(f.ok()) << f.status().toString();
  EXPECT_EQ(f->kind, SimFault::Kind::kPort);
  EXPECT_EQ(f->switch_name, "leaf01");
  EXPECT_EQ(f->port, 5);
  EXPECT_DOUBLE_EQ(f->factor, 0.25);
  // A switch name with spaces and colons stays whole: the port is the last [..].
  auto odd = parseSimFault("port:MF0;sw:01 x[12]:0.5");
  ASSERT_TRUE(odd.ok()) << odd.status().toString();
  EXPECT_EQ(odd->switch_name, "MF0;sw:01 x");
  for (const char* bad : {"port:leaf01:0.5", "port:leaf01[x]:0.5", "port:leaf01[5]", "port:[5]:1",
                          "port:leaf01[5]:0", "port:leaf01[5]:fast"}) {
    EXPECT_EQ(parseSimFault(bad).status().code(), Code::kInvalidArgument) << bad;
  }
}

TEST(SimFabric, ABadPortSlowsThePathsThatCrossItEitherWayAndNoOthers) {
  auto made = SimFabric::make(testing::twoLevelTree(4, 4, 2), {{"leaf01", 5, 0.25, "port:x"}});
  ASSERT_TRUE(made.ok()) << made.status().toString();
  const SimFabric& f = **made;
  EXPECT_EQ(f.hostNames().size(), 16U);
  EXPECT_EQ(f.hostNames().front(), "h01");
  // h16 has LID 84 (even): leaf01 sends it up port 5, the bad one.
  EXPECT_DOUBLE_EQ(f.pathFactor("h01", "mlx5_0", "h16", "mlx5_0"), 0.25);
  // Back, h01's LID 99 is odd: leaf04 sends it over spine02, into leaf01 by port 6.
  EXPECT_DOUBLE_EQ(f.pathFactor("h16", "mlx5_0", "h01", "mlx5_0"), 1);
  // Into leaf01 by port 5: from another leaf to an even-LID host of leaf01 (h03: LID 97 is odd,
  // h02: LID 98 even) goes down spine01 -> leaf01[5].
  EXPECT_DOUBLE_EQ(f.pathFactor("h09", "mlx5_0", "h02", "mlx5_0"), 0.25);
  EXPECT_DOUBLE_EQ(f.pathFactor("h09", "mlx5_0", "h03", "mlx5_0"), 1);
  // Inside a leaf, and for a worker the fabric does not have.
  EXPECT_DOUBLE_EQ(f.pathFactor("h01", "mlx5_0", "h02", "mlx5_0"), 1);
  EXPECT_DOUBLE_EQ(f.pathFactor("sim-0001", "mlx5_0", "h16", "mlx5_0"), 1);

  SimFaults faults({}, 1, 0, *made);
  EXPECT_DOUBLE_EQ(faults.pathFactor("h01", "mlx5_0", "h16", "mlx5_0"), 0.25);
  EXPECT_DOUBLE_EQ(SimFaults({}, 1).pathFactor("h01", "mlx5_0", "h16", "mlx5_0"), 1);
}

TEST(SimFabric, APortThatIsNoLinkedSwitchPortIsRefused) {
  EXPECT_EQ(SimFabric::make(testing::twoLevelTree(2, 2, 2), {{"leaf09", 1, 0.5, "port:leaf09[1]"}})
                .status()
                .code(),
            Code::kInvalidArgument);
  auto unlinked = SimFabric::make(testing::twoLevelTree(2, 2, 2), {{"leaf01", 9, 0.5, "p"}});
  ASSERT_FALSE(unlinked.ok());
  EXPECT_NE(unlinked.status().message().find("leaf01 port 9 is not linked"), std::string::npos);
}

TEST(SimFabric, ConfigTakesTheFabricsNamesAndPortFaultsNeedAFabric) {
  SimConfig c;
  c.count = 2;
  auto f = parseSimFault("port:leaf01[5]:0.5");
  ASSERT_TRUE(f.ok());
  c.faults.push_back(*f);
  Status st = validateSimConfig(c);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("needs a fabric"), std::string::npos) << st.toString();
  auto made = SimFabric::make(testing::twoLevelTree(2, 2, 2), {{"leaf01", 3, 0.5, "p"}});
  ASSERT_TRUE(made.ok());
  c.fabric = *made;
  c.names = {"h01", "h02"};
  EXPECT_TRUE(validateSimConfig(c).ok()) << validateSimConfig(c).toString();
  EXPECT_EQ(simWorkerNames(c), (std::vector<std::string>{"h01", "h02"}));
  c.names = {"h01"};
  EXPECT_EQ(validateSimConfig(c).code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace gdrmesh
