// Tests of worker/session: pair-test sessions on two SessionManagers (as two workers would run
// them) over the emulated transport, with host memory and with a fake GPU for the staged path.
#include "worker/session/session.h"

#include <dirent.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/pair_spec.h"
#include "common/pattern.h"
#include "worker/transport/emulated/emulated_transport.h"

namespace gdrmesh {
namespace {

using std::chrono::steady_clock;
constexpr std::chrono::seconds kPrompt{10};

// GPU memory as far as the session and the transports can tell (kind kCuda), backed by host
// memory. Counts the host<->"GPU" copies so a test can see the staged path at work.
class FakeGpuBuffer final : public Buffer {
 public:
  FakeGpuBuffer(int gpu, size_t size) : gpu_(gpu), bytes_(size) {}
  MemoryKind kind() const override { return MemoryKind::kCuda; }
  void* data() override { return bytes_.data(); }
  size_t size() const override { return bytes_.size(); }
  int gpuIndex() const override { return gpu_; }
  std::string describe() const override { return "gpu:" + std::to_string(gpu_); }
  Status fill(uint64_t seed, size_t offset, size_t len) override {
    GDR_RETURN_IF_ERROR(checkRange(size(), offset, len, "fill"));
    fillPattern(seed, offset, bytes_.data() + offset, len);
    return {};
  }
  Result<IntegrityReport> verify(uint64_t seed, size_t offset, size_t len) override {
    GDR_RETURN_IF_ERROR(checkRange(size(), offset, len, "verify"));
    IntegrityReport r = verifyPattern(seed, offset, bytes_.data() + offset, len);
    r.where = describe();
    return r;
  }
  Status copyToHost(size_t offset, void* dst, size_t len) override {
    GDR_RETURN_IF_ERROR(checkRange(size(), offset, len, "copyToHost"));
    std::memcpy(dst, bytes_.data() + offset, len);
    to_host += len;
    return {};
  }
  Status copyFromHost(size_t offset, const void* src, size_t len) override {
    GDR_RETURN_IF_ERROR(checkRange(size(), offset, len, "copyFromHost"));
    std::memcpy(bytes_.data() + offset, src, len);
    from_host += len;
    return {};
  }
  std::atomic<uint64_t> to_host{0}, from_host{0};

 private:
  int gpu_;
  std::vector<uint8_t> bytes_;
};

// Host memory always; GPU memory (fake) when `gpus` > 0. Remembers what it handed out so a
// test can watch a transfer land.
class RecordingProvider final : public MemoryProvider {
 public:
  explicit RecordingProvider(int gpus = 0) : gpus_(gpus) {}
  Result<std::unique_ptr<Buffer>> allocate(MemoryKind kind, int gpu, size_t size,
                                           int numa_node) override {
    std::unique_ptr<Buffer> b;
    if (kind == MemoryKind::kCuda) {
      if (gpu < 0 || gpu >= gpus_) return notFound("gpu " + std::to_string(gpu));
      auto g = std::make_unique<FakeGpuBuffer>(gpu, size);
      std::lock_guard<std::mutex> lock(mu_);
      gpu_buffers_.push_back(g.get());
      b = std::move(g);
    } else {
      GDR_ASSIGN_OR_RETURN(auto h, HostBuffer::allocate(size, numa_node));
      b = std::move(h);
    }
    std::lock_guard<std::mutex> lock(mu_);
    all_.push_back(b.get());
    return b;
  }
  Buffer* first() {
    std::lock_guard<std::mutex> lock(mu_);
    return all_.empty() ? nullptr : all_.front();
  }
  FakeGpuBuffer* gpuBuffer() {
    std::lock_guard<std::mutex> lock(mu_);
    return gpu_buffers_.empty() ? nullptr : gpu_buffers_.front();
  }

 private:
  int gpus_;
  std::mutex mu_;
  std::vector<Buffer*> all_;
  std::vector<FakeGpuBuffer*> gpu_buffers_;
};

// One worker: a memory provider and a session manager with the emulated transport.
struct Worker {
  explicit Worker(SessionManager::Options options = {}, int gpus = 0)
      : memory(gpus), sessions(memory, options) {
    sessions.addTransport(std::make_unique<EmulatedTransport>());
  }
  RecordingProvider memory;
  SessionManager sessions;
};

SessionManager::Options faults() {
  SessionManager::Options o;
  o.allow_fault_injection = true;
  return o;
}

SessionSpec sessionSpec(const std::string& id, Role role, Op op, uint64_t size,
                        Mode mode = Mode::kBandwidth) {
  SessionSpec s;
  s.endpoint.test_id = id;
  s.endpoint.role = role;
  s.endpoint.op = op;
  s.endpoint.mode = mode;
  s.endpoint.buffer_size = size;
  s.transport = TransportKind::kEmulated;
  s.seed = 20261122;
  return s;
}

RunSpec runSpec(uint64_t size, uint64_t iterations = 16, double timeout = 30) {
  RunSpec r;
  r.message_size = size;
  r.iterations = iterations;
  r.warmup_iterations = 2;
  r.timeout_seconds = timeout;
  return r;
}

bool landed(Buffer& dst, uint64_t seed) {
  const auto* p = static_cast<const uint64_t*>(dst.data());
  return __atomic_load_n(p, __ATOMIC_RELAXED) == patternWord(seed, 0);
}

bool waitUntil(const std::function<bool()>& pred) {
  const auto end = steady_clock::now() + kPrompt;
  while (!pred()) {
    if (steady_clock::now() > end) return false;
    std::this_thread::yield();
  }
  return true;
}

template <typename T>
bool ready(std::future<T>& f) {
  return f.wait_for(kPrompt) == std::future_status::ready;
}

// Drives one pair test across two workers: prepare both, connect both, run both.
class PairTest : public ::testing::Test {
 protected:
  // Prepares and connects `id` on a (initiator) and b (target).
  void prepareAndConnect(const SessionSpec& initiator, const SessionSpec& target) {
    auto pt = b_.sessions.prepare(target);
    ASSERT_TRUE(pt.ok()) << pt.status().toString();
    auto pi = a_.sessions.prepare(initiator);
    ASSERT_TRUE(pi.ok()) << pi.status().toString();
    prepared_initiator_ = *pi;
    prepared_target_ = *pt;
    auto ct = b_.sessions.connect(target.endpoint.test_id, pi->desc);
    ASSERT_TRUE(ct.ok()) << ct.status().toString();
    auto ci = a_.sessions.connect(initiator.endpoint.test_id, pt->desc);
    ASSERT_TRUE(ci.ok()) << ci.status().toString();
  }
  // Runs both sides, the target on another thread; returns the initiator's measurement.
  Result<Measurement> runBoth(const std::string& id, const RunSpec& rs,
                              Result<Measurement>* target_out = nullptr) {
    auto target_run = std::async(std::launch::async, [&] { return b_.sessions.run(id, rs); });
    Result<Measurement> m = a_.sessions.run(id, rs);
    if (target_run.wait_for(kPrompt) != std::future_status::ready) {
      b_.sessions.release(id);
      target_run.wait();
      return Status(Code::kDeadlineExceeded, "target run did not return");
    }
    Result<Measurement> tm = target_run.get();
    if (target_out != nullptr) *target_out = tm;
    if (!tm.ok()) return tm.status().withContext("target");
    return m;
  }
  SessionManager& destination(Op op) { return op == Op::kRead ? a_.sessions : b_.sessions; }
  SessionManager& source(Op op) { return op == Op::kRead ? b_.sessions : a_.sessions; }

