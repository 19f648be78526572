// Where a PCI device sits in the PCIe tree, and the nvidia-smi class of the path between two.
//
// A device's place is read from the real sysfs device path, never from bus numbers:
//   /sys/bus/pci/devices/0000:19:00.0 -> /sys/devices/pci0000:16/0000:16:00.0/0000:17:00.0/
//                                        0000:18:04.0/0000:19:00.0
// "pci0000:16" is the PCIe host bridge (root complex, named with its PCI domain), followed by
// the chain of bridges (root port, then switch upstream/downstream port pairs) and the device.
// Two devices in different domains whose bus numbers collide have different host bridge paths.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace gdrmesh {

// Path classes of `nvidia-smi topo -m`, best (closest) first.
enum class PathClass {
  kX,     // the same device
  kPIX,   // at most a single PCIe bridge (one switch)
  kPXB,   // multiple PCIe bridges, without crossing a host bridge
  kPHB,   // crosses a PCIe host bridge (same root complex)
  kNODE,  // crosses between PCIe host bridges within one NUMA node
  kSYS,   // crosses the SMP interconnect between NUMA nodes
  kNA,    // not applicable: a software device, or a device not found in sysfs
};
const char* toString(PathClass c);  // "X", "PIX", ..., "N/A"
std::optional<PathClass> parsePathClass(const std::string& s);

struct PciPath {
  std::string bus_id;  // "0000:19:00.0"
  std::string
      host_bridge;  // in-root path of the (innermost) host bridge: "/sys/devices/pci0000:16"
  std::vector<std::string> bridges;  // bus ids from the root port down, the device excluded
  int numa_node = -1;
  std::string local_cpulist;  // "0-31,64-95", "" if unknown
};

// Reads <root>/sys/bus/pci/devices/<bus_id> and resolves it into its PCIe path.
Result<PciPath> readPciPath(const std::string& sysfs_root, const std::string& bus_id);

// Parses an in-root resolved device path ("/sys/devices/pci0000:16/0000:16:00.0/0000:17:00.0")
// into host bridge and bridge chain. Exposed for tests.
Result<PciPath> parsePciDevicePath(const std::string& resolved_path);

// The class of the path between two devices. Bridges under a host bridge are taken as a root
// port followed by (upstream, downstream) port pairs, one pair per PCIe switch; PIX means the
// path touches at most one switch (or only the shared root port), PXB more than one. Different
// host bridges: NODE if both devices report the same NUMA node (or both unknown), else SYS.
PathClass classifyPath(const PciPath& a, const PciPath& b);

// The bridges a path between a and b passes through (bus ids), for paths that stay below one
// host bridge (PIX/PXB/PHB); empty for NODE/SYS/X. Used by the ACS check.
std::vector<std::string> bridgesBetween(const PciPath& a, const PciPath& b);

// Number of PCIe hops (bridges plus host bridges) between a and b: tie-break for equal classes.
int pathHops(const PciPath& a, const PciPath& b);

}  // namespace gdrmesh
