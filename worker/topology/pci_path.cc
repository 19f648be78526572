#include "worker/topology/pci_path.h"

#include <cctype>
#include <set>

#include "worker/inventory/discover.h"
#include "worker/inventory/sysfs.h"

namespace gdrmesh {
namespace {

bool isHex(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// "0000:17:00.0" (also 5-digit VMD domains "10000:e1:00.0").
bool isBdf(const std::string& s) {
  auto c1 = s.find(':');
  if (c1 == std::string::npos) return false;
  auto c2 = s.find(':', c1 + 1);
  auto dot = s.find('.', c1 + 1);
  if (c2 == std::string::npos || dot == std::string::npos || dot < c2) return false;
  return isHex(s.substr(0, c1)) && isHex(s.substr(c1 + 1, c2 - c1 - 1)) && c2 - c1 - 1 == 2 &&
         isHex(s.substr(c2 + 1, dot - c2 - 1)) && dot - c2 - 1 == 2 && isHex(s.substr(dot + 1)) &&
         s.size() - dot - 1 == 1;
}

// "pci0000:16"
bool isHostBridge(const std::string& s) {
  if (s.rfind("pci", 0) != 0) return false;
  std::string rest = s.substr(3);
  auto c = rest.find(':');
  return c != std::string::npos && isHex(rest.substr(0, c)) && isHex(rest.substr(c + 1));
}

size_t commonPrefix(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  size_t p = 0;
  while (p < a.size() && p < b.size() && a[p] == b[p]) ++p;
  return p;
}

// Index of the "bridge unit" of a bridge at chain position i: 0 is the root port, then one
// unit per switch (upstream at odd, downstream at even positions).
size_t unitOf(size_t i) {
  return (i + 1) / 2;
}

}  // namespace

const char* toString(PathClass c) {
  switch (c) {
    case PathClass::kX:
      return "X";
    case PathClass::kPIX:
      return "PIX";
    case PathClass::kPXB:
      return "PXB";
    case PathClass::kPHB:
      return "PHB";
    case PathClass::kNODE:
      return "NODE";
    case PathClass::kSYS:
      return "SYS";
    case PathClass::kNA:
      return "N/A";
  }
  return "N/A";
}

std::optional<PathClass> parsePathClass(const std::string& s) {
  for (PathClass c : {PathClass::kX, PathClass::kPIX, PathClass::kPXB, PathClass::kPHB,
                      PathClass::kNODE, PathClass::kSYS, PathClass::kNA}) {
    if (s == toString(c)) return c;
  }
  return std::nullopt;
}

Result<PciPath> parsePciDevicePath(const std::string& resolved_path) {
  std::vector<std::string> parts;
  std::string cur;
  for (char ch : resolved_path + "/") {
    if (ch == '/') {
      if (!cur.empty()) parts.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(ch);
    }
  }
  PciPath out;
  std::string prefix;
  std::vector<std::string> chain;
  bool seen_host_bridge = false;
  for (const std::string& p : parts) {
    prefix += "/" + p;
    if (isHostBridge(p)) {
      // A nested host bridge (Intel VMD) starts a new root complex below a device.
      out.host_bridge = prefix;
      chain.clear();
      seen_host_bridge = true;
    } else if (seen_host_bridge && isBdf(p)) {
      chain.push_back(normalizeBusId(p));
    } else if (seen_host_bridge) {
      return invalidArgument(resolved_path + ": '" + p + "' is not a PCI device in the path",
                             "pass the path of a PCI device under /sys/devices/pci*");
    }
  }
  if (!seen_host_bridge || chain.empty()) {
    return invalidArgument(resolved_path + ": not a PCI device path (no pciDDDD:BB host bridge)",
                           "pass the path of a PCI device under /sys/devices/pci*");
  }
  out.bus_id = chain.back();
  chain.pop_back();
  out.bridges = std::move(chain);
  return out;
}

Result<PciPath> readPciPath(const std::string& sysfs_root, const std::string& bus_id) {
  const std::string id = normalizeBusId(bus_id);
  const std::string link = "/sys/bus/pci/devices/" + id;
  auto resolved = sysfs::resolve(sysfs_root, link);
  if (!resolved) {
    return notFound("PCI device " + id + ": " + sysfs::join(sysfs_root, link) + " not found",
                    "check the bus id, or that --sysfs-root points at the right tree");
  }
  GDR_ASSIGN_OR_RETURN(PciPath path, parsePciDevicePath(*resolved));
  if (auto numa = sysfs::readInt(sysfs_root, *resolved + "/numa_node")) {
    path.numa_node = static_cast<int>(*numa);
  }
  if (auto cpus = sysfs::readTrimmed(sysfs_root, *resolved + "/local_cpulist")) {
    path.local_cpulist = *cpus;
  }
  return path;
}

PathClass classifyPath(const PciPath& a, const PciPath& b) {
  if (a.bus_id == b.bus_id && a.host_bridge == b.host_bridge) return PathClass::kX;
  if (a.host_bridge != b.host_bridge) {
    return a.numa_node == b.numa_node ? PathClass::kNODE : PathClass::kSYS;
  }
  const size_t p = commonPrefix(a.bridges, b.bridges);
  if (p == 0) return PathClass::kPHB;
  // Bridge units (root port, switches) the path touches: the shared one plus those below it.
  const size_t shared = unitOf(p - 1);
  std::set<size_t> units_a, units_b;
  for (size_t i = p; i < a.bridges.size(); ++i) {
    if (unitOf(i) != shared) units_a.insert(unitOf(i));
  }
  for (size_t i = p; i < b.bridges.size(); ++i) {
    if (unitOf(i) != shared) units_b.insert(unitOf(i));
  }
  const size_t units = 1 + units_a.size() + units_b.size();
  return units <= 1 ? PathClass::kPIX : PathClass::kPXB;
}

std::vector<std::string> bridgesBetween(const PciPath& a, const PciPath& b) {
  std::vector<std::string> out;
  if (a.host_bridge != b.host_bridge || a.bus_id == b.bus_id) return out;
  const size_t p = commonPrefix(a.bridges, b.bridges);
  if (p == 0) {
    out = a.bridges;
    out.insert(out.end(), b.bridges.begin(), b.bridges.end());
    return out;
  }
  for (size_t i = p - 1; i < a.bridges.size(); ++i) out.push_back(a.bridges[i]);
  for (size_t i = p; i < b.bridges.size(); ++i) out.push_back(b.bridges[i]);
  return out;
}

int pathHops(const PciPath& a, const PciPath& b) {
  if (a.bus_id == b.bus_id && a.host_bridge == b.host_bridge) return 0;
  const int la = static_cast<int>(a.bridges.size());
  const int lb = static_cast<int>(b.bridges.size());
  if (a.host_bridge != b.host_bridge) return la + lb + (a.numa_node == b.numa_node ? 3 : 4);
  const int p = static_cast<int>(commonPrefix(a.bridges, b.bridges));
  if (p == 0) return la + lb + 1;
  return (la - p) + (lb - p) + 1;
}

}  // namespace gdrmesh
