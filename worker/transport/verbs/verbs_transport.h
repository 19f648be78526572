// The verbs transport: libibverbs RC queue pairs between two workers.
//
// Data layout (so that the session can verify [0, size) afterwards):
//   write, write_imm, send   the initiator's [0, size) lands in the target's [0, size)
//   read                     the target's [0, size) lands in the initiator's [0, size)
//   bidirectional bandwidth  the reverse direction (target -> initiator) uses the region
//                            [buffer_size / 2, buffer_size / 2 + size) on both sides, so the
//                            forward data stays intact; needs size <= buffer_size / 2.
// Counts: RunSpec::iterations and warmup_iterations are per QP (as perftest's -n with -q);
// both sides derive their counts from the same RunSpec, no extra round trip.
// Measurement (as perftest): warm-up not measured; up to tx_depth outstanding per QP;
// a completion requested every cq_moderation sends (default min(100, tx_depth), perftest's
// cq_mod); inline when size <= inline_size; per-message post/completion times
// (CLOCK_MONOTONIC) -> computeBandwidth(window = tx_depth).
// Latency: write = perftest write_lat (each side polls the last byte of its own buffer, host
// memory on both sides); with GPU memory on either side write uses write_with_imm and polls the
// CQ; send and write_imm ping-pong through receive completions. Samples are RTT/2 (read: the
// full read round trip, as ib_read_lat). The initiator restores the target's [0, size) to its
// own bytes before run() returns (the last byte carries the ping counter during the test).
// Failures (work completion errors, timeouts, abort) leave the endpoint broken: only
// destruction remains.
// rdma_cm mode (EndpointSpec::use_rdma_cm, perftest -R): the target binds an rdma_cm id to the
// IPv4 address of its selected GID (RoCE v2, ::ffff:a.b.c.d) with port 0 and listens; local()
// carries that address in its VerbsDesc's cm_host/cm_port (the initiator's: its own address,
// port 0). The initiator resolves address and route and connects one id per QP (private data:
// the QP index);
// QPs are created with rdma_create_qp on rdma_cm's verbs context, on which the PD, CQs and MR
// live too; outstanding reads are negotiated in the connection parameters. The QP numbers in
// local().qps are 0 (assigned at connect). run() is the same code as for the out-of-band mode.
// Needs rxe/RoCE on a net device with an IPv4 address that routes to the peer (not lo).
//
// Fault injection (fault_injection.h, FaultInjectable::invalidateRemoteAccess()) deregisters
// the MR while the QPs stay up. A target may still run() afterwards (write/read: nothing to do; the
// peer's accesses fail with a remote access error; send/write_imm: the receives fail); an
// initiator's run() is refused. Destruction afterwards releases the rest as usual.
//
// CPU placement (cpu_placement.h): each endpoint is placed when it is created (a CPU of its NIC's
// NUMA node, or the worker's --cpu), the placement goes into local().cpu_binding for the
// records, and run() binds its calling thread to that CPU for the run (restored afterwards).
//
// Thread contract: connect(), run() and the fault injection are called from one thread at a
// time; abort() from any.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "worker/transport/transport.h"
#include "worker/transport/verbs/cpu_placement.h"
#include "worker/transport/verbs/verbs_registration.h"

namespace gdrmesh {

struct VerbsOptions {
  std::string sysfs_root = "/sys";          // for gid_attrs and port counters
  verbs::MrRegistrar* registrar = nullptr;  // nullptr: the real libibverbs calls
  // Outstanding RDMA reads per QP (max_rd_atomic / max_dest_rd_atomic), capped by the device's
  // max_qp_rd_atom and max_qp_init_rd_atom, and negotiated down to the peer's
  // (EndpointDesc::max_rd_atomic, perftest's "OUT"). perftest uses the device maximum.
  uint32_t max_rd_atomic = 16;
  // Local ACK timeout of the RC QPs (out-of-band mode; rdma_cm sets its own): a request not
  // acknowledged within 4.096 us * 2^qp_timeout is sent again (perftest -u, default 14, ~67 ms).
  // 0 turns the retransmission timer off (InfiniBand: infinite), for a path that cannot lose
  // packets: the Soft-RoCE VM, where a vCPU starved by a loaded host delays ACKs past 67 ms and
  // Debian 12's rxe corrupts bidirectional runs when it retransmits (tests/softroce/README.md).
  // 0..31.
  uint32_t qp_timeout = 14;
  // Non-empty: the only RDMA devices this transport uses (`gdrmesh worker --nic`); an endpoint
  // without a device gets the first, one naming another device is refused.
  std::vector<std::string> devices;
  // The CPU every run's thread is bound to (`gdrmesh worker --cpu`); -1: a CPU of the NIC's NUMA
  // node (cpu_placement.h).
  int cpu = -1;
  // The CPUs the placement may choose from; nullopt: this process's (sched_getaffinity).
  std::optional<std::vector<int>> allowed_cpus;
};

class VerbsEndpoint : public Endpoint {
 public:
  // GID index in use (RoCE and IB with an explicit index), -1 for none.
  virtual int gidIndex() const = 0;
  // The registration attempts that ran, e.g. "dmabuf: ...EOPNOTSUPP...; peermem: ok".
  virtual const std::string& registrationAttempts() const = 0;
  // Outstanding RDMA reads per QP in use (after the device caps).
  virtual uint32_t rdAtomic() const = 0;
  // Where run() binds its calling thread (also local().cpu_binding, as text).
  virtual const verbs::CpuPlacement& cpuPlacement() const = 0;
};

class VerbsTransport final : public Transport {
 public:
  explicit VerbsTransport(VerbsOptions options = {});
  TransportKind kind() const override { return TransportKind::kVerbs; }
  Status viable() const override;
  TransportCapabilities capabilities() const override { return verbsCapabilities(); }
  Result<std::unique_ptr<Endpoint>> createEndpoint(const EndpointSpec& spec, Buffer& buffer,
                                                   RegPath reg) override;
  // Same as createEndpoint, with the verbs-only interface.
  Result<std::unique_ptr<VerbsEndpoint>> createVerbsEndpoint(const EndpointSpec& spec,
                                                             Buffer& buffer, RegPath reg);

 private:
  VerbsOptions options_;
  // Shared by this transport's endpoints: how many each CPU carries.
  std::shared_ptr<verbs::CpuPlacer> placer_;
};

}  // namespace gdrmesh
