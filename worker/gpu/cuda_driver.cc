// CudaDriver: libcuda.so.1 loaded with dlopen, entry points resolved with dlsym.
#include <dlfcn.h>

#include <cstring>

#include "worker/gpu/cuda_api.h"

namespace gdrmesh {

using namespace cu;  // NOLINT(google-build-using-namespace): driver vocabulary only

// NOLINTBEGIN(readability-identifier-naming): each entry point keeps cuda.h's name without
// the cu prefix (cuDriverGetVersion -> driverGetVersion), so that the table reads as the
// driver's documentation and GDR_CU_FORWARD maps a CudaApi method to its entry one to one.
struct CudaDriver::Table {
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*driverGetVersion)(int*) = nullptr;
  CUresult (*deviceGetCount)(int*) = nullptr;
  CUresult (*deviceGet)(CUdevice*, int) = nullptr;
  CUresult (*deviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*deviceGetUuid)(CUuuid*, CUdevice) = nullptr;
  CUresult (*deviceGetPCIBusId)(char*, int, CUdevice) = nullptr;
  CUresult (*deviceTotalMem)(size_t*, CUdevice) = nullptr;
  CUresult (*deviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*devicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*devicePrimaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*ctxSetCurrent)(CUcontext) = nullptr;
  CUresult (*ctxPushCurrent)(CUcontext) = nullptr;
  CUresult (*ctxPopCurrent)(CUcontext*) = nullptr;
  CUresult (*ctxSynchronize)() = nullptr;
  CUresult (*memAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*memFree)(CUdeviceptr) = nullptr;
  CUresult (*memcpyHtoD)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*memcpyDtoH)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*memsetD8)(CUdeviceptr, unsigned char, size_t) = nullptr;
  CUresult (*memGetAddressRange)(CUdeviceptr*, size_t*, CUdeviceptr) = nullptr;
  CUresult (*memGetHandleForAddressRange)(void*, CUdeviceptr, size_t, int,
                                          unsigned long long) = nullptr;  // NOLINT
  CUresult (*pointerSetAttribute)(const void*, int, CUdeviceptr) = nullptr;
  CUresult (*moduleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*moduleUnload)(CUmodule) = nullptr;
  CUresult (*moduleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*launchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, CUstream, void**, void**) = nullptr;
  CUresult (*getErrorName)(CUresult, const char**) = nullptr;
  CUresult (*getErrorString)(CUresult, const char**) = nullptr;
};
// NOLINTEND(readability-identifier-naming)

namespace {

// dlsym returns an object pointer; copy its bits into the function pointer (no cast between
// object and function pointer types).
template <typename Fn>
bool resolve(void* handle, const char* name, Fn* out) {
  void* sym = ::dlsym(handle, name);
  if (sym == nullptr) return false;
  static_assert(sizeof(Fn) == sizeof(void*), "function pointer size");
  std::memcpy(out, &sym, sizeof(sym));
  return true;
}

}  // namespace

CudaDriver::CudaDriver() : table_(std::make_unique<Table>()) {}

// libcuda is never unloaded: the driver keeps threads and atexit handlers that outlive
// dlclose, and unloading it while contexts exist crashes at exit.
CudaDriver::~CudaDriver() = default;

