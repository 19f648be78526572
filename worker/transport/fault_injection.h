// Fault injection: a capability of some endpoints, kept off the Endpoint interface. The session
// (its invalidate_remote_key option, refused unless the worker allows fault injection) and the
// tests ask an endpoint for it with faultInjection(); production code paths never need it.
//
//   if (FaultInjectable* f = faultInjection(*endpoint))
//   GDR_RETURN_IF_ERROR(f->invalidateRemoteAccess());
//
// Implemented by the emulated endpoint (the region's key changes) and the verbs endpoint (the
// memory region is deregistered while the QPs stay up).
#pragma once

#include "common/status.h"
#include "worker/transport/transport.h"

namespace gdrmesh {

class FaultInjectable {
 public:
  virtual ~FaultInjectable() = default;
  // Revokes the peer's remote access to this endpoint's region while the connection stays up,
  // as a peer that deregisters its memory mid-test would: the peer's next access fails with a
  // remote access error. Not concurrent with run() on this endpoint.
  virtual Status invalidateRemoteAccess() = 0;
};

// The endpoint's fault injection, or nullptr where its transport offers none.
inline FaultInjectable* faultInjection(Endpoint& endpoint) {
  return dynamic_cast<FaultInjectable*>(&endpoint);
}

}  // namespace gdrmesh
