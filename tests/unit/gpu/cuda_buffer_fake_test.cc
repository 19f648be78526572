// CudaBuffer against a fake driver: allocation, the host-copy fill/verify path, dma-buf export
// arithmetic and error translation. The GPU kernel path is tested on a GPU (tests/gpu).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "tests/unit/gpu/fake_cuda_api.h"
#include "worker/gpu/cuda_buffer.h"

namespace gdrmesh {
namespace {

using testing::FakeCudaApi;

std::unique_ptr<CudaBuffer> mustAllocate(FakeCudaApi& api, size_t size,
                                         CudaBufferOptions opts = {}) {
  Result<std::unique_ptr<CudaBuffer>> b = CudaBuffer::allocate(api, 0, size, opts);
  EXPECT_TRUE(b.ok()) << b.status().toString();
  return b.ok() ? std::move(b).value() : nullptr;
}

TEST(CudaBufferFakeTest, AllocatesInThePrimaryContextWithSyncMemops) {
  FakeCudaApi api;
  {
    auto b = mustAllocate(api, 1000);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->kind(), MemoryKind::kCuda);
    EXPECT_EQ(b->size(), 1000u);
    EXPECT_EQ(b->gpuIndex(), 0);
    EXPECT_TRUE(api.syncMemops(b->devicePtr()));
    EXPECT_EQ(api.contexts_retained, 1);
    EXPECT_EQ(api.context_depth, 0);  // every push was popped
    // The fake cannot load kernels: the buffer says it checks through host memory.
    EXPECT_FALSE(b->gpuKernels());
    EXPECT_EQ(b->describe(), "gpu:0 via host copy");
    EXPECT_FALSE(b->kernelNote().empty());
    std::vector<unsigned char> zero(1000, 0xff);
    ASSERT_TRUE(b->copyToHost(0, zero.data(), zero.size()).ok());
    EXPECT_EQ(zero, std::vector<unsigned char>(1000, 0));  // zeroed
  }
  EXPECT_EQ(api.allocations, 0u);
  EXPECT_EQ(api.contexts_retained, 0);
  EXPECT_EQ(api.context_depth, 0);
}

TEST(CudaBufferFakeTest, HostCopyFillVerifyRoundTripAcrossChunks) {
  FakeCudaApi api;
  CudaBufferOptions opts;
  opts.host_chunk_bytes = 4096;
  auto b = mustAllocate(api, (3u << 20) + 77, opts);
  ASSERT_NE(b, nullptr);
  const uint64_t seed = 0x1234;
  const size_t off = 13, len = (3u << 20) + 50;
  ASSERT_TRUE(b->fill(seed, off, len).ok());

  std::vector<unsigned char> got(len), want(len);
  ASSERT_TRUE(b->copyToHost(off, got.data(), len).ok());
  fillPattern(seed, off, want.data(), len);
  EXPECT_EQ(got, want);

  Result<IntegrityReport> r = b->verify(seed, off, len);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->ok()) << r->toString();
  EXPECT_EQ(r->bytes_checked, len);
  EXPECT_EQ(r->where, "gpu:0 via host copy");

  // Two corrupted bytes in different chunks: both counted, the first one reported.
  unsigned char* first = api.host(b->devicePtr() + off + 9000);
  unsigned char* last = api.host(b->devicePtr() + off + len - 1);
  ASSERT_TRUE(first != nullptr && last != nullptr);
  *first ^= 0x01;
  *last ^= 0x80;
  r = b->verify(seed, off, len);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->wrong_bytes, 2u);
  EXPECT_EQ(r->first_wrong_offset, static_cast<int64_t>(off + 9000));

  // A different seed fails almost every byte.
  r = b->verify(seed + 1, off, 4096);
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->wrong_bytes, 4000u);
}

TEST(CudaBufferFakeTest, RangesOutsideTheBufferAreRejected) {
  FakeCudaApi api;
  auto b = mustAllocate(api, 4096);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->fill(1, 4000, 97).code(), Code::kInvalidArgument);
  EXPECT_EQ(b->verify(1, 4097, 0).status().code(), Code::kInvalidArgument);
  std::vector<char> h(10);
  EXPECT_EQ(b->copyToHost(4090, h.data(), 10).code(), Code::kInvalidArgument);
  EXPECT_EQ(b->copyFromHost(4090, h.data(), 10).code(), Code::kInvalidArgument);
  EXPECT_TRUE(b->fill(1, 4096, 0).ok());
}

