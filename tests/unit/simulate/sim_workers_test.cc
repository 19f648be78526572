// Simulated workers against an in-test coordinator (tests/unit/simulate/fake_coordinator.h):
// registrations, the lean and classic command sequences, faults, and the thread count at
// 64 and 512 streams. SimScale.Register1024 prints the figures of 1024 workers.
#include "worker/simulate/sim_workers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "common/clock.h"
#include "convert.h"
#include "tests/unit/simulate/fake_coordinator.h"
#include "worker/simulate/sim_model.h"

namespace gdrmesh {
namespace {

using simtest::FakeCoordinator;
using simtest::pb::CommandReply;
using simtest::pb::CoordinatorCommand;
namespace pb = ::gdrmesh::v1;
using std::chrono::milliseconds;

constexpr milliseconds kWait{10000};

long procStatus(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const std::string k = std::string(key) + ":";
  while (std::getline(f, line)) {
    if (line.rfind(k, 0) == 0) return std::stol(line.substr(k.size()));
  }
  return -1;
}
long threadCount() {
  return procStatus("Threads");
}
long rssKiB() {
  return procStatus("VmRSS");
}

SimConfig baseConfig(const FakeCoordinator& fc, int count) {
  SimConfig c;
  c.coordinator = fc.address();
  c.count = count;
  c.test_ms = 20;
  c.bandwidth_gbps = 100;
  c.latency_us = 2;
  c.nics = 2;
  c.gpus = 2;
  c.reconnect = false;
  return c;
}

void addFault(SimConfig* c, const std::string& spec) {
  auto f = parseSimFault(spec);
  ASSERT_TRUE(f.ok()) << f.status().toString();
  c->faults.push_back(*f);
}

pb::EndpointSpec spec(const std::string& id, pb::Role role, pb::Mode mode,
                      const std::string& nic = "") {
  pb::EndpointSpec s;
  s.set_test_id(id);
  s.set_role(role);
  s.set_op(pb::OP_WRITE);
  s.set_mode(mode);
  s.set_buffer_size(1 << 20);
  s.set_num_qps(1);
  s.set_transport(pb::TRANSPORT_SIMULATED);
  s.set_memory(pb::MEMORY_KIND_HOST);
  s.set_gpu(-1);
  s.set_device(nic);
  s.set_reg_path(pb::REG_PATH_AUTO);
  s.set_seed(7);
  return s;
}

pb::RunSpec runSpec() {
  pb::RunSpec r;
  r.set_message_size(1 << 20);
  r.set_iterations(1000);
  r.set_warmup_iterations(10);
  r.set_timeout_seconds(5);
  return r;
}

// The lean protocol for one pair: both prepares, start on the initiator, finish on the target.
struct LeanPair {
  std::optional<CommandReply> ini_prepare, tgt_prepare, start, finish;
  double start_seconds = 0;
};

LeanPair runLean(FakeCoordinator& fc, const std::string& ini, const std::string& tgt,
                 const std::string& id, pb::Mode mode, const std::string& ini_nic = "",
                 const std::string& tgt_nic = "") {
  LeanPair out;
  CoordinatorCommand c;
  *c.mutable_prepare()->mutable_spec() = spec(id, pb::ROLE_INITIATOR, mode, ini_nic);
  out.ini_prepare = fc.call(ini, c, kWait);
  if (!out.ini_prepare || !out.ini_prepare->status().ok()) return out;
  CoordinatorCommand t;
  *t.mutable_prepare()->mutable_spec() = spec(id, pb::ROLE_TARGET, mode, tgt_nic);
  *t.mutable_prepare()->mutable_peer() = out.ini_prepare->prepare().local();
  *t.mutable_prepare()->mutable_arm() = runSpec();
  out.tgt_prepare = fc.call(tgt, t, kWait);
  if (!out.tgt_prepare || !out.tgt_prepare->status().ok()) return out;
  CoordinatorCommand s;
  s.mutable_start()->set_test_id(id);
  *s.mutable_start()->mutable_peer() = out.tgt_prepare->prepare().local();
  *s.mutable_start()->mutable_run() = runSpec();
  const auto t0 = std::chrono::steady_clock::now();
  out.start = fc.call(ini, s, kWait);
  out.start_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CoordinatorCommand f;
  f.mutable_finish()->set_test_id(id);
  f.mutable_finish()->set_verify(true);
  f.mutable_finish()->set_verify_length(1 << 20);
  f.mutable_finish()->set_timeout_seconds(5);
  out.finish = fc.call(tgt, f, kWait);
  return out;
}

// ------------------------------------------------------------------------ config, faults

TEST(SimConfigTest, ParsesFaultSpecs) {
  auto slow = parseSimFault("slow:sim-0003/mlx5_1:0.5");
  ASSERT_TRUE(slow.ok()) << slow.status().toString();
  EXPECT_EQ(slow->kind, SimFault::Kind::kSlow);
  EXPECT_EQ(slow->worker, "sim-0003");
  EXPECT_EQ(slow->nic, "mlx5_1");
  EXPECT_DOUBLE_EQ(slow->factor, 0.5);
  auto mute = parseSimFault("mute:sim-0001");
  ASSERT_TRUE(mute.ok());
  EXPECT_EQ(mute->after_n, 0u);
  auto drop = parseSimFault("drop:sim-0002:3");
  ASSERT_TRUE(drop.ok());
  EXPECT_EQ(drop->after_n, 3u);
  auto flap = parseSimFault("flap:sim-0002:0.25");
  ASSERT_TRUE(flap.ok());
  EXPECT_DOUBLE_EQ(flap->probability, 0.25);
  for (const char* bad : {"slow:sim-0001", "slow:sim-0001:0", "flap:sim-0001:2", "drop:sim-0001",
                          "boil:sim-0001", "fail:", "mute:sim-0001/mlx5_0", "fail:sim/"}) {
    auto r = parseSimFault(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find(bad), std::string::npos) << bad;
    }
  }
}

TEST(SimConfigTest, NamesAreZeroPadded) {
  EXPECT_EQ(simWorkerName("sim", 7, 64), "sim-0007");
  EXPECT_EQ(simWorkerName("rack", 1023, 1024), "rack-1023");
  EXPECT_EQ(simWorkerName("sim", 42, 20000), "sim-00042");
}

TEST(SimConfigTest, ParsesConfigTextAndValidates) {
  SimConfig c;
  Status st = parseSimConfigText(
      "# scale test\ncount: 16\nname_prefix = rack\nnics: 4\ntest_ms: 5\n"
      "fault: slow:rack-0001:0.5\nfaults:\n  - fail:rack-0002/mlx5_3\n  - mute:rack-0003:2\n",
      &c);
  ASSERT_TRUE(st.ok()) << st.toString();
  EXPECT_EQ(c.count, 16);
  EXPECT_EQ(c.name_prefix, "rack");
  EXPECT_EQ(c.nics, 4);
  EXPECT_DOUBLE_EQ(c.test_ms, 5);
  ASSERT_EQ(c.faults.size(), 3u);
  EXPECT_EQ(c.faults[1].nic, "mlx5_3");
  c.coordinator = "127.0.0.1:1";
  EXPECT_TRUE(validateSimConfig(c).ok());
  c.faults.push_back(*parseSimFault("fail:rack-0016"));  // no such worker
  Status bad = validateSimConfig(c);
  EXPECT_EQ(bad.code(), Code::kInvalidArgument);
  EXPECT_NE(bad.fix().find("rack-0000 .. rack-0015"), std::string::npos) << bad.toString();
  EXPECT_FALSE(parseSimConfigText("colour: blue\n", &c).ok());
}

// ------------------------------------------------------------------------------- model

TEST(SimModelTest, FlapDrawsAgreeOnBothSidesAndMatchP) {
  SimFaults faults({*parseSimFault("flap:sim-0001:0.3")}, 42);
  int failed = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::string id = "t" + std::to_string(i);
    Status a = faults.testFault(id, "sim-0001", "mlx5_0");
    Status b = faults.testFault(id, "sim-0001", "mlx5_1");
    EXPECT_EQ(a.ok(), b.ok());
    if (!a.ok()) {
      ++failed;
      EXPECT_EQ(a.code(), Code::kUnavailable);
    }
    EXPECT_TRUE(faults.testFault(id, "sim-0002", "mlx5_0").ok());
  }
  EXPECT_GT(failed, 500);
  EXPECT_LT(failed, 700);
}

