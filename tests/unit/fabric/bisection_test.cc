// The bisection planner (common/fabric/bisection.h) on generated fat trees with shortest-path
// LFTs: every pair's path, traced through the tables, crosses a top-level switch; each host is in
// at most one test; the bound is the top-level links' summed rates. The same against OpenSM's
// tables: tests/fabric (fabric_bisection_*).
#include "common/fabric/bisection.h"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <set>

namespace gdrmesh::fabric {
namespace {

// A fat tree as tests/fabric/gen_fat_tree.py builds it: two levels (d leaves of d hosts, d
// spines) or three (the k-ary fat tree). LFTs: for each destination, every switch sends towards
// the destination's leaf along a shortest path, spreading by LID over the equal choices.
class TreeBuilder {
 public:
  Fabric f;

  size_t addSwitch(const std::string& name, int ports) {
    Node n;
    n.kind = NodeKind::kSwitch;
    n.name = name;
    n.guid = 0x1000 + f.switches.size();
    n.num_ports = ports;
    n.lid = next_lid_++;
    f.switches.push_back(n);
    return f.switches.size() - 1;
  }
  void cable(size_t a, int pa, size_t b, int pb, int width = 4) {
    addPort(f.switches[a], pa, f.switches[b].guid, pb, width);
    addPort(f.switches[b], pb, f.switches[a].guid, pa, width);
  }
  void host(size_t leaf, int port) {
    Node h;
    h.kind = NodeKind::kHca;
    h.guid = 0x100000 + f.hosts.size();
    h.name = "h" + std::to_string(f.hosts.size() + 1) + " mlx5_0";
    h.num_ports = 1;
    addPort(h, 1, f.switches[leaf].guid, port, 4);
    h.ports[0].guid = h.guid + 1;
    h.ports[0].lid = next_lid_++;
    addPort(f.switches[leaf], port, h.guid, 1, 4);
    f.hosts.push_back(h);
  }
  // Shortest-path tables (minhop over the switch graph), then the links.
  void route() {
    std::map<uint64_t, size_t> index;
    for (size_t i = 0; i < f.switches.size(); ++i) index[f.switches[i].guid] = i;
    for (auto& s : f.switches) {
      s.lft_top = static_cast<uint16_t>(next_lid_ - 1);
      s.lft.assign(next_lid_, kNoRoute);
    }
    for (const Node& h : f.hosts) {
      const uint16_t lid = h.ports[0].lid;
      const size_t leaf = index[h.ports[0].remote_guid];
      std::vector<int> dist(f.switches.size(), -1);
      std::deque<size_t> q{leaf};
      dist[leaf] = 0;
      while (!q.empty()) {
        const size_t s = q.front();
        q.pop_front();
        for (const Port& p : f.switches[s].ports) {
          auto it = index.find(p.remote_guid);
          if (it != index.end() && dist[it->second] < 0) {
            dist[it->second] = dist[s] + 1;
            q.push_back(it->second);
          }
        }
      }
      f.switches[leaf].lft[lid] = static_cast<uint8_t>(h.ports[0].remote_port);
      for (size_t s = 0; s < f.switches.size(); ++s) {
        if (s == leaf) continue;
        std::vector<int> closer;
        for (const Port& p : f.switches[s].ports) {
          auto it = index.find(p.remote_guid);
          if (it != index.end() && dist[it->second] == dist[s] - 1) closer.push_back(p.number);
        }
        if (!closer.empty()) {
          f.switches[s].lft[lid] = static_cast<uint8_t>(closer[lid % closer.size()]);
        }
      }
    }
    f.rebuildLinks();
  }

