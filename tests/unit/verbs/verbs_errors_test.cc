#include "worker/transport/verbs/verbs_errors.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace gdrmesh::verbs {
namespace {

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(VerbsErrors, ErrnoNames) {
  EXPECT_EQ(errnoName(EFAULT), "EFAULT");
  EXPECT_EQ(errnoName(EOPNOTSUPP), "EOPNOTSUPP");
  EXPECT_EQ(errnoName(EPROTONOSUPPORT), "EPROTONOSUPPORT");
  EXPECT_EQ(errnoName(4242), "errno 4242");
}

TEST(VerbsErrors, RegMrMemlock) {
  for (int err : {ENOMEM, EAGAIN}) {
    Status s = registrationError(RegPath::kHost, err, "mlx5_0", "host");
    EXPECT_EQ(s.code(), Code::kResourceExhausted);
    EXPECT_TRUE(has(s.message(), "ibv_reg_mr")) << s.toString();
    EXPECT_TRUE(has(s.message(), "mlx5_0"));
    EXPECT_TRUE(has(s.message(), "memlock limit too low"));
    EXPECT_TRUE(has(s.fix(), "ulimit -l"));
  }
}

TEST(VerbsErrors, PeermemMissing) {
  for (int err : {EFAULT, EINVAL}) {
    Status s = registrationError(RegPath::kPeermem, err, "mlx5_1", "gpu:0");
    EXPECT_EQ(s.code(), Code::kFailedPrecondition);
    EXPECT_TRUE(has(s.message(), "nvidia-peermem not loaded")) << s.toString();
    EXPECT_TRUE(has(s.message(), "gpu:0"));
    EXPECT_TRUE(has(s.fix(), "dma-buf"));
    EXPECT_TRUE(has(s.fix(), "modprobe nvidia-peermem"));
  }
  EXPECT_TRUE(has(registrationError(RegPath::kPeermem, 14, "d", "gpu:0").message(), "EFAULT"));
}

TEST(VerbsErrors, DmabufUnsupported) {
  for (int err : {EOPNOTSUPP, EPROTONOSUPPORT}) {
    Status s = registrationError(RegPath::kDmabuf, err, "mlx5_0", "gpu:1");
    EXPECT_EQ(s.code(), Code::kUnimplemented);
    EXPECT_TRUE(has(s.message(), "ibv_reg_dmabuf_mr")) << s.toString();
    EXPECT_TRUE(has(s.message(), "kernel/driver lacks dma-buf support"));
    EXPECT_TRUE(has(s.fix(), "peermem"));
  }
  EXPECT_TRUE(has(registrationError(RegPath::kDmabuf, 95, "d", "g").message(), "EOPNOTSUPP"));
  EXPECT_TRUE(has(registrationError(RegPath::kDmabuf, 93, "d", "g").message(), "EPROTONOSUPPORT"));
}

TEST(VerbsErrors, ModifyQpRtrNamesGidMtuRoute) {
  Status s =
      modifyQpError("RTR", EINVAL, "rxe0", 7, 1024, "0000:0000:0000:0000:0000:ffff:0a4d:0002");
  EXPECT_TRUE(has(s.message(), "RTR"));
  EXPECT_TRUE(has(s.message(), "sgid_index=7"));
  EXPECT_TRUE(has(s.message(), "path_mtu=1024"));
  EXPECT_TRUE(has(s.message(), "EINVAL"));
  EXPECT_TRUE(has(s.fix(), "GID index"));
  EXPECT_TRUE(has(s.fix(), "MTU"));
  EXPECT_TRUE(has(s.fix(), "route"));
}

TEST(VerbsErrors, CompletionErrors) {
  Status r = completionError(IBV_WC_RETRY_EXC_ERR, 0x81, "RDMA write", "rxe1", 17);
  EXPECT_EQ(r.code(), Code::kUnavailable);
  EXPECT_TRUE(has(r.message(), ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR))) << r.toString();
  EXPECT_TRUE(has(r.message(), "peer unreachable or port down"));
  EXPECT_TRUE(has(r.message(), "qp 17"));
  EXPECT_TRUE(has(r.message(), "vendor_err 0x81"));
  Status a = completionError(IBV_WC_REM_ACCESS_ERR, 0, "RDMA write", "rxe1", 1);
  EXPECT_TRUE(has(a.message(), "remote key/range invalid (peer deregistered?)"));
  EXPECT_TRUE(has(completionError(IBV_WC_RNR_RETRY_EXC_ERR, 0, "send", "d", 1).message(),
                  "receiver not ready"));
  EXPECT_EQ(completionError(IBV_WC_WR_FLUSH_ERR, 0, "send", "d", 1).code(), Code::kAborted);
  EXPECT_EQ(completionError(IBV_WC_LOC_LEN_ERR, 0, "receive", "d", 1).code(),
            Code::kInvalidArgument);
}

// A QP in error flushes both its queues; a bidirectional run may reap a flushed send before the
// receive error that broke the QP (Soft-RoCE selftest, send_bw_64k_bidir under load).
TEST(VerbsErrors, RootCompletionSkipsFlushes) {
  auto failed = [](ibv_wc_status st, bool receive) {
    FailedCompletion f;
    f.wc.status = st;
    f.receive = receive;
    return f;
  };
  EXPECT_EQ(rootCompletion({}), nullptr);
  std::vector<FailedCompletion> v = {
      failed(IBV_WC_WR_FLUSH_ERR, false), failed(IBV_WC_WR_FLUSH_ERR, false),
      failed(IBV_WC_LOC_LEN_ERR, true), failed(IBV_WC_REM_ACCESS_ERR, false)};
  const FailedCompletion* root = rootCompletion(v);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root, &v[2]);
  EXPECT_TRUE(root->receive);
  std::vector<FailedCompletion> flushes = {failed(IBV_WC_WR_FLUSH_ERR, false),
                                           failed(IBV_WC_WR_FLUSH_ERR, true)};
  EXPECT_EQ(rootCompletion(flushes), &flushes[0]);
  std::vector<FailedCompletion> first = {failed(IBV_WC_REM_INV_REQ_ERR, false),
                                         failed(IBV_WC_LOC_QP_OP_ERR, true)};
  EXPECT_EQ(rootCompletion(first), &first[0]);
}

TEST(VerbsErrors, CallErrorNamesCallDeviceAndFix) {
  Status s = callError("ibv_create_cq(4096)", ENOMEM, "rxe2");
  EXPECT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_TRUE(has(s.message(), "ibv_create_cq(4096) on rxe2"));
  EXPECT_TRUE(has(s.fix(), "ulimit -l"));
  EXPECT_EQ(callError("ibv_open_device", EACCES, "rxe0").code(), Code::kPermissionDenied);
}

}  // namespace
}  // namespace gdrmesh::verbs
