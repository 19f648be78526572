// RoCE fabrics from LLDP: lldpd's JSON (captured from real lldpd, tests/unit/fabric/
// lldp_fixtures/README.md), the host's answer, the snapshot, its diff, and the estimated coverage.
#include "common/fabric/lldp.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/temp_dir.h"
#include "worker/fabric/lldp_reader.h"

namespace gdrmesh::fabric {
namespace {

using ::testing::HasSubstr;

std::string fixturePath(const std::string& name) {
  return std::string(GDRMESH_SOURCE_DIR) + "/tests/unit/fabric/lldp_fixtures/" + name;
}

std::string readFixture(const std::string& name) {
  std::ifstream in(fixturePath(name));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(LldpParse, OneNeighbourIsAnObjectKeyedByInterface) {
  auto n = parseLldpNeighboursText(readFixture("one_neighbour.json"), "one");
  ASSERT_TRUE(n.ok()) << n.status().toString();
  ASSERT_EQ(n->size(), 1u);
  const LldpNeighbour& x = (*n)[0];
  EXPECT_EQ(x.interface, "gv2");
  EXPECT_EQ(x.chassis_name, "leaf07");
  EXPECT_EQ(x.chassis_id, "b6:d3:b8:84:e8:83");
  EXPECT_EQ(x.chassis_id_type, "mac");
  EXPECT_EQ(x.port_id, "Ethernet12");
  EXPECT_EQ(x.port_id_type, "local");
  EXPECT_EQ(x.port_descr, "to h0001 mlx5_0");
  EXPECT_EQ(x.mfs, 0);
  EXPECT_TRUE(x.vlans.empty());
}

TEST(LldpParse, SeveralNeighboursAreAnArray) {
  auto n = parseLldpNeighboursText(readFixture("two_neighbours.json"), "two");
  ASSERT_TRUE(n.ok()) << n.status().toString();
  ASSERT_EQ(n->size(), 2u);
  EXPECT_EQ((*n)[0].interface, "gv2");
  EXPECT_EQ((*n)[1].interface, "gw2");
  EXPECT_EQ((*n)[1].chassis_name, "leaf07");
  EXPECT_EQ((*n)[1].port_id, "Ethernet12");
}

TEST(LldpParse, NoNeighbourIsAnEmptyList) {
  auto n = parseLldpNeighboursText(readFixture("no_neighbour.json"), "none");
  ASSERT_TRUE(n.ok()) << n.status().toString();
  EXPECT_TRUE(n->empty());
}

TEST(LldpParse, VlansMfsAndAChassisWithoutName) {
  auto n = parseLldpNeighboursText(readFixture("vlans_unnamed_chassis.json"), "vlans");
  ASSERT_TRUE(n.ok()) << n.status().toString();
  ASSERT_EQ(n->size(), 2u);
  EXPECT_EQ((*n)[0].chassis_name, "");
  EXPECT_EQ((*n)[0].chassis_id, "0c:42:a1:00:00:07");
  EXPECT_EQ((*n)[0].mfs, 9216);
  EXPECT_EQ((*n)[0].vlans, (std::vector<int>{100, 200}));
  EXPECT_EQ((*n)[0].pvid, 100);
  // One VLAN is an object, not an array; mfs a number; pvid "yes".
  EXPECT_EQ((*n)[1].chassis_name, "spine-less-leaf");
  EXPECT_EQ((*n)[1].port_id, "Ethernet1/12");
  EXPECT_EQ((*n)[1].mfs, 1514);
  EXPECT_EQ((*n)[1].vlans, (std::vector<int>{100}));
  EXPECT_EQ((*n)[1].pvid, 100);
}

TEST(LldpParse, BadOrMissingFieldsNameTheField) {
  struct Case {
    std::string text, field;
  };
  const std::vector<Case> cases = {
      {"[1]", "lldp JSON: must be an object"},
      {"{}", "lldp: missing"},
      {R"({"lldp": [{"interface": []}]})", "json0"},
      {R"({"lldp": {"interface": {"eth0": {"port": {"id": {"value": "p1"}}}}}})",
       "lldp.interface.eth0.chassis: missing"},
      {R"({"lldp": {"interface": [{"eth0": {"chassis": {"sw": {"id": {"value": "m"}}},
           "port": {"id": {"value": "p"}}}}, {"eth1": {"chassis": {"sw": {"id": {"type": "mac"}}},
           "port": {"id": {"value": "p"}}}}]}})",
       "lldp.interface[1].eth1.chassis.sw.id.value: missing"},
      {R"({"lldp": {"interface": {"eth0": {"chassis": {"sw": {"id": {"value": "m"}}}}}}})",
       "lldp.interface.eth0.port: missing"},
      {R"({"lldp": {"interface": {"eth0": {"chassis": {"sw": {"id": {"value": "m"}}},
           "port": {"id": {"value": 7.5}}}}}})",
       "lldp.interface.eth0.port.id.value: must be a string"},
      {R"({"lldp": {"interface": {"eth0": {"chassis": {"sw": {"id": {"value": "m"}}},
           "port": {"id": {"value": "p"}, "mfs": "big"}}}}})",
       "lldp.interface.eth0.port.mfs: must be a number"},
      {R"({"lldp": {"interface": {"eth0": {"chassis": {"sw": {"id": {"value": "m"}}},
           "port": {"id": {"value": "p"}}, "vlan": [{"pvid": true}]}}}})",
       "lldp.interface.eth0.vlan[0].vlan-id: missing"},
      {R"({"lldp": {"interface": 3}})", "lldp.interface: must be an object or an array"},
      {"not json", "is not JSON"},
  };
  for (const auto& c : cases) {
    auto n = parseLldpNeighboursText(c.text, "T");
    ASSERT_FALSE(n.ok()) << c.text;
    EXPECT_EQ(n.status().code(), Code::kInvalidArgument);
    EXPECT_THAT(n.status().message(), HasSubstr(c.field)) << c.text;
  }
}