// The benchmark's faults: a bad link (both directions, NIC-scoped), a glitch on a pair's first
// test only, and noise the same for both sides of one test.
TEST(SimModelTest, LinkGlitchAndNoiseShapeThePairFactor) {
  auto link = parseSimFault("link:sim-0001/mlx5_1:sim-0002:0.4");
  ASSERT_TRUE(link.ok()) << link.status().toString();
  auto glitch = parseSimFault("glitch:sim-0003:sim-0004:0.16");
  ASSERT_TRUE(glitch.ok()) << glitch.status().toString();
  EXPECT_FALSE(parseSimFault("link:sim-0001:sim-0001:0.4").ok());
  EXPECT_FALSE(parseSimFault("glitch:sim-0001/mlx5_0:sim-0002:0.4").ok());
  EXPECT_FALSE(parseSimFault("link:sim-0001:sim-0002").ok());
  SimConfig c;
  c.count = 5;  // sim-0000 .. sim-0004
  c.nics = 2;
  c.faults = {*link, *glitch};
  EXPECT_TRUE(validateSimConfig(c).ok()) << validateSimConfig(c).toString();
  c.faults = {*parseSimFault("link:sim-0001:sim-0009:0.5")};
  EXPECT_EQ(validateSimConfig(c).code(), Code::kInvalidArgument);
  c.faults.clear();
  c.noise = 0.6;
  EXPECT_EQ(validateSimConfig(c).code(), Code::kInvalidArgument);

  SimFaults faults({*link, *glitch}, 7);
  EXPECT_DOUBLE_EQ(faults.pairFactor("t1", "sim-0001", "mlx5_1", "sim-0002", "mlx5_0"), 0.4);
  EXPECT_DOUBLE_EQ(faults.pairFactor("t1", "sim-0002", "mlx5_0", "sim-0001", "mlx5_1"), 0.4);
  EXPECT_DOUBLE_EQ(faults.pairFactor("t2", "sim-0001", "mlx5_0", "sim-0002", "mlx5_0"), 1.0);
  EXPECT_DOUBLE_EQ(faults.pairFactor("t3", "sim-0001", "mlx5_1", "sim-0003", "mlx5_1"), 1.0);
  // The glitch: its first test, asked by both sides, then full speed.
  EXPECT_DOUBLE_EQ(faults.pairFactor("g1", "sim-0003", "mlx5_0", "sim-0004", "mlx5_0"), 0.16);
  EXPECT_DOUBLE_EQ(faults.pairFactor("g1", "sim-0004", "mlx5_0", "sim-0003", "mlx5_0"), 0.16);
  EXPECT_DOUBLE_EQ(faults.pairFactor("g2", "sim-0004", "mlx5_0", "sim-0003", "mlx5_0"), 1.0);

  SimFaults noisy({}, 7, 0.05);
  double lo = 2, hi = 0;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = "n" + std::to_string(i);
    const double f = noisy.pairFactor(id, "sim-0000", "mlx5_0", "sim-0001", "mlx5_0");
    EXPECT_DOUBLE_EQ(f, noisy.pairFactor(id, "sim-0001", "mlx5_0", "sim-0000", "mlx5_0"));
    lo = std::min(lo, f);
    hi = std::max(hi, f);
  }
  EXPECT_GE(lo, 0.95);
  EXPECT_LT(lo, 0.96);
  EXPECT_LE(hi, 1.05);
  EXPECT_GT(hi, 1.04);
  SimConfig parsed;
  ASSERT_TRUE(
      parseSimConfigText("noise: 0.05\nfault: glitch:sim-0000:sim-0001:0.2:3\n", &parsed).ok());
  EXPECT_DOUBLE_EQ(parsed.noise, 0.05);
  ASSERT_EQ(parsed.faults.size(), 1u);
  EXPECT_EQ(parsed.faults[0].after_n, 3u);
}

