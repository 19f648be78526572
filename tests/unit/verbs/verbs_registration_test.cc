#include "worker/transport/verbs/verbs_registration.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

namespace gdrmesh::verbs {
namespace {

// Fake registration calls: each returns a fake MR or fails with the configured errno.
class FakeRegistrar final : public MrRegistrar {
 public:
  int reg_mr_errno = 0;
  int dmabuf_errno = 0;
  std::vector<std::string> calls;
  int live = 0;

  ibv_mr* regMr(ibv_pd*, void* addr, size_t length, int) override {
    calls.push_back("reg_mr");
    if (reg_mr_errno) {
      errno = reg_mr_errno;
      return nullptr;
    }
    return make(addr, length);
  }
  ibv_mr* regDmabufMr(ibv_pd*, uint64_t, size_t length, uint64_t iova, int, int) override {
    calls.push_back("reg_dmabuf_mr");
    if (dmabuf_errno) {
      errno = dmabuf_errno;
      return nullptr;
    }
    return make(reinterpret_cast<void*>(static_cast<uintptr_t>(iova)), length);
  }
  int deregMr(ibv_mr* mr) override {
    --live;
    delete mr;
    return 0;
  }

 private:
  ibv_mr* make(void* addr, size_t length) {
    ++live;
    auto* mr = new ibv_mr{};
    mr->addr = addr;
    mr->length = length;
    mr->lkey = mr->rkey = 0x1234;
    return mr;
  }
};

// A GPU buffer stand-in: never dereferenced, only registered.
class FakeGpuBuffer final : public Buffer {
 public:
  bool export_ok = true;
  int exports = 0;
  MemoryKind kind() const override { return MemoryKind::kCuda; }
  void* data() override { return reinterpret_cast<void*>(uintptr_t{0x7f0000200000}); }
  size_t size() const override { return 1 << 20; }
  int gpuIndex() const override { return 0; }
  std::string describe() const override { return "gpu:0"; }
  Status fill(uint64_t, size_t, size_t) override { return Status(); }
  Result<IntegrityReport> verify(uint64_t, size_t, size_t) override { return IntegrityReport{}; }
  Status copyToHost(size_t, void*, size_t) override { return Status(); }
  Status copyFromHost(size_t, const void*, size_t) override { return Status(); }
  Result<std::unique_ptr<DmabufExport>> exportDmabuf() override {
    ++exports;
    if (!export_ok) return unimplemented("cuMemGetHandleForAddressRange: not supported");
    return std::make_unique<DmabufExport>(-1, 0, size());
  }
};

TEST(Registration, HostBufferUsesRegMr) {
  FakeRegistrar r;
  auto buf = HostBuffer::allocate(4096);
  ASSERT_TRUE(buf.ok());
  {
    auto reg = registerBuffer(r, nullptr, **buf, RegPath::kAuto, "rxe0");
    ASSERT_TRUE(reg.ok()) << reg.status().toString();
    EXPECT_EQ(reg->path, RegPath::kHost);
    EXPECT_EQ(r.calls, std::vector<std::string>{"reg_mr"});
    EXPECT_EQ(r.live, 1);
  }
  EXPECT_EQ(r.live, 0);  // the MR is released with the Registration
  auto dm = registerBuffer(r, nullptr, **buf, RegPath::kDmabuf, "rxe0");
  EXPECT_EQ(dm.status().code(), Code::kInvalidArgument);
  auto st = registerBuffer(r, nullptr, **buf, RegPath::kStaged, "rxe0");
  EXPECT_EQ(st.status().code(), Code::kInvalidArgument);
}

TEST(Registration, HostMemlockErrorTranslated) {
  FakeRegistrar r;
  r.reg_mr_errno = ENOMEM;
  auto buf = HostBuffer::allocate(4096);
  ASSERT_TRUE(buf.ok());
  auto reg = registerBuffer(r, nullptr, **buf, RegPath::kHost, "rxe0");
  ASSERT_FALSE(reg.ok());
  EXPECT_EQ(reg.status().code(), Code::kResourceExhausted);
  EXPECT_NE(reg.status().message().find("memlock limit too low"), std::string::npos);
}

TEST(Registration, AutoDmabufOk) {
  FakeRegistrar r;
  FakeGpuBuffer g;
  auto reg = registerBuffer(r, nullptr, g, RegPath::kAuto, "mlx5_0");
  ASSERT_TRUE(reg.ok()) << reg.status().toString();
  EXPECT_EQ(reg->path, RegPath::kDmabuf);
  EXPECT_EQ(r.calls, std::vector<std::string>{"reg_dmabuf_mr"});
  EXPECT_NE(reg->dmabuf, nullptr);
}

TEST(Registration, AutoDmabufUnsupportedThenPeermem) {
  FakeRegistrar r;
  r.dmabuf_errno = EOPNOTSUPP;
  FakeGpuBuffer g;
  auto reg = registerBuffer(r, nullptr, g, RegPath::kAuto, "mlx5_0");
  ASSERT_TRUE(reg.ok()) << reg.status().toString();
  EXPECT_EQ(reg->path, RegPath::kPeermem);
  EXPECT_EQ(r.calls, (std::vector<std::string>{"reg_dmabuf_mr", "reg_mr"}));
  EXPECT_NE(reg->attempts.find("EOPNOTSUPP"), std::string::npos) << reg->attempts;
  EXPECT_NE(reg->attempts.find("peermem: ok"), std::string::npos);
  EXPECT_EQ(reg->dmabuf, nullptr);
}

TEST(Registration, AutoBothFailNamesBothNoStaging) {
  FakeRegistrar r;
  r.dmabuf_errno = EPROTONOSUPPORT;
  r.reg_mr_errno = EFAULT;
  FakeGpuBuffer g;
  auto reg = registerBuffer(r, nullptr, g, RegPath::kAuto, "mlx5_0");
  ASSERT_FALSE(reg.ok());
  const auto& s = reg.status();
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("kernel/driver lacks dma-buf support"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("nvidia-peermem not loaded"), std::string::npos);
  EXPECT_NE(s.message().find("not falling back to staging"), std::string::npos);
  EXPECT_EQ(r.live, 0);
}

TEST(Registration, AutoExportFailsThenPeermem) {
  FakeRegistrar r;
  FakeGpuBuffer g;
  g.export_ok = false;
  auto reg = registerBuffer(r, nullptr, g, RegPath::kAuto, "mlx5_0");
  ASSERT_TRUE(reg.ok());
  EXPECT_EQ(reg->path, RegPath::kPeermem);
  EXPECT_EQ(r.calls, std::vector<std::string>{"reg_mr"});
}

TEST(Registration, ExplicitPathsDoNotFallBack) {
  FakeRegistrar r;
  r.dmabuf_errno = EOPNOTSUPP;
  FakeGpuBuffer g;
  auto d = registerBuffer(r, nullptr, g, RegPath::kDmabuf, "mlx5_0");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), Code::kUnimplemented);
  EXPECT_EQ(r.calls, std::vector<std::string>{"reg_dmabuf_mr"});
  r.calls.clear();
  r.reg_mr_errno = EINVAL;
  auto p = registerBuffer(r, nullptr, g, RegPath::kPeermem, "mlx5_0");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("nvidia-peermem not loaded"), std::string::npos);
  EXPECT_EQ(r.calls, std::vector<std::string>{"reg_mr"});
  EXPECT_EQ(registerBuffer(r, nullptr, g, RegPath::kHost, "x").status().code(),
            Code::kInvalidArgument);
}

}  // namespace
}  // namespace gdrmesh::verbs