// ------------------------------------------------------------------ the host's answer

Nic roceNic(const std::string& name, const std::string& netdev, const std::string& layer) {
  Nic n;
  n.name = name;
  NicPort p;
  p.port = 1;
  p.state = "ACTIVE";
  p.link_layer = layer;
  p.netdev = netdev;
  n.ports.push_back(p);
  return n;
}

LldpNeighbour neighbour(const std::string& iface, const std::string& sw, const std::string& id,
                        const std::string& port) {
  LldpNeighbour n;
  n.interface = iface;
  n.chassis_name = sw;
  n.chassis_id = id;
  n.chassis_id_type = "mac";
  n.port_id = port;
  n.port_id_type = "ifname";
  return n;
}

TEST(LldpMatch, EachEthernetPortGetsItsNetdevsNeighbourOrAReason) {
  std::vector<Nic> nics = {roceNic("mlx5_0", "ens1", "Ethernet"),
                           roceNic("mlx5_1", "ens2", "Ethernet"),
                           roceNic("mlx5_2", "ib0", "InfiniBand")};
  std::vector<LldpNeighbour> heard = {neighbour("ens1", "leaf01", "aa:00", "Ethernet1"),
                                      neighbour("eth0", "mgmt", "bb:00", "ge-0/0/1")};
  LldpHost h = matchLldpNeighbours("h0001", nics, "/nonexistent", heard);
  EXPECT_TRUE(h.status.ok());
  ASSERT_EQ(h.nics.size(), 2u);  // the InfiniBand port has no LLDP
  ASSERT_TRUE(h.nics[0].neighbour.has_value());
  EXPECT_EQ(h.nics[0].neighbour->port_id, "Ethernet1");
  EXPECT_FALSE(h.nics[1].neighbour.has_value());
  EXPECT_THAT(h.nics[1].reason, HasSubstr("no neighbour on ens2 (mlx5_1/1"));
  EXPECT_THAT(h.nics[1].fix, HasSubstr("lldpcli configure ports ens2"));
}

