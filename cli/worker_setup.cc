#include "cli/worker_setup.h"

#include "worker/inventory/discover.h"
#include "worker/transport/emulated/emulated_transport.h"

namespace gdrmesh::cli {

std::unique_ptr<WorkerSetup> setUpWorker(const WorkerSetupOptions& o) {
  auto s = std::make_unique<WorkerSetup>();
  s->inventory.hostname = hostName();
  s->inventory.worker_version = "0.1.0";
  s->inventory.rdma_core_version = rdmaCoreVersion(o.sysfs_root);
  auto nics = discoverNics(o.sysfs_root);
  if (nics.ok()) {
    s->inventory.nics = *nics;
  } else {
    s->notes.push_back("NIC discovery: " + nics.status().toString());
  }
  s->memory = std::make_unique<HostMemoryProvider>();
  SessionManager::Options so;
  so.allow_fault_injection = o.allow_fault_injection;
  s->sessions = std::make_unique<SessionManager>(*s->memory, so);
  s->sessions->addTransport(std::make_unique<EmulatedTransport>());
  for (auto t : s->sessions->viableTransports(&s->notes)) {
    s->inventory.transports.push_back(toString(t));
  }
  s->inventory.notes = s->notes;
  return s;
}

}  // namespace gdrmesh::cli