std::unique_ptr<CudaDriver> CudaDriver::open(const std::string& library) {
  std::unique_ptr<CudaDriver> d(new CudaDriver());
  d->handle_ = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (d->handle_ == nullptr) {
    const char* err = ::dlerror();
    d->reason_ = "CUDA driver library " + library + " could not be loaded (" +
                 (err != nullptr ? err : "unknown error") +
                 "): no NVIDIA driver on this host; install the NVIDIA driver to test GPU memory";
    return d;
  }
  Table& t = *d->table_;
  struct Required {
    const char* name;
    bool ok;
  };
  const Required required[] = {
      {"cuInit", resolve(d->handle_, "cuInit", &t.init)},
      {"cuDriverGetVersion", resolve(d->handle_, "cuDriverGetVersion", &t.driverGetVersion)},
      {"cuDeviceGetCount", resolve(d->handle_, "cuDeviceGetCount", &t.deviceGetCount)},
      {"cuDeviceGet", resolve(d->handle_, "cuDeviceGet", &t.deviceGet)},
      {"cuDeviceGetName", resolve(d->handle_, "cuDeviceGetName", &t.deviceGetName)},
      {"cuDeviceGetUuid", resolve(d->handle_, "cuDeviceGetUuid_v2", &t.deviceGetUuid) ||
                              resolve(d->handle_, "cuDeviceGetUuid", &t.deviceGetUuid)},
      {"cuDeviceGetPCIBusId", resolve(d->handle_, "cuDeviceGetPCIBusId", &t.deviceGetPCIBusId)},
      {"cuDeviceTotalMem_v2", resolve(d->handle_, "cuDeviceTotalMem_v2", &t.deviceTotalMem)},
      {"cuDeviceGetAttribute", resolve(d->handle_, "cuDeviceGetAttribute", &t.deviceGetAttribute)},
      {"cuDevicePrimaryCtxRetain",
       resolve(d->handle_, "cuDevicePrimaryCtxRetain", &t.devicePrimaryCtxRetain)},
      {"cuDevicePrimaryCtxRelease_v2",
       resolve(d->handle_, "cuDevicePrimaryCtxRelease_v2", &t.devicePrimaryCtxRelease)},
      {"cuCtxSetCurrent", resolve(d->handle_, "cuCtxSetCurrent", &t.ctxSetCurrent)},
      {"cuCtxPushCurrent_v2", resolve(d->handle_, "cuCtxPushCurrent_v2", &t.ctxPushCurrent)},
      {"cuCtxPopCurrent_v2", resolve(d->handle_, "cuCtxPopCurrent_v2", &t.ctxPopCurrent)},
      {"cuCtxSynchronize", resolve(d->handle_, "cuCtxSynchronize", &t.ctxSynchronize)},
      {"cuMemAlloc_v2", resolve(d->handle_, "cuMemAlloc_v2", &t.memAlloc)},
      {"cuMemFree_v2", resolve(d->handle_, "cuMemFree_v2", &t.memFree)},
      {"cuMemcpyHtoD_v2", resolve(d->handle_, "cuMemcpyHtoD_v2", &t.memcpyHtoD)},
      {"cuMemcpyDtoH_v2", resolve(d->handle_, "cuMemcpyDtoH_v2", &t.memcpyDtoH)},
      {"cuMemsetD8_v2", resolve(d->handle_, "cuMemsetD8_v2", &t.memsetD8)},
      {"cuMemGetAddressRange_v2",
       resolve(d->handle_, "cuMemGetAddressRange_v2", &t.memGetAddressRange)},
      {"cuPointerSetAttribute",
       resolve(d->handle_, "cuPointerSetAttribute", &t.pointerSetAttribute)},
      {"cuModuleLoadData", resolve(d->handle_, "cuModuleLoadData", &t.moduleLoadData)},
      {"cuModuleUnload", resolve(d->handle_, "cuModuleUnload", &t.moduleUnload)},
      {"cuModuleGetFunction", resolve(d->handle_, "cuModuleGetFunction", &t.moduleGetFunction)},
      {"cuLaunchKernel", resolve(d->handle_, "cuLaunchKernel", &t.launchKernel)},
      {"cuGetErrorName", resolve(d->handle_, "cuGetErrorName", &t.getErrorName)},
      {"cuGetErrorString", resolve(d->handle_, "cuGetErrorString", &t.getErrorString)},
  };
  // Optional: present from driver 515 (CUDA 11.7) on; exportDmabuf reports its absence.
  (void)resolve(d->handle_, "cuMemGetHandleForAddressRange", &t.memGetHandleForAddressRange);

  std::string missing;
  for (const Required& r : required) {
    if (!r.ok) missing += (missing.empty() ? "" : ", ") + std::string(r.name);
  }
  if (!missing.empty()) {
    d->reason_ = library + " lacks " + missing +
                 ": the NVIDIA driver is too old; install driver >= 470 (>= 515 for dma-buf)";
    return d;
  }
  const CUresult rc = t.init(0);
  if (rc != CUDA_SUCCESS) {
    if (rc == CUDA_ERROR_NO_DEVICE) {
      d->reason_ = "cuInit: CUDA_ERROR_NO_DEVICE: the NVIDIA driver found no GPU on this host";
    } else {
      d->reason_ = cudaStatus(*d, rc, "cuInit").toString();
    }
    return d;
  }
  d->available_ = true;
  return d;
}

// Every forward checks available_ first: before cuInit succeeded, no entry point is called.
#define GDR_CU_FORWARD(member, ...)                     \
  do {                                                  \
    if (!available_) return CUDA_ERROR_NOT_INITIALIZED; \
    return table_->member(__VA_ARGS__);                 \
  } while (0)

