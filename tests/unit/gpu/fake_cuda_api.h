// A CudaApi with no GPU behind it: devices are table rows, device memory is host memory, kernels
// never load (so GPU buffers take their host-copy path), and any call can be made to fail.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "worker/gpu/cuda_api.h"

namespace gdrmesh::testing {

struct FakeDevice {
  std::string name = "NVIDIA H100 80GB HBM3";
  unsigned char uuid[16] = {0x5f, 0x2a, 0x10, 0x9c, 0x01, 0x02, 0x03, 0x04,
                            0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x00, 0x11};
  std::string bus_id = "00000000:1B:00.0";
  size_t memory = 85520809984ULL;
  int cc_major = 9, cc_minor = 0;
  int dmabuf = 1, gdr = 1, sms = 132;
};

class FakeCudaApi : public CudaApi {
 public:
  bool is_available = true;
  std::string why_unavailable;
  int driver_version = 13000;
  std::vector<FakeDevice> devices{FakeDevice{}};
  // Calls named here ("cuMemAlloc", "cuMemGetHandleForAddressRange", ...) fail with the value.
  std::map<std::string, cu::CUresult> fail;
  int contexts_retained = 0;
  int context_depth = 0;
  size_t allocations = 0;
  // Arguments of the last dma-buf export.
  cu::CUdeviceptr export_ptr = 0;
  size_t export_size = 0;

  bool available() const override { return is_available; }
  std::string reason() const override { return why_unavailable; }

  cu::CUresult driverGetVersion(int* v) override {
    return call("cuDriverGetVersion", [&] { *v = driver_version; });
  }
  cu::CUresult deviceGetCount(int* c) override {
    return call("cuDeviceGetCount", [&] { *c = static_cast<int>(devices.size()); });
  }
  cu::CUresult deviceGet(cu::CUdevice* d, int i) override {
    if (i < 0 || i >= static_cast<int>(devices.size())) return cu::CUDA_ERROR_INVALID_DEVICE;
    return call("cuDeviceGet", [&] { *d = i; });
  }
  cu::CUresult deviceGetName(char* name, int len, cu::CUdevice d) override {
    return call("cuDeviceGetName",
                [&] { std::strncpy(name, devices[d].name.c_str(), static_cast<size_t>(len)); });
  }
  cu::CUresult deviceGetUuid(cu::CUuuid* u, cu::CUdevice d) override {
    return call("cuDeviceGetUuid", [&] { std::memcpy(u->bytes, devices[d].uuid, 16); });
  }
  cu::CUresult deviceGetPCIBusId(char* id, int len, cu::CUdevice d) override {
    return call("cuDeviceGetPCIBusId",
                [&] { std::strncpy(id, devices[d].bus_id.c_str(), static_cast<size_t>(len)); });
  }
  cu::CUresult deviceTotalMem(size_t* b, cu::CUdevice d) override {
    return call("cuDeviceTotalMem", [&] { *b = devices[d].memory; });
  }
  cu::CUresult deviceGetAttribute(int* v, int a, cu::CUdevice d) override {
    const FakeDevice& dev = devices[d];
    switch (a) {
      case cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *v = dev.cc_major;
        break;
      case cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        *v = dev.cc_minor;
        break;
      case cu::CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED:
        *v = dev.dmabuf;
        break;
      case cu::CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED:
        *v = dev.gdr;
        break;
      case cu::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *v = dev.sms;
        break;
      default:
        return cu::CUDA_ERROR_INVALID_VALUE;
    }
    return failure("cuDeviceGetAttribute");
  }
  cu::CUresult devicePrimaryCtxRetain(cu::CUcontext* c, cu::CUdevice d) override {
    return call("cuDevicePrimaryCtxRetain", [&] {
      *c = reinterpret_cast<cu::CUcontext>(static_cast<uintptr_t>(0x1000 + d));
      ++contexts_retained;
    });
  }
  cu::CUresult devicePrimaryCtxRelease(cu::CUdevice) override {
    --contexts_retained;
    return cu::CUDA_SUCCESS;
  }
  cu::CUresult ctxSetCurrent(cu::CUcontext) override { return cu::CUDA_SUCCESS; }
  cu::CUresult ctxPushCurrent(cu::CUcontext) override {
    return call("cuCtxPushCurrent", [&] { ++context_depth; });
  }
  cu::CUresult ctxPopCurrent(cu::CUcontext*) override {
    --context_depth;
    return cu::CUDA_SUCCESS;
  }
  cu::CUresult ctxSynchronize() override { return failure("cuCtxSynchronize"); }

