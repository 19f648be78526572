// Hand-built fabric snapshots for unit tests (header-only, gdrmesh_test_files): a two-level fat
// tree with its LFTs programmed as an ftree-like subnet manager would, and LIDs deliberately NOT
// in leaf order, so that nothing under test can get away with LID arithmetic. The same code runs
// against real OpenSM tables in tests/fabric (ctest -L fabric).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "common/fabric/fabric.h"

namespace gdrmesh::testing {

// `leaves` leaf switches ("leaf01" ...), each with `hosts_per_leaf` hosts on ports
// 1..hosts_per_leaf ("h01 mlx5_0" ..., numbered across leaves) and one up-link to each of
// `spines` spines ("spine01" ...) on ports hosts_per_leaf+1 ...; spine port l is cabled to leaf
// l. Host k gets LID 100 - k (trees of 90 hosts or more: above the switches' LIDs), descending:
// not leaf order; switches LIDs 1.. Routing: a leaf sends
// a remote host's LID up to spine (lid % spines), a spine down to the host's leaf.
inline fabric::Fabric twoLevelTree(int leaves, int hosts_per_leaf, int spines) {
  using fabric::Node;
  using fabric::NodeKind;
  fabric::Fabric f;
  f.source = "test";
  const int hosts = leaves * hosts_per_leaf;
  // Host LIDs count down from `top` (100 for small trees), above the switches' LIDs.
  const uint16_t top = static_cast<uint16_t>(hosts < 90 ? 100 : hosts + leaves + spines + 1);
  auto leafGuid = [](int l) { return uint64_t{0x1000} + static_cast<uint64_t>(l); };
  auto spineGuid = [](int s) { return uint64_t{0x2000} + static_cast<uint64_t>(s); };
  auto hostGuid = [](int h) { return uint64_t{0x10000} + static_cast<uint64_t>(h) * 2; };
  auto hostLid = [top](int h) { return static_cast<uint16_t>(top - h); };
  auto addPort = [](Node& n, int number, uint64_t guid, uint64_t remote, int remote_port) {
    fabric::Port p;
    p.number = number;
    p.guid = guid;
    p.state = "Active";
    p.phys_state = "LinkUp";
    p.width = 4;
    p.speed = "HDR";
    p.remote_guid = remote;
    p.remote_port = remote_port;
    n.ports.push_back(p);
  };
  char name[64];
  uint16_t next_switch_lid = 1;
  for (int l = 1; l <= leaves; ++l) {
    Node n;
    n.kind = NodeKind::kSwitch;
    std::snprintf(name, sizeof name, "leaf%02d", l);
    n.name = name;
    n.guid = leafGuid(l);
    n.lid = next_switch_lid++;
    n.num_ports = hosts_per_leaf + spines;
    n.lft_top = top;
    n.lft.assign(top + 1, fabric::kNoRoute);
    for (int i = 1; i <= hosts_per_leaf; ++i) {
      const int h = (l - 1) * hosts_per_leaf + i;
      addPort(n, i, n.guid, hostGuid(h), 1);
    }
    for (int s = 1; s <= spines; ++s) addPort(n, hosts_per_leaf + s, n.guid, spineGuid(s), l);
    for (int h = 1; h <= hosts; ++h) {
      const int leaf_of = (h - 1) / hosts_per_leaf + 1;
      n.lft[hostLid(h)] = static_cast<uint8_t>(
          leaf_of == l ? (h - 1) % hosts_per_leaf + 1 : hosts_per_leaf + 1 + hostLid(h) % spines);
    }
    n.lft[n.lid] = 0;
    f.switches.push_back(n);
  }
  for (int s = 1; s <= spines; ++s) {
    Node n;
    n.kind = NodeKind::kSwitch;
    std::snprintf(name, sizeof name, "spine%02d", s);
    n.name = name;
    n.guid = spineGuid(s);
    n.lid = next_switch_lid++;
    n.num_ports = leaves;
    n.lft_top = top;
    n.lft.assign(top + 1, fabric::kNoRoute);
    for (int l = 1; l <= leaves; ++l) addPort(n, l, n.guid, leafGuid(l), hosts_per_leaf + s);
    for (int h = 1; h <= hosts; ++h) {
      n.lft[hostLid(h)] = static_cast<uint8_t>((h - 1) / hosts_per_leaf + 1);
    }
    n.lft[n.lid] = 0;
    f.switches.push_back(n);
  }
  for (int h = 1; h <= hosts; ++h) {
    Node n;
    n.kind = NodeKind::kHca;
    std::snprintf(name, sizeof name, "h%02d mlx5_0", h);
    n.name = name;
    n.guid = hostGuid(h);
    n.num_ports = 1;
    const int l = (h - 1) / hosts_per_leaf + 1;
    addPort(n, 1, n.guid + 1, leafGuid(l), (h - 1) % hosts_per_leaf + 1);
    n.ports.back().lid = hostLid(h);
    f.hosts.push_back(n);
  }
  f.rebuildLinks();
  return f;
}

// The same tree after the subnet manager rerouted it: every leaf sends the remote hosts' LIDs up
// by the next spine's port (spine s+1 for s, the last one wrapping to the first), the rest as
// it was. A changed fabric for tests of paths that are re-read.
inline fabric::Fabric rerouteLeafUplinks(fabric::Fabric f, int hosts_per_leaf, int spines) {
  for (auto& n : f.switches) {
    if (n.name.rfind("leaf", 0) != 0) continue;
    for (auto& e : n.lft) {
      if (e == fabric::kNoRoute || e <= hosts_per_leaf) continue;
      const int up = e - hosts_per_leaf - 1;  // 0-based spine
      e = static_cast<uint8_t>(hosts_per_leaf + 1 + (up + 1) % spines);
    }
  }
  return f;
}

}  // namespace gdrmesh::testing
