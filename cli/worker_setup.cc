#include "cli/worker_setup.h"

#include <algorithm>
#include <cstring>

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

Status parseWorkerLabel(const std::string& text, std::string* key, std::string* value) {
  const auto eq = text.find('=');
  if (eq == std::string::npos) {
    return invalidArgument("--label '" + text + "': expected KEY=VALUE", "e.g. --label rack=r12");
  }
  std::string k = text.substr(0, eq);
  std::string v = text.substr(eq + 1);
  auto charset = [](const std::string& s, const char* extra) {
    for (char c : s) {
      const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      if (!alnum && std::strchr(extra, c) == nullptr) return false;
    }
    return true;
  };
  auto alnum_at = [](const std::string& s, size_t i) {
    const char c = s[i];
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (k.empty() || k.size() > kMaxLabelKey || !charset(k, "._-") || !alnum_at(k, 0)) {
    return invalidArgument("--label '" + text + "': key '" + k + "' must be 1.." +
                               std::to_string(kMaxLabelKey) +
                               " characters of A-Z a-z 0-9 . _ -, starting with a letter or digit",
                           "e.g. --label rack=r12");
  }
  if (v.empty() || v.size() > kMaxLabelValue || !charset(v, "._-:/")) {
    return invalidArgument("--label '" + text + "': value '" + v + "' must be 1.." +
                               std::to_string(kMaxLabelValue) +
                               " characters of A-Z a-z 0-9 . _ - : /",
                           "e.g. --label rack=r12");
  }
  *key = std::move(k);
  *value = std::move(v);
  return {};
}

Result<std::map<std::string, std::string>> parseWorkerLabels(
    const std::vector<std::string>& texts) {
  std::map<std::string, std::string> out;
  for (const auto& t : texts) {
    std::string k, v;
    GDR_RETURN_IF_ERROR(parseWorkerLabel(t, &k, &v));
    if (out.count(k) != 0) {
      return invalidArgument("--label " + k + ": given twice", "give each label key once");
    }
    out.emplace(std::move(k), std::move(v));
  }
  return out;
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
  s->inventory.kernel_release = kernelRelease(o.sysfs_root);
  s->inventory.nvidia_driver_version = nvidiaDriverVersion(o.sysfs_root);
  auto nics = discoverNics(o.sysfs_root);
  if (nics.ok()) {
    for (const auto& n : *nics) {
      if (o.nics.empty() || std::find(o.nics.begin(), o.nics.end(), n.name) != o.nics.end()) {
        s->inventory.nics.push_back(n);
      }
    }
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
  // Each GPU's nearest NIC and that path's class: what rails tests pair it with.
  for (auto& g : s->inventory.gpus) {
    g.nearest_nic = s->nearestNicOf(g.index);
    g.nearest_class = g.nearest_nic.empty() ? "" : s->topoClass(g.index, g.nearest_nic);
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
      vo.devices = o.nics;
      vo.cpu = o.cpu;
      s->sessions->addTransport(std::make_unique<VerbsTransport>(vo));
    } else {
      s->notes.push_back("verbs: disabled with --no-verbs");
    }
    const auto viable = s->sessions->viableTransports(&s->notes);
    for (auto t : viable) s->inventory.transports.push_back(toString(t));
    s->inventory.capabilities = s->sessions->capabilities(viable);
  }
  s->inventory.notes = s->notes;
  return s;
}

}  // namespace gdrmesh::cli