TEST(SimModelTest, RunsAreDueAfterTheSimulatedTime) {
  SimConfig c;
  c.test_ms = 250;
  SimFaults faults({}, 1);
  ManualClock clock;
  SimWorkerModel ini(c, faults, clock, "sim-0000", 0), tgt(c, faults, clock, "sim-0001", 1);
  SideSpec s;
  s.transport = TransportKind::kSimulated;
  s.endpoint.test_id = "t1";
  s.endpoint.buffer_size = 4096;
  auto di = ini.prepare(s);
  ASSERT_TRUE(di.ok()) << di.status().toString();
  s.endpoint.role = Role::kTarget;
  RunSpec run;
  run.message_size = 4096;
  run.iterations = 100;
  auto dt = tgt.prepareArmed(s, *di, run);
  ASSERT_TRUE(dt.ok()) << dt.status().toString();
  clock.advanceSeconds(0.1);
  auto started = ini.start("t1", *dt, run, false, 0);
  ASSERT_TRUE(started.value.ok()) << started.value.status().toString();
  EXPECT_NEAR(std::chrono::duration<double>(started.at - clock.now()).count(), 0.25, 1e-6);
  EXPECT_EQ(started.value->measurement.bw.bytes, 4096u * 100u);
  EXPECT_EQ(ini.activeTests(), 0u);  // start releases
  auto finished = tgt.finish("t1", true, 4096, 5);
  ASSERT_TRUE(finished.value.ok());
  // Armed at prepare, 0.1 s ago.
  EXPECT_NEAR(std::chrono::duration<double>(finished.at - clock.now()).count(), 0.15, 1e-6);
  EXPECT_TRUE(finished.value->integrity.ok());
  EXPECT_EQ(finished.value->integrity.where, "simulated");
  // Only the simulated transport.
  s.transport = TransportKind::kVerbs;
  s.endpoint.test_id = "t2";
  EXPECT_EQ(ini.prepare(s).status().code(), Code::kUnimplemented);
}