TEST(LldpMatch, LldpdNotAskedIsTheAnswersStatusAndEveryNicsReason) {
  std::vector<Nic> nics = {roceNic("mlx5_0", "ens1", "Ethernet")};
  Result<std::vector<LldpNeighbour>> none =
      notFound("'lldpcli' not found: lldpd is not installed", kLldpdInstallFix);
  LldpHost h = matchLldpNeighbours("h0001", nics, "/", none);
  EXPECT_EQ(h.status.code(), Code::kNotFound);
  ASSERT_EQ(h.nics.size(), 1u);
  EXPECT_THAT(h.nics[0].reason, HasSubstr("mlx5_0/1: 'lldpcli' not found"));
  EXPECT_THAT(h.nics[0].fix, HasSubstr("apt install lldpd"));
  EXPECT_THAT(h.nics[0].fix, HasSubstr("systemctl enable --now lldpd"));
}

TEST(LldpMatch, NoRocePortIsAResultWithTheFix) {
  LldpHost h = matchLldpNeighbours("h0001", {roceNic("mlx5_0", "", "InfiniBand")}, "/",
                                   std::vector<LldpNeighbour>{});
  EXPECT_EQ(h.status.code(), Code::kFailedPrecondition);
  EXPECT_THAT(h.status.message(), HasSubstr("no RoCE (Ethernet) RDMA port on h0001"));
}

