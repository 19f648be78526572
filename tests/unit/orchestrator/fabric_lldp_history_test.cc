// RoCE snapshots as the coordinator keeps them (coordinator/orchestrator/fabric_history.h,
// fabric_lldp_history.cc): each worker's LLDP answer merged into the cluster's Ethernet snapshot,
// diffed for the hosts that answered, never against an InfiniBand snapshot; and the sweep
// report's notes on such a fabric (sweep_lldp.h), labelled as estimates. Over the MemoryStore and
// a ManualClock.
#include <gmock/gmock.h>

#include <nlohmann/json.hpp>

#include "coordinator/orchestrator/fabric_history.h"
#include "coordinator/orchestrator/sweep_lldp.h"
#include "tests/support/memory_store.h"

namespace gdrmesh::testing {
namespace {

using ::testing::HasSubstr;

fabric::LldpNeighbour heard(const std::string& sw, const std::string& id, const std::string& port) {
  fabric::LldpNeighbour n;
  n.interface = "ens1";
  n.chassis_name = sw;
  n.chassis_id = id;
  n.chassis_id_type = "mac";
  n.port_id = port;
  return n;
}

fabric::DiscoverOutcome answer(const std::string& host,
                               std::optional<fabric::LldpNeighbour> neighbour) {
  fabric::DiscoverOutcome o;
  o.asked_lldp = true;
  fabric::LldpHost h;
  h.host = host;
  fabric::LldpNic n;
  n.device = "mlx5_0";
  n.netdev = "ens1";
  n.link_layer = "Ethernet";
  n.neighbour = std::move(neighbour);
  if (!n.neighbour) {
    n.reason = "lldpd hears no neighbour on ens1 (mlx5_0/1, port ACTIVE)";
    n.fix = "enable LLDP on the switch port";
  }
  h.nics.push_back(n);
  o.lldp = h;
  return o;
}

fabric::EthFabric storedEth(MemoryStore& store, int64_t id) {
  auto row = store.getFabricSnapshot(id);
  EXPECT_TRUE(row.ok() && row->has_value());
  auto f = fabric::ethFabricFromJson(nlohmann::json::parse((*row)->snapshot_json));
  EXPECT_TRUE(f.ok()) << f.status().toString();
  return f.ok() ? *f : fabric::EthFabric{};
}

class FabricLldpHistoryTest : public ::testing::Test {
 protected:
  ManualClock clock_{1'790'000'000'000};
  MemoryStore store_;
  FabricRecorder recorder_{store_, clock_};
};

TEST_F(FabricLldpHistoryTest, WorkersAnswersBuildOneSnapshotAndAMovedNicIsAFinding) {
  auto h1 = recorder_.record("h1", answer("h1", heard("leaf01", "aa:01", "Ethernet1")));
  ASSERT_TRUE(h1.ok()) << h1.status().toString();
  EXPECT_EQ(h1->snapshot.source, "lldp");
  EXPECT_EQ(h1->snapshot.outcome, "ok");
  EXPECT_TRUE(h1->findings.empty());
  auto h2 = recorder_.record("h2", answer("h2", heard("leaf02", "aa:02", "Ethernet1")));
  ASSERT_TRUE(h2.ok()) << h2.status().toString();
  EXPECT_EQ(h2->previous_id, h1->snapshot.id);
  EXPECT_TRUE(h2->findings.empty());  // h1 did not answer this time: kept, not "gone"
  EXPECT_EQ(h2->snapshot.switches, 2u);
  EXPECT_EQ(h2->snapshot.links, 2u);
  fabric::EthFabric both = storedEth(store_, h2->snapshot.id);
  EXPECT_EQ(both.hosts, (std::vector<std::string>{"h1", "h2"}));
  EXPECT_THAT(store_.getFabricSnapshot(h2->snapshot.id).value()->snapshot_json,
              HasSubstr("\"estimate\":\"estimate: RoCE, no forwarding tables; ECMP hides the "
                        "path\""));

  clock_.advance(std::chrono::seconds(60));
  auto moved = recorder_.record("h1", answer("h1", heard("leaf01", "aa:01", "Ethernet7")));
  ASSERT_TRUE(moved.ok());
  ASSERT_EQ(moved->findings.size(), 1u);
  EXPECT_EQ(moved->findings[0].kind, "nic_moved");
  EXPECT_EQ(moved->findings[0].switch_name, "leaf01");
  EXPECT_EQ(moved->findings[0].message,
            "h1 mlx5_0/1: moved from leaf01[Ethernet1] to leaf01[Ethernet7]");

  auto gone = recorder_.record("h2", answer("h2", std::nullopt));
  ASSERT_TRUE(gone.ok());
  ASSERT_EQ(gone->findings.size(), 1u);
  EXPECT_EQ(gone->findings[0].kind, "neighbour_gone");
  EXPECT_THAT(gone->findings[0].message, HasSubstr("h2 mlx5_0/1: its neighbour leaf02[Ethernet1] "
                                                   "is gone (lldpd hears no neighbour"));
  // Still two hosts: h1 as last heard, h2 without a neighbour.
  fabric::EthFabric last = storedEth(store_, gone->snapshot.id);
  ASSERT_EQ(last.links.size(), 1u);
  EXPECT_EQ(last.links[0].switchPortName(), "leaf01[Ethernet7]");
  ASSERT_EQ(last.unknown.size(), 1u);

  // The first answer of a NIC without a neighbour is a finding with its fix.
  auto h3 = recorder_.record("h3", answer("h3", std::nullopt));
  ASSERT_TRUE(h3.ok());
  ASSERT_EQ(h3->findings.size(), 1u);
  EXPECT_EQ(h3->findings[0].kind, "no_neighbour");
  EXPECT_THAT(h3->findings[0].message, HasSubstr("(fix: enable LLDP on the switch port)"));
}

TEST_F(FabricLldpHistoryTest, NoLldpdIsAStoredFindingNamingLldp) {
  fabric::DiscoverOutcome none;
  none.asked_lldp = true;
  none.status = notFound("'lldpcli' not found: lldpd is not installed", fabric::kLldpdInstallFix);
  auto r = recorder_.record("h3", none);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->snapshot.outcome, "skipped");
  EXPECT_THAT(r->snapshot.detail, HasSubstr("no LLDP answer from h3: 'lldpcli' not found"));
  EXPECT_THAT(r->snapshot.detail, HasSubstr("apt install lldpd"));
}

TEST_F(FabricLldpHistoryTest, KindsAreNeverDiffedAgainstEachOther) {
  // An InfiniBand snapshot between two LLDP ones: each kind diffs against its own.
  auto a = recorder_.record("h1", answer("h1", heard("leaf01", "aa:01", "Ethernet1")));
  ASSERT_TRUE(a.ok());
  fabric::DiscoverOutcome ib;
  ib.fabric.source = "mlx5_0/1";
  auto b = recorder_.record("ib", ib);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->previous_id, 0);  // no InfiniBand snapshot before it
  EXPECT_TRUE(b->findings.empty());
  auto c = recorder_.record("h1", answer("h1", heard("leaf01", "aa:01", "Ethernet1")));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->previous_id, a->snapshot.id);
  EXPECT_TRUE(c->findings.empty());
  auto resolved = recorder_.resolve("@" + std::to_string(c->snapshot.id));
  ASSERT_TRUE(resolved.ok());
  EXPECT_EQ(resolved->previous_id, a->snapshot.id);
}

