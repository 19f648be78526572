// Composition of a worker: discovers the host (NICs, GPUs, PCIe topology, preflight checks) and
// builds the SessionManager with every transport and memory kind this host can offer. Shared by
// `gdrmesh worker`, `gdrmesh doctor --local` and `gdrmesh topo`.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/inventory.h"
#include "common/status.h"
#include "worker/session/session.h"
#include "worker/topology/topology.h"

namespace gdrmesh {
class CudaApi;
}

namespace gdrmesh::cli {

struct WorkerSetupOptions {
  bool enable_verbs = true;
  bool enable_cuda = true;
  bool allow_fault_injection = false;
  std::string sysfs_root = "/";
  bool build_sessions = true;  // false: inventory and checks only
  // Non-empty: offer only these NICs (`gdrmesh worker --nic`): the inventory lists only them and
  // the verbs transport opens only them (the first by default).
  std::vector<std::string> nics;
  // `gdrmesh worker --cpu`: the CPU every verbs run's thread is bound to; -1: a CPU of the
  // NIC's NUMA node (worker/transport/verbs/cpu_placement.h).
  int cpu = -1;
};

struct WorkerSetup {
  Inventory inventory;
  std::vector<std::string> notes;  // why a transport or GPUs are missing
  std::optional<TopologyMatrix> topology;
  std::unique_ptr<CudaApi> cuda;  // outlives `memory`, which allocates through it
  std::unique_ptr<MemoryProvider> memory;
  std::unique_ptr<SessionManager> sessions;
  ~WorkerSetup();

  // PCIe path class between a GPU (index) and a NIC, "" when unknown or not applicable.
  std::string topoClass(int gpu, const std::string& nic) const;
  // The GPU's nearest NIC by PCIe path class, "" when unknown.
  std::string nearestNicOf(int gpu) const;
  // NUMA node of the NIC ("" = the first NIC), -1 when unknown.
  int nicNuma(const std::string& nic) const;
};

std::unique_ptr<WorkerSetup> setUpWorker(const WorkerSetupOptions& options);

// Worker labels (`gdrmesh worker --label KEY=VALUE`), matched by sweep selectors. KEY: 1..63 of
// A-Z a-z 0-9 . _ -, starting with a letter or digit; VALUE: 1..128 of A-Z a-z 0-9 . _ - : /.
inline constexpr size_t kMaxLabelKey = 63;
inline constexpr size_t kMaxLabelValue = 128;
Status parseWorkerLabel(const std::string& text, std::string* key, std::string* value);
// Every label, each key at most once.
Result<std::map<std::string, std::string>> parseWorkerLabels(const std::vector<std::string>& texts);

}  // namespace gdrmesh::cli
