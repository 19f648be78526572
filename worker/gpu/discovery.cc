#include "worker/gpu/discovery.h"

#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace gdrmesh {

namespace {

int readSysfsInt(const std::string& path, int fallback) {
  std::ifstream in(path);
  int v = 0;
  if (in >> v) return v;
  return fallback;
}

}  // namespace

std::string normalizePciBusId(const std::string& bus_id) {
  // [domain]:[bus]:[device].[function], hex digits only; the domain may be 4 or 8 digits.
  const size_t c1 = bus_id.find(':');
  const size_t c2 = c1 == std::string::npos ? c1 : bus_id.find(':', c1 + 1);
  const size_t dot = c2 == std::string::npos ? c2 : bus_id.find('.', c2 + 1);
  if (dot == std::string::npos) return "";
  const std::string parts[4] = {bus_id.substr(0, c1), bus_id.substr(c1 + 1, c2 - c1 - 1),
                                bus_id.substr(c2 + 1, dot - c2 - 1), bus_id.substr(dot + 1)};
  unsigned long long v[4] = {};  // NOLINT(google-runtime-int)
  for (int i = 0; i < 4; ++i) {
    if (parts[i].empty() || parts[i].size() > 8) return "";
    for (char ch : parts[i]) {
      if (!std::isxdigit(static_cast<unsigned char>(ch))) return "";
    }
    v[i] = std::stoull(parts[i], nullptr, 16);
  }
  if (v[1] > 0xff || v[2] > 0x1f || v[3] > 7) return "";
  char out[48];
  std::snprintf(out, sizeof(out), "%04llx:%02llx:%02llx.%llx", v[0], v[1], v[2], v[3]);
  return out;
}

std::string formatGpuUuid(const unsigned char bytes[16]) {
  std::string out = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    std::snprintf(hex, sizeof(hex), "%02x", bytes[i]);
    out += hex;
  }
  return out;
}

Result<std::vector<Gpu>> discoverGpus(CudaApi& api, const std::string& sysfs_root) {
  std::vector<Gpu> gpus;
  if (!api.available()) return gpus;
  int count = 0;
  cu::CUresult rc = api.deviceGetCount(&count);
  if (rc == cu::CUDA_ERROR_NO_DEVICE) return gpus;
  GDR_RETURN_IF_ERROR(cudaStatus(api, rc, "cuDeviceGetCount"));

  for (int i = 0; i < count; ++i) {
    const std::string where = "gpu:" + std::to_string(i);
    Gpu g;
    g.index = i;
    cu::CUdevice dev = 0;
    GDR_RETURN_IF_ERROR(cudaStatus(api, api.deviceGet(&dev, i), "cuDeviceGet", where));

    char name[256] = {};
    GDR_RETURN_IF_ERROR(
        cudaStatus(api, api.deviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName", where));
    g.name = name;

    cu::CUuuid uuid{};
    GDR_RETURN_IF_ERROR(cudaStatus(api, api.deviceGetUuid(&uuid, dev), "cuDeviceGetUuid", where));
    g.uuid = formatGpuUuid(uuid.bytes);

    char bus_id[64] = {};
    GDR_RETURN_IF_ERROR(cudaStatus(api, api.deviceGetPCIBusId(bus_id, sizeof(bus_id) - 1, dev),
                                   "cuDeviceGetPCIBusId", where));
    g.pci_bus_id = normalizePciBusId(bus_id);
    if (g.pci_bus_id.empty()) {
      return internalError("cuDeviceGetPCIBusId on " + where + " returned \"" + bus_id +
                           "\", not a PCI address");
    }

    size_t mem = 0;
    GDR_RETURN_IF_ERROR(cudaStatus(api, api.deviceTotalMem(&mem, dev), "cuDeviceTotalMem", where));
    g.memory_bytes = mem;

    struct Attr {
      int id;
      const char* name;
      int* out;
    };
    int dmabuf = 0, gdr = 0;
    const Attr attrs[] = {
        {cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "COMPUTE_CAPABILITY_MAJOR",
         &g.compute_capability_major},
        {cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "COMPUTE_CAPABILITY_MINOR",
         &g.compute_capability_minor},
        {cu::CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, "DMA_BUF_SUPPORTED", &dmabuf},
        {cu::CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, "GPU_DIRECT_RDMA_SUPPORTED", &gdr},
    };
    for (const Attr& a : attrs) {
      rc = api.deviceGetAttribute(a.out, a.id, dev);
      // Older drivers do not know the newer attributes: that means "not supported".
      if (rc == cu::CUDA_ERROR_INVALID_VALUE && (a.out == &dmabuf || a.out == &gdr)) {
        *a.out = 0;
        continue;
      }
      GDR_RETURN_IF_ERROR(
          cudaStatus(api, rc, std::string("cuDeviceGetAttribute(") + a.name + ")", where));
    }
    g.dma_buf_supported = dmabuf != 0;
    g.gpu_direct_rdma_supported = gdr != 0;
    g.numa_node = readSysfsInt(sysfs_root + "/bus/pci/devices/" + g.pci_bus_id + "/numa_node", -1);
    gpus.push_back(std::move(g));
  }
  return gpus;
}

std::string cudaDriverVersion(CudaApi& api, const std::string& proc_root) {
  if (!api.available()) return "";
  int v = 0;
  if (api.driverGetVersion(&v) != cu::CUDA_SUCCESS || v <= 0) return "";
  std::string out = std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
  // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build ..."
  std::ifstream in(proc_root + "/driver/nvidia/version");
  std::string line;
  if (std::getline(in, line)) {
    std::istringstream words(line);
    std::string w;
    while (words >> w) {
      if (!w.empty() && std::isdigit(static_cast<unsigned char>(w[0])) &&
          w.find('.') != std::string::npos) {
        out += " (" + w + ")";
        break;
      }
    }
  }
  return out;
}

GpuInventory discoverGpuInventory(CudaApi& api, const std::string& sysfs_root,
                                  const std::string& proc_root) {
  GpuInventory inv;
  if (!api.available()) {
    inv.reason = api.reason();
    return inv;
  }
  inv.driver_version = cudaDriverVersion(api, proc_root);
  Result<std::vector<Gpu>> gpus = discoverGpus(api, sysfs_root);
  if (!gpus.ok()) {
    inv.reason = "GPU discovery failed: " + gpus.status().toString();
    return inv;
  }
  inv.gpus = std::move(gpus).value();
  if (inv.gpus.empty()) inv.reason = "the NVIDIA driver sees no GPU on this host";
  return inv;
}

}  // namespace gdrmesh
