#include "worker/doctor/doctor.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "worker/doctor/pci_config.h"
#include "worker/topology/topology.h"

namespace gdrmesh {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

std::string fixture(const std::string& name) {
  return std::string(GDRMESH_SYSFS_FIXTURES) + "/" + name;
}

// The CUDA inventory a worker would report for the GPUs of a fixture.
std::vector<Gpu> gpusOf(const std::string& root, uint64_t memory, bool dmabuf) {
  std::vector<Gpu> gpus;
  int i = 0;
  for (const std::string& bus : discoverGpuBusIds(root)) {
    Gpu g;
    g.index = i++;
    g.pci_bus_id = bus;
    g.memory_bytes = memory;
    g.dma_buf_supported = dmabuf;
    g.gpu_direct_rdma_supported = true;
    gpus.push_back(g);
  }
  return gpus;
}

DoctorInput inputFor(const std::string& name, uint64_t memory = 80 * kGiB, bool dmabuf = true) {
  DoctorInput in;
  in.root = fixture(name);
  in.gpus = gpusOf(in.root, memory, dmabuf);
  in.memlock = MemlockLimit{};
  in.cuda_driver_version = "13.0";
  in.is_root = true;
  return in;
}

const CheckResult& get(const std::vector<CheckResult>& rs, const std::string& id) {
  for (const auto& r : rs) {
    if (r.id == id) return r;
  }
  static CheckResult missing;
  ADD_FAILURE() << "no check " << id;
  return missing;
}

// results must be an lvalue (the check is looked up by reference).
#define EXPECT_CHECK(results, id, st, text)                             \
  do {                                                                  \
    const auto& rs_ = (results);                                        \
    const CheckResult& r_ = get(rs_, id);                               \
    EXPECT_EQ(r_.status, st) << toString(r_);                           \
    EXPECT_NE(r_.detail.find(text), std::string::npos) << toString(r_); \
  } while (0)

TEST(Doctor, HealthyEightGpuHostPassesEverything) {
  auto rs = runChecks(inputFor("switch_8gpu_8nic"));
  ASSERT_EQ(rs.size(), 15u);
  for (const auto& r : rs) {
    EXPECT_EQ(r.status, CheckStatus::kPass) << toString(r);
    EXPECT_TRUE(r.remediation.empty()) << toString(r);
  }
  EXPECT_EQ(worstStatus(rs), CheckStatus::kPass);
  EXPECT_CHECK(rs, "pcie.acs", CheckStatus::kPass, "36 bridges");
  EXPECT_CHECK(rs, "iommu.mode", CheckStatus::kPass, "passthrough (identity) for all 16");
  EXPECT_CHECK(rs, "topo.gpu_nic", CheckStatus::kPass, "GPU7->mlx5_7 PIX");
  EXPECT_CHECK(rs, "driver.nvidia", CheckStatus::kPass, "nvidia 580.65.06, CUDA driver 13.0");
  EXPECT_CHECK(rs, "rdma_core.version", CheckStatus::kPass, "rdma-core 50.0");
  EXPECT_CHECK(rs, "gpudirect.dmabuf", CheckStatus::kPass, "all 8 GPUs");
}

TEST(Doctor, CheckIdsInFixedOrder) {
  auto rs = runChecks(inputFor("switch_8gpu_8nic"));
  const std::vector<std::string> ids = {
      "gpudirect.peermem", "gpudirect.dmabuf", "pcie.acs", "iommu.mode",     "memlock",
      "nic.port_state",    "nic.rate",         "nic.mtu",  "nic.link_layer", "nic.roce_gid",
      "pcie.link",         "topo.gpu_nic",     "gpu.bar1", "driver.nvidia",  "rdma_core.version"};
  ASSERT_EQ(rs.size(), ids.size());
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(rs[i].id, ids[i]);
}

TEST(Doctor, AcsRedirectOnSwitchPortFails) {
  auto rs = runChecks(inputFor("switch_8gpu_8nic_acs"));
  EXPECT_CHECK(rs, "pcie.acs", CheckStatus::kFail, "0000:14:00.0 [SV RR CR UF] on GPU0-mlx5_0");
  EXPECT_CHECK(rs, "pcie.acs", CheckStatus::kFail, "0000:14:04.0 [SV RR CR UF]");
  EXPECT_NE(get(rs, "pcie.acs").remediation.find("setpci -s <bdf> ECAP_ACS+0x6.w=0000"),
            std::string::npos);
  EXPECT_EQ(get(rs, "pcie.acs").detail.find("0000:18:00.0"), std::string::npos);
  EXPECT_EQ(worstStatus(rs), CheckStatus::kFail);
}

TEST(Doctor, AcsUnknownWithoutRoot) {
  DoctorInput in = inputFor("switch_8gpu_8nic_nonroot");
  in.is_root = false;
  auto rs = runChecks(in);
  EXPECT_CHECK(rs, "pcie.acs", CheckStatus::kUnknown, "non-root read gives only 64 bytes");
  EXPECT_CHECK(rs, "pcie.acs", CheckStatus::kUnknown, "36 of 36 bridges");
  EXPECT_NE(get(rs, "pcie.acs").remediation.find("as root"), std::string::npos);
}

TEST(Doctor, DegradedNicLinkWarns) {
  auto rs = runChecks(inputFor("switch_8gpu_8nic_degraded"));
  EXPECT_CHECK(rs, "pcie.link", CheckStatus::kWarn, "mlx5_3 (0000:3a:00.0) x8 of x16");
  EXPECT_EQ(get(rs, "pcie.link").detail.find("mlx5_2"), std::string::npos);
}

TEST(Doctor, IdleGpuLinkSpeedIsNotDegraded) {
  // The two-socket GPUs run 8.0 GT/s of max 8.0: pass; a GPU below max speed alone is a note.
  auto rs = runChecks(inputFor("two_socket_4gpu_2nic", 16 * kGiB));
  EXPECT_CHECK(rs, "pcie.link", CheckStatus::kPass, "6 devices at max width");
}

TEST(Doctor, PeermemAbsentWithDmabufWarns) {
  auto rs = runChecks(inputFor("switch_8gpu_8nic_no_peermem", 80 * kGiB, true));
  EXPECT_CHECK(rs, "gpudirect.peermem", CheckStatus::kWarn, "dma-buf path is available");
  EXPECT_NE(get(rs, "gpudirect.peermem").remediation.find("modprobe nvidia_peermem"),
            std::string::npos);
  EXPECT_CHECK(rs, "gpudirect.dmabuf", CheckStatus::kPass, "all 8 GPUs");
}

TEST(Doctor, PeermemAbsentWithoutDmabufFails) {
  auto rs = runChecks(inputFor("switch_8gpu_8nic_no_peermem", 80 * kGiB, false));
  EXPECT_CHECK(rs, "gpudirect.peermem", CheckStatus::kFail, "registration will fail");
  EXPECT_CHECK(rs, "gpudirect.dmabuf", CheckStatus::kFail, "no dma-buf support on GPU0");
}

TEST(Doctor, PeermemPresentDmabufMissingWarns) {
  auto rs = runChecks(inputFor("switch_8gpu_8nic", 80 * kGiB, false));
  EXPECT_CHECK(rs, "gpudirect.peermem", CheckStatus::kPass, "nvidia_peermem loaded");
  EXPECT_CHECK(rs, "gpudirect.dmabuf", CheckStatus::kWarn, "no dma-buf support");
}

TEST(Doctor, LegacyNvPeerMemCounts) {
  auto rs = runChecks(inputFor("two_socket_4gpu_2nic", 16 * kGiB));
  EXPECT_CHECK(rs, "gpudirect.peermem", CheckStatus::kPass, "nv_peer_mem loaded");
}

TEST(Doctor, DmabufUnknownWithoutCudaInventory) {
  DoctorInput in = inputFor("switch_8gpu_8nic");
  in.gpus.clear();
  auto rs = runChecks(in);
  EXPECT_CHECK(rs, "gpudirect.dmabuf", CheckStatus::kUnknown, "needs the CUDA inventory");
  // GPUs found in sysfs still get their topology and BAR1 checked.
  EXPECT_CHECK(rs, "topo.gpu_nic", CheckStatus::kPass, "GPU0->mlx5_0 PIX");
  EXPECT_CHECK(rs, "gpu.bar1", CheckStatus::kPass, "GPU0 (0000:15:00.0) BAR1 128GiB");
}

TEST(Doctor, PortDownFails) {
  auto rs = runChecks(inputFor("switch_8gpu_8nic_port_down"));
  EXPECT_CHECK(rs, "nic.port_state", CheckStatus::kFail, "mlx5_5/1 DOWN (phys_state Disabled)");
  EXPECT_EQ(get(rs, "nic.port_state").detail.find("mlx5_4"), std::string::npos);
  // A down port does not count for the rate comparison.
  EXPECT_EQ(get(rs, "nic.rate").status, CheckStatus::kPass);
}

TEST(Doctor, IommuTranslatedWarns) {
  auto rs = runChecks(inputFor("switch_8gpu_8nic_iommu_dma"));
  EXPECT_CHECK(rs, "iommu.mode", CheckStatus::kWarn, "0000:15:00.0 (DMA-FQ)");
  EXPECT_NE(get(rs, "iommu.mode").remediation.find("iommu=pt"), std::string::npos);
}

TEST(Doctor, IommuOffPasses) {
  auto rs = runChecks(inputFor("two_socket_4gpu_2nic", 16 * kGiB));
  EXPECT_CHECK(rs, "iommu.mode", CheckStatus::kPass, "no IOMMU active");
}

TEST(Doctor, MemlockLimits) {
  DoctorInput in = inputFor("switch_8gpu_8nic");
  in.is_root = false;
  in.memlock = MemlockLimit{64 << 10, 64 << 10};
  auto rs = runChecks(in);
  EXPECT_CHECK(rs, "memlock", CheckStatus::kFail, "soft 64KiB, hard 64KiB");
  EXPECT_NE(get(rs, "memlock").remediation.find("ulimit -l unlimited"), std::string::npos);
  EXPECT_NE(get(rs, "memlock").remediation.find("LimitMEMLOCK=infinity"), std::string::npos);

  in.memlock = MemlockLimit{1ull << 30, MemlockLimit::kUnlimited};
  rs = runChecks(in);
  EXPECT_CHECK(rs, "memlock", CheckStatus::kWarn, "soft 1GiB, hard unlimited");

  in.memlock = MemlockLimit{};
  rs = runChecks(in);
  EXPECT_CHECK(rs, "memlock", CheckStatus::kPass, "soft unlimited");

  in.is_root = true;
  in.memlock = MemlockLimit{64 << 10, 64 << 10};
  rs = runChecks(in);
  EXPECT_CHECK(rs, "memlock", CheckStatus::kPass, "CAP_IPC_LOCK");

  in.memlock.reset();
  rs = runChecks(in);
  EXPECT_CHECK(rs, "memlock", CheckStatus::kUnknown, "not provided");
}

TEST(Doctor, NoRoceV2GidFails) {
  auto rs = runChecks(inputFor("two_socket_4gpu_2nic_no_rocev2", 16 * kGiB));
  EXPECT_CHECK(rs, "nic.roce_gid", CheckStatus::kFail, "mlx5_1/1 (ens3f0): 2 GIDs, none RoCE v2");
  EXPECT_NE(get(rs, "nic.roce_gid").remediation.find("ip addr add"), std::string::npos);
  auto good = runChecks(inputFor("two_socket_4gpu_2nic", 16 * kGiB));
  EXPECT_CHECK(good, "nic.roce_gid", CheckStatus::kPass, "mlx5_1/1 (ens3f0) RoCE v2 at index 1,3");
}

TEST(Doctor, TwoSocketHost) {
  auto rs = runChecks(inputFor("two_socket_4gpu_2nic", 16 * kGiB));
  EXPECT_CHECK(rs, "topo.gpu_nic", CheckStatus::kWarn,
               "GPU0: no NIC at PIX/PXB, nearest mlx5_0 at PHB");
  EXPECT_CHECK(rs, "topo.gpu_nic", CheckStatus::kWarn, "GPU3: no NIC at PIX/PXB, nearest mlx5_1");
  EXPECT_CHECK(rs, "gpu.bar1", CheckStatus::kWarn,
               "GPU0 (0000:01:00.0) BAR1 256MiB / memory 16GiB");
  EXPECT_CHECK(rs, "pcie.acs", CheckStatus::kPass, "no GPU-NIC pair shares a PCIe switch");
  EXPECT_CHECK(rs, "nic.mtu", CheckStatus::kPass, "netdev MTU 9000 -> RoCE MTU 4096");
  EXPECT_CHECK(rs, "nic.link_layer", CheckStatus::kPass, "mlx5_0/1 InfiniBand, mlx5_1/1 Ethernet");
  EXPECT_CHECK(rs, "nic.rate", CheckStatus::kPass, "mlx5_0/1 100 Gb/s, mlx5_1/1 100 Gb/s");
}

TEST(Doctor, SoftRoceVmWithoutGpus) {
  DoctorInput in;
  in.root = fixture("softroce_vm");
  in.memlock = MemlockLimit{};
  auto rs = runChecks(in);
  for (const char* id :
       {"gpudirect.peermem", "gpudirect.dmabuf", "pcie.acs", "topo.gpu_nic", "gpu.bar1"}) {
    EXPECT_CHECK(rs, id, CheckStatus::kNotApplicable, "no GPUs on this host");
  }
  EXPECT_CHECK(rs, "driver.nvidia", CheckStatus::kNotApplicable, "no GPUs and no NVIDIA driver");
  EXPECT_CHECK(rs, "nic.mtu", CheckStatus::kWarn,
               "rxe0/1 on dummy0: netdev MTU 1500 -> RoCE MTU 1024");
  EXPECT_CHECK(rs, "nic.roce_gid", CheckStatus::kPass, "rxe0/1 (dummy0) RoCE v2 at index 0,1");
  EXPECT_CHECK(rs, "nic.port_state", CheckStatus::kPass, "ACTIVE: rxe0/1");
  EXPECT_CHECK(rs, "pcie.link", CheckStatus::kNotApplicable, "no GPUs and no PCI RDMA NICs");
  EXPECT_CHECK(rs, "rdma_core.version", CheckStatus::kPass, "rdma-core 44.0");
  EXPECT_EQ(worstStatus(rs), CheckStatus::kWarn);
}

class TempTree : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gdrmesh-doctor-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  void write(const std::string& rel, const std::string& content) {
    std::filesystem::create_directories(std::filesystem::path(dir_ + rel).parent_path());
    std::ofstream(dir_ + rel) << content;
  }
  std::string dir_;
};

