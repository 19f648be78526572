// A fabric discovery asked of a worker (`gdrmesh fabric discover --worker NAME`, docs/fabric.md)
// in domain terms: what the coordinator asks (DiscoverRequest) and what the worker answers
// (DiscoverOutcome). The worker runs worker/fabric's discovery; the coordinator sees only these.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/fabric/fabric.h"
#include "common/fabric/lldp.h"
#include "common/status.h"

namespace gdrmesh::fabric {

struct DiscoverRequest {
  std::string ca;        // local HCA ("mlx5_0"); "" = the first with an active port
  int ca_port = 0;       // 0 = the first active port
  int timeout_ms = 500;  // per management datagram
  bool read_lfts = true;
  // RoCE: ask lldpd instead (common/fabric/lldp.h); `ca` then names one RDMA device.
  bool lldp = false;
};

// The worker's answer. `status` is the discovery's own outcome: OK with `fabric`, or why there
// is none (kFailedPrecondition: no InfiniBand device or no umad access; kUnimplemented: a
// worker built without the fabric module, or a simulated worker; kUnavailable: a switch did
// not answer), each with its fix. A fabric failure is a result, never an error of the command.
// With `lldp`, OK carries `lldp` (the worker's NICs and their neighbours, NICs without one
// included) instead of `fabric`; not OK: lldpd could not be asked at all, or no RoCE NIC.
struct DiscoverOutcome {
  Status status;
  Fabric fabric;
  std::optional<LldpHost> lldp;
  bool asked_lldp = false;  // the request was `lldp`: a failure is "no LLDP answer"
};

// A snapshot's JSON text (docs/fabric.md) as a Fabric: for text from another process (a
// worker's answer, a stored row). Text that is not JSON, or JSON of the wrong shape or types,
// is kInvalidArgument naming `what`; nothing here throws.
inline Result<Fabric> fabricFromJsonText(const std::string& text, const std::string& what) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalidArgument(what + " is not JSON");
  try {
    auto f = fabricFromJson(j);
    if (!f.ok()) return f.status().withContext(what);
    return f;
  } catch (const nlohmann::json::exception& e) {
    // fabricFromJson reads fields with json::value(), which throws on a field of another type.
    return invalidArgument(what + ": " + e.what());
  }
}

}  // namespace gdrmesh::fabric
