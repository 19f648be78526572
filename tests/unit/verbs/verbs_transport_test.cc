// Device-free checks of the verbs transport. On a host with RDMA devices the "no device" cases
// skip; the Soft-RoCE suite (tests/softroce/verbs) covers real devices.
#include "worker/transport/verbs/verbs_transport.h"

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

namespace gdrmesh {
namespace {

int deviceCount() {
  int n = 0;
  ibv_device** l = ibv_get_device_list(&n);
  if (l) ibv_free_device_list(l);
  return n;
}

TEST(VerbsTransport, KindIsVerbs) {
  EXPECT_EQ(VerbsTransport().kind(), TransportKind::kVerbs);
}

TEST(VerbsTransport, NotViableWithoutDevices) {
  if (deviceCount() > 0) GTEST_SKIP() << "this host has RDMA devices";
  Status s = VerbsTransport().viable();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_EQ(s.message(), "no RDMA device found (libibverbs lists 0 devices)");
  EXPECT_NE(s.fix().find("rdma link add"), std::string::npos);
}

TEST(VerbsTransport, CreateEndpointWithoutDevicesFails) {
  if (deviceCount() > 0) GTEST_SKIP() << "this host has RDMA devices";
  auto buf = HostBuffer::allocate(4096);
  ASSERT_TRUE(buf.ok());
  EndpointSpec spec;
  spec.buffer_size = 4096;
  VerbsTransport t;
  auto ep = t.createEndpoint(spec, **buf, RegPath::kHost);
  ASSERT_FALSE(ep.ok());
  EXPECT_EQ(ep.status().code(), Code::kFailedPrecondition);
}

TEST(VerbsTransport, RejectsBadSpecBeforeTouchingDevices) {
  auto buf = HostBuffer::allocate(4096);
  ASSERT_TRUE(buf.ok());
  VerbsTransport t;
  EndpointSpec spec;
  spec.buffer_size = 8192;  // larger than the buffer
  EXPECT_EQ(t.createEndpoint(spec, **buf, RegPath::kHost).status().code(), Code::kInvalidArgument);
  spec.buffer_size = 4096;
  spec.num_qps = 0;
  EXPECT_EQ(t.createEndpoint(spec, **buf, RegPath::kHost).status().code(), Code::kInvalidArgument);
}

TEST(VerbsTransport, RejectsQpTimeoutBeyond31BeforeTouchingDevices) {
  auto buf = HostBuffer::allocate(4096);
  ASSERT_TRUE(buf.ok());
  VerbsOptions o;
  o.qp_timeout = 32;  // the QP attribute has 5 bits
  VerbsTransport t(o);
  EndpointSpec spec;
  spec.buffer_size = 4096;
  auto ep = t.createEndpoint(spec, **buf, RegPath::kHost);
  ASSERT_FALSE(ep.ok());
  EXPECT_EQ(ep.status().code(), Code::kInvalidArgument);
  EXPECT_NE(ep.status().message().find("qp_timeout 32 must be in 0..31"), std::string::npos)
      << ep.status().toString();
}

}  // namespace
}  // namespace gdrmesh
