// CudaBuffer on a real GPU: the kernels must produce exactly common/pattern.h and find every
// wrong byte. Skips with the reason on hosts without a GPU.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <random>
#include <vector>

#include "worker/gpu/cuda_buffer.h"
#include "worker/gpu/discovery.h"
#include "worker/gpu/kernel_image.h"

namespace gdrmesh {
namespace {

// Sets `count` bytes at `offset` of the buffer to `value` with cuMemsetD8.
void memsetBytes(CudaApi& api, CudaBuffer& b, size_t offset, unsigned char value, size_t count) {
  cu::CUdevice dev = 0;
  cu::CUcontext ctx = nullptr;
  ASSERT_EQ(api.deviceGet(&dev, b.gpuIndex()), cu::CUDA_SUCCESS);
  ASSERT_EQ(api.devicePrimaryCtxRetain(&ctx, dev), cu::CUDA_SUCCESS);
  ASSERT_EQ(api.ctxPushCurrent(ctx), cu::CUDA_SUCCESS);
  EXPECT_EQ(api.memsetD8(b.devicePtr() + offset, value, count), cu::CUDA_SUCCESS);
  EXPECT_EQ(api.ctxSynchronize(), cu::CUDA_SUCCESS);
  cu::CUcontext popped = nullptr;
  EXPECT_EQ(api.ctxPopCurrent(&popped), cu::CUDA_SUCCESS);
  EXPECT_EQ(api.devicePrimaryCtxRelease(dev), cu::CUDA_SUCCESS);
}

class CudaBufferGpuTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { driver_ = CudaDriver::open().release(); }
  void SetUp() override {
    if (!driver_->available()) GTEST_SKIP() << "no GPU: " << driver_->reason();
    int count = 0;
    if (driver_->deviceGetCount(&count) != cu::CUDA_SUCCESS || count == 0) {
      GTEST_SKIP() << "no GPU: the NVIDIA driver sees none";
    }
  }
  static CudaApi& api() { return *driver_; }

  std::unique_ptr<CudaBuffer> allocate(size_t size, CudaBufferOptions opts = {}) {
    Result<std::unique_ptr<CudaBuffer>> b = CudaBuffer::allocate(api(), 0, size, opts);
    EXPECT_TRUE(b.ok()) << b.status().toString();
    return b.ok() ? std::move(b).value() : nullptr;
  }

  static CudaDriver* driver_;
};
CudaDriver* CudaBufferGpuTest::driver_ = nullptr;

TEST_F(CudaBufferGpuTest, DiscoversTheGpu) {
  Result<std::vector<Gpu>> gpus = discoverGpus(api());
  ASSERT_TRUE(gpus.ok()) << gpus.status().toString();
  ASSERT_FALSE(gpus->empty());
  for (const Gpu& g : *gpus) {
    std::cout << "gpu:" << g.index << " " << g.name << " " << g.uuid << " " << g.pci_bus_id
              << " numa " << g.numa_node << " " << g.memory_bytes << " B cc "
              << g.compute_capability_major << "." << g.compute_capability_minor << " dmabuf "
              << g.dma_buf_supported << " gdr " << g.gpu_direct_rdma_supported << "\n";
    EXPECT_EQ(g.uuid.rfind("GPU-", 0), 0u);
    EXPECT_EQ(g.uuid.size(), 40u);
    EXPECT_EQ(normalizePciBusId(g.pci_bus_id), g.pci_bus_id);
    EXPECT_GE(g.compute_capability_major, 7);
    EXPECT_GT(g.memory_bytes, 0u);
  }
  std::cout << "driver " << cudaDriverVersion(api()) << "\n";
  EXPECT_FALSE(cudaDriverVersion(api()).empty());
}

TEST_F(CudaBufferGpuTest, KernelsRunWhereBuiltIn) {
  auto b = allocate(4096);
  ASSERT_NE(b, nullptr);
  if (gpuKernelImage().data != nullptr) {
    EXPECT_TRUE(b->gpuKernels()) << b->kernelNote();
    EXPECT_EQ(b->describe(), "gpu:0");
  } else {
    EXPECT_EQ(b->describe(), "gpu:0 via host copy");
  }
  std::cout << "kernels: " << b->kernelNote() << "\n";
}

TEST_F(CudaBufferGpuTest, FillWritesExactlyThePatternOfCommonPatternH) {
  const size_t size = (8u << 20) + 13;
  auto b = allocate(size);
  ASSERT_NE(b, nullptr);
  const uint64_t seed = initiatorSeed(42);
  std::vector<unsigned char> got(size), want(size);
  // Whole buffer, then unaligned sub-ranges over a different seed: bytes outside a range keep
  // the first seed's pattern.
  ASSERT_TRUE(b->fill(seed, 0, size).ok());
  ASSERT_TRUE(b->copyToHost(0, got.data(), size).ok());
  fillPattern(seed, 0, want.data(), size);
  ASSERT_EQ(got, want);

  const uint64_t seed2 = targetSeed(42);
  const std::pair<size_t, size_t> ranges[] = {{1, 1},         {3, 12},       {5, 27},
                                              {17, 4096 + 9}, {size - 1, 1}, {size - 31, 31}};
  for (const auto& [off, len] : ranges) {
    ASSERT_TRUE(b->fill(seed2, off, len).ok());
    fillPattern(seed2, off, want.data() + off, len);
  }
  ASSERT_TRUE(b->copyToHost(0, got.data(), size).ok());
  ASSERT_EQ(got, want);
}

TEST_F(CudaBufferGpuTest, VerifyAcceptsThePatternWrittenByTheHost) {
  const size_t size = (4u << 20) + 5;
  auto b = allocate(size);
  ASSERT_NE(b, nullptr);
  std::vector<unsigned char> host(size);
  fillPattern(7, 0, host.data(), size);
  ASSERT_TRUE(b->copyFromHost(0, host.data(), size).ok());
  Result<IntegrityReport> r = b->verify(7, 0, size);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_TRUE(r->ok()) << r->toString();
  EXPECT_EQ(r->bytes_checked, size);
  EXPECT_EQ(r->where, b->describe());
  r = b->verify(8, 0, size);
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->wrong_bytes, size * 99 / 100);
  EXPECT_EQ(r->first_wrong_offset, 0);
}

