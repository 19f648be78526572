// Device and port: opening an RDMA device, the port's state, its GID table, and the port-down
// diagnosis that turns a failed work completion or a timeout into "the link went down".
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/transport/verbs/verbs_objects.h"
#include "worker/transport/verbs/verbs_select.h"

namespace gdrmesh::verbs {

// "no RDMA device found" with what to load.
Status noDeviceStatus();

// OK when one of `devices` (empty: any device) has an ACTIVE port; otherwise why not.
Status anyActivePort(const std::vector<std::string>& devices);

struct OpenDevice {
  ContextPtr ctx;
  std::string name;
  uint32_t port = 1;
  ibv_port_attr port_attr{};
};

// Opens `want` (or the first device whose `port` is ACTIVE) and queries the port.
Result<OpenDevice> openDevice(const std::string& want, uint32_t port);

// Reads the port's GID table: ibv_query_gid_ex for type and value, sysfs as the fallback.
std::vector<GidCandidate> readGidTable(ibv_context* ctx, const std::string& dev, uint32_t port,
                                       int table_len, const std::string& sysfs_root);

// The port-down diagnosis: when `port` of `dev` is no longer ACTIVE, an Unavailable status that
// names the port state and carries `cause`'s message; otherwise `cause` unchanged. With
// `await_port_event`, a port that still looks ACTIVE gets a bounded moment (500 ms) for the
// device's asynchronous port event first (rxe fails the QP when the net device goes down and
// raises the port event afterwards).
Status explainPortDown(ibv_context* ctx, uint32_t port, const std::string& dev, Status cause,
                       bool await_port_event);

}  // namespace gdrmesh::verbs