TEST(LldpRead, MissingLldpcliSaysWhatToInstall) {
  LldpReadOptions o;
  o.lldpcli = "gdrmesh-no-such-lldpcli";
  auto r = readLldpNeighboursJson(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_THAT(r.status().fix(), HasSubstr("apt install lldpd"));
}

TEST(LldpRead, AnLldpcliThatFailsToConnectSaysLldpdIsNotRunning) {
  // A stand-in for lldpcli with lldpd stopped: prints lldpcli's own message and exits 1.
  gdrmesh::testing::TempDir dir;
  const std::string fake = dir.path() + "/lldpcli";
  {
    std::ofstream f(fake);
    f << "#!/bin/sh\necho '[WARN/control] unable to connect to socket "
         "/run/lldpd.socket: No such file or directory' >&2\nexit 1\n";
  }
  ASSERT_EQ(::chmod(fake.c_str(), 0755), 0);
  LldpReadOptions o;
  o.lldpcli = fake;
  auto r = readLldpNeighboursJson(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("lldpd is not running"));
  EXPECT_THAT(r.status().fix(), HasSubstr("systemctl enable --now lldpd"));
}

TEST(LldpRead, SysfsNicsAndAFileOfNeighbours) {
  // two_domains: mlx5_0 on enP0p4s0, mlx5_1 on enP1p4s0 (RoCE v2 GIDs, tests/fixtures/sysfs).
  gdrmesh::testing::TempDir dir;
  std::string text = readFixture("one_neighbour.json");
  text.replace(text.find("\"gv2\""), 5, "\"enP1p4s0\"");
  const std::string file = dir.path() + "/lldp.json";
  std::ofstream(file) << text;
  LldpReadOptions o;
  o.host = "h0001";
  o.sysfs_root = std::string(GDRMESH_SYSFS_FIXTURES) + "/two_domains";
  o.json_file = file;
  LldpHost h = readLldpHost(o);
  ASSERT_TRUE(h.status.ok()) << h.status.toString();
  ASSERT_EQ(h.nics.size(), 2u);
  EXPECT_EQ(h.nics[0].device, "mlx5_0");
  EXPECT_EQ(h.nics[0].netdev, "enP0p4s0");
  EXPECT_FALSE(h.nics[0].neighbour.has_value());
  EXPECT_THAT(h.nics[0].reason, HasSubstr("no neighbour on enP0p4s0"));
  EXPECT_EQ(h.nics[1].netdev, "enP1p4s0");
  ASSERT_TRUE(h.nics[1].neighbour.has_value());
  EXPECT_EQ(h.nics[1].neighbour->chassis_name, "leaf07");

  // The answer survives its JSON form (the worker's reply to the coordinator).
  auto back = lldpHostFromJson(toJson(h));
  ASSERT_TRUE(back.ok()) << back.status().toString();
  EXPECT_EQ(toJson(*back), toJson(h));
}

// ------------------------------------------------------------------ the snapshot

LldpHost host(const std::string& name,
              std::vector<std::pair<std::string, std::optional<LldpNeighbour>>> nics) {
  LldpHost h;
  h.host = name;
  for (auto& [dev, nb] : nics) {
    LldpNic n;
    n.device = dev;
    n.netdev = "eth_" + dev;
    n.link_layer = "Ethernet";
    n.neighbour = nb;
    if (!nb) n.reason = "lldpd hears no neighbour on eth_" + dev;
    h.nics.push_back(std::move(n));
  }
  return h;
}

// Two leaves, four hosts: h1, h2 on leaf01; h3 on leaf02; h4 without a neighbour.
EthFabric fourHosts() {
  return buildEthFabric(
      {host("h3", {{"mlx5_0", neighbour("eth_mlx5_0", "leaf02", "aa:02", "Ethernet1")}}),
       host("h1", {{"mlx5_0", neighbour("eth_mlx5_0", "leaf01", "aa:01", "Ethernet1")}}),
       host("h2", {{"mlx5_0", neighbour("eth_mlx5_0", "leaf01", "aa:01", "Ethernet2")}}),
       host("h4", {{"mlx5_0", std::nullopt}})},
      1764208800000);
}

TEST(EthFabricBuild, SwitchesByChassisNicsLinkedToPorts) {
  EthFabric f = fourHosts();
  ASSERT_EQ(f.switches.size(), 2u);
  EXPECT_EQ(f.switches[0].name, "leaf01");
  EXPECT_EQ(f.switches[0].ports, (std::vector<std::string>{"Ethernet1", "Ethernet2"}));
  EXPECT_EQ(f.switches[1].name, "leaf02");
  ASSERT_EQ(f.links.size(), 3u);
  EXPECT_EQ(f.links[0].host, "h1");
  EXPECT_EQ(f.links[0].switchPortName(), "leaf01[Ethernet1]");
  ASSERT_EQ(f.unknown.size(), 1u);
  EXPECT_EQ(f.unknown[0].nicName(), "h4 mlx5_0");
  EXPECT_EQ(f.hosts, (std::vector<std::string>{"h1", "h2", "h3", "h4"}));
}

TEST(EthFabricBuild, AChassisWithoutNameIsNamedByItsId) {
  LldpNeighbour n = neighbour("eth_mlx5_0", "", "0c:42:a1:00:00:07", "swp7");
  EthFabric f = buildEthFabric({host("h1", {{"mlx5_0", n}})}, 0);
  ASSERT_EQ(f.switches.size(), 1u);
  EXPECT_EQ(f.switches[0].name, "0c:42:a1:00:00:07");
  EXPECT_EQ(f.links[0].switchPortName(), "0c:42:a1:00:00:07[swp7]");
}

TEST(EthFabricJson, SaysItsSourceAndThatItIsAnEstimate) {
  EthFabric f = fourHosts();
  nlohmann::json j = toJson(f);
  EXPECT_EQ(j["format"], kLldpFormat);
  EXPECT_EQ(j["source"], "lldp");
  EXPECT_EQ(j["estimate"], kLldpEstimate);
  EXPECT_EQ(j["inter_switch_links"], "unknown");
  EXPECT_EQ(j["routes"], "unknown");
  EXPECT_EQ(j["hosts"].size(), 4u);
  EXPECT_EQ(j["links"][0]["switch"]["port"], "Ethernet1");
  EXPECT_TRUE(isLldpSnapshot(j));
  auto back = ethFabricFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().toString();
  EXPECT_EQ(toJson(*back), j);
  EXPECT_THAT(ethSummary(f), HasSubstr("source lldp: inter-switch links and routes unknown"));
  EXPECT_THAT(ethSummary(f), HasSubstr(kLldpEstimate));
}

TEST(EthFabricJson, BadSnapshotsNameTheField) {
  nlohmann::json j = toJson(fourHosts());
  {
    nlohmann::json x = j;
    x["format"] = "gdrmesh-fabric/1";
    EXPECT_THAT(ethFabricFromJson(x).status().message(), HasSubstr("\"format\""));
  }
  {
    nlohmann::json x = j;
    x["links"][1]["switch"].erase("port");
    EXPECT_THAT(ethFabricFromJson(x).status().message(),
                HasSubstr("lldp snapshot.links[1].switch.port: missing"));
  }
  {
    nlohmann::json x = j;
    x["links"][0]["switch"]["chassis_id"] = "ff:ff";
    EXPECT_THAT(ethFabricFromJson(x).status().message(), HasSubstr("is not in \"switches\""));
  }
  {
    nlohmann::json x = j;
    x["switches"][0]["ports"] = 3;
    EXPECT_THAT(ethFabricFromJson(x).status().message(),
                HasSubstr("lldp snapshot.switches[0].ports: wrong type"));
  }
}

TEST(EthFabricDiff, AMovedNicAndAVanishedNeighbourAreFindings) {
  EthFabric before = fourHosts();
  EthFabric after = buildEthFabric(
      {host("h3", {{"mlx5_0", std::nullopt}}),
       host("h1", {{"mlx5_0", neighbour("eth_mlx5_0", "leaf01", "aa:01", "Ethernet9")}}),
       host("h2", {{"mlx5_0", neighbour("eth_mlx5_0", "leaf01", "aa:01", "Ethernet2")}}),
       host("h4", {{"mlx5_0", neighbour("eth_mlx5_0", "leaf02", "aa:02", "Ethernet4")}})},
      2);
  auto d = diffEthFabrics(before, after);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].kind, "nic_moved");
  EXPECT_EQ(d[0].message, "h1 mlx5_0/1: moved from leaf01[Ethernet1] to leaf01[Ethernet9]");
  EXPECT_EQ(d[1].kind, "neighbour_gone");
  EXPECT_EQ(d[1].switch_name, "leaf02");
  EXPECT_THAT(d[1].message, HasSubstr("h3 mlx5_0/1: its neighbour leaf02[Ethernet1] is gone"));
  EXPECT_THAT(d[1].message, HasSubstr("lldpd hears no neighbour"));
  EXPECT_EQ(d[2].kind, "neighbour_new");
  EXPECT_EQ(d[2].message, "h4 mlx5_0/1: now linked to leaf02[Ethernet4]");
  EXPECT_TRUE(diffEthFabrics(before, before).empty());
}

