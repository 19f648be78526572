// The WorkerChannel contract (coordinator/orchestrator/worker_channel.h), one suite run against
// both implementations: the in-process fake every orchestrator unit test uses
// (tests/support/fake_worker_channel.h), and the real thing, GrpcWorkerChannel over a real
// CoordinatorServer on loopback with two real WorkerAgents (emulated transport, in-process
// SessionManagers). Whatever a unit test relies on the fake for is checked here against the
// real link, so the two cannot drift apart unnoticed.
//
// Waits are on events (each callback fulfils a promise) with generous bounds; no sleeps.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <variant>

#include "common/clock.h"
#include "common/fabric/fabric.h"
#include "common/fabric/lldp.h"
#include "coordinator/orchestrator/worker_channel.h"
#include "coordinator/service/coordinator_server.h"
#include "coordinator/store/sqlite_store.h"
#include "tests/support/fake_worker_channel.h"
#include "worker/service/worker_agent.h"
#include "worker/session/session.h"
#include "worker/transport/emulated/emulated_transport.h"

namespace gdrmesh {
namespace {

using std::chrono::seconds;
constexpr auto kWait = seconds(30);  // a bound on every wait, never reached when things work

// What worker "b" discovers (discoverFabric); worker "a" has no fabric discovery at all.
fabric::Fabric channelTestFabric() {
  fabric::Fabric f;
  f.source = "mlx5_0/1";
  f.discovered_ms = 1'790'000'000'000;
  fabric::Node sw;
  sw.kind = fabric::NodeKind::kSwitch;
  sw.name = "leaf01";
  sw.guid = 0x10;
  sw.num_ports = 2;
  sw.lft_top = 1;
  sw.lft = {0, 1};
  fabric::Node host;
  host.kind = fabric::NodeKind::kHca;
  host.name = "b mlx5_0";
  host.guid = 0x100;
  host.num_ports = 1;
  fabric::Port sp;
  sp.number = 1;
  sp.guid = 0x10;
  sp.state = "Active";
  sp.phys_state = "LinkUp";
  sp.width = 4;
  sp.speed = "HDR";
  sp.remote_guid = 0x100;
  sp.remote_port = 1;
  sw.ports.push_back(sp);
  fabric::Port hp = sp;
  hp.guid = 0x101;
  hp.lid = 1;
  hp.remote_guid = 0x10;
  host.ports.push_back(hp);
  f.switches.push_back(sw);
  f.hosts.push_back(host);
  f.rebuildLinks();
  return f;
}

// Two workers, "a" and "b", behind one implementation of the seam.
class Harness {
 public:
  virtual ~Harness() = default;
  virtual Clock& clock() = 0;
  virtual std::shared_ptr<WorkerChannel> channel(const std::string& name) = 0;
  // The worker goes away the way it does in that implementation (its stream ends).
  virtual void lose(const std::string& name) = 0;
};

// What worker "b" answers to an LLDP discovery: one NIC heard leaf07[Ethernet12], one did not.
fabric::LldpHost channelTestLldp() {
  fabric::LldpHost h;
  h.host = "somewhere-else";  // the agent names the host after the worker
  fabric::LldpNic heard;
  heard.device = "mlx5_0";
  heard.netdev = "ens1";
  heard.link_layer = "Ethernet";
  fabric::LldpNeighbour n;
  n.interface = "ens1";
  n.chassis_id = "b6:d3:b8:84:e8:83";
  n.chassis_id_type = "mac";
  n.chassis_name = "leaf07";
  n.port_id = "Ethernet12";
  n.port_id_type = "local";
  n.mfs = 9216;
  n.vlans = {100};
  n.pvid = 100;
  heard.neighbour = n;
  fabric::LldpNic deaf;
  deaf.device = "mlx5_1";
  deaf.netdev = "ens2";
  deaf.link_layer = "Ethernet";
  deaf.reason = "lldpd hears no neighbour on ens2";
  deaf.fix = "enable LLDP on the switch port";
  h.nics = {heard, deaf};
  return h;
}

class FakeHarness final : public Harness {
 public:
  FakeHarness() {
    dir_.add("a");
    dir_.add("b");
    dir_.fake("a").behaviour.discover = [](const fabric::DiscoverRequest&) {
      fabric::DiscoverOutcome o;
      o.status = unimplemented("worker a was built without InfiniBand fabric discovery (fake)");
      return o;
    };
    dir_.fake("b").behaviour.discover = [](const fabric::DiscoverRequest& r) {
      fabric::DiscoverOutcome o;
      if (r.lldp) {
        o.lldp = channelTestLldp();
        o.lldp->host = "b";  // as a real agent names it
      } else {
        o.fabric = channelTestFabric();
      }
      return o;
    };
  }
  Clock& clock() override { return clock_; }
  std::shared_ptr<WorkerChannel> channel(const std::string& name) override {
    return dir_.channel(name);
  }
  void lose(const std::string& name) override { dir_.fake(name).lose("stream ended (fake)"); }

