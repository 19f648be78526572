#include "worker/gpu/cuda_buffer.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "worker/gpu/kernel_image.h"

namespace gdrmesh {

namespace {

// Makes a context current for a scope and restores the previous one.
class ScopedContext {
 public:
  ScopedContext(CudaApi& api, cu::CUcontext ctx, const std::string& where) : api_(api) {
    status_ = cudaStatus(api, api.ctxPushCurrent(ctx), "cuCtxPushCurrent", where);
  }
  ~ScopedContext() {
    if (status_.ok()) {
      cu::CUcontext popped = nullptr;
      (void)api_.ctxPopCurrent(&popped);
    }
  }
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;
  const Status& status() const { return status_; }

 private:
  CudaApi& api_;
  Status status_;
};

// NOLINTBEGIN(bugprone-macro-parentheses): `scope` is the name of the variable it declares.
#define GDR_CUDA_SCOPE(scope)               \
  ScopedContext scope(api_, ctx_, where()); \
  if (!scope.status().ok()) return scope.status()
// NOLINTEND(bugprone-macro-parentheses)

size_t alignUp(size_t v, size_t a) {
  return (v + a - 1) / a * a;
}

size_t hostPageSize() {
  const long page = ::sysconf(_SC_PAGESIZE);  // NOLINT(google-runtime-int): sysconf
  return page > 0 ? static_cast<size_t>(page) : 4096;
}

constexpr unsigned kUnroll = 4;  // vectors per thread per loop step, as in kernels.cu

}  // namespace

Result<std::unique_ptr<Buffer>> allocateCudaBuffer(CudaApi& api, int gpu_index, size_t size,
                                                   const CudaBufferOptions& options) {
  GDR_ASSIGN_OR_RETURN(std::unique_ptr<CudaBuffer> b,
                       CudaBuffer::allocate(api, gpu_index, size, options));
  return std::unique_ptr<Buffer>(std::move(b));
}

Result<std::unique_ptr<CudaBuffer>> CudaBuffer::allocate(CudaApi& api, int gpu_index, size_t size,
                                                         const CudaBufferOptions& options) {
  if (size == 0) return invalidArgument("buffer size: must be > 0");
  if (!api.available()) {
    return failedPrecondition("--memory cuda: no usable CUDA driver: " + api.reason(),
                              "install the NVIDIA driver, or test host memory (--memory host)");
  }
  int count = 0;
  const cu::CUresult rc = api.deviceGetCount(&count);
  if (rc != cu::CUDA_SUCCESS && rc != cu::CUDA_ERROR_NO_DEVICE) {
    return cudaStatus(api, rc, "cuDeviceGetCount");
  }
  if (gpu_index < 0 || gpu_index >= count) {
    return notFound("--gpu " + std::to_string(gpu_index) + ": this host has " +
                        std::to_string(count) + " GPU(s)",
                    "pick a GPU index that `gdrmesh inventory` lists");
  }
  cu::CUdevice dev = 0;
  GDR_RETURN_IF_ERROR(cudaStatus(api, api.deviceGet(&dev, gpu_index), "cuDeviceGet",
                                 "gpu:" + std::to_string(gpu_index)));
  std::unique_ptr<CudaBuffer> b(new CudaBuffer(api, gpu_index, dev, size, options));
  GDR_RETURN_IF_ERROR(b->init());
  return b;
}

Status CudaBuffer::init() {
  GDR_RETURN_IF_ERROR(cudaStatus(api_, api_.devicePrimaryCtxRetain(&ctx_, dev_),
                                 "cuDevicePrimaryCtxRetain", where()));
  ctx_retained_ = true;
  GDR_CUDA_SCOPE(scope);

  // Whole host pages (and 64 KiB GPU pages), so that the dma-buf export of the page-aligned
  // range stays inside the allocation.
  alloc_size_ = alignUp(size_, std::max<size_t>(hostPageSize(), 64u << 10));
  GDR_RETURN_IF_ERROR(cudaStatus(api_, api_.memAlloc(&dptr_, alloc_size_),
                                 "cuMemAlloc(" + std::to_string(alloc_size_) + " B)", where()));
  // GPUDirect RDMA: synchronous memory operations on this range complete before they return,
  // so the NIC never sees data that a cuMemcpy has not finished writing.
  const unsigned int one = 1;
  GDR_RETURN_IF_ERROR(
      cudaStatus(api_, api_.pointerSetAttribute(&one, cu::CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, dptr_),
                 "cuPointerSetAttribute(SYNC_MEMOPS)", where()));
  GDR_RETURN_IF_ERROR(
      cudaStatus(api_, api_.memsetD8(dptr_, 0, alloc_size_), "cuMemsetD8", where()));
  GDR_RETURN_IF_ERROR(cudaStatus(api_, api_.ctxSynchronize(), "cuCtxSynchronize", where()));

  int sms = 0;
  if (api_.deviceGetAttribute(&sms, cu::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev_) !=
          cu::CUDA_SUCCESS ||
      sms <= 0) {
    sms = 16;
  }
  max_blocks_ = static_cast<unsigned>(sms) * std::max(1u, options_.blocks_per_sm);
  if (options_.use_gpu_kernels) {
    loadKernels();
  } else {
    kernel_note_ = "GPU kernels disabled by the caller";
  }
  return {};
}

void CudaBuffer::loadKernels() {
  const GpuKernelImage image = gpuKernelImage();
  if (image.data == nullptr) {
    kernel_note_ = image.note;
    return;
  }
  // Called with the context current (init).
  Status s =
      cudaStatus(api_, api_.moduleLoadData(&module_, image.data), "cuModuleLoadData", where());
  if (s.ok()) {
    s = cudaStatus(api_, api_.moduleGetFunction(&fill_fn_, module_, "gdrmesh_fill"),
                   "cuModuleGetFunction(gdrmesh_fill)", where());
  }
  if (s.ok()) {
    s = cudaStatus(api_, api_.moduleGetFunction(&verify_fn_, module_, "gdrmesh_verify"),
                   "cuModuleGetFunction(gdrmesh_verify)", where());
  }
  if (s.ok()) {
    s = cudaStatus(api_, api_.moduleGetFunction(&digest_fn_, module_, "gdrmesh_digest"),
                   "cuModuleGetFunction(gdrmesh_digest)", where());
  }
  if (s.ok()) {
    s = cudaStatus(api_, api_.memAlloc(&result_ptr_, 16), "cuMemAlloc(16 B)", where());
  }
  if (!s.ok()) {
    kernel_note_ = "GPU kernels unavailable, fill/verify via host copy: " + s.toString();
    fill_fn_ = nullptr;
    verify_fn_ = nullptr;
    digest_fn_ = nullptr;
    return;
  }
  kernel_note_ = image.note;
}

CudaBuffer::~CudaBuffer() {
  if (!ctx_retained_) return;
  {
    ScopedContext scope(api_, ctx_, where());
    if (scope.status().ok()) {
      if (module_ != nullptr) (void)api_.moduleUnload(module_);
      if (result_ptr_ != 0) (void)api_.memFree(result_ptr_);
      if (dptr_ != 0) (void)api_.memFree(dptr_);
    }
  }
  (void)api_.devicePrimaryCtxRelease(dev_);
}

void* CudaBuffer::data() {
  // The driver hands out device addresses as integers (CUdeviceptr); this is that address.
  return reinterpret_cast<void*>(  // NOLINT(performance-no-int-to-ptr): see above
      static_cast<uintptr_t>(dptr_));
}

std::string CudaBuffer::describe() const {
  return gpuKernels() ? where() : where() + " via host copy";
}

Status CudaBuffer::launch(cu::CUfunction fn, void** params, uint64_t len, const char* what) {
  // Whole warps: gdrmesh_digest reduces within a warp.
  const unsigned threads = (std::max(32u, options_.threads_per_block) + 31) / 32 * 32;
  const uint64_t vecs = len / 16 + 1;
  const uint64_t per_block = static_cast<uint64_t>(threads) * kUnroll;
  const uint64_t want = (vecs + per_block - 1) / per_block;
  const unsigned blocks =
      static_cast<unsigned>(std::max<uint64_t>(1, std::min<uint64_t>(want, max_blocks_)));
  return cudaStatus(api_,
                    api_.launchKernel(fn, blocks, 1, 1, threads, 1, 1, 0, nullptr, params, nullptr),
                    std::string("cuLaunchKernel(") + what + ")", where());
}

Status CudaBuffer::fill(uint64_t seed, size_t offset, size_t len) {
  GDR_RETURN_IF_ERROR(checkRange(size_, offset, len, "fill"));
  if (len == 0) return {};
  if (!gpuKernels()) return fillHost(seed, offset, len);
  GDR_CUDA_SCOPE(scope);
  uint64_t off = offset, n = len;
  cu::CUdeviceptr base = dptr_;
  void* params[] = {&base, &seed, &off, &n};
  GDR_RETURN_IF_ERROR(launch(fill_fn_, params, len, "gdrmesh_fill"));
  // The NIC may read the buffer as soon as fill returns.
  return cudaStatus(api_, api_.ctxSynchronize(), "cuCtxSynchronize after gdrmesh_fill", where());
}

Result<IntegrityReport> CudaBuffer::verify(uint64_t seed, size_t offset, size_t len) {
  GDR_RETURN_IF_ERROR(checkRange(size_, offset, len, "verify"));
  if (!gpuKernels()) return verifyHost(seed, offset, len);
  IntegrityReport r;
  r.checked = true;
  r.bytes_checked = len;
  r.where = where();
  if (len == 0) return r;
  GDR_CUDA_SCOPE(scope);
  // {wrong bytes = 0, first wrong offset = UINT64_MAX}
  GDR_RETURN_IF_ERROR(cudaStatus(api_, api_.memsetD8(result_ptr_, 0, 8), "cuMemsetD8", where()));
  GDR_RETURN_IF_ERROR(
      cudaStatus(api_, api_.memsetD8(result_ptr_ + 8, 0xff, 8), "cuMemsetD8", where()));
  uint64_t off = offset, n = len;
  cu::CUdeviceptr base = dptr_, result = result_ptr_;
  void* params[] = {&base, &seed, &off, &n, &result};
  GDR_RETURN_IF_ERROR(launch(verify_fn_, params, len, "gdrmesh_verify"));
  uint64_t out[2] = {0, 0};
  // Same (legacy) stream as the launch: this waits for the kernel and reports its faults.
  GDR_RETURN_IF_ERROR(cudaStatus(api_, api_.memcpyDtoH(out, result_ptr_, sizeof(out)),
                                 "cuMemcpyDtoH after gdrmesh_verify", where()));
  r.wrong_bytes = out[0];
  r.first_wrong_offset = out[0] == 0 ? -1 : static_cast<int64_t>(out[1]);
  return r;
}

Result<uint64_t> CudaBuffer::digest(size_t len) {
  GDR_RETURN_IF_ERROR(checkRange(size_, 0, len, "digest"));
  if (!gpuKernels()) return Buffer::digest(len);
  if (len == 0) return uint64_t{0};
  GDR_CUDA_SCOPE(scope);
  GDR_RETURN_IF_ERROR(cudaStatus(api_, api_.memsetD8(result_ptr_, 0, 8), "cuMemsetD8", where()));
  uint64_t n = len;
  cu::CUdeviceptr base = dptr_, result = result_ptr_;
  void* params[] = {&base, &n, &result};
  GDR_RETURN_IF_ERROR(launch(digest_fn_, params, len, "gdrmesh_digest"));
  uint64_t out = 0;
  GDR_RETURN_IF_ERROR(cudaStatus(api_, api_.memcpyDtoH(&out, result_ptr_, sizeof(out)),
                                 "cuMemcpyDtoH after gdrmesh_digest", where()));
  return out;
}

Status CudaBuffer::fillHost(uint64_t seed, size_t offset, size_t len) {
  GDR_CUDA_SCOPE(scope);
  const size_t chunk = std::max<size_t>(4096, std::min(len, options_.host_chunk_bytes));
  std::vector<uint8_t> host(chunk);
  for (size_t pos = 0; pos < len; pos += chunk) {
    const size_t n = std::min(chunk, len - pos);
    fillPattern(seed, offset + pos, host.data(), n);
    GDR_RETURN_IF_ERROR(cudaStatus(api_, api_.memcpyHtoD(dptr_ + offset + pos, host.data(), n),
                                   "cuMemcpyHtoD", where()));
  }
  return cudaStatus(api_, api_.ctxSynchronize(), "cuCtxSynchronize", where());
}

Result<IntegrityReport> CudaBuffer::verifyHost(uint64_t seed, size_t offset, size_t len) {
  IntegrityReport r;
  r.checked = true;
  r.bytes_checked = len;
  r.where = where() + " via host copy";
  if (len == 0) return r;
  GDR_CUDA_SCOPE(scope);
  const size_t chunk = std::max<size_t>(4096, std::min(len, options_.host_chunk_bytes));
  std::vector<uint8_t> host(chunk);
  for (size_t pos = 0; pos < len; pos += chunk) {
    const size_t n = std::min(chunk, len - pos);
    GDR_RETURN_IF_ERROR(cudaStatus(api_, api_.memcpyDtoH(host.data(), dptr_ + offset + pos, n),
                                   "cuMemcpyDtoH", where()));
    const IntegrityReport part = verifyPattern(seed, offset + pos, host.data(), n);
    if (part.wrong_bytes != 0 && r.first_wrong_offset < 0) {
      r.first_wrong_offset = part.first_wrong_offset;
    }
    r.wrong_bytes += part.wrong_bytes;
  }
  return r;
}

Status CudaBuffer::copyToHost(size_t offset, void* dst, size_t len) {
  GDR_RETURN_IF_ERROR(checkRange(size_, offset, len, "copyToHost"));
  if (len == 0) return {};
  GDR_CUDA_SCOPE(scope);
  return cudaStatus(api_, api_.memcpyDtoH(dst, dptr_ + offset, len), "cuMemcpyDtoH", where());
}

Status CudaBuffer::copyFromHost(size_t offset, const void* src, size_t len) {
  GDR_RETURN_IF_ERROR(checkRange(size_, offset, len, "copyFromHost"));
  if (len == 0) return {};
  GDR_CUDA_SCOPE(scope);
  GDR_RETURN_IF_ERROR(
      cudaStatus(api_, api_.memcpyHtoD(dptr_ + offset, src, len), "cuMemcpyHtoD", where()));
  // A copy from pageable memory may return before its DMA lands; the NIC may read next.
  return cudaStatus(api_, api_.ctxSynchronize(), "cuCtxSynchronize", where());
}

Result<std::unique_ptr<DmabufExport>> CudaBuffer::exportDmabuf() {
  GDR_CUDA_SCOPE(scope);
  // The driver wants a host-page-aligned address and length inside one allocation: export the
  // real allocation (as cuMemGetAddressRange reports it), widened to whole host pages.
  cu::CUdeviceptr alloc_base = 0;
  size_t alloc_len = 0;
  GDR_RETURN_IF_ERROR(cudaStatus(api_, api_.memGetAddressRange(&alloc_base, &alloc_len, dptr_),
                                 "cuMemGetAddressRange", where()));
  const size_t page = hostPageSize();
  const cu::CUdeviceptr start = alloc_base / page * page;
  const cu::CUdeviceptr end = alignUp(alloc_base + alloc_len, page);
  if (dptr_ < start || dptr_ + size_ > end) {
    return internalError("cuMemGetAddressRange on " + where() +
                         " returned a range that does not cover the buffer");
  }
  const size_t length = end - start;
  int fd = -1;
  GDR_RETURN_IF_ERROR(cudaStatus(
      api_,
      api_.memGetHandleForAddressRange(&fd, start, length, cu::CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                                       0),
      "cuMemGetHandleForAddressRange(DMA_BUF_FD, " + std::to_string(length) + " B)", where()));
  if (fd < 0) {
    return internalError("cuMemGetHandleForAddressRange on " + where() +
                         " succeeded without a file descriptor");
  }
  return std::make_unique<DmabufExport>(fd, dptr_ - start, length);
}

}  // namespace gdrmesh
