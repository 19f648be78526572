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

}  // namespace
}  // namespace gdrmesh