// -------------------------------------------------------------------------- on the wire

TEST(SimWorkersTest, SixtyFourWorkersRegisterAndHeartbeat) {
  FakeCoordinator fc(/*heartbeat_interval_ms=*/50);
  const long threads_before = threadCount();
  SimConfig c = baseConfig(fc, 64);
  c.labels["rack"] = "r12";
  SimulatedWorkers sims(c);
  ASSERT_TRUE(sims.start().ok());
  ASSERT_TRUE(fc.waitRegistrations(64, kWait)) << fc.registrations();
  ASSERT_TRUE(sims.waitRegistered(64, kWait));
  EXPECT_EQ(fc.registrations(), 64);
  for (int i = 0; i < 64; ++i) {
    const std::string name = simWorkerName("sim", i, 64);
    auto r = fc.registration(name);
    ASSERT_TRUE(r) << name;
    EXPECT_TRUE(r->simulated());
    EXPECT_EQ(r->protocol_version(), 1u);
    EXPECT_EQ(r->inventory().hostname(), name);
    EXPECT_EQ(r->labels().at("rack"), "r12");
  }
  auto r = *fc.registration("sim-0063");
  ASSERT_EQ(r.inventory().nics_size(), 2);
  EXPECT_EQ(r.inventory().nics(1).name(), "mlx5_1");
  ASSERT_EQ(r.inventory().nics(0).ports_size(), 1);
  EXPECT_EQ(r.inventory().nics(0).ports(0).state(), "ACTIVE");
  EXPECT_EQ(r.inventory().nics(0).ports(0).link_layer(), "InfiniBand");
  EXPECT_DOUBLE_EQ(r.inventory().nics(0).ports(0).rate_gbps(), 400);
  ASSERT_EQ(r.inventory().gpus_size(), 2);
  EXPECT_EQ(r.inventory().gpus(1).nearest_nic(), "mlx5_1");
  EXPECT_FALSE(r.inventory().gpus(1).gpu_direct_rdma_supported());
  ASSERT_EQ(r.inventory().transports_size(), 1);
  EXPECT_EQ(r.inventory().transports(0), pb::TRANSPORT_SIMULATED);
  // Heartbeats at the coordinator's interval.
  EXPECT_TRUE(fc.waitHeartbeats("sim-0000", 3, kWait));
  EXPECT_TRUE(fc.waitHeartbeats("sim-0063", 3, kWait));
  const long threads = threadCount();
  std::printf("[ figures  ] 64 streams: threads %ld -> %ld\n", threads_before, threads);
  EXPECT_LT(threads, 48) << "threads grow with streams";
  EXPECT_EQ(sims.stats().online, 64);
}

