// One side of a pair test, in domain terms shared by the worker (which runs it) and the
// coordinator (which asks for it): what to prepare (EndpointSpec, SideSpec), what one side tells
// the other (EndpointDesc), how to run (RunSpec), and what a side reports back (SideOutcome).
// The only translation to and from the wire is proto/convert.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "common/measurement.h"
#include "common/pattern.h"
#include "common/types.h"

namespace gdrmesh {

// Defaults, stated once. Every layer that needs one of these values uses the constant.
inline constexpr uint32_t kDefaultNumQps = 1;
inline constexpr uint32_t kDefaultTxDepth = 128;
inline constexpr uint32_t kDefaultRxDepth = 512;
inline constexpr uint64_t kDefaultIterations = 1000;
inline constexpr uint64_t kDefaultWarmupIterations = 16;
inline constexpr double kDefaultRunTimeoutSeconds = 120;
inline constexpr uint32_t kDefaultPort = 1;  // HCA port number

struct QpInfo {
  uint32_t qpn = 0;
  uint32_t psn = 0;
};

// The per-transport part of an endpoint description (the proto's `transport_fields` oneof).
// Emulated transport: where the target listens ("127.0.0.1", port).
struct EmulatedDesc {
  std::string tcp_host;
  uint32_t tcp_port = 0;
};

// Verbs: the port and queue pairs the peer connects to.
struct VerbsDesc {
  std::string device;      // "rxe0"
  uint32_t port = 0;       // HCA port number
  std::string link_layer;  // "InfiniBand" or "Ethernet"
  uint32_t lid = 0;
  std::string gid;  // 16 bytes, printed as 8 groups "fe80:0000:...:0001"
  int gid_index = -1;
  uint32_t active_mtu = 0;     // bytes (256..4096), the local port's active MTU
  uint32_t max_rd_atomic = 0;  // outstanding RDMA reads this side accepts; 0 = not said
  std::vector<QpInfo> qps;     // one per QP, in order
  // rdma_cm only: the target's listening address and port (the initiator: its bound address,
  // port 0); empty when the queue pairs are connected out of band.
  std::string cm_host;
  uint32_t cm_port = 0;
};

// Simulated worker: which worker this side is (the peer looks its faults up by it) and the
// NIC it plays.
struct SimulatedDesc {
  std::string worker;
  VerbsDesc nic;
};

// What one side tells the other, through the coordinator: the remote region, the transport's
// own part (one of the three above; which one says the transport), and what the records show.
struct EndpointDesc {
  // The remote region: base address (verbs: virtual address or 0 for zero-based MRs),
  // length and key (verbs: rkey; emulated: a random 32-bit key).
  uint64_t addr = 0;
  uint64_t length = 0;
  uint32_t rkey = 0;
  MemoryKind memory = MemoryKind::kHost;
  RegPath reg_path = RegPath::kHost;  // the path that was used (never kAuto)
  std::variant<EmulatedDesc, VerbsDesc, SimulatedDesc> fields;
  // Filled by the worker for records: where the buffer is ("host:numa0", "gpu:1"), the GPU it
  // is on (-1: host memory), its PCI id and the GPU-NIC PCIe path class ("PIX" .. "SYS").
  std::string buffer;
  int gpu = -1;
  std::string gpu_pci;
  std::string topo_class;
  // Where the side's test thread runs: "cpu 3 (numa 0, nic mlx5_0)", "not bound: ..." (verbs:
  // worker/transport/verbs/cpu_placement.h); "" where the transport does not bind.
  std::string cpu_binding;

  TransportKind transport() const {
    if (std::holds_alternative<VerbsDesc>(fields)) return TransportKind::kVerbs;
    if (std::holds_alternative<SimulatedDesc>(fields)) return TransportKind::kSimulated;
    return TransportKind::kEmulated;
  }
  // The transport's part when it is a `T`, else null.
  template <class T>
  T* as() {
    return std::get_if<T>(&fields);
  }
  template <class T>
  const T* as() const {
    return std::get_if<T>(&fields);
  }
  // The NIC's part: verbs, or the NIC a simulated worker plays; null for emulated.
  const VerbsDesc* nic() const {
    if (const auto* s = as<SimulatedDesc>()) return &s->nic;
    return as<VerbsDesc>();
  }
};

struct EndpointSpec {
  std::string test_id;
  Role role = Role::kInitiator;
  Op op = Op::kWrite;
  Mode mode = Mode::kBandwidth;
  uint64_t buffer_size = 0;  // bytes; the largest message of any run on this endpoint
  uint32_t num_qps = kDefaultNumQps;
  uint32_t tx_depth = kDefaultTxDepth;  // outstanding sends per QP (bandwidth)
  uint32_t rx_depth = kDefaultRxDepth;  // posted receives per QP (send/recv, write_imm)
  uint32_t inline_size = 0;             // max inline data; 0 = none
  // Verbs only.
  std::string device;  // "" = first active device
  uint32_t port = kDefaultPort;
  int gid_index = -1;        // -1 = automatic (RoCE v2, IPv4-mapped where present)
  bool use_rdma_cm = false;  // connect through librdmacm instead of the out-of-band exchange
  // Emulated only: address the target listens on.
  std::string listen_host = "127.0.0.1";
};

struct RunSpec {
  uint64_t message_size = 0;  // bytes, <= EndpointSpec::buffer_size
  uint64_t iterations =
      kDefaultIterations;  // measured iterations (ignored when duration_seconds > 0)
  uint64_t warmup_iterations = kDefaultWarmupIterations;  // not measured
  double duration_seconds = 0;  // > 0: run for this long instead of a fixed count
  bool bidirectional = false;   // both sides initiate (bandwidth only)
  uint32_t cq_moderation = 0;   // signal every Nth send; 0 = transport default
  double timeout_seconds =
      kDefaultRunTimeoutSeconds;  // run() gives up with kDeadlineExceeded after this
  // The initiator, after its measured loop (all its operations complete, outside the measured
  // part), tells the target over the data path that the run is over; the target's run returns
  // only then. Without it a write/read target returns at once and learns of the end from the
  // coordinator. Set only when both sides' transport has TransportCapabilities::end_signal.
  bool end_signal = false;
};

// What the coordinator asks one worker to prepare: one side of a pair test.
struct SideSpec {
  EndpointSpec endpoint;
  TransportKind transport = TransportKind::kEmulated;
  MemoryKind memory = MemoryKind::kHost;
  int gpu = -1;
  RegPath reg = RegPath::kAuto;
  uint64_t seed = 1;  // pattern seed of the test
  // Sealed test (docs/security.md), when fill_seed != 0 (`seed` unused): this side's own
  // pattern, and what must land here; expect_seed 0 = withheld, the destination reports a
  // digest of what landed and keeps its buffer for a reveal.
  uint64_t fill_seed = 0;
  uint64_t expect_seed = 0;
  uint64_t corrupt_bytes = 0;          // fault injection, honoured only when allowed
  bool invalidate_remote_key = false;  // fault injection: revoke remote access after connect
};

// What one side reports when its part of a test is over (run, verify, or both).
struct SideOutcome {
  bool has_measurement = false;
  Measurement measurement;
  bool verified = false;  // integrity below is this side's check of its landed data
  IntegrityReport integrity;
  double staging_seconds = 0;  // host mirror <-> GPU copies of the staged path
  uint32_t path_mtu = 0;       // bytes, after connect; 0 where not applicable
};

}  // namespace gdrmesh
