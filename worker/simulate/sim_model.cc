#include "worker/simulate/sim_model.h"

#include <algorithm>
#include <cstdio>

#include "common/capabilities.h"
#include "common/sync/mutex.h"

namespace gdrmesh {
namespace {

uint64_t fnv1a(uint64_t h, const std::string& s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return (h ^ 0xff) * 1099511628211ULL;  // separator: "ab"+"c" != "a"+"bc"
}

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A uniform draw in [0, 1) that depends only on (seed, test id, worker): both sides of a test,
// and every rerun of the same test id, draw the same.
double draw(uint64_t seed, const std::string& test_id, const std::string& worker) {
  uint64_t h = fnv1a(fnv1a(14695981039346656037ULL, test_id), worker);
  return static_cast<double>(mix64(h ^ mix64(seed)) >> 11) * 0x1.0p-53;
}

bool matches(const SimFault& f, const std::string& worker, const std::string& nic) {
  return f.worker == worker && (f.nic.empty() || f.nic == nic);
}

std::string endpointName(const std::string& worker, const std::string& nic) {
  return nic.empty() ? worker : worker + "/" + nic;
}

std::string hex4(unsigned v) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%04x", v & 0xffffu);
  return buf;
}

std::string pciId(int bus) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0000:%02x:00.0", bus & 0xff);
  return buf;
}

const char* const kFix =
    "a simulated fault (--sim-fault); restart the simulated workers without it to clear it";

}  // namespace

// ------------------------------------------------------------------------------- faults

SimFaults::SimFaults(std::vector<SimFault> faults, uint64_t seed, double noise,
                     std::shared_ptr<const SimFabric> fabric)
    : faults_(std::move(faults)), seed_(seed), noise_(noise), fabric_(std::move(fabric)) {}

double SimFaults::pathFactor(const std::string& src, const std::string& src_nic,
                             const std::string& dst, const std::string& dst_nic) const {
  return fabric_ ? fabric_->pathFactor(src, src_nic, dst, dst_nic) : 1;
}

double SimFaults::pairFactor(const std::string& test_id, const std::string& worker,
                             const std::string& nic, const std::string& peer,
                             const std::string& peer_nic) const {
  double f = 1;
  for (size_t i = 0; i < faults_.size(); ++i) {
    const SimFault& x = faults_[i];
    if (x.kind != SimFault::Kind::kLink && x.kind != SimFault::Kind::kGlitch) continue;
    auto ends = [&](const std::string& w, const std::string& n, const std::string& p,
                    const std::string& pn) {
      return x.worker == w && (x.nic.empty() || x.nic == n) && x.peer == p &&
             (x.peer_nic.empty() || x.peer_nic == pn);
    };
    if (!ends(worker, nic, peer, peer_nic) && !ends(peer, peer_nic, worker, nic)) continue;
    if (x.kind == SimFault::Kind::kLink) {
      f *= x.factor;
      continue;
    }
    MutexLock lock(mu_);
    auto& seen = glitched_[i];
    if (std::find(seen.begin(), seen.end(), test_id) == seen.end()) {
      if (seen.size() >= x.after_n) continue;  // over: full speed
      seen.push_back(test_id);
    }
    f *= x.factor;
  }
  if (noise_ > 0) f *= 1 + noise_ * (2 * draw(seed_, test_id, "") - 1);
  return f;
}

double SimFaults::slowFactor(const std::string& worker, const std::string& nic) const {
  double f = 1;
  for (const auto& x : faults_) {
    if (x.kind == SimFault::Kind::kSlow && matches(x, worker, nic)) f *= x.factor;
  }
  return f;
}

Status SimFaults::testFault(const std::string& test_id, const std::string& worker,
                            const std::string& nic) const {
  for (const auto& x : faults_) {
    if (x.kind == SimFault::Kind::kFail && matches(x, worker, nic)) {
      return failedPrecondition(
          "simulated link down on " + endpointName(worker, nic) + " (fault " + x.text + ")", kFix);
    }
  }
  for (const auto& x : faults_) {
    if (x.kind == SimFault::Kind::kFlap && matches(x, worker, nic) &&
        draw(seed_, test_id, worker) < x.probability) {
      return unavailable("simulated link flap on " + endpointName(worker, nic) + " during test " +
                             test_id + " (fault " + x.text + ")",
                         kFix);
    }
  }
  return {};
}