TEST(SimWorkersTest, AnswersTheLeanSequenceAfterTheSimulatedTime) {
  FakeCoordinator fc;
  SimulatedWorkers sims(baseConfig(fc, 4));
  ASSERT_TRUE(sims.start().ok());
  ASSERT_TRUE(fc.waitRegistrations(4, kWait));
  auto p = runLean(fc, "sim-0000", "sim-0001", "lean-bw", pb::MODE_BANDWIDTH);
  ASSERT_TRUE(p.ini_prepare && p.tgt_prepare && p.start && p.finish);
  ASSERT_TRUE(p.ini_prepare->status().ok()) << p.ini_prepare->status().message();
  const auto& desc = p.ini_prepare->prepare().local();
  EXPECT_EQ(desc.transport(), pb::TRANSPORT_SIMULATED);
  EXPECT_EQ(desc.device(), "mlx5_0");
  EXPECT_EQ(desc.reg_path(), pb::REG_PATH_HOST);
  EXPECT_EQ(desc.tcp_host(), "sim-0000");
  EXPECT_EQ(desc.simulated().worker(), "sim-0000");
  EXPECT_EQ(desc.simulated().nic().device(), "mlx5_0");
  ASSERT_TRUE(p.tgt_prepare->status().ok()) << p.tgt_prepare->status().message();
  ASSERT_TRUE(p.start->status().ok()) << p.start->status().message();
  EXPECT_GE(p.start_seconds, 0.019);
  const auto& m = p.start->start().measurement();
  EXPECT_EQ(m.bw().bytes(), (1u << 20) * 1000u);
  EXPECT_EQ(m.bw().messages(), 1000u);
  EXPECT_NEAR(m.bw().avg_gbps(), 100, 1e-6);
  EXPECT_NEAR(m.bw().peak_gbps(), 100, 1e-6);
  EXPECT_NEAR(m.bw().seconds(), (1 << 20) * 1000.0 * 8 / 100e9, 1e-9);
  EXPECT_GT(m.bw().msg_rate_mpps(), 0);
  EXPECT_FALSE(m.has_lat());
  EXPECT_FALSE(p.start->start().has_integrity());
  ASSERT_TRUE(p.finish->status().ok()) << p.finish->status().message();
  const auto& in = p.finish->finish().integrity();
  EXPECT_TRUE(in.checked());
  EXPECT_EQ(in.wrong_bytes(), 0u);
  EXPECT_EQ(in.bytes_checked(), 1u << 20);
  EXPECT_EQ(in.where(), "simulated");

  auto lat = runLean(fc, "sim-0002", "sim-0003", "lean-lat", pb::MODE_LATENCY);
  ASSERT_TRUE(lat.start && lat.start->status().ok());
  EXPECT_TRUE(lat.start->start().measurement().has_lat());
  EXPECT_FALSE(lat.start->start().measurement().has_bw());
  EXPECT_NEAR(lat.start->start().measurement().lat().median_us(), 2, 1e-9);
  EXPECT_EQ(lat.start->start().measurement().lat().samples(), 1000u);

  // A GPU endpoint: dma-buf on the GPU's nearest NIC, still simulated.
  CoordinatorCommand g;
  *g.mutable_prepare()->mutable_spec() = spec("gpu", pb::ROLE_INITIATOR, pb::MODE_BANDWIDTH);
  g.mutable_prepare()->mutable_spec()->set_memory(pb::MEMORY_KIND_CUDA);
  g.mutable_prepare()->mutable_spec()->set_gpu(1);
  auto gr = fc.call("sim-0000", g, kWait);
  ASSERT_TRUE(gr && gr->status().ok());
  EXPECT_EQ(gr->prepare().local().transport(), pb::TRANSPORT_SIMULATED);
  EXPECT_EQ(gr->prepare().local().reg_path(), pb::REG_PATH_DMABUF);
  EXPECT_EQ(gr->prepare().local().device(), "mlx5_1");
  EXPECT_EQ(gr->prepare().local().gpu(), 1);
  EXPECT_EQ(gr->prepare().local().buffer(), "gpu:1");
}

TEST(SimWorkersTest, AFinishSentWithThePrepareIsAnsweredWhenTheInitiatorsRunEnds) {
  FakeCoordinator fc;
  SimulatedWorkers sims(baseConfig(fc, 2));
  ASSERT_TRUE(sims.start().ok());
  ASSERT_TRUE(fc.waitRegistrations(2, kWait));
  const auto reg = fc.registration("sim-0001");
  ASSERT_TRUE(reg && reg->inventory().capabilities_size() == 1);
  EXPECT_TRUE(reg->inventory().capabilities(0).end_signal());
  for (const bool released : {false, true}) {
    SCOPED_TRACE(released ? "released while waiting" : "signalled");
    const std::string id = released ? "end-rel" : "end-sig";
    CoordinatorCommand c;
    *c.mutable_prepare()->mutable_spec() = spec(id, pb::ROLE_INITIATOR, pb::MODE_BANDWIDTH);
    auto ini = fc.call("sim-0000", c, kWait);
    ASSERT_TRUE(ini && ini->status().ok());
    uint64_t fin_id = 0;
    auto fin = fc.expect(&fin_id);
    CoordinatorCommand t;
    *t.mutable_prepare()->mutable_spec() = spec(id, pb::ROLE_TARGET, pb::MODE_BANDWIDTH);
    *t.mutable_prepare()->mutable_peer() = ini->prepare().local();
    *t.mutable_prepare()->mutable_arm() = runSpec();
    t.mutable_prepare()->mutable_arm()->set_end_signal(true);
    t.mutable_prepare()->mutable_finish()->set_test_id(id);
    t.mutable_prepare()->mutable_finish()->set_verify(true);
    t.mutable_prepare()->mutable_finish()->set_verify_length(1 << 20);
    t.mutable_prepare()->mutable_finish()->set_timeout_seconds(5);
    t.mutable_prepare()->set_finish_request_id(fin_id);
    auto tgt = fc.call("sim-0001", t, kWait);
    ASSERT_TRUE(tgt && tgt->status().ok());
    // The armed run's own time has passed, but nothing has told the target it is over.
    EXPECT_FALSE(fc.wait(fin, std::chrono::milliseconds(100)).has_value())
        << "the finish was answered before the initiator ran";
    if (released) {
      CoordinatorCommand r;
      r.mutable_release()->set_test_id(id);
      ASSERT_TRUE(fc.call("sim-0001", r, kWait).has_value());
      auto f = fc.wait(fin, kWait);
      ASSERT_TRUE(f.has_value()) << "a release left the finish unanswered";
      EXPECT_EQ(convert::fromProto(f->status()).code(), Code::kAborted) << f->status().message();
      continue;
    }
    CoordinatorCommand s;
    s.mutable_start()->set_test_id(id);
    *s.mutable_start()->mutable_peer() = tgt->prepare().local();
    *s.mutable_start()->mutable_run() = runSpec();
    s.mutable_start()->mutable_run()->set_end_signal(true);
    auto st = fc.call("sim-0000", s, kWait);
    ASSERT_TRUE(st && st->status().ok());
    auto f = fc.wait(fin, kWait);
    ASSERT_TRUE(f.has_value()) << "the end signal did not reach the target";
    ASSERT_TRUE(f->status().ok()) << f->status().message();
    ASSERT_TRUE(f->has_finish());
    EXPECT_TRUE(f->finish().integrity().checked());
    EXPECT_EQ(f->finish().integrity().bytes_checked(), 1u << 20);
  }
}