TEST(EthFabricDiff, PortSettingsAndHostsThatDidNotAnswer) {
  LldpNeighbour n = neighbour("eth_mlx5_0", "leaf01", "aa:01", "Ethernet1");
  LldpNeighbour m = n;
  m.mfs = 9216;
  m.vlans = {100};
  m.pvid = 100;
  EthFabric before = buildEthFabric({host("h1", {{"mlx5_0", n}}), host("h2", {{"mlx5_0", n}})}, 1);
  EthFabric after = buildEthFabric({host("h1", {{"mlx5_0", m}})}, 2);
  auto d = diffEthFabrics(before, after);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].kind, "port_changed");
  EXPECT_EQ(d[0].message,
            "leaf01[Ethernet1] (h1 mlx5_0/1): maximum frame size 0 -> 9216, VLANs - -> 100 (pvid "
            "100)");
  EXPECT_EQ(d[1].kind, "neighbour_gone");
  EXPECT_THAT(d[1].message, HasSubstr("the host did not answer"));
  // Comparing only the hosts that answered (one worker's own snapshot): h2 is not a finding.
  EXPECT_EQ(diffEthFabrics(before, after, /*all_hosts=*/false).size(), 1u);
}

// ------------------------------------------------------------------ coverage, an estimate

TEST(EthCoverageEstimate, SwitchPortsFromTheHostEndsLabelledAsAnEstimate) {
  EthFabric f = fourHosts();
  std::vector<EthTestEnds> tests = {
      {"h1", "mlx5_0", "h2", "mlx5_0"}, {"h1", "", "h3", ""}, {"h2", "mlx5_0", "h4", "mlx5_0"}};
  EthCoverage c = estimateEthCoverage(f, tests);
  EXPECT_EQ(c.tests, 3u);
  EXPECT_EQ(c.within_switch, 1u);
  EXPECT_EQ(c.across, 1u);
  EXPECT_EQ(c.unknown, 1u);
  EXPECT_EQ(c.switch_ports.at("leaf01[Ethernet1]"), 2u);
  EXPECT_EQ(c.switch_ports.at("leaf01[Ethernet2]"), 2u);
  EXPECT_EQ(c.switch_ports.at("leaf02[Ethernet1]"), 1u);
  EXPECT_EQ(c.ports_known, 3u);
  EXPECT_TRUE(c.ports_unused.empty());
  auto notes = ethCoverageNotes(c);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_THAT(notes[0], HasSubstr("fabric coverage (estimate: RoCE, no forwarding tables; ECMP "
                                  "hides the path, from LLDP)"));
  EXPECT_THAT(notes[0], HasSubstr("3 of 3 host switch ports carried tests, on 2 switches"));
  EXPECT_THAT(notes[0], HasSubstr("1 stayed within one switch, 1 crossed the fabric between "
                                  "switches (path unknown), 1 had an end without an LLDP"));
  EXPECT_THAT(notes[0], ::testing::Not(HasSubstr("LFT")));

  auto some = ethCoverageNotes(estimateEthCoverage(f, {{"h1", "", "h3", ""}}));
  ASSERT_EQ(some.size(), 2u);
  EXPECT_THAT(some[1], HasSubstr("host switch ports no test touched: leaf01[Ethernet2]"));
}

