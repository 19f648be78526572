// Tests of common/json.h: the stable JSON form of a test result.
#include "common/json.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace gdrmesh {
namespace {

std::set<std::string> keysOf(const nlohmann::json& j) {
  std::set<std::string> out;
  for (auto it = j.begin(); it != j.end(); ++it) out.insert(it.key());
  return out;
}

TestResult sampleResult() {
  TestResult r;
  r.id = 17;
  r.test_id = "t-20261122-151107-3f2a";
  r.run_id = "run-1";
  r.started_ms = 1795360267123LL;
  r.finished_ms = 1795360268000LL;
  r.op = Op::kRead;
  r.mode = Mode::kBandwidth;
  r.transport = TransportKind::kEmulated;
  r.initiator.worker = "a";
  r.initiator.host = "host-a";
  r.target.worker = "b";
  r.message_size = 65536;
  r.iterations = 1000;
  r.measurement.message_size = 65536;
  r.measurement.iterations = 1000;
  r.measurement.has_bandwidth = true;
  r.measurement.bw = bandwidthFromTotals(1000000000ULL, 1000, 1.0);
  r.integrity.checked = true;
  r.integrity.bytes_checked = 65536;
  r.integrity.where = "host";
  r.status = TestStatus::kPassed;
  return r;
}

TEST(JsonTest, TestResultHasTheDocumentedKeys) {
  nlohmann::json j = toJson(sampleResult());
  const std::set<std::string> expected{"id",         "test_id",   "run_id",   "started",
                                       "finished",   "op",        "mode",     "transport",
                                       "gpudirect",  "initiator", "target",   "message_size_bytes",
                                       "iterations", "num_qps",   "path_mtu", "measurement",
                                       "integrity",  "status",    "reason"};
  EXPECT_EQ(keysOf(j), expected);
  EXPECT_EQ(keysOf(j["initiator"]),
            (std::set<std::string>{"worker", "host", "nic", "port", "gpu", "gpu_pci", "memory",
                                   "reg_path", "gid_index", "topo_class", "cpu_binding"}));
  EXPECT_EQ(keysOf(j["integrity"]),
            (std::set<std::string>{"checked", "bytes_checked", "wrong_bytes", "first_wrong_offset",
                                   "where"}));
  EXPECT_EQ(keysOf(j["measurement"]),
            (std::set<std::string>{"message_size_bytes", "iterations", "warmup_iterations",
                                   "staging_seconds", "bandwidth", "latency", "port_counters"}));
}

TEST(JsonTest, ValuesUseStableNamesAndUnits) {
  nlohmann::json j = toJson(sampleResult());
  EXPECT_EQ(j["id"], 17);
  EXPECT_EQ(j["test_id"], "t-20261122-151107-3f2a");
  EXPECT_EQ(j["started"], "2026-11-22T15:11:07.123Z");
  EXPECT_EQ(j["op"], "read");
  EXPECT_EQ(j["mode"], "bw");
  EXPECT_EQ(j["transport"], "emulated");
  EXPECT_EQ(j["status"], "PASSED");
  EXPECT_EQ(j["message_size_bytes"], 65536);
  EXPECT_EQ(j["initiator"]["memory"], "host");
  EXPECT_EQ(j["initiator"]["reg_path"], "host");
  EXPECT_EQ(j["initiator"]["gpu"], -1);
  const auto& bw = j["measurement"]["bandwidth"];
  ASSERT_TRUE(bw.is_object());
  EXPECT_DOUBLE_EQ(bw["avg_gbps"].get<double>(), 8.0);
  EXPECT_DOUBLE_EQ(bw["avg_GBps"].get<double>(), 1.0);
  EXPECT_EQ(bw["bytes"], 1000000000ULL);
  EXPECT_TRUE(j["measurement"]["latency"].is_null());
  EXPECT_TRUE(j["measurement"]["port_counters"].is_null());
  EXPECT_EQ(j["integrity"]["checked"], true);
  EXPECT_EQ(j["integrity"]["first_wrong_offset"], -1);
}

TEST(JsonTest, StatusNames) {
  TestResult r = sampleResult();
  for (auto [s, name] :
       {std::pair{TestStatus::kPassed, "PASSED"}, std::pair{TestStatus::kFailed, "FAILED"},
        std::pair{TestStatus::kSkipped, "SKIPPED"}, std::pair{TestStatus::kError, "ERROR"}}) {
    r.status = s;
    EXPECT_EQ(toJson(r)["status"], name);
  }
}

TEST(JsonTest, GpudirectFlagIsFalseForEmulatedAndStaged) {
  TestResult r = sampleResult();
  r.initiator.memory = MemoryKind::kCuda;
  r.initiator.reg_path = RegPath::kDmabuf;
  r.transport = TransportKind::kEmulated;
  EXPECT_EQ(toJson(r)["gpudirect"], false) << "emulated is never GPUDirect";

  r.transport = TransportKind::kVerbs;
  r.initiator.reg_path = RegPath::kStaged;
  r.target.memory = MemoryKind::kCuda;
  r.target.reg_path = RegPath::kStaged;
  nlohmann::json staged = toJson(r);
  EXPECT_EQ(staged["gpudirect"], false) << "staged is never GPUDirect";
  EXPECT_EQ(staged["target"]["reg_path"], "staged");
  EXPECT_EQ(staged["target"]["memory"], "cuda");

  r.target.reg_path = RegPath::kPeermem;
  EXPECT_EQ(toJson(r)["gpudirect"], false) << "one GPU side staged: not every GPU side is direct";
  r.initiator.memory = MemoryKind::kHost;
  r.initiator.reg_path = RegPath::kHost;
  EXPECT_EQ(toJson(r)["gpudirect"], true) << "host -> GPU (peermem) is GPUDirect";
}

TEST(JsonTest, LatencyAndCountersWhenPresent) {
  Measurement m;
  m.has_latency = true;
  m.lat = computeLatency({1.0, 2.0, 3.0});
  m.counters.valid = true;
  m.counters.xmit_bytes = 123;
  nlohmann::json j = toJson(m);
  EXPECT_TRUE(j["bandwidth"].is_null());
  ASSERT_TRUE(j["latency"].is_object());
  EXPECT_EQ(j["latency"]["samples"], 3);
  EXPECT_DOUBLE_EQ(j["latency"]["median_us"].get<double>(), 2.0);
  EXPECT_EQ(keysOf(j["latency"]),
            (std::set<std::string>{"samples", "min_us", "median_us", "mean_us", "stdev_us",
                                   "p99_us", "p999_us", "max_us"}));
  EXPECT_EQ(j["port_counters"]["xmit_bytes"], 123);
}

// An inventory of every part (a capability, a NIC with a port and a GID, a GPU) in the domain
// encoding, for the reader's tests.
nlohmann::json inventoryDocument() {
  Inventory in;
  in.hostname = "h1";
  in.transports = {"verbs"};
  TransportCapabilities c;
  c.transport = TransportKind::kVerbs;
  c.bandwidth_ops = {Op::kWrite};
  c.max_inline = 256;
  in.capabilities.push_back(c);
  Nic nic;
  nic.name = "mlx5_0";
  nic.numa_node = 1;
  NicPort port;
  port.port = 1;
  port.state = "ACTIVE";
  port.rate_gbps = 400;
  port.lid = 7;
  port.gids.push_back({3, "fe80::1", "RoCE v2"});
  nic.ports.push_back(port);
  in.nics.push_back(nic);
  Gpu g;
  g.compute_capability_major = 9;
  in.gpus.push_back(g);
  return toJson(in);
}

// The reader's error for `j` (empty when it reads).
std::string inventoryError(const nlohmann::json& j) {
  auto inv = inventoryFromJson(j);
  return inv.ok() ? std::string() : inv.status().message();
}

TEST(InventoryFromJson, ReadsBackWhatToJsonWrote) {
  const nlohmann::json j = inventoryDocument();
  auto inv = inventoryFromJson(j);
  ASSERT_TRUE(inv.ok()) << inv.status().toString();
  EXPECT_EQ(toJson(*inv), j);
}

// Every error names the field by its path and what was expected of it.
TEST(InventoryFromJson, ErrorsNameTheFieldAndWhatWasExpected) {
  const std::string prefix = "inventory JSON: ";
  EXPECT_EQ(inventoryError(nlohmann::json::array()), prefix + "inventory is not a JSON object");
  nlohmann::json j = inventoryDocument();
  j.erase("hostname");
  EXPECT_EQ(inventoryError(j), prefix + "inventory.hostname is missing");
  j = inventoryDocument();
  j["transports"] = {"verbs", 3};
  EXPECT_EQ(inventoryError(j),
            prefix + "inventory.transports holds an element that is not a string");
  j = inventoryDocument();
  j["capabilities"][0]["transport"] = "TRANSPORT_VERBS";
  EXPECT_EQ(inventoryError(j),
            prefix + "inventory.capabilities[0].transport 'TRANSPORT_VERBS' is not a transport");
  j = inventoryDocument();
  j["capabilities"][0]["bandwidth_ops"] = {"write", "OP_READ"};
  EXPECT_EQ(inventoryError(j), prefix +
                                   "inventory.capabilities[0].bandwidth_ops holds 'OP_READ', not "
                                   "one of its names");
  j = inventoryDocument();
  j["capabilities"][0]["max_message_size"] = "65536";
  EXPECT_EQ(inventoryError(j),
            prefix + "inventory.capabilities[0].max_message_size is not a number >= 0");
  j = inventoryDocument();
  j["nics"][0]["ports"][0]["rate_gbps"] = "400";
  EXPECT_EQ(inventoryError(j), prefix + "inventory.nics[0].ports[0].rate_gbps is not a number");
  j = inventoryDocument();
  j["nics"][0]["ports"][0]["gids"][0]["index"] = 1.5;
  EXPECT_EQ(inventoryError(j),
            prefix + "inventory.nics[0].ports[0].gids[0].index is not an integer");
  j = inventoryDocument();
  j["nics"][0]["ports"] = nlohmann::json::object();
  EXPECT_EQ(inventoryError(j), prefix + "inventory.nics[0].ports is not an array");
  j = inventoryDocument();
  j["gpus"][0] = "GPU 0";
  EXPECT_EQ(inventoryError(j), prefix + "inventory.gpus[0] is not a JSON object");
  j = inventoryDocument();
  j["gpus"][0]["dma_buf_supported"] = 1;
  EXPECT_EQ(inventoryError(j), prefix + "inventory.gpus[0].dma_buf_supported is not true or false");
  j = inventoryDocument();
  j["gpus"][0]["compute_capability"] = "9";
  EXPECT_EQ(inventoryError(j),
            prefix + "inventory.gpus[0].compute_capability '9' is not MAJOR.MINOR");
  // The first error is the one reported.
  j = inventoryDocument();
  j.erase("worker_version");
  j["gpus"][0].erase("name");
  EXPECT_EQ(inventoryError(j), prefix + "inventory.worker_version is missing");
}

// Issue #19: a number beyond its field's type was cut to fit (a NUMA node of 2^32 + 1 read back
// as 1); it is an error naming the field.
TEST(InventoryFromJson, NumbersBeyondTheirFieldsTypeAreErrors) {
  const std::string prefix = "inventory JSON: ";
  nlohmann::json j = inventoryDocument();
  j["nics"][0]["numa_node"] = (int64_t{1} << 32) + 1;
  EXPECT_EQ(inventoryError(j), prefix + "inventory.nics[0].numa_node is out of range");
  j = inventoryDocument();
  j["nics"][0]["ports"][0]["lid"] = (uint64_t{1} << 32) + 7;
  EXPECT_EQ(inventoryError(j), prefix + "inventory.nics[0].ports[0].lid is too large");
  j = inventoryDocument();
  j["capabilities"][0]["max_inline"] = uint64_t{1} << 40;
  EXPECT_EQ(inventoryError(j), prefix + "inventory.capabilities[0].max_inline is too large");
}

}  // namespace
}  // namespace gdrmesh
