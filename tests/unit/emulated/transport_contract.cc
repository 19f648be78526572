#include "tests/unit/emulated/transport_contract.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <future>
#include <thread>
#include <utility>
#include <vector>

#include "common/pattern.h"
#include "worker/transport/fault_injection.h"

namespace gdrmesh::contract {
namespace {

using std::chrono::steady_clock;

constexpr size_t kGuard = 4096 + 5;  // bytes after the message that no transfer may touch

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool mentions(const Status& st, const std::string& word) {
  return lower(st.message() + " " + st.fix()).find(word) != std::string::npos;
}

// Blocks until `pred` holds or `limit` passes; a data-driven wait, not a timed guess.
bool waitUntil(const std::function<bool()>& pred, std::chrono::seconds limit) {
  const auto end = steady_clock::now() + limit;
  while (!pred()) {
    if (steady_clock::now() > end) return false;
    std::this_thread::yield();
  }
  return true;
}

// True once the first 8 bytes of `dst` hold the pattern of `seed`: a transfer has landed.
bool landed(Buffer& dst, uint64_t seed) {
  const auto* p = static_cast<const uint64_t*>(dst.data());
  return __atomic_load_n(p, __ATOMIC_RELAXED) == patternWord(seed, 0);
}

RunSpec runSpec(uint64_t size, uint64_t iterations, double timeout_seconds = 60) {
  RunSpec r;
  r.message_size = size;
  r.iterations = iterations;
  r.warmup_iterations = 2;
  r.timeout_seconds = timeout_seconds;
  return r;
}

template <typename F>
auto background(F&& f) {
  return std::async(std::launch::async, std::forward<F>(f));
}

template <typename T>
bool ready(std::future<T>& f) {
  return f.wait_for(prompt()) == std::future_status::ready;
}

template <typename T>
bool ready(std::future<T>& f, std::chrono::seconds limit) {
  return f.wait_for(limit) == std::future_status::ready;
}

// Aborts a pair when a test leaves early, so that futures waiting on it can finish. Declare it
// after the futures: it is destroyed first.
// Disarm it where the pair must stay usable.
struct AbortGuard {
  Pair& pair;
  bool armed = true;
  ~AbortGuard() {
    if (armed) pair.abortBoth();
  }
};

// GPU memory as far as a transport can tell: kind kCuda, backed by host memory in the test.
class FakeGpuBuffer final : public Buffer {
 public:
  explicit FakeGpuBuffer(size_t size) : bytes_(size) {}
  MemoryKind kind() const override { return MemoryKind::kCuda; }
  void* data() override { return bytes_.data(); }
  size_t size() const override { return bytes_.size(); }
  int gpuIndex() const override { return 0; }
  std::string describe() const override { return "gpu:0"; }
  Status fill(uint64_t seed, size_t offset, size_t len) override {
    GDR_RETURN_IF_ERROR(checkRange(size(), offset, len, "fill"));
    fillPattern(seed, offset, bytes_.data() + offset, len);
    return {};
  }
  Result<IntegrityReport> verify(uint64_t seed, size_t offset, size_t len) override {
    GDR_RETURN_IF_ERROR(checkRange(size(), offset, len, "verify"));
    return verifyPattern(seed, offset, bytes_.data() + offset, len);
  }
  Status copyToHost(size_t offset, void* dst, size_t len) override {
    GDR_RETURN_IF_ERROR(checkRange(size(), offset, len, "copyToHost"));
    std::memcpy(dst, bytes_.data() + offset, len);
    return {};
  }
  Status copyFromHost(size_t offset, const void* src, size_t len) override {
    GDR_RETURN_IF_ERROR(checkRange(size(), offset, len, "copyFromHost"));
    std::memcpy(bytes_.data() + offset, src, len);
    return {};
  }