TEST(SimWorkersTest, EndSignalOffClaimsNone) {
  FakeCoordinator fc;
  SimConfig cfg = baseConfig(fc, 1);
  ASSERT_TRUE(parseSimConfigText("end_signal: false\n", &cfg).ok());
  EXPECT_FALSE(parseSimConfigText("end_signal: maybe\n", &cfg).ok());
  SimulatedWorkers sims(cfg);
  ASSERT_TRUE(sims.start().ok());
  ASSERT_TRUE(fc.waitRegistrations(1, kWait));
  const auto reg = fc.registration("sim-0000");
  ASSERT_TRUE(reg && reg->inventory().capabilities_size() == 1);
  EXPECT_FALSE(reg->inventory().capabilities(0).end_signal());
}

TEST(SimWorkersTest, AnswersTheClassicSequence) {
  FakeCoordinator fc;
  SimulatedWorkers sims(baseConfig(fc, 2));
  ASSERT_TRUE(sims.start().ok());
  ASSERT_TRUE(fc.waitRegistrations(2, kWait));
  std::optional<CommandReply> r[2];
  const char* w[2] = {"sim-0000", "sim-0001"};
  const pb::Role roles[2] = {pb::ROLE_INITIATOR, pb::ROLE_TARGET};
  pb::EndpointDesc d[2];
  for (int i = 0; i < 2; ++i) {
    CoordinatorCommand c;
    *c.mutable_prepare()->mutable_spec() = spec("classic", roles[i], pb::MODE_BANDWIDTH);
    r[i] = fc.call(w[i], c, kWait);
    ASSERT_TRUE(r[i] && r[i]->status().ok());
    d[i] = r[i]->prepare().local();
  }
  for (int i = 0; i < 2; ++i) {
    CoordinatorCommand c;
    c.mutable_connect()->set_test_id("classic");
    *c.mutable_connect()->mutable_peer() = d[1 - i];
    r[i] = fc.call(w[i], c, kWait);
    ASSERT_TRUE(r[i] && r[i]->status().ok());
    EXPECT_EQ(r[i]->connect().path_mtu(), 4096u);
  }
  CoordinatorCommand run;
  run.mutable_run()->set_test_id("classic");
  *run.mutable_run()->mutable_spec() = runSpec();
  auto p0 = fc.send(w[0], run);
  auto p1 = fc.send(w[1], run);
  auto r0 = fc.wait(p0, kWait), r1 = fc.wait(p1, kWait);
  ASSERT_TRUE(r0 && r0->status().ok() && r1 && r1->status().ok());
  EXPECT_NEAR(r0->run().measurement().bw().avg_gbps(), 100, 1e-6);
  EXPECT_FALSE(r1->run().measurement().has_bw());  // the target does not measure one-way
  CoordinatorCommand v;
  v.mutable_verify()->set_test_id("classic");
  v.mutable_verify()->set_length(4096);
  auto vr = fc.call(w[1], v, kWait);
  ASSERT_TRUE(vr && vr->status().ok());
  EXPECT_TRUE(vr->verify().integrity().checked());
  EXPECT_EQ(vr->verify().integrity().where(), "simulated");
  for (auto* name : w) {
    CoordinatorCommand rel;
    rel.mutable_release()->set_test_id("classic");
    auto rr = fc.call(name, rel, kWait);
    ASSERT_TRUE(rr && rr->status().ok() && rr->has_release());
  }
  // Unknown test ids are NOT_FOUND, naming the worker.
  auto nf = fc.call(w[0], v, kWait);
  ASSERT_TRUE(nf);
  EXPECT_EQ(nf->status().code(), "NOT_FOUND");
  EXPECT_NE(nf->status().message().find("sim-0000"), std::string::npos);
}

