// The status page end to end: StatusHttpServer on 127.0.0.1:0 over a fake StatusSource, its
// JSON API read with httplib::Client, and the page rendered by a real headless Chromium.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/fabric/lldp.h"
#include "common/units.h"
#include "coordinator/http/status_http_server.h"
#include "tests/support/fabric_trees.h"
#include "tests/support/temp_dir.h"

namespace gdrmesh {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kT0 = 1795000000000;  // 2026-11-18T11:06:40Z: a fixed clock for the fake data

Inventory inventory(const std::string& host, bool gpu) {
  Inventory inv;
  inv.hostname = host;
  inv.worker_version = "0.1.0";
  inv.transports = {"emulated", "verbs"};
  Nic nic;
  nic.name = "mlx5_0";
  nic.pci_bus_id = "0000:17:00.0";
  NicPort port;
  port.port = 1;
  port.state = "ACTIVE";
  port.link_layer = "InfiniBand";
  port.rate_gbps = 200;
  port.active_mtu = 4096;
  nic.ports.push_back(port);
  inv.nics.push_back(nic);
  if (gpu) {
    Gpu g;
    g.index = 0;
    g.name = "NVIDIA H100 80GB HBM3";
    g.pci_bus_id = "0000:1b:00.0";
    g.dma_buf_supported = true;
    g.gpu_direct_rdma_supported = true;
    inv.gpus.push_back(g);
  }
  return inv;
}

EndpointRecord endpoint(const std::string& worker, const std::string& nic, MemoryKind mem,
                        RegPath path) {
  EndpointRecord e;
  e.worker = worker;
  e.host = worker + ".cluster";
  e.nic = nic;
  e.port = nic.empty() ? 0 : 1;
  e.memory = mem;
  e.gpu = mem == MemoryKind::kCuda ? 0 : -1;
  e.reg_path = path;
  return e;
}

// Three results: PASSED emulated, FAILED integrity on verbs, PASSED verbs GPUDirect dma-buf.
std::vector<TestResult> fakeResults() {
  std::vector<TestResult> v;
  TestResult gdr;
  gdr.id = 3;
  gdr.test_id = "t-gdr-dmabuf";
  gdr.started_ms = kT0 + 3000;
  gdr.finished_ms = kT0 + 4000;
  gdr.transport = TransportKind::kVerbs;
  gdr.initiator = endpoint("gpu-a", "mlx5_0", MemoryKind::kCuda, RegPath::kDmabuf);
  gdr.target = endpoint("gpu-b", "mlx5_0", MemoryKind::kCuda, RegPath::kDmabuf);
  gdr.initiator.topo_class = "PIX";
  gdr.message_size = 8 << 20;
  gdr.measurement.has_bandwidth = true;
  gdr.measurement.bw.avg_gbps = 194.31;
  gdr.measurement.bw.peak_gbps = 195.02;
  gdr.integrity = {true, 8 << 20, 0, -1, "gpu:0"};
  gdr.status = TestStatus::kPassed;
  v.push_back(gdr);

  TestResult bad;
  bad.id = 2;
  bad.test_id = "t-integrity-fail";
  bad.started_ms = kT0 + 2000;
  bad.finished_ms = kT0 + 2500;
  bad.transport = TransportKind::kVerbs;
  bad.initiator = endpoint("gpu-a", "mlx5_0", MemoryKind::kHost, RegPath::kHost);
  bad.target = endpoint("gpu-b", "mlx5_0", MemoryKind::kHost, RegPath::kHost);
  bad.message_size = 1 << 20;
  bad.measurement.has_bandwidth = true;
  bad.measurement.bw.avg_gbps = 97.5;
  bad.integrity = {true, 1 << 20, 4096, 65536, "host"};
  bad.status = TestStatus::kFailed;
  bad.reason = "destination data check failed: 4096 wrong bytes on gpu-b";
  v.push_back(bad);

  TestResult emu;
  emu.id = 1;
  emu.test_id = "t-emulated";
  emu.started_ms = kT0 + 1000;
  emu.finished_ms = kT0 + 1200;
  emu.transport = TransportKind::kEmulated;
  emu.mode = Mode::kLatency;
  emu.initiator = endpoint("gpu-a", "", MemoryKind::kHost, RegPath::kHost);
  emu.target = endpoint("old-c", "", MemoryKind::kHost, RegPath::kHost);
  emu.message_size = 64;
  emu.measurement.has_latency = true;
  emu.measurement.lat.median_us = 41.25;
  emu.measurement.lat.p99_us = 80.5;
  emu.integrity = {true, 64, 0, -1, "host"};
  emu.status = TestStatus::kPassed;
  v.push_back(emu);

  // A skipped GPU test: counted by status, but it moved no data, so it has no data path.
  TestResult skip;
  skip.id = 0;
  skip.test_id = "t-skipped";
  skip.started_ms = kT0 + 500;
  skip.finished_ms = kT0 + 500;
  skip.transport = TransportKind::kVerbs;
  skip.initiator = endpoint("gpu-a", "mlx5_0", MemoryKind::kCuda, RegPath::kDmabuf);
  skip.target = endpoint("old-c", "", MemoryKind::kCuda, RegPath::kDmabuf);
  skip.status = TestStatus::kSkipped;
  skip.reason = "old-c has no GPU driver";
  v.push_back(skip);
  return v;
}

WorkerSummary worker(const std::string& name, const std::string& state, int64_t heartbeat_ms,
                     Inventory inv) {
  WorkerSummary w;
  w.name = name;
  w.state = state;
  w.last_heartbeat_ms = heartbeat_ms;
  w.inventory = std::move(inv);
  w.connected_ms = heartbeat_ms - 1000;
  w.peer = "ipv4:10.0.0.1:5000";
  return w;
}

PairVerdict verdict(const std::string& src, const std::string& dst, uint64_t size, VerdictKind k,
                    double value, std::vector<std::string> reasons = {}) {
  PairVerdict v;
  v.test_id = "t-" + src + "-" + dst + "-" + std::to_string(size);
  v.src = src;
  v.dst = dst;
  v.message_size = size;
  v.verdict = k;
  v.value = value;
  v.unit = "Gb/s";
  v.reasons = std::move(reasons);
  return v;
}

SweepProgress sweepProgress(const std::string& id, SweepState state) {
  SweepProgress p;
  p.id = id;
  p.state = state;
  p.pattern = "all-pairs";
  p.created_ms = kT0;
  p.started_ms = kT0 + 1000;
  p.tests_total = 20;
  if (state == SweepState::kRunning) {
    p.tests_done = 10;
    p.tests_failed = 2;
    p.tests_running = 2;
    p.elapsed_seconds = 12;
    p.eta_seconds = 12;
  } else {
    p.finished_ms = kT0 + 31000;
    p.tests_done = 20;
    p.tests_failed = 1;
    p.tests_skipped = 1;
    p.elapsed_seconds = 30;
    p.verdict = "FAIL";
  }
  return p;
}

// sw-done: gpu-a -> gpu-b passes (two sizes), gpu-b -> gpu-a fails, gpu-a -> old-c is skipped.
SweepReportData doneSweep() {
  SweepReportData r;
  r.progress = sweepProgress("sw-done", SweepState::kFinished);
  r.verdicts = {
      verdict("gpu-a/mlx5_0", "gpu-b/mlx5_0", 1 << 20, VerdictKind::kPass, 180.5),
      verdict("gpu-a/mlx5_0", "gpu-b/mlx5_0", 8 << 20, VerdictKind::kPass, 194.31),
      verdict("gpu-b/mlx5_0", "gpu-a/mlx5_0", 8 << 20, VerdictKind::kFail, 97.5,
              {"min_bw_gbps: 97.50 Gb/s is below 150 Gb/s"}),
      verdict("gpu-a/mlx5_0", "old-c", 8 << 20, VerdictKind::kSkip, 0, {"old-c has no NIC"})};
  r.suspects = {{"nic", "gpu-b/mlx5_0", 3.5, {"failed with 1 of 1 partners"}},
                {"host", "gpu-b", 1.25, {"its only NIC is a suspect"}}};
  r.notes = {"hosts with unequal NIC counts: old-c has 0, others 1"};
  FigureSummary f;
  f.message_size = 8 << 20;
  f.unit = "Gb/s";
  f.pairs = 2;
  f.min = 97.5;
  f.median = 145.9;
  f.max = 194.31;
  f.worst = {{"gpu-b/mlx5_0", "gpu-a/mlx5_0", 97.5}};
  f.worst_hosts = {{"gpu-b", 97.5, 1}};
  r.figures = {f};
  SweepPart part;
  part.spec.pattern = SweepPattern::kAllPairs;
  part.spec.sizes = {1 << 20, 8 << 20};
  part.spec.test.iterations = 50;
  part.spec.test.initiator.memory = MemoryKind::kCuda;
  part.spec.test.initiator.gpu = 0;
  part.spec.test.initiator.reg = RegPath::kDmabuf;
  part.planned = 4;
  part.planned_known = true;
  r.parts = {part};
  return r;
}

// sw-big: 1024 hosts, three random matchings (the page must draw it without a node per cell).
SweepReportData bigSweep() {
  SweepReportData r;
  r.progress = sweepProgress("sw-big", SweepState::kFinished);
  const int n = 1024;
  for (int round = 1; round <= 3; ++round) {
    for (int i = 0; i < n; ++i) {
      const int j = (i * 7 + round * 131) % n;
      if (i == j) continue;
      char a[16], b[16];
      std::snprintf(a, sizeof(a), "h%04d", i);
      std::snprintf(b, sizeof(b), "h%04d", j);
      const bool fail = i % 97 == 0;
      r.verdicts.push_back(verdict(a, b, 1 << 20, fail ? VerdictKind::kFail : VerdictKind::kPass,
                                   fail ? 20.0 : 150.0 + (i % 50)));
    }
  }
  return r;
}

LinkVerdictRecord linkVerdict(const std::string& a, uint64_t a_guid, int a_port,
                              const std::string& b, uint64_t b_guid, int b_port,
                              const std::string& verdict, std::vector<std::string> evidence) {
  LinkVerdictRecord v;
  v.sweep_id = "sw-fabric";
  v.link = a + "[" + std::to_string(a_port) + "] <-> " + b + "[" + std::to_string(b_port) + "]";
  v.switch_name = a;
  v.switch_guid = a_guid;
  v.port = a_port;
  v.remote_name = b;
  v.remote_guid = b_guid;
  v.remote_port = b_port;
  v.verdict = verdict;
  v.evidence = std::move(evidence);
  return v;
}

// sw-fabric: a sweep on a fabric whose links the store keeps by name: an ok one first, then
// the planted bad one (errors), then one no test crossed.
SweepReportData fabricSweep() {
  SweepReportData r;
  r.progress = sweepProgress("sw-fabric", SweepState::kFinished);
  r.progress.reason =
      "link leaf01[5] <-> spine01[2]: errors: 1,234 symbol errors on leaf01[5] during round 0 = "
      "4,442/h (threshold 120/h)";
  r.links = {
      linkVerdict("leaf01", 0x1001, 3, "spine01", 0x2001, 1, "ok", {}),
      linkVerdict("leaf01", 0x1001, 5, "spine01", 0x2001, 2, "errors",
                  {"1,234 symbol errors on leaf01[5] during round 0 = 4,442/h (threshold 120/h)"}),
      linkVerdict("leaf02", 0x1002, 3, "spine02", 0x2002, 2, "not_covered",
                  {"no test of the sweep crossed it, in either direction"})};
  r.suspects = {{"link", "leaf01[5] <-> spine01[2]", 0.9, {"1,234 symbol errors on leaf01[5]"}},
                {"host", "h04", 1.25, {"failed with 3 of 3 partners"}}};
  // On the fabric of fabricOf("sw-fabric"): h01 h02 under leaf01, h03 h04 under leaf02, where
  // every test fails; old-c has no HCA.
  r.verdicts = {verdict("h01/mlx5_0", "h02/mlx5_0", 1 << 20, VerdictKind::kPass, 190),
                verdict("h01/mlx5_0", "h03/mlx5_0", 1 << 20, VerdictKind::kFail, 40),
                verdict("h02/mlx5_0", "h04/mlx5_0", 1 << 20, VerdictKind::kFail, 41),
                verdict("h03/mlx5_0", "h04/mlx5_0", 1 << 20, VerdictKind::kFail, 42),
                verdict("h04/mlx5_0", "h01/mlx5_0", 1 << 20, VerdictKind::kFail, 43),
                verdict("h02/mlx5_0", "old-c", 1 << 20, VerdictKind::kSkip, 0)};
  return r;
}

fabric::LldpHost roceHost(const std::string& host, const std::string& sw, const std::string& port) {
  fabric::LldpHost h;
  h.host = host;
  fabric::LldpNic n;
  n.device = "mlx5_0";
  n.netdev = "ens1f0np0";
  n.link_layer = "Ethernet";
  fabric::LldpNeighbour nb;
  nb.interface = n.netdev;
  nb.chassis_name = sw;
  nb.chassis_id = sw == "leaf07" ? "b6:d3:b8:84:e8:07" : "b6:d3:b8:84:e8:08";
  nb.chassis_id_type = "mac";
  nb.port_id = port;
  n.neighbour = nb;
  h.nics.push_back(n);
  return h;
}

// The RoCE fabric of sw-roce, known from LLDP: r1 r2 on leaf07, r3 r4 on leaf08.
std::shared_ptr<const fabric::EthFabric> roceFabric() {
  return std::make_shared<const fabric::EthFabric>(fabric::buildEthFabric(
      {roceHost("r1", "leaf07", "Ethernet1"), roceHost("r2", "leaf07", "Ethernet2"),
       roceHost("r3", "leaf08", "Ethernet1"), roceHost("r4", "leaf08", "Ethernet2")},
      kT0));
}

// sw-roce: a sweep on that fabric; every test of r1 fails, its switch port is the suspect.
SweepReportData roceSweep() {
  SweepReportData r;
  r.progress = sweepProgress("sw-roce", SweepState::kFinished);
  r.verdicts = {verdict("r1/mlx5_0", "r2/mlx5_0", 1 << 20, VerdictKind::kFail, 30),
                verdict("r1/mlx5_0", "r3/mlx5_0", 1 << 20, VerdictKind::kFail, 31),
                verdict("r2/mlx5_0", "r3/mlx5_0", 1 << 20, VerdictKind::kPass, 180),
                verdict("r3/mlx5_0", "r4/mlx5_0", 1 << 20, VerdictKind::kPass, 181),
                verdict("r4/mlx5_0", "r1/mlx5_0", 1 << 20, VerdictKind::kFail, 32),
                verdict("r9/mlx5_0", "r3/mlx5_0", 1 << 20, VerdictKind::kSkip, 0)};
  r.suspects = {{"switch_port",
                 "leaf07[Ethernet1]",
                 1.0,
                 {std::string("host switch port leaf07[Ethernet1] of r1 mlx5_0 (") +
                  fabric::kLldpEstimate + ")"}},
                {"host", "r1", 2.0, {"failed with 3 of 3 partners"}}};
  r.notes = {std::string("fabric coverage (") + fabric::kLldpEstimate +
             ", from LLDP): 4 of 4 host switch ports carried tests"};
  return r;
}

class FakeSource : public StatusSource {
 public:
  std::vector<WorkerSummary> workers() override {
    WorkerSummary a = worker("gpu-a", "online", kT0 + 5000, inventory("node-a", true));
    WorkerSummary b = worker("gpu-b", "online", kT0 + 5100, inventory("node-b", true));
    WorkerSummary c = worker("old-c", "offline", kT0 - 60000, inventory("node-c", false));
    c.inventory.notes = {"no GPU driver: GPU tests are skipped"};
    return {a, b, c};
  }

