// The conversions `gdrmesh report` reads through: the inventory's kernel release and NVIDIA
// driver (v1 fields 10 and 11) both ways, ListWorkers' WorkerInfo, and a SweepReport back to
// domain types.
#include <gtest/gtest.h>

#include "convert.h"
#include "coordinator/service/sweep_convert.h"

namespace gdrmesh {
namespace {

TEST(ConvertReport, InventoryVersionsRoundTrip) {
  Inventory in;
  in.hostname = "h1";
  in.kernel_release = "6.1.0-18-amd64";
  in.nvidia_driver_version = "550.54.15";
  in.rdma_core_version = "44.0";
  v1::Inventory p;
  convert::toProto(in, &p);
  EXPECT_EQ(p.kernel_release(), "6.1.0-18-amd64");
  EXPECT_EQ(p.nvidia_driver_version(), "550.54.15");
  Inventory back = convert::fromProto(p);
  EXPECT_EQ(back.kernel_release, in.kernel_release);
  EXPECT_EQ(back.nvidia_driver_version, in.nvidia_driver_version);

  // A worker from before these fields: its message parses, the fields are empty.
  v1::Inventory old;
  old.set_hostname("old");
  old.set_rdma_core_version("44.0");
  v1::Inventory parsed;
  ASSERT_TRUE(parsed.ParseFromString(old.SerializeAsString()));
  EXPECT_EQ(convert::fromProto(parsed).kernel_release, "");
  EXPECT_EQ(convert::fromProto(parsed).nvidia_driver_version, "");
}

// Capabilities (Inventory field 12, message TransportCapabilities) both ways; values this build
// does not know, and AUTO (a request, never a capability), are left out rather than guessed.
TEST(ConvertReport, CapabilitiesRoundTripAndUnknownValuesAreDropped) {
  Inventory in;
  TransportCapabilities c;
  c.transport = TransportKind::kVerbs;
  c.bandwidth_ops = {Op::kWrite, Op::kWriteImm};
  c.latency_ops = {Op::kSend};
  c.memory = {MemoryKind::kHost, MemoryKind::kCuda};
  c.reg_paths = {RegPath::kHost, RegPath::kDmabuf, RegPath::kStaged};
  c.max_message_size = 1ULL << 31;
  c.max_inline = 220;
  c.rdma_cm = true;
  c.gid_index = true;
  c.bidirectional = true;
  in.capabilities = {c};
  v1::Inventory p;
  convert::toProto(in, &p);
  ASSERT_EQ(p.capabilities_size(), 1);
  EXPECT_EQ(p.capabilities(0).transport(), v1::TRANSPORT_VERBS);
  EXPECT_EQ(p.capabilities(0).max_inline(), 220u);
  Inventory back = convert::fromProto(p);
  ASSERT_EQ(back.capabilities.size(), 1u);
  const TransportCapabilities& b = back.capabilities[0];
  EXPECT_EQ(b.transport, TransportKind::kVerbs);
  EXPECT_EQ(b.bandwidth_ops, c.bandwidth_ops);
  EXPECT_EQ(b.latency_ops, c.latency_ops);
  EXPECT_EQ(b.memory, c.memory);
  EXPECT_EQ(b.reg_paths, c.reg_paths);
  EXPECT_EQ(b.max_message_size, c.max_message_size);
  EXPECT_EQ(b.max_inline, 220u);
  EXPECT_TRUE(b.rdma_cm && b.gid_index && b.bidirectional);

  auto* w = p.mutable_capabilities(0);
  w->add_bandwidth_ops(static_cast<v1::Op>(99));
  w->add_reg_paths(v1::REG_PATH_AUTO);
  w->add_memory(static_cast<v1::MemoryKind>(42));
  p.add_capabilities()->set_transport(static_cast<v1::Transport>(77));  // a future transport
  back = convert::fromProto(p);
  ASSERT_EQ(back.capabilities.size(), 1u);
  EXPECT_EQ(back.capabilities[0].bandwidth_ops, c.bandwidth_ops);
  EXPECT_EQ(back.capabilities[0].reg_paths, c.reg_paths);
  EXPECT_EQ(back.capabilities[0].memory, c.memory);
}

TEST(ConvertReport, WorkerInfoKeepsLabelsAndInventory) {
  v1::WorkerInfo w;
  w.set_name("w1");
  w.set_state("online");
  w.set_last_heartbeat_ms(42);
  (*w.mutable_labels())["rack"] = "r12";
  w.mutable_inventory()->set_kernel_release("6.8.0");
  WorkerStatus s = convert::fromProto(w);
  EXPECT_EQ(s.name, "w1");
  EXPECT_TRUE(s.online());
  EXPECT_EQ(s.last_heartbeat_ms, 42);
  EXPECT_EQ(s.labels.at("rack"), "r12");
  EXPECT_EQ(s.inventory.kernel_release, "6.8.0");
}

TEST(ConvertReport, SweepReportBackToDomain) {
  SweepReportData d;
  d.progress.id = "s-1";
  d.progress.state = SweepState::kFinished;
  d.progress.verdict = "FAIL";
  d.progress.tests_failed = 1;
  d.spec.pattern = SweepPattern::kAllPairs;
  d.spec.test.iterations = 20;
  d.spec.config_yaml = "thresholds:\n  bandwidth_gbps_min: 1\n";
  PairVerdict v;
  v.test_id = "t1";
  v.src = "a/mlx5_0";
  v.dst = "b/mlx5_0";
  v.verdict = VerdictKind::kFail;
  v.reasons = {"r1", "r2"};
  v.value = 1.5;
  v.unit = "Gb/s";
  v.retest = true;
  d.verdicts = {v};
  d.suspects = {{"host", "b", 0.5, {"e1"}}};
  d.notes = {"n1"};
  d.verdict_counts = {7, 1, 2};
  d.verdicts_matching = 1;
  d.results_next = "3:17";
  TestResult r;
  r.test_id = "t1";
  r.status = TestStatus::kFailed;
  d.results = {r};
  v1::SweepReport p;
  convert::toProto(d, &p);
  std::string spec_error;
  SweepReportData back = convert::fromProto(p, &spec_error);
  EXPECT_EQ(spec_error, "");
  EXPECT_EQ(back.progress.id, "s-1");
  EXPECT_EQ(back.progress.state, SweepState::kFinished);
  EXPECT_EQ(back.progress.verdict, "FAIL");
  EXPECT_EQ(back.spec.pattern, SweepPattern::kAllPairs);
  EXPECT_EQ(back.spec.config_yaml, d.spec.config_yaml);
  ASSERT_EQ(back.verdicts.size(), 1u);
  EXPECT_EQ(back.verdicts[0].verdict, VerdictKind::kFail);
  EXPECT_EQ(back.verdicts[0].reasons, v.reasons);
  EXPECT_EQ(back.verdicts[0].src, "a/mlx5_0");
  EXPECT_TRUE(back.verdicts[0].retest);
  ASSERT_EQ(back.suspects.size(), 1u);
  EXPECT_EQ(back.suspects[0].evidence, std::vector<std::string>{"e1"});
  ASSERT_EQ(back.results.size(), 1u);
  EXPECT_EQ(back.results[0].status, TestStatus::kFailed);
  EXPECT_EQ(back.notes, d.notes);
  EXPECT_EQ(back.verdict_counts.pass, 7u);
  EXPECT_EQ(back.verdict_counts.fail, 1u);
  EXPECT_EQ(back.verdict_counts.skip, 2u);
  EXPECT_EQ(back.verdicts_matching, 1u);
  EXPECT_EQ(back.results_next, "3:17");

  // A stored spec that no longer validates: the report keeps its pattern and config.
  p.mutable_spec()->set_direction("sideways");
  back = convert::fromProto(p, &spec_error);
  EXPECT_NE(spec_error.find("direction"), std::string::npos) << spec_error;
  EXPECT_EQ(back.spec.pattern, SweepPattern::kAllPairs);
  EXPECT_EQ(back.spec.config_yaml, d.spec.config_yaml);
}

}  // namespace
}  // namespace gdrmesh