TEST_F(TempTree, OldKernelHasNoDmabuf) {
  write("/proc/sys/kernel/osrelease", "5.4.0-150-generic\n");
  write("/proc/modules", "nvidia 100 0 - Live 0x0\n");
  DoctorInput in;
  in.root = dir_;
  Gpu g;
  g.pci_bus_id = "0000:17:00.0";  // from CUDA, absent from this tree
  g.dma_buf_supported = true;
  in.gpus = {g};
  auto rs = runChecks(in);
  EXPECT_CHECK(rs, "gpudirect.dmabuf", CheckStatus::kFail, "kernel 5.4.0-150-generic");
  EXPECT_CHECK(rs, "gpudirect.peermem", CheckStatus::kFail, "not loaded");
  EXPECT_CHECK(rs, "driver.nvidia", CheckStatus::kFail, "nvidia module is not loaded");
  EXPECT_CHECK(rs, "gpu.bar1", CheckStatus::kUnknown, "GPU0 (0000:17:00.0)");
  EXPECT_CHECK(rs, "topo.gpu_nic", CheckStatus::kNotApplicable, "no RDMA NICs on this host");
}

TEST_F(TempTree, EmptyTreeNeverFails) {
  DoctorInput in;
  in.root = dir_;
  auto rs = runChecks(in);
  ASSERT_EQ(rs.size(), 15u);
  for (const auto& r : rs) EXPECT_NE(r.status, CheckStatus::kFail) << toString(r);
}