  Result<std::vector<TestResult>> results(const ResultQuery& q) override {
    std::lock_guard<std::mutex> lock(mu_);
    queries_.push_back(q);
    if (fail_) return unavailable("store is busy", "retry");
    std::vector<TestResult> out;
    for (const auto& r : fakeResults()) {
      if (!q.worker.empty() && r.initiator.worker != q.worker && r.target.worker != q.worker) {
        continue;
      }
      if (q.status && r.status != *q.status) continue;
      if (!q.run_id.empty() && r.run_id != q.run_id) continue;
      if (q.limit != 0 && out.size() >= q.limit) break;
      out.push_back(r);
    }
    return out;
  }

  Result<std::vector<SweepProgress>> sweeps(uint32_t limit) override {
    std::lock_guard<std::mutex> lock(mu_);
    last_sweeps_limit_ = limit;
    if (fail_) return unavailable("store is busy", "retry");
    if (no_sweeps_) return std::vector<SweepProgress>{};
    std::vector<SweepProgress> v{sweepProgress("sw-running", SweepState::kRunning),
                                 doneSweep().progress};
    if (v.size() > limit) v.resize(limit);
    return v;
  }
  Result<SweepReportData> sweep(const std::string& id) override {
    if (id == "sw-done") return doneSweep();
    if (id == "sw-big") return bigSweep();
    if (id == "sw-fabric") return fabricSweep();
    if (id == "sw-roce") return roceSweep();
    if (id == "sw-running") {
      SweepReportData r;
      r.progress = sweepProgress("sw-running", SweepState::kRunning);
      return r;
    }
    return notFound("sweep '" + id + "' is not known", "list sweeps with `gdrmesh sweeps`");
  }
  Result<std::vector<TestResult>> history(const HistoryQuery& q) override {
    std::lock_guard<std::mutex> lock(mu_);
    last_history_ = q;
    std::vector<TestResult> out;
    for (const auto& r : fakeResults()) {
      const bool fwd = r.initiator.worker == q.src && r.target.worker == q.dst;
      const bool rev = r.initiator.worker == q.dst && r.target.worker == q.src;
      if (!q.run_id.empty() && r.run_id != q.run_id) continue;
      if (fwd || (q.both_directions && rev)) out.push_back(r);
    }
    return out;
  }
  Result<TestResult> result(const std::string& test_id) override {
    for (const auto& r : fakeResults()) {
      if (r.test_id == test_id) return r;
    }
    return notFound("no result has test id '" + test_id + "'", "copy one from /api/results");
  }
  Result<SweepComparison> compare(const std::string& a, const std::string& b,
                                  double tolerance_pct) override {
    if (a != "sw-done" || b != "sw-done") {
      return notFound("sweep '" + (a != "sw-done" ? a : b) + "' is not stored", "list sweeps");
    }
    return compareSweepResults(a, fakeResults(), b, fakeResults(), tolerance_pct);
  }
  int64_t unixMs() override { return kT0 + 60000; }
  // sw-fabric ran on a two-level InfiniBand tree (2 leaves of 2 hosts, 2 spines), sw-roce on a
  // RoCE fabric known from LLDP; the others on none.
  FabricOfSweep fabricOf(const std::string& id) override {
    if (id == "sw-fabric") {
      return {
          std::make_shared<const SweepFabric>(testing::twoLevelTree(2, 2, 2),
                                              std::map<std::string, std::string>{}, "fabric.json"),
          nullptr};
    }
    if (id == "sw-roce") return {nullptr, roceFabric()};
    return {};
  }
  HistoryQuery lastHistory() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_history_;
  }

  uint32_t lastSweepsLimit() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_sweeps_limit_;
  }
  void setNoSweeps(bool v) {
    std::lock_guard<std::mutex> lock(mu_);
    no_sweeps_ = v;
  }

  ResultQuery lastQuery() {
    std::lock_guard<std::mutex> lock(mu_);
    return queries_.empty() ? ResultQuery{} : queries_.back();
  }
  void setFail(bool f) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_ = f;
  }

 private:
  HistoryQuery last_history_;
  std::mutex mu_;
  std::vector<ResultQuery> queries_;
  bool fail_ = false;
  bool no_sweeps_ = false;
  uint32_t last_sweeps_limit_ = 0;
};

// j[key] as a string, "" when absent or not a string.
std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get_ref<const std::string&>() : std::string();
}

class StatusPageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto port = server_.start("127.0.0.1:0");
    ASSERT_TRUE(port.ok()) << port.status().toString();
    port_ = *port;
    ASSERT_GT(port_, 0);
  }

  // GET path; returns {status, body, content type}.
  struct Reply {
    int status = 0;
    std::string body;
    std::string type;
  };
  Reply get(const std::string& path) {
    httplib::Client cli("127.0.0.1", port_);
    cli.set_connection_timeout(5);
    cli.set_read_timeout(10);
    auto res = cli.Get(path);
    if (!res) {
      ADD_FAILURE() << "GET " << path << ": " << httplib::to_string(res.error());
      return {};
    }
    return {res->status, res->body, res->get_header_value("Content-Type")};
  }
  json getJson(const std::string& path, int want_status = 200) {
    Reply r = get(path);
    EXPECT_EQ(r.status, want_status) << path << ": " << r.body;
    EXPECT_THAT(r.type, HasSubstr("application/json")) << path;
    return json::parse(r.body, nullptr, false);
  }

  FakeSource source_;
  ManualClock clock_;  // the page's deadlines pass only when a test moves it
  StatusHttpServer server_{source_, clock_};
  int port_ = 0;
};

