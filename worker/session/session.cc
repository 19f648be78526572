#include "worker/session/session.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <system_error>
#include <thread>
#include <vector>

#include "common/pair_spec.h"
#include "common/pattern.h"
#include "common/sync/mutex.h"
#include "worker/transport/fault_injection.h"

namespace gdrmesh {
namespace {

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The side whose buffer is the source of the data for `op`.
bool isSource(Op op, Role role) {
  return op == Op::kRead ? role == Role::kTarget : role == Role::kInitiator;
}

// Copies [0, len) from one buffer to the other (the staged path's host <-> GPU copies). A host
// buffer on either side is copied directly; only GPU-to-GPU would need a bounce chunk.
Status copyBetween(Buffer& from, Buffer& to, size_t len) {
  if (to.kind() == MemoryKind::kHost) return from.copyToHost(0, to.data(), len);
  if (from.kind() == MemoryKind::kHost) return to.copyFromHost(0, from.data(), len);
  std::vector<uint8_t> chunk(std::min<size_t>(len, 64 << 20));
  for (size_t off = 0; off < len; off += chunk.size()) {
    const size_t n = std::min(chunk.size(), len - off);
    GDR_RETURN_IF_ERROR(from.copyToHost(off, chunk.data(), n));
    GDR_RETURN_IF_ERROR(to.copyFromHost(off, chunk.data(), n));
  }
  return {};
}

bool sealed(const SessionSpec& s) {
  return s.fill_seed != 0;
}

uint64_t ownSeed(const SessionSpec& s) {
  if (sealed(s)) return s.fill_seed;
  return s.endpoint.role == Role::kInitiator ? initiatorSeed(s.seed) : targetSeed(s.seed);
}

// What the destination must hold after the run: the source side's pattern. 0 in a sealed test
// whose seed is withheld (the destination reports a digest instead).
uint64_t expectedSeed(const SessionSpec& s) {
  if (sealed(s)) return s.expect_seed;
  return s.endpoint.role == Role::kInitiator ? targetSeed(s.seed) : initiatorSeed(s.seed);
}

}  // namespace

struct SessionManager::Session {
  SessionSpec spec;
  std::unique_ptr<Buffer> buffer;  // where the test data lives (host or GPU)
  std::unique_ptr<Buffer> mirror;  // staged path: the host memory the transport moves
  std::unique_ptr<Endpoint> endpoint;
  double source_staging_seconds = 0;
  uint32_t path_mtu = 0;
  // Sealed test: verify() reported a digest; the buffer is kept for a reveal after release.
  bool digested = false;
  std::atomic<bool> connected{false};

  // The armed run (lean protocol): a thread owned by this session. It holds no reference to
  // the session; whoever stops the session (or destroys it) joins it.
  Mutex arm_mu;  // guards the fields below
  std::condition_variable arm_cv;
  std::thread armed;
  bool is_armed ABSL_GUARDED_BY(arm_mu) = false;
  bool stopped ABSL_GUARDED_BY(arm_mu) = false;
  bool armed_done ABSL_GUARDED_BY(arm_mu) = false;
  Result<Measurement> armed_result ABSL_GUARDED_BY(arm_mu){
      Status(Code::kInternal, "armed run has not ended")};

  ~Session() {
    if (armed.joinable()) {
      endpoint->abort();
      armed.join();
    }
  }

  Buffer& wire() { return mirror ? *mirror : *buffer; }

  Result<uint32_t> connect(const EndpointDesc& peer) {
    GDR_RETURN_IF_ERROR(endpoint->connect(peer));
    if (spec.invalidate_remote_key && spec.endpoint.role == Role::kTarget) {
      FaultInjectable* faults = faultInjection(*endpoint);
      if (!faults)
        return unimplemented("remote-key invalidation is not supported by this transport");
      GDR_RETURN_IF_ERROR(faults->invalidateRemoteAccess());
    }
    if (mirror && isSource(spec.endpoint.op, spec.endpoint.role)) {
      // Source side of the staged path: GPU -> host mirror before anything is sent.
      auto t0 = std::chrono::steady_clock::now();
      GDR_RETURN_IF_ERROR(copyBetween(*buffer, *mirror, buffer->size()));
      source_staging_seconds = secondsSince(t0);
    }
    path_mtu = endpoint->pathMtu();
    connected.store(true);
    return path_mtu;
  }

  Result<Measurement> run(const RunSpec& rs) {
    GDR_ASSIGN_OR_RETURN(Measurement m, endpoint->run(rs));
    m.staging_seconds = source_staging_seconds;
    return m;
  }

