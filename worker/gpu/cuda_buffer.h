// GPU test buffers: device memory on one GPU, in that GPU's primary context.
//
// fill/verify run on the GPU with the kernels of kernels.cu when the library was built with
// them and the driver loads them; otherwise they go through host memory in chunks, and
// describe() and IntegrityReport::where say so ("gpu:0 via host copy"), so a staged check never
// passes as an on-GPU one.
//
// Thread contract: as Buffer (one test at a time). Each method makes the GPU's primary context
// current for its duration and restores the caller's context; the CudaApi must outlive the
// buffer.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "common/status.h"
#include "worker/gpu/cuda_api.h"
#include "worker/memory/buffer.h"

namespace gdrmesh {

struct CudaBufferOptions {
  // false: fill/verify through host memory even when the kernels are there (tests, bench).
  bool use_gpu_kernels = true;
  // Host staging chunk of the host-copy path.
  size_t host_chunk_bytes = 64u << 20;
  // Launch shape of the kernels: blocks per multiprocessor (grid-stride loop) and threads per
  // block. The defaults were measured on an H100 (tests/gpu/bench.cc).
  unsigned blocks_per_sm = 4;
  unsigned threads_per_block = 256;
};

// Allocates `size` bytes of device memory on GPU `gpu_index` (the CUDA ordinal, as in
// Gpu::index) with CU_POINTER_ATTRIBUTE_SYNC_MEMOPS set, as GPUDirect RDMA needs. The memory
// is zeroed. Errors: kFailedPrecondition when the driver is absent (api.reason() inside),
// kNotFound for a bad index, kResourceExhausted when the GPU is out of memory.
Result<std::unique_ptr<Buffer>> allocateCudaBuffer(CudaApi& api, int gpu_index, size_t size,
                                                   const CudaBufferOptions& options = {});

class CudaBuffer final : public Buffer {
 public:
  static Result<std::unique_ptr<CudaBuffer>> allocate(CudaApi& api, int gpu_index, size_t size,
                                                      const CudaBufferOptions& options = {});
  ~CudaBuffer() override;
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;

  MemoryKind kind() const override { return MemoryKind::kCuda; }
  // The device pointer (a CUdeviceptr value); never dereference it on the host.
  void* data() override;
  size_t size() const override { return size_; }
  int gpuIndex() const override { return gpu_index_; }
  // "gpu:0" when fill/verify run on the GPU, "gpu:0 via host copy" otherwise.
  std::string describe() const override;

  Status fill(uint64_t seed, size_t offset, size_t len) override;
  Result<IntegrityReport> verify(uint64_t seed, size_t offset, size_t len) override;
  // On the GPU (gdrmesh_digest) when the kernels are loaded, else via host copies.
  Result<uint64_t> digest(size_t len) override;
  Status copyToHost(size_t offset, void* dst, size_t len) override;
  Status copyFromHost(size_t offset, const void* src, size_t len) override;

  // A dma-buf over the host-page-aligned range that covers the buffer (inside its allocation);
  // DmabufExport::offset() is the buffer's start within it. Each call exports a new fd.
  Result<std::unique_ptr<DmabufExport>> exportDmabuf() override;

  // True when fill/verify run as GPU kernels; kernelNote() says why not otherwise.
  bool gpuKernels() const { return fill_fn_ != nullptr; }
  const std::string& kernelNote() const { return kernel_note_; }
  cu::CUdeviceptr devicePtr() const { return dptr_; }

 private:
  CudaBuffer(CudaApi& api, int gpu_index, cu::CUdevice dev, size_t size, CudaBufferOptions opts)
      : api_(api), gpu_index_(gpu_index), dev_(dev), size_(size), options_(opts) {}
  Status init();
  void loadKernels();
  Status fillHost(uint64_t seed, size_t offset, size_t len);
  Result<IntegrityReport> verifyHost(uint64_t seed, size_t offset, size_t len);
  Status launch(cu::CUfunction fn, void** params, uint64_t len, const char* what);
  std::string where() const { return "gpu:" + std::to_string(gpu_index_); }

  CudaApi& api_;
  int gpu_index_;
  cu::CUdevice dev_;
  size_t size_;
  CudaBufferOptions options_;
  cu::CUcontext ctx_ = nullptr;
  bool ctx_retained_ = false;
  cu::CUdeviceptr dptr_ = 0;
  size_t alloc_size_ = 0;
  cu::CUdeviceptr result_ptr_ = 0;  // 2 x u64 for the verify kernel
  cu::CUmodule module_ = nullptr;
  cu::CUfunction fill_fn_ = nullptr;
  cu::CUfunction verify_fn_ = nullptr;
  cu::CUfunction digest_fn_ = nullptr;
  unsigned max_blocks_ = 0;
  std::string kernel_note_;
};

}  // namespace gdrmesh