const SimFault* SimFaults::streamFault(const std::string& worker, SimFault::Kind kind) const {
  for (const auto& x : faults_) {
    if (x.kind == kind && x.worker == worker) return &x;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------- inventory

Inventory simInventory(const SimConfig& c, const std::string& name, int index) {
  Inventory inv;
  inv.hostname = name;
  inv.worker_version = "gdrmesh 0.1.0 (simulated)";
  inv.rdma_core_version = "simulated";
  for (int n = 0; n < c.nics; ++n) {
    Nic nic;
    nic.name = "mlx5_" + std::to_string(n);
    nic.pci_bus_id = pciId(0x10 + 0x10 * n);
    nic.numa_node = n * 2 < c.nics ? 0 : 1;
    const unsigned id = static_cast<unsigned>(index);
    nic.node_guid =
        "5a5a:" + hex4(id >> 16) + ":" + hex4(id) + ":" + hex4(static_cast<unsigned>(n));
    nic.fw_version = "simulated";
    NicPort p;
    p.port = 1;
    p.state = "ACTIVE";
    p.link_layer = "InfiniBand";
    p.rate_gbps = c.nic_rate_gbps;
    p.active_mtu = 4096;
    p.max_mtu = 4096;
    p.lid = static_cast<uint32_t>(index * c.nics + n + 1);
    p.gids.push_back({0,
                      "fe80:0000:0000:0000:5a5a:" + hex4(id >> 16) + ":" + hex4(id) + ":" +
                          hex4(static_cast<unsigned>(n)),
                      "IB"});
    nic.ports.push_back(std::move(p));
    inv.nics.push_back(std::move(nic));
  }
  for (int g = 0; g < c.gpus; ++g) {
    Gpu gpu;
    gpu.index = g;
    gpu.name = "Simulated GPU";
    gpu.uuid = "GPU-5a5a" + hex4(static_cast<unsigned>(index) >> 16) + "-" +
               hex4(static_cast<unsigned>(index)) + "-" + hex4(static_cast<unsigned>(g));
    gpu.pci_bus_id = pciId(0x18 + 0x10 * (g % c.nics) + g / c.nics);
    gpu.memory_bytes = 80ULL << 30;
    gpu.numa_node = (g % c.nics) * 2 < c.nics ? 0 : 1;
    gpu.dma_buf_supported = true;
    gpu.gpu_direct_rdma_supported = false;  // no bytes move: never GPUDirect
    gpu.compute_capability_major = 9;
    gpu.nearest_nic = "mlx5_" + std::to_string(g % c.nics);
    gpu.nearest_class = "PIX";
    inv.gpus.push_back(std::move(gpu));
  }
  if (c.gpus > 0) inv.cuda_driver_version = "simulated";
  inv.transports = {toString(TransportKind::kSimulated)};
  inv.capabilities = {simulatedCapabilities()};
  inv.capabilities.front().end_signal = c.end_signal;
  // No note: notes say why a transport is missing; Register.simulated says what this is.
  return inv;
}

// -------------------------------------------------------------------------------- model

SimWorkerModel::SimWorkerModel(const SimConfig& config, const SimFaults& faults, const Clock& clock,
                               std::string name, int index)
    : config_(config),
      faults_(faults),
      clock_(clock),
      name_(std::move(name)),
      inventory_(simInventory(config, name_, index)) {}

SimWorkerModel::Fate SimWorkerModel::nextCommand() {
  uint64_t n;
  {
    MutexLock lock(mu_);
    n = ++commands_;
  }
  if (const SimFault* f = faults_.streamFault(name_, SimFault::Kind::kDrop)) {
    if (n > f->after_n) return Fate::kDrop;
  }
  if (const SimFault* f = faults_.streamFault(name_, SimFault::Kind::kMute)) {
    if (n > f->after_n) return Fate::kMute;
  }
  return Fate::kAnswer;
}

Result<SimWorkerModel::Session*> SimWorkerModel::find(const std::string& test_id,
                                                      const char* command) {
  auto it = sessions_.find(test_id);
  if (it == sessions_.end()) {
    return notFound(std::string(command) + ": no test " + test_id + " on simulated worker " + name_,
                    "prepare the test first");
  }
  return &it->second;
}

Result<EndpointDesc> SimWorkerModel::prepare(const SideSpec& spec) {
  if (spec.transport != TransportKind::kSimulated) {
    return unimplemented(std::string("transport ") + toString(spec.transport) +
                             " on simulated worker " + name_ + ": it offers only 'simulated'",
                         "ask for transport simulated (or leave it to the coordinator)");
  }
  if (spec.endpoint.test_id.empty()) return invalidArgument("prepare: empty test id");
  EndpointDesc d;
  SimulatedDesc& sim = d.fields.emplace<SimulatedDesc>();
  sim.worker = name_;  // who this endpoint is, for the peer's fault lookup
  VerbsDesc& n = sim.nic;
  d.memory = spec.memory;
  d.length = spec.endpoint.buffer_size;
  d.addr = 0;
  d.rkey = static_cast<uint32_t>(mix64(fnv1a(spec.seed, spec.endpoint.test_id + name_)));
  n.port = 1;
  n.link_layer = "InfiniBand";
  n.active_mtu = 4096;
  n.gid_index = 0;
  n.qps.resize(std::max<uint32_t>(1, spec.endpoint.num_qps));
  for (size_t q = 0; q < n.qps.size(); ++q) {
    n.qps[q] = {static_cast<uint32_t>(0x100 + q), static_cast<uint32_t>(d.rkey & 0xffffff)};
  }
  if (spec.memory == MemoryKind::kCuda) {
    if (spec.gpu < 0 || spec.gpu >= static_cast<int>(inventory_.gpus.size())) {
      return failedPrecondition("GPU " + std::to_string(spec.gpu) + " on simulated worker " +
                                    name_ + ": it has " + std::to_string(inventory_.gpus.size()) +
                                    " GPU(s)",
                                "pick a GPU below the count, or start the simulation with more "
                                "GPUs (gpus in --sim-config)");
    }
    const Gpu& g = inventory_.gpus[static_cast<size_t>(spec.gpu)];
    d.gpu = spec.gpu;
    d.gpu_pci = g.pci_bus_id;
    d.buffer = "gpu:" + std::to_string(spec.gpu);
    n.device = spec.endpoint.device.empty() ? g.nearest_nic : spec.endpoint.device;
    d.reg_path =
        spec.reg == RegPath::kAuto || spec.reg == RegPath::kHost ? RegPath::kDmabuf : spec.reg;
    d.topo_class = n.device == g.nearest_nic ? "PIX" : "SYS";
  } else {
    n.device = spec.endpoint.device.empty() ? inventory_.nics.front().name : spec.endpoint.device;
    d.reg_path = RegPath::kHost;
    d.buffer = "host:numa0";
  }
  const Nic* nic = nullptr;
  for (const auto& candidate : inventory_.nics) {
    if (candidate.name == n.device) nic = &candidate;
  }
  if (nic == nullptr) {
    return notFound("NIC " + n.device + " on simulated worker " + name_,
                    "simulated NICs are mlx5_0 .. mlx5_" + std::to_string(config_.nics - 1));
  }
  if (d.buffer.rfind("host:", 0) == 0) d.buffer = "host:numa" + std::to_string(nic->numa_node);
  n.lid = nic->ports.front().lid;
  n.gid = nic->ports.front().gids.front().gid;
  MutexLock lock(mu_);
  Session& s = sessions_[spec.endpoint.test_id];
  s = Session{};
  s.spec = spec;
  s.local = d;
  return d;
}

Result<uint32_t> SimWorkerModel::connect(const std::string& test_id, const EndpointDesc& peer) {
  const auto* sim = peer.as<SimulatedDesc>();
  if (sim == nullptr) {
    return failedPrecondition("connect: the peer of test " + test_id + " is not simulated (" +
                                  toString(peer.transport()) + ")",
                              "pair simulated workers only with simulated workers");
  }
  MutexLock lock(mu_);
  GDR_ASSIGN_OR_RETURN(Session * s, find(test_id, "connect"));
  s->peer = peer;
  return std::min<uint32_t>(4096, sim->nic.active_mtu == 0 ? 4096 : sim->nic.active_mtu);
}

Result<Measurement> SimWorkerModel::measure(const std::string& test_id, const Session& s,
                                            const RunSpec& run) const {
  const std::string& device = s.local.nic()->device;
  GDR_RETURN_IF_ERROR(faults_.testFault(test_id, name_, device));
  double factor = faults_.slowFactor(name_, device);
  if (s.peer) {
    const auto& peer = std::get<SimulatedDesc>(s.peer->fields);  // checked in connect()
    GDR_RETURN_IF_ERROR(faults_.testFault(test_id, peer.worker, peer.nic.device));
    factor *= faults_.slowFactor(peer.worker, peer.nic.device);
    factor *= faults_.pairFactor(test_id, name_, device, peer.worker, peer.nic.device);
    // The data's path through the fabric: initiator to target, target to initiator for a read;
    // each side's own sends in a bidirectional test.
    const bool local_sends = run.bidirectional || (s.spec.endpoint.role == Role::kInitiator) ==
                                                      (s.spec.endpoint.op != Op::kRead);
    factor *= local_sends ? faults_.pathFactor(name_, device, peer.worker, peer.nic.device)
                          : faults_.pathFactor(peer.worker, peer.nic.device, name_, device);
  }
  Measurement m;
  m.message_size = run.message_size;
  m.warmup_iterations = run.warmup_iterations;
  const double gbps = std::min(config_.bandwidth_gbps * factor, config_.nic_rate_gbps);
  const double lat_us = config_.latency_us / factor;
  const uint64_t size = std::max<uint64_t>(1, run.message_size);
  m.iterations = run.iterations;
  if (run.duration_seconds > 0) {
    const double per_msg_s = s.spec.endpoint.mode == Mode::kLatency
                                 ? 2 * lat_us * 1e-6
                                 : static_cast<double>(size) * 8 / (gbps * 1e9);
    m.iterations = std::max<uint64_t>(1, static_cast<uint64_t>(run.duration_seconds / per_msg_s));
  }
  // The initiator measures; the target only when both sides send.
  const bool measures = s.spec.endpoint.role == Role::kInitiator || run.bidirectional;
  if (!measures) return m;
  if (s.spec.endpoint.mode == Mode::kLatency) {
    m.has_latency = true;
    LatencyStats& l = m.lat;
    l.samples = m.iterations;
    l.min_us = lat_us * 0.95;
    l.median_us = lat_us;
    l.mean_us = lat_us;
    l.max_us = lat_us * 1.5;
    l.stdev_us = lat_us * 0.02;
    l.p99_us = lat_us * 1.1;
    l.p999_us = lat_us * 1.3;
  } else {
    m.has_bandwidth = true;
    const uint64_t bytes = run.message_size * m.iterations;
    const double seconds = static_cast<double>(size * m.iterations) * 8 / (gbps * 1e9);
    m.bw = bandwidthFromTotals(bytes, m.iterations, seconds);
  }
  return m;
}

IntegrityReport SimWorkerModel::integrity(const Session& s, uint64_t length) const {
  IntegrityReport r;
  r.checked = true;
  r.bytes_checked = length > 0 ? length : s.spec.endpoint.buffer_size;
  r.wrong_bytes = 0;
  r.first_wrong_offset = -1;
  r.where = "simulated";
  return r;
}

SimAnswer<Measurement> SimWorkerModel::run(const std::string& test_id, const RunSpec& run) {
  const auto due = clock_.after(config_.test_ms / 1000.0);
  MutexLock lock(mu_);
  auto s = find(test_id, "run");
  if (!s.ok()) return {clock_.now(), s.status()};
  return {due, measure(test_id, **s, run)};
}

Result<IntegrityReport> SimWorkerModel::verify(const std::string& test_id, uint64_t length) {
  MutexLock lock(mu_);
  GDR_ASSIGN_OR_RETURN(Session * s, find(test_id, "verify"));
  return integrity(*s, length);
}

void SimWorkerModel::release(const std::string& test_id) {
  MutexLock lock(mu_);
  sessions_.erase(test_id);
}

Result<EndpointDesc> SimWorkerModel::prepareArmed(const SideSpec& spec, const EndpointDesc& peer,
                                                  const std::optional<RunSpec>& arm) {
  GDR_ASSIGN_OR_RETURN(EndpointDesc d, prepare(spec));
  const std::string& id = spec.endpoint.test_id;
  auto mtu = connect(id, peer);
  if (!mtu.ok()) {
    release(id);
    return mtu.status();
  }
  if (arm) {
    const auto due = clock_.after(config_.test_ms / 1000.0);
    MutexLock lock(mu_);
    Session& s = sessions_[id];
    s.armed = true;
    s.armed_done = due;
    s.armed_result.emplace(measure(id, s, *arm));
  }
  return d;
}

SimAnswer<SideOutcome> SimWorkerModel::start(const std::string& test_id, const EndpointDesc& peer,
                                             const RunSpec& run, bool verify,
                                             uint64_t verify_length) {
  const auto due = clock_.after(config_.test_ms / 1000.0);
  auto mtu = connect(test_id, peer);
  if (!mtu.ok()) {
    release(test_id);
    return {clock_.now(), mtu.status()};
  }
  MutexLock lock(mu_);
  Session& s = sessions_[test_id];
  auto m = measure(test_id, s, run);
  SideOutcome o;
  if (m.ok()) {
    o.has_measurement = m->has_bandwidth || m->has_latency;
    o.measurement = *m;
    o.verified = verify;
    if (verify) o.integrity = integrity(s, verify_length);
    o.path_mtu = *mtu;
  }
  sessions_.erase(test_id);
  if (!m.ok()) return {due, m.status()};
  return {due, o};
}

SimAnswer<SideOutcome> SimWorkerModel::finish(const std::string& test_id, bool verify,
                                              uint64_t verify_length, double timeout_seconds) {
  MutexLock lock(mu_);
  auto found = find(test_id, "finish");
  if (!found.ok()) return {clock_.now(), found.status()};
  Session s = std::move(**found);
  sessions_.erase(test_id);
  auto at = clock_.now();
  if (s.armed) {
    at = std::max(at, s.armed_done);
    if (timeout_seconds > 0 && at > clock_.after(timeout_seconds)) {
      return {clock_.after(timeout_seconds),
              Status(Code::kDeadlineExceeded,
                     "finish: the armed run of test " + test_id + " on simulated worker " + name_ +
                         " did not end within " + std::to_string(timeout_seconds) + " s",
                     "raise the test timeout above --sim-test-ms")};
    }
    if (s.armed_result && !s.armed_result->ok()) return {at, s.armed_result->status()};
  }
  SideOutcome o;
  if (s.armed && s.armed_result && s.armed_result->ok()) {
    const Measurement& m = s.armed_result->value();
    o.has_measurement = m.has_bandwidth || m.has_latency;
    if (o.has_measurement) o.measurement = m;
  }
  o.verified = verify;
  if (verify) o.integrity = integrity(s, verify_length);
  const VerbsDesc* peer_nic = s.peer ? s.peer->nic() : nullptr;
  o.path_mtu = peer_nic ? std::min<uint32_t>(4096, peer_nic->active_mtu) : 0;
  return {at, o};
}

void SimWorkerModel::abortAll() {
  MutexLock lock(mu_);
  sessions_.clear();
}

size_t SimWorkerModel::activeTests() const {
  MutexLock lock(mu_);
  return sessions_.size();
}

}  // namespace gdrmesh