namespace gdrmesh {
namespace {

// GetSweep's request: unset is every verdict in one message (as before paging); a filter the
// coordinator does not know is refused naming the field.
TEST(ConvertReport, SweepIdRequestPages) {
  v1::SweepIdRequest req;
  req.set_id("s-1");
  auto q = convert::fromProto(req);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->verdicts, VerdictFilter::kAll);
  EXPECT_EQ(q->page.limit, 0u);
  EXPECT_FALSE(q->with_results);
  req.set_with_results(true);
  req.set_results_limit(50);
  req.set_results_after("4:9");
  req.mutable_page()->set_verdicts(v1::VERDICTS_FAILED);
  req.mutable_page()->set_verdict_offset(100);
  req.mutable_page()->set_verdict_limit(10);
  q = convert::fromProto(req);
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q->with_results);
  EXPECT_EQ(q->results_limit, 50u);
  EXPECT_EQ(q->results_after, "4:9");
  EXPECT_EQ(q->verdicts, VerdictFilter::kFailed);
  EXPECT_EQ(q->page.offset, 100u);
  EXPECT_EQ(q->page.limit, 10u);
  req.mutable_page()->set_verdicts(static_cast<v1::VerdictFilter>(9));
  q = convert::fromProto(req);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("page.verdicts"), std::string::npos);
}

}  // namespace
}  // namespace gdrmesh