  Worker a_{faults()};
  Worker b_{faults()};
  PreparedEndpoint prepared_initiator_, prepared_target_;
};

TEST_F(PairTest, WriteReadSendPassIntegrityOnTheDestination) {
  const uint64_t size = 65536 + 7;
  for (Op op : {Op::kWrite, Op::kRead, Op::kSend}) {
    SCOPED_TRACE(toString(op));
    const std::string id = std::string("t-") + toString(op);
    prepareAndConnect(sessionSpec(id, Role::kInitiator, op, size),
                      sessionSpec(id, Role::kTarget, op, size));
    EXPECT_EQ(prepared_initiator_.reg_path, RegPath::kHost);
    EXPECT_EQ(prepared_target_.reg_path, RegPath::kHost);
    EXPECT_EQ(prepared_target_.desc.reg_path, RegPath::kHost);
    EXPECT_EQ(prepared_target_.desc.memory, MemoryKind::kHost);
    EXPECT_EQ(prepared_target_.buffer, "host");
    Result<Measurement> m = runBoth(id, runSpec(size));
    ASSERT_TRUE(m.ok()) << m.status().toString();
    EXPECT_TRUE(m->has_bandwidth);
    EXPECT_EQ(m->bw.bytes, size * 16);
    EXPECT_EQ(m->staging_seconds, 0);
    auto v = destination(op).verify(id, size);
    ASSERT_TRUE(v.ok()) << v.status().toString();
    EXPECT_TRUE(v->integrity.ok()) << v->integrity.toString();
    EXPECT_EQ(v->integrity.bytes_checked, size);
    EXPECT_EQ(v->integrity.where, "host");
    EXPECT_EQ(v->staging_seconds, 0);
    // The source holds its own pattern, not the destination's: verifying there must fail.
    auto wrong_side = source(op).verify(id, size);
    ASSERT_TRUE(wrong_side.ok());
    EXPECT_FALSE(wrong_side->integrity.ok());
    a_.sessions.release(id);
    b_.sessions.release(id);
  }
  EXPECT_EQ(a_.sessions.active(), 0u);
  EXPECT_EQ(b_.sessions.active(), 0u);
}

TEST_F(PairTest, LatencyRunGivesOneSamplePerIteration) {
  prepareAndConnect(sessionSpec("lat", Role::kInitiator, Op::kWrite, 4096, Mode::kLatency),
                    sessionSpec("lat", Role::kTarget, Op::kWrite, 4096, Mode::kLatency));
  Result<Measurement> m = runBoth("lat", runSpec(64, 25));
  ASSERT_TRUE(m.ok()) << m.status().toString();
  ASSERT_TRUE(m->has_latency);
  EXPECT_EQ(m->lat.samples, 25u);
  auto v = b_.sessions.verify("lat", 64);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->integrity.ok()) << v->integrity.toString();
}

TEST_F(PairTest, FaultInjectionCorruptsExactlyTheRequestedBytes) {
  const uint64_t size = 65536;
  SessionSpec target = sessionSpec("fault", Role::kTarget, Op::kWrite, size);
  target.corrupt_bytes = 5;
  prepareAndConnect(sessionSpec("fault", Role::kInitiator, Op::kWrite, size), target);
  ASSERT_TRUE(runBoth("fault", runSpec(size)).ok());
  auto v = b_.sessions.verify("fault", size);
  ASSERT_TRUE(v.ok()) << v.status().toString();
  EXPECT_FALSE(v->integrity.ok());
  EXPECT_EQ(v->integrity.wrong_bytes, 5u);
  EXPECT_EQ(v->integrity.first_wrong_offset, 0);
  EXPECT_EQ(v->integrity.bytes_checked, size);
}

TEST_F(PairTest, FaultInjectionOnAShortRangeStillCorruptsDistinctBytes) {
  SessionSpec target = sessionSpec("fault3", Role::kTarget, Op::kWrite, 4096);
  target.corrupt_bytes = 5;
  prepareAndConnect(sessionSpec("fault3", Role::kInitiator, Op::kWrite, 4096), target);
  ASSERT_TRUE(runBoth("fault3", runSpec(3)).ok());
  auto v = b_.sessions.verify("fault3", 3);  // fewer bytes than requested corruptions
  ASSERT_TRUE(v.ok()) << v.status().toString();
  EXPECT_EQ(v->integrity.wrong_bytes, 3u);
}

TEST_F(PairTest, InvalidatedRemoteKeyFailsTheInitiatorNamingTheKey) {
  // invalidate_remote_key: the target revokes the peer's access right after its connect
  // (through the endpoint's FaultInjectable), so the initiator's first access is refused.
  SessionSpec target = sessionSpec("rkey", Role::kTarget, Op::kWrite, 4096);
  target.invalidate_remote_key = true;
  const SessionSpec initiator = sessionSpec("rkey", Role::kInitiator, Op::kWrite, 4096);
  auto pt = b_.sessions.prepare(target);
  ASSERT_TRUE(pt.ok()) << pt.status().toString();
  auto pi = a_.sessions.prepare(initiator);
  ASSERT_TRUE(pi.ok()) << pi.status().toString();
  auto ct = b_.sessions.connect("rkey", pi->desc);
  ASSERT_TRUE(ct.ok()) << ct.status().toString();
  Status st = a_.sessions.connect("rkey", pt->desc).status();
  if (st.ok()) {
    Result<Measurement> m = runBoth("rkey", runSpec(4096));
    ASSERT_FALSE(m.ok()) << "a run against an invalidated key succeeded";
    st = m.status();
  }
  EXPECT_NE(st.message().find("key"), std::string::npos) << st.toString();
  EXPECT_NE(st.code(), Code::kInternal) << st.toString();
}

TEST(SessionTest, FaultInjectionWithoutPermissionIsRefused) {
  Worker w;  // allow_fault_injection = false
  SessionSpec s = sessionSpec("f", Role::kTarget, Op::kWrite, 4096);
  s.corrupt_bytes = 5;
  auto p = w.sessions.prepare(s);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Code::kPermissionDenied);
  EXPECT_NE(p.status().fix().find("--allow-fault-injection"), std::string::npos)
      << p.status().toString();
  EXPECT_EQ(w.sessions.active(), 0u);
}