 private:
  SystemClock clock_;
  testing::FakeDirectory dir_{clock_};
};

// One real worker: its SessionManager with the emulated transport, its agent and its thread.
struct RealWorker {
  HostMemoryProvider memory;
  SessionManager::Options options;
  SessionManager sessions{memory, options};
  std::unique_ptr<WorkerAgent> agent;
  std::thread runner;
};

class RealHarness final : public Harness {
 public:
  RealHarness() {
    auto store = SqliteStore::open(":memory:");
    EXPECT_TRUE(store.ok()) << store.status().toString();
    store_ = std::move(*store);
    CoordinatorOptions opts;
    opts.listen = "127.0.0.1:0";
    opts.heartbeat_interval_ms = 100;
    server_ = std::make_unique<CoordinatorServer>(opts, *store_, *store_, clock_);
    auto port = server_->start();
    EXPECT_TRUE(port.ok()) << port.status().toString();
    for (const char* name : {"a", "b"}) start(name, "127.0.0.1:" + std::to_string(*port));
    for (const char* name : {"a", "b"}) {
      EXPECT_TRUE(waitOnline(name)) << "worker " << name << " did not register";
    }
  }
  ~RealHarness() override {
    for (auto& [name, w] : workers_) w->agent->stop();
    for (auto& [name, w] : workers_) {
      if (w->runner.joinable()) w->runner.join();
    }
    server_->shutdown();
    server_->wait();
  }
  Clock& clock() override { return clock_; }
  std::shared_ptr<WorkerChannel> channel(const std::string& name) override {
    return server_->registry().channel(name);
  }
  void lose(const std::string& name) override {
    auto& w = *workers_.at(name);
    w.agent->stop();
    w.runner.join();
  }

 private:
  void start(const std::string& name, const std::string& address) {
    auto w = std::make_unique<RealWorker>();
    w->sessions.addTransport(std::make_unique<EmulatedTransport>());
    WorkerOptions o;
    o.coordinator = address;
    o.name = name;
    o.data_host = "127.0.0.1";
    o.reconnect = false;
    o.heartbeat_ms = 100;
    if (name == "b") {
      o.discover_fabric = [](const fabric::DiscoverRequest&) -> Result<fabric::Fabric> {
        return channelTestFabric();
      };
      o.read_lldp = [](const fabric::DiscoverRequest&) { return channelTestLldp(); };
    }
    Inventory inv;
    inv.hostname = name;
    inv.transports = {"emulated"};
    w->agent = std::make_unique<WorkerAgent>(o, inv, w->sessions);
    WorkerAgent* agent = w->agent.get();
    w->runner = std::thread([agent] { (void)agent->run(); });
    workers_[name] = std::move(w);
  }
  // Registration is an event of the server's registry; it has no callback, so this checks it
  // on the registry's own state under a bound, one yield at a time.
  bool waitOnline(const std::string& name) {
    const auto until = std::chrono::steady_clock::now() + kWait;
    while (std::chrono::steady_clock::now() < until) {
      auto st = server_->registry().get(name);
      if (st && st->online() && server_->registry().channel(name)) return true;
      std::this_thread::yield();
    }
    return false;
  }

  SystemClock clock_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<CoordinatorServer> server_;
  std::map<std::string, std::unique_ptr<RealWorker>> workers_;
};

enum class Impl { kFake, kReal };

// A callback's result, waited for as an event.
template <typename T>
struct Awaited {
  std::promise<Result<T>> promise;
  std::future<Result<T>> future = promise.get_future();
  WorkerChannel::Done<T> done() {
    return [this](Result<T> r) { promise.set_value(std::move(r)); };
  }
  Result<T> get() {
    if (future.wait_for(kWait) != std::future_status::ready) {
      return Status(Code::kInternal, "no answer within the test's bound");
    }
    return future.get();
  }
};

class WorkerChannelContract : public ::testing::TestWithParam<Impl> {
 protected:
  void SetUp() override {
    if (GetParam() == Impl::kFake) {
      h_ = std::make_unique<FakeHarness>();
    } else {
      h_ = std::make_unique<RealHarness>();
    }
    a_ = h_->channel("a");
    b_ = h_->channel("b");
    ASSERT_NE(a_, nullptr);
    ASSERT_NE(b_, nullptr);
  }
  void TearDown() override {
    a_.reset();
    b_.reset();
    h_.reset();
  }

