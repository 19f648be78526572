#include "worker/memory/buffer.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace gdrmesh {

DmabufExport::~DmabufExport() {
  if (fd_ >= 0) ::close(fd_);
}

Status checkRange(size_t size, size_t offset, size_t len, const char* what) {
  if (offset > size || len > size - offset) {
    return invalidArgument(std::string(what) + ": range [" + std::to_string(offset) + ", " +
                           std::to_string(offset + len) + ") is outside the " +
                           std::to_string(size) + " B buffer");
  }
  return {};
}

Result<std::unique_ptr<HostBuffer>> HostBuffer::allocate(size_t size, int numa_node) {
  if (size == 0) return invalidArgument("buffer size: must be > 0");
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t mapped = (size + page - 1) / page * page;
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return Status(Code::kResourceExhausted,
                  "mmap of " + std::to_string(mapped) + " B failed: " + std::strerror(errno),
                  "free host memory or use a smaller --size");
  }
  if (numa_node >= 0 && numa_node < 64) {
    // Bind before first touch so the pages land on the NIC's node. MPOL_PREFERRED = 1: a
    // preference, so a full node does not fail the test. Failure is harmless (no NUMA).
    unsigned long mask = 1UL << numa_node;
    (void)::syscall(SYS_mbind, p, mapped, 1 /*MPOL_PREFERRED*/, &mask, 64, 0);
  }
  std::memset(p, 0, mapped);  // first touch
  return std::unique_ptr<HostBuffer>(new HostBuffer(p, size, mapped, numa_node));
}

HostBuffer::~HostBuffer() {
  if (ptr_ != nullptr) ::munmap(ptr_, mapped_);
}

std::string HostBuffer::describe() const {
  return numa_node_ >= 0 ? "host:numa" + std::to_string(numa_node_) : "host";
}

Status HostBuffer::fill(uint64_t seed, size_t offset, size_t len) {
  GDR_RETURN_IF_ERROR(checkRange(size_, offset, len, "fill"));
  fillPattern(seed, offset, static_cast<uint8_t*>(ptr_) + offset, len);
  return {};
}

Result<IntegrityReport> HostBuffer::verify(uint64_t seed, size_t offset, size_t len) {
  GDR_RETURN_IF_ERROR(checkRange(size_, offset, len, "verify"));
  return verifyPattern(seed, offset, static_cast<const uint8_t*>(ptr_) + offset, len);
}

Result<uint64_t> HostBuffer::digest(size_t len) {
  GDR_RETURN_IF_ERROR(checkRange(size_, 0, len, "digest"));
  return digestBytes(ptr_, len);
}

Result<uint64_t> Buffer::digest(size_t len) {
  GDR_RETURN_IF_ERROR(checkRange(size(), 0, len, "digest"));
  constexpr size_t kChunk = 4 << 20;  // whole words: digestBytes chunks continue by word index
  std::vector<uint8_t> host(std::min(len, kChunk));
  uint64_t sum = 0;
  for (size_t pos = 0; pos < len; pos += kChunk) {
    const size_t n = std::min(kChunk, len - pos);
    GDR_RETURN_IF_ERROR(copyToHost(pos, host.data(), n));
    sum += digestBytes(host.data(), n, pos / 8);
  }
  return sum;
}

Status HostBuffer::copyToHost(size_t offset, void* dst, size_t len) {
  GDR_RETURN_IF_ERROR(checkRange(size_, offset, len, "copyToHost"));
  std::memcpy(dst, static_cast<const uint8_t*>(ptr_) + offset, len);
  return {};
}

Status HostBuffer::copyFromHost(size_t offset, const void* src, size_t len) {
  GDR_RETURN_IF_ERROR(checkRange(size_, offset, len, "copyFromHost"));
  std::memcpy(static_cast<uint8_t*>(ptr_) + offset, src, len);
  return {};
}

}  // namespace gdrmesh