TEST_F(PairTest, VerifyRepoisonsSoDataThatNeverLandedCannotPass) {
  const uint64_t size = 8192;
  prepareAndConnect(sessionSpec("poison", Role::kInitiator, Op::kWrite, size),
                    sessionSpec("poison", Role::kTarget, Op::kWrite, size));
  // Before any run the destination holds its own pattern.
  auto before = b_.sessions.verify("poison", size);
  ASSERT_TRUE(before.ok());
  EXPECT_FALSE(before->integrity.ok()) << "a destination passed before anything was sent";
  ASSERT_TRUE(runBoth("poison", runSpec(size)).ok());
  auto first = b_.sessions.verify("poison", size);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->integrity.ok()) << first->integrity.toString();
  // No new run: the data of the first run must not pass a second time.
  auto second = b_.sessions.verify("poison", size);
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->integrity.ok());
  EXPECT_GT(second->integrity.wrong_bytes, size / 2);
  // A new run lands again and passes again.
  ASSERT_TRUE(runBoth("poison", runSpec(size)).ok());
  auto third = b_.sessions.verify("poison", size);
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(third->integrity.ok()) << third->integrity.toString();
}

TEST(SessionTest, UnknownTestIdIsNotFound) {
  Worker w;
  EXPECT_EQ(w.sessions.connect("nope", EndpointDesc{}).status().code(), Code::kNotFound);
  EXPECT_EQ(w.sessions.run("nope", runSpec(64)).status().code(), Code::kNotFound);
  auto v = w.sessions.verify("nope", 64);
  EXPECT_EQ(v.status().code(), Code::kNotFound);
  EXPECT_NE(v.status().message().find("nope"), std::string::npos);
  w.sessions.release("nope");  // fine: already released
  EXPECT_EQ(w.sessions.active(), 0u);
}