TEST_F(StatusPageTest, HealthzAnswersOk) {
  Reply r = get("/healthz");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok\n");
}

TEST_F(StatusPageTest, WorkersHaveTheShapeOfWorkersJson) {
  json j = getJson("/api/workers");
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0]["name"], "gpu-a");
  EXPECT_EQ(j[0]["state"], "online");
  EXPECT_EQ(j[0]["last_heartbeat"], formatRfc3339(kT0 + 5000));
  EXPECT_EQ(j[0]["inventory"]["hostname"], "node-a");
  EXPECT_EQ(j[0]["inventory"]["nics"][0]["ports"][0]["state"], "ACTIVE");
  EXPECT_EQ(j[0]["inventory"]["gpus"][0]["pci_bus_id"], "0000:1b:00.0");
  EXPECT_EQ(j[2]["state"], "offline");
  for (const char* k : {"connected", "peer", "active_tests"}) EXPECT_TRUE(j[0].contains(k)) << k;
}

TEST_F(StatusPageTest, ResultsAreToJsonOfTestResult) {
  json j = getJson("/api/results");
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 4u);
  EXPECT_EQ(source_.lastQuery().limit, 50u);
  EXPECT_EQ(j[0]["test_id"], "t-gdr-dmabuf");
  EXPECT_EQ(j[0]["gpudirect"], true);
  EXPECT_EQ(j[0]["initiator"]["reg_path"], "dmabuf");
  EXPECT_EQ(j[2]["transport"], "emulated");
  EXPECT_EQ(j[2]["gpudirect"], false);
  EXPECT_EQ(j[1]["integrity"]["wrong_bytes"], 4096);
}

// Over kResultsPage rows the answer is streamed (chunked) through the front gate, whole:
// httplib's chunked writer stops when its server looks shut down, and with the gate owning
// the socket it did, sending an empty body.
TEST_F(StatusPageTest, ALargeResultsAnswerIsStreamedWhole) {
  json j = getJson("/api/results?limit=1000");
  ASSERT_TRUE(j.is_array()) << j.dump();
  EXPECT_EQ(j.size(), 4u);
  EXPECT_EQ(j[0]["test_id"], "t-gdr-dmabuf");
}

TEST_F(StatusPageTest, ResultFiltersReachTheSource) {
  json j = getJson("/api/results?status=failed&worker=gpu-b&limit=7&run_id=r1");
  ResultQuery q = source_.lastQuery();
  EXPECT_EQ(q.limit, 7u);
  EXPECT_EQ(q.worker, "gpu-b");
  ASSERT_TRUE(q.status.has_value());
  EXPECT_EQ(*q.status, TestStatus::kFailed);
  EXPECT_EQ(q.run_id, "r1");

  j = getJson("/api/results?status=FAILED");
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["status"], "FAILED");
  j = getJson("/api/results?limit=1");
  EXPECT_EQ(j.size(), 1u);
  j = getJson("/api/results?worker=old-c");
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["test_id"], "t-emulated");
}

TEST_F(StatusPageTest, BadParametersAnswer400NamingTheParameter) {
  struct Case {
    std::string query, parameter;
  };
  const std::vector<Case> cases{{"/api/results?limit=abc", "limit"},
                                {"/api/results?limit=0", "limit"},
                                {"/api/results?limit=10001", "limit"},
                                {"/api/results?limit=-5", "limit"},
                                {"/api/results?status=bogus", "status"},
                                {"/api/results?worker=bad%20name!", "worker"},
                                {"/api/results?colour=red", "colour"},
                                {"/api/results?limit=1&limit=2", "limit"},
                                {"/api/summary?limit=x", "limit"},
                                {"/api/workers?x=1", "x"},
                                {"/api/sweeps?limit=0", "limit"},
                                {"/api/sweeps?state=running", "state"},
                                {"/api/sweeps/sw-done?verdicts=some", "verdicts"},
                                {"/api/sweeps/latest?x=1", "x"},
                                {"/api/sweeps/bad%20id!", "id"},
                                {"/metrics?debug=1", "debug"}};
  for (const auto& c : cases) {
    json j = getJson(c.query, 400);
    EXPECT_EQ(str(j, "parameter"), c.parameter) << c.query;
    EXPECT_THAT(str(j, "error"), HasSubstr(c.parameter)) << c.query;
    EXPECT_FALSE(str(j, "fix").empty()) << c.query;
  }
}

TEST_F(StatusPageTest, SourceFailureIs503AndUnknownApiIs404) {
  source_.setFail(true);
  json j = getJson("/api/results", 503);
  EXPECT_THAT(str(j, "error"), HasSubstr("store is busy"));
  source_.setFail(false);
  j = getJson("/api/nothing", 404);
  EXPECT_THAT(str(j, "fix"), HasSubstr("/api/results"));
  EXPECT_EQ(get("/missing.png").status, 404);
}

TEST_F(StatusPageTest, HistoryParametersReachTheSource) {
  json j = getJson(
      "/api/history?src=gpu-a&dst=gpu-b&since=1h&until=2026-11-18T11:06:00Z"
      "&size=64KiB&op=read&mode=lat&direction=one&run_id=sw-done&limit=7");
  ASSERT_TRUE(j.is_array());
  const HistoryQuery q = source_.lastHistory();
  EXPECT_EQ(q.src, "gpu-a");
  EXPECT_EQ(q.dst, "gpu-b");
  EXPECT_EQ(q.since_ms, kT0 + 60000 - 3'600'000) << "1h back from the source's clock";
  EXPECT_EQ(q.until_ms, 1'795'000'000'000 - 40'000);
  EXPECT_EQ(q.message_size, 65536u);
  EXPECT_EQ(q.op, Op::kRead);
  EXPECT_EQ(q.mode, Mode::kLatency);
  EXPECT_FALSE(q.both_directions);
  EXPECT_EQ(q.run_id, "sw-done");
  EXPECT_EQ(q.limit, 7u);
  for (const auto& [path, param] : std::vector<std::pair<std::string, std::string>>{
           {"/api/history?dst=gpu-b", "src"},
           {"/api/history?src=gpu-a", "dst"},
           {"/api/history?src=gpu-a&dst=b%20c", "dst"},
           {"/api/history?src=gpu-a&dst=gpu-b&since=soon", "since"},
           {"/api/history?src=gpu-a&dst=gpu-b&since=1h&until=2h", "until"},
           {"/api/history?src=gpu-a&dst=gpu-b&size=64KB", "size"},
           {"/api/history?src=gpu-a&dst=gpu-b&op=put", "op"},
           {"/api/history?src=gpu-a&dst=gpu-b&mode=fast", "mode"},
           {"/api/history?src=gpu-a&dst=gpu-b&direction=up", "direction"},
           {"/api/history?src=gpu-a&dst=gpu-b&limit=0", "limit"},
           {"/api/history?src=gpu-a&dst=gpu-b&run_id=", "run_id"},
           {"/api/history?src=gpu-a&dst=gpu-b&run_id=a%0Ab", "run_id"},
           {"/api/compare?a=sw-done", "b"},
           {"/api/compare?a=sw-done&b=sw-done&tolerance=lots", "tolerance"},
           {"/api/compare?a=sw-done&b=sw-done&tolerance=-1", "tolerance"},
       }) {
    json e = getJson(path, 400);
    EXPECT_EQ(e.contains("parameter") ? e["parameter"] : json(), param) << path;
    EXPECT_FALSE(str(e, "fix").empty()) << path;
  }
}

TEST_F(StatusPageTest, OneResultAndComparisonAnswerFromTheSource) {
  json r = getJson("/api/results/t-emulated");
  EXPECT_EQ(str(r, "test_id"), "t-emulated");
  EXPECT_EQ(str(r, "transport"), "emulated");
  json missing = getJson("/api/results/t-nope", 404);
  EXPECT_THAT(str(missing, "error"), HasSubstr("t-nope"));
  json c = getJson("/api/compare?a=sw-done&b=sw-done&tolerance=2.5%25");
  EXPECT_EQ(c["tolerance_pct"], 2.5);
  ASSERT_TRUE(c["rows"].is_array());
  ASSERT_FALSE(c["rows"].empty());
  EXPECT_EQ(c["summary"]["unchanged"], c["rows"].size()) << "a sweep against itself";
  for (const char* k :
       {"src", "dst", "op", "mode", "message_size_bytes", "change", "a", "b", "unit", "change_pct",
        "a_status", "b_status", "a_test_id", "b_test_id", "reason"}) {
    EXPECT_TRUE(c["rows"][0].contains(k)) << k;
  }
  json unknown = getJson("/api/compare?a=sw-done&b=sw-gone", 404);
  EXPECT_THAT(str(unknown, "error"), HasSubstr("sw-gone"));
}

TEST_F(StatusPageTest, SummaryCountsByStatusWorkerAndDataPath) {
  json j = getJson("/api/summary");
  EXPECT_EQ(source_.lastQuery().limit, 500u);
  EXPECT_EQ(j["workers"]["online"], 2);
  EXPECT_EQ(j["workers"]["offline"], 1);
  EXPECT_EQ(j["results"]["considered"], 4);
  EXPECT_EQ(j["results"]["by_status"]["passed"], 2);
  EXPECT_EQ(j["results"]["by_status"]["failed"], 1);
  EXPECT_EQ(j["results"]["by_status"]["skipped"], 1);
  // The skipped GPU test moved no data: it is in no data path (not counted as GPUDirect).
  EXPECT_EQ(j["data_path"]["gpudirect"], 1);
  EXPECT_EQ(j["data_path"]["emulated"], 1);
  EXPECT_EQ(j["data_path"]["rdma_host"], 1);
  EXPECT_EQ(j["data_path"]["staged"], 0);
  EXPECT_EQ(j["latest_started"], formatRfc3339(kT0 + 3000));
  ASSERT_EQ(j["per_worker"].size(), 3u);
  EXPECT_EQ(j["per_worker"][0]["worker"], "gpu-a");
  EXPECT_EQ(j["per_worker"][0]["passed"], 2);
  EXPECT_EQ(j["per_worker"][0]["failed"], 1);
  EXPECT_EQ(j["per_worker"][2]["worker"], "old-c");
  EXPECT_EQ(j["per_worker"][2]["passed"], 1);
  EXPECT_EQ(j["per_worker"][2]["skipped"], 1);
}

TEST_F(StatusPageTest, SweepsListNewestFirstWithLiveProgress) {
  json j = getJson("/api/sweeps");
  EXPECT_EQ(source_.lastSweepsLimit(), 20u);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["id"], "sw-running");
  EXPECT_EQ(j[0]["state"], "running");
  EXPECT_EQ(j[0]["tests_done"], 10);
  EXPECT_EQ(j[0]["tests_total"], 20);
  EXPECT_EQ(j[0]["tests_failed"], 2);
  EXPECT_EQ(j[0]["eta_seconds"], 12.0);
  EXPECT_EQ(j[0]["verdict"], "");
  EXPECT_EQ(j[1]["finished"], formatRfc3339(kT0 + 31000));
  EXPECT_EQ(j[1]["finished_ms"], kT0 + 31000);
  j = getJson("/api/sweeps?limit=1");
  EXPECT_EQ(j.size(), 1u);
}

