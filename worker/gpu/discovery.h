// GPU discovery: what the CUDA driver says about each GPU, plus its NUMA node from sysfs.
//
// A host without the NVIDIA driver, or with the driver and no GPU, has zero GPUs: that is a
// normal answer with a reason, never an error that stops the worker.
#pragma once

#include <string>
#include <vector>

#include "common/inventory.h"
#include "common/status.h"
#include "worker/gpu/cuda_api.h"

namespace gdrmesh {

// Every visible GPU, in CUDA ordinal order (Gpu::index is the CUDA ordinal, the N of --gpu N).
// Empty (and OK) when the driver is absent or sees no GPU. An error when the driver fails on
// a GPU it listed. `sysfs_root` is "/sys" except in tests.
Result<std::vector<Gpu>> discoverGpus(CudaApi& api, const std::string& sysfs_root = "/sys");

// "13.0 (580.65.06)": the CUDA version the driver supports and, when /proc/driver/nvidia/version
// can be read, the kernel module version. "" when there is no driver.
std::string cudaDriverVersion(CudaApi& api, const std::string& proc_root = "/proc");

// Discovery for the worker's inventory: never fails. `reason` says why `gpus` is empty (no
// driver, no GPU, or a discovery error), and is "" when GPUs were found.
struct GpuInventory {
  std::vector<Gpu> gpus;
  std::string driver_version;
  std::string reason;
};
GpuInventory discoverGpuInventory(CudaApi& api, const std::string& sysfs_root = "/sys",
                                  const std::string& proc_root = "/proc");

// Helpers, exposed for tests.
// "00000000:1B:00.0" -> "0000:1b:00.0"; "" when `bus_id` is not a PCI address.
std::string normalizePciBusId(const std::string& bus_id);
// 16 UUID bytes -> "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (lower-case, as nvidia-smi).
std::string formatGpuUuid(const unsigned char bytes[16]);

}  // namespace gdrmesh