TEST(SimWorkersTest, SlowAndFailFaults) {
  FakeCoordinator fc;
  SimConfig c = baseConfig(fc, 8);
  addFault(&c, "slow:sim-0002:0.5");
  addFault(&c, "fail:sim-0004/mlx5_0");
  SimulatedWorkers sims(c);
  ASSERT_TRUE(sims.start().ok());
  ASSERT_TRUE(fc.waitRegistrations(8, kWait));
  // Slow touches the pair from either side: the initiator's figures halve.
  auto slow = runLean(fc, "sim-0003", "sim-0002", "slow-bw", pb::MODE_BANDWIDTH);
  ASSERT_TRUE(slow.start && slow.start->status().ok());
  EXPECT_NEAR(slow.start->start().measurement().bw().avg_gbps(), 50, 1e-6);
  auto slow_lat = runLean(fc, "sim-0002", "sim-0005", "slow-lat", pb::MODE_LATENCY);
  ASSERT_TRUE(slow_lat.start && slow_lat.start->status().ok());
  EXPECT_NEAR(slow_lat.start->start().measurement().lat().median_us(), 4, 1e-9);
  // Fail on sim-0004/mlx5_0, as target: the run fails on both sides with the reason.
  auto failed = runLean(fc, "sim-0005", "sim-0004", "fail-bw", pb::MODE_BANDWIDTH, "", "mlx5_0");
  ASSERT_TRUE(failed.start && failed.finish);
  EXPECT_FALSE(failed.start->status().ok());
  EXPECT_EQ(failed.start->status().code(), "FAILED_PRECONDITION");
  EXPECT_NE(failed.start->status().message().find("sim-0004/mlx5_0"), std::string::npos)
      << failed.start->status().message();
  EXPECT_FALSE(failed.start->status().fix().empty());
  EXPECT_EQ(failed.finish->status().code(), "FAILED_PRECONDITION");
  EXPECT_GE(failed.start_seconds, 0.019);  // a fabric failure still takes the test time
  // The same worker's other NIC is healthy.
  auto other = runLean(fc, "sim-0005", "sim-0004", "fail-other", pb::MODE_BANDWIDTH, "", "mlx5_1");
  ASSERT_TRUE(other.start && other.start->status().ok()) << other.start->status().message();
  EXPECT_NEAR(other.start->start().measurement().bw().avg_gbps(), 100, 1e-6);
}

TEST(SimWorkersTest, MuteKeepsHeartbeatingAndDropClosesTheStream) {
  FakeCoordinator fc(/*heartbeat_interval_ms=*/20);
  SimConfig c = baseConfig(fc, 8);
  addFault(&c, "mute:sim-0005:1");
  addFault(&c, "drop:sim-0006:1");
  c.reconnect = true;  // a dropped worker stays away all the same
  SimulatedWorkers sims(c);
  ASSERT_TRUE(sims.start().ok());
  ASSERT_TRUE(fc.waitRegistrations(8, kWait));
  CoordinatorCommand rel;
  rel.mutable_release()->set_test_id("nothing");
  auto first = fc.call("sim-0005", rel, kWait);
  ASSERT_TRUE(first && first->status().ok());
  auto muted = fc.send("sim-0005", rel);
  const uint64_t hb = fc.heartbeats("sim-0005");
  EXPECT_TRUE(fc.waitHeartbeats("sim-0005", hb + 5, kWait));
  EXPECT_FALSE(fc.wait(muted, milliseconds(0)).has_value());
  EXPECT_EQ(sims.stats().unanswered, 1u);

  ASSERT_TRUE(fc.call("sim-0006", rel, kWait));
  auto lost = fc.send("sim-0006", rel);
  EXPECT_TRUE(fc.waitStreamEnded("sim-0006", kWait));
  EXPECT_FALSE(fc.wait(lost, milliseconds(0)).has_value());
  // The fake coordinator sees the stream end before the simulated side counts the drop (seen
  // under ASan): wait for the count, then read the rest of the stats it settles with.
  EXPECT_TRUE(sims.waitDropped(1, kWait));
  EXPECT_EQ(sims.stats().dropped, 1);
  EXPECT_EQ(fc.registrations(), 8);  // no redial after a drop
  EXPECT_EQ(sims.stats().online, 7);
}