CUresult CudaDriver::driverGetVersion(int* version) {
  GDR_CU_FORWARD(driverGetVersion, version);
}
CUresult CudaDriver::deviceGetCount(int* count) {
  GDR_CU_FORWARD(deviceGetCount, count);
}
CUresult CudaDriver::deviceGet(CUdevice* device, int ordinal) {
  GDR_CU_FORWARD(deviceGet, device, ordinal);
}
CUresult CudaDriver::deviceGetName(char* name, int len, CUdevice dev) {
  GDR_CU_FORWARD(deviceGetName, name, len, dev);
}
CUresult CudaDriver::deviceGetUuid(CUuuid* uuid, CUdevice dev) {
  GDR_CU_FORWARD(deviceGetUuid, uuid, dev);
}
CUresult CudaDriver::deviceGetPCIBusId(char* bus_id, int len, CUdevice dev) {
  GDR_CU_FORWARD(deviceGetPCIBusId, bus_id, len, dev);
}
CUresult CudaDriver::deviceTotalMem(size_t* bytes, CUdevice dev) {
  GDR_CU_FORWARD(deviceTotalMem, bytes, dev);
}
CUresult CudaDriver::deviceGetAttribute(int* value, int attribute, CUdevice dev) {
  GDR_CU_FORWARD(deviceGetAttribute, value, attribute, dev);
}
CUresult CudaDriver::devicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  GDR_CU_FORWARD(devicePrimaryCtxRetain, ctx, dev);
}
CUresult CudaDriver::devicePrimaryCtxRelease(CUdevice dev) {
  GDR_CU_FORWARD(devicePrimaryCtxRelease, dev);
}
CUresult CudaDriver::ctxSetCurrent(CUcontext ctx) {
  GDR_CU_FORWARD(ctxSetCurrent, ctx);
}
CUresult CudaDriver::ctxPushCurrent(CUcontext ctx) {
  GDR_CU_FORWARD(ctxPushCurrent, ctx);
}
CUresult CudaDriver::ctxPopCurrent(CUcontext* ctx) {
  GDR_CU_FORWARD(ctxPopCurrent, ctx);
}
CUresult CudaDriver::ctxSynchronize() {
  if (!available_) return CUDA_ERROR_NOT_INITIALIZED;
  return table_->ctxSynchronize();
}
CUresult CudaDriver::memAlloc(CUdeviceptr* dptr, size_t bytes) {
  GDR_CU_FORWARD(memAlloc, dptr, bytes);
}
CUresult CudaDriver::memFree(CUdeviceptr dptr) {
  GDR_CU_FORWARD(memFree, dptr);
}
CUresult CudaDriver::memcpyHtoD(CUdeviceptr dst, const void* src, size_t bytes) {
  GDR_CU_FORWARD(memcpyHtoD, dst, src, bytes);
}
CUresult CudaDriver::memcpyDtoH(void* dst, CUdeviceptr src, size_t bytes) {
  GDR_CU_FORWARD(memcpyDtoH, dst, src, bytes);
}
CUresult CudaDriver::memsetD8(CUdeviceptr dst, unsigned char value, size_t count) {
  GDR_CU_FORWARD(memsetD8, dst, value, count);
}
CUresult CudaDriver::memGetAddressRange(CUdeviceptr* base, size_t* size, CUdeviceptr dptr) {
  GDR_CU_FORWARD(memGetAddressRange, base, size, dptr);
}
CUresult CudaDriver::memGetHandleForAddressRange(void* handle, CUdeviceptr dptr, size_t size,
                                                 int handle_type,
                                                 unsigned long long flags) {  // NOLINT
  if (available_ && table_->memGetHandleForAddressRange == nullptr) return CUDA_ERROR_NOT_FOUND;
  GDR_CU_FORWARD(memGetHandleForAddressRange, handle, dptr, size, handle_type, flags);
}
CUresult CudaDriver::pointerSetAttribute(const void* value, int attribute, CUdeviceptr dptr) {
  GDR_CU_FORWARD(pointerSetAttribute, value, attribute, dptr);
}
CUresult CudaDriver::moduleLoadData(CUmodule* module, const void* image) {
  GDR_CU_FORWARD(moduleLoadData, module, image);
}
CUresult CudaDriver::moduleUnload(CUmodule module) {
  GDR_CU_FORWARD(moduleUnload, module);
}
CUresult CudaDriver::moduleGetFunction(CUfunction* fn, CUmodule module, const char* name) {
  GDR_CU_FORWARD(moduleGetFunction, fn, module, name);
}
CUresult CudaDriver::launchKernel(CUfunction fn, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                                  unsigned block_x, unsigned block_y, unsigned block_z,
                                  unsigned shared_bytes, CUstream stream, void** params,
                                  void** extra) {
  GDR_CU_FORWARD(launchKernel, fn, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes,
                 stream, params, extra);
}

// The error-name functions work before cuInit, so they only need the entry point.
CUresult CudaDriver::getErrorName(CUresult error, const char** name) {
  if (table_->getErrorName == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return table_->getErrorName(error, name);
}
CUresult CudaDriver::getErrorString(CUresult error, const char** text) {
  if (table_->getErrorString == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return table_->getErrorString(error, text);
}

#undef GDR_CU_FORWARD

}  // namespace gdrmesh