  SideSpec side(const std::string& id, Role role, Op op = Op::kWrite) const {
    SideSpec s;
    s.endpoint.test_id = id;
    s.endpoint.role = role;
    s.endpoint.op = op;
    s.endpoint.buffer_size = kSize;
    s.transport = TransportKind::kEmulated;
    s.memory = MemoryKind::kHost;
    s.seed = 7;
    return s;
  }
  // As pair_test.cc sends it to two workers whose emulated transport advertises end_signal (every
  // current worker's does): the target's armed run lasts until the initiator's END frame, which
  // the target's data path reads after every payload. Without it, the target's check would be
  // ordered after the landed payload only through sockets (the initiator's ACKs, the reply to
  // the coordinator, the finish command), which is how a real NIC's DMA is ordered too, but
  // which ThreadSanitizer cannot see: it reported the in-process worker's verify racing its
  // emulated data path (TSan leg, 2026-11-27).
  RunSpec runSpec() const {
    RunSpec r;
    r.end_signal = true;
    r.message_size = kSize;
    r.iterations = 16;
    r.warmup_iterations = 2;
    r.timeout_seconds = 20;
    return r;
  }
  WorkerChannel::Deadline deadline() { return h_->clock().after(20); }

  static constexpr uint64_t kSize = 4096;
  std::unique_ptr<Harness> h_;
  std::shared_ptr<WorkerChannel> a_, b_;
};

TEST_P(WorkerChannelContract, NamesItsWorkerAndIsNotLostWhileConnected) {
  EXPECT_EQ(a_->worker(), "a");
  EXPECT_EQ(b_->worker(), "b");
  EXPECT_FALSE(a_->lost());
}

// The lean protocol of a one-way write (pair_test.cc): the initiator prepared, the target
// prepared with the initiator as its peer and armed, the initiator started, the target
// finished. The initiator measures; the destination (the target) checks what landed.
TEST_P(WorkerChannelContract, ALeanWriteMeasuresOnTheInitiatorAndVerifiesOnTheTarget) {
  PrepareCommand pi;
  pi.side = side("t-lean", Role::kInitiator);
  Awaited<EndpointDesc> ini;
  a_->prepare(pi, deadline(), ini.done());
  auto ini_desc = ini.get();
  ASSERT_TRUE(ini_desc.ok()) << ini_desc.status().toString();
  EXPECT_EQ(ini_desc->memory, MemoryKind::kHost);
  EXPECT_EQ(ini_desc->reg_path, RegPath::kHost);
  EXPECT_TRUE(std::holds_alternative<EmulatedDesc>(ini_desc->fields));

  PrepareCommand pt;
  pt.side = side("t-lean.target", Role::kTarget);
  pt.peer = *ini_desc;
  pt.arm = runSpec();
  Awaited<EndpointDesc> tgt;
  b_->prepare(pt, deadline(), tgt.done());
  auto tgt_desc = tgt.get();
  ASSERT_TRUE(tgt_desc.ok()) << tgt_desc.status().toString();

  StartCommand s;
  s.test_id = "t-lean";
  s.peer = *tgt_desc;
  s.run = runSpec();
  Awaited<SideOutcome> started;
  a_->start(s, deadline(), started.done());
  auto ran = started.get();
  ASSERT_TRUE(ran.ok()) << ran.status().toString();
  EXPECT_TRUE(ran->has_measurement);
  EXPECT_TRUE(ran->measurement.has_bandwidth);
  EXPECT_GT(ran->measurement.bw.avg_gbps, 0);
  EXPECT_FALSE(ran->verified) << "the initiator was not asked to verify";

  FinishCommand f;
  f.test_id = "t-lean.target";
  f.verify = true;
  f.verify_length = kSize;
  f.timeout_seconds = 20;
  Awaited<SideOutcome> finished;
  b_->finish(f, deadline(), finished.done());
  auto fin = finished.get();
  ASSERT_TRUE(fin.ok()) << fin.status().toString();
  EXPECT_TRUE(fin->verified);
  EXPECT_TRUE(fin->integrity.checked);
  EXPECT_EQ(fin->integrity.bytes_checked, kSize);
  EXPECT_EQ(fin->integrity.wrong_bytes, 0u);
  EXPECT_FALSE(fin->has_measurement) << "a one-way target measures nothing";
}

// A prepared side that is released answers true; a second release of the same test is
// answered too (releases are idempotent: the coordinator releases on every way out).
TEST_P(WorkerChannelContract, AReleaseAnswersAndMayBeRepeated) {
  PrepareCommand pi;
  pi.side = side("t-release", Role::kInitiator);
  Awaited<EndpointDesc> ini;
  a_->prepare(pi, deadline(), ini.done());
  ASSERT_TRUE(ini.get().ok());
  for (int i = 0; i < 2; ++i) {
    Awaited<bool> released;
    a_->release("t-release", "contract test", deadline(), released.done());
    auto r = released.get();
    ASSERT_TRUE(r.ok()) << "release " << i << ": " << r.status().toString();
  }
}

// A call the worker does not answer within its deadline ends with kDeadlineExceeded: here a
// finish whose armed target waits for an initiator that never starts.
TEST_P(WorkerChannelContract, AnUnansweredCallEndsAtItsDeadline) {
  PrepareCommand pi;
  pi.side = side("t-deadline", Role::kInitiator);
  Awaited<EndpointDesc> ini;
  a_->prepare(pi, deadline(), ini.done());
  auto ini_desc = ini.get();
  ASSERT_TRUE(ini_desc.ok());
  PrepareCommand pt;
  pt.side = side("t-deadline.target", Role::kTarget, Op::kSend);
  pt.peer = *ini_desc;
  pt.arm = runSpec();
  Awaited<EndpointDesc> tgt;
  b_->prepare(pt, deadline(), tgt.done());
  ASSERT_TRUE(tgt.get().ok());
  if (GetParam() == Impl::kFake) {
    // The fake's finish answers at once unless told to hold it; a real target waits for the
    // initiator that never starts.
    static_cast<testing::FakeWorkerChannel&>(*b_).behaviour.hold.insert("finish");
  }
  FinishCommand f;
  f.test_id = "t-deadline.target";
  f.timeout_seconds = 20;
  Awaited<SideOutcome> finished;
  b_->finish(f, h_->clock().after(0.3), finished.done());
  auto fin = finished.get();
  ASSERT_FALSE(fin.ok());
  EXPECT_EQ(fin.status().code(), Code::kDeadlineExceeded) << fin.status().toString();
  Awaited<bool> released;
  b_->release("t-deadline.target", "contract test", deadline(), released.done());
  EXPECT_TRUE(released.get().ok());
}

// The loss: onLost's callback runs once, with the reason; lost() turns true; a later call fails
// at once with kUnavailable naming the loss; a subscription made after the loss runs inline.
TEST_P(WorkerChannelContract, ALostWorkerIsAnEventAndFailsLaterCallsAtOnce) {
  std::promise<std::string> lost;
  auto sub = a_->onLost([&lost](const std::string& reason) { lost.set_value(reason); });
  h_->lose("a");
  auto f = lost.get_future();
  ASSERT_EQ(f.wait_for(kWait), std::future_status::ready) << "onLost never ran";
  EXPECT_FALSE(f.get().empty());
  EXPECT_TRUE(a_->lost());
  EXPECT_FALSE(b_->lost()) << "the other worker is not affected";

  PrepareCommand pi;
  pi.side = side("t-after-loss", Role::kInitiator);
  Awaited<EndpointDesc> ini;
  a_->prepare(pi, deadline(), ini.done());
  ASSERT_EQ(ini.future.wait_for(std::chrono::seconds(0)), std::future_status::ready)
      << "a call on a lost worker must fail at once, inline";
  auto r = ini.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable) << r.status().toString();
  EXPECT_NE(r.status().message().find("lost"), std::string::npos) << r.status().message();

