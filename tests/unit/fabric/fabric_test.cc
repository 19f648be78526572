// The fabric model (common/fabric/fabric.h): JSON round trip, snapshot diffs and paths read
// from LFTs, on a small hand-built two-level tree. The same code against real OpenSM tables:
// tests/fabric (ctest -L fabric).
#include "common/fabric/fabric.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "common/fabric/cover.h"
#include "tests/support/fabric_trees.h"

namespace gdrmesh::fabric {
namespace {

// leaf1[1]=h1 leaf1[2]=h2 leaf1[3]=spine1[1] leaf1[4]=spine2[1]
// leaf2[1]=h3 leaf2[2]=h4 leaf2[3]=spine1[2] leaf2[4]=spine2[2]
// LIDs are deliberately not in leaf order: h1=7, h2=3, h3=9, h4=5; switches 1, 2, 4, 6.
constexpr uint64_t kLeaf1 = 0x10, kLeaf2 = 0x11, kSpine1 = 0x20, kSpine2 = 0x21;
constexpr uint64_t kH1 = 0x100, kH2 = 0x101, kH3 = 0x102, kH4 = 0x103;

void connect(Fabric& f, uint64_t a, int pa, uint64_t b, int pb, int width = 4,
             const std::string& speed = "HDR") {
  auto find = [&](uint64_t g) -> Node& {
    for (auto* list : {&f.switches, &f.hosts}) {
      for (auto& n : *list) {
        if (n.guid == g) return n;
      }
    }
    throw std::logic_error("no node");
  };
  for (auto [x, px, y, py] : {std::make_tuple(a, pa, b, pb), std::make_tuple(b, pb, a, pa)}) {
    Node& n = find(x);
    Port p;
    p.number = px;
    p.guid = n.kind == NodeKind::kSwitch ? n.guid : n.guid + 1;
    p.state = "Active";
    p.phys_state = "LinkUp";
    p.width = width;
    p.speed = speed;
    p.remote_guid = y;
    p.remote_port = py;
    n.ports.push_back(p);
  }
}

Fabric smallTree() {
  Fabric f;
  f.source = "test";
  auto sw = [&](const std::string& name, uint64_t guid, uint16_t lid) {
    Node n;
    n.kind = NodeKind::kSwitch;
    n.name = name;
    n.guid = guid;
    n.lid = lid;
    n.num_ports = 4;
    n.lft_top = 9;
    n.lft.assign(10, kNoRoute);
    f.switches.push_back(n);
  };
  auto host = [&](const std::string& name, uint64_t guid) {
    Node n;
    n.kind = NodeKind::kHca;
    n.name = name;
    n.guid = guid;
    n.num_ports = 1;
    f.hosts.push_back(n);
  };
  sw("leaf1", kLeaf1, 1);
  sw("leaf2", kLeaf2, 2);
  sw("spine1", kSpine1, 4);
  sw("spine2", kSpine2, 6);
  host("h1 mlx5_0", kH1);
  host("h2 mlx5_0", kH2);
  host("h3 mlx5_0", kH3);
  host("h4 mlx5_0", kH4);
  connect(f, kLeaf1, 1, kH1, 1);
  connect(f, kLeaf1, 2, kH2, 1);
  connect(f, kLeaf1, 3, kSpine1, 1);
  connect(f, kLeaf1, 4, kSpine2, 1);
  connect(f, kLeaf2, 1, kH3, 1);
  connect(f, kLeaf2, 2, kH4, 1);
  connect(f, kLeaf2, 3, kSpine1, 2);
  connect(f, kLeaf2, 4, kSpine2, 2);
  f.hosts[0].ports[0].lid = 7;
  f.hosts[1].ports[0].lid = 3;
  f.hosts[2].ports[0].lid = 9;
  f.hosts[3].ports[0].lid = 5;
  // leaf1: own hosts down, h3 via spine1, h4 via spine2. leaf2: own hosts down, h1 via spine2,
  // h2 via spine1. Spines: down to the leaf of each host.
  auto& leaf1 = f.switches[0].lft;
  leaf1[7] = 1, leaf1[3] = 2, leaf1[9] = 3, leaf1[5] = 4;
  auto& leaf2 = f.switches[1].lft;
  leaf2[9] = 1, leaf2[5] = 2, leaf2[7] = 4, leaf2[3] = 3;
  for (size_t s : {2, 3}) {
    auto& t = f.switches[s].lft;
    t[7] = 1, t[3] = 1, t[9] = 2, t[5] = 2;
  }
  f.rebuildLinks();
  return f;
}

Endpoint ep(const Fabric& f, const std::string& spec) {
  auto e = findEndpoint(f, spec);
  EXPECT_TRUE(e.ok()) << e.status().toString();
  return e.ok() ? *e : Endpoint{};
}

TEST(FabricModel, LinksAreEachCableOnceFromTheSmallerEnd) {
  Fabric f = smallTree();
  ASSERT_EQ(f.links.size(), 8U);
  for (const auto& l : f.links) {
    EXPECT_LT(std::make_pair(l.a.guid, l.a.port), std::make_pair(l.b.guid, l.b.port));
  }
  EXPECT_EQ(f.routedLftEntries(), 16U);
}

TEST(FabricModel, JsonRoundTripKeepsEveryFact) {
  Fabric f = smallTree();
  nlohmann::json j = toJson(f);
  ASSERT_TRUE(j["switches"].is_array());
  ASSERT_TRUE(j["hosts"].is_array());
  ASSERT_TRUE(j["links"].is_array());
  EXPECT_EQ(j["links"][0]["a"]["guid"], "0x0000000000000010");
  EXPECT_EQ(j["links"][0]["width"], "4x");
  auto back = fabricFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().toString();
  EXPECT_EQ(toJson(*back), j);
  EXPECT_TRUE(diffFabrics(f, *back).empty());
}

TEST(FabricModel, JsonErrorsNameTheField) {
  auto bad = fabricFromJson(nlohmann::json{{"format", "other"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("format"), std::string::npos);
  nlohmann::json j = toJson(smallTree());
  j["hosts"][2]["guid"] = "0xnothex";
  bad = fabricFromJson(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("hosts[2]"), std::string::npos);
}

TEST(FabricPath, FollowsTheTablesNotTheLidOrder) {
  Fabric f = smallTree();
  auto hops = tracePath(f, ep(f, "h1 mlx5_0"), ep(f, "h3 mlx5_0"));
  ASSERT_TRUE(hops.ok()) << hops.status().toString();
  ASSERT_EQ(hops->size(), 3U);
  EXPECT_EQ((*hops)[0].switch_name, "leaf1");
  EXPECT_EQ((*hops)[0].in_port, 1);
  EXPECT_EQ((*hops)[0].out_port, 3);
  EXPECT_EQ((*hops)[1].switch_name, "spine1");
  EXPECT_EQ((*hops)[1].in_port, 1);
  EXPECT_EQ((*hops)[1].out_port, 2);
  EXPECT_EQ((*hops)[2].switch_name, "leaf2");
  EXPECT_EQ((*hops)[2].in_port, 3);
  EXPECT_EQ((*hops)[2].out_port, 1);
  // The way back takes the other spine: leaf2 routes LID 7 up port 4.
  auto back = tracePath(f, ep(f, "h3 mlx5_0"), ep(f, "h1 mlx5_0"));
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->size(), 3U);
  EXPECT_EQ((*back)[1].switch_name, "spine2");
  // Same leaf: one hop.
  auto local = tracePath(f, ep(f, "h1 mlx5_0/1"), ep(f, "0x0000000000000101"));
  ASSERT_TRUE(local.ok());
  ASSERT_EQ(local->size(), 1U);
  EXPECT_EQ((*local)[0].out_port, 2);
}

TEST(FabricPath, MissingEntryDeadLinkAndLoopAreErrorsNamingTheSwitch) {
  Fabric f = smallTree();
  f.switches[2].lft[9] = kNoRoute;  // spine1 lost its entry for h3
  auto r = tracePath(f, ep(f, "h1 mlx5_0"), ep(f, "h3 mlx5_0"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("spine1 has no LFT route for LID 9"), std::string::npos)
      << r.status().message();

  f = smallTree();
  f.switches[2].lft[9] = 1;  // spine1 sends h3's traffic back down to leaf1, which sends it up
  r = tracePath(f, ep(f, "h1 mlx5_0"), ep(f, "h3 mlx5_0"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("loop"), std::string::npos) << r.status().message();

  f = smallTree();
  f.switches[0].lft[9] = 2;  // leaf1 sends h3's LID to h2
  r = tracePath(f, ep(f, "h1 mlx5_0"), ep(f, "h3 mlx5_0"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("to h2 mlx5_0/1"), std::string::npos) << r.status().message();

  f = smallTree();
  for (auto& p : f.switches[0].ports) {
    if (p.number == 3) p.remote_guid = 0;  // leaf1's port 3 lost its link
  }
  r = tracePath(f, ep(f, "h1 mlx5_0"), ep(f, "h3 mlx5_0"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("port 3, which is not linked"), std::string::npos)
      << r.status().message();
}

// The index (built once per fabric for the paths of a whole sweep) answers as the linear
// look-ups do: every node by GUID and name, every port by number, the first of duplicates.
TEST(FabricIndex, AnswersAsTheLinearLookupsAndTracesTheSamePaths) {
  Fabric f = smallTree();
  Node dup = f.hosts[3];  // a second node with h4's GUID and name: the first one wins
  dup.ports[0].lid = 11;
  f.hosts.push_back(dup);
  const FabricIndex ix(f);
  for (const auto* list : {&f.switches, &f.hosts}) {
    for (const Node& n : *list) {
      EXPECT_EQ(ix.node(n.guid), f.nodeByGuid(n.guid)) << n.name;
      EXPECT_EQ(ix.nodeNamed(n.name), f.nodeByName(n.name)) << n.name;
      const FabricIndex::Entry* e = ix.entry(n.guid);
      ASSERT_NE(e, nullptr);
      for (int port = -1; port <= n.num_ports + 2; ++port) {
        EXPECT_EQ(e->port(port), e->node->port(port)) << n.name << " port " << port;
      }
    }
  }
  const Node* h4 = ix.node(kH4);
  ASSERT_NE(h4, nullptr);
  EXPECT_EQ(h4->port(1)->lid, 5);
  EXPECT_EQ(h4, &f.hosts[3]);
  EXPECT_EQ(ix.node(0x999), nullptr);
  EXPECT_EQ(ix.entry(0x999), nullptr);
  EXPECT_EQ(ix.nodeNamed("nobody"), nullptr);
  f.hosts.pop_back();
  const FabricIndex ix2(f);
  for (const auto& a : {"h1 mlx5_0", "h2 mlx5_0", "h3 mlx5_0", "h4 mlx5_0"}) {
    for (const auto& b : {"h1 mlx5_0", "h2 mlx5_0", "h3 mlx5_0", "h4 mlx5_0"}) {
      auto once = tracePath(f, ep(f, a), ep(f, b));
      auto indexed = tracePath(ix2, ep(f, a), ep(f, b));
      ASSERT_TRUE(once.ok() && indexed.ok()) << a << " -> " << b;
      ASSERT_EQ(once->size(), indexed->size());
      for (size_t i = 0; i < once->size(); ++i) {
        EXPECT_EQ((*once)[i].switch_guid, (*indexed)[i].switch_guid);
        EXPECT_EQ((*once)[i].in_port, (*indexed)[i].in_port);
        EXPECT_EQ((*once)[i].out_port, (*indexed)[i].out_port);
      }
    }
  }
}

TEST(FabricPath, UnknownHostIsNotFound) {
  Fabric f = smallTree();
  auto e = findEndpoint(f, "h9");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), Code::kNotFound);
}

TEST(FabricDiff, GoneNarrowerSlowerAndDownLinksNameTheSwitchPort) {
  Fabric before = smallTree();
  Fabric after = smallTree();
  auto edit = [&](uint64_t guid, int port, auto fn) {
    for (auto* list : {&after.switches, &after.hosts}) {
      for (auto& n : *list) {
        for (auto& p : n.ports) {
          if (n.guid == guid && p.number == port) fn(p);
        }
      }
    }
  };
  // leaf1[3] <-> spine1[1] narrower, leaf2[4] <-> spine2[2] slower, leaf1[4] <-> spine2[1] gone,
  // h4's link down.
  for (auto [g, p] : {std::make_pair(kLeaf1, 3), std::make_pair(kSpine1, 1)}) {
    edit(g, p, [](Port& x) { x.width = 1; });
  }
  for (auto [g, p] : {std::make_pair(kLeaf2, 4), std::make_pair(kSpine2, 2)}) {
    edit(g, p, [](Port& x) { x.speed = "EDR"; });
  }
  for (auto [g, p] : {std::make_pair(kLeaf1, 4), std::make_pair(kSpine2, 1)}) {
    edit(g, p, [](Port& x) { x.remote_guid = 0; });
  }
  for (auto [g, p] : {std::make_pair(kLeaf2, 2), std::make_pair(kH4, 1)}) {
    edit(g, p, [](Port& x) { x.state = "Init"; });
  }
  after.rebuildLinks();
  auto findings = diffFabrics(before, after);
  ASSERT_EQ(findings.size(), 4U);
  std::map<std::string, Finding> by_kind;
  for (const auto& x : findings) by_kind[x.kind] = x;
  EXPECT_EQ(by_kind["link_narrower"].switch_name, "leaf1");
  EXPECT_EQ(by_kind["link_narrower"].port, 3);
  EXPECT_NE(by_kind["link_narrower"].message.find("4x -> 1x"), std::string::npos);
  EXPECT_EQ(by_kind["link_slower"].switch_name, "leaf2");
  EXPECT_EQ(by_kind["link_slower"].port, 4);
  EXPECT_NE(by_kind["link_slower"].message.find("HDR -> EDR"), std::string::npos);
  EXPECT_EQ(by_kind["link_gone"].switch_name, "leaf1");
  EXPECT_EQ(by_kind["link_gone"].port, 4);
  EXPECT_EQ(by_kind["link_down"].switch_name, "leaf2");
  EXPECT_EQ(by_kind["link_down"].port, 2);
  // And the other way round, the gone link comes back as new.
  auto back = diffFabrics(after, before);
  bool has_new = false;
  for (const auto& x : back) has_new = has_new || x.kind == "link_new";
  EXPECT_TRUE(has_new);
}

// Tables that send one host's traffic from each other leaf over a down-link of its own (as
// minhop does after a fault): no plan loads both in one round, whatever the leaves allow.
TEST(FabricCover, TablesThatGiveOneHostLinksOfItsOwnRaiseTheLowerBound) {
  Fabric f = gdrmesh::testing::twoLevelTree(3, 4, 3);  // h05..h08 on leaf02; spines on ports 5-7
  auto plain = planCover(f);
  ASSERT_TRUE(plain.ok()) << plain.status().toString();
  EXPECT_EQ(plain->leaf_bound, 1);
  EXPECT_EQ(plain->tables_bound, 1);
  // h05 (LID 95) from leaf01 over spine01 only, from leaf03 over spine02 only; the other hosts
  // of leaf02 (LIDs 94-92) over spine03 from both.
  for (auto& sw : f.switches) {
    if (sw.name == "leaf01") sw.lft[95] = 5;
    if (sw.name == "leaf03") sw.lft[95] = 6;
    for (uint16_t lid : {94, 93, 92}) {
      if (sw.name == "leaf01" || sw.name == "leaf03") sw.lft[lid] = 7;
    }
  }
  auto plan = planCover(f);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  EXPECT_EQ(plan->leaf_bound, 1);
  EXPECT_EQ(plan->tables_bound, 2);  // spine01[2] -> leaf02 and spine02[2] -> leaf02: h05 only
  EXPECT_EQ(plan->lower_bound, 2);
  EXPECT_GE(static_cast<int>(plan->rounds.size()), plan->lower_bound);
  EXPECT_EQ(plan->covered, plan->routable);
}

// Tables that send one leaf's traffic to many hosts over down-links no other leaf uses (as minhop
// does beside a failed cable): the leaf's hosts send one path each a round, so its
// destinations, not the leaves' up-links nor any one destination, set the rounds.
TEST(FabricCover, OneLeafsOwnRoutesToManyHostsRaiseTheLowerBound) {
  Fabric f = gdrmesh::testing::twoLevelTree(3, 4, 4);  // leaf01 h01-h04; spines on ports 5-8
  // leaf01: h01-h04 (LIDs 99-96), leaf02: h05-h08 (95-92), leaf03: h09-h12 (91-88). From
  // leaf01, h06-h08 and h10-h12 each over a spine of their own (02, 03, 04), h05 and h09 over
  // spine01; between leaf02 and leaf03 and to leaf01 everything over spine01. Then
  // spine0{2,3,4} -> leaf02/leaf03 carry only leaf01's traffic, each to one host, and
  // leaf01 -> spine01 only leaf01's, to h05 and h09: 7 destinations for 4 hosts, 2 rounds.
  for (auto& sw : f.switches) {
    if (sw.name == "leaf01") {
      for (uint16_t lid : {95, 91}) sw.lft[lid] = 5;
      for (uint16_t k : {1, 2, 3}) {
        sw.lft[95 - k] = static_cast<uint8_t>(5 + k);
        sw.lft[91 - k] = static_cast<uint8_t>(5 + k);
      }
    }
    if (sw.name == "leaf02" || sw.name == "leaf03") {
      const uint16_t own_first = sw.name == "leaf02" ? 92 : 88;
      for (uint16_t lid = 88; lid <= 99; ++lid) {
        if (lid < own_first || lid > own_first + 3) sw.lft[lid] = 5;
      }
    }
  }
  auto plan = planCover(f);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  EXPECT_EQ(plan->leaf_bound, 1);
  EXPECT_EQ(plan->tables_bound, 1);
  EXPECT_EQ(plan->source_bound, 2);
  EXPECT_EQ(plan->lower_bound, 2);
  EXPECT_NE(plan->source_bound_why.find("leaf01"), std::string::npos) << plan->source_bound_why;
  EXPECT_NE(plan->source_bound_why.find("7 destinations"), std::string::npos)
      << plan->source_bound_why;
  EXPECT_EQ(plan->covered, plan->routable);
  EXPECT_EQ(plan->rounds.size(), 2U);
  // Allowed one round, the plan stops short and lists what it left.
  CoverOptions one_round;
  one_round.max_rounds = 1;
  auto one = planCover(f, one_round);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->rounds.size(), 1U);
  EXPECT_LT(one->covered, one->routable);
  EXPECT_EQ(one->uncovered.size(), one->routable - one->covered);
}

TEST(FabricCover, LoadsEveryDirectedInterSwitchLinkWithDisjointPairs) {
  Fabric f = smallTree();
  auto plan = planCover(f);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  EXPECT_EQ(plan->hosts, 4U);
  EXPECT_EQ(plan->directed_links, 8U);
  EXPECT_EQ(plan->routable, 8U);
  EXPECT_EQ(plan->covered, 8U);
  EXPECT_TRUE(plan->uncovered.empty());
  EXPECT_TRUE(plan->unroutable.empty());
  EXPECT_EQ(plan->lower_bound, 1);  // 2 up-links, 2 hosts a leaf
  ASSERT_GE(plan->rounds.size(), 1U);
  EXPECT_LE(plan->rounds.size(), 2U);
  for (const auto& round : plan->rounds) {
    std::set<std::string> used;
    for (const auto& p : round) {
      EXPECT_TRUE(used.insert(p.a).second) << p.a << " twice in a round";
      EXPECT_TRUE(used.insert(p.b).second) << p.b << " twice in a round";
    }
  }
}

TEST(FabricCover, LinksNoTableRoutesOverAreListedAsUnroutable) {
  Fabric f = smallTree();
  // Every route between the leaves over spine1: spine2's four directed links carry nothing.
  f.switches[0].lft[9] = 3, f.switches[0].lft[5] = 3;
  f.switches[1].lft[7] = 3, f.switches[1].lft[3] = 3;
  auto plan = planCover(f);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->directed_links, 8U);
  EXPECT_EQ(plan->routable, 4U);
  EXPECT_EQ(plan->covered, 4U);
  EXPECT_TRUE(plan->uncovered.empty());
  ASSERT_EQ(plan->unroutable.size(), 4U);
  EXPECT_EQ(plan->unroutable[0], "leaf1[4] -> spine2[1]");
  bool names_spine2 = false;
  for (const auto& u : plan->unroutable) {
    names_spine2 = names_spine2 || u.find("spine2") != std::string::npos;
  }
  EXPECT_TRUE(names_spine2);
}

TEST(FabricCover, ReadsOpenSmsCaOrderAndNamesABadLine) {
  auto order = parseFtreeCaOrder("0x000b\th0769 mlx5_0\n0x0017\th0770 mlx5_0\n\n");
  ASSERT_TRUE(order.ok()) << order.status().toString();
  EXPECT_EQ(*order, (std::vector<uint16_t>{0x0b, 0x17}));
  auto bad = parseFtreeCaOrder("0x000b\th0769 mlx5_0\nh0770 mlx5_0\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().toString().find("line 2"), std::string::npos) << bad.status().toString();
  EXPECT_FALSE(parseFtreeCaOrder("").ok());
}

TEST(FabricCover, NeedsHostsAndTables) {
  Fabric f = smallTree();
  for (auto& s : f.switches) s.lft.assign(s.lft.size(), kNoRoute);
  auto plan = planCover(f);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().fix().find("--no-lfts"), std::string::npos);
}

}  // namespace
}  // namespace gdrmesh::fabric