  // Device memory: host vectors at fake addresses, 2 MiB aligned like large cuMemAlloc.
  cu::CUresult memAlloc(cu::CUdeviceptr* p, size_t n) override {
    if (cu::CUresult rc = failure("cuMemAlloc"); rc != cu::CUDA_SUCCESS) return rc;
    *p = next_;
    next_ += (n + (2u << 20) - 1) / (2u << 20) * (2u << 20) + (2u << 20);
    mem_[*p] = std::vector<unsigned char>(n, 0xcd);
    ++allocations;
    return cu::CUDA_SUCCESS;
  }
  cu::CUresult memFree(cu::CUdeviceptr p) override {
    if (mem_.erase(p) == 0) return cu::CUDA_ERROR_INVALID_VALUE;
    --allocations;
    return cu::CUDA_SUCCESS;
  }
  cu::CUresult memcpyHtoD(cu::CUdeviceptr dst, const void* src, size_t n) override {
    unsigned char* d = host(dst, n);
    if (d == nullptr) return cu::CUDA_ERROR_INVALID_VALUE;
    return call("cuMemcpyHtoD", [&] { std::memcpy(d, src, n); });
  }
  cu::CUresult memcpyDtoH(void* dst, cu::CUdeviceptr src, size_t n) override {
    unsigned char* s = host(src, n);
    if (s == nullptr) return cu::CUDA_ERROR_INVALID_VALUE;
    return call("cuMemcpyDtoH", [&] { std::memcpy(dst, s, n); });
  }
  cu::CUresult memsetD8(cu::CUdeviceptr dst, unsigned char v, size_t n) override {
    unsigned char* d = host(dst, n);
    if (d == nullptr) return cu::CUDA_ERROR_INVALID_VALUE;
    return call("cuMemsetD8", [&] { std::memset(d, v, n); });
  }
  cu::CUresult memGetAddressRange(cu::CUdeviceptr* base, size_t* size, cu::CUdeviceptr p) override {
    for (const auto& [b, v] : mem_) {
      if (p >= b && p < b + v.size()) {
        *base = b;
        *size = v.size();
        return failure("cuMemGetAddressRange");
      }
    }
    return cu::CUDA_ERROR_NOT_FOUND;
  }
  cu::CUresult memGetHandleForAddressRange(void* handle, cu::CUdeviceptr p, size_t n, int type,
                                           unsigned long long flags) override {  // NOLINT
    if (cu::CUresult rc = failure("cuMemGetHandleForAddressRange"); rc != cu::CUDA_SUCCESS) {
      return rc;
    }
    const long page = ::sysconf(_SC_PAGESIZE);  // NOLINT
    if (type != cu::CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD || flags != 0 ||
        p % static_cast<size_t>(page) != 0 || n % static_cast<size_t>(page) != 0 ||
        host(p, n) == nullptr) {
      return cu::CUDA_ERROR_INVALID_VALUE;
    }
    export_ptr = p;
    export_size = n;
    // A memfd of the range's size stands in for the dma-buf.
    int fd = ::memfd_create("fake-dmabuf", MFD_CLOEXEC);
    if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(n)) != 0)
      return cu::CUDA_ERROR_OPERATING_SYSTEM;
    *static_cast<int*>(handle) = fd;
    return cu::CUDA_SUCCESS;
  }
  cu::CUresult pointerSetAttribute(const void* value, int attribute, cu::CUdeviceptr p) override {
    if (attribute == cu::CU_POINTER_ATTRIBUTE_SYNC_MEMOPS && host(p, 1) != nullptr &&
        *static_cast<const unsigned int*>(value) == 1) {
      sync_memops_.push_back(p);
    }
    return failure("cuPointerSetAttribute");
  }
  bool syncMemops(cu::CUdeviceptr p) const {
    for (cu::CUdeviceptr q : sync_memops_) {
      if (q == p) return true;
    }
    return false;
  }
  // No GPU: kernels never load, buffers fall back to their host-copy path.
  cu::CUresult moduleLoadData(cu::CUmodule*, const void*) override {
    return cu::CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  cu::CUresult moduleUnload(cu::CUmodule) override { return cu::CUDA_SUCCESS; }
  cu::CUresult moduleGetFunction(cu::CUfunction*, cu::CUmodule, const char*) override {
    return cu::CUDA_ERROR_NOT_FOUND;
  }
  cu::CUresult launchKernel(cu::CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, unsigned, cu::CUstream, void**, void**) override {
    return cu::CUDA_ERROR_INVALID_HANDLE;
  }
  // The fake knows no names: cudaErrorName must use its own table.
  cu::CUresult getErrorName(cu::CUresult, const char**) override {
    return cu::CUDA_ERROR_INVALID_VALUE;
  }
  cu::CUresult getErrorString(cu::CUresult e, const char** text) override {
    if (e == cu::CUDA_ERROR_NOT_SUPPORTED) {
      *text = "operation not supported";
      return cu::CUDA_SUCCESS;
    }
    return cu::CUDA_ERROR_INVALID_VALUE;
  }

  // Host view of [p, p + n) inside one allocation, nullptr when outside.
  unsigned char* host(cu::CUdeviceptr p, size_t n = 1) {
    for (auto& [b, v] : mem_) {
      if (p >= b && p + n <= b + v.size()) return v.data() + (p - b);
    }
    return nullptr;
  }

 private:
  cu::CUresult failure(const std::string& name) const {
    auto it = fail.find(name);
    return it == fail.end() ? cu::CUDA_SUCCESS : it->second;
  }
  template <typename F>
  cu::CUresult call(const std::string& name, F&& effect) {
    cu::CUresult rc = failure(name);
    if (rc == cu::CUDA_SUCCESS) effect();
    return rc;
  }
  cu::CUdeviceptr next_ = 0x7f0000000000ULL;
  std::map<cu::CUdeviceptr, std::vector<unsigned char>> mem_;
  std::vector<cu::CUdeviceptr> sync_memops_;
};

}  // namespace gdrmesh::testing
