// gdrmesh doctor: preflight checks for GPUDirect RDMA on one host.
//
// Every check reads sysfs/procfs under DoctorInput::root (default "/"), so recorded trees can be
// checked too; nothing is executed. Each check answers PASS, WARN, FAIL or UNKNOWN with the
// reason and a one-line remediation. A host without GPUs or NICs is not a failure: the GPU/NIC
// checks PASS with "no GPUs on this host" / "no RDMA NICs on this host".
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/inventory.h"

namespace gdrmesh {

// kNotApplicable: the check has nothing to look at on this host (no GPU, no RDMA NIC). It is
// not a pass: an acceptance preflight compares the host with its expected inventory
// (`gdrmesh doctor --config`), which fails a GPU host that shows no GPU.
enum class CheckStatus { kPass, kWarn, kFail, kUnknown, kNotApplicable };
const char* toString(CheckStatus s);  // "PASS", "WARN", "FAIL", "UNKNOWN", "N/A"

struct CheckResult {
  std::string id;     // stable key: "gpudirect.peermem", "pcie.acs", ...
  std::string title;  // "nvidia_peermem loaded"
  CheckStatus status = CheckStatus::kUnknown;
  std::string detail;       // why: what was found, naming devices and files
  std::string remediation;  // one line; "" when nothing is to be done
};

// "[FAIL] pcie.acs: ACS ... (fix: ...)"
std::string toString(const CheckResult& r);
nlohmann::json toJson(const CheckResult& r);
nlohmann::json toJson(const std::vector<CheckResult>& results);
// A text report: one line per check plus indented detail/remediation, and a summary line.
std::string renderChecks(const std::vector<CheckResult>& results);
// FAIL over WARN over UNKNOWN over PASS over N/A; PASS for an empty list.
CheckStatus worstStatus(const std::vector<CheckResult>& results);

struct MemlockLimit {
  static constexpr uint64_t kUnlimited = ~uint64_t{0};
  uint64_t soft_bytes = kUnlimited;
  uint64_t hard_bytes = kUnlimited;
};

struct DoctorInput {
  std::string root = "/";
  // GPUs from the CUDA inventory (bus ids, memory, dma-buf attribute). Empty: GPUs are found in
  // sysfs and the checks that need CUDA attributes answer UNKNOWN.
  std::vector<Gpu> gpus;
  // NICs for the port checks; nullopt: discoverNics(root). The topology (ACS, affinity) is
  // always read from sysfs under root.
  std::optional<std::vector<Nic>> nics;
  // The worker's RLIMIT_MEMLOCK; nullopt: UNKNOWN.
  std::optional<MemlockLimit> memlock;
  std::string cuda_driver_version;  // "13.0", "" if no CUDA driver
  bool is_root = false;             // effective uid 0 (full config space, CAP_IPC_LOCK)
  std::string rdma_core_version;    // "": rdmaCoreVersion(root)
};

// The input for the live host: root "/", this process's memlock limit and euid.
DoctorInput localDoctorInput(std::vector<Gpu> gpus = {}, std::string cuda_driver_version = "");

// Runs every check, in a fixed order:
//   gpudirect.peermem, gpudirect.dmabuf, pcie.acs, iommu.mode, memlock, nic.port_state,
//   nic.rate, nic.mtu, nic.link_layer, nic.roce_gid, pcie.link, topo.gpu_nic, gpu.bar1,
//   driver.nvidia, rdma_core.version
std::vector<CheckResult> runChecks(const DoctorInput& input);

// Kernel release "6.8.0-45-generic" -> {6, 8}; nullopt if unparsable.
std::optional<std::pair<int, int>> parseKernelRelease(const std::string& release);

}  // namespace gdrmesh