TEST(SessionTest, ArgumentsAreChecked) {
  Worker w;
  EXPECT_EQ(w.sessions.prepare(sessionSpec("", Role::kTarget, Op::kWrite, 64)).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(w.sessions.prepare(sessionSpec("z", Role::kTarget, Op::kWrite, 0)).status().code(),
            Code::kInvalidArgument);
  SessionSpec verbs = sessionSpec("v", Role::kTarget, Op::kWrite, 64);
  verbs.transport = TransportKind::kVerbs;  // not registered in this worker
  EXPECT_EQ(w.sessions.prepare(verbs).status().code(), Code::kUnimplemented);
  ASSERT_TRUE(w.sessions.prepare(sessionSpec("ok", Role::kTarget, Op::kWrite, 64)).ok());
  EXPECT_EQ(w.sessions.verify("ok", 0).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(w.sessions.verify("ok", 65).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(w.sessions.active(), 1u);
}

TEST(SessionTest, WhatNoValidTestAsksForIsRefusedBeforeAnythingIsAllocated) {
  Worker w;
  // A buffer of 2^60 bytes would be an allocation failure at best; it is refused by its field.
  auto huge = w.sessions.prepare(sessionSpec("huge", Role::kTarget, Op::kWrite, 1ULL << 60));
  EXPECT_EQ(huge.status().code(), Code::kInvalidArgument);
  EXPECT_NE(huge.status().message().find("buffer_size"), std::string::npos)
      << huge.status().message();
  SessionSpec qps = sessionSpec("qps", Role::kTarget, Op::kWrite, 4096);
  qps.endpoint.num_qps = 1'000'000;
  EXPECT_NE(w.sessions.prepare(qps).status().message().find("num_qps"), std::string::npos);
  EXPECT_EQ(w.sessions.active(), 0u);
  ASSERT_TRUE(w.sessions.prepare(sessionSpec("ok", Role::kTarget, Op::kWrite, 4096)).ok());
  RunSpec nan = runSpec(4096);
  nan.timeout_seconds = std::numeric_limits<double>::quiet_NaN();
  auto r = w.sessions.run("ok", nan);
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("timeout_seconds"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(w.sessions.arm("ok", nan).code(), Code::kInvalidArgument);
  StartSpec start;
  start.run = nan;
  auto st = w.sessions.start("ok", start);
  EXPECT_EQ(st.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(w.sessions.active(), 0u) << "start releases its session on every outcome";
}

TEST(SessionTest, DuplicatePrepareIsRefusedAndKeepsTheFirstSession) {
  Worker w;
  auto first = w.sessions.prepare(sessionSpec("dup", Role::kTarget, Op::kWrite, 4096));
  ASSERT_TRUE(first.ok());
  auto second = w.sessions.prepare(sessionSpec("dup", Role::kTarget, Op::kWrite, 4096));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Code::kInvalidArgument);
  EXPECT_NE(second.status().message().find("dup"), std::string::npos);
  EXPECT_EQ(w.sessions.active(), 1u);
}

TEST(SessionTest, ConcurrentPreparesOfOneIdLetExactlyOneWin) {
  // The coordinator may retry a prepare; two copies racing must not both succeed (the second
  // would silently replace the first session and its endpoint).
  for (int round = 0; round < 5; ++round) {
    Worker w;
    constexpr int kThreads = 8;
    std::atomic<int> waiting{kThreads};
    std::vector<std::future<bool>> results;
    for (int i = 0; i < kThreads; ++i) {
      results.push_back(std::async(std::launch::async, [&] {
        --waiting;
        while (waiting.load() > 0) std::this_thread::yield();
        return w.sessions.prepare(sessionSpec("race", Role::kTarget, Op::kWrite, 1 << 20)).ok();
      }));
    }
    int wins = 0;
    for (auto& f : results) wins += f.get() ? 1 : 0;
    EXPECT_EQ(wins, 1) << "round " << round;
    EXPECT_EQ(w.sessions.active(), 1u);
  }
}

TEST(SessionTest, ConcurrentPreparesRespectMaxSessions) {
  for (int round = 0; round < 5; ++round) {
    SessionManager::Options o;
    o.max_sessions = 2;
    Worker w(o);
    constexpr int kThreads = 8;
    std::atomic<int> waiting{kThreads};
    std::vector<std::future<bool>> results;
    for (int i = 0; i < kThreads; ++i) {
      results.push_back(std::async(std::launch::async, [&, i] {
        --waiting;
        while (waiting.load() > 0) std::this_thread::yield();
        return w.sessions
            .prepare(sessionSpec("m" + std::to_string(i), Role::kTarget, Op::kWrite, 1 << 20))
            .ok();
      }));
    }
    int wins = 0;
    for (auto& f : results) wins += f.get() ? 1 : 0;
    EXPECT_EQ(wins, 2) << "round " << round;
    EXPECT_LE(w.sessions.active(), 2u);
  }
}

TEST(SessionTest, GpuMemoryOnAHostOnlyWorkerNamesTheGpu) {
  HostMemoryProvider host;
  SessionManager m(host, {});
  m.addTransport(std::make_unique<EmulatedTransport>());
  SessionSpec s = sessionSpec("gpu", Role::kTarget, Op::kWrite, 4096);
  s.memory = MemoryKind::kCuda;
  s.gpu = 3;
  s.reg = RegPath::kStaged;
  auto p = m.prepare(s);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(p.status().message().find("GPU"), std::string::npos) << p.status().toString();
  EXPECT_NE(p.status().message().find("gpu 3"), std::string::npos) << p.status().toString();
  EXPECT_EQ(m.active(), 0u);
}

TEST(SessionTest, HostMemoryProviderServesHostMemory) {
  HostMemoryProvider host;
  auto b = host.allocate(MemoryKind::kHost, -1, 1000, -1);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)->kind(), MemoryKind::kHost);
  EXPECT_EQ((*b)->size(), 1000u);
}

TEST(SessionTest, GpuRegistrationPathsOnHostMemoryNameRegPath) {
  Worker w;
  for (RegPath reg : {RegPath::kStaged, RegPath::kDmabuf, RegPath::kPeermem}) {
    SessionSpec s = sessionSpec("h", Role::kTarget, Op::kWrite, 4096);
    s.reg = reg;
    auto p = w.sessions.prepare(s);
    ASSERT_FALSE(p.ok()) << toString(reg);
    EXPECT_EQ(p.status().code(), Code::kInvalidArgument);
    EXPECT_NE(p.status().message().find("reg_path"), std::string::npos) << p.status().toString();
    EXPECT_NE(p.status().message().find(toString(reg)), std::string::npos);
  }
  EXPECT_EQ(w.sessions.active(), 0u);
}

TEST(SessionTest, MaxSessionsIsEnforcedAndFreedByRelease) {
  SessionManager::Options o;
  o.max_sessions = 2;
  Worker w(o);
  ASSERT_TRUE(w.sessions.prepare(sessionSpec("a", Role::kTarget, Op::kWrite, 64)).ok());
  ASSERT_TRUE(w.sessions.prepare(sessionSpec("b", Role::kTarget, Op::kWrite, 64)).ok());
  auto third = w.sessions.prepare(sessionSpec("c", Role::kTarget, Op::kWrite, 64));
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.status().code(), Code::kResourceExhausted);
  w.sessions.release("a");
  EXPECT_TRUE(w.sessions.prepare(sessionSpec("c", Role::kTarget, Op::kWrite, 64)).ok());
  EXPECT_EQ(w.sessions.active(), 2u);
}

TEST_F(PairTest, ReleaseDuringARunReturnsPromptlyAndTheRunIsAborted) {
  const uint64_t size = 1 << 20;
  prepareAndConnect(sessionSpec("rel", Role::kInitiator, Op::kWrite, size),
                    sessionSpec("rel", Role::kTarget, Op::kWrite, size));
  auto run = std::async(std::launch::async,
                        [&] { return a_.sessions.run("rel", runSpec(size, 1000000, 30)); });
  Buffer* target_buffer = b_.memory.first();
  ASSERT_NE(target_buffer, nullptr);
  const uint64_t initiator_seed = initiatorSeed(20261122);
  const bool flowing = waitUntil([&] { return landed(*target_buffer, initiator_seed); });
  const auto t0 = steady_clock::now();
  a_.sessions.release("rel");
  const double release_secs = std::chrono::duration<double>(steady_clock::now() - t0).count();
  ASSERT_TRUE(flowing) << "no write landed";
  EXPECT_LT(release_secs, 1.0);
  EXPECT_EQ(a_.sessions.active(), 0u);
  ASSERT_TRUE(ready(run)) << "the run kept going after release";
  Result<Measurement> m = run.get();
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kAborted) << m.status().toString();
  // The released id is gone.
  EXPECT_EQ(a_.sessions.run("rel", runSpec(size)).status().code(), Code::kNotFound);
}

