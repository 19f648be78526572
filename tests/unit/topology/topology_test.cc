#include "worker/topology/topology.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/temp_dir.h"
#include "worker/topology/pci_path.h"

namespace gdrmesh {
namespace {

std::string fixture(const std::string& name) {
  return std::string(GDRMESH_SYSFS_FIXTURES) + "/" + name;
}

std::vector<std::vector<std::string>> classes(const TopologyMatrix& m) {
  std::vector<std::vector<std::string>> out;
  for (const auto& row : m.gpu_nic) {
    out.emplace_back();
    for (PathClass c : row) out.back().push_back(toString(c));
  }
  return out;
}

PciPath path(const std::string& p, int numa = 0) {
  auto r = parsePciDevicePath(p);
  EXPECT_TRUE(r.ok()) << r.status().toString();
  PciPath out = r.ok() ? *r : PciPath{};
  out.numa_node = numa;
  return out;
}

TEST(PciPath, ParsesHostBridgeAndChain) {
  PciPath p = path("/sys/devices/pci0000:16/0000:16:00.0/0000:17:00.0/0000:18:04.0/0000:19:00.0");
  EXPECT_EQ(p.host_bridge, "/sys/devices/pci0000:16");
  EXPECT_EQ(p.bus_id, "0000:19:00.0");
  EXPECT_EQ(p.bridges, (std::vector<std::string>{"0000:16:00.0", "0000:17:00.0", "0000:18:04.0"}));
}

TEST(PciPath, RejectsNonPciPaths) {
  EXPECT_FALSE(parsePciDevicePath("/sys/devices/virtual/infiniband/rxe0").ok());
  EXPECT_FALSE(parsePciDevicePath("/sys/devices/pci0000:00").ok());
  EXPECT_FALSE(parsePciDevicePath("/sys/devices/pci0000:00/0000:00:01.0/infiniband").ok());
}

TEST(PciPath, VmdNestedHostBridgeIsItsOwnRootComplex) {
  PciPath vmd =
      path("/sys/devices/pci0000:00/0000:00:0e.0/pci10000:e0/10000:e0:1d.0/10000:e1:00.0");
  PciPath direct = path("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0");
  EXPECT_EQ(vmd.host_bridge, "/sys/devices/pci0000:00/0000:00:0e.0/pci10000:e0");
  EXPECT_EQ(vmd.bus_id, "10000:e1:00.0");
  EXPECT_EQ(classifyPath(vmd, direct), PathClass::kNODE);
}

TEST(PciPath, ClassRules) {
  const std::string hb = "/sys/devices/pci0000:00/0000:00:01.0";
  PciPath sw_a = path(hb + "/0000:01:00.0/0000:02:00.0/0000:03:00.0");
  PciPath sw_b = path(hb + "/0000:01:00.0/0000:02:01.0/0000:04:00.0");
  PciPath nested = path(hb + "/0000:01:00.0/0000:02:02.0/0000:05:00.0/0000:06:00.0/0000:07:00.0");
  PciPath under_l1 = path(hb + "/0000:01:00.0/0000:02:03.0/0000:08:00.0");
  PciPath rp2 = path("/sys/devices/pci0000:00/0000:00:02.0/0000:09:00.0");
  PciPath fn0 = path("/sys/devices/pci0000:00/0000:00:03.0/0000:0a:00.0");
  PciPath fn1 = path("/sys/devices/pci0000:00/0000:00:03.0/0000:0a:00.1");
  PciPath other_hb_same_numa = path("/sys/devices/pci0000:40/0000:40:01.0/0000:41:00.0", 0);
  PciPath other_numa = path("/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0", 1);
  PciPath other_domain = path(
      "/sys/devices/pci0001:00/0001:00:01.0/0001:01:00.0/0001:02:01.0/"
      "0001:04:00.0",
      0);

  EXPECT_EQ(classifyPath(sw_a, sw_a), PathClass::kX);
  EXPECT_EQ(classifyPath(sw_a, sw_b), PathClass::kPIX);
  EXPECT_EQ(classifyPath(fn0, fn1), PathClass::kPIX);
  EXPECT_EQ(classifyPath(sw_a, nested), PathClass::kPXB);
  EXPECT_EQ(classifyPath(nested, under_l1), PathClass::kPXB);
  EXPECT_EQ(classifyPath(sw_a, under_l1), PathClass::kPIX);
  EXPECT_EQ(classifyPath(sw_a, rp2), PathClass::kPHB);
  EXPECT_EQ(classifyPath(sw_a, other_hb_same_numa), PathClass::kNODE);
  EXPECT_EQ(classifyPath(sw_a, other_numa), PathClass::kSYS);
  // Same bus numbers as sw_b, other domain: never the same switch.
  EXPECT_EQ(classifyPath(sw_a, other_domain), PathClass::kNODE);
  EXPECT_EQ(bridgesBetween(sw_a, sw_b),
            (std::vector<std::string>{"0000:01:00.0", "0000:02:00.0", "0000:02:01.0"}));
  EXPECT_TRUE(bridgesBetween(sw_a, other_numa).empty());
  EXPECT_LT(pathHops(sw_a, sw_b), pathHops(sw_a, nested));
}

TEST(Topology, TwoSocketPhbAndSys) {
  auto m = discoverTopology(fixture("two_socket_4gpu_2nic"));
  ASSERT_TRUE(m.ok()) << m.status().toString();
  ASSERT_EQ(m->gpus.size(), 4u);
  EXPECT_EQ(m->gpus[0].pci_bus_id, "0000:01:00.0");
  EXPECT_EQ(m->gpus[3].pci_bus_id, "0000:82:00.0");
  EXPECT_EQ(classes(*m), (std::vector<std::vector<std::string>>{
                             {"PHB", "SYS"}, {"PHB", "SYS"}, {"SYS", "PHB"}, {"SYS", "PHB"}}));
  EXPECT_EQ(m->gpus[0].numa_node, 0);
  EXPECT_EQ(m->gpus[2].numa_node, 1);
  EXPECT_EQ(m->gpus[0].cpu_affinity, "0-15,32-47");
  EXPECT_EQ(m->gpus[3].cpu_affinity, "16-31,48-63");
  EXPECT_EQ(nearestNic(*m, 0), "mlx5_0");
  EXPECT_EQ(nearestNic(*m, 3), "mlx5_1");
  EXPECT_EQ(m->gpus[1].best_class, PathClass::kPHB);
  EXPECT_EQ(toString(m->gpu_gpu[0][1]), std::string("PHB"));
  EXPECT_EQ(toString(m->gpu_gpu[0][2]), std::string("SYS"));
  EXPECT_EQ(toString(m->nic_nic[0][1]), std::string("SYS"));
  EXPECT_TRUE(m->warnings.empty());
}

TEST(Topology, EightGpuSwitchesEveryPair) {
  auto m = discoverTopology(fixture("switch_8gpu_8nic"));
  ASSERT_TRUE(m.ok()) << m.status().toString();
  ASSERT_EQ(m->gpus.size(), 8u);
  ASSERT_EQ(m->nics.size(), 8u);
  const std::vector<std::vector<std::string>> expected = {
      {"PIX", "PXB", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS"},
      {"PXB", "PIX", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS"},
      {"NODE", "NODE", "PIX", "PXB", "SYS", "SYS", "SYS", "SYS"},
      {"NODE", "NODE", "PXB", "PIX", "SYS", "SYS", "SYS", "SYS"},
      {"SYS", "SYS", "SYS", "SYS", "PIX", "PXB", "NODE", "NODE"},
      {"SYS", "SYS", "SYS", "SYS", "PXB", "PIX", "NODE", "NODE"},
      {"SYS", "SYS", "SYS", "SYS", "NODE", "NODE", "PIX", "PXB"},
      {"SYS", "SYS", "SYS", "SYS", "NODE", "NODE", "PXB", "PIX"},
  };
  EXPECT_EQ(classes(*m), expected);
  for (int g = 0; g < 8; ++g) {
    EXPECT_EQ(nearestNic(*m, g), "mlx5_" + std::to_string(g));
    EXPECT_EQ(m->gpus[static_cast<size_t>(g)].nearest_nics.size(), 1u);
    EXPECT_EQ(m->gpus[static_cast<size_t>(g)].best_class, PathClass::kPIX);
  }
  EXPECT_EQ(m->gpu_nic_bridges[0][0],
            (std::vector<std::string>{"0000:13:00.0", "0000:14:00.0", "0000:14:04.0"}));
  EXPECT_EQ(classOf(*m, "00000000:15:00.0", "mlx5_0"), "PIX");
  EXPECT_EQ(classOf(*m, "0000:B9:00.0", "mlx5_4"), "NODE");
  EXPECT_EQ(classOf(*m, "0000:B9:00.0", "mlx5_0"), "SYS");
  EXPECT_EQ(classOf(*m, "0000:b9:00.0", "mlx5_9"), "");
  EXPECT_EQ(toString(m->gpu_gpu[0][1]), std::string("PXB"));
  EXPECT_EQ(toString(m->gpu_gpu[0][2]), std::string("NODE"));
}

TEST(Topology, TwoDomainsWithCollidingBusNumbers) {
  auto m = discoverTopology(fixture("two_domains"));
  ASSERT_TRUE(m.ok()) << m.status().toString();
  ASSERT_EQ(m->gpus.size(), 2u);
  EXPECT_EQ(m->gpus[0].pci_bus_id, "0000:03:00.0");
  EXPECT_EQ(m->gpus[1].pci_bus_id, "0001:03:00.0");
  ASSERT_EQ(m->nics.size(), 2u);
  EXPECT_EQ(m->nics[1].pci_bus_id, "0001:04:00.0");
  EXPECT_EQ(classes(*m), (std::vector<std::vector<std::string>>{{"PIX", "NODE"}, {"NODE", "PIX"}}));
  EXPECT_EQ(nearestNic(*m, 1), "mlx5_1");
}

TEST(Topology, SoftRoceVmHasNoGpusAndNaNic) {
  auto m = discoverTopology(fixture("softroce_vm"));
  ASSERT_TRUE(m.ok()) << m.status().toString();
  EXPECT_TRUE(m->gpus.empty());  // the QEMU VGA device is not NVIDIA
  ASSERT_EQ(m->nics.size(), 1u);
  EXPECT_EQ(m->nics[0].name, "rxe0");
  EXPECT_EQ(toString(m->nic_nic[0][0]), std::string("X"));
  // With a GPU given by the CUDA inventory that sysfs does not show: N/A, and a warning.
  auto given = discoverTopology(fixture("softroce_vm"), {"0000:00:05.0"});
  ASSERT_TRUE(given.ok());
  ASSERT_EQ(given->gpus.size(), 1u);
  EXPECT_EQ(classes(*given), (std::vector<std::vector<std::string>>{{"N/A"}}));
  EXPECT_EQ(nearestNic(*given, 0), "");
  EXPECT_EQ(given->warnings.size(), 1u);
}

TEST(Topology, GivenGpuListKeepsCudaOrder) {
  auto m = discoverTopology(fixture("switch_8gpu_8nic"), {"00000000:B9:00.0", "0000:15:00.0"});
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->gpus.size(), 2u);
  EXPECT_EQ(m->gpus[0].pci_bus_id, "0000:b9:00.0");
  EXPECT_EQ(nearestNic(*m, 0), "mlx5_7");
  EXPECT_EQ(nearestNic(*m, 1), "mlx5_0");
  EXPECT_EQ(m->gpus[0].numa_node, 1);
}

// A machine with no GPUs and no RDMA NICs, as an empty tree (the live host's case is in
// tests/host/live, label `host`).
TEST(Topology, EmptyTreeHasNoDevices) {
  testing::TempDir dir;
  ASSERT_TRUE(dir.ok());
  auto m = discoverTopology(dir.path());
  ASSERT_TRUE(m.ok()) << m.status().toString();
  EXPECT_TRUE(m->gpus.empty());
  EXPECT_TRUE(m->nics.empty());
  EXPECT_EQ(renderMatrix(*m), "No GPUs and no RDMA NICs found.\n");
  EXPECT_TRUE(toJson(*m)["pairs"].empty());
}

TEST(Topology, JsonCarriesPairsAndNearest) {
  auto m = discoverTopology(fixture("two_domains"));
  ASSERT_TRUE(m.ok());
  nlohmann::json j = toJson(*m);
  ASSERT_EQ(j["pairs"].size(), 4u);
  EXPECT_EQ(j["pairs"][1]["gpu_pci"], "0000:03:00.0");
  EXPECT_EQ(j["pairs"][1]["nic"], "mlx5_1");
  EXPECT_EQ(j["pairs"][1]["class"], "NODE");
  EXPECT_EQ(j["gpus"][1]["nearest_nics"][0], "mlx5_1");
  EXPECT_EQ(j["gpu_nic"][0][0], "PIX");
  EXPECT_EQ(j["nics"][0]["pci_bus_id"], "0000:04:00.0");
}

TEST(Topology, RenderedMatrixTwoSocket) {
  auto m = discoverTopology(fixture("two_socket_4gpu_2nic"));
  ASSERT_TRUE(m.ok());
  // clang-format off
  const std::string expected = R"(        GPU0    GPU1    GPU2    GPU3    NIC0    NIC1    CPU Affinity    NUMA Affinity
GPU0     X      PHB     SYS     SYS     PHB     SYS     0-15,32-47      0
GPU1    PHB      X      SYS     SYS     PHB     SYS     0-15,32-47      0
GPU2    SYS     SYS      X      PHB     SYS     PHB     16-31,48-63     1
GPU3    SYS     SYS     PHB      X      SYS     PHB     16-31,48-63     1
NIC0    PHB     PHB     SYS     SYS      X      SYS
NIC1    SYS     SYS     PHB     PHB     SYS      X

Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  N/A  = No PCIe path (software device, or device not found in sysfs)
  GPU-GPU cells show the PCIe path; NVLink (NV#) is not visible in sysfs.

NIC Legend:

  NIC0: mlx5_0 (0000:03:00.0)
  NIC1: mlx5_1 (0000:83:00.0)
)";
  // clang-format on
  EXPECT_EQ(renderMatrix(*m), expected);
}

}  // namespace
}  // namespace gdrmesh