 private:
  std::vector<uint8_t> bytes_;
};

EndpointSpec endpointSpec(const TransportContractParam& param, Role role, Op op, Mode mode,
                          size_t buffer_size) {
  EndpointSpec s;
  s.test_id = "contract";
  s.role = role;
  s.op = op;
  s.mode = mode;
  s.buffer_size = buffer_size;
  if (param.configure) param.configure(s);
  return s;
}

Status makeSide(Transport& transport, const EndpointSpec& spec, uint64_t seed, Side* side) {
  GDR_ASSIGN_OR_RETURN(auto buf, HostBuffer::allocate(spec.buffer_size));
  side->buffer = std::move(buf);
  side->seed = seed;
  GDR_RETURN_IF_ERROR(side->buffer->fill(seed, 0, side->buffer->size()));
  GDR_ASSIGN_OR_RETURN(side->endpoint,
                       transport.createEndpoint(spec, *side->buffer, RegPath::kAuto));
  return {};
}

// The ops that every contract case runs.
constexpr Op kAllOps[] = {Op::kWrite, Op::kRead, Op::kSend, Op::kWriteImm};

template <typename T>
bool contains(const std::vector<T>& codes, T c) {
  return std::find(codes.begin(), codes.end(), c) != codes.end();
}

// Skips (or, where the transport must be viable here, fails) a case when it cannot run.
void requireViable(Transport& transport, const TransportContractParam& param) {
  Status viable = transport.viable();
  if (viable.ok()) return;
  if (param.must_be_viable) {
    GTEST_FAIL() << param.name << " must be viable here: " << viable.toString();
  }
  GTEST_SKIP() << param.name << " not viable: " << viable.toString();
}

#define ASSERT_OK(expr)                                       \
  do {                                                        \
    const ::gdrmesh::Status st_ = (expr);                     \
    ASSERT_TRUE(st_.ok()) << #expr << ": " << st_.toString(); \
  } while (0)

}  // namespace

double scaled(double seconds) {
  const char* env = std::getenv("GDRMESH_TEST_TIME_SCALE");
  const double scale = env ? std::atof(env) : 1.0;
  return seconds * (scale >= 1.0 ? scale : 1.0);
}

std::chrono::seconds prompt() {
  return std::chrono::seconds(static_cast<int64_t>(scaled(10)));
}

void PrintTo(const TransportContractParam& p, std::ostream* os) {
  *os << p.name;
}

std::string contractName(const ::testing::TestParamInfo<TransportContractParam>& info) {
  return info.param.name;
}

std::string transferName(const ::testing::TestParamInfo<TransferParam>& info) {
  const auto& [param, op, size, mode] = info.param;
  return param.name + "_" + toString(op) + "_" + std::to_string(size) + "B_" + toString(mode);
}

Pair::~Pair() {
  abortBoth();
  initiator.endpoint.reset();
  target.endpoint.reset();
}

void Pair::abortBoth() {
  if (initiator.endpoint) initiator.endpoint->abort();
  if (target.endpoint) target.endpoint->abort();
}

Status Pair::create(Transport& transport, const TransportContractParam& param, Op op, Mode mode,
                    size_t initiator_size, size_t target_size) {
  GDR_RETURN_IF_ERROR(makeSide(transport, endpointSpec(param, Role::kTarget, op, mode, target_size),
                               targetSeed(kTestSeed), &target));
  return makeSide(transport, endpointSpec(param, Role::kInitiator, op, mode, initiator_size),
                  initiatorSeed(kTestSeed), &initiator);
}

Status Pair::connect(const std::function<void(EndpointDesc&)>& tamper_target_desc) {
  EndpointDesc target_desc = target.endpoint->local();
  if (tamper_target_desc) tamper_target_desc(target_desc);
  const EndpointDesc initiator_desc = initiator.endpoint->local();
  auto target_connect = background([&] { return target.endpoint->connect(initiator_desc); });
  Status st = initiator.endpoint->connect(target_desc);
  if (!ready(target_connect)) {
    abortBoth();
    target_connect.wait();
    return Status(Code::kDeadlineExceeded, "target connect did not return");
  }
  Status target_st = target_connect.get();
  if (!st.ok()) return st;
  return target_st;
}

void TransportContractTest::SetUp() {
  transport_ = GetParam().make();
  ASSERT_NE(transport_, nullptr);
  requireViable(*transport_, GetParam());
}

void TransportTransferTest::SetUp() {
  transport_ = std::get<0>(GetParam()).make();
  ASSERT_NE(transport_, nullptr);
  requireViable(*transport_, std::get<0>(GetParam()));
}

// --- Data lands exactly where it should, and nowhere else. ---------------------------------

TEST_P(TransportTransferTest, DestinationHoldsTheSourcePatternAndNothingElseChanged) {
  const auto& [param, op, size, mode] = GetParam();
  const uint64_t iterations = size >= (size_t{1} << 20) ? 8 : 64;
  Pair pair;
  const TransportCapabilities caps = transport_->capabilities();
  const std::vector<Op>& ops = mode == Mode::kBandwidth ? caps.bandwidth_ops : caps.latency_ops;
  if (std::find(ops.begin(), ops.end(), op) == ops.end()) {
    // What capabilities() leaves out, createEndpoint refuses: kUnimplemented, never a run.
    Status st = pair.create(*transport_, param, op, mode, size + kGuard, size + kGuard);
    EXPECT_EQ(st.code(), Code::kUnimplemented) << st.toString();
    return;
  }
  ASSERT_OK(pair.create(*transport_, param, op, mode, size + kGuard, size + kGuard));
  ASSERT_OK(pair.connect());

  const RunSpec rs = runSpec(size, iterations);
  auto target_run = background([&] { return pair.target.endpoint->run(rs); });
  AbortGuard guard{pair};
  Result<Measurement> m = pair.initiator.endpoint->run(rs);
  ASSERT_TRUE(m.ok()) << m.status().toString();
  ASSERT_TRUE(ready(target_run)) << "target run did not return after the initiator finished";
  Result<Measurement> tm = target_run.get();
  ASSERT_TRUE(tm.ok()) << tm.status().toString();

  Side& dst = op == Op::kRead ? pair.initiator : pair.target;
  Side& src = op == Op::kRead ? pair.target : pair.initiator;
  ASSERT_NE(src.seed, dst.seed);
  auto landed_report = dst.buffer->verify(src.seed, 0, size);
  ASSERT_TRUE(landed_report.ok()) << landed_report.status().toString();
  EXPECT_TRUE(landed_report->ok()) << "destination: " << landed_report->toString();
  auto beyond = dst.buffer->verify(dst.seed, size, kGuard);
  ASSERT_TRUE(beyond.ok());
  EXPECT_TRUE(beyond->ok()) << "bytes after the message were touched: " << beyond->toString();
  auto source = src.buffer->verify(src.seed, 0, src.buffer->size());
  ASSERT_TRUE(source.ok());
  EXPECT_TRUE(source->ok()) << "the source buffer changed: " << source->toString();

  EXPECT_EQ(m->message_size, size);
  if (mode == Mode::kBandwidth) {
    ASSERT_TRUE(m->has_bandwidth);
    EXPECT_EQ(m->iterations, iterations);
    EXPECT_EQ(m->bw.bytes, size * iterations);
    EXPECT_EQ(m->bw.messages, iterations);
    EXPECT_GT(m->bw.seconds, 0);
    EXPECT_GT(m->bw.avg_gbps, 0);
    EXPECT_GE(m->bw.peak_gbps, m->bw.avg_gbps);
    EXPECT_GT(m->bw.msg_rate_mpps, 0);
    EXPECT_NEAR(m->bw.avg_gbps, static_cast<double>(m->bw.bytes) * 8 / m->bw.seconds / 1e9,
                1e-9 * m->bw.avg_gbps);
  } else {
    ASSERT_TRUE(m->has_latency);
    EXPECT_EQ(m->lat.samples, iterations);
    EXPECT_GT(m->lat.min_us, 0);
    EXPECT_LE(m->lat.min_us, m->lat.median_us);
    EXPECT_LE(m->lat.median_us, m->lat.p99_us);
    EXPECT_LE(m->lat.p99_us, m->lat.p999_us);
    EXPECT_LE(m->lat.p999_us, m->lat.max_us);
    EXPECT_GE(m->lat.mean_us, m->lat.min_us);
    EXPECT_LE(m->lat.mean_us, m->lat.max_us);
  }
  // The target measures nothing of its own.
  EXPECT_FALSE(tm->has_bandwidth);
  EXPECT_FALSE(tm->has_latency);
}

// --- Descriptions and argument checks. -----------------------------------------------------

TEST_P(TransportContractTest, LocalDescriptionNamesTransportAndRegion) {
  Pair pair;
  ASSERT_OK(pair.create(*transport_, GetParam(), Op::kWrite, Mode::kBandwidth, 8192, 12288));
  for (Side* side : {&pair.initiator, &pair.target}) {
    const EndpointDesc& d = side->endpoint->local();
    EXPECT_EQ(d.transport(), transport_->kind());
    EXPECT_EQ(d.length, side->buffer->size());
    EXPECT_EQ(d.memory, MemoryKind::kHost);
    EXPECT_NE(d.reg_path, RegPath::kAuto) << "local().reg_path must hold the path that ran";
    EXPECT_EQ(d.reg_path, RegPath::kHost);
  }
  EXPECT_NE(pair.target.endpoint->local().rkey, 0u);
}

TEST_P(TransportContractTest, MessageSizeOutsideTheLocalBufferIsRejected) {
  Pair pair;
  ASSERT_OK(pair.create(*transport_, GetParam(), Op::kWrite, Mode::kBandwidth, 4096, 4096));
  ASSERT_OK(pair.connect());
  for (uint64_t size : {uint64_t{0}, uint64_t{4097}}) {
    Result<Measurement> m = pair.initiator.endpoint->run(runSpec(size, 4));
    ASSERT_FALSE(m.ok()) << "message size " << size;
    EXPECT_EQ(m.status().code(), Code::kInvalidArgument) << m.status().toString();
  }
}

TEST_P(TransportContractTest, RepeatedRunsOfASweepEachLand) {
  for (Op op : kAllOps) {
    SCOPED_TRACE(toString(op));
    Pair pair;
    ASSERT_OK(pair.create(*transport_, GetParam(), op, Mode::kBandwidth, 65536, 65536));
    ASSERT_OK(pair.connect());
    Side& dst = op == Op::kRead ? pair.initiator : pair.target;
    Side& src = op == Op::kRead ? pair.target : pair.initiator;
    for (uint64_t size : {uint64_t{1}, uint64_t{777}, uint64_t{65536}}) {
      const RunSpec rs = runSpec(size, 16);
      auto target_run = background([&] { return pair.target.endpoint->run(rs); });
      AbortGuard guard{pair};
      Result<Measurement> m = pair.initiator.endpoint->run(rs);
      ASSERT_TRUE(m.ok()) << size << ": " << m.status().toString();
      ASSERT_TRUE(ready(target_run));
      ASSERT_TRUE(target_run.get().ok());
      auto r = dst.buffer->verify(src.seed, 0, size);
      ASSERT_TRUE(r.ok());
      EXPECT_TRUE(r->ok()) << size << ": " << r->toString();
      // Re-poison the destination, as the session does between the runs of a sweep.
      ASSERT_OK(dst.buffer->fill(dst.seed, 0, dst.buffer->size()));
      guard.armed = false;  // the pair runs the next size
    }
  }
}

// --- Remote access errors. -----------------------------------------------------------------

TEST_P(TransportContractTest, WrongKeyFailsNamingTheKey) {
  for (Op op : kAllOps) {
    SCOPED_TRACE(toString(op));
    Pair pair;
    ASSERT_OK(pair.create(*transport_, GetParam(), op, Mode::kBandwidth, 4096, 4096));
    const uint32_t good = pair.target.endpoint->local().rkey;
    Status st = pair.connect([](EndpointDesc& d) { d.rkey ^= 0x5A5A0000u; });
    if (op == Op::kSend && !GetParam().send_checks_key) {
      // A send names no remote region: the key is not used, the message must land.
      ASSERT_OK(st);
      const RunSpec rs = runSpec(64, 4);
      auto target_run = background([&] { return pair.target.endpoint->run(rs); });
      AbortGuard guard{pair};
      Result<Measurement> m = pair.initiator.endpoint->run(rs);
      ASSERT_TRUE(m.ok()) << m.status().toString();
      ASSERT_TRUE(ready(target_run));
      ASSERT_TRUE(target_run.get().ok());
      auto r = pair.target.buffer->verify(pair.initiator.seed, 0, 64);
      ASSERT_TRUE(r.ok());
      EXPECT_TRUE(r->ok()) << r->toString();
      continue;
    }
    if (st.ok()) {
      auto target_run = background([&] { return pair.target.endpoint->run(runSpec(64, 4, 5)); });
      AbortGuard guard{pair};
      auto done = background([&] { return pair.initiator.endpoint->run(runSpec(64, 4)); });
      ASSERT_TRUE(ready(done)) << "a run with a wrong key hangs";
      Result<Measurement> m = done.get();
      ASSERT_FALSE(m.ok()) << "a run with a wrong key succeeded (real key " << good << ")";
      st = m.status();
      target_run.wait();
    }
    EXPECT_TRUE(mentions(st, "key")) << st.toString();
    EXPECT_NE(st.code(), Code::kInternal) << st.toString();
  }
}

TEST_P(TransportContractTest, AccessBeyondTheRemoteRegionFailsCleanly) {
  // The target's region is smaller than the message: every op must fail, promptly, naming the
  // range, whether the transport batches its posts or not. A transport that checks the peer's
  // published length first refuses the run instead, naming the peer's size.
  for (Op op : kAllOps) {
    for (uint64_t warmup : {uint64_t{0}, uint64_t{2}}) {
      SCOPED_TRACE(std::string(toString(op)) + " warmup " + std::to_string(warmup));
      Pair pair;
      ASSERT_OK(pair.create(*transport_, GetParam(), op, Mode::kBandwidth, 65536, 4096));
      Status st = pair.connect();
      if (st.ok()) {
        RunSpec rs = runSpec(8192, 200, 20);
        rs.warmup_iterations = warmup;
        RunSpec target_rs = runSpec(4096, 200, 2);
        target_rs.warmup_iterations = warmup;
        auto target_run = background([&] { return pair.target.endpoint->run(target_rs); });
        AbortGuard guard{pair};
        auto done = background([&] { return pair.initiator.endpoint->run(rs); });
        ASSERT_TRUE(ready(done)) << "an out-of-range run hangs";
        Result<Measurement> m = done.get();
        ASSERT_FALSE(m.ok()) << "writing 8192 B into a 4096 B region succeeded";
        st = m.status();
        pair.target.endpoint->abort();
        target_run.wait();
      }
      if (GetParam().checks_peer_length_locally) {
        EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.toString();
        EXPECT_TRUE(mentions(st, "4096")) << st.toString();
      } else {
        EXPECT_TRUE(mentions(st, "range")) << st.toString();
      }
      EXPECT_NE(st.code(), Code::kInternal) << st.toString();
    }
  }
}

TEST_P(TransportContractTest, AccessBeyondTheRegisteredRegionFailsAtThePeer) {
  // The target's description claims more than it registered (4096 B): the local checks pass
  // and the access itself must fail, promptly, at the peer. RDMA accesses (write, read,
  // write_imm) name the range; a send longer than the posted receive may instead be reported
  // as that ("receive buffer"), which is what verbs' completion says.
  for (Op op : kAllOps) {
    SCOPED_TRACE(toString(op));
    Pair pair;
    ASSERT_OK(pair.create(*transport_, GetParam(), op, Mode::kBandwidth, 65536, 4096));
    ASSERT_OK(pair.connect([](EndpointDesc& d) { d.length = 65536; }));
    const RunSpec rs = runSpec(8192, 200, 20);
    RunSpec target_rs = runSpec(4096, 200, 2);
    auto target_run = background([&] { return pair.target.endpoint->run(target_rs); });
    AbortGuard guard{pair};
    auto done = background([&] { return pair.initiator.endpoint->run(rs); });
    ASSERT_TRUE(ready(done)) << "an access beyond the registered region hangs";
    Result<Measurement> m = done.get();
    ASSERT_FALSE(m.ok()) << "8192 B into a 4096 B region succeeded";
    const Status& st = m.status();
    EXPECT_NE(st.code(), Code::kInternal) << st.toString();
    if (op == Op::kSend) {
      EXPECT_TRUE(mentions(st, "range") || mentions(st, "receive buffer")) << st.toString();
    } else {
      EXPECT_TRUE(mentions(st, "range")) << st.toString();
    }
    pair.target.endpoint->abort();
    ASSERT_TRUE(ready(target_run));
    auto target_done = target_run.get();
    EXPECT_NE(target_done.status().code(), Code::kInternal) << target_done.status().toString();
  }
}

// --- Memory deregistered while the connection stays up (fault_injection.h). ----------------

TEST_P(TransportContractTest, DeregisteredTargetMemoryFailsTheInitiatorNamingTheKey) {
  // Before the run (the session's invalidate_remote_key option) and while data flows: the
  // initiator's next access fails promptly with a remote access error, never kInternal.
  for (bool mid_run : {false, true}) {
    for (Op op : {Op::kWrite, Op::kRead, Op::kWriteImm}) {
      if (op == Op::kWriteImm && mid_run) continue;  // its receives use the deregistered MR
      SCOPED_TRACE(std::string(toString(op)) + (mid_run ? " mid-run" : " before the run"));
      Pair pair;
      const size_t size = size_t{1} << 20;
      ASSERT_OK(pair.create(*transport_, GetParam(), op, Mode::kBandwidth, size, size));
      ASSERT_OK(pair.connect());
      FaultInjectable* faults = faultInjection(*pair.target.endpoint);
      if (faults == nullptr) GTEST_SKIP() << GetParam().name << " offers no fault injection";
      if (!mid_run) ASSERT_OK(faults->invalidateRemoteAccess());
      const RunSpec rs = runSpec(size, 1000000, 30);
      auto run = background([&] { return pair.initiator.endpoint->run(rs); });
      AbortGuard guard{pair};
      if (mid_run) {
        Side& dst = op == Op::kRead ? pair.initiator : pair.target;
        Side& src = op == Op::kRead ? pair.target : pair.initiator;
        ASSERT_TRUE(waitUntil([&] { return landed(*dst.buffer, src.seed); }, prompt()))
            << "no transfer landed";
        ASSERT_OK(faults->invalidateRemoteAccess());
      }
      ASSERT_TRUE(ready(run)) << "the initiator kept running against deregistered memory";
      Result<Measurement> m = run.get();
      ASSERT_FALSE(m.ok()) << "a run against deregistered memory succeeded";
      EXPECT_NE(m.status().code(), Code::kInternal) << m.status().toString();
      EXPECT_TRUE(mentions(m.status(), "key")) << m.status().toString();
    }
  }
}

// --- Abort, peers that go away, deadlines. --------------------------------------------------

TEST_P(TransportContractTest, AbortFromAnotherThreadEndsALongRunWithAborted) {
  Pair pair;
  const size_t size = size_t{1} << 20;
  ASSERT_OK(pair.create(*transport_, GetParam(), Op::kWrite, Mode::kBandwidth, size, size));
  ASSERT_OK(pair.connect());
  // A million 1 MiB writes: minutes of work; the deadline bounds the test if abort fails.
  const RunSpec rs = runSpec(size, 1000000, 30);
  auto target_run = background([&] { return pair.target.endpoint->run(rs); });
  auto run = background([&] { return pair.initiator.endpoint->run(rs); });
  AbortGuard guard{pair};
  ASSERT_TRUE(waitUntil([&] { return landed(*pair.target.buffer, pair.initiator.seed); }, prompt()))
      << "no write landed";
  ASSERT_NE(run.wait_for(std::chrono::seconds(0)), std::future_status::ready)
      << "the run ended early: " << run.get().status().toString();
  const auto t0 = steady_clock::now();
  pair.initiator.endpoint->abort();
  ASSERT_TRUE(ready(run)) << "run() did not return after abort()";
  const double secs = std::chrono::duration<double>(steady_clock::now() - t0).count();
  Result<Measurement> m = run.get();
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kAborted) << m.status().toString();
  EXPECT_LT(secs, scaled(5.0));
}