TEST_F(StatusPageTest, SweepReportHasAMatrixKeyedByWorkerAndNic) {
  json j = getJson("/api/sweeps/sw-done");
  EXPECT_EQ(j["progress"]["id"], "sw-done");
  EXPECT_EQ(j["progress"]["verdict"], "FAIL");
  EXPECT_EQ(j["verdicts"].size(), 4u);
  // The shared encoding (docs/json.md): {pass, fail, skip}, as `gdrmesh sweeps -o json`.
  EXPECT_EQ(j["verdict_counts"], json({{"pass", 2}, {"fail", 1}, {"skip", 1}}));
  ASSERT_EQ(j["suspects"].size(), 2u);
  EXPECT_EQ(j["suspects"][0]["name"], "gpu-b/mlx5_0");
  EXPECT_EQ(j["suspects"][0]["evidence"][0], "failed with 1 of 1 partners");
  EXPECT_EQ(j["notes"].size(), 1u);
  const json& m = j["matrix"];
  EXPECT_EQ(m["hosts"], json({"gpu-a/mlx5_0", "gpu-b/mlx5_0", "old-c"}));
  // One cell per pair: the largest size speaks for a passing pair.
  ASSERT_EQ(m["cells"].size(), 3u);
  EXPECT_EQ(m["cells"][0], json({0, 1, "PASS", 194.31, "Gb/s", ""}));
  EXPECT_EQ(m["cells"][1], json({0, 2, "SKIP", 0.0, "Gb/s", "old-c has no NIC"}));
  EXPECT_EQ(m["cells"][2],
            json({1, 0, "FAIL", 97.5, "Gb/s", "min_bw_gbps: 97.50 Gb/s is below 150 Gb/s"}));
  EXPECT_EQ(m["best"]["Gb/s"], 194.31);
  // What it measured and what ran, in the words of docs/json.md.
  ASSERT_EQ(j["figures"].size(), 1u) << j.dump(2);
  EXPECT_EQ(j["figures"][0]["op"], "write");
  EXPECT_EQ(j["figures"][0]["mode"], "bw");
  EXPECT_EQ(j["figures"][0]["message_size"], 8 << 20);
  EXPECT_EQ(j["figures"][0]["median"], 145.9);
  EXPECT_EQ(j["figures"][0]["worst"][0],
            json({{"src", "gpu-b/mlx5_0"}, {"dst", "gpu-a/mlx5_0"}, {"value", 97.5}}));
  EXPECT_EQ(j["figures"][0]["worst_hosts"][0],
            json({{"host", "gpu-b"}, {"median", 97.5}, {"pairs", 1}}));
  ASSERT_EQ(j["parts"].size(), 1u) << j.dump(2);
  EXPECT_EQ(j["parts"][0]["pattern"], "all-pairs");
  EXPECT_EQ(j["parts"][0]["sizes"], json({1 << 20, 8 << 20}));
  EXPECT_EQ(j["parts"][0]["iterations"], 50);
  EXPECT_EQ(
      j["parts"][0]["initiator"],
      json({{"worker", ""}, {"device", ""}, {"memory", "cuda"}, {"gpu", 0}, {"reg", "dmabuf"}}));
  EXPECT_EQ(
      j["parts"][0]["target"],
      json({{"worker", ""}, {"device", ""}, {"memory", "host"}, {"gpu", -1}, {"reg", "auto"}}));
  EXPECT_EQ(j["parts"][0]["planned"], 4);

  j = getJson("/api/sweeps/sw-done?verdicts=failed");
  ASSERT_EQ(j["verdicts"].size(), 1u);
  EXPECT_EQ(j["verdicts"][0]["src"], "gpu-b/mlx5_0");
  EXPECT_EQ(j["matrix"]["cells"].size(), 3u);
  j = getJson("/api/sweeps/sw-done?verdicts=none");
  EXPECT_TRUE(j["verdicts"].empty());
  EXPECT_EQ(j["verdicts_page"]["total"], 0);
}

// Verdicts come in pages: offset and limit over the verdicts the filter keeps, in report order;
// the counts and the matrix always cover the whole sweep.
TEST_F(StatusPageTest, SweepVerdictsArePaged) {
  const json all = getJson("/api/sweeps/sw-done");
  ASSERT_EQ(all["verdicts"].size(), 4u);
  EXPECT_EQ(all["verdicts_page"],
            json({{"offset", 0}, {"limit", 1000}, {"total", 4}, {"next_offset", nullptr}}));
  json j = getJson("/api/sweeps/sw-done?limit=3");
  ASSERT_EQ(j["verdicts"].size(), 3u);
  EXPECT_EQ(j["verdicts_page"]["next_offset"], 3);
  EXPECT_EQ(j["verdicts"][2], all["verdicts"][2]);
  j = getJson("/api/sweeps/sw-done?limit=3&offset=3");
  ASSERT_EQ(j["verdicts"].size(), 1u);
  EXPECT_EQ(j["verdicts"][0], all["verdicts"][3]);
  EXPECT_EQ(j["verdicts_page"]["next_offset"], nullptr);
  EXPECT_EQ(j["verdict_counts"], all["verdict_counts"]);
  EXPECT_EQ(j["matrix"], all["matrix"]);
  j = getJson("/api/sweeps/sw-done?offset=9");
  EXPECT_TRUE(j["verdicts"].empty());
  EXPECT_EQ(j["verdicts_page"]["total"], 4);
  j = getJson("/api/sweeps/sw-done?verdicts=failed&limit=1");
  ASSERT_EQ(j["verdicts"].size(), 1u);
  EXPECT_EQ(j["verdicts"][0]["verdict"], "FAIL");
  EXPECT_EQ(j["verdicts_page"]["total"], 1);
  for (const auto& [path, param] : std::vector<std::pair<std::string, std::string>>{
           {"/api/sweeps/sw-done?offset=-1", "offset"},
           {"/api/sweeps/sw-done?offset=1e3", "offset"},
           {"/api/sweeps/sw-done?limit=0", "limit"},
           {"/api/sweeps/sw-done?limit=10001", "limit"}}) {
    const json e = getJson(path, 400);
    EXPECT_EQ(str(e, "parameter"), param) << path;
    EXPECT_FALSE(str(e, "fix").empty()) << path;
  }
}

TEST_F(StatusPageTest, LatestIsTheNewestEndedSweepAndUnknownIs404) {
  json j = getJson("/api/sweeps/latest");
  EXPECT_EQ(j["progress"]["id"], "sw-done");
  j = getJson("/api/sweeps/sw-nothing", 404);
  EXPECT_THAT(str(j, "error"), HasSubstr("sw-nothing"));
  EXPECT_FALSE(str(j, "fix").empty());
  source_.setNoSweeps(true);
  j = getJson("/api/sweeps/latest", 404);
  EXPECT_THAT(str(j, "fix"), HasSubstr("sweep run"));
}

// The metrics text parsed by the reference parser (python3-prometheus-client), when installed.
std::string findPrometheusPython() {
  for (const char* py : {"/usr/bin/python3", "python3"}) {
    const std::string cmd =
        std::string(py) + " -c 'import prometheus_client.parser' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return py;
  }
  return "";
}

TEST_F(StatusPageTest, MetricsParseAsPrometheusText) {
  Reply r = get("/metrics");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_THAT(r.type, HasSubstr("text/plain"));
  EXPECT_THAT(r.body, HasSubstr("gdrmesh_workers_up 2\n"));
  const std::string python = findPrometheusPython();
  if (python.empty()) {
    GTEST_SKIP() << "python3 cannot import prometheus_client (apt-get install -y "
                    "python3-prometheus-client); the metrics text was not parsed:\n"
                 << r.body;
  }
  char tmpl[] = "/tmp/gdrmesh-metrics-XXXXXX";
  const int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(tmpl) << r.body;
  const std::string script =
      "import json, sys\n"
      "from prometheus_client.parser import text_string_to_metric_families\n"
      "out = {}\n"
      "for f in text_string_to_metric_families(open(sys.argv[1]).read()):\n"
      "    for s in f.samples:\n"
      "        out.setdefault(s.name, []).append([s.labels, s.value])\n"
      "print(json.dumps(out))\n";
  const std::string cmd = python + " -c '" + script + "' " + tmpl + " 2>&1";
  std::string out;
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) out.append(buf.data(), n);
  const int st = pclose(f);
  std::remove(tmpl);
  ASSERT_EQ(st, 0) << "the Prometheus parser rejected the text: " << out << "\n" << r.body;
  const json m = json::parse(out, nullptr, false);
  ASSERT_TRUE(m.is_object()) << out;
  auto sample = [&](const std::string& name, const json& labels) -> double {
    if (!m.contains(name)) return -1;
    for (const auto& s : m[name]) {
      if (s[0] == labels) return s[1].get<double>();
    }
    return -1;
  };
  EXPECT_EQ(sample("gdrmesh_workers_up", json::object()), 2);
  EXPECT_EQ(sample("gdrmesh_last_sweep_timestamp_seconds", json::object()), (kT0 + 31000) / 1000);
  EXPECT_EQ(sample("gdrmesh_last_sweep_duration_seconds", json::object()), 30);
  EXPECT_EQ(sample("gdrmesh_last_sweep_tests", {{"status", "passed"}}), 18);
  EXPECT_EQ(sample("gdrmesh_last_sweep_tests", {{"status", "failed"}}), 1);
  EXPECT_EQ(sample("gdrmesh_last_sweep_tests", {{"status", "skipped"}}), 1);
  EXPECT_EQ(
      sample("gdrmesh_link_bandwidth_gbps", {{"src", "gpu-a/mlx5_0"}, {"dst", "gpu-b/mlx5_0"}}),
      194.31);
  EXPECT_EQ(sample("gdrmesh_link_verdict", {{"src", "gpu-a/mlx5_0"}, {"dst", "gpu-b/mlx5_0"}}), 1);
  EXPECT_EQ(sample("gdrmesh_link_verdict", {{"src", "gpu-b/mlx5_0"}, {"dst", "gpu-a/mlx5_0"}}), 0);
  // Skipped links have no verdict.
  EXPECT_EQ(sample("gdrmesh_link_verdict", {{"src", "gpu-a/mlx5_0"}, {"dst", "old-c"}}), -1);
  EXPECT_EQ(sample("gdrmesh_suspect_score", {{"kind", "nic"}, {"name", "gpu-b/mlx5_0"}}), 3.5);
  EXPECT_EQ(sample("gdrmesh_suspect_score", {{"kind", "host"}, {"name", "gpu-b"}}), 1.25);
}

