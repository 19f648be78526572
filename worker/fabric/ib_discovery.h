// InfiniBand fabric discovery through rdma-core's management libraries: libibnetdisc walks the
// subnet with directed-route SMPs (switches, HCAs, ports, links), libibmad reads every switch's
// linear forwarding table (SwitchInfo's LinearFDBTop, then LinearForwardingTable blocks of 64
// entries). The result is the pure model of common/fabric/fabric.h.
//
// Needs a local InfiniBand port with a umad device (/dev/infiniband/umadN, kernel module
// ib_umad; read/write access, usually root), or ibsim's umad2sim preloaded (tests/fabric).
// Every failure (no device, no permission, a switch that does not answer) comes back as a
// Status naming what failed and the fix; nothing here aborts.
//
// Built only where libibnetdisc, libibmad and libibumad are found (GDRMESH_FABRIC, see
// worker/fabric/CMakeLists.txt); users test GDRMESH_HAVE_FABRIC_DISCOVERY.
//
// Thread contract: discoverFabric() is blocking and not re-entrant (libibmad keeps global
// state); call it from one thread at a time.
#pragma once

#include <string>

#include "common/fabric/fabric.h"
#include "common/status.h"

namespace gdrmesh::fabric {

struct DiscoverOptions {
  std::string ca;        // local HCA ("mlx5_0"); empty: the first with an active port
  int ca_port = 0;       // its port; 0: the first active one
  int timeout_ms = 500;  // per SMP
  int retries = 2;       // libibmad's retries per SMP
  bool read_lfts = true;
};

Result<Fabric> discoverFabric(const DiscoverOptions& opts);

}  // namespace gdrmesh::fabric
