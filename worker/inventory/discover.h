// Discovery of the host's RDMA NICs and software versions from sysfs/procfs.
//
// Everything is read under an injectable root directory (default "/"), so a recorded or
// generated tree (tests/fixtures/sysfs) can stand in for the live host. Nothing here runs a
// command or opens a verbs device: it works without permissions and without libibverbs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/inventory.h"
#include "common/status.h"

namespace gdrmesh {

// Every RDMA device under <root>/sys/class/infiniband, sorted by name: PCI bus id ("" for
// software devices such as rxe/siw), NUMA node, node GUID, firmware, and per port the state,
// link layer, rate, LID, the non-zero GIDs with their type and netdev, and for RoCE the active
// MTU derived from the netdev MTU. A host without /sys/class/infiniband gives an empty list.
// Per-attribute read failures leave the field at its default; only an unreadable class
// directory is an error.
Result<std::vector<Nic>> discoverNics(const std::string& sysfs_root = "/");

// The host name of the machine this process runs on ("" if gethostname fails).
std::string hostName();

// rdma-core version ("44.0") read from the libibverbs.so.1.<abi>.<version> file name under
// <root>/usr/lib*, <root>/lib*; "" if no such file is found.
std::string rdmaCoreVersion(const std::string& sysfs_root = "/");

// The kernel release ("6.1.0-18-amd64", as `uname -r`) from <root>/proc/sys/kernel/osrelease;
// "" if it cannot be read.
std::string kernelRelease(const std::string& sysfs_root = "/");

// The loaded NVIDIA kernel module's version ("550.54.15") from <root>/sys/module/nvidia/version,
// else from the "NVRM version:" line of <root>/proc/driver/nvidia/version; "" when the module
// is not loaded. This is the driver of `nvidia-smi`, not the CUDA driver API version.
std::string nvidiaDriverVersion(const std::string& sysfs_root = "/");
// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 ..." -> "550.54.15";
// "" when the text has no such line.
std::string parseNvrmVersion(const std::string& proc_text);

// Parsers of single sysfs values, exposed for tests.
// "4: ACTIVE" -> "ACTIVE"; "ACTIVE" -> "ACTIVE".
std::string parsePortState(const std::string& text);
// "100 Gb/sec (4X EDR)" -> 100.0; "2.5 Gb/sec (1X SDR)" -> 2.5; "" or garbage -> nullopt.
std::optional<double> parseRateGbps(const std::string& text);
// The RoCE path MTU for a netdev MTU: the largest IB MTU (256..4096) that fits the netdev MTU
// minus the RoCE v2 headers (GRH 40, UDP 8, BTH 12, ext 32, ICRC 4 = 96 bytes, as the kernel's
// iboe_get_mtu). 1500 -> 1024, 9000 -> 4096; 0 if even 256 does not fit.
int roceMtuForNetdevMtu(int netdev_mtu);
// Normalises a PCI bus id to "dddd:bb:dd.f" lower case with at least four domain digits:
// "00000000:1B:00.0" (NVML) -> "0000:1b:00.0", "1b:00.0" -> "0000:1b:00.0".
std::string normalizeBusId(const std::string& bus_id);

}  // namespace gdrmesh