TEST_F(PairTest, ReleaseOfATargetWaitingForSendsAbortsIt) {
  prepareAndConnect(sessionSpec("rs", Role::kInitiator, Op::kSend, 4096),
                    sessionSpec("rs", Role::kTarget, Op::kSend, 4096));
  auto run =
      std::async(std::launch::async, [&] { return b_.sessions.run("rs", runSpec(64, 1000, 30)); });
  // Whether release lands before or during the run, the run must end promptly and not pass.
  b_.sessions.release("rs");
  ASSERT_TRUE(ready(run));
  Result<Measurement> m = run.get();
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(m.status().code() == Code::kAborted || m.status().code() == Code::kNotFound)
      << m.status().toString();
}

TEST_F(PairTest, AbortAllEndsEveryRun) {
  prepareAndConnect(sessionSpec("w", Role::kInitiator, Op::kWrite, 1 << 20),
                    sessionSpec("w", Role::kTarget, Op::kWrite, 1 << 20));
  auto run = std::async(std::launch::async,
                        [&] { return a_.sessions.run("w", runSpec(1 << 20, 1000000, 30)); });
  Buffer* target_buffer = b_.memory.first();
  ASSERT_TRUE(waitUntil([&] { return landed(*target_buffer, initiatorSeed(20261122)); }));
  ASSERT_TRUE(a_.sessions.prepare(sessionSpec("other", Role::kTarget, Op::kSend, 64)).ok());
  auto waiting = std::async(std::launch::async,
                            [&] { return a_.sessions.run("other", runSpec(64, 100, 30)); });
  a_.sessions.abortAll();
  EXPECT_EQ(a_.sessions.active(), 0u);
  ASSERT_TRUE(ready(run));
  ASSERT_TRUE(ready(waiting));
  EXPECT_FALSE(run.get().ok());
  EXPECT_FALSE(waiting.get().ok());
}

// --- The staged path, with a fake GPU. ---------------------------------------------------

// Each test builds its own two workers with one fake GPU each.
class StagedTest : public ::testing::Test {};

SessionSpec gpuSpec(const std::string& id, Role role, Op op, uint64_t size, RegPath reg) {
  SessionSpec s = sessionSpec(id, role, op, size);
  s.memory = MemoryKind::kCuda;
  s.gpu = 0;
  s.reg = reg;
  return s;
}

TEST_F(StagedTest, StagedPathMovesTheMirrorAndVerifiesOnTheGpu) {
  const uint64_t size = 65536 + 3;
  for (Op op : {Op::kWrite, Op::kRead, Op::kSend}) {
    SCOPED_TRACE(toString(op));
    Worker a({}, 1), b({}, 1);
    const std::string id = "staged";
    auto pt = b.sessions.prepare(gpuSpec(id, Role::kTarget, op, size, RegPath::kStaged));
    ASSERT_TRUE(pt.ok()) << pt.status().toString();
    auto pi = a.sessions.prepare(gpuSpec(id, Role::kInitiator, op, size, RegPath::kStaged));
    ASSERT_TRUE(pi.ok()) << pi.status().toString();
    for (const PreparedEndpoint* p : {&*pi, &*pt}) {
      EXPECT_EQ(p->reg_path, RegPath::kStaged);
      EXPECT_EQ(p->desc.reg_path, RegPath::kStaged);
      EXPECT_EQ(p->desc.memory, MemoryKind::kCuda);
      EXPECT_EQ(p->buffer, "gpu:0");
    }
    ASSERT_TRUE(b.sessions.connect(id, pi->desc).ok());
    ASSERT_TRUE(a.sessions.connect(id, pt->desc).ok());
    const RunSpec rs = runSpec(size);
    auto target_run = std::async(std::launch::async, [&] { return b.sessions.run(id, rs); });
    Result<Measurement> mi = a.sessions.run(id, rs);
    ASSERT_TRUE(ready(target_run));
    Result<Measurement> mt = target_run.get();
    ASSERT_TRUE(mi.ok()) << mi.status().toString();
    ASSERT_TRUE(mt.ok()) << mt.status().toString();

    Worker& src = op == Op::kRead ? b : a;
    Worker& dst = op == Op::kRead ? a : b;
    const Measurement& src_m = op == Op::kRead ? *mt : *mi;
    EXPECT_GT(src_m.staging_seconds, 0) << "the source's GPU -> mirror copy was not timed";
    EXPECT_GE(src.memory.gpuBuffer()->to_host.load(), size) << "the source GPU was not staged";
    // Nothing reached the destination GPU yet: the transport only moves the mirror.
    EXPECT_EQ(dst.memory.gpuBuffer()->from_host.load(), 0u);
    auto gpu_before = dst.memory.gpuBuffer()->verify(
        op == Op::kRead ? targetSeed(20261122) : initiatorSeed(20261122), 0, size);
    ASSERT_TRUE(gpu_before.ok());
    EXPECT_FALSE(gpu_before->ok()) << "the GPU buffer was written without staging";

    auto v = dst.sessions.verify(id, size);
    ASSERT_TRUE(v.ok()) << v.status().toString();
    EXPECT_TRUE(v->integrity.ok()) << v->integrity.toString();
    EXPECT_EQ(v->integrity.where, "gpu:0") << "verified the mirror, not the GPU";
    EXPECT_GT(v->staging_seconds, 0);
    EXPECT_GE(dst.memory.gpuBuffer()->from_host.load(), size);
    // A second verify without a run fails on the staged path too (mirror re-poisoned).
    auto again = dst.sessions.verify(id, size);
    ASSERT_TRUE(again.ok());
    EXPECT_FALSE(again->integrity.ok());
  }
}

