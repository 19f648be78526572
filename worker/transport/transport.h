// The transport interface: one engine that moves bytes between the two sides of a pair test.
// Implementations: transport/emulated (worker-to-worker TCP, for CI and laptops; never RDMA) and
// transport/verbs (libibverbs/librdmacm RC queue pairs).
//
// Life of a pair test on one worker (the coordinator drives both sides over gRPC):
//   1. createEndpoint(spec, buffer, reg)   allocate resources, register memory; local() is the
//                                          description the peer needs
//   2. connect(peer description)           both sides, in any order
//   3. run(run spec)                       both sides, concurrently; may repeat for a sweep
//   4. destruction                         releases everything (disconnect, deregister, ...)
// abort() may be called from any thread at any time; it makes a blocked connect()/run() return
// kAborted promptly, after which the endpoint is only good for destruction.
//
// Who verifies: the session layer (worker/session), never the transport. The transport moves
// bytes; the destination is checked against the pattern afterwards.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/measurement.h"
#include "common/status.h"
#include "common/types.h"
#include "worker/memory/buffer.h"

namespace gdrmesh {

struct QpInfo {
  uint32_t qpn = 0;
  uint32_t psn = 0;
};

// What one side tells the other, through the coordinator. Fields a transport does not use stay
// at their defaults.
struct EndpointDesc {
  TransportKind transport = TransportKind::kEmulated;
  // The remote region: base address (verbs: virtual address or 0 for zero-based MRs),
  // length and key (verbs: rkey; emulated: a random 32-bit key).
  uint64_t addr = 0;
  uint64_t length = 0;
  uint32_t rkey = 0;
  MemoryKind memory = MemoryKind::kHost;
  RegPath reg_path = RegPath::kHost;  // the path that was used (never kAuto)
  // Emulated transport: where the target listens ("127.0.0.1", port).
  std::string tcp_host;
  uint32_t tcp_port = 0;
  // Verbs.
  std::string device;      // "rxe0"
  uint32_t port = 0;       // HCA port number
  std::string link_layer;  // "InfiniBand" or "Ethernet"
  uint32_t lid = 0;
  std::string gid;  // 16 bytes, printed as 8 groups "fe80:0000:...:0001"
  int gid_index = -1;
  uint32_t active_mtu = 0;     // bytes (256..4096), the local port's active MTU
  uint32_t max_rd_atomic = 0;  // outstanding RDMA reads this side accepts; 0 = not said
  std::vector<QpInfo> qps;     // one per QP, in order
};

struct EndpointSpec {
  std::string test_id;
  Role role = Role::kInitiator;
  Op op = Op::kWrite;
  Mode mode = Mode::kBandwidth;
  uint64_t buffer_size = 0;  // bytes; the largest message of any run on this endpoint
  uint32_t num_qps = 1;
  uint32_t tx_depth = 128;   // outstanding sends per QP (bandwidth)
  uint32_t rx_depth = 512;   // posted receives per QP (send/recv, write_imm)
  uint32_t inline_size = 0;  // max inline data; 0 = none
  // Verbs only.
  std::string device;  // "" = first active device
  uint32_t port = 1;
  int gid_index = -1;        // -1 = automatic (RoCE v2, IPv4-mapped where present)
  bool use_rdma_cm = false;  // connect through librdmacm instead of the out-of-band exchange
  // Emulated only: address the target listens on.
  std::string listen_host = "127.0.0.1";
};

struct RunSpec {
  uint64_t message_size = 0;        // bytes, <= EndpointSpec::buffer_size
  uint64_t iterations = 1000;       // measured iterations (ignored when duration_seconds > 0)
  uint64_t warmup_iterations = 16;  // not measured
  double duration_seconds = 0;      // > 0: run for this long instead of a fixed count
  bool bidirectional = false;       // both sides initiate (bandwidth only)
  uint32_t cq_moderation = 0;       // signal every Nth send; 0 = transport default
  double timeout_seconds = 120;     // run() gives up with kDeadlineExceeded after this
};

class Endpoint {
 public:
  virtual ~Endpoint() = default;
  virtual const EndpointDesc& local() const = 0;
  virtual Status connect(const EndpointDesc& peer) = 0;
  // Initiator: runs the measured loop and returns the figures. Target: does its share (posts and
  // reaps receives for send/write_imm, answers ping-pongs for latency; nothing for write/read
  // bandwidth) and returns a Measurement with no figures.
  virtual Result<Measurement> run(const RunSpec& spec) = 0;
  virtual void abort() = 0;
  // Negotiated path MTU in bytes after connect(); 0 where not applicable.
  virtual uint32_t pathMtu() const { return 0; }
  // Fault injection (tests only): revokes the peer's remote access to this endpoint's region
  // while the connection stays up, as a peer that deregisters its memory mid-test would.
  virtual Status invalidateRemoteAccessForTest() {
    return unimplemented("remote-key invalidation is not supported by this transport");
  }
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual TransportKind kind() const = 0;
  // OK when this transport can run here; otherwise why not and what to do (no RDMA device,
  // no permission, ...). Checked before any test is accepted.
  virtual Status viable() const = 0;
  // Creates one side of a pair test over `buffer`, which outlives the endpoint. `reg` is the
  // requested registration path; local().reg_path holds the one that ran.
  virtual Result<std::unique_ptr<Endpoint>> createEndpoint(const EndpointSpec& spec, Buffer& buffer,
                                                           RegPath reg) = 0;
};

}  // namespace gdrmesh
