// The GPU-NIC PCIe topology of a host, as `nvidia-smi topo -m` shows it, built from sysfs.
//
// GPUs come from the CUDA inventory (their PCI bus ids) or, when none are given, from the PCI
// devices with vendor 0x10de and class 0x0300xx/0x0302xx. NICs come from discoverNics(). The
// classes are computed from the real device paths (domain included); see pci_path.h.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/topology/pci_path.h"

namespace gdrmesh {

struct TopoGpu {
  int index = 0;             // position in TopologyMatrix::gpus (CUDA order when given)
  std::string pci_bus_id;    // "0000:1b:00.0"
  int numa_node = -1;        // -1: unknown
  std::string cpu_affinity;  // local_cpulist, "" if unknown
  PathClass best_class = PathClass::kNA;  // class of the nearest NIC, kNA without NICs
  std::vector<std::string> nearest_nics;  // NIC names at best_class, fewest hops first
};

struct TopoNic {
  int index = 0;
  std::string name;        // "mlx5_0"
  std::string pci_bus_id;  // "" for software devices (their classes are N/A)
  int numa_node = -1;
};

struct TopologyMatrix {
  std::vector<TopoGpu> gpus;
  std::vector<TopoNic> nics;
  std::vector<std::vector<PathClass>> gpu_nic;  // [gpu][nic]
  std::vector<std::vector<PathClass>> gpu_gpu;  // [gpu][gpu], PCIe only (NVLink not in sysfs)
  std::vector<std::vector<PathClass>> nic_nic;  // [nic][nic]
  std::vector<std::vector<int>> gpu_nic_hops;   // [gpu][nic], -1 when N/A
  // [gpu][nic]: bus ids of the bridges on the path when it stays below one host bridge
  std::vector<std::vector<std::vector<std::string>>> gpu_nic_bridges;
  std::vector<std::string> warnings;  // e.g. a given GPU bus id not found in sysfs
};

// Builds the matrix for the host (or tree) at sysfs_root. gpu_bus_ids: the GPUs in CUDA order;
// empty: discover NVIDIA display/3D controllers from sysfs, in PCI bus order. A host without
// GPUs or NICs gives empty lists, not an error.
Result<TopologyMatrix> discoverTopology(const std::string& sysfs_root = "/",
                                        const std::vector<std::string>& gpu_bus_ids = {});

// NVIDIA GPUs in sysfs (vendor 0x10de, class 0x0300xx or 0x0302xx), sorted by bus id.
std::vector<std::string> discoverGpuBusIds(const std::string& sysfs_root = "/");

// A table like `nvidia-smi topo -m`: GPU and NIC rows/columns, CPU and NUMA affinity, legend.
std::string renderMatrix(const TopologyMatrix& m);

// {"gpus":[...], "nics":[...], "pairs":[{"gpu":0,"gpu_pci":..,"nic":"mlx5_0","class":"PIX",
//  "hops":3}], "gpu_nic":[["PIX",...]], "warnings":[...]}
nlohmann::json toJson(const TopologyMatrix& m);

// The nearest NIC of a GPU (best class, then fewest hops, then NIC order); "" if none or the
// index is out of range.
std::string nearestNic(const TopologyMatrix& m, int gpu_index);

// The class between a GPU (bus id, any case/domain width) and a NIC by name: "PIX", ...;
// "" if either is not in the matrix.
std::string classOf(const TopologyMatrix& m, const std::string& gpu_bus_id,
                    const std::string& nic_name);

}  // namespace gdrmesh
