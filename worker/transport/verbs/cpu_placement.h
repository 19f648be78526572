// Where the thread that drives a verbs test runs. perftest binds to its NIC's NUMA node by default
// since 2026: a thread on the other socket has been measured at 30 instead of 185 Gb/s (Azure
// NHC issue 46). Host test buffers are already placed on the NIC's node (worker/service,
// HostBuffer::allocate); this places the thread that posts and polls there too.
//
// The choice (chooseCpu: pure, reads sysfs under an injectable root, unit-tested with the fixture
// trees of tests/fixtures/sysfs):
//   --cpu N (the worker's override)  CPU N, whatever the NIC's node
//   the NIC's NUMA node is known     one of that node's CPUs (/sys/devices/system/node/nodeN/
//                                    cpulist) that this process may use: the one carrying the
//                                    fewest endpoints of this worker now, the lowest number on a
//                                    tie, so that concurrent tests on one node get cores of their
//                                    own
//   otherwise                        not bound, with the reason (rxe has no PCI device; a
//                                    one-node VM reports -1; a cpuset without that node's CPUs)
// The binding itself (ScopedCpuBinding) sets the calling thread's affinity to that CPU for one
// run and restores the mask it had afterwards. The placement's text ("cpu 3 (numa 0, nic
// mlx5_0)") is recorded with the result (EndpointDesc::cpu_binding -> EndpointRecord).
//
// Thread contract: chooseCpu and the free functions are pure or read-only; CpuPlacer is
// thread-safe; a ScopedCpuBinding belongs to the thread that bound it.
#pragma once

#include <sched.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/sync/mutex.h"

namespace gdrmesh::verbs {

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}; nullopt for anything else. Empty text: empty list.
std::optional<std::vector<int>> parseCpuList(const std::string& text);
// The inverse, ranges collapsed: {0,1,2,3,8} -> "0-3,8".
std::string formatCpuList(const std::vector<int>& cpus);

struct CpuPlacement {
  int cpu = -1;        // the CPU the run's thread is bound to; -1: not bound
  int numa_node = -1;  // the NIC's node, -1 when unknown
  std::string nic;
  bool overridden = false;  // chosen by --cpu
  std::string reason;       // not bound: why
  // "cpu 3 (numa 0, nic mlx5_0)", "cpu 1 (--cpu; nic rxe0, numa unknown)",
  // "not bound: rxe0 reports no NUMA node"
  std::string describe() const;
};

// The choice described above. `allowed`: the CPUs this process may run on; `load`: how many
// endpoints each CPU carries now. override_cpu < 0: no override.
CpuPlacement chooseCpu(const std::string& sysfs_root, const std::string& nic, int override_cpu,
                       const std::vector<int>& allowed, const std::map<int, int>& load);

// The CPUs the calling thread may run on (sched_getaffinity), ascending.
std::vector<int> allowedCpus();

// `gdrmesh worker --cpu N`: N must be one of `allowed` (an error names both and the fix).
Status checkCpuOverride(int cpu, const std::vector<int>& allowed);

// Places endpoints and counts them per CPU while they live (thread-safe).
class CpuPlacer {
  struct Shared {
    Mutex mu;
    std::map<int, int> load ABSL_GUARDED_BY(mu);
  };

 public:
  // An endpoint's placement; gives its CPU's count back when destroyed.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& o) noexcept = default;
    Lease& operator=(Lease&& o) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { release(); }
    const CpuPlacement& placement() const { return placement_; }

   private:
    friend class CpuPlacer;
    void release();
    std::shared_ptr<Shared> shared_;
    CpuPlacement placement_;
  };

  // sysfs_root: "/sys" or a fixture's; override_cpu < 0: none; allowed: nullopt reads this
  // process's set (allowedCpus()).
  CpuPlacer(std::string sysfs_root, int override_cpu,
            std::optional<std::vector<int>> allowed = std::nullopt);
  Lease place(const std::string& nic);

 private:
  const std::string sysfs_root_;
  const int override_cpu_;
  const std::vector<int> allowed_;
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
};

// Binds the calling thread to one CPU until destruction, which restores its previous mask.
class ScopedCpuBinding {
 public:
  ScopedCpuBinding() = default;
  ScopedCpuBinding(const ScopedCpuBinding&) = delete;
  ScopedCpuBinding& operator=(const ScopedCpuBinding&) = delete;
  ~ScopedCpuBinding();
  // cpu < 0: nothing to do. An error names the CPU and the fix; the mask is unchanged then.
  Status bind(int cpu);

 private:
  bool bound_ = false;
  cpu_set_t previous_{};
};

}  // namespace gdrmesh::verbs