TEST_P(TransportContractTest, AbortEndsATargetWaitingForSends) {
  Pair pair;
  ASSERT_OK(pair.create(*transport_, GetParam(), Op::kSend, Mode::kBandwidth, 4096, 4096));
  ASSERT_OK(pair.connect());
  auto target_run = background([&] { return pair.target.endpoint->run(runSpec(64, 1000, 30)); });
  AbortGuard guard{pair};
  // No initiator run: the target waits for sends that never come, until aborted.
  ASSERT_EQ(target_run.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  pair.target.endpoint->abort();
  ASSERT_TRUE(ready(target_run)) << "target run() did not return after abort()";
  Result<Measurement> m = target_run.get();
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kAborted) << m.status().toString();
}

TEST_P(TransportContractTest, DestroyingTheTargetMidRunFailsTheInitiatorWithUnavailable) {
  for (Op op : {Op::kWrite, Op::kRead}) {
    SCOPED_TRACE(toString(op));
    Pair pair;
    const size_t size = size_t{1} << 20;
    ASSERT_OK(pair.create(*transport_, GetParam(), op, Mode::kBandwidth, size, size));
    ASSERT_OK(pair.connect());
    // At its deadline where the transport allows that outcome: a short one.
    const bool at_deadline = contains(GetParam().peer_destroyed_codes, Code::kDeadlineExceeded);
    const RunSpec rs = runSpec(size, 1000000, at_deadline ? scaled(5) : 30);
    auto run = background([&] { return pair.initiator.endpoint->run(rs); });
    AbortGuard guard{pair};
    Side& dst = op == Op::kRead ? pair.initiator : pair.target;
    Side& src = op == Op::kRead ? pair.target : pair.initiator;
    ASSERT_TRUE(waitUntil([&] { return landed(*dst.buffer, src.seed); }, prompt()))
        << "no transfer landed";
    // The target worker goes away: its endpoint is destroyed, promptly, while data flows.
    auto destroy = background([&] { pair.target.endpoint.reset(); });
    ASSERT_TRUE(ready(destroy)) << "destroying the target endpoint mid-run hangs";
    ASSERT_TRUE(
        ready(run, prompt() + std::chrono::seconds(static_cast<int64_t>(rs.timeout_seconds))))
        << "the initiator did not notice that its peer went away";
    Result<Measurement> m = run.get();
    ASSERT_FALSE(m.ok());
    EXPECT_TRUE(contains(GetParam().peer_destroyed_codes, m.status().code()))
        << m.status().toString();
    auto destroy_initiator = background([&] { pair.initiator.endpoint.reset(); });
    EXPECT_TRUE(ready(destroy_initiator)) << "destroying the initiator after a failed run hangs";
  }
}

