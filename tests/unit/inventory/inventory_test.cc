#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "worker/inventory/discover.h"
#include "worker/inventory/sysfs.h"

namespace gdrmesh {
namespace {

std::string fixture(const std::string& name) {
  return std::string(GDRMESH_SYSFS_FIXTURES) + "/" + name;
}

TEST(InventoryParse, PortStateStripsNumber) {
  EXPECT_EQ(parsePortState("4: ACTIVE\n"), "ACTIVE");
  EXPECT_EQ(parsePortState("1: DOWN"), "DOWN");
  EXPECT_EQ(parsePortState("ACTIVE"), "ACTIVE");
}

TEST(InventoryParse, Rate) {
  EXPECT_DOUBLE_EQ(*parseRateGbps("100 Gb/sec (4X EDR)"), 100.0);
  EXPECT_DOUBLE_EQ(*parseRateGbps("2.5 Gb/sec (1X SDR)\n"), 2.5);
  EXPECT_DOUBLE_EQ(*parseRateGbps("400 Gb/sec (4X NDR)"), 400.0);
  EXPECT_FALSE(parseRateGbps("").has_value());
  EXPECT_FALSE(parseRateGbps("fast").has_value());
}

TEST(InventoryParse, RoceMtu) {
  EXPECT_EQ(roceMtuForNetdevMtu(1500), 1024);
  EXPECT_EQ(roceMtuForNetdevMtu(9000), 4096);
  EXPECT_EQ(roceMtuForNetdevMtu(4200), 4096);
  EXPECT_EQ(roceMtuForNetdevMtu(4191), 2048);
  EXPECT_EQ(roceMtuForNetdevMtu(2144), 2048);
  EXPECT_EQ(roceMtuForNetdevMtu(2143), 1024);
  EXPECT_EQ(roceMtuForNetdevMtu(300), 0);
}

TEST(InventoryParse, NormalizeBusId) {
  EXPECT_EQ(normalizeBusId("00000000:1B:00.0"), "0000:1b:00.0");
  EXPECT_EQ(normalizeBusId("0000:1b:00.0"), "0000:1b:00.0");
  EXPECT_EQ(normalizeBusId("1B:00.0"), "0000:1b:00.0");
  EXPECT_EQ(normalizeBusId("0001:03:00.0"), "0001:03:00.0");
  EXPECT_EQ(normalizeBusId("10000:e1:00.0"), "10000:e1:00.0");
}

TEST(Sysfs, ResolveStaysInsideRoot) {
  const std::string root = fixture("switch_8gpu_8nic");
  auto p = sysfs::resolve(root, "/sys/class/infiniband/mlx5_0/device");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(*p,
            "/sys/devices/pci0000:10/0000:10:01.1/0000:11:00.0/0000:12:00.0/0000:13:00.0/"
            "0000:14:04.0/0000:16:00.0");
  EXPECT_FALSE(sysfs::resolve(root, "/sys/class/infiniband/mlx9_9").has_value());
}

TEST(Inventory, TwoSocketIbAndRoce) {
  auto nics = discoverNics(fixture("two_socket_4gpu_2nic"));
  ASSERT_TRUE(nics.ok()) << nics.status().toString();
  ASSERT_EQ(nics->size(), 2u);
  const Nic& ib = (*nics)[0];
  EXPECT_EQ(ib.name, "mlx5_0");
  EXPECT_EQ(ib.pci_bus_id, "0000:03:00.0");
  EXPECT_EQ(ib.numa_node, 0);
  EXPECT_EQ(ib.node_guid, "0c42:a103:0003:0001");
  EXPECT_EQ(ib.fw_version, "28.39.1002");
  ASSERT_EQ(ib.ports.size(), 1u);
  EXPECT_EQ(ib.ports[0].port, 1);
  EXPECT_EQ(ib.ports[0].state, "ACTIVE");
  EXPECT_EQ(ib.ports[0].link_layer, "InfiniBand");
  EXPECT_DOUBLE_EQ(ib.ports[0].rate_gbps, 100.0);
  EXPECT_EQ(ib.ports[0].lid, 0x12u);
  EXPECT_EQ(ib.ports[0].active_mtu, 0);    // IB MTU is not in sysfs
  ASSERT_EQ(ib.ports[0].gids.size(), 1u);  // the two all-zero slots are skipped
  EXPECT_EQ(ib.ports[0].gids[0].type, "IB");
  EXPECT_EQ(ib.ports[0].gids[0].gid, "fe80:0000:0000:0000:0c42:a103:0003:0001");

  const Nic& roce = (*nics)[1];
  EXPECT_EQ(roce.name, "mlx5_1");
  EXPECT_EQ(roce.pci_bus_id, "0000:83:00.0");
  EXPECT_EQ(roce.numa_node, 1);
  ASSERT_EQ(roce.ports.size(), 1u);
  const NicPort& p = roce.ports[0];
  EXPECT_EQ(p.link_layer, "Ethernet");
  EXPECT_EQ(p.netdev, "ens3f0");
  EXPECT_EQ(p.active_mtu, 4096);
  EXPECT_EQ(p.lid, 0u);
  ASSERT_EQ(p.gids.size(), 4u);
  EXPECT_EQ(p.gids[0].type, "RoCE v1");
  EXPECT_EQ(p.gids[1].type, "RoCE v2");
  EXPECT_EQ(p.gids[3].index, 3);
  EXPECT_EQ(p.gids[3].gid, "0000:0000:0000:0000:0000:ffff:0a00:0101");
}

TEST(Inventory, SoftRoceVmHasNoPciDevice) {
  auto nics = discoverNics(fixture("softroce_vm"));
  ASSERT_TRUE(nics.ok()) << nics.status().toString();
  ASSERT_EQ(nics->size(), 1u);
  const Nic& rxe = (*nics)[0];
  EXPECT_EQ(rxe.name, "rxe0");
  EXPECT_EQ(rxe.pci_bus_id, "");
  EXPECT_EQ(rxe.numa_node, -1);
  ASSERT_EQ(rxe.ports.size(), 1u);
  EXPECT_EQ(rxe.ports[0].netdev, "dummy0");
  EXPECT_EQ(rxe.ports[0].active_mtu, 1024);
  EXPECT_DOUBLE_EQ(rxe.ports[0].rate_gbps, 10.0);
  ASSERT_EQ(rxe.ports[0].gids.size(), 2u);
  EXPECT_EQ(rxe.ports[0].gids[1].type, "RoCE v2");
}

TEST(Inventory, EightNicsSortedWithBusIds) {
  auto nics = discoverNics(fixture("switch_8gpu_8nic"));
  ASSERT_TRUE(nics.ok());
  ASSERT_EQ(nics->size(), 8u);
  const char* expected[] = {"0000:16:00.0", "0000:1a:00.0", "0000:36:00.0", "0000:3a:00.0",
                            "0000:96:00.0", "0000:9a:00.0", "0000:b6:00.0", "0000:ba:00.0"};
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ((*nics)[i].name, "mlx5_" + std::to_string(i));
    EXPECT_EQ((*nics)[i].pci_bus_id, expected[i]);
    EXPECT_EQ((*nics)[i].numa_node, i < 4 ? 0 : 1);
    EXPECT_DOUBLE_EQ((*nics)[i].ports.at(0).rate_gbps, 400.0);
  }
}

TEST(Inventory, PortDownVariant) {
  auto nics = discoverNics(fixture("switch_8gpu_8nic_port_down"));
  ASSERT_TRUE(nics.ok());
  EXPECT_EQ((*nics)[5].ports.at(0).state, "DOWN");
  EXPECT_EQ((*nics)[4].ports.at(0).state, "ACTIVE");
}

TEST(Inventory, MissingClassDirIsEmptyNotError) {
  auto nics = discoverNics(fixture("does_not_exist"));
  ASSERT_TRUE(nics.ok());
  EXPECT_TRUE(nics->empty());
}

TEST(Inventory, LiveHostDiscoveryIsClean) {
  // This machine has no RDMA devices; a host with some must still answer without error.
  auto nics = discoverNics("/");
  ASSERT_TRUE(nics.ok()) << nics.status().toString();
  for (const Nic& n : *nics) EXPECT_FALSE(n.name.empty());
  EXPECT_FALSE(hostName().empty());
}

TEST(Inventory, RdmaCoreVersionFromLibraryName) {
  EXPECT_EQ(rdmaCoreVersion(fixture("switch_8gpu_8nic")), "50.0");
  EXPECT_EQ(rdmaCoreVersion(fixture("softroce_vm")), "44.0");
  EXPECT_EQ(rdmaCoreVersion(fixture("does_not_exist")), "");
}

// Kernel release and NVIDIA driver version under an injected root: what the acceptance
// report shows for every host.
TEST(Inventory, KernelReleaseAndNvidiaDriverVersion) {
  const std::string root = ::testing::TempDir() + "/inv_versions";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root + "/proc/sys/kernel");
  std::ofstream(root + "/proc/sys/kernel/osrelease") << "6.1.0-18-amd64\n";
  EXPECT_EQ(kernelRelease(root), "6.1.0-18-amd64");
  EXPECT_EQ(nvidiaDriverVersion(root), "") << "no module loaded";

  // /proc/driver/nvidia/version only (older modules have no sysfs version file).
  std::filesystem::create_directories(root + "/proc/driver/nvidia");
  std::ofstream(root + "/proc/driver/nvidia/version")
      << "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.08  Tue Mar  5 22:42:15 UTC "
         "2024\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";
  EXPECT_EQ(nvidiaDriverVersion(root), "535.161.08");
  // The module's sysfs version wins.
  std::filesystem::create_directories(root + "/sys/module/nvidia");
  std::ofstream(root + "/sys/module/nvidia/version") << "550.54.15\n";
  EXPECT_EQ(nvidiaDriverVersion(root), "550.54.15");

  EXPECT_EQ(kernelRelease(fixture("does_not_exist")), "");
  EXPECT_EQ(parseNvrmVersion("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  "
                             "550.90.07  Release Build\n"),
            "550.90.07");
  EXPECT_EQ(parseNvrmVersion("garbage"), "");
  EXPECT_EQ(parseNvrmVersion("NVRM version: no number here\nKernel Module 1.2"), "");
}

}  // namespace
}  // namespace gdrmesh
