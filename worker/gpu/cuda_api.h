// The CUDA driver API as gdrmesh uses it, behind an interface so that tests can fake it.
//
// The worker never links libcuda or cudart: CudaDriver loads libcuda.so.1 with dlopen at run
// time, so one worker binary runs on hosts with and without NVIDIA GPUs. The few CUDA types and
// enum values needed are declared here (values checked against cuda.h of CUDA 13.0); cuda.h is
// not needed to build the worker.
//
// Thread contract: CudaApi methods are thin forwards to the driver and as thread-safe as the
// driver itself. CudaDriver::open is safe to call from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

namespace gdrmesh {

// Driver API types, ABI-compatible with cuda.h (opaque handles are pointers).
// NOLINTBEGIN(readability-identifier-naming): cuda.h's own names (CUDA_SUCCESS, ...), so that
// the code reads as NVIDIA's documentation does and a grep for a CUDA name finds it.
namespace cu {
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;  // NOLINT(google-runtime-int): matches cuda.h
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUstream = CUstream_st*;
struct CUuuid {
  unsigned char bytes[16];
};

// CUresult values (cuda.h enum cudaError_enum).
inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
inline constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
inline constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
inline constexpr CUresult CUDA_ERROR_STUB_LIBRARY = 34;
inline constexpr CUresult CUDA_ERROR_INSUFFICIENT_DRIVER = 35;
inline constexpr CUresult CUDA_ERROR_DEVICE_UNAVAILABLE = 46;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
inline constexpr CUresult CUDA_ERROR_INVALID_DEVICE = 101;
inline constexpr CUresult CUDA_ERROR_INVALID_IMAGE = 200;
inline constexpr CUresult CUDA_ERROR_NO_BINARY_FOR_GPU = 209;
inline constexpr CUresult CUDA_ERROR_ECC_UNCORRECTABLE = 214;
inline constexpr CUresult CUDA_ERROR_INVALID_PTX = 218;
inline constexpr CUresult CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222;
inline constexpr CUresult CUDA_ERROR_OPERATING_SYSTEM = 304;
inline constexpr CUresult CUDA_ERROR_INVALID_HANDLE = 400;
inline constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
inline constexpr CUresult CUDA_ERROR_ILLEGAL_ADDRESS = 700;
inline constexpr CUresult CUDA_ERROR_LAUNCH_FAILED = 719;
inline constexpr CUresult CUDA_ERROR_NOT_SUPPORTED = 801;
inline constexpr CUresult CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803;
inline constexpr CUresult CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804;
inline constexpr CUresult CUDA_ERROR_UNKNOWN = 999;

// CUdevice_attribute values.
inline constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
inline constexpr int CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED = 116;
inline constexpr int CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 124;

// CUpointer_attribute and CUmemRangeHandleType values.
inline constexpr int CU_POINTER_ATTRIBUTE_SYNC_MEMOPS = 6;
inline constexpr int CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 1;
}  // namespace cu
// NOLINTEND(readability-identifier-naming)

// One method per driver entry point, same arguments and CUresult return as the driver
// (the versioned _v2 entry points where cuda.h maps the plain name to one).
class CudaApi {
 public:
  virtual ~CudaApi() = default;

  // False when the driver library could not be loaded or initialised; reason() says why
  // ("libcuda.so.1 not found: no NVIDIA driver on this host").
  virtual bool available() const = 0;
  virtual std::string reason() const = 0;

  virtual cu::CUresult driverGetVersion(int* version) = 0;
  virtual cu::CUresult deviceGetCount(int* count) = 0;
  virtual cu::CUresult deviceGet(cu::CUdevice* device, int ordinal) = 0;
  virtual cu::CUresult deviceGetName(char* name, int len, cu::CUdevice dev) = 0;
  virtual cu::CUresult deviceGetUuid(cu::CUuuid* uuid, cu::CUdevice dev) = 0;
  virtual cu::CUresult deviceGetPCIBusId(char* bus_id, int len, cu::CUdevice dev) = 0;
  virtual cu::CUresult deviceTotalMem(size_t* bytes, cu::CUdevice dev) = 0;
  virtual cu::CUresult deviceGetAttribute(int* value, int attribute, cu::CUdevice dev) = 0;

  virtual cu::CUresult devicePrimaryCtxRetain(cu::CUcontext* ctx, cu::CUdevice dev) = 0;
  virtual cu::CUresult devicePrimaryCtxRelease(cu::CUdevice dev) = 0;
  virtual cu::CUresult ctxSetCurrent(cu::CUcontext ctx) = 0;
  virtual cu::CUresult ctxPushCurrent(cu::CUcontext ctx) = 0;
  virtual cu::CUresult ctxPopCurrent(cu::CUcontext* ctx) = 0;
  virtual cu::CUresult ctxSynchronize() = 0;

  virtual cu::CUresult memAlloc(cu::CUdeviceptr* dptr, size_t bytes) = 0;
  virtual cu::CUresult memFree(cu::CUdeviceptr dptr) = 0;
  virtual cu::CUresult memcpyHtoD(cu::CUdeviceptr dst, const void* src, size_t bytes) = 0;
  virtual cu::CUresult memcpyDtoH(void* dst, cu::CUdeviceptr src, size_t bytes) = 0;
  virtual cu::CUresult memsetD8(cu::CUdeviceptr dst, unsigned char value, size_t count) = 0;
  virtual cu::CUresult memGetAddressRange(cu::CUdeviceptr* base, size_t* size,
                                          cu::CUdeviceptr dptr) = 0;
  // Returns CUDA_ERROR_NOT_FOUND when the driver has no such entry point (older than 515).
  virtual cu::CUresult memGetHandleForAddressRange(void* handle, cu::CUdeviceptr dptr, size_t size,
                                                   int handle_type,
                                                   unsigned long long flags) = 0;  // NOLINT
  virtual cu::CUresult pointerSetAttribute(const void* value, int attribute,
                                           cu::CUdeviceptr dptr) = 0;