TEST_F(StagedTest, GpuMemoryWithAutoOnTheEmulatedTransportIsRefusedNotStaged) {
  Worker w({}, 1);
  for (RegPath reg : {RegPath::kAuto, RegPath::kDmabuf, RegPath::kPeermem}) {
    auto p = w.sessions.prepare(gpuSpec("auto", Role::kTarget, Op::kWrite, 4096, reg));
    ASSERT_FALSE(p.ok()) << toString(reg) << ": GPU memory silently accepted, reg_path "
                         << toString(p->reg_path);
    EXPECT_NE(p.status().code(), Code::kInternal);
    if (reg == RegPath::kAuto) {
      EXPECT_NE((p.status().message() + p.status().fix()).find("staged"), std::string::npos)
          << p.status().toString();
    }
  }
  auto host = w.sessions.prepare(gpuSpec("host", Role::kTarget, Op::kWrite, 4096, RegPath::kHost));
  ASSERT_FALSE(host.ok());
  EXPECT_EQ(host.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(w.sessions.active(), 0u);
}

TEST_F(StagedTest, FaultInjectionOnTheStagedPathHitsTheGpuBuffer) {
  Worker a({}, 1), b(faults(), 1);
  const uint64_t size = 8192;
  SessionSpec t = gpuSpec("sf", Role::kTarget, Op::kWrite, size, RegPath::kStaged);
  t.corrupt_bytes = 5;
  auto pt = b.sessions.prepare(t);
  ASSERT_TRUE(pt.ok()) << pt.status().toString();
  auto pi = a.sessions.prepare(gpuSpec("sf", Role::kInitiator, Op::kWrite, size, RegPath::kStaged));
  ASSERT_TRUE(pi.ok());
  ASSERT_TRUE(b.sessions.connect("sf", pi->desc).ok());
  ASSERT_TRUE(a.sessions.connect("sf", pt->desc).ok());
  auto target_run =
      std::async(std::launch::async, [&] { return b.sessions.run("sf", runSpec(size)); });
  ASSERT_TRUE(a.sessions.run("sf", runSpec(size)).ok());
  ASSERT_TRUE(ready(target_run));
  ASSERT_TRUE(target_run.get().ok());
  auto v = b.sessions.verify("sf", size);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->integrity.wrong_bytes, 5u);
}

// ------------------------------------------------------------------ lean protocol
// prepare initiator; prepare target with {peer, arm}; start initiator; finish target.

size_t threadsOfThisProcess() {
  size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') ++n;
    }
    ::closedir(d);
  }
  return n;
}

class LeanTest : public PairTest {
 protected:
  struct Outcome {
    Result<SideOutcome> start = Status(Code::kInternal, "not run");
    Result<SideOutcome> finish = Status(Code::kInternal, "not run");
  };
  // Prepares both sides, the target connected and armed; returns false (with a failure) when
  // a prepare fails.
  bool prepareLean(const std::string& id, Op op, uint64_t size, const RunSpec& rs,
                   Mode mode = Mode::kBandwidth) {
    auto pi = a_.sessions.prepare(sessionSpec(id, Role::kInitiator, op, size, mode));
    EXPECT_TRUE(pi.ok()) << pi.status().toString();
    if (!pi.ok()) return false;
    PrepareExtras extras;
    extras.peer = pi->desc;
    extras.arm = rs;
    auto pt = b_.sessions.prepare(sessionSpec(id, Role::kTarget, op, size, mode), extras);
    EXPECT_TRUE(pt.ok()) << pt.status().toString();
    if (!pt.ok()) return false;
    target_desc_ = pt->desc;
    return true;
  }
  StartSpec startSpec(Op op, uint64_t size, const RunSpec& rs) const {
    StartSpec ss;
    ss.peer = target_desc_;
    ss.run = rs;
    ss.verify = op == Op::kRead;  // the initiator is the destination of READ
    ss.verify_length = size;
    return ss;
  }
  static FinishSpec finishSpec(Op op, uint64_t size, double timeout = 30) {
    FinishSpec fs;
    fs.verify = op != Op::kRead;
    fs.verify_length = size;
    fs.timeout_seconds = timeout;
    return fs;
  }
  Outcome runLean(const std::string& id, Op op, uint64_t size, Mode mode = Mode::kBandwidth) {
    Outcome o;
    const RunSpec rs = runSpec(size, 8);
    if (!prepareLean(id, op, size, rs, mode)) return o;
    o.start = a_.sessions.start(id, startSpec(op, size, rs));
    o.finish = b_.sessions.finish(id, finishSpec(op, size));
    return o;
  }
  EndpointDesc target_desc_;
};