TEST(Doctor, JsonAndText) {
  auto rs = runChecks(inputFor("switch_8gpu_8nic_port_down"));
  nlohmann::json j = toJson(rs);
  EXPECT_EQ(j["status"], "FAIL");
  ASSERT_EQ(j["checks"].size(), 15u);
  EXPECT_EQ(j["checks"][5]["id"], "nic.port_state");
  EXPECT_EQ(j["checks"][5]["status"], "FAIL");
  EXPECT_FALSE(j["checks"][5]["remediation"].get<std::string>().empty());
  const std::string text = renderChecks(rs);
  EXPECT_NE(text.find("FAIL    nic.port_state: RDMA ports ACTIVE\n"), std::string::npos) << text;
  EXPECT_NE(text.find("14 pass, 0 warn, 1 fail, 0 unknown"), std::string::npos) << text;
}

TEST(PciConfig, ExtendedCapabilityWalk) {
  std::string cfg(4096, '\0');
  auto put32 = [&](size_t off, uint32_t v) {
    for (int i = 0; i < 4; ++i) cfg[off + static_cast<size_t>(i)] = static_cast<char>(v >> (8 * i));
  };
  put32(0x100, 0x0001u | (0x2u << 16) | (0x180u << 20));  // AER -> 0x180
  put32(0x180, 0x000Du | (0x1u << 16) | (0u << 20));      // ACS, end
  EXPECT_EQ(findExtendedCapability(cfg, kExtCapAcs), std::optional<uint16_t>(0x180));
  EXPECT_EQ(findExtendedCapability(cfg, 0x0010), std::nullopt);
  put32(0x180, 0x0002u | (0x100u << 20));  // loop back to 0x100: must terminate
  EXPECT_EQ(findExtendedCapability(cfg, kExtCapAcs), std::nullopt);
  EXPECT_EQ(findExtendedCapability(cfg.substr(0, 64), kExtCapAcs), std::nullopt);
  EXPECT_EQ(acsBitsToString(0x001D), "SV RR CR UF");
  EXPECT_EQ(acsBitsToString(0), "none");
}

TEST(Doctor, KernelRelease) {
  EXPECT_EQ(parseKernelRelease("6.8.0-45-generic"), std::make_pair(6, 8));
  EXPECT_EQ(parseKernelRelease("5.12"), std::make_pair(5, 12));
  EXPECT_FALSE(parseKernelRelease("garbage").has_value());
}

}  // namespace
}  // namespace gdrmesh