TEST(StatusMetrics, LabelsAreEscapedAndNoSweepMeansNoSweepSeries) {
  WorkerSummary w;
  w.name = "a";
  w.state = "online";
  std::string text = metricsText({w}, std::nullopt);
  EXPECT_THAT(text, HasSubstr("gdrmesh_workers_up 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("gdrmesh_last_sweep")));
  SweepReportData r = doneSweep();
  r.suspects = {{"host", "we\\ird\"na\nme", 1, {}}};
  text = metricsText({}, r);
  EXPECT_THAT(text, HasSubstr("name=\"we\\\\ird\\\"na\\nme\"} 1\n"));
}

TEST_F(StatusPageTest, PageIsEmbeddedAndSelfContained) {
  httplib::Client cli("127.0.0.1", port_);
  auto res = cli.Get("/");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_THAT(res->get_header_value("Content-Type"), HasSubstr("text/html"));
  EXPECT_THAT(res->get_header_value("Content-Security-Policy"), HasSubstr("default-src 'self'"));
  EXPECT_THAT(res->body, HasSubstr("<title>gdrmesh status</title>"));
  // Nothing is fetched from outside the coordinator.
  EXPECT_THAT(res->body, Not(HasSubstr("http://")));
  EXPECT_THAT(res->body, Not(HasSubstr("https://")));
  // The page loads its scripts as ES modules: app.js imports dom.js and fabric.js.
  EXPECT_THAT(res->body, HasSubstr("<script type=\"module\" src=\"/app.js\">"));
  auto js = cli.Get("/app.js");
  ASSERT_TRUE(js);
  EXPECT_THAT(js->body, HasSubstr("emulated (not RDMA)"));
  EXPECT_THAT(js->body, HasSubstr("from './dom.js'"));
  EXPECT_THAT(js->body, HasSubstr("from './fabric.js'"));
  for (const char* path : {"/app.js", "/dom.js", "/fabric.js"}) {
    auto script = cli.Get(path);
    ASSERT_TRUE(script) << path;
    EXPECT_EQ(script->status, 200) << path;
    // A module script of another MIME type is refused by the browser.
    EXPECT_THAT(script->get_header_value("Content-Type"), HasSubstr("text/javascript")) << path;
    EXPECT_THAT(script->get_header_value("Content-Security-Policy"),
                HasSubstr("default-src 'self'"))
        << path;
    // API values go into the page as text, never as HTML.
    EXPECT_THAT(script->body, Not(HasSubstr("innerHTML"))) << path;
    EXPECT_THAT(script->body, Not(HasSubstr("outerHTML"))) << path;
    EXPECT_THAT(script->body, Not(HasSubstr("insertAdjacentHTML"))) << path;
  }
  auto css = cli.Get("/style.css");
  ASSERT_TRUE(css);
  EXPECT_THAT(css->get_header_value("Content-Type"), HasSubstr("text/css"));
}

TEST(StatusHttpServerStart, BadAddressNamesTheFlag) {
  FakeSource source;
  ManualClock clock;
  for (const char* bad :
       {"nonsense", "127.0.0.1:", ":8080", "127.0.0.1:99999", "::1:80", "127.0.0.1:http"}) {
    StatusHttpServer s(source, clock);
    auto r = s.start(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr("--http")) << bad;
    EXPECT_THAT(r.status().fix(), HasSubstr("--http")) << bad;
  }
}

TEST(StatusHttpServerStart, PortInUseIsAnErrorAndStopIsIdempotent) {
  FakeSource source;
  ManualClock clock;
  StatusHttpServer a(source, clock);
  auto pa = a.start("127.0.0.1:0");
  ASSERT_TRUE(pa.ok()) << pa.status().toString();
  StatusHttpServer b(source, clock);
  auto pb = b.start("127.0.0.1:" + std::to_string(*pa));
  ASSERT_FALSE(pb.ok());
  EXPECT_EQ(pb.status().code(), Code::kUnavailable);
  EXPECT_THAT(pb.status().message(), HasSubstr("--http"));
  EXPECT_FALSE(pb.status().fix().empty());
  auto again = a.start("127.0.0.1:0");
  EXPECT_FALSE(again.ok());
  a.stop();
  a.stop();
  // Stopped: nothing answers any more.
  httplib::Client cli("127.0.0.1", *pa);
  cli.set_connection_timeout(2);
  EXPECT_FALSE(cli.Get("/healthz"));
}

// ---- the real browser ------------------------------------------------------------------------

std::string findChromium() {
  if (const char* env = std::getenv("GDRMESH_CHROMIUM"); env != nullptr && *env != '\0') {
    return access(env, X_OK) == 0 ? env : "";
  }
  for (const char* p :
       {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

using testing::TempDir;

// Runs chromium headless with `mode_args`; returns stdout. stderr goes to a file in `dir`.
std::string runChromium(const std::string& chromium, const TempDir& dir,
                        const std::string& mode_args, const std::string& url, int* exit_code) {
  const std::string profile = dir.path() + "/profile-" + std::to_string(std::rand());
  std::filesystem::create_directories(profile);
  const std::string cmd =
      "timeout 120 '" + chromium +
      "' --headless --no-sandbox --disable-gpu --disable-dev-shm-usage "
      "--disable-background-networking --disable-component-update --disable-sync "
      "--disable-extensions --no-first-run --no-default-browser-check --hide-scrollbars "
      // Console messages and uncaught errors go to the log, where consoleLines() finds them.
      "--enable-logging=stderr --v=0 "
      "--user-data-dir='" +
      profile + "' " + mode_args + " '" + url + "' 2>>'" + dir.path() + "/chromium.log'";
  std::string out;
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) {
    *exit_code = -1;
    return out;
  }
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) out.append(buf.data(), n);
  const int st = pclose(f);
  *exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

std::string readFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The page's console messages and uncaught errors in a Chromium log.
std::string consoleLines(const std::string& log) {
  std::string out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.find("CONSOLE") != std::string::npos) out += line + "\n";
  }
  return out;
}

// Every string of `present` in `dom` and none of `absent`; the misses, one a line.
std::string missingIn(const std::string& dom, const std::vector<std::string>& present,
                      const std::vector<std::string>& absent) {
  std::string missing;
  for (const auto& s : present) {
    if (dom.find(s) == std::string::npos) missing += "  missing: " + s + "\n";
  }
  for (const auto& s : absent) {
    if (dom.find(s) != std::string::npos) missing += "  unexpected: " + s + "\n";
  }
  return missing;
}

TEST_F(StatusPageTest, ChromiumRendersWorkersAndResults) {
  const std::string chromium = findChromium();
  if (chromium.empty()) {
    GTEST_SKIP() << "chromium is not installed (apt-get install -y chromium, or set "
                    "GDRMESH_CHROMIUM to a Chromium/Chrome binary)";
  }
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string url = "http://127.0.0.1:" + std::to_string(port_) + "/";
  int rc = 0;
  const std::string dom =
      runChromium(chromium, dir, "--virtual-time-budget=5000 --dump-dom", url, &rc);
  ASSERT_EQ(rc, 0) << "chromium failed; its log:\n" << readFile(dir.path() + "/chromium.log");
  ASSERT_THAT(dom, HasSubstr("<table id=\"results\"")) << "no page rendered; chromium log:\n"
                                                       << readFile(dir.path() + "/chromium.log");

  // The JS ran and filled both tables (the "Loading" placeholders are gone).
  const std::vector<std::string> absent{"Loading", "Cannot refresh", "[object"};
  const std::vector<std::string> present{
      // Workers.
      "data-worker=\"gpu-a\"", "data-worker=\"old-c\"", "node-b", ">offline<", "p1 ACTIVE",
      "NVIDIA H100 80GB HBM3", "no GPU driver: GPU tests are skipped",
      // Results: one row per result, status words, data path labels, figures.
      "data-test-id=\"t-gdr-dmabuf\"", "data-test-id=\"t-integrity-fail\"",
      "data-test-id=\"t-emulated\"", ">PASSED<", ">FAILED<", "emulated (not RDMA)",
      "GPUDirect RDMA", "gpu0 via dmabuf", "RDMA host memory", "194.31 Gb/s", "41.25 us", "8MiB",
      "FAILED: 4096 wrong bytes, first at offset 65536 (host)",
      "destination data check failed: 4096 wrong bytes on gpu-b",
      // Summary header: 2 online, 1 offline; 2 passed, 1 failed; one of each data path.
      "id=\"sum-online\">2<", "id=\"sum-offline\">1<", "id=\"sum-passed\">2<",
      "id=\"sum-failed\">1<", "id=\"sum-gpudirect\">1<", "id=\"sum-emulated\">1<",
      "id=\"sum-rdma_host\">1<",
      // Sweeps: the running one's progress, the latest ended one drawn, its suspects and failure.
      "id=\"live-done\">10/20<", "id=\"live-failed\">2<", "id=\"shown-sweep\">sw-done<",
      "data-drawn=\"1\"", "data-hosts=\"3\"", "data-suspect=\"gpu-b/mlx5_0\"",
      "failed with 1 of 1 partners", "data-src=\"gpu-b/mlx5_0\" data-dst=\"gpu-a/mlx5_0\"",
      "min_bw_gbps: 97.50 Gb/s is below 150 Gb/s", "data-js-errors=\"0\"",
      // Its figures over pairs and what ran.
      "data-figure=\"write bw 8388608\"", "145.90 Gb/s", "gpu-b/mlx5_0\u2192gpu-a/mlx5_0 97.50",
      "gpu-b 97.50", "write bw 1MiB,8MiB", "50 iters", "cuda gpu0 dmabuf \u2192 host"};
  const std::string missing = missingIn(dom, present, absent);
  EXPECT_TRUE(missing.empty()) << missing << "rendered DOM:\n" << dom;
  EXPECT_EQ(consoleLines(readFile(dir.path() + "/chromium.log")), "");

  // A screenshot at 1280 px for people to look at (kept in the build directory).
  const std::string png = std::string(GDRMESH_BROWSER_OUT_DIR) + "/status_page.png";
  std::filesystem::remove(png);
  runChromium(chromium, dir,
              "--window-size=1280,900 --virtual-time-budget=5000 --screenshot='" + png + "'", url,
              &rc);
  EXPECT_EQ(rc, 0) << readFile(dir.path() + "/chromium.log");
  EXPECT_TRUE(std::filesystem::exists(png)) << "no screenshot at " << png;
  std::printf("status page screenshot: %s\n", png.c_str());
}

TEST_F(StatusPageTest, ChromiumDrawsA1024HostSweepOnOneCanvas) {
  const std::string chromium = findChromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (apt-get install -y chromium)";
  TempDir dir;
  const std::string url = "http://127.0.0.1:" + std::to_string(port_) + "/#sweep=sw-big";
  int rc = 0;
  const std::string dom =
      runChromium(chromium, dir, "--virtual-time-budget=8000 --dump-dom", url, &rc);
  ASSERT_EQ(rc, 0) << readFile(dir.path() + "/chromium.log");
  const std::string missing = missingIn(dom,
                                        {"data-hosts=\"1024\"", "data-drawn=\"1\"",
                                         "data-js-errors=\"0\"", "id=\"shown-sweep\">sw-big<"},
                                        {"Cannot refresh"});
  EXPECT_TRUE(missing.empty()) << missing;
  // No DOM node per cell: the page stays small.
  EXPECT_LT(dom.size(), 200000u);
  EXPECT_EQ(consoleLines(readFile(dir.path() + "/chromium.log")), "");
  const std::string png = std::string(GDRMESH_BROWSER_OUT_DIR) + "/sweep_1024_hosts.png";
  runChromium(chromium, dir,
              "--window-size=1280,1400 --virtual-time-budget=8000 --screenshot='" + png + "'", url,
              &rc);
  EXPECT_TRUE(std::filesystem::exists(png));
}

TEST_F(StatusPageTest, FabricViewListsTheBadLinkFirstAndSaysWhichLinksNoTestCrossed) {
  json j = getJson("/api/sweeps/sw-fabric/fabric");
  ASSERT_TRUE(j.is_object()) << j.dump();
  EXPECT_EQ(str(j, "sweep"), "sw-fabric");
  EXPECT_EQ(str(j, "verdict"), "FAIL");
  EXPECT_THAT(str(j, "reason"), HasSubstr("link leaf01[5] <-> spine01[2]: errors"));
  ASSERT_EQ(j["links"].size(), 3U) << j.dump();
  // Worst first, whatever order the store keeps them in.
  EXPECT_EQ(j["links"][0]["link"], "leaf01[5] <-> spine01[2]");
  EXPECT_EQ(j["links"][0]["verdict"], "errors");
  EXPECT_EQ(j["links"][0]["fails"], true);
  EXPECT_EQ(j["links"][0]["a"]["name"], "leaf01");
  EXPECT_EQ(j["links"][0]["a"]["port"], 5);
  EXPECT_EQ(j["links"][0]["a"]["guid"], "0x0000000000001001");
  EXPECT_EQ(j["links"][0]["b"]["name"], "spine01");
  EXPECT_EQ(j["links"][0]["b"]["port"], 2);
  EXPECT_EQ(j["links"][1]["verdict"], "not_covered");
  EXPECT_EQ(j["links"][1]["fails"], false);
  EXPECT_EQ(j["links"][2]["verdict"], "ok");
  EXPECT_EQ(j["counts"], (json{{"not_ok", 1}, {"not_covered", 1}, {"ok", 1}}));
  ASSERT_FALSE(j["nodes"].empty());
  // leaf01 and spine01 hold the bad link: first, counted.
  EXPECT_EQ(j["nodes"][0]["worst"], "errors");
  EXPECT_EQ(j["nodes"][0]["not_ok"], 1);
  ASSERT_EQ(j["suspects"].size(), 1U);
  EXPECT_EQ(j["suspects"][0]["name"], "leaf01[5] <-> spine01[2]");
  // latest, a sweep without links, an unknown one.
  EXPECT_EQ(getJson("/api/sweeps/sw-done/fabric")["links"].size(), 0U);
  getJson("/api/sweeps/nope/fabric", 404);
  getJson("/api/sweeps/sw-fabric/fabric?limit=3", 400);
}

TEST_F(StatusPageTest, ChromiumShowsTheBadLinkFirstInRedAndUncoveredLinksAsSuch) {
  const std::string chromium = findChromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (apt-get install -y chromium)";
  TempDir dir;
  const std::string url = "http://127.0.0.1:" + std::to_string(port_) + "/#sweep=sw-fabric";
  int rc = 0;
  const std::string dom =
      runChromium(chromium, dir, "--virtual-time-budget=5000 --dump-dom", url, &rc);
  ASSERT_EQ(rc, 0) << readFile(dir.path() + "/chromium.log");
  const std::string missing = missingIn(
      dom,
      {"id=\"shown-sweep\">sw-fabric<", "data-js-errors=\"0\"",
       "id=\"fabric-counts\">3 links: 1 not ok, 1 not covered, 1 ok",
       // The planted bad link first, coloured as failing, named by both ends, with evidence.
       "data-verdict=\"errors\" data-rank=\"0\" class=\"link-fail\"><td>errors</td><td "
       "class=\"mono\">leaf01[5] &lt;-&gt; spine01[2]</td>",
       "leaf01 port 5 (0x0000000000001001) \u2194 spine01 port 2 (0x0000000000002001)",
       "1,234 symbol errors on leaf01[5] during round 0 = 4,442/h (threshold 120/h)",
       // The link no test crossed, said so, then the ok one.
       "data-verdict=\"not_covered\" data-rank=\"1\" class=\"link-uncovered\"><td>not "
       "covered</td><td class=\"mono\">leaf02[3] &lt;-&gt; spine02[2]</td>",
       "data-verdict=\"ok\" data-rank=\"2\" class=\"link-ok\">",
       // Per switch: the bad link's switches first, in red.
       "data-node=\"leaf01\" class=\"link-fail\"",
       "data-node=\"spine02\" class=\"link-uncovered\""},
      {"Cannot refresh"});
  EXPECT_TRUE(missing.empty()) << missing << "rendered DOM:\n" << dom;
  EXPECT_EQ(consoleLines(readFile(dir.path() + "/chromium.log")), "");
  const std::string png = std::string(GDRMESH_BROWSER_OUT_DIR) + "/status_page_fabric.png";
  runChromium(chromium, dir,
              "--window-size=1280,1600 --virtual-time-budget=5000 --screenshot='" + png + "'", url,
              &rc);
  EXPECT_TRUE(std::filesystem::exists(png));
}

// The hosts under each switch of an InfiniBand sweep: the leaf whose hosts all fail first, its
// worst host first, the host with no HCA listed with why; ?switch= shows one switch.
TEST_F(StatusPageTest, FabricViewTablesTheHostsUnderEachSwitchWorstFirst) {
  json j = getJson("/api/sweeps/sw-fabric/fabric");
  EXPECT_EQ(j["fabric"], "fabric.json");
  EXPECT_TRUE(j["switch"].is_null());
  EXPECT_TRUE(j["lldp"].is_null());
  ASSERT_TRUE(j["switch_hosts"].is_object()) << j.dump();
  const json& sw = j["switch_hosts"]["switches"];
  ASSERT_EQ(sw.size(), 2U) << j.dump();
  EXPECT_EQ(sw[0]["name"], "leaf02");
  EXPECT_EQ(sw[0]["guid"], "0x0000000000001002");
  EXPECT_EQ(sw[0]["hosts"], 2);
  EXPECT_EQ(sw[0]["hosts_failing"], 2);
  EXPECT_EQ(sw[0]["suspects"], 1);
  EXPECT_EQ(sw[0]["pass"], 0);
  EXPECT_EQ(sw[0]["fail"], 5);  // h04's 3 and h03's 2
  ASSERT_EQ(sw[0]["rows"].size(), 2U);
  const json& h04 = sw[0]["rows"][0];
  EXPECT_EQ(h04["host"], "h04");
  EXPECT_EQ(h04["hca"], "h04 mlx5_0");
  EXPECT_EQ(h04["hca_port"], 1);
  EXPECT_EQ(h04["switch_port"], 2);
  EXPECT_EQ(h04["fail"], 3);
  EXPECT_EQ(h04["suspect"]["kind"], "host");
  EXPECT_EQ(h04["suspect"]["score"], 1.25);
  EXPECT_EQ(sw[0]["rows"][1]["host"], "h03");
  EXPECT_TRUE(sw[0]["rows"][1]["suspect"].is_null());
  EXPECT_EQ(sw[1]["name"], "leaf01");
  EXPECT_EQ(sw[1]["pass"], 2);
  EXPECT_EQ(sw[1]["fail"], 3);
  EXPECT_EQ(sw[1]["skip"], 1);
  const json& unplaced = j["switch_hosts"]["unplaced"];
  ASSERT_EQ(unplaced.size(), 1U);
  EXPECT_EQ(unplaced[0]["end"], "old-c");
  EXPECT_EQ(unplaced[0]["skip"], 1);
  EXPECT_THAT(str(unplaced[0], "why"), HasSubstr("worker old-c is matched to no HCA"));

  j = getJson("/api/sweeps/sw-fabric/fabric?switch=leaf01");
  EXPECT_EQ(j["switch"], "leaf01");
  ASSERT_EQ(j["switch_hosts"]["switches"].size(), 1U);
  EXPECT_EQ(j["switch_hosts"]["switches"][0]["name"], "leaf01");
  EXPECT_TRUE(j["switch_hosts"]["unplaced"].empty());
  ASSERT_EQ(j["links"].size(), 2U);  // leaf01's links only; the counts stay the sweep's
  EXPECT_EQ(j["links"][0]["link"], "leaf01[5] <-> spine01[2]");
  EXPECT_EQ(j["counts"]["not_covered"], 1);
  ASSERT_EQ(j["nodes"].size(), 1U);
  EXPECT_EQ(j["nodes"][0]["name"], "leaf01");
  json e = getJson("/api/sweeps/sw-fabric/fabric?switch=leaf09", 404);
  EXPECT_EQ(str(e, "parameter"), "switch");
  EXPECT_THAT(str(e, "error"), HasSubstr("no switch 'leaf09'"));
  EXPECT_EQ(str(getJson("/api/sweeps/sw-fabric/fabric?switch=", 400), "parameter"), "switch");
  // A sweep on no fabric: no host tables.
  j = getJson("/api/sweeps/sw-done/fabric");
  EXPECT_TRUE(j["fabric"].is_null());
  EXPECT_TRUE(j["switch_hosts"].is_null());
  EXPECT_TRUE(j["lldp"].is_null());
}

// A sweep on a RoCE fabric known from LLDP: its host switch ports, the switch_port suspect
// first, every line labelled as the CLI labels it.
TEST_F(StatusPageTest, FabricViewListsLldpHostSwitchPortsSuspectFirstAsEstimates) {
  json j = getJson("/api/sweeps/sw-roce/fabric");
  EXPECT_EQ(j["fabric"], "lldp");
  EXPECT_TRUE(j["switch_hosts"].is_null());
  EXPECT_TRUE(j["links"].empty());
  ASSERT_TRUE(j["lldp"].is_object()) << j.dump();
  EXPECT_EQ(j["lldp"]["estimate"], fabric::kLldpEstimate);
  const json& ports = j["lldp"]["ports"];
  ASSERT_EQ(ports.size(), 4U) << j.dump();
  std::vector<std::string> order;
  for (const json& p : ports) {
    order.push_back(str(p, "switch_port"));
    EXPECT_EQ(p["estimate"], fabric::kLldpEstimate) << p.dump();
  }
  EXPECT_EQ(order, (std::vector<std::string>{"leaf07[Ethernet1]", "leaf07[Ethernet2]",
                                             "leaf08[Ethernet1]", "leaf08[Ethernet2]"}));
  EXPECT_EQ(ports[0]["switch"], "leaf07");
  EXPECT_EQ(ports[0]["port"], "Ethernet1");
  EXPECT_EQ(ports[0]["chassis_id"], "b6:d3:b8:84:e8:07");
  EXPECT_EQ(ports[0]["nic"], "r1 mlx5_0");
  EXPECT_EQ(ports[0]["nic_port"], 1);
  EXPECT_EQ(ports[0]["netdev"], "ens1f0np0");
  EXPECT_EQ(ports[0]["tests"], 3);
  EXPECT_EQ(ports[0]["failed"], 3);
  EXPECT_EQ(ports[0]["suspect"]["kind"], "switch_port");
  EXPECT_EQ(ports[1]["tests"], 2);
  EXPECT_EQ(ports[1]["failed"], 1);
  EXPECT_TRUE(ports[1]["suspect"].is_null());
  EXPECT_EQ(ports[2]["tests"], 4);  // r3: with r1, r2, r4 and the skipped r9
  ASSERT_EQ(j["lldp"]["unplaced"].size(), 1U);
  EXPECT_EQ(j["lldp"]["unplaced"][0]["end"], "r9/mlx5_0");
  EXPECT_EQ(j["lldp"]["unplaced"][0]["estimate"], fabric::kLldpEstimate);
  EXPECT_THAT(str(j["lldp"]["unplaced"][0], "why"), HasSubstr("not in the LLDP snapshot"));
  j = getJson("/api/sweeps/sw-roce/fabric?switch=leaf08");
  ASSERT_EQ(j["lldp"]["ports"].size(), 2U);
  EXPECT_EQ(j["lldp"]["ports"][0]["switch"], "leaf08");
}

// Where `wanted` appear in `dom`, in that order; "" when all do.
std::string notInOrder(const std::string& dom, const std::vector<std::string>& wanted) {
  size_t at = 0;
  for (const auto& w : wanted) {
    const size_t found = dom.find(w, at);
    if (found == std::string::npos)
      return "  not found (in order) after offset " + std::to_string(at) + ": " + w + "\n";
    at = found + w.size();
  }
  return "";
}

size_t occurrences(const std::string& dom, const std::string& what) {
  size_t n = 0;
  for (size_t at = dom.find(what); at != std::string::npos; at = dom.find(what, at + 1)) ++n;
  return n;
}

TEST_F(StatusPageTest, ChromiumShowsTheHostsUnderEachSwitchWorstSwitchFirst) {
  const std::string chromium = findChromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (apt-get install -y chromium)";
  TempDir dir;
  const std::string base = "http://127.0.0.1:" + std::to_string(port_) + "/#sweep=sw-fabric";
  int rc = 0;
  std::string dom = runChromium(chromium, dir, "--virtual-time-budget=5000 --dump-dom", base, &rc);
  ASSERT_EQ(rc, 0) << readFile(dir.path() + "/chromium.log");
  EXPECT_EQ(
      missingIn(dom, {"id=\"shown-sweep\">sw-fabric<", "data-js-errors=\"0\""},
                {"Cannot refresh", "Cannot show the fabric", "id=\"fabric-hosts-part\" hidden"}),
      "")
      << dom;
  // leaf02 (every test of its hosts failed) first, h04 (3 FAILs, the host suspect) before h03,
  // then leaf01; old-c, which has no HCA, listed with why.
  EXPECT_EQ(
      notInOrder(
          dom,
          {"<tr class=\"switch-row link-fail\" data-switch=\"leaf02\" data-rank=\"0\">",
           ">2 hosts, 2 with a FAIL, 1 named by a suspect (0x0000000000001002)</td><td "
           "class=\"r\">0</td><td class=\"r\">5</td>",
           "data-host=\"h04\" data-of-switch=\"leaf02\"><td></td><td class=\"mono\">h04</td><td "
           "class=\"mono\">h04 mlx5_0 port 1</td><td class=\"r\">2</td><td class=\"r\">0</td><td "
           "class=\"r\">3</td><td class=\"r\">0</td><td class=\"small\">host h04, score 1.25</td>",
           "data-host=\"h03\" data-of-switch=\"leaf02\"",
           "<tr class=\"switch-row link-fail\" data-switch=\"leaf01\" data-rank=\"1\">",
           "data-host=\"h01\" data-of-switch=\"leaf01\"", "data-unplaced=\"old-c\"",
           "worker old-c is matched to no HCA of fabric.json"}),
      "")
      << dom;
  // The RoCE table stays hidden on an InfiniBand sweep.
  EXPECT_NE(dom.find("id=\"fabric-lldp-part\" hidden"), std::string::npos);
  EXPECT_EQ(consoleLines(readFile(dir.path() + "/chromium.log")), "");
  const std::string png = std::string(GDRMESH_BROWSER_OUT_DIR) + "/status_page_switch_hosts.png";
  runChromium(chromium, dir,
              "--window-size=1280,2000 --virtual-time-budget=5000 --screenshot='" + png + "'", base,
              &rc);
  EXPECT_TRUE(std::filesystem::exists(png));

  // #switch=leaf01 (what a click on leaf01 puts in the URL): that switch alone.
  dom = runChromium(chromium, dir, "--virtual-time-budget=5000 --dump-dom", base + "&switch=leaf01",
                    &rc);
  ASSERT_EQ(rc, 0) << readFile(dir.path() + "/chromium.log");
  EXPECT_EQ(
      missingIn(
          dom,
          {"id=\"fabric-only\">Only switch leaf01 <", "data-pick-switch=\"\">show every switch<",
           "data-switch=\"leaf01\" data-rank=\"0\"", "data-host=\"h02\""},
          {"data-switch=\"leaf02\"", "data-unplaced=\"old-c\"", "Cannot show the fabric"}),
      "")
      << dom;
}

TEST_F(StatusPageTest, ChromiumShowsLldpHostSwitchPortsEachLabelledAsAnEstimate) {
  const std::string chromium = findChromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (apt-get install -y chromium)";
  TempDir dir;
  const std::string url = "http://127.0.0.1:" + std::to_string(port_) + "/#sweep=sw-roce";
  int rc = 0;
  const std::string dom =
      runChromium(chromium, dir, "--virtual-time-budget=5000 --dump-dom", url, &rc);
  ASSERT_EQ(rc, 0) << readFile(dir.path() + "/chromium.log");
  const std::string estimate = std::string(fabric::kLldpEstimate);
  EXPECT_EQ(missingIn(dom,
                      {"id=\"shown-sweep\">sw-roce<", "data-js-errors=\"0\"",
                       "id=\"fabric-lldp-estimate\">" + estimate + "<",
                       "RoCE fabric known from LLDP: no switch tables or counters"},
                      {"Cannot refresh", "Cannot show the fabric", "no link verdicts (",
                       "id=\"fabric-lldp-part\" hidden"}),
            "")
      << dom;
  // The switch_port suspect first, then by failed tests, switch and port; each line an estimate.
  EXPECT_EQ(notInOrder(
                dom, {"<tr data-port=\"leaf07[Ethernet1]\" data-rank=\"0\" class=\"link-fail\"><td>"
                      "<button type=\"button\" class=\"switch-pick\" data-pick-switch=\"leaf07\">"
                      "leaf07</button></td><td class=\"mono\">Ethernet1</td><td class=\"mono\">r1 "
                      "mlx5_0/1</td><td class=\"mono\">ens1f0np0</td><td class=\"r\">3</td><td "
                      "class=\"r\">3</td><td class=\"small\">switch_port leaf07[Ethernet1], score "
                      "1.00</td><td class=\"small estimate\">" +
                          estimate + "</td>",
                      "<tr data-port=\"leaf07[Ethernet2]\" data-rank=\"1\" class=\"link-slow\">",
                      "<tr data-port=\"leaf08[Ethernet1]\" data-rank=\"2\" class=\"link-slow\">",
                      "<tr data-port=\"leaf08[Ethernet2]\" data-rank=\"3\" class=\"link-slow\">",
                      "data-unplaced=\"r9/mlx5_0\""}),
            "")
      << dom;
  EXPECT_EQ(occurrences(dom, "<td class=\"small estimate\">" + estimate + "</td>"), 4U) << dom;
  EXPECT_EQ(consoleLines(readFile(dir.path() + "/chromium.log")), "");
  const std::string png = std::string(GDRMESH_BROWSER_OUT_DIR) + "/status_page_lldp.png";
  runChromium(chromium, dir,
              "--window-size=1280,2000 --virtual-time-budget=5000 --screenshot='" + png + "'", url,
              &rc);
  EXPECT_TRUE(std::filesystem::exists(png));
}

// ---- a real coordinator with a real sweep ------------------------------------------------------

// A child process of this test, stdout and stderr to `log`; SIGTERM and reaped on destruction.
struct Child {
  Child(const std::vector<std::string>& argv, const std::string& log) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    if (posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ) != 0) pid = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~Child() {
    if (pid <= 0) return;
    kill(pid, SIGTERM);
    int st = 0;
    waitpid(pid, &st, 0);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  pid_t pid = -1;
};

// Polls `ready` every 20 ms until it holds or `seconds` pass (a bounded wait on another process,
// not a sleep standing in for synchronisation).
template <typename F>
bool waitFor(double seconds, F ready) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int>(seconds * 1000));
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return ready();
}

