// A fabric discovery asked of a worker (`gdrmesh fabric discover --worker NAME`, docs/fabric.md)
// in domain terms: what the coordinator asks (DiscoverRequest) and what the worker answers
// (DiscoverOutcome). The worker runs worker/fabric's discovery; the coordinator sees only these.
#pragma once

#include <string>

#include "common/fabric/fabric.h"
#include "common/status.h"

namespace gdrmesh::fabric {

struct DiscoverRequest {
  std::string ca;        // local HCA ("mlx5_0"); "" = the first with an active port
  int ca_port = 0;       // 0 = the first active port
  int timeout_ms = 500;  // per management datagram
  bool read_lfts = true;
};

// The worker's answer. `status` is the discovery's own outcome: OK with `fabric`, or why there
// is none (kFailedPrecondition: no InfiniBand device or no umad access; kUnimplemented: a
// worker built without the fabric module, or a simulated worker; kUnavailable: a switch did
// not answer), each with its fix. A fabric failure is a result, never an error of the command.
struct DiscoverOutcome {
  Status status;
  Fabric fabric;
};

}  // namespace gdrmesh::fabric