namespace gdrmesh {
namespace {

Inventory fullInventory() {
  Inventory in;
  in.hostname = "h1";
  in.worker_version = "1.2.3";
  in.kernel_release = "6.1.0-18-amd64";
  in.transports = {"emulated", "verbs"};
  in.notes = {"peermem: module not loaded"};
  in.preflight.push_back({"gpudirect.peermem", "peermem", "WARN", "not loaded", "modprobe"});
  TransportCapabilities c;
  c.transport = TransportKind::kVerbs;
  c.bandwidth_ops = {Op::kWrite, Op::kWriteImm};
  c.latency_ops = {Op::kRead};
  c.memory = {MemoryKind::kHost, MemoryKind::kCuda};
  c.reg_paths = {RegPath::kHost, RegPath::kDmabuf};
  c.max_message_size = uint64_t{1} << 31;
  c.max_inline = 4096;
  c.rdma_cm = true;
  c.end_signal = true;
  in.capabilities.push_back(c);
  Nic nic;
  nic.name = "mlx5_0";
  nic.numa_node = 1;
  nic.node_guid = "0x1001";
  NicPort port;
  port.state = "ACTIVE";
  port.rate_gbps = 400;
  port.lid = 7;
  port.gids.push_back({3, "fe80:0000:0000:0000:0000:0000:0000:0001", "RoCE v2"});
  nic.ports.push_back(port);
  in.nics.push_back(nic);
  Gpu g;
  g.index = 0;
  g.memory_bytes = uint64_t{85899345920};
  g.compute_capability_major = 9;
  g.compute_capability_minor = 0;
  g.nearest_nic = "mlx5_0";
  g.nearest_class = "PIX";
  in.gpus.push_back(g);
  return in;
}

// Issue #19: the stored inventory was protobuf's JSON mapping of the wire message. It is the
// domain encoding now (what `workers -o json` prints), read back whole.
TEST(StoredInventory, DomainEncodingRoundTrips) {
  const Inventory in = fullInventory();
  const std::string text = convert::storedInventoryJson(in);
  EXPECT_NE(text.find("\"memory_bytes\":85899345920"), std::string::npos) << text;
  EXPECT_NE(text.find("\"transport\":\"verbs\""), std::string::npos) << text;
  EXPECT_EQ(text.find("TRANSPORT_"), std::string::npos) << text;
  auto back = convert::inventoryFromStoredJson(text);
  ASSERT_TRUE(back.ok()) << back.status().toString();
  EXPECT_EQ(convert::storedInventoryJson(*back), text);
  EXPECT_EQ(back->gpus[0].nearest_class, "PIX");
  EXPECT_EQ(back->gpus[0].compute_capability_major, 9);
  EXPECT_TRUE(back->capabilities[0].end_signal);
  EXPECT_EQ(back->nics[0].ports[0].gids[0].index, 3);
}

// A row an older build wrote (protobuf's JSON mapping: 64-bit integers as strings, proto enum
// names, zero fields left out) still reads.
TEST(StoredInventory, OldProtobufJsonRowsStillRead) {
  const std::string old_row =
      R"({"hostname":"h1","nics":[{"name":"mlx5_0","numa_node":1,"ports":[{"port":1,)"
      R"("state":"ACTIVE","rate_gbps":400}]}],"gpus":[{"index":0,"memory_bytes":"85899345920",)"
      R"("cc_major":9,"nearest_nic":"mlx5_0"}],"transports":["TRANSPORT_VERBS"],)"
      R"("capabilities":[{"transport":"TRANSPORT_VERBS","bandwidth_ops":["OP_WRITE"]}]})";
  auto inv = convert::inventoryFromStoredJson(old_row);
  ASSERT_TRUE(inv.ok()) << inv.status().toString();
  EXPECT_EQ(inv->hostname, "h1");
  EXPECT_EQ(inv->transports, std::vector<std::string>{"verbs"});
  ASSERT_EQ(inv->gpus.size(), 1u);
  EXPECT_EQ(inv->gpus[0].memory_bytes, uint64_t{85899345920});
  EXPECT_EQ(inv->gpus[0].compute_capability_major, 9);
  ASSERT_EQ(inv->capabilities.size(), 1u);
  EXPECT_EQ(inv->capabilities[0].transport, TransportKind::kVerbs);
  EXPECT_EQ(inv->capabilities[0].bandwidth_ops, std::vector<Op>{Op::kWrite});
  EXPECT_EQ(inv->nics[0].ports[0].rate_gbps, 400);
  EXPECT_FALSE(convert::inventoryFromStoredJson("{\"hostname\": 7}").ok());
  EXPECT_FALSE(convert::inventoryFromStoredJson("not json").ok());
}

}  // namespace
}  // namespace gdrmesh