TEST(CudaBufferFakeTest, ExportsAPageAlignedDmabufOverTheAllocation) {
  FakeCudaApi api;
  auto b = mustAllocate(api, 5000);
  ASSERT_NE(b, nullptr);
  Result<std::unique_ptr<DmabufExport>> e = b->exportDmabuf();
  ASSERT_TRUE(e.ok()) << e.status().toString();
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  EXPECT_GE((*e)->fd(), 0);
  struct stat st {};
  EXPECT_EQ(::fstat((*e)->fd(), &st), 0);
  EXPECT_EQ((*e)->length() % page, 0u);
  EXPECT_GE((*e)->length(), (*e)->offset() + b->size());
  EXPECT_EQ(api.export_ptr + (*e)->offset(), b->devicePtr());
  EXPECT_EQ(api.export_size, (*e)->length());
  EXPECT_EQ(api.context_depth, 0);
}

TEST(CudaBufferFakeTest, DmabufNotSupportedBecomesAReasonWithTheFix) {
  FakeCudaApi api;
  api.fail["cuMemGetHandleForAddressRange"] = cu::CUDA_ERROR_NOT_SUPPORTED;
  auto b = mustAllocate(api, 1u << 20);
  ASSERT_NE(b, nullptr);
  Result<std::unique_ptr<DmabufExport>> e = b->exportDmabuf();
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(e.status().message().find("cuMemGetHandleForAddressRange"), std::string::npos);
  EXPECT_NE(e.status().message().find("CUDA_ERROR_NOT_SUPPORTED"), std::string::npos);
  EXPECT_NE(e.status().message().find("gpu:0"), std::string::npos);
  EXPECT_NE(e.status().fix().find("open kernel module"), std::string::npos);
  EXPECT_NE(e.status().fix().find("driver >= 515"), std::string::npos);
  EXPECT_NE(e.status().fix().find("kernel >= 5.12"), std::string::npos);
  EXPECT_EQ(api.context_depth, 0);
}

TEST(CudaBufferFakeTest, OldDriverWithoutTheExportEntryPointSaysSo) {
  FakeCudaApi api;
  api.fail["cuMemGetHandleForAddressRange"] = cu::CUDA_ERROR_NOT_FOUND;
  auto b = mustAllocate(api, 4096);
  ASSERT_NE(b, nullptr);
  Result<std::unique_ptr<DmabufExport>> e = b->exportDmabuf();
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().fix().find("515"), std::string::npos) << e.status().toString();
}

TEST(CudaBufferFakeTest, OutOfMemoryNamesTheSizeAndCleansUp) {
  FakeCudaApi api;
  api.fail["cuMemAlloc"] = cu::CUDA_ERROR_OUT_OF_MEMORY;
  Result<std::unique_ptr<Buffer>> b = allocateCudaBuffer(api, 0, 1u << 30);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), Code::kResourceExhausted);
  EXPECT_NE(b.status().message().find("cuMemAlloc(1073741824 B)"), std::string::npos)
      << b.status().message();
  EXPECT_EQ(api.contexts_retained, 0);
  EXPECT_EQ(api.context_depth, 0);
}

TEST(CudaBufferFakeTest, UnknownGpuIndexIsNotFound) {
  FakeCudaApi api;
  Result<std::unique_ptr<Buffer>> b = allocateCudaBuffer(api, 3, 4096);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), Code::kNotFound);
  EXPECT_NE(b.status().message().find("--gpu 3"), std::string::npos);
  EXPECT_EQ(allocateCudaBuffer(api, -1, 4096).status().code(), Code::kNotFound);
  EXPECT_EQ(allocateCudaBuffer(api, 0, 0).status().code(), Code::kInvalidArgument);
}

TEST(CudaBufferFakeTest, CopyErrorsCarryTheCallAndTheGpu) {
  FakeCudaApi api;
  auto b = mustAllocate(api, 4096);
  ASSERT_NE(b, nullptr);
  api.fail["cuMemcpyDtoH"] = cu::CUDA_ERROR_ECC_UNCORRECTABLE;
  Result<IntegrityReport> r = b->verify(1, 0, 4096);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  EXPECT_NE(r.status().message().find("cuMemcpyDtoH on gpu:0"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(api.context_depth, 0);
}

}  // namespace
}  // namespace gdrmesh
