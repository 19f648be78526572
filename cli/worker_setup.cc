#include "cli/worker_setup.h"

#include "worker/doctor/doctor.h"
#include "worker/gpu/cuda_api.h"
#include "worker/gpu/cuda_buffer.h"
#include "worker/gpu/discovery.h"
#include "worker/inventory/discover.h"
#include "worker/transport/emulated/emulated_transport.h"
#include "worker/transport/verbs/verbs_transport.h"

namespace gdrmesh::cli {
namespace {

// Host memory always; GPU memory through the CUDA driver when it is present.
class WorkerMemoryProvider final : public MemoryProvider {
 public:
  explicit WorkerMemoryProvider(CudaApi* cuda) : cuda_(cuda) {}
  Result<std::unique_ptr<Buffer>> allocate(MemoryKind kind, int gpu, size_t size,
                                           int numa_node) override {
    if (kind == MemoryKind::kCuda) {
      if (cuda_ == nullptr || !cuda_->available()) {
        return failedPrecondition("GPU memory requested (gpu " + std::to_string(gpu) +
                                      ") but the CUDA driver is not "
                                      "usable on this worker" +
                                      (cuda_ ? ": " + cuda_->reason() : std::string()),
                                  "install the NVIDIA driver, or use --memory host");
      }
      return allocateCudaBuffer(*cuda_, gpu, size);
    }
    return host_.allocate(kind, gpu, size, numa_node);
  }

 private:
  CudaApi* cuda_;
  HostMemoryProvider host_;
};

}  // namespace

WorkerSetup::~WorkerSetup() {
  // Sessions hold buffers that free through the CUDA driver: tear down in order.
  sessions.reset();
  memory.reset();
  cuda.reset();
}

std::string WorkerSetup::topoClass(int gpu, const std::string& nic) const {
  if (!topology || gpu < 0 || nic.empty()) return "";
  for (const auto& g : inventory.gpus) {
    if (g.index == gpu) return classOf(*topology, g.pci_bus_id, nic);
  }
  return "";
}

std::string WorkerSetup::nearestNicOf(int gpu) const {
  if (!topology || gpu < 0) return "";
  for (size_t i = 0; i < inventory.gpus.size(); ++i) {
    if (inventory.gpus[i].index == gpu) return nearestNic(*topology, static_cast<int>(i));
  }
  return "";
}

int WorkerSetup::nicNuma(const std::string& nic) const {
  for (const auto& n : inventory.nics) {
    if (nic.empty() || n.name == nic) return n.numa_node;
  }
  return -1;
}

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

  // GPUs from the driver loaded at run time; a host without it simply has none.
  if (o.enable_cuda) {
    s->cuda = CudaDriver::open();
    const std::string sys = o.sysfs_root == "/" ? "/sys" : o.sysfs_root + "/sys";
    auto gi = discoverGpuInventory(*s->cuda, sys);
    s->inventory.gpus = gi.gpus;
    s->inventory.cuda_driver_version = gi.driver_version;
    if (gi.gpus.empty() && !gi.reason.empty()) s->notes.push_back("cuda: " + gi.reason);
  } else {
    s->notes.push_back("cuda: disabled with --no-cuda");
  }

  std::vector<std::string> gpu_bus_ids;
  for (const auto& g : s->inventory.gpus) gpu_bus_ids.push_back(g.pci_bus_id);
  auto topo = discoverTopology(o.sysfs_root, gpu_bus_ids);
  if (topo.ok()) {
    s->topology = std::move(topo).value();
  } else {
    s->notes.push_back("topology: " + topo.status().toString());
  }

  DoctorInput din = localDoctorInput(s->inventory.gpus, s->inventory.cuda_driver_version);
  din.root = o.sysfs_root;
  din.rdma_core_version = s->inventory.rdma_core_version;
  for (const auto& c : runChecks(din)) {
    s->inventory.preflight.push_back({c.id, c.title, toString(c.status), c.detail, c.remediation});
  }

  if (o.build_sessions) {
    s->memory = std::make_unique<WorkerMemoryProvider>(s->cuda.get());
    SessionManager::Options so;
    so.allow_fault_injection = o.allow_fault_injection;
    s->sessions = std::make_unique<SessionManager>(*s->memory, so);
    s->sessions->addTransport(std::make_unique<EmulatedTransport>());
    if (o.enable_verbs) {
      VerbsOptions vo;
      vo.sysfs_root = o.sysfs_root == "/" ? "/sys" : o.sysfs_root + "/sys";
      vo.max_rd_atomic = 128;  // clamped to the device; negotiated down to the peer's
      s->sessions->addTransport(std::make_unique<VerbsTransport>(vo));
    } else {
      s->notes.push_back("verbs: disabled with --no-verbs");
    }
    for (auto t : s->sessions->viableTransports(&s->notes)) {
      s->inventory.transports.push_back(toString(t));
    }
  }
  s->inventory.notes = s->notes;
  return s;
}

}  // namespace gdrmesh::cli
