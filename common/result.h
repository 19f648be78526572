// One stored test result: the row every query, verdict and report is made from.
// Every row says which transport and memory path produced it, so an emulated or staged result
// can never pass as RDMA or as GPUDirect.
#pragma once

#include <cstdint>
#include <string>

#include "common/measurement.h"
#include "common/pattern.h"
#include "common/types.h"

namespace gdrmesh {

// Result counts ("N of M") stop at this many: a count beyond it says "more than" instead of
// walking millions of index entries (10M rows: 420 ms per `gdrmesh results` otherwise).
inline constexpr uint64_t kResultCountCap = 10000;

struct EndpointRecord {
  std::string worker;  // worker name
  std::string host;    // hostname
  std::string nic;     // "rxe0", "" for the emulated transport
  int port = 0;
  int gpu = -1;         // GPU index, -1 for host memory
  std::string gpu_pci;  // PCI bus id of the GPU
  MemoryKind memory = MemoryKind::kHost;
  RegPath reg_path = RegPath::kHost;  // the path that ran (never kAuto in a stored result)
  int gid_index = -1;
  std::string topo_class;  // GPU-NIC path class: PIX, PXB, PHB, NODE, SYS; "" if not applicable
  // The CPU the side's test thread ran on: "cpu 3 (numa 0, nic mlx5_0)", "cpu 1 (--cpu; ...)",
  // "not bound: ..."; "" where the transport does not bind (emulated, simulated, older workers).
  std::string cpu_binding;
};

struct TestResult {
  int64_t id = 0;          // SQLite row id, 0 before insertion
  std::string test_id;     // unique id, e.g. "t-20261122-151107-3f2a"
  std::string run_id;      // sweep/acceptance run this test belongs to, "" for ad-hoc
  int plan_index = -1;     // index of the planned test in its sweep; -1 outside sweeps
  int64_t started_ms = 0;  // unix ms
  int64_t finished_ms = 0;
  Op op = Op::kWrite;
  Mode mode = Mode::kBandwidth;
  TransportKind transport = TransportKind::kEmulated;
  EndpointRecord initiator;
  EndpointRecord target;
  uint64_t message_size = 0;
  uint64_t iterations = 0;
  uint32_t num_qps = 1;
  int path_mtu = 0;  // bytes, 0 if not applicable
  Measurement measurement;
  IntegrityReport integrity;
  TestStatus status = TestStatus::kError;
  std::string reason;  // why FAILED/SKIPPED/ERROR, "" when PASSED
  // True only for a PASSED result whose GPU sides ALL had the NIC move GPU memory directly
  // (dma-buf or peermem), with at least one side on GPU memory: the claim "GPUDirect RDMA works
  // here" (the rule: isGpuDirectTest). A skipped or failed test never makes it, even when
  // GPUDirect was what it asked for; staged and emulated never do.
  bool gpudirect() const {
    return status == TestStatus::kPassed &&
           isGpuDirectTest(transport, initiator.memory, initiator.reg_path, target.memory,
                           target.reg_path);
  }
  // True when the test got as far as moving data (there are figures).
  bool ran() const { return measurement.has_bandwidth || measurement.has_latency; }
};

}  // namespace gdrmesh
