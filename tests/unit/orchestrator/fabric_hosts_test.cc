// The hosts under each switch of a sweep (coordinator/orchestrator/fabric_hosts.h): per switch on
// an InfiniBand snapshot (a two-level tree, workers matched by name and by hostname), per host
// switch port on an LLDP snapshot, each tested end placed or listed with why.
#include "coordinator/orchestrator/fabric_hosts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/fabric_trees.h"

namespace gdrmesh {
namespace {

using ::testing::HasSubstr;

PairVerdict verdict(const std::string& src, const std::string& dst, VerdictKind k,
                    bool retest = false) {
  PairVerdict v;
  v.test_id = "t-" + src + "-" + dst;
  v.src = src;
  v.dst = dst;
  v.verdict = k;
  v.retest = retest;
  return v;
}

Suspect suspect(const std::string& kind, const std::string& name, double score) {
  return {kind, name, score, {"evidence of " + name}};
}

WorkerStatus worker(const std::string& name, const std::string& hostname) {
  WorkerStatus w;
  w.name = name;
  w.inventory.hostname = hostname;
  return w;
}

// leaf01: h01 h02, leaf02: h03 h04, leaf03: h05 (worker gpu-a, by its hostname) h06, on ports 1
// and 2 of each leaf. Everything with an end on leaf02 fails.
class SwitchHostTableTest : public ::testing::Test {
 protected:
  SweepFabric fabric_{testing::twoLevelTree(3, 2, 2), {}, "fabric.json"};
  std::vector<WorkerStatus> workers_{worker("gpu-a", "h05.cluster"), worker("h01", "h01")};
  std::vector<PairVerdict> verdicts_{
      verdict("h01/mlx5_0", "h02/mlx5_0", VerdictKind::kPass),
      verdict("h01/mlx5_0", "h03/mlx5_0", VerdictKind::kFail),
      verdict("h02/mlx5_0", "h04/mlx5_0", VerdictKind::kFail),
      verdict("h04/mlx5_0", "h06", VerdictKind::kFail),
      verdict("h04/mlx5_0", "gpu-a/mlx5_0", VerdictKind::kFail),
      verdict("h03/mlx5_0", "h04/mlx5_0", VerdictKind::kFail),
      verdict("h06", "gpu-a/mlx5_0", VerdictKind::kPass),
      verdict("h01/mlx5_0", "h09/mlx5_0", VerdictKind::kSkip),
      // A retest is the localiser's evidence, not a test of the sweep: not counted.
      verdict("h03/mlx5_0", "h06", VerdictKind::kFail, /*retest=*/true)};
  std::vector<Suspect> suspects_{suspect("host", "h03", 2.0), suspect("nic", "h04/mlx5_0", 1.5),
                                 suspect("host", "h04", 1.0), suspect("nic", "h06/mlx5_0", 0.6),
                                 suspect("link", "leaf02[3] <-> spine01[2]", 0.9)};
};

TEST_F(SwitchHostTableTest, TheLeafWhoseHostsAllFailComesFirstWithItsWorstHostFirst) {
  const SwitchHostTable t = switchHostTable(fabric_, workers_, verdicts_, suspects_);
  ASSERT_EQ(t.switches.size(), 3u);
  const SwitchHosts& leaf02 = t.switches[0];
  EXPECT_EQ(leaf02.name, "leaf02");
  EXPECT_EQ(leaf02.guid, 0x1002u);
  EXPECT_EQ(leaf02.verdicts.fail, 6u);  // h04's 4 and h03's 2
  EXPECT_EQ(leaf02.verdicts.pass, 0u);
  EXPECT_EQ(leaf02.hosts_failing, 2u);
  EXPECT_EQ(leaf02.suspects, 2u);
  ASSERT_EQ(leaf02.rows.size(), 2u);
  const SwitchHostRow& h04 = leaf02.rows[0];
  EXPECT_EQ(h04.host, "h04");
  EXPECT_EQ(h04.hca, "h04 mlx5_0");
  EXPECT_EQ(h04.hca_port, 1);
  EXPECT_EQ(h04.switch_port, 2);
  EXPECT_EQ(h04.verdicts.fail, 4u);
  ASSERT_TRUE(h04.suspect.has_value());
  EXPECT_EQ(h04.suspect->kind, "nic");  // the higher of its NIC (1.5) and its host (1.0)
  EXPECT_DOUBLE_EQ(h04.suspect->score, 1.5);
  EXPECT_EQ(leaf02.rows[1].host, "h03");
  EXPECT_EQ(leaf02.rows[1].verdicts.fail, 2u);  // the retest left out
  ASSERT_TRUE(leaf02.rows[1].suspect.has_value());
  EXPECT_EQ(leaf02.rows[1].suspect->name, "h03");

  // leaf01 and leaf03 have 2 FAILs each: the one with a suspect first.
  const SwitchHosts& leaf03 = t.switches[1];
  EXPECT_EQ(leaf03.name, "leaf03");
  EXPECT_EQ(leaf03.verdicts.fail, 2u);
  EXPECT_EQ(leaf03.verdicts.pass, 2u);
  EXPECT_EQ(leaf03.suspects, 1u);
  ASSERT_EQ(leaf03.rows.size(), 2u);
  // A FAIL each: the suspect first. h06 is tested without a NIC name; its NIC is the suspect.
  EXPECT_EQ(leaf03.rows[0].host, "h06");
  ASSERT_TRUE(leaf03.rows[0].suspect.has_value());
  EXPECT_EQ(leaf03.rows[0].suspect->name, "h06/mlx5_0");
  // gpu-a is h05 by its hostname (without its domain).
  EXPECT_EQ(leaf03.rows[1].host, "gpu-a");
  EXPECT_EQ(leaf03.rows[1].hca, "h05 mlx5_0");
  EXPECT_EQ(leaf03.rows[1].switch_port, 1);
  EXPECT_FALSE(leaf03.rows[1].suspect.has_value());

  const SwitchHosts& leaf01 = t.switches[2];
  EXPECT_EQ(leaf01.name, "leaf01");
  EXPECT_EQ(leaf01.verdicts.pass, 2u);
  EXPECT_EQ(leaf01.verdicts.fail, 2u);
  EXPECT_EQ(leaf01.verdicts.skip, 1u);
  ASSERT_EQ(leaf01.rows.size(), 2u);
  EXPECT_EQ(leaf01.rows[0].host, "h01");  // a FAIL each: by name
  EXPECT_EQ(leaf01.rows[0].verdicts.skip, 1u);

  // h09 has no HCA: listed with its verdicts, why and the fix.
  ASSERT_EQ(t.unplaced.size(), 1u);
  EXPECT_EQ(t.unplaced[0].end, "h09/mlx5_0");
  EXPECT_EQ(t.unplaced[0].verdicts.skip, 1u);
  EXPECT_THAT(t.unplaced[0].why, HasSubstr("worker h09 is matched to no HCA of fabric.json"));
  EXPECT_THAT(t.unplaced[0].why, HasSubstr("fabric_hosts:"));
}

TEST_F(SwitchHostTableTest, AnHcaWithoutAnActivePortIsListedWithWhy) {
  fabric::Fabric f = testing::twoLevelTree(3, 2, 2);
  for (fabric::Node& h : f.hosts) {
    if (h.name == "h03 mlx5_0") h.ports[0].state = "Down";
  }
  f.hosts[3].ports.push_back(f.hosts[3].ports[0]);  // h04: two ports, neither Active
  f.hosts[3].ports[0].state = "Down";
  f.hosts[3].ports[1].state = "Down";
  f.hosts[3].ports[1].number = 2;
  f.hosts[3].ports[1].remote_guid = 0;
  const SweepFabric fabric(std::move(f), {}, "@7");
  const SwitchHostTable t = switchHostTable(fabric, workers_, verdicts_, suspects_);
  // A single port that is down is still the one a test uses: h03 stays under leaf02.
  ASSERT_FALSE(t.switches.empty());
  EXPECT_EQ(t.switches[0].name, "leaf02");
  ASSERT_EQ(t.switches[0].rows.size(), 1u);
  EXPECT_EQ(t.switches[0].rows[0].host, "h03");
  ASSERT_EQ(t.unplaced.size(), 2u);
  EXPECT_EQ(t.unplaced[0].end, "h04/mlx5_0");
  EXPECT_EQ(t.unplaced[0].verdicts.fail, 4u);
  EXPECT_THAT(t.unplaced[0].why, HasSubstr("HCA h04 mlx5_0 has no Active port in @7"));
}

TEST(SplitTestedEnd, WorkerAndNic) {
  EXPECT_EQ(splitTestedEnd("h1/mlx5_0"), std::make_pair(std::string("h1"), std::string("mlx5_0")));
  EXPECT_EQ(splitTestedEnd("h1"), std::make_pair(std::string("h1"), std::string()));
}

fabric::LldpHost lldpHost(const std::string& host, const std::string& sw, const std::string& id,
                          const std::string& port) {
  fabric::LldpHost h;
  h.host = host;
  fabric::LldpNic n;
  n.device = "mlx5_0";
  n.netdev = "ens1f0np0";
  n.link_layer = "Ethernet";
  if (sw.empty()) {
    n.reason = "lldpd hears no neighbour on ens1f0np0";
    n.fix = "enable LLDP on the switch port";
  } else {
    fabric::LldpNeighbour nb;
    nb.interface = n.netdev;
    nb.chassis_name = sw;
    nb.chassis_id = id;
    nb.chassis_id_type = "mac";
    nb.port_id = port;
    n.neighbour = nb;
  }
  h.nics.push_back(n);
  return h;
}

// h1, h2 on leaf01, h3, h4 on leaf02, h5's NIC without a neighbour; h7 never answered.
fabric::EthFabric lldpFabric() {
  return fabric::buildEthFabric(
      {lldpHost("h1", "leaf01", "aa:01", "Ethernet1"),
       lldpHost("h2", "leaf01", "aa:01", "Ethernet2"),
       lldpHost("h3", "leaf02", "aa:02", "Ethernet1"),
       lldpHost("h4", "leaf02", "aa:02", "Ethernet2"), lldpHost("h5", "", "", "")},
      0);
}

TEST(LldpPortTable, TheSuspectPortFirstThenMostFailedEveryPortListed) {
  const fabric::EthFabric f = lldpFabric();
  const std::vector<PairVerdict> verdicts{
      verdict("h1/mlx5_0", "h2/mlx5_0", VerdictKind::kFail),
      verdict("h1/mlx5_0", "h3/mlx5_0", VerdictKind::kFail),
      verdict("h2/mlx5_0", "h3/mlx5_0", VerdictKind::kPass),
      verdict("h5/mlx5_0", "h1", VerdictKind::kSkip),
      verdict("h7/mlx5_0", "h3/mlx5_0", VerdictKind::kPass),
      verdict("h1/mlx5_0", "h2/mlx5_0", VerdictKind::kFail, /*retest=*/true)};
  const std::vector<Suspect> suspects{suspect("switch_port", "leaf01[Ethernet1]", 1.0),
                                      suspect("host", "h1", 2.0)};
  const LldpPortTable t = lldpPortTable(f, verdicts, suspects);
  ASSERT_EQ(t.ports.size(), 4u);
  EXPECT_EQ(t.ports[0].switchPortName(), "leaf01[Ethernet1]");
  EXPECT_EQ(t.ports[0].nicName(), "h1 mlx5_0");
  EXPECT_EQ(t.ports[0].netdev, "ens1f0np0");
  EXPECT_EQ(t.ports[0].chassis_id, "aa:01");
  EXPECT_EQ(t.ports[0].tests, 3u);  // the retest left out; "h1" without a NIC is its NIC
  EXPECT_EQ(t.ports[0].failed, 2u);
  ASSERT_TRUE(t.ports[0].suspect.has_value());
  EXPECT_EQ(t.ports[0].suspect->kind, "switch_port");  // the host suspect is not the port's
  EXPECT_DOUBLE_EQ(t.ports[0].suspect->score, 1.0);
  // One failed test each: by switch and port.
  EXPECT_EQ(t.ports[1].switchPortName(), "leaf01[Ethernet2]");
  EXPECT_EQ(t.ports[1].tests, 2u);
  EXPECT_EQ(t.ports[1].failed, 1u);
  EXPECT_EQ(t.ports[2].switchPortName(), "leaf02[Ethernet1]");
  EXPECT_EQ(t.ports[2].tests, 3u);
  EXPECT_EQ(t.ports[2].failed, 1u);
  EXPECT_FALSE(t.ports[2].suspect.has_value());
  // A port no test touched is listed too, last.
  EXPECT_EQ(t.ports[3].switchPortName(), "leaf02[Ethernet2]");
  EXPECT_EQ(t.ports[3].tests, 0u);

  ASSERT_EQ(t.unplaced.size(), 2u);
  EXPECT_EQ(t.unplaced[0].end, "h5/mlx5_0");
  EXPECT_EQ(t.unplaced[0].verdicts.skip, 1u);
  EXPECT_THAT(t.unplaced[0].why, HasSubstr("h5 mlx5_0: lldpd hears no neighbour on ens1f0np0"));
  EXPECT_EQ(t.unplaced[1].end, "h7/mlx5_0");
  EXPECT_THAT(t.unplaced[1].why, HasSubstr("host h7 is not in the LLDP snapshot"));
}

TEST(FabricHostTables, OneTableByTheFabricsKind) {
  const auto ib = std::make_shared<const SweepFabric>(testing::twoLevelTree(1, 2, 1),
                                                      std::map<std::string, std::string>{}, "@3");
  const auto eth = std::make_shared<const fabric::EthFabric>(lldpFabric());
  const std::vector<PairVerdict> v{verdict("h01/mlx5_0", "h02/mlx5_0", VerdictKind::kPass)};
  FabricHostTables t = fabricHostTables({ib, nullptr}, {}, v, {});
  EXPECT_EQ(t.source, "@3");
  ASSERT_TRUE(t.infiniband.has_value());
  EXPECT_EQ(t.infiniband->switches.size(), 1u);
  EXPECT_FALSE(t.lldp.has_value());
  t = fabricHostTables({nullptr, eth}, {}, v, {});
  EXPECT_EQ(t.source, "lldp");
  EXPECT_FALSE(t.infiniband.has_value());
  ASSERT_TRUE(t.lldp.has_value());
  EXPECT_EQ(t.lldp->ports.size(), 4u);
  t = fabricHostTables({}, {}, v, {});
  EXPECT_EQ(t.source, "");
  EXPECT_FALSE(t.infiniband || t.lldp);
}

}  // namespace
}  // namespace gdrmesh