TEST_F(LeanTest, EveryOpPassesOnTheDestinationAndReleasesBothSides) {
  const uint64_t size = 65536 + 3;
  for (Op op : {Op::kWrite, Op::kRead, Op::kSend, Op::kWriteImm}) {
    SCOPED_TRACE(toString(op));
    const std::string id = std::string("lean-") + toString(op);
    Outcome o = runLean(id, op, size);
    ASSERT_TRUE(o.start.ok()) << o.start.status().toString();
    ASSERT_TRUE(o.finish.ok()) << o.finish.status().toString();
    // The initiator measured; the target (one-sided or receive-only) did not.
    EXPECT_TRUE(o.start->has_measurement);
    EXPECT_TRUE(o.start->measurement.has_bandwidth);
    EXPECT_EQ(o.start->measurement.message_size, size);
    EXPECT_FALSE(o.finish->has_measurement);
    // Exactly the destination verified, and its data is right.
    const SideOutcome& dst = op == Op::kRead ? *o.start : *o.finish;
    const SideOutcome& src = op == Op::kRead ? *o.finish : *o.start;
    ASSERT_TRUE(dst.verified);
    EXPECT_FALSE(src.verified);
    EXPECT_TRUE(dst.integrity.ok()) << dst.integrity.toString();
    EXPECT_EQ(dst.integrity.bytes_checked, size);
    EXPECT_EQ(a_.sessions.active(), 0u);
    EXPECT_EQ(b_.sessions.active(), 0u);
  }
}

TEST_F(LeanTest, LatencyPingPongOverTheLeanProtocol) {
  Outcome o = runLean("lean-lat", Op::kWrite, 4096, Mode::kLatency);
  ASSERT_TRUE(o.start.ok()) << o.start.status().toString();
  ASSERT_TRUE(o.finish.ok()) << o.finish.status().toString();
  ASSERT_TRUE(o.start->measurement.has_latency);
  EXPECT_EQ(o.start->measurement.lat.samples, 8u);
  EXPECT_TRUE(o.finish->integrity.ok()) << o.finish->integrity.toString();
}

TEST_F(LeanTest, CorruptionOnTheDestinationIsReportedNotHidden) {
  const uint64_t size = 8192;
  auto pi = a_.sessions.prepare(sessionSpec("lean-bad", Role::kInitiator, Op::kWrite, size));
  ASSERT_TRUE(pi.ok());
  SessionSpec t = sessionSpec("lean-bad", Role::kTarget, Op::kWrite, size);
  t.corrupt_bytes = 3;
  PrepareExtras extras{pi->desc, runSpec(size)};
  auto pt = b_.sessions.prepare(t, extras);
  ASSERT_TRUE(pt.ok()) << pt.status().toString();
  target_desc_ = pt->desc;
  ASSERT_TRUE(a_.sessions.start("lean-bad", startSpec(Op::kWrite, size, runSpec(size))).ok());
  auto f = b_.sessions.finish("lean-bad", finishSpec(Op::kWrite, size));
  ASSERT_TRUE(f.ok()) << f.status().toString();
  EXPECT_EQ(f->integrity.wrong_bytes, 3u);
}

// Sealed tests: each side knows only its own pattern; the destination digests what landed,
// keeps the buffer (not the registration), and counts wrong bytes only once the seed is
// revealed.
TEST_F(LeanTest, SealedDestinationDigestsWhatLandedAndCountsOnlyAfterTheReveal) {
  const uint64_t size = 65536 + 5;
  const uint64_t ini_fill = 0x1234567890abcdefULL, tgt_fill = 0x0fedcba987654321ULL;
  for (uint64_t corrupt : {uint64_t{0}, uint64_t{4}}) {
    SCOPED_TRACE(corrupt);
    const std::string id = "sealed-" + std::to_string(corrupt);
    SessionSpec i = sessionSpec(id, Role::kInitiator, Op::kWrite, size);
    i.seed = 0;
    i.fill_seed = ini_fill;
    SessionSpec t = sessionSpec(id, Role::kTarget, Op::kWrite, size);
    t.seed = 0;
    t.fill_seed = tgt_fill;
    t.corrupt_bytes = corrupt;
    auto pi = a_.sessions.prepare(i);
    ASSERT_TRUE(pi.ok()) << pi.status().toString();
    PrepareExtras extras{pi->desc, runSpec(size)};
    auto pt = b_.sessions.prepare(t, extras);
    ASSERT_TRUE(pt.ok()) << pt.status().toString();
    target_desc_ = pt->desc;
    ASSERT_TRUE(a_.sessions.start(id, startSpec(Op::kWrite, size, runSpec(size))).ok());
    auto f = b_.sessions.finish(id, finishSpec(Op::kWrite, size));
    ASSERT_TRUE(f.ok()) << f.status().toString();
    // No check ran: a digest, which matches the initiator's pattern only when nothing is wrong.
    EXPECT_FALSE(f->integrity.checked);
    EXPECT_TRUE(f->integrity.digested);
    EXPECT_EQ(f->integrity.bytes_checked, size);
    EXPECT_EQ(f->integrity.digest == digestPattern(ini_fill, size), corrupt == 0);
    EXPECT_EQ(b_.sessions.active(), 0u);  // released; only the landed buffer is kept
    // The reveal counts and locates.
    auto r = b_.sessions.verify(id, size, ini_fill);
    ASSERT_TRUE(r.ok()) << r.status().toString();
    EXPECT_TRUE(r->integrity.checked);
    EXPECT_EQ(r->integrity.wrong_bytes, corrupt);
    // Kept once: a second reveal is refused.
    EXPECT_EQ(b_.sessions.verify(id, size, ini_fill).status().code(), Code::kNotFound);
  }
}

TEST(SessionTest, RevealOfATestNotKeptIsNotFound) {
  HostMemoryProvider memory;
  SessionManager::Options opts;
  opts.max_parked = 2;
  SessionManager sm(memory, opts);
  EXPECT_EQ(sm.reveal("never", 7).status().code(), Code::kNotFound);
}