  Result<VerifyOutcome> verify(uint64_t length) {
    const std::string& id = spec.endpoint.test_id;
    if (length == 0 || length > buffer->size()) {
      return invalidArgument("test " + id + ": verify length " + std::to_string(length) +
                             ": must be in 1.." + std::to_string(buffer->size()));
    }
    VerifyOutcome out;
    if (mirror) {
      // Destination side of the staged path: host mirror -> GPU, timed.
      auto t0 = std::chrono::steady_clock::now();
      GDR_RETURN_IF_ERROR(copyBetween(*mirror, *buffer, length));
      out.staging_seconds = secondsSince(t0);
    }
    if (spec.corrupt_bytes > 0) {
      // Fault injection (tests only): flip bytes spread over the landed range.
      uint64_t n = std::min<uint64_t>(spec.corrupt_bytes, length);
      for (uint64_t i = 0; i < n; ++i) {
        size_t off = static_cast<size_t>(i * (length / n));
        uint8_t b = 0;
        GDR_RETURN_IF_ERROR(buffer->copyToHost(off, &b, 1));
        b = static_cast<uint8_t>(~b);
        GDR_RETURN_IF_ERROR(buffer->copyFromHost(off, &b, 1));
      }
    }
    const uint64_t expected = expectedSeed(spec);
    if (expected == 0) {
      // Sealed test: what landed is digested before this side can know what should have
      // landed; the buffer stays as it is for a reveal (SessionManager::reveal).
      GDR_ASSIGN_OR_RETURN(out.integrity.digest, buffer->digest(length));
      out.integrity.digested = true;
      out.integrity.bytes_checked = length;
      out.integrity.where = buffer->describe();
      digested = true;
      return out;
    }
    GDR_ASSIGN_OR_RETURN(out.integrity, buffer->verify(expected, 0, length));
    // Re-poison the destination so that the next run of a sweep is checked afresh.
    const uint64_t seed = ownSeed(spec);
    GDR_RETURN_IF_ERROR(buffer->fill(seed, 0, length));
    if (mirror) GDR_RETURN_IF_ERROR(mirror->fill(seed, 0, length));
    return out;
  }
};

Result<std::unique_ptr<Buffer>> HostMemoryProvider::allocate(MemoryKind kind, int gpu, size_t size,
                                                             int numa_node) {
  if (kind == MemoryKind::kCuda) {
    return failedPrecondition(
        "GPU memory requested (gpu " + std::to_string(gpu) + ") but this worker has no CUDA driver",
        "run the test on a worker with GPUs, or use --memory host");
  }
  GDR_ASSIGN_OR_RETURN(auto b, HostBuffer::allocate(size, numa_node));
  return std::unique_ptr<Buffer>(std::move(b));
}

SessionManager::SessionManager(MemoryProvider& memory, Options options)
    : memory_(memory), options_(options) {}

SessionManager::~SessionManager() {
  abortAll();
}

void SessionManager::addTransport(std::unique_ptr<Transport> transport) {
  auto kind = transport->kind();
  transports_[kind] = std::move(transport);
}

std::vector<TransportKind> SessionManager::viableTransports(std::vector<std::string>* notes) const {
  std::vector<TransportKind> out;
  for (const auto& [kind, t] : transports_) {
    Status st = t->viable();
    if (st.ok()) {
      out.push_back(kind);
    } else if (notes != nullptr) {
      notes->push_back(std::string(toString(kind)) + ": " + st.toString());
    }
  }
  return out;
}

std::vector<TransportCapabilities> SessionManager::capabilities(
    const std::vector<TransportKind>& kinds) const {
  std::vector<TransportCapabilities> out;
  for (TransportKind k : kinds) {
    auto it = transports_.find(k);
    if (it != transports_.end()) out.push_back(it->second->capabilities());
  }
  return out;
}

Result<PreparedEndpoint> SessionManager::prepareOnly(const SessionSpec& spec) {
  const std::string& id = spec.endpoint.test_id;
  if (id.empty()) return invalidArgument("test_id: empty");
  if (spec.endpoint.buffer_size == 0) return invalidArgument("buffer_size: must be > 0");
  {
    // Reserve the id (an empty slot) so that concurrent prepares of one id, or beyond the
    // session limit, cannot both win.
    MutexLock lock(mu_);
    if (sessions_.count(id) != 0) return invalidArgument("test " + id + ": already prepared");
    if (sessions_.size() >= options_.max_sessions) {
      return Status(Code::kResourceExhausted,
                    "worker has " + std::to_string(sessions_.size()) + " tests in progress",
                    "wait for running tests to finish");
    }
    sessions_[id] = nullptr;
  }
  auto result = prepareReserved(spec);
  MutexLock lock(mu_);
  auto it = sessions_.find(id);
  if (!result.ok()) {
    if (it != sessions_.end() && it->second == nullptr) sessions_.erase(it);
    return result.status();
  }
  if (it == sessions_.end()) {
    // Released (abortAll) while being prepared.
    return Status(Code::kAborted, "test " + id + ": released while being prepared");
  }
  it->second = std::move(result->first);
  return std::move(result->second);
}

Result<PreparedEndpoint> SessionManager::prepare(const SessionSpec& spec,
                                                 const PrepareExtras& extras) {
  const std::string& id = spec.endpoint.test_id;
  GDR_RETURN_IF_ERROR(validateSideSpec(spec, PairTestLimits{}).withContext("prepare"));
  if (extras.arm) {
    GDR_RETURN_IF_ERROR(validateRunSpec(*extras.arm, PairTestLimits{}).withContext("prepare: arm"));
  }
  if (extras.arm && !extras.peer) {
    return invalidArgument("test " + id + ": prepare with `arm` needs `peer`",
                           "send the peer's endpoint with the run to arm");
  }
  GDR_ASSIGN_OR_RETURN(PreparedEndpoint prepared, prepareOnly(spec));
  if (extras.peer) {
    auto mtu = connect(id, *extras.peer);
    if (!mtu.ok()) {
      release(id);
      return mtu.status().withContext("test " + id + ": connect to the peer");
    }
  }
  if (extras.arm) {
    Status st = arm(id, *extras.arm);
    if (!st.ok()) {
      release(id);
      return st;
    }
  }
  return prepared;
}

Result<std::pair<std::shared_ptr<SessionManager::Session>, PreparedEndpoint>>
SessionManager::prepareReserved(const SessionSpec& spec) {
  if ((spec.corrupt_bytes > 0 || spec.invalidate_remote_key) && !options_.allow_fault_injection) {
    return Status(Code::kPermissionDenied, "fault injection requested but not allowed",
                  "start the worker with --allow-fault-injection (tests only)");
  }
  auto it = transports_.find(spec.transport);
  if (it == transports_.end()) {
    return unimplemented(std::string("transport '") + toString(spec.transport) +
                         "' is not built into this worker");
  }
  Transport& transport = *it->second;
  GDR_RETURN_IF_ERROR(
      transport.viable().withContext(std::string("transport ") + toString(spec.transport)));

  auto s = std::make_shared<Session>();
  s->spec = spec;
  GDR_ASSIGN_OR_RETURN(s->buffer, memory_.allocate(spec.memory, spec.gpu, spec.endpoint.buffer_size,
                                                   spec.numa_node));
  const uint64_t seed = ownSeed(spec);
  GDR_RETURN_IF_ERROR(s->buffer->fill(seed, 0, s->buffer->size()));
  // The one registration-path rule (common/pair_spec.h), for a request that did not come
  // through the coordinator's checks.
  GDR_ASSIGN_OR_RETURN(const RegPath reg, resolveRegPath(spec.memory, spec.reg, "reg_path"));
  if (reg == RegPath::kStaged) {
    // Staged: the NIC (or the emulated transport) works on a host mirror; copies to and from
    // the GPU are timed and reported. Never GPUDirect.
    GDR_ASSIGN_OR_RETURN(s->mirror, memory_.allocate(MemoryKind::kHost, -1,
                                                     spec.endpoint.buffer_size, spec.numa_node));
    GDR_RETURN_IF_ERROR(s->mirror->fill(seed, 0, s->mirror->size()));
  }
  RegPath wire_reg = s->mirror ? RegPath::kHost : reg;
  GDR_ASSIGN_OR_RETURN(s->endpoint, transport.createEndpoint(spec.endpoint, s->wire(), wire_reg));

  PreparedEndpoint out;
  out.desc = s->endpoint->local();
  out.reg_path = s->mirror ? RegPath::kStaged : out.desc.reg_path;
  out.desc.reg_path = out.reg_path;
  out.desc.memory = spec.memory;
  out.buffer = s->buffer->describe();
  return std::make_pair(std::move(s), std::move(out));
}

std::shared_ptr<SessionManager::Session> SessionManager::find(const std::string& test_id) const {
  MutexLock lock(mu_);
  auto it = sessions_.find(test_id);
  return it == sessions_.end() ? nullptr : it->second;  // null also for a reserved slot
}

Result<uint32_t> SessionManager::connect(const std::string& test_id, const EndpointDesc& peer) {
  auto s = find(test_id);
  if (!s) return notFound("test " + test_id + ": not prepared on this worker (released?)");
  return s->connect(peer);
}

Result<Measurement> SessionManager::run(const std::string& test_id, const RunSpec& spec) {
  GDR_RETURN_IF_ERROR(validateRunSpec(spec, PairTestLimits{}).withContext("run"));
  auto s = find(test_id);
  if (!s) return notFound("test " + test_id + ": not prepared on this worker (released?)");
  {
    MutexLock lock(s->arm_mu);
    if (s->is_armed) {
      return failedPrecondition("test " + test_id + ": armed; its run is collected by finish",
                                "send finish, not run, to an armed target");
    }
  }
  return s->run(spec);
}

Result<VerifyOutcome> SessionManager::verify(const std::string& test_id, uint64_t length,
                                             uint64_t reveal_seed) {
  auto s = find(test_id);
  if (reveal_seed != 0) {
    VerifyOutcome out;
    if (!s) {
      GDR_ASSIGN_OR_RETURN(out.integrity, reveal(test_id, reveal_seed));
      return out;
    }
    // Classic protocol: the session is still open after its digest.
    if (!s->digested) {
      return failedPrecondition("test " + test_id + ": seed revealed before a digest",
                                "verify (digest) first, then reveal");
    }
    if (length == 0 || length > s->buffer->size()) {
      return invalidArgument("test " + test_id + ": verify length " + std::to_string(length) +
                             ": must be in 1.." + std::to_string(s->buffer->size()));
    }
    GDR_ASSIGN_OR_RETURN(out.integrity, s->buffer->verify(reveal_seed, 0, length));
    return out;
  }
  if (!s) return notFound("test " + test_id + ": not prepared on this worker (released?)");
  return s->verify(length);
}

Status SessionManager::arm(const std::string& test_id, const RunSpec& spec) {
  GDR_RETURN_IF_ERROR(validateRunSpec(spec, PairTestLimits{}).withContext("arm"));
  auto s = find(test_id);
  if (!s) return notFound("test " + test_id + ": not prepared on this worker (released?)");
  if (!s->connected.load()) {
    return failedPrecondition("test " + test_id + ": armed before it was connected",
                              "prepare the target with `peer` as well as `arm`");
  }
  MutexLock lock(s->arm_mu);
  if (s->stopped) return Status(Code::kAborted, "test " + test_id + ": released while arming");
  if (s->is_armed) return invalidArgument("test " + test_id + ": already armed");
  Session* raw = s.get();  // the thread never outlives the session: stop() and ~Session join
  try {
    s->armed = std::thread([raw, spec] {
      Result<Measurement> r = raw->run(spec);
      MutexLock done_lock(raw->arm_mu);
      raw->armed_result = std::move(r);
      raw->armed_done = true;
      raw->arm_cv.notify_all();
    });
  } catch (const std::system_error& e) {
    return Status(Code::kResourceExhausted,
                  "test " + test_id + ": cannot start the armed run: " + e.what(),
                  "the worker is out of threads; lower the number of concurrent tests");
  }
  s->is_armed = true;
  return {};
}

Result<SideOutcome> SessionManager::finish(const std::string& test_id, const FinishSpec& spec) {
  auto s = find(test_id);
  if (!s) return notFound("test " + test_id + ": not prepared on this worker (released?)");
  auto result = [&]() -> Result<SideOutcome> {
    if (!(spec.timeout_seconds >= 0 && spec.timeout_seconds <= PairTestLimits{}.max_seconds)) {
      return invalidArgument("finish: timeout_seconds: must be in 0..86400");
    }
    Result<Measurement> m = Status(Code::kInternal, "unset");
    {
      UniqueLock lock(s->arm_mu);
      if (!s->is_armed) {
        return failedPrecondition("test " + test_id + ": finish without an armed run",
                                  "prepare the target with `peer` and `arm`");
      }
      const auto deadline = std::chrono::steady_clock::now() +
                            std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                std::chrono::duration<double>(std::max(0.0, spec.timeout_seconds)));
      if (!s->arm_cv.wait_until(
              lock.native(), deadline,
              [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->arm_mu) { return s->armed_done; })) {
        return Status(Code::kDeadlineExceeded,
                      "test " + test_id + ": the armed run did not end within " +
                          std::to_string(spec.timeout_seconds) + " s; aborted",
                      "check that the initiator started its run (its worker's log)");
      }
      m = s->armed_result;
    }
    if (!m.ok()) return m.status().withContext("test " + test_id + ": armed run");
    SideOutcome out;
    out.has_measurement = m->has_bandwidth || m->has_latency;
    out.measurement = *m;
    out.staging_seconds = s->source_staging_seconds;
    out.path_mtu = s->path_mtu;
    if (spec.verify) {
      GDR_ASSIGN_OR_RETURN(VerifyOutcome v, s->verify(spec.verify_length));
      out.verified = true;
      out.integrity = v.integrity;
      out.staging_seconds += v.staging_seconds;
    }
    return out;
  }();
  drop(test_id, s);
  park(test_id, *s, result);
  return result;
}