TEST(SweepLldpNotes, CoverageAndASharedPortAreEstimates) {
  fabric::LldpHost h1, h2, h3;
  for (auto [h, name, sw, id, port] :
       {std::make_tuple(&h1, "h1", "leaf01", "aa:01", "Ethernet1"),
        std::make_tuple(&h2, "h2", "leaf01", "aa:01", "Ethernet2"),
        std::make_tuple(&h3, "h3", "leaf02", "aa:02", "Ethernet1")}) {
    h->host = name;
    fabric::LldpNic n;
    n.device = "mlx5_0";
    n.netdev = "ens1";
    n.neighbour = heard(sw, id, port);
    h->nics.push_back(n);
  }
  const fabric::EthFabric f = fabric::buildEthFabric({h1, h2, h3}, 0);
  JudgeRows rows;
  auto result = [](const std::string& id, const std::string& a, const std::string& b) {
    TestResult r;
    r.test_id = id;
    r.initiator.worker = a;
    r.initiator.nic = "mlx5_0";
    r.target.worker = b;
    r.target.nic = "mlx5_0";
    r.status = TestStatus::kPassed;
    return r;
  };
  rows.add(result("t1", "h1", "h2"));
  rows.add(result("t2", "h1", "h3"));
  rows.add(result("t3", "h2", "h3"));
  JudgeVerdicts v;
  v.kind = {VerdictKind::kFail, VerdictKind::kFail, VerdictKind::kPass};
  auto notes = lldpSweepNotes(f, rows, v);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_THAT(notes[0], HasSubstr("fabric coverage (estimate: RoCE, no forwarding tables; ECMP "
                                  "hides the path, from LLDP): 3 of 3 host switch ports"));
  EXPECT_THAT(notes[0], HasSubstr("1 stayed within one switch, 2 crossed the fabric"));
  // The port both failed tests share is a suspect row (kind switch_port), as a blamed link is:
  // it explains 2 of 2 failed tests and 2 of its 2 tests failed, score 1. An estimate, says so.
  auto suspects = lldpSweepSuspects(f, rows, v);
  ASSERT_EQ(suspects.size(), 1u);
  EXPECT_EQ(suspects[0].kind, "switch_port");
  EXPECT_EQ(suspects[0].name, "leaf01[Ethernet1]");
  EXPECT_DOUBLE_EQ(suspects[0].score, 1.0);
  ASSERT_EQ(suspects[0].evidence.size(), 2u);
  EXPECT_EQ(suspects[0].evidence[0],
            "host switch port leaf01[Ethernet1] of h1 mlx5_0 (estimate: RoCE, no forwarding "
            "tables; ECMP hides the path)");
  EXPECT_THAT(suspects[0].evidence[1], HasSubstr("2 of 2 slow or failed tests had an end on "
                                                 "leaf01[Ethernet1]"));
  // Nothing failed: no suspect.
  v.kind = {VerdictKind::kPass, VerdictKind::kPass, VerdictKind::kPass};
  EXPECT_TRUE(lldpSweepSuspects(f, rows, v).empty());
}

}  // namespace
}  // namespace gdrmesh::testing
