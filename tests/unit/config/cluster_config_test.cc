// ClusterConfig::classOf / thresholdsFor: first matching class wins, globs and labels both
// must match, unset class thresholds inherit the global ones.
#include "coordinator/orchestrator/cluster_config.h"

#include <gtest/gtest.h>

namespace gdrmesh {
namespace {

TEST(ClusterConfig, FirstMatchingClassWinsAndInheritsGlobalThresholds) {
  ClusterConfig c;
  c.thresholds.bandwidth_gbps_min = 25;
  c.thresholds.latency_us_max = 10;
  HostClass ndr;
  ndr.name = "ndr";
  ndr.match = "gpu-a[0-9]*";
  ndr.thresholds.bandwidth_gbps_min = 380;
  HostClass labelled;
  labelled.name = "labelled";
  labelled.labels = {{"sku", "hdr"}};
  labelled.thresholds.latency_us_max = 4;
  HostClass any;
  any.name = "any";
  c.host_classes = {ndr, labelled, any};

  EXPECT_EQ(c.classOf("gpu-a12", {{"sku", "hdr"}})->name, "ndr");
  EXPECT_EQ(c.classOf("gpu-b1", {{"sku", "hdr"}})->name, "labelled");
  EXPECT_EQ(c.classOf("gpu-b1", {{"sku", "ndr"}})->name, "any");
  const Thresholds t = c.thresholdsFor("gpu-a1", {});
  EXPECT_EQ(t.bandwidth_gbps_min, 380.0);
  EXPECT_EQ(t.latency_us_max, 10.0);
  EXPECT_EQ(c.thresholdsFor("gpu-b1", {{"sku", "hdr"}}).latency_us_max, 4.0);
  c.host_classes.pop_back();
  EXPECT_EQ(c.classOf("cpu-1", {}), nullptr);
  EXPECT_EQ(c.thresholdsFor("cpu-1", {}).bandwidth_gbps_min, 25.0);
}

TEST(ClusterConfig, AcceptancePreflightFailsAHostWithLessThanItsClassExpects) {
  ClusterConfig c;
  HostClass gpu;
  gpu.name = "gpu-node";
  gpu.match = "gpu-*";
  gpu.expect.gpus = 8;
  gpu.expect.nics = 2;
  gpu.expect.nic_rate_gbps = 400;
  gpu.expect.transports = {"verbs"};
  c.host_classes.push_back(gpu);

  Inventory bare;  // a GPU host that shows no GPU and no NIC
  bare.notes = {"verbs: no RDMA device found"};
  auto checks = checkExpectedInventory(c, "gpu-7", {}, bare);
  ASSERT_EQ(checks.size(), 4u);
  for (const auto& k : checks) EXPECT_EQ(k.status, "FAIL") << k.id << ": " << k.detail;
  EXPECT_EQ(checks[0].detail, "0 of 8 expected GPUs visible (host class 'gpu-node')");
  EXPECT_NE(checks[3].detail.find("no RDMA device found"), std::string::npos) << checks[3].detail;

  Inventory full;
  for (int i = 0; i < 8; ++i) full.gpus.push_back(Gpu{});
  for (int i = 0; i < 2; ++i) {
    Nic n;
    n.name = "mlx5_" + std::to_string(i);
    NicPort p;
    p.state = "ACTIVE";
    p.rate_gbps = 400;
    n.ports.push_back(p);
    full.nics.push_back(n);
  }
  full.transports = {"emulated", "verbs"};
  for (const auto& k : checkExpectedInventory(c, "gpu-7", {}, full)) {
    EXPECT_EQ(k.status, "PASS") << k.id << ": " << k.detail;
  }
  full.nics[1].ports[0].rate_gbps = 200;  // a degraded link
  auto degraded = checkExpectedInventory(c, "gpu-7", {}, full);
  EXPECT_EQ(degraded[2].id, "expect.nic_rate");
  EXPECT_EQ(degraded[2].status, "FAIL");
  EXPECT_NE(degraded[2].detail.find("mlx5_1/1 ACTIVE 200 Gb/s"), std::string::npos)
      << degraded[2].detail;

  // No class matches: said so, never a silent pass.
  auto none = checkExpectedInventory(c, "cpu-1", {}, full);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].status, "UNKNOWN");
}

// Issue #23: the coordinator checks a registration against its host class, so that a worker
// cannot raise the bound on its own figures by claiming a faster port (or none).
TEST(ClusterConfig, ARegistrationThatContradictsItsClassIsFlaggedAndItsRateIsTheClasss) {
  ClusterConfig c;
  HostClass ndr;
  ndr.name = "ndr";
  ndr.match = "gpu-*";
  ndr.expect.gpus = 8;
  ndr.expect.nics = 1;
  ndr.expect.nic_rate_gbps = 400;
  c.host_classes.push_back(ndr);
  Inventory inv;
  for (int i = 0; i < 8; ++i) inv.gpus.push_back(Gpu{});
  Nic n;
  n.name = "mlx5_0";
  NicPort p;
  p.state = "ACTIVE";
  p.rate_gbps = 400;
  n.ports.push_back(p);
  inv.nics.push_back(n);
  double rate = -1;
  EXPECT_TRUE(registrationFindings(c, "gpu-1", {}, inv, &rate).empty());
  EXPECT_EQ(rate, 400);

  Inventory rogue = inv;
  rogue.nics[0].ports[0].rate_gbps = 1600;
  rogue.gpus.resize(16);
  Nic portless;
  portless.name = "mlx5_1";
  rogue.nics.push_back(portless);
  auto f = registrationFindings(c, "gpu-1", {}, rogue, &rate);
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0], "inventory.nics: 2 registered (host class 'ndr' expects 1)");
  EXPECT_EQ(f[1], "inventory.gpus: 16 registered (host class 'ndr' expects 8)");
  EXPECT_EQ(f[2],
            "inventory.nics[mlx5_0].ports[1].rate_gbps: 1600 registered (host class 'ndr' "
            "expects 400; figures are bounded by that)");
  EXPECT_EQ(f[3],
            "inventory.nics[mlx5_1].ports: none registered (host class 'ndr' expects 400 "
            "Gb/s ports)");
  EXPECT_EQ(rate, 400);

  // No class: nothing to contradict, and the registered rate bounds.
  EXPECT_TRUE(registrationFindings(c, "cpu-1", {}, rogue, &rate).empty());
  EXPECT_EQ(rate, 0);
}

}  // namespace
}  // namespace gdrmesh
