// Composition of a worker: discovers the host and builds the SessionManager with every
// transport and memory kind this host can offer. Shared by `gdrmesh worker` and `doctor`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/inventory.h"
#include "worker/session/session.h"

namespace gdrmesh::cli {

struct WorkerSetupOptions {
  bool enable_verbs = true;
  bool enable_cuda = true;
  bool allow_fault_injection = false;
  std::string sysfs_root = "/";
};

struct WorkerSetup {
  Inventory inventory;
  std::vector<std::string> notes;  // why a transport or GPUs are missing
  std::unique_ptr<MemoryProvider> memory;
  std::unique_ptr<SessionManager> sessions;
  std::shared_ptr<void> keep_alive;  // libraries the providers depend on (CUDA driver)
};

std::unique_ptr<WorkerSetup> setUpWorker(const WorkerSetupOptions& options);

}  // namespace gdrmesh::cli