  bool inline_ran = false;
  auto late = a_->onLost([&inline_ran](const std::string&) { inline_ran = true; });
  EXPECT_TRUE(inline_ran) << "a subscription after the loss runs at once";
}

// A call waiting on a worker when it is lost ends with kUnavailable (before its deadline), and
// the loss's subscribers hear of it after that call has failed.
TEST_P(WorkerChannelContract, ACallPendingWhenTheWorkerIsLostFailsWithTheLoss) {
  PrepareCommand pi;
  pi.side = side("t-pending", Role::kInitiator);
  Awaited<EndpointDesc> ini;
  a_->prepare(pi, deadline(), ini.done());
  auto ini_desc = ini.get();
  ASSERT_TRUE(ini_desc.ok());
  PrepareCommand pt;
  pt.side = side("t-pending.target", Role::kTarget, Op::kSend);
  pt.peer = *ini_desc;
  pt.arm = runSpec();
  Awaited<EndpointDesc> tgt;
  b_->prepare(pt, deadline(), tgt.done());
  ASSERT_TRUE(tgt.get().ok());
  if (GetParam() == Impl::kFake) {
    // The fake's finish answers at once unless told to hold it; a real target waits for the
    // initiator that never starts.
    static_cast<testing::FakeWorkerChannel&>(*b_).behaviour.hold.insert("finish");
  }
  FinishCommand f;
  f.test_id = "t-pending.target";
  f.timeout_seconds = 20;
  Awaited<SideOutcome> finished;
  std::promise<void> heard;
  std::atomic<bool> failed_first{false};
  auto sub = b_->onLost([&](const std::string&) {
    failed_first = finished.future.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    heard.set_value();
  });
  b_->finish(f, deadline(), finished.done());
  h_->lose("b");
  auto fin = finished.get();
  ASSERT_FALSE(fin.ok());
  EXPECT_EQ(fin.status().code(), Code::kUnavailable) << fin.status().toString();
  ASSERT_EQ(heard.get_future().wait_for(kWait), std::future_status::ready);
  EXPECT_TRUE(failed_first) << "subscribers are told after the pending calls have failed";
}

// A fabric discovery answers its outcome: the snapshot, or, from a worker without the fabric
// module, why there is none, as an outcome and not as an error of the call.
TEST_P(WorkerChannelContract, AFabricDiscoveryAnswersTheSnapshotOrWhyThereIsNone) {
  Awaited<fabric::DiscoverOutcome> none;
  a_->discoverFabric(fabric::DiscoverRequest{}, deadline(), none.done());
  auto n = none.get();
  ASSERT_TRUE(n.ok()) << n.status().toString();
  EXPECT_EQ(n->status.code(), Code::kUnimplemented) << n->status.toString();
  EXPECT_NE(n->status.message().find("worker a"), std::string::npos) << n->status.toString();

  Awaited<fabric::DiscoverOutcome> found;
  b_->discoverFabric(fabric::DiscoverRequest{}, deadline(), found.done());
  auto f = found.get();
  ASSERT_TRUE(f.ok()) << f.status().toString();
  ASSERT_TRUE(f->status.ok()) << f->status.toString();
  const fabric::Fabric want = channelTestFabric();
  EXPECT_EQ(fabric::toJson(f->fabric), fabric::toJson(want));
  ASSERT_EQ(f->fabric.links.size(), 1u);
  EXPECT_EQ(f->fabric.links[0].a.node, "leaf01");
}

// An LLDP discovery (RoCE) answers the worker's NICs with their neighbours, a NIC without one
// included, the host named after the worker.
TEST_P(WorkerChannelContract, AnLldpDiscoveryAnswersTheNicsAndTheirNeighbours) {
  fabric::DiscoverRequest r;
  r.lldp = true;
  Awaited<fabric::DiscoverOutcome> found;
  b_->discoverFabric(r, deadline(), found.done());
  auto f = found.get();
  ASSERT_TRUE(f.ok()) << f.status().toString();
  ASSERT_TRUE(f->status.ok()) << f->status.toString();
  EXPECT_TRUE(f->asked_lldp);
  ASSERT_TRUE(f->lldp.has_value());
  fabric::LldpHost want = channelTestLldp();
  want.host = "b";
  EXPECT_EQ(fabric::toJson(*f->lldp), fabric::toJson(want));

  Awaited<fabric::DiscoverOutcome> none;
  a_->discoverFabric(r, deadline(), none.done());
  auto n = none.get();
  ASSERT_TRUE(n.ok()) << n.status().toString();
  EXPECT_FALSE(n->status.ok());
  EXPECT_TRUE(n->asked_lldp);
}

INSTANTIATE_TEST_SUITE_P(Both, WorkerChannelContract, ::testing::Values(Impl::kFake, Impl::kReal),
                         [](const ::testing::TestParamInfo<Impl>& i) {
                           return i.param == Impl::kFake ? "Fake" : "GrpcLink";
                         });

}  // namespace
}  // namespace gdrmesh