 private:
  static void addPort(Node& n, int number, uint64_t remote, int remote_port, int width) {
    Port p;
    p.number = number;
    p.guid = n.guid;
    p.state = "Active";
    p.phys_state = "LinkUp";
    p.width = width;
    p.speed = "HDR";
    p.remote_guid = remote;
    p.remote_port = remote_port;
    n.ports.push_back(p);
  }
  uint16_t next_lid_ = 1;
};

// Two levels: `d` leaves of `hosts_per_leaf` hosts (the last leaf `last_leaf_hosts`), d spines.
Fabric twoLevel(int d, int hosts_per_leaf, int last_leaf_hosts) {
  TreeBuilder t;
  std::vector<size_t> spines, leaves;
  for (int s = 0; s < d; ++s) spines.push_back(t.addSwitch("spine" + std::to_string(s + 1), d));
  for (int l = 0; l < d; ++l) {
    leaves.push_back(t.addSwitch("leaf" + std::to_string(l + 1), 2 * d));
    for (int s = 0; s < d; ++s) t.cable(leaves.back(), d + 1 + s, spines[s], l + 1);
  }
  for (int l = 0; l < d; ++l) {
    const int n = l == d - 1 ? last_leaf_hosts : hosts_per_leaf;
    for (int p = 1; p <= n; ++p) t.host(leaves[l], p);
  }
  t.route();
  return t.f;
}

// Three levels: the k-ary fat tree (k pods of k/2 edge and k/2 aggregation switches, (k/2)^2
// cores, k/2 hosts per edge switch).
Fabric threeLevel(int k) {
  TreeBuilder t;
  const int h = k / 2;
  std::vector<size_t> cores;
  for (int c = 0; c < h * h; ++c) cores.push_back(t.addSwitch("core" + std::to_string(c + 1), k));
  for (int p = 0; p < k; ++p) {
    std::vector<size_t> edges, aggs;
    for (int e = 0; e < h; ++e) {
      edges.push_back(t.addSwitch("p" + std::to_string(p + 1) + "edge" + std::to_string(e + 1), k));
      aggs.push_back(t.addSwitch("p" + std::to_string(p + 1) + "agg" + std::to_string(e + 1), k));
    }
    for (int e = 0; e < h; ++e) {
      for (int g = 0; g < h; ++g) t.cable(edges[e], h + 1 + g, aggs[g], e + 1);
      for (int x = 1; x <= h; ++x) t.host(edges[e], x);
    }
    for (int g = 0; g < h; ++g) {
      for (int c = 0; c < h; ++c) t.cable(aggs[g], h + 1 + c, cores[g * h + c], p + 1);
    }
  }
  t.route();
  return t.f;
}

// Checks what every bisection plan must satisfy: one test per host, each pair's paths (both
// ways, through the LFTs) over a top-level switch, halves disjoint.
void expectCrossesTheTop(const Fabric& f, const BisectionPlan& plan) {
  std::set<std::string> top(plan.top.begin(), plan.top.end());
  std::set<std::string> used;
  std::set<std::string> a(plan.half_a.begin(), plan.half_a.end());
  for (const std::string& b : plan.half_b) EXPECT_EQ(a.count(b), 0U) << b << " in both halves";
  for (const CoverPair& p : plan.pairs) {
    EXPECT_TRUE(used.insert(p.a).second) << p.a << " in two tests";
    EXPECT_TRUE(used.insert(p.b).second) << p.b << " in two tests";
    EXPECT_EQ(a.count(p.a), 1U) << p.a;
    EXPECT_EQ(a.count(p.b), 0U) << p.b;
    auto ea = findEndpoint(f, p.a);
    auto eb = findEndpoint(f, p.b);
    ASSERT_TRUE(ea.ok() && eb.ok());
    for (const auto& [from, to] : {std::make_pair(*ea, *eb), std::make_pair(*eb, *ea)}) {
      auto hops = tracePath(f, from, to);
      ASSERT_TRUE(hops.ok()) << hops.status().toString();
      bool over_top = false;
      for (const Hop& h : *hops) over_top = over_top || top.count(h.switch_name) != 0;
      EXPECT_TRUE(over_top) << from.node->name << " -> " << to.node->name
                            << " stays below the top level";
    }
  }
}

TEST(FabricBisection, TwoLevelsHalvesTheLeavesAcrossTheSpines) {
  const Fabric f = twoLevel(4, 4, 4);  // 16 hosts, 4 leaves, 4 spines
  auto plan = planBisection(f);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  EXPECT_EQ(plan->levels, 2);
  EXPECT_EQ(plan->top.size(), 4U);
  EXPECT_EQ(plan->top.front(), "spine1");
  EXPECT_EQ(plan->pods, 4U);
  EXPECT_EQ(plan->pods_a, 2U);
  EXPECT_EQ(plan->pairs.size(), 8U);  // every host in one test
  EXPECT_TRUE(plan->sitting_out.empty());
  // Two leaves a half, 4 up-links each, 4x HDR = 212.5 Gb/s a link.
  EXPECT_EQ(plan->top_links_a, 8U);
  EXPECT_EQ(plan->top_links_b, 8U);
  EXPECT_DOUBLE_EQ(plan->top_gbps_a, 8 * 4 * 53.125);
  EXPECT_DOUBLE_EQ(plan->bound_gbps, 8 * 4 * 53.125);
  expectCrossesTheTop(f, *plan);
}

TEST(FabricBisection, ThreeLevelsCrossTheCores) {
  const Fabric f = threeLevel(4);  // 16 hosts, 4 pods, 4 cores
  auto plan = planBisection(f);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  EXPECT_EQ(plan->levels, 3);
  EXPECT_EQ(plan->top.size(), 4U);
  EXPECT_EQ(plan->top.front(), "core1");
  EXPECT_EQ(plan->pods, 4U);  // pods of edge and aggregation switches, not edge switches
  EXPECT_EQ(plan->pods_a, 2U);
  EXPECT_EQ(plan->pairs.size(), 8U);
  // Each pod: 2 aggregation switches x 2 cores.
  EXPECT_EQ(plan->top_links_a, 8U);
  EXPECT_DOUBLE_EQ(plan->bound_gbps, 8 * 212.5);
  expectCrossesTheTop(f, *plan);

  const Fabric big = threeLevel(8);  // 128 hosts
  auto p2 = planBisection(big);
  ASSERT_TRUE(p2.ok());
  EXPECT_EQ(p2->pairs.size(), 64U);
  EXPECT_EQ(p2->top_links_a, 64U);  // 4 pods x 4 aggregation switches x 4 cores
  expectCrossesTheTop(big, *p2);
}

TEST(FabricBisection, BoundIsTheSlowerHalfsTopLinksAndAPartialLeafSitsOut) {
  Fabric f = twoLevel(4, 4, 2);  // the last leaf has 2 hosts: 14 in all
  // A 1x up-link on leaf1 (half A): A's top links lose 3 lanes of HDR.
  for (auto& s : f.switches) {
    if (s.name != "leaf1") continue;
    for (auto& p : s.ports) {
      if (p.number == 5) p.width = 1;
    }
  }
  auto plan = planBisection(f);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  // Whole leaves a half, the smaller half as large as it can be: A = leaves 1 and 2 (8 hosts),
  // B = leaves 3 and 4 (6 hosts); 2 of A sit out.
  EXPECT_EQ(plan->half_a.size(), 8U);
  EXPECT_EQ(plan->half_b.size(), 6U);
  EXPECT_EQ(plan->pairs.size(), 6U);
  EXPECT_EQ(plan->sitting_out.size(), 2U);
  EXPECT_DOUBLE_EQ(plan->top_gbps_a, 7 * 212.5 + 53.125);
  EXPECT_DOUBLE_EQ(plan->top_gbps_b, 8 * 212.5);
  EXPECT_DOUBLE_EQ(plan->bound_gbps, 7 * 212.5 + 53.125);
  expectCrossesTheTop(f, *plan);
}

TEST(FabricBisection, OneSwitchOrOneHostIsAnErrorWithTheFix) {
  TreeBuilder t;
  const size_t leaf = t.addSwitch("leaf1", 4);
  t.host(leaf, 1);
  t.route();
  auto one = planBisection(t.f);
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.status().message().find("two or more"), std::string::npos);
  t.host(leaf, 2);
  t.route();
  auto flat = planBisection(t.f);
  ASSERT_FALSE(flat.ok());
  EXPECT_NE(flat.status().message().find("one switch level"), std::string::npos)
      << flat.status().message();
  EXPECT_NE(flat.status().toString().find("all-pairs"), std::string::npos);
}

}  // namespace
}  // namespace gdrmesh::fabric