json httpJson(int port, const std::string& path, int* status = nullptr) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_connection_timeout(5);
  cli.set_read_timeout(10);
  auto res = cli.Get(path);
  if (status != nullptr) *status = res ? res->status : 0;
  if (!res) return nullptr;
  return json::parse(res->body, nullptr, false);
}

TEST(StatusPageRealSweep, ChromiumShowsTheFailureTheSuspectAndThePairDetail) {
  const std::string chromium = findChromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (apt-get install -y chromium)";
#ifndef GDRMESH_BINARY_PATH
  GTEST_SKIP() << "built without the gdrmesh target: no binary to start a coordinator with";
#else
  const char* env_bin = std::getenv("GDRMESH_BINARY_PATH");
  const std::string bin = env_bin != nullptr && *env_bin != '\0' ? env_bin : GDRMESH_BINARY_PATH;
  ASSERT_EQ(access(bin.c_str(), X_OK), 0) << bin;
  TempDir dir;
  ASSERT_TRUE(dir.ok());

  Child coord(
      {bin, "coordinator", "--listen", "127.0.0.1:0", "--db", dir.path() + "/r.db", "--port-file",
       dir.path() + "/port", "--http", "127.0.0.1:0", "--heartbeat-ms", "200", "--insecure"},
      dir.path() + "/coordinator.log");
  ASSERT_GT(coord.pid, 0);
  int grpc_port = 0, http_port = 0;
  const std::string marker = "status page on http://127.0.0.1:";
  ASSERT_TRUE(waitFor(30, [&] {
    const std::string port = readFile(dir.path() + "/port");
    const std::string log = readFile(dir.path() + "/coordinator.log");
    const size_t at = log.find(marker);
    if (port.empty() || at == std::string::npos) return false;
    grpc_port = std::atoi(port.c_str());
    http_port = std::atoi(log.c_str() + at + marker.size());
    return grpc_port > 0 && http_port > 0;
  })) << readFile(dir.path() + "/coordinator.log");
  const std::string addr = "127.0.0.1:" + std::to_string(grpc_port);

  Child workers({bin, "worker", "--simulate", "4", "--sim-fault", "fail:sim-0002", "--coordinator",
                 addr, "--insecure"},
                dir.path() + "/workers.log");
  ASSERT_GT(workers.pid, 0);
  ASSERT_TRUE(waitFor(30, [&] {
    json w = httpJson(http_port, "/api/workers");
    int online = 0;
    if (w.is_array()) {
      for (const auto& x : w) online += str(x, "state") == "online" ? 1 : 0;
    }
    return online == 4;
  })) << readFile(dir.path() + "/workers.log");

  // The sweep: all pairs of 4 workers; every pair with sim-0002 fails. Its exit status says FAIL.
  const std::string sweep_cmd = "timeout 120 '" + bin +
                                "' sweep run --pattern all-pairs --insecure " + "--coordinator " +
                                addr + " >'" + dir.path() + "/sweep.out' 2>&1";
  (void)std::system(sweep_cmd.c_str());
  json latest = httpJson(http_port, "/api/sweeps/latest");
  ASSERT_TRUE(latest.is_object()) << readFile(dir.path() + "/sweep.out");
  ASSERT_EQ(latest["progress"]["state"], "finished") << latest.dump(2);
  EXPECT_EQ(latest["progress"]["verdict"], "FAIL");
  ASSERT_FALSE(latest["suspects"].empty()) << latest.dump(2);
  const std::string top = str(latest["suspects"][0], "name");
  EXPECT_THAT(top, HasSubstr("sim-0002"));
  const json& m = latest["matrix"];
  std::string fail_src, fail_dst;
  for (const auto& c : m["cells"]) {
    if (c.size() == 6 && c[2] == "FAIL" && fail_src.empty()) {
      fail_src = m["hosts"].at(c[0].get<size_t>()).dump();
      fail_dst = m["hosts"].at(c[1].get<size_t>()).dump();
      fail_src = fail_src.substr(1, fail_src.size() - 2);  // the JSON string, unquoted
      fail_dst = fail_dst.substr(1, fail_dst.size() - 2);
    }
  }
  ASSERT_FALSE(fail_src.empty()) << latest.dump(2);
  // Simulated results never count as an RDMA data path.
  json summary = httpJson(http_port, "/api/summary");
  EXPECT_EQ(summary["data_path"]["rdma_host"], 0) << summary.dump(2);
  EXPECT_EQ(summary["data_path"]["gpudirect"], 0) << summary.dump(2);
  EXPECT_GT(summary["data_path"]["simulated"].get<int>(), 0) << summary.dump(2);
  httplib::Client cli("127.0.0.1", http_port);
  auto metrics = cli.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_THAT(metrics->body, HasSubstr("gdrmesh_workers_up 4\n"));
  EXPECT_THAT(metrics->body, HasSubstr("gdrmesh_link_verdict{src=\"" + fail_src + "\",dst=\"" +
                                       fail_dst + "\"} 0\n"));

  // The overview: the heat map drawn, the failure and the top suspect listed, no console error.
  const std::string url = "http://127.0.0.1:" + std::to_string(http_port) + "/";
  int rc = 0;
  std::string dom = runChromium(chromium, dir, "--virtual-time-budget=6000 --dump-dom", url, &rc);
  ASSERT_EQ(rc, 0) << readFile(dir.path() + "/chromium.log");
  const std::string id = str(latest["progress"], "id");
  std::string missing =
      missingIn(dom,
                {"id=\"shown-sweep\">" + id + "<", "data-drawn=\"1\"", "data-hosts=\"4\"",
                 "data-js-errors=\"0\"", "class=\"top-suspect\"", "data-suspect=\"" + top + "\"",
                 "class=\"failure\"", "data-src=\"" + fail_src + "\" data-dst=\"" + fail_dst + "\"",
                 ">FAIL<", "data-figure=\"write bw 65536\"", "write bw 64KiB"},
                {"Cannot refresh", "[object"});
  EXPECT_TRUE(missing.empty()) << missing << "rendered DOM:\n" << dom;

  // A click on the failing cell (the page replays it from the link) opens the pair's detail.
  const std::string pair_url =
      url + "#sweep=" + id + "&pair=" + fail_src + "%3E" + fail_dst;  // '>' between the two
  dom = runChromium(chromium, dir, "--virtual-time-budget=6000 --dump-dom", pair_url, &rc);
  ASSERT_EQ(rc, 0) << readFile(dir.path() + "/chromium.log");
  missing = missingIn(
      dom,
      {"data-src=\"" + fail_src + "\" data-dst=\"" + fail_dst + "\"", "id=\"pair-reasons\"",
       "class=\"run\"", "data-js-errors=\"0\"",
       // The pair's history chart (/api/history over 90 days) has this run.
       "id=\"pair-history\"", "data-points=\"", "History (90 days)", "red: failed, no figure"},
      {"aria-live=\"polite\" hidden", "No stored runs", "Cannot refresh", "data-points=\"0\"",
       "No results for this pair", "Loading the history"});
  EXPECT_TRUE(missing.empty()) << missing << "rendered DOM:\n" << dom;
  EXPECT_EQ(consoleLines(readFile(dir.path() + "/chromium.log")), "");

  const std::string out = GDRMESH_BROWSER_OUT_DIR;
  for (const auto& [name, u] : std::vector<std::pair<std::string, std::string>>{
           {"sweep_overview.png", url}, {"sweep_pair_detail.png", pair_url}}) {
    const std::string png = out + "/" + name;
    std::filesystem::remove(png);
    runChromium(chromium, dir,
                "--window-size=1280,1600 --virtual-time-budget=6000 --screenshot='" + png + "'", u,
                &rc);
    EXPECT_TRUE(std::filesystem::exists(png)) << png;
    std::printf("sweep screenshot: %s\n", png.c_str());
  }

  // The acceptance report of the same sweep (`gdrmesh report`): one HTML file, opened from disk
  // with no server; its policy forbids every fetch, so a reference to anything outside it
  // would be a console error.
  const std::string report = out + "/acceptance_report.html";
  std::filesystem::remove(report);
  const std::string report_cmd = "timeout 60 '" + bin + "' report " + id +
                                 " --format html --insecure --coordinator " + addr + " --out '" +
                                 report + "' >'" + dir.path() + "/report.out' 2>&1";
  ASSERT_EQ(std::system(report_cmd.c_str()), 0) << readFile(dir.path() + "/report.out");
  const std::string html = readFile(report);
  EXPECT_THAT(html, Not(HasSubstr("http://")));
  EXPECT_THAT(html, Not(HasSubstr("https://")));
  std::filesystem::remove(dir.path() + "/chromium.log");  // this page's console only
  const std::string report_url = "file://" + report;
  dom = runChromium(chromium, dir, "--virtual-time-budget=3000 --dump-dom", report_url, &rc);
  ASSERT_EQ(rc, 0) << readFile(dir.path() + "/chromium.log");
  missing = missingIn(dom,
                      {"id=\"verdict\" class=\"verdict fail\">FAIL<", "<td class=\"cf\"",
                       "id=\"failures", "<td>" + fail_src + "</td><td>" + fail_dst + "</td>",
                       "id=\"suspects\"", top, "id=\"environment\"", "sim-0003"},
                      {"no stored inventory"});
  EXPECT_TRUE(missing.empty()) << missing << "rendered DOM:\n" << dom;
  EXPECT_EQ(consoleLines(readFile(dir.path() + "/chromium.log")), "");
  const std::string png = out + "/acceptance_report.png";
  std::filesystem::remove(png);
  runChromium(chromium, dir,
              "--window-size=1280,1600 --virtual-time-budget=3000 --screenshot='" + png + "'",
              report_url, &rc);
  EXPECT_TRUE(std::filesystem::exists(png)) << png;
  std::printf("acceptance report: %s\nacceptance report screenshot: %s\n", report.c_str(),
              png.c_str());
#endif
}

}  // namespace
}  // namespace gdrmesh