Result<SideOutcome> SessionManager::start(const std::string& test_id, const StartSpec& spec) {
  auto s = find(test_id);
  if (!s) return notFound("test " + test_id + ": not prepared on this worker (released?)");
  auto result = [&]() -> Result<SideOutcome> {
    GDR_RETURN_IF_ERROR(validateRunSpec(spec.run, PairTestLimits{}).withContext("start"));
    SideOutcome out;
    GDR_ASSIGN_OR_RETURN(out.path_mtu, s->connect(spec.peer));
    GDR_ASSIGN_OR_RETURN(out.measurement, s->run(spec.run));
    out.has_measurement = true;
    out.staging_seconds = s->source_staging_seconds;
    if (spec.verify) {
      GDR_ASSIGN_OR_RETURN(VerifyOutcome v, s->verify(spec.verify_length));
      out.verified = true;
      out.integrity = v.integrity;
      out.staging_seconds += v.staging_seconds;
    }
    return out;
  }();
  drop(test_id, s);
  park(test_id, *s, result);
  return result;
}

void SessionManager::park(const std::string& test_id, Session& s,
                          const Result<SideOutcome>& outcome) {
  if (!s.digested || !outcome.ok() || !s.buffer) return;
  MutexLock lock(mu_);
  parked_order_.push_back(test_id);
  parked_[test_id] = Parked{std::move(s.buffer), outcome->integrity.bytes_checked};
  while (parked_order_.size() > options_.max_parked) {
    parked_.erase(parked_order_.front());
    parked_order_.pop_front();
  }
}