struct Corruption {
  size_t range_offset, range_len;  // the verified range
  size_t at;                       // the corrupted byte (absolute); may lie outside the range
  int64_t want_first;              // -1: not detected (outside the range)
};

void checkCorruptions(CudaApi& api, CudaBuffer& b, const char* label) {
  const size_t size = b.size();
  const uint64_t seed = 99;
  const Corruption cases[] = {
      {0, size, 0, 0},                                      // offset 0
      {0, size, size - 1, static_cast<int64_t>(size - 1)},  // last byte
      {0, size, (1u << 20) + 8, (1u << 20) + 8},            // in the vector body
      {3, 1000, 3, 3},                                      // first byte of an unaligned range
      {3, 1000, 1002, 1002},                                // last byte of it (tail)
      {3, 1000, 2, -1},                                     // just before: not in the range
      {3, 1000, 1003, -1},                                  // just after
      {5, 7, 9, 9},                                         // range inside one 16-byte vector
      {size - 20, 20, size - 3, static_cast<int64_t>(size - 3)},
      {4093, (3u << 20) + 7, 4096 + 15, 4096 + 15},
  };
  for (const Corruption& c : cases) {
    SCOPED_TRACE(std::string(label) + " range [" + std::to_string(c.range_offset) + ", +" +
                 std::to_string(c.range_len) + ") byte " + std::to_string(c.at));
    ASSERT_TRUE(b.fill(seed, 0, size).ok());
    const unsigned char bad = static_cast<unsigned char>(patternByte(seed, c.at) ^ 0x5a);
    memsetBytes(api, b, c.at, bad, 1);
    Result<IntegrityReport> r = b.verify(seed, c.range_offset, c.range_len);
    ASSERT_TRUE(r.ok()) << r.status().toString();
    EXPECT_EQ(r->bytes_checked, c.range_len);
    EXPECT_EQ(r->wrong_bytes, c.want_first < 0 ? 0u : 1u);
    EXPECT_EQ(r->first_wrong_offset, c.want_first);
    EXPECT_EQ(r->where, b.describe());
  }
  // A run of bytes set to one value: every byte that differs from the pattern is counted.
  ASSERT_TRUE(b.fill(seed, 0, size).ok());
  const size_t at = 777, n = 300;
  memsetBytes(api, b, at, 0x00, n);
  uint64_t want_wrong = 0;
  int64_t want_first = -1;
  for (size_t i = at; i < at + n; ++i) {
    if (patternByte(seed, i) != 0) {
      ++want_wrong;
      if (want_first < 0) want_first = static_cast<int64_t>(i);
    }
  }
  Result<IntegrityReport> r = b.verify(seed, 0, size);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->wrong_bytes, want_wrong);
  EXPECT_EQ(r->first_wrong_offset, want_first);
}

TEST_F(CudaBufferGpuTest, FindsEveryCorruptedByteWithItsOffset) {
  auto b = allocate((64u << 20) + 3);  // several grid-stride steps
  ASSERT_NE(b, nullptr);
  checkCorruptions(api(), *b, b->describe().c_str());
}

TEST_F(CudaBufferGpuTest, HostCopyPathFindsTheSameCorruptions) {
  CudaBufferOptions opts;
  opts.use_gpu_kernels = false;
  opts.host_chunk_bytes = 1u << 20;
  auto b = allocate((8u << 20) + 3, opts);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->describe(), "gpu:0 via host copy");
  checkCorruptions(api(), *b, "host copy");
}