TEST_F(LeanTest, FinishTimesOutWhenTheInitiatorNeverStartsAndReleases) {
  // A SEND target waits for messages that never come.
  ASSERT_TRUE(prepareLean("lean-late", Op::kSend, 4096, runSpec(4096, 8, 60)));
  const auto t0 = steady_clock::now();
  auto f = b_.sessions.finish("lean-late", finishSpec(Op::kSend, 4096, 0.2));
  const auto took = steady_clock::now() - t0;
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), Code::kDeadlineExceeded) << f.status().toString();
  EXPECT_NE(f.status().message().find("lean-late"), std::string::npos);
  EXPECT_GE(took, std::chrono::milliseconds(200));
  EXPECT_LT(took, kPrompt);
  EXPECT_EQ(b_.sessions.active(), 0u);  // released, its armed run aborted and joined
  a_.sessions.release("lean-late");
}

TEST_F(LeanTest, PeerAbortingMidRunEndsTheArmedRunPromptly) {
  const uint64_t size = 4096;
  RunSpec endless = runSpec(size, PairTestLimits{}.max_iterations, 60);  // the most a worker takes
  ASSERT_TRUE(prepareLean("lean-abort", Op::kSend, size, endless));
  auto start = std::async(std::launch::async, [&] {
    return a_.sessions.start("lean-abort", startSpec(Op::kSend, size, endless));
  });
  // Wait for data to flow, then the initiator's worker gives up on the test.
  Buffer* dst = b_.memory.first();
  ASSERT_NE(dst, nullptr);
  ASSERT_TRUE(waitUntil([&] { return landed(*dst, initiatorSeed(20261122)); }));
  const auto t0 = steady_clock::now();
  a_.sessions.release("lean-abort");
  ASSERT_TRUE(ready(start));
  auto s = start.get();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kAborted) << s.status().toString();
  auto f = b_.sessions.finish("lean-abort", finishSpec(Op::kSend, size, 60));
  EXPECT_LT(steady_clock::now() - t0, kPrompt);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), Code::kUnavailable) << f.status().toString();
  EXPECT_NE(f.status().message().find("armed run"), std::string::npos);
  EXPECT_EQ(a_.sessions.active(), 0u);
  EXPECT_EQ(b_.sessions.active(), 0u);
}

TEST_F(LeanTest, ReleaseOfAnArmedTargetStopsItsRunPromptly) {
  ASSERT_TRUE(prepareLean("lean-rel", Op::kSend, 4096, runSpec(4096, 8, 60)));
  const auto t0 = steady_clock::now();
  b_.sessions.release("lean-rel");  // joins the armed thread before it returns
  EXPECT_LT(steady_clock::now() - t0, kPrompt);
  EXPECT_EQ(b_.sessions.active(), 0u);
  auto f = b_.sessions.finish("lean-rel", finishSpec(Op::kSend, 4096));
  EXPECT_EQ(f.status().code(), Code::kNotFound);
  a_.sessions.release("lean-rel");
}

TEST_F(LeanTest, AbortAllEndsAFinishWaitingForItsRunPromptly) {
  ASSERT_TRUE(prepareLean("lean-all", Op::kSend, 4096, runSpec(4096, 8, 60)));
  auto finish = std::async(std::launch::async, [&] {
    return b_.sessions.finish("lean-all", finishSpec(Op::kSend, 4096, 60));
  });
  b_.sessions.abortAll();
  ASSERT_TRUE(ready(finish));
  auto f = finish.get();
  ASSERT_FALSE(f.ok());
  // kAborted when the finish was already waiting; kNotFound when the abort came first.
  EXPECT_TRUE(f.status().code() == Code::kAborted || f.status().code() == Code::kNotFound)
      << f.status().toString();
  EXPECT_EQ(b_.sessions.active(), 0u);
  a_.sessions.release("lean-all");
}

TEST_F(LeanTest, ProtocolMisuseIsRefusedWithTheReason) {
  const RunSpec rs = runSpec(64);
  // arm needs peer.
  PrepareExtras arm_only;
  arm_only.arm = rs;
  auto p = b_.sessions.prepare(sessionSpec("m1", Role::kTarget, Op::kWrite, 64), arm_only);
  EXPECT_EQ(p.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(b_.sessions.active(), 0u);
  // finish without arm: refused, and the session is released all the same.
  ASSERT_TRUE(b_.sessions.prepare(sessionSpec("m2", Role::kTarget, Op::kWrite, 64)).ok());
  EXPECT_EQ(b_.sessions.finish("m2", finishSpec(Op::kWrite, 64)).status().code(),
            Code::kFailedPrecondition);
  EXPECT_EQ(b_.sessions.active(), 0u);
  // An armed session refuses a classic run and a second arm.
  ASSERT_TRUE(prepareLean("m3", Op::kSend, 64, runSpec(64, 8, 60)));
  EXPECT_EQ(b_.sessions.run("m3", rs).status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(b_.sessions.arm("m3", rs).code(), Code::kInvalidArgument);
  b_.sessions.release("m3");
  a_.sessions.release("m3");
  // A peer that cannot be connected: prepare fails and leaves nothing behind.
  ASSERT_TRUE(a_.sessions.prepare(sessionSpec("m4", Role::kInitiator, Op::kWrite, 64)).ok());
  StartSpec wrong;
  wrong.peer.fields = VerbsDesc{};
  wrong.run = rs;
  EXPECT_EQ(a_.sessions.start("m4", wrong).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(a_.sessions.active(), 0u);
}

TEST_F(LeanTest, ManyTestsLeaveNoThreadBehind) {
  ASSERT_TRUE(runLean("warm", Op::kWrite, 256).finish.ok());
  const size_t before = threadsOfThisProcess();
  for (int i = 0; i < 300; ++i) {
    const Op op = i % 2 == 0 ? Op::kWrite : Op::kSend;
    Outcome o = runLean("many-" + std::to_string(i), op, 256);
    ASSERT_TRUE(o.start.ok()) << i << ": " << o.start.status().toString();
    ASSERT_TRUE(o.finish.ok()) << i << ": " << o.finish.status().toString();
  }
  EXPECT_EQ(threadsOfThisProcess(), before);
  EXPECT_EQ(a_.sessions.active() + b_.sessions.active(), 0u);
}

}  // namespace
}  // namespace gdrmesh
