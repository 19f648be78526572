// What a worker owns: its NICs and GPUs as discovered on the host.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/types.h"

namespace gdrmesh {

struct GidEntry {
  int index = 0;
  std::string gid;   // "fe80:0000:...", 8 groups of 4 hex digits
  std::string type;  // "RoCE v2", "RoCE v1", "IB"
};

struct NicPort {
  int port = 1;
  std::string state;       // "ACTIVE", "DOWN", ...
  std::string link_layer;  // "InfiniBand" or "Ethernet"
  double rate_gbps = 0;    // from sysfs rate
  int active_mtu = 0;      // bytes: 256..4096
  int max_mtu = 0;
  uint32_t lid = 0;
  std::string netdev;  // RoCE: the bound net device
  std::vector<GidEntry> gids;
};

struct Nic {
  std::string name;        // "mlx5_0", "rxe0"
  std::string pci_bus_id;  // "0000:17:00.0" or "" for software devices
  int numa_node = -1;
  std::string node_guid;
  std::string fw_version;
  std::vector<NicPort> ports;
};

struct Gpu {
  int index = 0;
  std::string name;
  std::string uuid;
  std::string pci_bus_id;  // "0000:1b:00.0"
  uint64_t memory_bytes = 0;
  int numa_node = -1;
  bool dma_buf_supported = false;
  bool gpu_direct_rdma_supported = false;
  int compute_capability_major = 0, compute_capability_minor = 0;
  // The NIC nearest to this GPU by PCIe path, and that path's class (PIX, PXB, PHB, NODE,
  // SYS); "" when unknown. Rails tests pair each GPU with its nearest NIC.
  std::string nearest_nic;
  std::string nearest_class;
};

// One preflight check as the worker ran it at start (worker/doctor).
struct PreflightCheck {
  std::string id;  // "gpudirect.peermem"
  std::string title;
  std::string status;  // PASS, WARN, FAIL, UNKNOWN
  std::string detail;
  std::string remediation;
};

// What one transport of a worker can do (common/capabilities.h has the rules that use it).
struct TransportCapabilities {
  TransportKind transport = TransportKind::kEmulated;
  std::vector<Op> bandwidth_ops;   // ops it measures in bandwidth mode
  std::vector<Op> latency_ops;     // ops it measures in latency mode
  std::vector<MemoryKind> memory;  // memory a side may use
  std::vector<RegPath> reg_paths;  // registration paths it runs (never kAuto)
  uint64_t max_message_size = 0;   // bytes; 0 = no limit of its own
  uint32_t max_inline = 0;         // bytes of inline data it accepts; 0 = no inline
  bool rdma_cm = false;            // --rdma-cm
  bool gid_index = false;          // --gid-index
  bool bidirectional = false;      // --bidir
  // The initiator signals the end of its run over the data path (RunSpec::end_signal) and the
  // target's armed run ends on it; the worker then answers a prepare's finish by itself
  // (a pair test takes three commands instead of four).
  bool end_signal = false;
};

struct Inventory {
  std::string hostname;
  std::string worker_version;
  std::vector<Nic> nics;
  std::vector<Gpu> gpus;
  std::vector<std::string> transports;  // usable transports on this worker: "emulated", "verbs"
  std::string cuda_driver_version;      // "" when no driver
  std::string rdma_core_version;
  std::string kernel_release;         // uname -r ("6.1.0-18-amd64"); "" when unknown
  std::string nvidia_driver_version;  // the kernel module's ("550.54.15"); "" when not loaded
  std::vector<std::string> notes;     // why a transport or the GPUs are missing here
  std::vector<PreflightCheck> preflight;
  // One per usable transport; empty from workers that predate capabilities.
  std::vector<TransportCapabilities> capabilities;
};

// A worker as the coordinator sees it: what `gdrmesh workers` and the status page show.
struct WorkerStatus {
  std::string name;
  std::string state;              // "online" or "offline"
  int64_t last_heartbeat_ms = 0;  // unix ms, 0 when never seen
  Inventory inventory;
  int64_t connected_ms = 0;
  std::string peer;
  uint32_t active_tests = 0;
  std::map<std::string, std::string> labels;  // `gdrmesh worker --label KEY=VALUE`
  bool simulated = false;                     // `gdrmesh worker --simulate N`
  // The coordinator's own findings about this worker, for the operator (`gdrmesh workers`):
  // a registration that contradicts its host class's expected inventory, protocol violations
  // counted against it (docs/results-trust.md). Never sent by the worker.
  std::vector<std::string> findings;
  // The port rate its host class expects (the cluster config's expect.nic_rate_gbps), which
  // bounds its verbs figures instead of the rate it registered; 0: no class declares one.
  double expected_port_rate_gbps = 0;
  bool online() const { return state == "online"; }
};

}  // namespace gdrmesh
