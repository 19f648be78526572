// The emulated transport: worker-to-worker TCP with the semantics of an RC queue pair, for CI
// and laptops. One-sided WRITE and READ into a registered region addressed by key and offset,
// SEND into the target's receive buffer, remote access errors for a wrong key or an
// out-of-range access. Every result it produces is labelled `emulated`: it is never RDMA.
//
// Wire format: a fixed 40-byte little-endian header per frame, optionally followed by payload
// (frame.h). The target listens on an ephemeral port; the initiator connects and sends HELLO
// with the key it was given through the coordinator.
//
// Thread contract: connect()/run() are called from one thread; abort() from any thread.
#pragma once

#include <memory>

#include "worker/transport/transport.h"

namespace gdrmesh {

class EmulatedTransport final : public Transport {
 public:
  TransportKind kind() const override { return TransportKind::kEmulated; }
  Status viable() const override { return {}; }
  TransportCapabilities capabilities() const override { return emulatedCapabilities(); }
  Result<std::unique_ptr<Endpoint>> createEndpoint(const EndpointSpec& spec, Buffer& buffer,
                                                   RegPath reg) override;
};

}  // namespace gdrmesh
