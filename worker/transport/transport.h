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

#include "common/capabilities.h"
#include "common/endpoint.h"
#include "common/measurement.h"
#include "common/status.h"
#include "common/types.h"
#include "worker/memory/buffer.h"

namespace gdrmesh {

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
  // Fault injection is a separate capability (fault_injection.h), not part of this interface.
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual TransportKind kind() const = 0;
  // OK when this transport can run here; otherwise why not and what to do (no RDMA device,
  // no permission, ...). Checked before any test is accepted.
  virtual Status viable() const = 0;
  // What it supports (ops, memory, registration paths, sizes, options), reported at
  // registration so that the coordinator refuses what it cannot do before a test starts.
  virtual TransportCapabilities capabilities() const = 0;
  // Creates one side of a pair test over `buffer`, which outlives the endpoint. `reg` is the
  // requested registration path; local().reg_path holds the one that ran.
  virtual Result<std::unique_ptr<Endpoint>> createEndpoint(const EndpointSpec& spec, Buffer& buffer,
                                                           RegPath reg) = 0;
};

}  // namespace gdrmesh
