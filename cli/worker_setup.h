// Composition of a worker: discovers the host (NICs, GPUs, PCIe topology, preflight checks) and
// builds the SessionManager with every transport and memory kind this host can offer. Shared by
// `gdrmesh worker`, `gdrmesh doctor --local` and `gdrmesh topo`.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/inventory.h"
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

}  // namespace gdrmesh::cli
