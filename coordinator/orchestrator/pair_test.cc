#include "coordinator/orchestrator/pair_test.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <string>

#include "common/capabilities.h"
#include "common/sync/mutex.h"
#include "common/units.h"
#include "coordinator/orchestrator/pair_test_run.h"

namespace gdrmesh {
namespace pair_test_detail {

bool hasTransport(const Inventory& inv, TransportKind t) {
  return std::find(inv.transports.begin(), inv.transports.end(), toString(t)) !=
         inv.transports.end();
}

std::shared_ptr<const WorkerStatus> orOffline(std::shared_ptr<const WorkerStatus> w,
                                              const std::string& name) {
  if (w) return w;
  auto off = std::make_shared<WorkerStatus>();
  off->name = name;
  off->state = "offline";
  return off;
}

}  // namespace pair_test_detail

namespace {

void fillRecord(const WorkerStatus& w, const EndpointSelector& s, EndpointRecord* e) {
  e->worker = w.name;
  e->host = w.inventory.hostname;
  e->nic = s.device;
  e->memory = s.memory;
  e->gpu = s.memory == MemoryKind::kCuda ? std::max(0, s.gpu) : -1;
  if (e->gpu >= 0 && e->gpu < static_cast<int>(w.inventory.gpus.size())) {
    e->gpu_pci = w.inventory.gpus[static_cast<size_t>(e->gpu)].pci_bus_id;
  }
  e->reg_path = s.memory == MemoryKind::kHost && s.reg == RegPath::kAuto ? RegPath::kHost : s.reg;
}

}  // namespace

TestResult startedResult(const PairTestSpec& spec, const PairEndpoints& endpoints,
                         std::string test_id, int64_t started_ms) {
  TestResult r;
  r.test_id = std::move(test_id);
  r.run_id = spec.run_id;
  r.started_ms = started_ms;
  r.op = spec.op;
  r.mode = spec.mode;
  r.message_size = spec.message_size;
  r.iterations = spec.iterations;
  r.num_qps = spec.num_qps;
  const auto ini = pair_test_detail::orOffline(endpoints.initiator, spec.initiator.worker);
  const auto tgt = pair_test_detail::orOffline(endpoints.target, spec.target.worker);
  fillRecord(*ini, spec.initiator, &r.initiator);
  fillRecord(*tgt, spec.target, &r.target);
  r.transport = chooseTransport(spec, ini->inventory, tgt->inventory)
                    .value_or(spec.transport.value_or(TransportKind::kEmulated));
  return r;
}

Status checkPairAgainstInventory(const PairTestSpec& spec, const WorkerStatus& initiator,
                                 const WorkerStatus& target) {
  auto side = [&](const EndpointSelector& s, const WorkerStatus& w, const std::string& f) {
    if (!s.device.empty()) {
      std::string names;
      bool found = false;
      for (const auto& n : w.inventory.nics) {
        names += (names.empty() ? "" : ", ") + n.name;
        if (n.name == s.device) found = true;
      }
      if (!found && !w.simulated) {
        return notFound(f + ": worker '" + w.name + "' has no RDMA device '" + s.device +
                            "' (has: " + (names.empty() ? "none" : names) + ")",
                        "run `gdrmesh workers` to see each worker's NICs");
      }
    }
    if (s.memory == MemoryKind::kCuda) {
      const int n = static_cast<int>(w.inventory.gpus.size());
      // No GPU at all is a state of the host, reported as a SKIPPED result.
      if (n > 0 && s.gpu >= n) {
        return notFound(f + ": gpu " + std::to_string(s.gpu) + " not on worker '" + w.name +
                            "' (has 0.." + std::to_string(n - 1) + ")",
                        "pick a GPU index from `gdrmesh workers`");
      }
    }
    return Status();
  };
  GDR_RETURN_IF_ERROR(side(spec.initiator, initiator, "initiator"));
  GDR_RETURN_IF_ERROR(side(spec.target, target, "target"));
  // Capabilities before operations: a side no transport of its worker can serve is refused
  // here, before either worker is contacted.
  GDR_RETURN_IF_ERROR(checkCapabilities(spec, initiator, target));
  auto t = chooseTransport(spec, initiator.inventory, target.inventory);
  if (t) GDR_RETURN_IF_ERROR(checkTransportOptions(spec, *t));
  return {};
}

std::optional<TransportKind> chooseTransport(const PairTestSpec& spec, const Inventory& initiator,
                                             const Inventory& target) {
  if (spec.transport) return spec.transport;
  // The preferred transport that serves both sides (capabilities), else the preferred one both
  // have (the run then reports what it could not do).
  const auto a = transportsServing(initiator, spec, Role::kInitiator);
  const auto b = transportsServing(target, spec, Role::kTarget);
  for (TransportKind t : a) {
    if (std::find(b.begin(), b.end(), t) != b.end()) return t;
  }
  for (TransportKind t :
       {TransportKind::kVerbs, TransportKind::kSimulated, TransportKind::kEmulated}) {
    if (pair_test_detail::hasTransport(initiator, t) && pair_test_detail::hasTransport(target, t))
      return t;
  }
  return std::nullopt;
}

void runPairTest(const PairTestSpec& spec, const PairEndpoints& endpoints, Clock& clock,
                 const PairTestOptions& options, std::string test_id, uint64_t seed,
                 std::function<void(PairTestOutcome)> done) {
  auto run = std::make_shared<pair_test_detail::PairTestRun>(spec, endpoints, clock, options,
                                                             std::move(done));
  run->begin(std::move(test_id), seed);
}

std::string newTestId(int64_t unix_ms) {
  static std::mt19937_64 rng{std::random_device{}()};
  static Mutex mu;
  uint32_t r;
  {
    MutexLock lock(mu);
    r = static_cast<uint32_t>(rng());
  }
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%08x", r);
  std::string compact;
  for (char c : formatRfc3339(unix_ms).substr(0, 19)) {
    if (c != '-' && c != ':') compact += c;
  }
  return "t-" + compact + "-" + buf;
}

uint64_t newSeed() {
  static std::mt19937_64 rng{std::random_device{}()};
  static Mutex mu;
  MutexLock lock(mu);
  uint64_t s = rng();
  return s == 0 ? 1 : s;
}

}  // namespace gdrmesh
