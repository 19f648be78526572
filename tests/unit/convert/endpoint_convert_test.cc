// Endpoint descriptions on the wire: the per-transport part is a oneof (EmulatedEndpoint,
// VerbsEndpoint with rdma_cm's own address fields, SimulatedEndpoint); the legacy flat v1
// fields are still written and still read when the oneof is absent (docs/api.md).
#include <gtest/gtest.h>

#include "convert.h"
#include "gdrmesh/v1/gdrmesh.pb.h"

namespace gdrmesh {
namespace {

namespace pb = ::gdrmesh::v1;
using convert::fromProto;
using convert::toProto;

EndpointDesc verbsDesc() {
  EndpointDesc d;
  d.transport = TransportKind::kVerbs;
  d.addr = 0x7f00001000;
  d.length = 65536;
  d.rkey = 0x1234;
  d.device = "rxe0";
  d.port = 1;
  d.link_layer = "Ethernet";
  d.gid = "0000:0000:0000:0000:0000:ffff:0a4d:0001";
  d.gid_index = 1;
  d.active_mtu = 1024;
  d.max_rd_atomic = 16;
  d.qps = {{17, 100}, {18, 200}};
  d.tcp_host = "10.77.0.1";  // rdma_cm listener
  d.tcp_port = 41000;
  return d;
}

void expectSame(const EndpointDesc& a, const EndpointDesc& b) {
  EXPECT_EQ(a.transport, b.transport);
  EXPECT_EQ(a.addr, b.addr);
  EXPECT_EQ(a.length, b.length);
  EXPECT_EQ(a.rkey, b.rkey);
  EXPECT_EQ(a.tcp_host, b.tcp_host);
  EXPECT_EQ(a.tcp_port, b.tcp_port);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.port, b.port);
  EXPECT_EQ(a.link_layer, b.link_layer);
  EXPECT_EQ(a.gid, b.gid);
  EXPECT_EQ(a.gid_index, b.gid_index);
  EXPECT_EQ(a.active_mtu, b.active_mtu);
  EXPECT_EQ(a.max_rd_atomic, b.max_rd_atomic);
  ASSERT_EQ(a.qps.size(), b.qps.size());
  for (size_t i = 0; i < a.qps.size(); ++i) {
    EXPECT_EQ(a.qps[i].qpn, b.qps[i].qpn);
    EXPECT_EQ(a.qps[i].psn, b.qps[i].psn);
  }
}

TEST(EndpointConvert, EachTransportWritesItsOwnPartOfTheOneofAndRoundTrips) {
  pb::EndpointDesc v;
  toProto(verbsDesc(), &v);
  ASSERT_EQ(v.transport_fields_case(), pb::EndpointDesc::kVerbs);
  EXPECT_EQ(v.verbs().cm_host(), "10.77.0.1");
  EXPECT_EQ(v.verbs().cm_port(), 41000u);
  EXPECT_EQ(v.verbs().qps_size(), 2);
  expectSame(fromProto(v), verbsDesc());

  EndpointDesc e;
  e.transport = TransportKind::kEmulated;
  e.tcp_host = "127.0.0.1";
  e.tcp_port = 5555;
  pb::EndpointDesc ep;
  toProto(e, &ep);
  ASSERT_EQ(ep.transport_fields_case(), pb::EndpointDesc::kEmulated);
  EXPECT_EQ(ep.emulated().tcp_port(), 5555u);
  expectSame(fromProto(ep), e);

  // A simulated worker plays a NIC: its device and QPs travel too (the peer's fault lookup
  // names "sim-0042/mlx5_0").
  EndpointDesc s = verbsDesc();
  s.transport = TransportKind::kSimulated;
  s.tcp_host = "sim-0042";
  s.tcp_port = 0;
  s.device = "mlx5_0";
  pb::EndpointDesc sp;
  toProto(s, &sp);
  ASSERT_EQ(sp.transport_fields_case(), pb::EndpointDesc::kSimulated);
  EXPECT_EQ(sp.simulated().worker(), "sim-0042");
  EXPECT_EQ(sp.simulated().nic().device(), "mlx5_0");
  expectSame(fromProto(sp), s);
}

TEST(EndpointConvert, AnEarlierV1WriterWithOnlyTheFlatFieldsIsStillRead) {
  pb::EndpointDesc v;
  toProto(verbsDesc(), &v);
  v.clear_verbs();  // what a release before the oneof sent
  ASSERT_EQ(v.transport_fields_case(), pb::EndpointDesc::TRANSPORT_FIELDS_NOT_SET);
  expectSame(fromProto(v), verbsDesc());
}

TEST(EndpointConvert, AnEarlierV1ReaderFindsTheFlatFieldsFilled) {
  pb::EndpointDesc v;
  toProto(verbsDesc(), &v);
  EXPECT_EQ(v.device(), "rxe0");
  EXPECT_EQ(v.gid_index(), 1);
  EXPECT_EQ(v.qps_size(), 2);
  EXPECT_EQ(v.tcp_host(), "10.77.0.1");
  EXPECT_EQ(v.max_rd_atomic(), 16u);
}

TEST(EndpointConvert, TheOneofWinsOverStaleFlatFields) {
  pb::EndpointDesc v;
  toProto(verbsDesc(), &v);
  v.set_device("stale0");
  v.set_tcp_port(1);
  const EndpointDesc d = fromProto(v);
  EXPECT_EQ(d.device, "rxe0");
  EXPECT_EQ(d.tcp_port, 41000u);
}

TEST(EndpointConvert, TextInTheOneofIsCleanedLikeTheFlatFields) {
  pb::EndpointDesc v;
  toProto(verbsDesc(), &v);
  v.mutable_verbs()->set_device("rxe0\x1b[2J\nfake row");
  const EndpointDesc d = fromProto(v);
  EXPECT_EQ(d.device.find('\x1b'), std::string::npos) << d.device;
  EXPECT_EQ(d.device.find('\n'), std::string::npos) << d.device;
}

}  // namespace
}  // namespace gdrmesh
