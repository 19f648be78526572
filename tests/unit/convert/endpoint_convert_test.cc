// Endpoint descriptions on the wire: the per-transport part is a oneof (EmulatedEndpoint,
// VerbsEndpoint with rdma_cm's own address fields, SimulatedEndpoint), and in the domain a
// std::variant of the same three (EmulatedDesc, VerbsDesc, SimulatedDesc); the legacy flat v1
// fields are still written and still read when the oneof is absent (docs/api.md).
#include <gtest/gtest.h>

#include "convert.h"
#include "gdrmesh/v1/gdrmesh.pb.h"

namespace gdrmesh {
namespace {

namespace pb = ::gdrmesh::v1;
using convert::fromProto;
using convert::toProto;

VerbsDesc rxe0() {
  VerbsDesc v;
  v.device = "rxe0";
  v.port = 1;
  v.link_layer = "Ethernet";
  v.gid = "0000:0000:0000:0000:0000:ffff:0a4d:0001";
  v.gid_index = 1;
  v.active_mtu = 1024;
  v.max_rd_atomic = 16;
  v.qps = {{17, 100}, {18, 200}};
  v.cm_host = "10.77.0.1";  // rdma_cm listener
  v.cm_port = 41000;
  return v;
}

EndpointDesc verbsDesc() {
  EndpointDesc d;
  d.addr = 0x7f00001000;
  d.length = 65536;
  d.rkey = 0x1234;
  d.fields = rxe0();
  return d;
}

void expectSameNic(const VerbsDesc& a, const VerbsDesc& b) {
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.port, b.port);
  EXPECT_EQ(a.link_layer, b.link_layer);
  EXPECT_EQ(a.gid, b.gid);
  EXPECT_EQ(a.gid_index, b.gid_index);
  EXPECT_EQ(a.active_mtu, b.active_mtu);
  EXPECT_EQ(a.max_rd_atomic, b.max_rd_atomic);
  EXPECT_EQ(a.cm_host, b.cm_host);
  EXPECT_EQ(a.cm_port, b.cm_port);
  ASSERT_EQ(a.qps.size(), b.qps.size());
  for (size_t i = 0; i < a.qps.size(); ++i) {
    EXPECT_EQ(a.qps[i].qpn, b.qps[i].qpn);
    EXPECT_EQ(a.qps[i].psn, b.qps[i].psn);
  }
}

void expectSame(const EndpointDesc& a, const EndpointDesc& b) {
  ASSERT_EQ(a.transport(), b.transport());
  EXPECT_EQ(a.addr, b.addr);
  EXPECT_EQ(a.length, b.length);
  EXPECT_EQ(a.rkey, b.rkey);
  if (const auto* e = a.as<EmulatedDesc>()) {
    EXPECT_EQ(e->tcp_host, b.as<EmulatedDesc>()->tcp_host);
    EXPECT_EQ(e->tcp_port, b.as<EmulatedDesc>()->tcp_port);
  } else if (const auto* sim = a.as<SimulatedDesc>()) {
    EXPECT_EQ(sim->worker, b.as<SimulatedDesc>()->worker);
    expectSameNic(sim->nic, b.as<SimulatedDesc>()->nic);
  } else {
    expectSameNic(*a.as<VerbsDesc>(), *b.as<VerbsDesc>());
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
  e.fields = EmulatedDesc{"127.0.0.1", 5555};
  pb::EndpointDesc ep;
  toProto(e, &ep);
  ASSERT_EQ(ep.transport_fields_case(), pb::EndpointDesc::kEmulated);
  EXPECT_EQ(ep.emulated().tcp_port(), 5555u);
  expectSame(fromProto(ep), e);

  // A simulated worker plays a NIC: its device and QPs travel too (the peer's fault lookup
  // names "sim-0042/mlx5_0").
  EndpointDesc s = verbsDesc();
  VerbsDesc nic = rxe0();
  nic.device = "mlx5_0";
  nic.cm_host.clear();  // a simulated NIC has no rdma_cm address
  nic.cm_port = 0;
  s.fields = SimulatedDesc{"sim-0042", nic};
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

TEST(EndpointConvert, FlatFieldsOfEachTransportLandInItsOwnPart) {
  // An earlier v1 writer: `transport` says which part tcp_host/tcp_port and the NIC fields are.
  pb::EndpointDesc e;
  e.set_transport(pb::TRANSPORT_EMULATED);
  e.set_tcp_host("127.0.0.1");
  e.set_tcp_port(5555);
  const EndpointDesc de = fromProto(e);
  ASSERT_NE(de.as<EmulatedDesc>(), nullptr);
  EXPECT_EQ(de.as<EmulatedDesc>()->tcp_port, 5555u);
  EXPECT_EQ(de.nic(), nullptr);

  pb::EndpointDesc s;
  s.set_transport(pb::TRANSPORT_SIMULATED);
  s.set_tcp_host("sim-0007");
  s.set_device("mlx5_1");
  const EndpointDesc ds = fromProto(s);
  ASSERT_NE(ds.as<SimulatedDesc>(), nullptr);
  EXPECT_EQ(ds.as<SimulatedDesc>()->worker, "sim-0007");
  EXPECT_EQ(ds.nic()->device, "mlx5_1");
}

TEST(EndpointConvert, TheOneofSaysTheTransportWhateverTheTransportFieldClaims) {
  // A description cannot claim verbs while carrying the emulated part: the domain type has no
  // separate transport field to disagree with its part.
  pb::EndpointDesc v;
  v.set_transport(pb::TRANSPORT_VERBS);
  v.mutable_emulated()->set_tcp_host("127.0.0.1");
  const EndpointDesc d = fromProto(v);
  EXPECT_EQ(d.transport(), TransportKind::kEmulated);
  EXPECT_EQ(d.as<VerbsDesc>(), nullptr);
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
  EXPECT_EQ(d.as<VerbsDesc>()->device, "rxe0");
  EXPECT_EQ(d.as<VerbsDesc>()->cm_port, 41000u);
}

TEST(EndpointConvert, TextInTheOneofIsCleanedLikeTheFlatFields) {
  pb::EndpointDesc v;
  toProto(verbsDesc(), &v);
  v.mutable_verbs()->set_device("rxe0\x1b[2J\nfake row");
  const std::string device = fromProto(v).as<VerbsDesc>()->device;
  EXPECT_EQ(device.find('\x1b'), std::string::npos) << device;
  EXPECT_EQ(device.find('\n'), std::string::npos) << device;
}

// Where a side's test thread ran travels from the worker (EndpointDesc, cleaned like every text
// a worker sends) to the stored record (EndpointRecord) and back; an earlier worker sends none.
TEST(EndpointConvert, TheCpuBindingTravelsWithTheDescriptionAndTheRecord) {
  EndpointDesc d = verbsDesc();
  d.cpu_binding = "cpu 3 (numa 0, nic mlx5_0)";
  pb::EndpointDesc wire;
  toProto(d, &wire);
  EXPECT_EQ(wire.cpu_binding(), "cpu 3 (numa 0, nic mlx5_0)");
  EXPECT_EQ(fromProto(wire).cpu_binding, d.cpu_binding);
  wire.set_cpu_binding("cpu 3\x1b[31m" + std::string(400, 'x'));
  const std::string cleaned = fromProto(wire).cpu_binding;
  EXPECT_EQ(cleaned.rfind("cpu 3?[31m", 0), 0u) << cleaned;  // the escape is neutralised
  EXPECT_NE(cleaned.find("more bytes)"), std::string::npos) << "cut at 256 bytes: " << cleaned;
  wire.clear_cpu_binding();
  EXPECT_EQ(fromProto(wire).cpu_binding, "");

  EndpointRecord r;
  r.worker = "node-a";
  r.cpu_binding = "not bound: rxe0 has no readable numa_node";
  pb::EndpointRecord pr;
  toProto(r, &pr);
  EXPECT_EQ(fromProto(pr).cpu_binding, r.cpu_binding);
}

}  // namespace
}  // namespace gdrmesh