TEST(EthPortSuspects, SlowPairsSharingOneNicsSwitchPortNameIt) {
  EthFabric f = buildEthFabric(
      {host("h1", {{"mlx5_0", neighbour("eth_mlx5_0", "leaf01", "aa:01", "Ethernet1")}}),
       host("h2", {{"mlx5_0", neighbour("eth_mlx5_0", "leaf01", "aa:01", "Ethernet2")}}),
       host("h3", {{"mlx5_0", neighbour("eth_mlx5_0", "leaf02", "aa:02", "Ethernet1")}}),
       host("h4", {{"mlx5_0", neighbour("eth_mlx5_0", "leaf02", "aa:02", "Ethernet2")}})},
      0);
  std::vector<EthTestEnds> tests = {{"h1", "", "h2", ""}, {"h1", "", "h3", ""},
                                    {"h1", "", "h4", ""}, {"h2", "", "h3", ""},
                                    {"h2", "", "h4", ""}, {"h3", "", "h4", ""}};
  std::vector<bool> failed = {true, true, true, false, false, false};
  auto s = ethPortSuspects(f, tests, failed);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].switch_port, "leaf01[Ethernet1]");
  EXPECT_EQ(s[0].nic, "h1 mlx5_0");
  EXPECT_THAT(s[0].evidence, HasSubstr("3 of 3 slow or failed tests had an end on "
                                       "leaf01[Ethernet1]"));
  EXPECT_THAT(s[0].evidence, HasSubstr(kLldpEstimate));
  // Failures spread over every port: no port explains them.
  EXPECT_TRUE(ethPortSuspects(f, tests, {true, false, false, false, false, true}).empty());
}

}  // namespace
}  // namespace gdrmesh::fabric
