#include "worker/session/session.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "common/pattern.h"

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

uint64_t ownSeed(const SessionSpec& s) {
  return s.endpoint.role == Role::kInitiator ? initiatorSeed(s.seed) : targetSeed(s.seed);
}

// What the destination must hold after the run: the source side's pattern.
uint64_t expectedSeed(const SessionSpec& s) {
  return s.endpoint.role == Role::kInitiator ? targetSeed(s.seed) : initiatorSeed(s.seed);
}

}  // namespace

struct SessionManager::Session {
  SessionSpec spec;
  std::unique_ptr<Buffer> buffer;  // where the test data lives (host or GPU)
  std::unique_ptr<Buffer> mirror;  // staged path: the host memory the transport moves
  std::unique_ptr<Endpoint> endpoint;
  double source_staging_seconds = 0;
  Buffer& wire() { return mirror ? *mirror : *buffer; }
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

Result<PreparedEndpoint> SessionManager::prepare(const SessionSpec& spec) {
  const std::string& id = spec.endpoint.test_id;
  if (id.empty()) return invalidArgument("test_id: empty");
  if (spec.endpoint.buffer_size == 0) return invalidArgument("buffer_size: must be > 0");
  {
    // Reserve the id (an empty slot) so that concurrent prepares of one id, or beyond the
    // session limit, cannot both win.
    std::lock_guard<std::mutex> lock(mu_);
    if (sessions_.count(id) != 0) return invalidArgument("test " + id + ": already prepared");
    if (sessions_.size() >= options_.max_sessions) {
      return Status(Code::kResourceExhausted,
                    "worker has " + std::to_string(sessions_.size()) + " tests in progress",
                    "wait for running tests to finish");
    }
    sessions_[id] = nullptr;
  }
  auto result = prepareReserved(spec);
  std::lock_guard<std::mutex> lock(mu_);
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
  RegPath reg = spec.reg;
  if (spec.memory == MemoryKind::kHost) {
    if (reg == RegPath::kDmabuf || reg == RegPath::kPeermem || reg == RegPath::kStaged) {
      return invalidArgument(
          std::string("reg_path: '") + toString(reg) + "' applies to GPU memory only",
          "use --reg host (or auto) with --memory host");
    }
    reg = RegPath::kHost;
  } else if (reg == RegPath::kStaged) {
    // Staged: the NIC (or the emulated transport) works on a host mirror; copies to and from
    // the GPU are timed and reported. Never GPUDirect.
    GDR_ASSIGN_OR_RETURN(s->mirror, memory_.allocate(MemoryKind::kHost, -1,
                                                     spec.endpoint.buffer_size, spec.numa_node));
    GDR_RETURN_IF_ERROR(s->mirror->fill(seed, 0, s->mirror->size()));
  } else if (reg == RegPath::kHost) {
    return invalidArgument("reg_path: 'host' does not apply to GPU memory",
                           "use --reg auto, dmabuf, peermem or staged");
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
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(test_id);
  return it == sessions_.end() ? nullptr : it->second;  // null also for a reserved slot
}

Result<uint32_t> SessionManager::connect(const std::string& test_id, const EndpointDesc& peer) {
  auto s = find(test_id);
  if (!s) return notFound("test " + test_id + ": not prepared on this worker (released?)");
  GDR_RETURN_IF_ERROR(s->endpoint->connect(peer));
  if (s->spec.invalidate_remote_key && s->spec.endpoint.role == Role::kTarget) {
    GDR_RETURN_IF_ERROR(s->endpoint->invalidateRemoteAccessForTest());
  }
  if (s->mirror && isSource(s->spec.endpoint.op, s->spec.endpoint.role)) {
    // Source side of the staged path: GPU -> host mirror before anything is sent.
    auto t0 = std::chrono::steady_clock::now();
    GDR_RETURN_IF_ERROR(copyBetween(*s->buffer, *s->mirror, s->buffer->size()));
    s->source_staging_seconds = secondsSince(t0);
  }
  return s->endpoint->pathMtu();
}

Result<Measurement> SessionManager::run(const std::string& test_id, const RunSpec& spec) {
  auto s = find(test_id);
  if (!s) return notFound("test " + test_id + ": not prepared on this worker (released?)");
  GDR_ASSIGN_OR_RETURN(Measurement m, s->endpoint->run(spec));
  m.staging_seconds = s->source_staging_seconds;
  return m;
}

Result<VerifyOutcome> SessionManager::verify(const std::string& test_id, uint64_t length) {
  auto s = find(test_id);
  if (!s) return notFound("test " + test_id + ": not prepared on this worker (released?)");
  if (length == 0 || length > s->buffer->size()) {
    return invalidArgument("verify length " + std::to_string(length) + ": must be in 1.." +
                           std::to_string(s->buffer->size()));
  }
  VerifyOutcome out;
  if (s->mirror) {
    // Destination side of the staged path: host mirror -> GPU, timed.
    auto t0 = std::chrono::steady_clock::now();
    GDR_RETURN_IF_ERROR(copyBetween(*s->mirror, *s->buffer, length));
    out.staging_seconds = secondsSince(t0);
  }
  if (s->spec.corrupt_bytes > 0) {
    // Fault injection (tests only): flip bytes spread over the landed range.
    uint64_t n = std::min<uint64_t>(s->spec.corrupt_bytes, length);
    for (uint64_t i = 0; i < n; ++i) {
      size_t off = static_cast<size_t>(i * (length / n));
      uint8_t b = 0;
      GDR_RETURN_IF_ERROR(s->buffer->copyToHost(off, &b, 1));
      b = static_cast<uint8_t>(~b);
      GDR_RETURN_IF_ERROR(s->buffer->copyFromHost(off, &b, 1));
    }
  }
  GDR_ASSIGN_OR_RETURN(out.integrity, s->buffer->verify(expectedSeed(s->spec), 0, length));
  // Re-poison the destination so that the next run of a sweep is checked afresh.
  const uint64_t seed = ownSeed(s->spec);
  GDR_RETURN_IF_ERROR(s->buffer->fill(seed, 0, length));
  if (s->mirror) GDR_RETURN_IF_ERROR(s->mirror->fill(seed, 0, length));
  return out;
}

void SessionManager::release(const std::string& test_id) {
  std::shared_ptr<Session> s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(test_id);
    if (it == sessions_.end()) return;
    s = std::move(it->second);
    sessions_.erase(it);
  }
  if (s) s->endpoint->abort();
  // The last holder (this thread or a run in flight) destroys endpoint, then buffers.
}

void SessionManager::abortAll() {
  std::map<std::string, std::shared_ptr<Session>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(sessions_);
  }
  for (auto& [id, s] : all) {
    if (s) s->endpoint->abort();
  }
}

size_t SessionManager::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

}  // namespace gdrmesh