Result<IntegrityReport> SessionManager::reveal(const std::string& test_id, uint64_t seed) {
  Parked p;
  {
    MutexLock lock(mu_);
    auto it = parked_.find(test_id);
    if (it == parked_.end()) {
      return notFound("test " + test_id + ": no landed data kept for a reveal",
                      "the worker keeps the last " + std::to_string(options_.max_parked) +
                          " sealed tests' buffers; reveal right after finish");
    }
    p = std::move(it->second);
    parked_.erase(it);
    parked_order_.erase(std::find(parked_order_.begin(), parked_order_.end(), test_id));
  }
  if (seed == 0) return invalidArgument("seed: 0 is not a test seed", "send the revealed seed");
  return p.buffer->verify(seed, 0, p.length);
}

void SessionManager::stop(Session& s) {
  std::thread armed;
  {
    MutexLock lock(s.arm_mu);
    s.stopped = true;
    armed = std::move(s.armed);
  }
  s.endpoint->abort();
  if (armed.joinable()) armed.join();
}

void SessionManager::drop(const std::string& test_id, const std::shared_ptr<Session>& s) {
  {
    MutexLock lock(mu_);
    auto it = sessions_.find(test_id);
    if (it != sessions_.end() && it->second == s) sessions_.erase(it);
  }
  stop(*s);
}

void SessionManager::release(const std::string& test_id) {
  std::shared_ptr<Session> s;
  {
    MutexLock lock(mu_);
    auto it = sessions_.find(test_id);
    if (it == sessions_.end()) return;
    s = std::move(it->second);
    sessions_.erase(it);
  }
  if (s) stop(*s);
  // The last holder (this thread or a command in flight) destroys endpoint, then buffers.
}

void SessionManager::abortAll() {
  std::map<std::string, std::shared_ptr<Session>> all;
  {
    MutexLock lock(mu_);
    all.swap(sessions_);
  }
  for (auto& [id, s] : all) {
    if (s) stop(*s);
  }
  MutexLock lock(mu_);
  parked_.clear();
  parked_order_.clear();
}

size_t SessionManager::active() const {
  MutexLock lock(mu_);
  return sessions_.size();
}

}  // namespace gdrmesh
