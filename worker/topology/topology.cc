#include "worker/topology/topology.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <sstream>
#include <tuple>

#include "worker/inventory/discover.h"
#include "worker/inventory/sysfs.h"

namespace gdrmesh {
namespace {

constexpr int kNvidiaVendor = 0x10de;

int busSortKeyCompare(const std::string& a, const std::string& b) {
  // Compare numerically: domain, bus, device, function (domains may be 4 or 5 hex digits).
  auto key = [](const std::string& s) {
    unsigned dom = 0, bus = 0, dev = 0, fn = 0;
    if (std::sscanf(s.c_str(), "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) dom = 0xffffffff;
    return std::make_tuple(dom, bus, dev, fn, s);
  };
  return key(a) < key(b) ? -1 : (key(b) < key(a) ? 1 : 0);
}

std::string padRight(const std::string& s, size_t w) {
  return s.size() >= w ? s + " " : s + std::string(w - s.size(), ' ');
}

std::string numaText(int numa) {
  return numa < 0 ? "N/A" : std::to_string(numa);
}

// Per GPU or NIC, its PCIe path (nullopt: not in sysfs, its classes are N/A).
using TopoPaths = std::vector<std::optional<PciPath>>;

// The GPUs, numbered in the order given, with their NUMA node and CPUs; a GPU not in sysfs is
// a warning.
TopoPaths addTopoGpus(const std::string& sysfs_root, const std::vector<std::string>& gpus,
                      TopologyMatrix* m) {
  TopoPaths paths;
  for (size_t i = 0; i < gpus.size(); ++i) {
    TopoGpu g;
    g.index = static_cast<int>(i);
    g.pci_bus_id = normalizeBusId(gpus[i]);
    auto path = readPciPath(sysfs_root, g.pci_bus_id);
    if (path.ok()) {
      g.numa_node = path->numa_node;
      g.cpu_affinity = path->local_cpulist;
      paths.push_back(*path);
    } else {
      m->warnings.push_back("GPU" + std::to_string(i) + " " + g.pci_bus_id +
                            ": not in sysfs, its classes are N/A (" + path.status().message() +
                            ")");
      paths.push_back(std::nullopt);
    }
    m->gpus.push_back(std::move(g));
  }
  return paths;
}

// The NICs as discovered; one whose PCIe path cannot be read is a warning.
TopoPaths addTopoNics(const std::string& sysfs_root, const std::vector<Nic>& nics,
                      TopologyMatrix* m) {
  TopoPaths paths;
  for (size_t i = 0; i < nics.size(); ++i) {
    TopoNic n;
    n.index = static_cast<int>(i);
    n.name = nics[i].name;
    n.pci_bus_id = nics[i].pci_bus_id;
    n.numa_node = nics[i].numa_node;
    std::optional<PciPath> path;
    if (!n.pci_bus_id.empty()) {
      auto p = readPciPath(sysfs_root, n.pci_bus_id);
      if (p.ok()) {
        path = *p;
      } else {
        m->warnings.push_back("NIC " + n.name + ": " + p.status().message());
      }
    }
    paths.push_back(path);
    m->nics.push_back(std::move(n));
  }
  return paths;
}

// The matrices: the path class of every GPU-NIC, GPU-GPU and NIC-NIC pair, and the hops and
// bridges between each GPU and NIC.
void classifyTopoPairs(const TopoPaths& gpu_paths, const TopoPaths& nic_paths, TopologyMatrix* m) {
  auto cls = [](const std::optional<PciPath>& a, const std::optional<PciPath>& b) {
    return a && b ? classifyPath(*a, *b) : PathClass::kNA;
  };
  const size_t ng = m->gpus.size(), nn = m->nics.size();
  m->gpu_nic.assign(ng, std::vector<PathClass>(nn, PathClass::kNA));
  m->gpu_nic_hops.assign(ng, std::vector<int>(nn, -1));
  m->gpu_nic_bridges.assign(ng, std::vector<std::vector<std::string>>(nn));
  m->gpu_gpu.assign(ng, std::vector<PathClass>(ng, PathClass::kNA));
  m->nic_nic.assign(nn, std::vector<PathClass>(nn, PathClass::kNA));
  for (size_t g = 0; g < ng; ++g) {
    for (size_t h = 0; h < ng; ++h)
      m->gpu_gpu[g][h] = g == h ? PathClass::kX : cls(gpu_paths[g], gpu_paths[h]);
    for (size_t n = 0; n < nn; ++n) {
      m->gpu_nic[g][n] = cls(gpu_paths[g], nic_paths[n]);
      if (gpu_paths[g] && nic_paths[n]) {
        m->gpu_nic_hops[g][n] = pathHops(*gpu_paths[g], *nic_paths[n]);
        m->gpu_nic_bridges[g][n] = bridgesBetween(*gpu_paths[g], *nic_paths[n]);
      }
    }
  }
  for (size_t a = 0; a < nn; ++a) {
    for (size_t b = 0; b < nn; ++b)
      m->nic_nic[a][b] = a == b ? PathClass::kX : cls(nic_paths[a], nic_paths[b]);
  }
}

// Per GPU, its best class to any NIC and the NICs of that class, nearest (fewest hops) first.
void pickNearestNics(TopologyMatrix* m) {
  for (size_t g = 0; g < m->gpus.size(); ++g) {
    const auto& row = m->gpu_nic[g];
    const auto& hops = m->gpu_nic_hops[g];
    std::vector<size_t> order;
    for (size_t n = 0; n < m->nics.size(); ++n) {
      if (row[n] != PathClass::kNA) order.push_back(n);
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if (row[a] != row[b]) return row[a] < row[b];
      return hops[a] < hops[b];
    });
    if (order.empty()) continue;
    m->gpus[g].best_class = row[order.front()];
    for (size_t n : order) {
      if (row[n] == m->gpus[g].best_class) m->gpus[g].nearest_nics.push_back(m->nics[n].name);
    }
  }
}

}  // namespace

std::vector<std::string> discoverGpuBusIds(const std::string& sysfs_root) {
  std::vector<std::string> out;
  const std::string dir = "/sys/bus/pci/devices";
  for (const std::string& bdf : sysfs::listDir(sysfs_root, dir)) {
    auto vendor = sysfs::readInt(sysfs_root, dir + "/" + bdf + "/vendor");
    auto cls = sysfs::readInt(sysfs_root, dir + "/" + bdf + "/class");
    if (!vendor || !cls || *vendor != kNvidiaVendor) continue;
    const int64_t base_sub = *cls >> 8;  // 0x0300 VGA, 0x0302 3D controller
    if (base_sub == 0x0300 || base_sub == 0x0302) out.push_back(normalizeBusId(bdf));
  }
  std::sort(out.begin(), out.end(),
            [](const std::string& a, const std::string& b) { return busSortKeyCompare(a, b) < 0; });
  return out;
}

Result<TopologyMatrix> discoverTopology(const std::string& sysfs_root,
                                        const std::vector<std::string>& gpu_bus_ids) {
  TopologyMatrix m;
  std::vector<std::string> gpus = gpu_bus_ids.empty() ? discoverGpuBusIds(sysfs_root) : gpu_bus_ids;
  GDR_ASSIGN_OR_RETURN(std::vector<Nic> nics, discoverNics(sysfs_root));
  const TopoPaths gpu_paths = addTopoGpus(sysfs_root, gpus, &m);
  const TopoPaths nic_paths = addTopoNics(sysfs_root, nics, &m);
  classifyTopoPairs(gpu_paths, nic_paths, &m);
  pickNearestNics(&m);
  return m;
}

std::string renderMatrix(const TopologyMatrix& m) {
  constexpr size_t kW = 8;
  std::ostringstream out;
  std::vector<std::string> cols;
  for (size_t g = 0; g < m.gpus.size(); ++g) cols.push_back("GPU" + std::to_string(g));
  for (size_t n = 0; n < m.nics.size(); ++n) cols.push_back("NIC" + std::to_string(n));
  if (cols.empty()) {
    out << "No GPUs and no RDMA NICs found.\n";
    return out.str();
  }
  std::string header = padRight("", kW);
  for (const auto& c : cols) header += padRight(c, kW);
  header += padRight("CPU Affinity", 16) + "NUMA Affinity";
  while (!header.empty() && header.back() == ' ') header.pop_back();
  out << header << "\n";
  auto cell = [&](size_t row, size_t col) -> std::string {
    const size_t ng = m.gpus.size();
    if (row < ng && col < ng) return toString(m.gpu_gpu[row][col]);
    if (row < ng) return toString(m.gpu_nic[row][col - ng]);
    if (col < ng) return toString(m.gpu_nic[col][row - ng]);
    return toString(m.nic_nic[row - ng][col - ng]);
  };
  for (size_t r = 0; r < cols.size(); ++r) {
    std::string line = padRight(cols[r], kW);
    for (size_t c = 0; c < cols.size(); ++c) {
      std::string v = cell(r, c);
      line += padRight(v == "X" ? " X" : v, kW);
    }
    if (r < m.gpus.size()) {
      const TopoGpu& g = m.gpus[r];
      line += padRight(g.cpu_affinity.empty() ? "N/A" : g.cpu_affinity, 16) + numaText(g.numa_node);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
  out << "\nLegend:\n\n"
      << "  X    = Self\n"
      << "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes "
         "(e.g., QPI/UPI)\n"
      << "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host "
         "Bridges within a NUMA node\n"
      << "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
      << "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host "
         "Bridge)\n"
      << "  PIX  = Connection traversing at most a single PCIe bridge\n"
      << "  N/A  = No PCIe path (software device, or device not found in sysfs)\n"
      << "  GPU-GPU cells show the PCIe path; NVLink (NV#) is not visible in sysfs.\n";
  if (!m.nics.empty()) {
    out << "\nNIC Legend:\n\n";
    for (size_t n = 0; n < m.nics.size(); ++n) {
      out << "  NIC" << n << ": " << m.nics[n].name;
      if (!m.nics[n].pci_bus_id.empty()) out << " (" << m.nics[n].pci_bus_id << ")";
      out << "\n";
    }
  }
  for (const auto& w : m.warnings) out << "\nwarning: " << w << "\n";
  return out.str();
}

nlohmann::json toJson(const TopologyMatrix& m) {
  nlohmann::json j;
  j["gpus"] = nlohmann::json::array();
  for (const TopoGpu& g : m.gpus) {
    j["gpus"].push_back({{"index", g.index},
                         {"pci_bus_id", g.pci_bus_id},
                         {"numa_node", g.numa_node},
                         {"cpu_affinity", g.cpu_affinity},
                         {"best_class", toString(g.best_class)},
                         {"nearest_nics", g.nearest_nics}});
  }
  j["nics"] = nlohmann::json::array();
  for (const TopoNic& n : m.nics) {
    j["nics"].push_back({{"index", n.index},
                         {"name", n.name},
                         {"pci_bus_id", n.pci_bus_id},
                         {"numa_node", n.numa_node}});
  }
  j["pairs"] = nlohmann::json::array();
  j["gpu_nic"] = nlohmann::json::array();
  for (size_t g = 0; g < m.gpus.size(); ++g) {
    nlohmann::json row = nlohmann::json::array();
    for (size_t n = 0; n < m.nics.size(); ++n) {
      row.push_back(toString(m.gpu_nic[g][n]));
      j["pairs"].push_back({{"gpu", g},
                            {"gpu_pci", m.gpus[g].pci_bus_id},
                            {"nic", m.nics[n].name},
                            {"class", toString(m.gpu_nic[g][n])},
                            {"hops", m.gpu_nic_hops[g][n]}});
    }
    j["gpu_nic"].push_back(row);
  }
  j["gpu_gpu"] = nlohmann::json::array();
  for (const auto& row : m.gpu_gpu) {
    nlohmann::json r = nlohmann::json::array();
    for (PathClass c : row) r.push_back(toString(c));
    j["gpu_gpu"].push_back(r);
  }
  j["warnings"] = m.warnings;
  return j;
}

std::string nearestNic(const TopologyMatrix& m, int gpu_index) {
  if (gpu_index < 0 || static_cast<size_t>(gpu_index) >= m.gpus.size()) return "";
  const auto& list = m.gpus[static_cast<size_t>(gpu_index)].nearest_nics;
  return list.empty() ? "" : list.front();
}

std::string classOf(const TopologyMatrix& m, const std::string& gpu_bus_id,
                    const std::string& nic_name) {
  const std::string id = normalizeBusId(gpu_bus_id);
  for (size_t g = 0; g < m.gpus.size(); ++g) {
    if (m.gpus[g].pci_bus_id != id) continue;
    for (size_t n = 0; n < m.nics.size(); ++n) {
      if (m.nics[n].name == nic_name) return toString(m.gpu_nic[g][n]);
    }
  }
  return "";
}

}  // namespace gdrmesh