TEST_P(TransportContractTest, InitiatorGoingAwayEndsTheTargetsRunPromptly) {
  Pair pair;
  ASSERT_OK(pair.create(*transport_, GetParam(), Op::kSend, Mode::kBandwidth, 65536, 65536));
  ASSERT_OK(pair.connect());
  // The target expects a million sends; the initiator's worker dies after the first ones.
  const bool promptly = GetParam().target_sees_initiator_loss_promptly;
  const RunSpec rs = runSpec(65536, 1000000, promptly ? 20 : scaled(3));
  auto target_run = background([&] { return pair.target.endpoint->run(rs); });
  auto run = background([&] { return pair.initiator.endpoint->run(rs); });
  AbortGuard guard{pair};
  ASSERT_TRUE(waitUntil([&] { return landed(*pair.target.buffer, pair.initiator.seed); }, prompt()))
      << "no send landed";
  pair.initiator.endpoint->abort();
  ASSERT_TRUE(ready(run));
  (void)run.get();
  auto destroy = background([&] { pair.initiator.endpoint.reset(); });
  ASSERT_TRUE(ready(destroy)) << "destroying the initiator endpoint hangs";
  if (promptly) {
    ASSERT_TRUE(ready(target_run))
        << "the target's run() kept waiting for a peer that is gone (until its deadline)";
  } else {
    // No notice reaches the target: its deadline ends the run, no later.
    ASSERT_TRUE(ready(target_run, prompt() + std::chrono::seconds(4)))
        << "the target's run() outlived its deadline";
  }
  Result<Measurement> m = target_run.get();
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), promptly ? Code::kUnavailable : Code::kDeadlineExceeded)
      << m.status().toString();
}

