#include "worker/gpu/discovery.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/support/temp_dir.h"
#include "tests/unit/gpu/fake_cuda_api.h"
#include "worker/gpu/cuda_buffer.h"

namespace gdrmesh {
namespace {

using testing::FakeCudaApi;
using testing::FakeDevice;
using testing::TempDir;

TEST(GpuDiscoveryTest, FillsEveryFieldFromTheDriverAndSysfs) {
  FakeCudaApi api;
  FakeDevice second;
  second.name = "NVIDIA A30";
  second.bus_id = "0000:E3:00.0";
  second.memory = 25769803776ULL;
  second.cc_major = 8;
  second.dmabuf = 0;
  second.gdr = 0;
  api.devices.push_back(second);
  TempDir sys;
  sys.write("bus/pci/devices/0000:1b:00.0/numa_node", "1\n");

  Result<std::vector<Gpu>> gpus = discoverGpus(api, sys.path());
  ASSERT_TRUE(gpus.ok()) << gpus.status().toString();
  ASSERT_EQ(gpus->size(), 2u);
  const Gpu& g = (*gpus)[0];
  EXPECT_EQ(g.index, 0);
  EXPECT_EQ(g.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g.uuid, "GPU-5f2a109c-0102-0304-aabb-ccddeeff0011");
  EXPECT_EQ(g.pci_bus_id, "0000:1b:00.0");
  EXPECT_EQ(g.memory_bytes, 85520809984ULL);
  EXPECT_EQ(g.numa_node, 1);
  EXPECT_EQ(g.compute_capability_major, 9);
  EXPECT_EQ(g.compute_capability_minor, 0);
  EXPECT_TRUE(g.dma_buf_supported);
  EXPECT_TRUE(g.gpu_direct_rdma_supported);

  const Gpu& a30 = (*gpus)[1];
  EXPECT_EQ(a30.index, 1);
  EXPECT_EQ(a30.pci_bus_id, "0000:e3:00.0");
  EXPECT_EQ(a30.numa_node, -1);  // no sysfs entry
  EXPECT_EQ(a30.compute_capability_major, 8);
  EXPECT_FALSE(a30.dma_buf_supported);
  EXPECT_FALSE(a30.gpu_direct_rdma_supported);
}

TEST(GpuDiscoveryTest, NormalisesPciBusIds) {
  EXPECT_EQ(normalizePciBusId("00000000:1B:00.0"), "0000:1b:00.0");
  EXPECT_EQ(normalizePciBusId("0000:1b:00.0"), "0000:1b:00.0");
  EXPECT_EQ(normalizePciBusId("0001:C1:1F.7"), "0001:c1:1f.7");
  EXPECT_EQ(normalizePciBusId("10000:01:00.0"), "10000:01:00.0");  // VMD domains
  EXPECT_EQ(normalizePciBusId("1b:00.0"), "");
  EXPECT_EQ(normalizePciBusId("0000:1b:00.0x"), "");
  EXPECT_EQ(normalizePciBusId(""), "");
}

TEST(GpuDiscoveryTest, FormatsUuidsAsNvidiaSmi) {
  const unsigned char b[16] = {0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  EXPECT_EQ(formatGpuUuid(b), "GPU-deadbeef-0001-0203-0405-060708090a0b");
}

TEST(GpuDiscoveryTest, NoDriverMeansZeroGpusWithAReason) {
  FakeCudaApi api;
  api.is_available = false;
  api.why_unavailable = "CUDA driver library libcuda.so.1 could not be loaded";
  Result<std::vector<Gpu>> gpus = discoverGpus(api);
  ASSERT_TRUE(gpus.ok());
  EXPECT_TRUE(gpus->empty());
  GpuInventory inv = discoverGpuInventory(api);
  EXPECT_TRUE(inv.gpus.empty());
  EXPECT_EQ(inv.driver_version, "");
  EXPECT_EQ(inv.reason, api.why_unavailable);
}

TEST(GpuDiscoveryTest, DriverWithoutDevicesMeansZeroGpusWithAReason) {
  FakeCudaApi api;
  api.fail["cuDeviceGetCount"] = cu::CUDA_ERROR_NO_DEVICE;
  Result<std::vector<Gpu>> gpus = discoverGpus(api);
  ASSERT_TRUE(gpus.ok());
  EXPECT_TRUE(gpus->empty());
  TempDir sys, proc;  // hermetic: the host's own /proc may name a real driver
  GpuInventory inv = discoverGpuInventory(api, sys.path(), proc.path());
  EXPECT_TRUE(inv.gpus.empty());
  EXPECT_EQ(inv.driver_version, "13.0");
  EXPECT_NE(inv.reason.find("no GPU"), std::string::npos) << inv.reason;
}

TEST(GpuDiscoveryTest, AFailingCallNamesTheCallTheGpuAndTheError) {
  FakeCudaApi api;
  api.fail["cuDeviceGetName"] = cu::CUDA_ERROR_UNKNOWN;
  Result<std::vector<Gpu>> gpus = discoverGpus(api);
  ASSERT_FALSE(gpus.ok());
  const std::string msg = gpus.status().message();
  EXPECT_NE(msg.find("cuDeviceGetName"), std::string::npos) << msg;
  EXPECT_NE(msg.find("gpu:0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("CUDA_ERROR_UNKNOWN"), std::string::npos) << msg;
  GpuInventory inv = discoverGpuInventory(api);
  EXPECT_TRUE(inv.gpus.empty());
  EXPECT_NE(inv.reason.find("cuDeviceGetName"), std::string::npos) << inv.reason;
}

TEST(GpuDiscoveryTest, DriverVersionIncludesTheKernelModuleWhenReadable) {
  FakeCudaApi api;
  api.driver_version = 12080;
  TempDir proc;
  EXPECT_EQ(cudaDriverVersion(api, proc.path()), "12.8");
  proc.write("driver/nvidia/version",
             "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  "
             "(dvs-builder@U16-I3-B03-4-3)  Sun Jul 27 06:54:38 UTC 2025\n");
  EXPECT_EQ(cudaDriverVersion(api, proc.path()), "12.8 (580.65.06)");
}

TEST(CudaDriverTest, MissingLibraryMeansZeroGpusAndAReasonNotAnError) {
  std::unique_ptr<CudaDriver> driver = CudaDriver::open("libgdrmesh-no-such-cuda.so.1");
  ASSERT_NE(driver, nullptr);
  EXPECT_FALSE(driver->available());
  EXPECT_NE(driver->reason().find("libgdrmesh-no-such-cuda.so.1"), std::string::npos)
      << driver->reason();
  int count = -1;
  EXPECT_EQ(driver->deviceGetCount(&count), cu::CUDA_ERROR_NOT_INITIALIZED);

  GpuInventory inv = discoverGpuInventory(*driver);
  EXPECT_TRUE(inv.gpus.empty());
  EXPECT_EQ(inv.driver_version, "");
  EXPECT_EQ(inv.reason, driver->reason());

  Result<std::unique_ptr<Buffer>> b = allocateCudaBuffer(*driver, 0, 4096);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(b.status().message().find("libgdrmesh-no-such-cuda.so.1"), std::string::npos);
}

TEST(CudaDriverTest, TheRealDriverNeverFailsToOpen) {
  // On a host without a GPU this is the no-driver path; with one, GPUs are listed.
  std::unique_ptr<CudaDriver> driver = CudaDriver::open();
  GpuInventory inv = discoverGpuInventory(*driver);
  if (!driver->available()) {
    EXPECT_TRUE(inv.gpus.empty());
    EXPECT_FALSE(inv.reason.empty());
  } else {
    EXPECT_EQ(inv.reason.empty(), !inv.gpus.empty());
  }
}

TEST(CudaErrorTest, DmabufNotSupportedExplainsTheFix) {
  FakeCudaApi api;
  Status s = cudaStatus(api, cu::CUDA_ERROR_NOT_SUPPORTED,
                        "cuMemGetHandleForAddressRange(DMA_BUF_FD, 2097152 B)", "gpu:3");
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("cuMemGetHandleForAddressRange"), std::string::npos);
  EXPECT_NE(s.message().find("gpu:3"), std::string::npos);
  EXPECT_NE(s.message().find("CUDA_ERROR_NOT_SUPPORTED"), std::string::npos);
  EXPECT_NE(s.message().find("operation not supported"), std::string::npos);
  EXPECT_NE(s.fix().find("open kernel module"), std::string::npos) << s.fix();
  EXPECT_NE(s.fix().find(">= 515"), std::string::npos) << s.fix();
  EXPECT_NE(s.fix().find(">= 5.12"), std::string::npos) << s.fix();
}

TEST(CudaErrorTest, CodesFollowTheError) {
  FakeCudaApi api;
  EXPECT_TRUE(cudaStatus(api, cu::CUDA_SUCCESS, "cuInit").ok());
  EXPECT_EQ(cudaStatus(api, cu::CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc").code(),
            Code::kResourceExhausted);
  EXPECT_EQ(cudaStatus(api, cu::CUDA_ERROR_INVALID_DEVICE, "cuDeviceGet").code(), Code::kNotFound);
  EXPECT_EQ(cudaStatus(api, cu::CUDA_ERROR_ECC_UNCORRECTABLE, "cuMemcpyDtoH").code(),
            Code::kUnavailable);
  EXPECT_EQ(cudaStatus(api, cu::CUDA_ERROR_ILLEGAL_ADDRESS, "cuLaunchKernel").code(),
            Code::kInternal);
  Status unknown = cudaStatus(api, 12345, "cuFoo");
  EXPECT_EQ(unknown.code(), Code::kFailedPrecondition);
  EXPECT_NE(unknown.message().find("CUresult 12345"), std::string::npos) << unknown.message();
}

}  // namespace
}  // namespace gdrmesh
