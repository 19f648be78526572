// Test buffers: where the bytes of a test live. A Buffer is host memory or GPU memory; the
// transports move bytes in and out of it, the session fills and verifies it.
//
// Thread contract: a Buffer is used by one test at a time; methods are not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/pattern.h"
#include "common/status.h"
#include "common/types.h"

namespace gdrmesh {

// A dma-buf file descriptor covering a buffer, for ibv_reg_dmabuf_mr. The fd is owned by the
// object and closed on destruction. `offset` is the buffer's start within the exported range
// (the export is aligned to the host page size as the driver requires).
class DmabufExport {
 public:
  DmabufExport(int fd, uint64_t offset, uint64_t length)
      : fd_(fd), offset_(offset), length_(length) {}
  ~DmabufExport();
  DmabufExport(const DmabufExport&) = delete;
  DmabufExport& operator=(const DmabufExport&) = delete;
  int fd() const { return fd_; }
  uint64_t offset() const { return offset_; }
  uint64_t length() const { return length_; }

 private:
  int fd_;
  uint64_t offset_;
  uint64_t length_;
};

class Buffer {
 public:
  virtual ~Buffer() = default;

  virtual MemoryKind kind() const = 0;
  // Host pointer for host memory; device pointer (CUdeviceptr value) for GPU memory.
  virtual void* data() = 0;
  virtual size_t size() const = 0;
  // GPU index for GPU memory, -1 for host memory.
  virtual int gpuIndex() const { return -1; }
  // "host", "host:numa1", "gpu:0"
  virtual std::string describe() const = 0;

  // Fills [offset, offset + len) with the reproducible pattern of `seed` (common/pattern.h),
  // where the memory lives (a GPU kernel for GPU memory).
  virtual Status fill(uint64_t seed, size_t offset, size_t len) = 0;
  // Checks [offset, offset + len) against the pattern of `seed`, where the memory lives.
  virtual Result<IntegrityReport> verify(uint64_t seed, size_t offset, size_t len) = 0;
  // digestBytes() of [0, len) (sealed tests). The default copies to the host in chunks.
  virtual Result<uint64_t> digest(size_t len);

  // Copies between this buffer and host memory; used by the emulated transport and by staging.
  virtual Status copyToHost(size_t offset, void* dst, size_t len) = 0;
  virtual Status copyFromHost(size_t offset, const void* src, size_t len) = 0;

  // Exports the buffer as a dma-buf for ibv_reg_dmabuf_mr. Host buffers: kUnimplemented.
  virtual Result<std::unique_ptr<DmabufExport>> exportDmabuf() {
    return unimplemented("dma-buf export is only defined for GPU memory");
  }
};

// Page-aligned host memory, first touched (and so placed) on `numa_node` when >= 0.
class HostBuffer final : public Buffer {
 public:
  static Result<std::unique_ptr<HostBuffer>> allocate(size_t size, int numa_node = -1);
  ~HostBuffer() override;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  MemoryKind kind() const override { return MemoryKind::kHost; }
  void* data() override { return ptr_; }
  size_t size() const override { return size_; }
  std::string describe() const override;
  Status fill(uint64_t seed, size_t offset, size_t len) override;
  Result<IntegrityReport> verify(uint64_t seed, size_t offset, size_t len) override;
  Result<uint64_t> digest(size_t len) override;
  Status copyToHost(size_t offset, void* dst, size_t len) override;
  Status copyFromHost(size_t offset, const void* src, size_t len) override;

 private:
  HostBuffer(void* ptr, size_t size, size_t mapped, int numa_node)
      : ptr_(ptr), size_(size), mapped_(mapped), numa_node_(numa_node) {}
  void* ptr_;
  size_t size_;
  size_t mapped_;
  int numa_node_;
};

// Checks that [offset, offset + len) lies inside a buffer of `size` bytes.
Status checkRange(size_t size, size_t offset, size_t len, const char* what);

}  // namespace gdrmesh