// --- The end signal (RunSpec::end_signal): the initiator tells the target it is done. ------

TEST_P(TransportContractTest, EndSignalEndsTheTargetsRunOnlyAfterTheInitiatorsRun) {
  const TransportCapabilities caps = transport_->capabilities();
  ASSERT_TRUE(caps.end_signal) << GetParam().name << " does not signal the end of a run";
  struct Case {
    Op op;
    Mode mode;
    uint64_t size;
  };
  const std::vector<Case> cases = {
      {Op::kWrite, Mode::kBandwidth, 65536}, {Op::kRead, Mode::kBandwidth, 65536},
      {Op::kSend, Mode::kBandwidth, 4096},   {Op::kWriteImm, Mode::kBandwidth, 4096},
      {Op::kWrite, Mode::kLatency, 2},       {Op::kSend, Mode::kLatency, 2},
      {Op::kRead, Mode::kLatency, 2}};
  for (const Case& c : cases) {
    const auto& ops = c.mode == Mode::kBandwidth ? caps.bandwidth_ops : caps.latency_ops;
    if (!contains(ops, c.op)) continue;
    SCOPED_TRACE(std::string(toString(c.op)) + " " + toString(c.mode));
    Pair pair;
    ASSERT_OK(pair.create(*transport_, GetParam(), c.op, c.mode, 65536, 65536));
    ASSERT_OK(pair.connect());
    RunSpec rs = runSpec(c.size, 200, 30);
    rs.end_signal = true;
    auto target_run = background([&] { return pair.target.endpoint->run(rs); });
    AbortGuard guard{pair};
    // Whatever its share, the target's run lasts until the initiator says it is done: a
    // write/read target that returned now would let its worker release memory in use.
    ASSERT_EQ(target_run.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
        << "the target's run ended before the initiator ran";
    Result<Measurement> m = pair.initiator.endpoint->run(rs);
    ASSERT_TRUE(m.ok()) << m.status().toString();
    EXPECT_TRUE(m->has_bandwidth || m->has_latency);
    ASSERT_TRUE(ready(target_run)) << "the end signal did not end the target's run";
    Result<Measurement> t = target_run.get();
    ASSERT_TRUE(t.ok()) << t.status().toString();
    if (c.mode == Mode::kBandwidth) {  // (a 2-byte ping leaves the first word as it was)
      Side& dst = c.op == Op::kRead ? pair.initiator : pair.target;
      Side& src = c.op == Op::kRead ? pair.target : pair.initiator;
      EXPECT_TRUE(landed(*dst.buffer, src.seed)) << "the data did not land";
    }
  }
}

TEST_P(TransportContractTest, AbortEndsATargetWaitingForTheEndSignal) {
  Pair pair;
  ASSERT_OK(pair.create(*transport_, GetParam(), Op::kWrite, Mode::kBandwidth, 4096, 4096));
  ASSERT_OK(pair.connect());
  RunSpec rs = runSpec(64, 10, 30);
  rs.end_signal = true;
  auto target_run = background([&] { return pair.target.endpoint->run(rs); });
  AbortGuard guard{pair};
  // No initiator run: nothing ends the target's wait but abort() (a release, a lost peer).
  ASSERT_EQ(target_run.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  pair.target.endpoint->abort();
  ASSERT_TRUE(ready(target_run)) << "target run() did not return after abort()";
  Result<Measurement> m = target_run.get();
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kAborted) << m.status().toString();
}

TEST_P(TransportContractTest, TargetWaitingForTheEndSignalTimesOut) {
  Pair pair;
  ASSERT_OK(pair.create(*transport_, GetParam(), Op::kWrite, Mode::kBandwidth, 4096, 4096));
  ASSERT_OK(pair.connect());
  RunSpec rs = runSpec(64, 10, 0.5);
  rs.end_signal = true;
  const auto t0 = steady_clock::now();
  auto target_run = background([&] { return pair.target.endpoint->run(rs); });
  AbortGuard guard{pair};
  ASSERT_TRUE(ready(target_run)) << "timeout_seconds was not honoured while waiting for the end";
  const double secs = std::chrono::duration<double>(steady_clock::now() - t0).count();
  Result<Measurement> m = target_run.get();
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kDeadlineExceeded) << m.status().toString();
  EXPECT_NE(m.status().message().find("end"), std::string::npos) << m.status().toString();
  EXPECT_GE(secs, 0.45) << "gave up before the timeout";
  EXPECT_LT(secs, scaled(5.0));
}