  virtual cu::CUresult moduleLoadData(cu::CUmodule* module, const void* image) = 0;
  virtual cu::CUresult moduleUnload(cu::CUmodule module) = 0;
  virtual cu::CUresult moduleGetFunction(cu::CUfunction* fn, cu::CUmodule module,
                                         const char* name) = 0;
  virtual cu::CUresult launchKernel(cu::CUfunction fn, unsigned grid_x, unsigned grid_y,
                                    unsigned grid_z, unsigned block_x, unsigned block_y,
                                    unsigned block_z, unsigned shared_bytes, cu::CUstream stream,
                                    void** params, void** extra) = 0;

  virtual cu::CUresult getErrorName(cu::CUresult error, const char** name) = 0;
  virtual cu::CUresult getErrorString(cu::CUresult error, const char** text) = 0;
};

// The real driver, loaded with dlopen. open() never fails: when the library or a required
// entry point is missing, or cuInit fails, available() is false and reason() says why; every
// call then returns CUDA_ERROR_NOT_INITIALIZED.
class CudaDriver final : public CudaApi {
 public:
  static std::unique_ptr<CudaDriver> open(const std::string& library = "libcuda.so.1");
  ~CudaDriver() override;
  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;

  bool available() const override { return available_; }
  std::string reason() const override { return reason_; }

  cu::CUresult driverGetVersion(int* version) override;
  cu::CUresult deviceGetCount(int* count) override;
  cu::CUresult deviceGet(cu::CUdevice* device, int ordinal) override;
  cu::CUresult deviceGetName(char* name, int len, cu::CUdevice dev) override;
  cu::CUresult deviceGetUuid(cu::CUuuid* uuid, cu::CUdevice dev) override;
  cu::CUresult deviceGetPCIBusId(char* bus_id, int len, cu::CUdevice dev) override;
  cu::CUresult deviceTotalMem(size_t* bytes, cu::CUdevice dev) override;
  cu::CUresult deviceGetAttribute(int* value, int attribute, cu::CUdevice dev) override;
  cu::CUresult devicePrimaryCtxRetain(cu::CUcontext* ctx, cu::CUdevice dev) override;
  cu::CUresult devicePrimaryCtxRelease(cu::CUdevice dev) override;
  cu::CUresult ctxSetCurrent(cu::CUcontext ctx) override;
  cu::CUresult ctxPushCurrent(cu::CUcontext ctx) override;
  cu::CUresult ctxPopCurrent(cu::CUcontext* ctx) override;
  cu::CUresult ctxSynchronize() override;
  cu::CUresult memAlloc(cu::CUdeviceptr* dptr, size_t bytes) override;
  cu::CUresult memFree(cu::CUdeviceptr dptr) override;
  cu::CUresult memcpyHtoD(cu::CUdeviceptr dst, const void* src, size_t bytes) override;
  cu::CUresult memcpyDtoH(void* dst, cu::CUdeviceptr src, size_t bytes) override;
  cu::CUresult memsetD8(cu::CUdeviceptr dst, unsigned char value, size_t count) override;
  cu::CUresult memGetAddressRange(cu::CUdeviceptr* base, size_t* size,
                                  cu::CUdeviceptr dptr) override;
  cu::CUresult memGetHandleForAddressRange(void* handle, cu::CUdeviceptr dptr, size_t size,
                                           int handle_type,
                                           unsigned long long flags) override;  // NOLINT
  cu::CUresult pointerSetAttribute(const void* value, int attribute, cu::CUdeviceptr dptr) override;
  cu::CUresult moduleLoadData(cu::CUmodule* module, const void* image) override;
  cu::CUresult moduleUnload(cu::CUmodule module) override;
  cu::CUresult moduleGetFunction(cu::CUfunction* fn, cu::CUmodule module,
                                 const char* name) override;
  cu::CUresult launchKernel(cu::CUfunction fn, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                            unsigned block_x, unsigned block_y, unsigned block_z,
                            unsigned shared_bytes, cu::CUstream stream, void** params,
                            void** extra) override;
  cu::CUresult getErrorName(cu::CUresult error, const char** name) override;
  cu::CUresult getErrorString(cu::CUresult error, const char** text) override;

  struct Table;  // resolved entry points (defined in cuda_driver.cc)

 private:
  CudaDriver();
  void* handle_ = nullptr;
  std::unique_ptr<Table> table_;
  bool available_ = false;
  std::string reason_;
};

// "CUDA_ERROR_NOT_SUPPORTED" (from the driver when it knows the value, else "CUresult 801").
std::string cudaErrorName(CudaApi& api, cu::CUresult error);

// Turns a failed driver call into a Status naming the call, the device and the CUresult, with
// the Code and fix that fit the error. `call` is e.g. "cuMemAlloc(1073741824 B)", `where` is
// e.g. "gpu:0" (may be empty). CUDA_SUCCESS gives an OK status.
Status cudaStatus(CudaApi& api, cu::CUresult error, const std::string& call,
                  const std::string& where = {});

}  // namespace gdrmesh