TEST(SimWorkersTest, RepliesWaitForTheInjectedClock) {
  FakeCoordinator fc;
  ManualClock clock;
  SimConfig c = baseConfig(fc, 2);
  c.test_ms = 1000;
  SimulatedWorkers sims(c, &clock);
  ASSERT_TRUE(sims.start().ok());
  ASSERT_TRUE(fc.waitRegistrations(2, kWait));
  CoordinatorCommand p;
  *p.mutable_prepare()->mutable_spec() = spec("manual", pb::ROLE_INITIATOR, pb::MODE_BANDWIDTH);
  auto prep = fc.call("sim-0000", p, kWait);
  ASSERT_TRUE(prep && prep->status().ok());
  CoordinatorCommand t;
  *t.mutable_prepare()->mutable_spec() = spec("manual", pb::ROLE_TARGET, pb::MODE_BANDWIDTH);
  auto tprep = fc.call("sim-0001", t, kWait);
  ASSERT_TRUE(tprep && tprep->status().ok());
  CoordinatorCommand s;
  s.mutable_start()->set_test_id("manual");
  *s.mutable_start()->mutable_peer() = tprep->prepare().local();
  *s.mutable_start()->mutable_run() = runSpec();
  auto pending = fc.send("sim-0000", s);
  // The reply is due at +1 s of the injected clock; the wall clock does not bring it.
  EXPECT_FALSE(fc.wait(pending, milliseconds(200)).has_value());
  clock.advanceSeconds(0.5);
  EXPECT_FALSE(fc.wait(pending, milliseconds(50)).has_value());
  clock.advanceSeconds(0.5);
  auto r = fc.wait(pending, kWait);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->status().ok()) << r->status().message();
  sims.stop();
}

TEST(SimWorkersTest, FiveHundredTwelveStreamsKeepTheThreadCountSmall) {
  FakeCoordinator fc;
  const long before = threadCount();
  SimulatedWorkers sims(baseConfig(fc, 512));
  ASSERT_TRUE(sims.start().ok());
  ASSERT_TRUE(fc.waitRegistrations(512, kWait)) << fc.registrations();
  auto p = runLean(fc, "sim-0100", "sim-0511", "at-512", pb::MODE_BANDWIDTH);
  ASSERT_TRUE(p.start && p.start->status().ok());
  const long threads = threadCount();
  std::printf("[ figures  ] 512 streams: threads %ld -> %ld\n", before, threads);
  EXPECT_LT(threads, 48) << "threads grow with streams";
}

// Figures for the report: registration time, threads and RSS of 1024 simulated workers (one
// connection each) against the in-test coordinator, which shares the process.
TEST(SimScale, Register1024) {
  FakeCoordinator fc;
  const long threads_before = threadCount();
  const long rss_before = rssKiB();
  SimConfig c = baseConfig(fc, 1024);
  const auto t0 = std::chrono::steady_clock::now();
  SimulatedWorkers sims(c);
  ASSERT_TRUE(sims.start().ok());
  ASSERT_TRUE(sims.waitRegistered(1024, milliseconds(60000))) << sims.stats().ever_registered;
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const long threads = threadCount();
  const long rss = rssKiB();
  std::printf(
      "[ figures  ] 1024 simulated workers: registered in %.3f s; threads %ld -> %ld; "
      "RSS %ld -> %ld MiB (client and in-test server together)\n",
      secs, threads_before, threads, rss_before / 1024, rss / 1024);
  EXPECT_EQ(fc.registrations(), 1024);
  EXPECT_LT(threads, 48);
}

TEST(SimScale, Register1024OverSixteenConnections) {
  FakeCoordinator fc;
  const long rss_before = rssKiB();
  SimConfig c = baseConfig(fc, 1024);
  c.connections = 16;
  const auto t0 = std::chrono::steady_clock::now();
  SimulatedWorkers sims(c);
  ASSERT_TRUE(sims.start().ok());
  ASSERT_TRUE(sims.waitRegistered(1024, milliseconds(60000))) << sims.stats().ever_registered;
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "[ figures  ] 1024 simulated workers over 16 connections: registered in %.3f s; threads "
      "%ld; RSS %ld -> %ld MiB\n",
      secs, threadCount(), rss_before / 1024, rssKiB() / 1024);
  EXPECT_EQ(fc.registrations(), 1024);
  EXPECT_LT(threadCount(), 48);
}

}  // namespace
}  // namespace gdrmesh