TEST_P(TransportContractTest, TargetWaitingForAPeerThatNeverConnectsTimesOut) {
  Pair pair;
  ASSERT_OK(pair.create(*transport_, GetParam(), Op::kSend, Mode::kBandwidth, 4096, 4096));
  // The target is told about the initiator, but the initiator never connects or runs.
  auto connected =
      background([&] { return pair.target.endpoint->connect(pair.initiator.endpoint->local()); });
  AbortGuard guard{pair};
  ASSERT_TRUE(ready(connected));
  ASSERT_OK(connected.get());
  const auto t0 = steady_clock::now();
  auto target_run = background([&] { return pair.target.endpoint->run(runSpec(64, 10, 0.5)); });
  ASSERT_TRUE(ready(target_run)) << "timeout_seconds was not honoured";
  const double secs = std::chrono::duration<double>(steady_clock::now() - t0).count();
  Result<Measurement> m = target_run.get();
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kDeadlineExceeded) << m.status().toString();
  EXPECT_GE(secs, 0.45) << "gave up before the timeout";
  EXPECT_LT(secs, scaled(5.0));
}

// --- Memory the transport cannot move. -----------------------------------------------------

TEST_P(TransportContractTest, GpuBuffersAreRefusedNamingTheStagedPath) {
  if (!GetParam().host_memory_only) GTEST_SKIP() << GetParam().name << " moves GPU memory";
  FakeGpuBuffer gpu(65536);
  for (RegPath reg : {RegPath::kAuto, RegPath::kDmabuf, RegPath::kPeermem, RegPath::kHost}) {
    for (Role role : {Role::kInitiator, Role::kTarget}) {
      SCOPED_TRACE(std::string(toString(reg)) + " " + toString(role));
      auto ep = transport_->createEndpoint(
          endpointSpec(GetParam(), role, Op::kWrite, Mode::kBandwidth, gpu.size()), gpu, reg);
      ASSERT_FALSE(ep.ok()) << "GPU memory accepted by a host-only transport";
      EXPECT_NE(ep.status().code(), Code::kInternal);
      if (reg == RegPath::kAuto) {
        EXPECT_NE((ep.status().message() + ep.status().fix()).find("staged"), std::string::npos)
            << ep.status().toString();
      }
    }
  }
}

}  // namespace gdrmesh::contract