TEST_F(CudaBufferGpuTest, SmallLaunchShapesStillCoverEveryByte) {
  CudaBufferOptions opts;
  opts.blocks_per_sm = 1;
  opts.threads_per_block = 32;
  auto b = allocate((32u << 20) + 1, opts);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(b->fill(5, 1, b->size() - 1).ok());
  Result<IntegrityReport> r = b->verify(5, 1, b->size() - 1);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->ok()) << r->toString();
  memsetBytes(api(), *b, b->size() - 1,
              static_cast<unsigned char>(patternByte(5, b->size() - 1) ^ 1), 1);
  r = b->verify(5, 1, b->size() - 1);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->wrong_bytes, 1u);
  EXPECT_EQ(r->first_wrong_offset, static_cast<int64_t>(b->size() - 1));
}

// Sealed tests: the digest computed on the GPU is the one the coordinator computes from the
// seed, and any changed byte changes it.
TEST_F(CudaBufferGpuTest, DigestOnTheGpuMatchesTheDigestOfThePattern) {
  for (size_t size :
       {size_t{1}, size_t{15}, size_t{17}, size_t{4096 + 9}, size_t{(64u << 20) + 5}}) {
    SCOPED_TRACE(size);
    auto b = allocate(size);
    ASSERT_NE(b, nullptr);
    ASSERT_TRUE(b->gpuKernels()) << b->kernelNote();
    ASSERT_TRUE(b->fill(21, 0, size).ok());
    Result<uint64_t> d = b->digest(size);
    ASSERT_TRUE(d.ok()) << d.status().toString();
    EXPECT_EQ(*d, digestPattern(21, size));
    memsetBytes(api(), *b, size - 1, static_cast<unsigned char>(patternByte(21, size - 1) ^ 4), 1);
    d = b->digest(size);
    ASSERT_TRUE(d.ok());
    EXPECT_NE(*d, digestPattern(21, size));
    // The host-copy path computes the same function.
    Result<uint64_t> h = b->Buffer::digest(size);
    ASSERT_TRUE(h.ok());
    EXPECT_EQ(*h, *d);
  }
}

TEST_F(CudaBufferGpuTest, DigestWithSmallLaunchShapesCoversEveryWord) {
  CudaBufferOptions opts;
  opts.blocks_per_sm = 1;
  opts.threads_per_block = 40;  // not a whole number of warps: rounded up
  const size_t size = (16u << 20) + 3;
  auto b = allocate(size, opts);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(b->fill(8, 0, size).ok());
  Result<uint64_t> d = b->digest(size);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, digestPattern(8, size));
}

TEST_F(CudaBufferGpuTest, CopiesToAndFromHostAtUnalignedOffsets) {
  const size_t size = (1u << 20) + 7;
  auto b = allocate(size);
  ASSERT_NE(b, nullptr);
  std::mt19937_64 rng(1);
  std::vector<unsigned char> src(size), dst(size, 0);
  for (auto& c : src) c = static_cast<unsigned char>(rng());
  ASSERT_TRUE(b->copyFromHost(0, src.data(), size).ok());
  ASSERT_TRUE(b->copyToHost(0, dst.data(), size).ok());
  EXPECT_EQ(src, dst);
  ASSERT_TRUE(b->copyFromHost(3, src.data(), 1001).ok());
  std::vector<unsigned char> part(1001);
  ASSERT_TRUE(b->copyToHost(3, part.data(), part.size()).ok());
  EXPECT_TRUE(std::equal(part.begin(), part.end(), src.begin()));
  EXPECT_EQ(b->copyToHost(size - 1, dst.data(), 2).code(), Code::kInvalidArgument);
}

TEST_F(CudaBufferGpuTest, ExportsADmabuf) {
  auto b = allocate((16u << 20) + 100);
  ASSERT_NE(b, nullptr);
  Result<std::unique_ptr<DmabufExport>> e = b->exportDmabuf();
  if (!e.ok() && e.status().code() == Code::kFailedPrecondition) {
    GTEST_SKIP() << "dma-buf not supported here: " << e.status().toString();
  }
  ASSERT_TRUE(e.ok()) << e.status().toString();
  const int fd = (*e)->fd();
  ASSERT_GE(fd, 0);
  struct stat st {};
  ASSERT_EQ(::fstat(fd, &st), 0);
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  EXPECT_EQ((*e)->length() % page, 0u);
  EXPECT_LE((*e)->offset() + b->size(), (*e)->length());
  const off_t end = ::lseek(fd, 0, SEEK_END);
  EXPECT_GE(end, static_cast<off_t>((*e)->length()));
  std::cout << "dma-buf fd " << fd << " offset " << (*e)->offset() << " length " << (*e)->length()
            << " lseek end " << end << "\n";
  // Two exports of one buffer are two fds; both close with their owners.
  Result<std::unique_ptr<DmabufExport>> e2 = b->exportDmabuf();
  ASSERT_TRUE(e2.ok());
  EXPECT_NE((*e2)->fd(), fd);
}

}  // namespace
}  // namespace gdrmesh
